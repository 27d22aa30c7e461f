#include "exec/cuda/cuda_device.h"

#include <cuda_runtime.h>

#include <array>
#include <atomic>
#include <mutex>
#include <stdexcept>

#include "exec/cuda/cublaslt_library.h"
#include "exec/cuda/kernels.h"
#include "models/error.h"

namespace pw::exec::cuda {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("CUDA: ") + what + ": " + cudaGetErrorString(e));
}

constexpr size_t kWorkspaceBytes = size_t{32} << 20;  // cuBLASLt's split-K / stream-K scratch
constexpr int kMaxDevices = 16;

// Makes `index` the calling thread's current device for a scope (a thread driving one GPU may
// free or allocate on another's pool, e.g. a peer copy's source or a network torn down).
class CurrentDevice {
 public:
  explicit CurrentDevice(int index) {
    check(cudaGetDevice(&before_), "cudaGetDevice");
    if (before_ != index) check(cudaSetDevice(index), "cudaSetDevice");
    else before_ = -1;
  }
  ~CurrentDevice() {
    if (before_ >= 0) (void)cudaSetDevice(before_);
  }
  CurrentDevice(const CurrentDevice&) = delete;
  CurrentDevice& operator=(const CurrentDevice&) = delete;

 private:
  int before_ = -1;
};

// The CUDA runtime as the caching policy's driver.
class RuntimeDriver : public DeviceDriver {
 public:
  explicit RuntimeDriver(int index) : index_(index) {}
  Device device() const override { return Device::cuda(index_); }
  void* raw_allocate(size_t bytes) override {
    const CurrentDevice on(index_);
    void* p = nullptr;
    const cudaError_t e = cudaMalloc(&p, bytes);
    if (e == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // clears the sticky-free error state of the failed call
      return nullptr;
    }
    check(e, "cudaMalloc");
    return p;
  }
  void raw_free(void* p) override {
    const CurrentDevice on(index_);
    check(cudaFree(p), "cudaFree");
  }
  EventHandle create_event() override {
    const CurrentDevice on(index_);
    cudaEvent_t e;
    check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
    return e;
  }
  void destroy_event(EventHandle e) override { (void)cudaEventDestroy(static_cast<cudaEvent_t>(e)); }
  void record_event(EventHandle e, StreamHandle s) override {
    const CurrentDevice on(index_);
    check(cudaEventRecord(static_cast<cudaEvent_t>(e), static_cast<cudaStream_t>(s)), "cudaEventRecord");
  }
  bool event_done(EventHandle e) override {
    const cudaError_t r = cudaEventQuery(static_cast<cudaEvent_t>(e));
    if (r == cudaErrorNotReady) return false;
    check(r, "cudaEventQuery");
    return true;
  }
  void wait_event(EventHandle e) override {
    check(cudaEventSynchronize(static_cast<cudaEvent_t>(e)), "cudaEventSynchronize");
  }
  void fill(float* p, int64_t n, float v, StreamHandle s) override {
    if (n <= 0) return;
    const CurrentDevice on(index_);  // a kernel runs only on a stream of the current device
    if (v == 0.0f)
      check(cudaMemsetAsync(p, 0, static_cast<size_t>(n) * sizeof(float), static_cast<cudaStream_t>(s)),
            "cudaMemsetAsync");
    else kernels::fill(p, n, v, s);
  }
  void copy(void* dst, const void* src, size_t bytes, StreamHandle s) override {
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, static_cast<cudaStream_t>(s)), "cudaMemcpyAsync");
  }

 private:
  int index_;
};

StreamMemory& stream_memory_of(const Tensor& t) {
  auto* m = dynamic_cast<StreamMemory*>(t.resource());
  PW_CHECK(m != nullptr, "tensor " + t.shape_string() + " is not on a CUDA device");
  return *m;
}

// What cudaGetDeviceCount said, asked once: the driver and the devices a process sees are fixed
// when CUDA initializes (CUDA_VISIBLE_DEVICES is read then), and get() is on the layers' paths.
struct Usability {
  std::string reason;  // "" when usable
  int count = 0;
};

const Usability& usability() {
  static const Usability u = [] {
    Usability r;
    const cudaError_t e = cudaGetDeviceCount(&r.count);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      r.reason = std::string("no usable CUDA device (cudaGetDeviceCount: ") + cudaGetErrorString(e) + ")";
      r.count = 0;
    } else if (r.count < 1) {
      r.reason = "no CUDA device found";
      r.count = 0;
    } else if (const std::string& lt = cublaslt_unavailable_reason(); !lt.empty()) {
      // Opened here, once a device is there to drive (cublaslt_library.h: never before).
      r.reason = "cuBLASLt cannot be opened (" + lt + ")";
      r.count = 0;
    }
    return r;
  }();
  return u;
}

}  // namespace

std::string unusable_reason() { return usability().reason; }

int device_count() { return usability().count; }

