// cuBLASLt opened on first use (exec/cuda/cublaslt_library.h), without a GPU: a process that
// links the backend maps no CUDA library when it starts, nor after asking for a device where
// none is usable; opening resolves every function the backend calls from the toolkit's library;
// a candidate that is missing, or that lacks the functions, is named with the reason.
// Each case runs in a process of its own (the suite registers them case by case).
#include "exec/cuda/cublaslt_library.h"

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "exec/layer.h"

namespace pw::exec::cuda {
namespace {

// Whether a file whose name contains `name` is mapped into this process.
bool mapped(const std::string& name) {
  std::ifstream maps("/proc/self/maps");
  std::stringstream text;
  text << maps.rdbuf();
  REQUIRE(!text.str().empty());
  return text.str().find(name) != std::string::npos;
}

bool every_function_set(const CublasLt& api) {
  bool all = true;
#define PW_CUBLASLT_CHECK(name) all = all && api.name != nullptr;
  PW_CUBLASLT_FUNCTIONS(PW_CUBLASLT_CHECK)
#undef PW_CUBLASLT_CHECK
  return all;
}

bool no_function_set(const CublasLt& api) {
  bool none = true;
#define PW_CUBLASLT_CHECK(name) none = none && api.name == nullptr;
  PW_CUBLASLT_FUNCTIONS(PW_CUBLASLT_CHECK)
#undef PW_CUBLASLT_CHECK
  return none;
}

TEST_CASE("cublaslt library: a process with the backend starts without any CUDA library mapped") {
  CHECK_FALSE(mapped("libcublasLt"));
  CHECK_FALSE(mapped("libcublas.so"));
  CHECK_FALSE(mapped("libcudart.so"));  // the runtime is linked statically
  REQUIRE(built_with_cuda());
  // Asking for a device: where none is usable cuBLASLt stays closed, where one is it is opened.
  const std::string why = unusable_reason(Device::cuda(0));
  INFO("unusable_reason: " << why);
  if (why.empty()) CHECK(mapped("libcublasLt"));
  else if (why.find("cuBLASLt") == std::string::npos) CHECK_FALSE(mapped("libcublasLt"));
}

TEST_CASE("cublaslt library: the toolkit's library opens with every function the backend calls") {
  const std::vector<std::string> candidates = cublaslt_candidates();
  REQUIRE(candidates.size() == 2);
  CHECK(candidates[1] == "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR));
  CHECK(candidates[0].find('/') != std::string::npos);
  CHECK(candidates[0].size() > candidates[1].size());
  CHECK(candidates[0].compare(candidates[0].size() - candidates[1].size(), std::string::npos, candidates[1]) == 0);

  REQUIRE_FALSE(mapped("libcublasLt"));
  const CublasLtOpen opened = open_cublaslt(candidates);
  INFO("error: " << opened.error);
  REQUIRE(opened.error.empty());
  CHECK(every_function_set(opened.api));
  const bool from_a_candidate = opened.api.path == candidates[0] || opened.api.path == candidates[1];
  CHECK(from_a_candidate);
  CHECK(opened.api.GetVersion() / 10000 == CUBLAS_VER_MAJOR);  // version M*10000 + m*100 + p
  CHECK(opened.api.GetVersion() >= static_cast<size_t>(CUBLAS_VERSION));
  CHECK(mapped("libcublasLt"));

  // The process-wide library is the same one.
  CHECK(cublaslt_unavailable_reason().empty());
  CHECK(cublaslt().GetVersion() == opened.api.GetVersion());
  cublasLtHandle_t handle = nullptr;
  // Creating a handle needs no GPU in every version; where it does, the status says so.
  const cublasStatus_t created = cublaslt().Create(&handle);
  if (created == CUBLAS_STATUS_SUCCESS) CHECK(cublaslt().Destroy(handle) == CUBLAS_STATUS_SUCCESS);
}

TEST_CASE("cublaslt library: missing candidates are each named with the reason, and nothing is set") {
  const CublasLtOpen opened = open_cublaslt({"/nonexistent/libcublasLt.so.13", "libpw-no-such-library.so.1"});
  INFO("error: " << opened.error);
  CHECK(opened.error.find("/nonexistent/libcublasLt.so.13") != std::string::npos);
  CHECK(opened.error.find("libpw-no-such-library.so.1") != std::string::npos);
  CHECK(opened.error.find("; ") != std::string::npos);
  CHECK(opened.api.path.empty());
  CHECK(no_function_set(opened.api));
  CHECK(open_cublaslt({}).error == "no candidate file");
}

TEST_CASE("cublaslt library: a library without cuBLASLt's functions is named with the first one it lacks") {
  // libm opens everywhere and has none of them; the next candidate is then tried.
  const CublasLtOpen opened = open_cublaslt({"libm.so.6", "/nonexistent/libcublasLt.so.13"});
  INFO("error: " << opened.error);
  CHECK(opened.error.find("libm.so.6: no function cublasLtCreate") == 0);
  CHECK(opened.error.find("/nonexistent/libcublasLt.so.13") != std::string::npos);
  CHECK(no_function_set(opened.api));
}

}  // namespace
}  // namespace pw::exec::cuda
