// What a compute backend's own exceptions mean to the commands, without the backend's types
// leaving exec/.
// Thread-safety: pure functions.
#pragma once

#include <exception>
#include <string>

namespace pw::exec {

// When `e` reports memory exhausted inside a backend, the backend and its message (for example
// "oneDNN: could not create a primitive" for a dnnl::error of status out_of_memory); "" for any
// other exception. exec/'s own allocators throw pw::OutOfMemory (models/error.h) instead.
std::string backend_out_of_memory(const std::exception& e);

// When `e` says memory ran out anywhere (pw::OutOfMemory from exec/'s allocators, std::bad_alloc,
// a backend's out-of-memory status), the text a command prints after "infeasible: " (exit 3);
// "" for any other exception.
std::string out_of_memory_text(const std::exception& e);

}  // namespace pw::exec
