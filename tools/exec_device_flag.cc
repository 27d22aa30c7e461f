#include "tools/exec_device_flag.h"

#include "exec/layer.h"
#include "models/error.h"

namespace pw::tools {

exec::Device parse_exec_device(const std::string& s, const std::string& flag) {
  if (s == "cpu") return exec::Device::cpu();
  if (s == "cuda") return exec::Device::cuda(0);
  if (s.rfind("cuda:", 0) == 0 && s.size() > 5 && s.size() < 8 &&
      s.find_first_not_of("0123456789", 5) == std::string::npos)
    return exec::Device::cuda(std::stoi(s.substr(5)));
  throw InputError(flag + ": expected cpu, cuda or cuda:N, got \"" + s + "\"");
}

void check_exec_device(const exec::Device& d, const std::string& flag) {
  if (d.is_cpu()) return;
  if (const std::string why = exec::unusable_reason(d); !why.empty())
    throw InputError(flag + " " + d.to_string() + ": " + why);
}

}  // namespace pw::tools