CudaDevice& CudaDevice::get(int index, int stream) {
  // Never destroyed (static teardown order): one allocator per GPU, one context per slot. A slot
  // once made is found without the lock.
  struct Pool {
    std::unique_ptr<DeviceDriver> driver;
    std::unique_ptr<CachingAllocator> alloc;
  };
  static std::mutex mu;
  static std::array<Pool*, kMaxDevices> pools{};
  static std::array<std::array<std::atomic<CudaDevice*>, kMaxStreams>, kMaxDevices> slots{};
  const bool in_range = index >= 0 && index < kMaxDevices && stream >= 0 && stream < kMaxStreams;
  if (in_range)
    if (CudaDevice* d = slots[index][stream].load(std::memory_order_acquire)) {
      d->make_current();
      return *d;
    }
  std::lock_guard<std::mutex> lock(mu);
  if (const std::string why = unusable_reason(); !why.empty()) throw InputError("--device cuda: " + why);
  if (index < 0 || index >= device_count() || index >= kMaxDevices)
    throw InputError("--device cuda:" + std::to_string(index) + ": this machine has " + std::to_string(device_count()) +
                     " CUDA device(s)");
  if (stream < 0 || stream >= kMaxStreams)
    throw InputError("device cuda:" + std::to_string(index) + ": stream slot " + std::to_string(stream) +
                     " is outside [0, " + std::to_string(kMaxStreams) + ")");
  if (!pools[index]) {
    check(cudaSetDevice(index), "cudaSetDevice");
    auto p = std::make_unique<Pool>();  // kept only once complete
    p->driver = std::make_unique<RuntimeDriver>(index);
    p->alloc = std::make_unique<CachingAllocator>(*p->driver);
    pools[index] = p.release();
  }
  std::atomic<CudaDevice*>& slot = slots[index][stream];
  CudaDevice* d = slot.load(std::memory_order_relaxed);
  if (!d) {
    d = new CudaDevice(index, stream, *pools[index]->alloc);
    slot.store(d, std::memory_order_release);
  }
  d->make_current();
  return *d;
}

CudaDevice::CudaDevice(int index, int slot, CachingAllocator& alloc) : index_(index), slot_(slot), alloc_(alloc) {
  make_current();
  try {
    cudaStream_t s;
    check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
    stream_ = s;
    cublasLtHandle_t h;
    if (cublaslt().Create(&h) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cuBLASLt: cublasLtCreate failed");
    blas_ = h;
    check(cudaMalloc(&workspace_, kWorkspaceBytes), "cudaMalloc (cuBLASLt workspace)");
    workspace_bytes_ = kWorkspaceBytes;
    memory_ = std::make_unique<StreamMemory>(alloc_, stream_, Device::cuda(index_, slot_));
  } catch (...) {
    release();  // a destructor does not run for a constructor that throws
    throw;
  }
}

CudaDevice::~CudaDevice() { release(); }

void CudaDevice::release() noexcept {
  memory_.reset();
  if (workspace_) (void)cudaFree(workspace_);
  if (blas_) cublaslt().Destroy(static_cast<cublasLtHandle_t>(blas_));
  if (stream_) (void)cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
  workspace_ = nullptr;
  blas_ = nullptr;
  stream_ = nullptr;
}

void CudaDevice::make_current() const { check(cudaSetDevice(index_), "cudaSetDevice"); }

void CudaDevice::synchronize() {
  check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)), "cudaStreamSynchronize");
}

int64_t CudaDevice::total_memory_bytes() const {
  const CurrentDevice on(index_);
  size_t free_bytes = 0, total_bytes = 0;
  check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  return static_cast<int64_t>(total_bytes);
}

void upload(const float* host, Tensor& t) {
  StreamMemory& m = stream_memory_of(t);
  const auto s = static_cast<cudaStream_t>(m.stream());
  check(cudaMemcpyAsync(t.data(), host, static_cast<size_t>(t.bytes()), cudaMemcpyHostToDevice, s),
        "cudaMemcpyAsync (to the device)");
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
}

void download(const Tensor& t, float* host) {
  StreamMemory& m = stream_memory_of(t);
  const auto s = static_cast<cudaStream_t>(m.stream());
  check(cudaMemcpyAsync(host, t.data(), static_cast<size_t>(t.bytes()), cudaMemcpyDeviceToHost, s),
        "cudaMemcpyAsync (to the host)");
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
}

Tensor to_device(const Tensor& host, CudaDevice& dev) {
  PW_CHECK(host.device().is_cpu(), "to_device of a tensor that is not on the host");
  Tensor t(host.shape(), dev.memory());
  upload(host.data(), t);
  return t;
}

Tensor to_host(const Tensor& t) {
  PW_CHECK(!t.device().is_cpu(), "to_host of a tensor already on the host");
  Tensor h(t.shape());
  download(t, h.data());
  return h;
}

}  // namespace pw::exec::cuda
