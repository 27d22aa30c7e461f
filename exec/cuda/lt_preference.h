// A cuBLASLt matmul preference that destroys itself, created with the backend's workspace size:
// how the backend's products (gemm.cc) and the calibration's (calibrate_timer.cc) ask the
// heuristic, so that calibration times the algorithms training runs. Failures throw
// std::runtime_error naming the call.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "exec/cuda/cublaslt_library.h"

namespace pw::exec::cuda {

using LtPreference =
    std::unique_ptr<std::remove_pointer_t<cublasLtMatmulPreference_t>, decltype(CublasLt::MatmulPreferenceDestroy)>;

template <typename T>
void set_preference(const LtPreference& p, cublasLtMatmulPreferenceAttributes_t attribute, const T& value,
                    const char* what) {
  const cublasStatus_t s = cublaslt().MatmulPreferenceSetAttribute(p.get(), attribute, &value, sizeof value);
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string("cuBLASLt: ") + what + " failed (status " +
                             std::to_string(static_cast<int>(s)) + ")");
}

inline LtPreference lt_preference(uint64_t workspace_bytes) {
  cublasLtMatmulPreference_t raw = nullptr;
  if (cublaslt().MatmulPreferenceCreate(&raw) != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error("cuBLASLt: cublasLtMatmulPreferenceCreate failed");
  LtPreference p(raw, cublaslt().MatmulPreferenceDestroy);
  set_preference(p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, workspace_bytes, "workspace preference");
  return p;
}

}  // namespace pw::exec::cuda
