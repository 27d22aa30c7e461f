#include "models/error.h"

namespace pw {

void check_failed(const char* expr, const char* file, int line, const std::string& msg) {
  throw InternalError(std::string("internal check failed: ") + expr + " at " + file + ":" + std::to_string(line) +
                      (msg.empty() ? "" : ": " + msg));
}

}  // namespace pw
