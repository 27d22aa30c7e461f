#include "exec/cuda/calibrate_timer.h"

#include <cuda_runtime.h>
#include <unistd.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "exec/cuda/calibrate_kernels.h"
#include "exec/cuda/cublaslt_library.h"
#include "exec/cuda/lt_preference.h"
#include "models/error.h"

namespace pw::exec::cuda {

namespace {

using models::Precision;

void ensure(cudaError_t e, const char* what) {  // calibrate's own (unity builds)
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}
void ensure(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string("cuBLASLt: ") + what + " failed (status " + std::to_string(int(s)) + ")");
}

// The bandwidth copy's contents (a copy's speed does not depend on them): 0x3C00 is 0.0078125 in
// bf16; the pair 0x3C003C00 is 0.0078 in fp32: small, non-zero, finite.
constexpr uint16_t kFill = 0x3C00;

class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) { ensure(cudaMalloc(&p_, bytes), "cudaMalloc"); }
  ~DeviceBuffer() { cudaFree(p_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return p_; }

 private:
  void* p_ = nullptr;
};

class Events {
 public:
  Events() {
    ensure(cudaEventCreate(&start_), "cudaEventCreate");
    ensure(cudaEventCreate(&stop_), "cudaEventCreate");
  }
  ~Events() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;
  // Seconds between records around fn() on `stream`.
  template <class Fn>
  double time(cudaStream_t stream, Fn&& fn) {
    ensure(cudaEventRecord(start_, stream), "cudaEventRecord");
    fn();
    ensure(cudaEventRecord(stop_, stream), "cudaEventRecord");
    ensure(cudaEventSynchronize(stop_), "cudaEventSynchronize");
    float ms = 0;
    ensure(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
    return ms * 1e-3;
  }

 private:
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

// One cuBLASLt product, column-major Cᵀ[n, m] = Bᵀ[n, k] Aᵀ[k, m] (our row-major C = A B).
class LtProduct {
 public:
  LtProduct(CudaDevice& dev, Precision p, int64_t m, int64_t n, int64_t k) : dev_(dev) {
    try {
      plan(p, m, n, k);
    } catch (...) {
      release();  // the destructor does not run for a constructor that throws
      throw;
    }
  }
  ~LtProduct() { release(); }
  LtProduct(const LtProduct&) = delete;
  LtProduct& operator=(const LtProduct&) = delete;

 private:
  void plan(Precision p, int64_t m, int64_t n, int64_t k) {
    const cudaDataType_t io = p == Precision::bf16 ? CUDA_R_16BF : CUDA_R_32F;
    const cublasComputeType_t compute = p == Precision::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    ensure(cublaslt().MatmulDescCreate(&desc_, compute, CUDA_R_32F), "cublasLtMatmulDescCreate");
    ensure(cublaslt().MatrixLayoutCreate(&a_, io, uint64_t(n), uint64_t(k), n), "layout");
    ensure(cublaslt().MatrixLayoutCreate(&b_, io, uint64_t(k), uint64_t(m), k), "layout");
    ensure(cublaslt().MatrixLayoutCreate(&c_, io, uint64_t(n), uint64_t(m), n), "layout");
    // The backend's workspace: an algorithm chosen without it would not be the one training runs.
    const LtPreference pref = lt_preference(dev_.workspace_bytes());
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t st =
        cublaslt().MatmulAlgoGetHeuristic(handle(), desc_, a_, b_, c_, c_, pref.get(), 1, &result, &found);
    if (st != CUBLAS_STATUS_SUCCESS || found == 0)
      throw std::runtime_error("cuBLASLt: no " + std::string(models::to_string(p)) + " algorithm for " +
                               std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k));
    algo_ = result.algo;
  }
  void release() {
    if (a_) cublaslt().MatrixLayoutDestroy(a_);
    if (b_) cublaslt().MatrixLayoutDestroy(b_);
    if (c_) cublaslt().MatrixLayoutDestroy(c_);
    if (desc_) cublaslt().MatmulDescDestroy(desc_);
  }

 public:
  void run(const void* a, const void* b, void* c) {
    const float one = 1, zero = 0;
    ensure(cublaslt().Matmul(handle(), desc_, &one, b, a_, a, b_, &zero, c, c_, c, c_, &algo_, dev_.workspace(),
                             dev_.workspace_bytes(), static_cast<cudaStream_t>(dev_.stream())),
           "cublasLtMatmul");
  }

 private:
  cublasLtHandle_t handle() const { return static_cast<cublasLtHandle_t>(dev_.blas_handle()); }
  CudaDevice& dev_;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
};

// The device, made current first: the timer's events (created next) belong to the device current
// at their creation, and may only be recorded on that device's streams.
CudaDevice& made_current(CudaDevice& dev) {
  dev.make_current();
  return dev;
}

class CudaTimer final : public DeviceTimer {
 public:
  explicit CudaTimer(CudaDevice& dev) : dev_(made_current(dev)) {}

