#include "tools/exit_status.h"

#include <cstdlib>
#include <new>
#include <string>
#include <thread>

#include "models/error.h"
#include "models/error_text.h"
#include "tools/signals.h"
#ifdef PW_HAVE_EXEC
#include "exec/backend_errors.h"
#endif

namespace pw::tools {
namespace {

// One insertion per line: stderr is unbuffered, so pieces written separately interleave with
// another process's on the same terminal (every rank of an mpirun job that fails alike).
int print(std::ostream& err, const char* kind, const std::string& message, int code) {
  err << "pipewright: " + std::string(kind) + ": " + one_line_message(message) + "\n";
  return code;
}

}  // namespace

int report_failure(const std::exception_ptr& e, std::ostream& err) {
  try {
    std::rethrow_exception(e);
  } catch (const CommandExit& x) {
    if (*x.what() != '\0') err << std::string(x.what()) + "\n";
    return x.code();
  } catch (const InputError& x) { return print(err, "error", x.what(), 2); } catch (const Infeasible& x) {
    return print(err, "infeasible", x.what(), 3);
  } catch (const OutOfMemory& x) {  // the model or batch does not fit the host's or the GPU's memory
    return print(err, "infeasible", x.what(), 3);
  } catch (const std::bad_alloc& x) {
    return print(err, "infeasible", std::string("out of memory (") + x.what() + ")", 3);
  } catch (const std::exception& x) {
#ifdef PW_HAVE_EXEC
    if (const std::string oom = exec::out_of_memory_text(x); !oom.empty()) return print(err, "infeasible", oom, 3);
#endif
    return print(err, "internal error", x.what(), 70);
  } catch (...) { return print(err, "internal error", "an exception that is not a std::exception", 70); }
}

int launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') continue;
    char* end = nullptr;
    const long r = std::strtol(v, &end, 10);
    if (*end == '\0' && r >= 0 && r <= 1 << 30) return static_cast<int>(r);
  }
  return 0;
}

int reject_command_line(const std::string& line, std::ostream& err, std::chrono::milliseconds others_wait) {
  if (launcher_rank() > 0) std::this_thread::sleep_for(others_wait);
  err << line;
  err.flush();
  return 2;
}

}  // namespace pw::tools
