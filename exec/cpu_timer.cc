#include "exec/cpu_timer.h"

#include <unistd.h>
#include <dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "exec/dnnl_util.h"
#include "exec/parallel.h"

namespace pw::exec {

namespace {

using Clock = std::chrono::steady_clock;

// The median seconds of fn() on the host's clock (exec/device_timer.h: median_of_runs).
template <class Fn>
double median_seconds(int repeats, Fn&& fn) {
  return median_of_runs(repeats, [&] {
    const auto t0 = Clock::now();
    fn();
    return std::chrono::duration<double>(Clock::now() - t0).count();
  });
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  return "unknown CPU";
}

class CpuTimer final : public DeviceTimer {
 public:
  explicit CpuTimer(int threads) : threads_(threads > 0 ? threads : max_threads()) { set_num_threads(threads_); }

  Device device() const override { return Device::cpu(); }
  bool supports(models::Precision p) const override { return p == models::Precision::fp32; }

  double gemm_seconds(models::Precision p, int64_t m, int64_t n, int64_t k, int repeats) override {
    PW_CHECK(supports(p), "the host times fp32 products only");
    std::vector<float> a(size_t(m * k), 0.5f), b(size_t(k * n), 0.25f), c(size_t(m * n));
    MatmulCache cache;
    return median_seconds(
        repeats, [&] { cache.run(row_major(m, k), a.data(), row_major(k, n), b.data(), row_major(m, n), c.data()); });
  }

  double copy_bytes_per_s(int64_t bytes, int repeats) override {
    std::vector<char> src(static_cast<size_t>(bytes), 1), dst(static_cast<size_t>(bytes));
    const double s = median_seconds(repeats, [&] { std::memcpy(dst.data(), src.data(), src.size()); });
    return 2.0 * double(bytes) / s;
  }

  double launch_seconds(int repeats) override {
    float a = 1, b = 1, c = 0;
    MatmulCache cache;
    constexpr int kBatch = 1000;
    return median_seconds(repeats,
                          [&] {
                            for (int i = 0; i < kBatch; ++i)
                              cache.run(row_major(1, 1), &a, row_major(1, 1), &b, row_major(1, 1), &c);
                          }) /
           kBatch;
  }

  void synchronize() override {}

  models::Provenance provenance() const override {
    models::Provenance p;
    p.card = cpu_model() + ", " + std::to_string(threads_) + (threads_ == 1 ? " thread" : " threads");
    const dnnl_version_t* v = dnnl_version();
    p.runtime = "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) == 0) p.host = host;
    return p;
  }

 private:
  int threads_;
};

}  // namespace

std::unique_ptr<DeviceTimer> make_cpu_timer(int threads) { return std::make_unique<CpuTimer>(threads); }

}  // namespace pw::exec