  Device device() const override { return dev_.device(); }
  bool supports(Precision) const override { return true; }

  double gemm_seconds(Precision p, int64_t m, int64_t n, int64_t k, int repeats) override {
    dev_.make_current();
    const size_t e = size_t(models::element_bytes(p));
    DeviceBuffer a{size_t(m * k) * e}, b{size_t(k * n) * e}, c{size_t(m * n) * e};
    // Random operands (exec/cuda/random_words.h): constant ones would run faster than real data.
    kernels::fill_random_u16(a.get(), int64_t(m * k * int64_t(e) / 2), 1, dev_.stream());
    kernels::fill_random_u16(b.get(), int64_t(k * n * int64_t(e) / 2), 2, dev_.stream());
    LtProduct product(dev_, p, m, n, k);
    return median_of_runs(repeats,
                          [&] { return events_.time(stream(), [&] { product.run(a.get(), b.get(), c.get()); }); });
  }

  double copy_bytes_per_s(int64_t bytes, int repeats) override {
    dev_.make_current();
    DeviceBuffer src{size_t(bytes)}, dst{size_t(bytes)};
    kernels::fill_u16(src.get(), bytes / 2, kFill, dev_.stream());
    const double s = median_of_runs(repeats, [&] {
      return events_.time(stream(), [&] {
        ensure(cudaMemcpyAsync(dst.get(), src.get(), size_t(bytes), cudaMemcpyDeviceToDevice, stream()),
               "cudaMemcpyAsync");
      });
    });
    return 2.0 * double(bytes) / s;
  }

  double launch_seconds(int repeats) override {
    dev_.make_current();
    constexpr int kBatch = 1000;
    return median_of_runs(repeats,
                          [&] {
                            return events_.time(stream(), [&] {
                              for (int i = 0; i < kBatch; ++i) kernels::launch_empty(dev_.stream());
                            });
                          }) /
           kBatch;
  }

  void synchronize() override { dev_.synchronize(); }

  models::Provenance provenance() const override {
    models::Provenance p;
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, dev_.device().index) == cudaSuccess)
      p.card = std::string(prop.name) + " (" + std::to_string(prop.multiProcessorCount) + " SMs, " +
               std::to_string(prop.totalGlobalMem >> 20) + " MiB)";
    int driver = 0, runtime = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    p.driver = "CUDA driver API " + std::to_string(driver / 1000) + "." + std::to_string(driver % 1000 / 10);
    p.runtime = "CUDA runtime " + std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10) +
                ", cuBLASLt " + std::to_string(cublaslt().GetVersion());
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) == 0) p.host = host;
    return p;
  }

 private:
  cudaStream_t stream() const { return static_cast<cudaStream_t>(dev_.stream()); }
  CudaDevice& dev_;
  Events events_;
};

}  // namespace

std::unique_ptr<DeviceTimer> make_cuda_timer(CudaDevice& dev) { return std::make_unique<CudaTimer>(dev); }

}  // namespace pw::exec::cuda
