// Error types shared by every Pipewright library, and the always-on check macro.
//
// Contract:
// - InputError: bad input or environment (a malformed file, an impossible size, an unknown
//   name). The message names the file, the JSON path / line / flag, and what was expected.
//   The CLI prints it on one line and exits with code 2.
// - Infeasible: a well-formed request that has no answer (nothing fits in memory). The CLI
//   exits with code 3. Library code that can return "infeasible" as a normal result should do
//   so; this exception is for command boundaries.
// - OutOfMemory: an allocation of host or device memory failed (a model or batch too large for
//   the machine). A std::bad_alloc, so code that catches that still does; what() names the
//   memory, the request and what was in use. The CLI exits with code 3, as for Infeasible.
// - PW_CHECK: internal invariants (bugs). Always on, also in release builds.
#pragma once

#include <new>
#include <stdexcept>
#include <string>
#include <utility>

namespace pw {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Infeasible : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class OutOfMemory : public std::bad_alloc {
 public:
  explicit OutOfMemory(std::string message) : message_(std::move(message)) {}
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};

// Thrown by PW_CHECK; a logic error inside Pipewright, not the user's fault.
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

[[noreturn]] void check_failed(const char* expr, const char* file, int line, const std::string& msg);

}  // namespace pw

#define PW_CHECK(cond, msg)                                            \
  do {                                                                 \
    if (!(cond)) ::pw::check_failed(#cond, __FILE__, __LINE__, (msg)); \
  } while (0)
