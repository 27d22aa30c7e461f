// Entry point of the GPU tests: where no CUDA device can be used, prints one line with the
// reason and exits kNoGpuExit, which ctest reports as SKIPPED (SKIP_RETURN_CODE); the tests
// never pass silently without a GPU and never fail for lack of one.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <string>

#include "exec/layer.h"

namespace {
constexpr int kNoGpuExit = 77;
}

int main(int argc, char** argv) {
  bool listing = false;  // listing the cases needs no GPU
  for (int i = 1; i < argc; ++i)
    listing = listing || std::string(argv[i]).rfind("--list-", 0) == 0 || std::string(argv[i]).rfind("-ltc", 0) == 0;
  const std::string why = listing ? "" : pw::exec::unusable_reason(pw::exec::Device::cuda(0));
  if (!why.empty()) {
    std::printf("SKIPPED: the GPU tests need a CUDA device: %s\n", why.c_str());
    return kNoGpuExit;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
