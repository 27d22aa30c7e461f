#include "exec/cuda/cublaslt_library.h"

#include <dlfcn.h>

#include <stdexcept>

namespace pw::exec::cuda {

namespace {

// dlerror()'s message, or `fallback` when it has none.
std::string dl_error(const char* fallback) {
  const char* e = ::dlerror();
  return e ? e : fallback;
}

// Why an opened candidate cannot be used ("" when it can): the first function it lacks (`api`
// then holds those resolved so far), or a version older than the header built against, which
// may not know the attributes the backend sets.
std::string unusable(void* handle, CublasLt& api) {
  std::string missing;
#define PW_CUBLASLT_RESOLVE(name)                                                       \
  if (missing.empty()) {                                                                \
    api.name = reinterpret_cast<decltype(api.name)>(::dlsym(handle, "cublasLt" #name)); \
    if (!api.name) missing = "cublasLt" #name;                                          \
  }
  PW_CUBLASLT_FUNCTIONS(PW_CUBLASLT_RESOLVE)
#undef PW_CUBLASLT_RESOLVE
  if (!missing.empty()) return "no function " + missing;
  if (const size_t version = api.GetVersion(); version < static_cast<size_t>(CUBLAS_VERSION))
    return "version " + std::to_string(version) + ", older than the " + std::to_string(CUBLAS_VERSION) +
           " built against";
  return "";
}

}  // namespace

CublasLtOpen open_cublaslt(const std::vector<std::string>& candidates) {
  CublasLtOpen r;
  for (const std::string& file : candidates) {
    void* handle = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    CublasLt api;
    const std::string why = handle ? unusable(handle, api) : dl_error(file.c_str());
    if (why.empty()) {
      api.path = file;
      return {api, ""};
    }
    if (handle) ::dlclose(handle);
    r.error += (r.error.empty() ? "" : "; ") + (handle ? file + ": " + why : why);
  }
  if (candidates.empty()) r.error = "no candidate file";
  return r;
}

std::vector<std::string> cublaslt_candidates() {
  const std::string soname = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
  return {std::string(PW_CUDA_LIBRARY_DIR) + "/" + soname, soname};
}

namespace {

const CublasLtOpen& process_library() {
  static const CublasLtOpen opened = open_cublaslt(cublaslt_candidates());
  return opened;
}

}  // namespace

const std::string& cublaslt_unavailable_reason() { return process_library().error; }

const CublasLt& cublaslt() {
  const CublasLtOpen& opened = process_library();
  if (!opened.error.empty()) throw std::runtime_error("cuBLASLt: cannot be opened (" + opened.error + ")");
  return opened.api;
}

}  // namespace pw::exec::cuda
