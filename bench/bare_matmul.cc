#include "bench/bare_matmul.h"

#include "exec/dnnl_util.h"

namespace pw::exec {

struct BareMatmul::Impl {
  int64_t m, k, n;
  bool bt;
  MatmulCache cache;
};

BareMatmul::BareMatmul(int64_t m, int64_t k, int64_t n, bool b_transposed)
    : impl_(std::make_unique<Impl>(Impl{m, k, n, b_transposed, {}})) {}

BareMatmul::~BareMatmul() = default;

void BareMatmul::run(const float* a, const float* b, float* c) {
  Impl& i = *impl_;
  i.cache.run(row_major(i.m, i.k), a, i.bt ? col_major(i.k, i.n) : row_major(i.k, i.n), b, row_major(i.m, i.n), c);
}

}  // namespace pw::exec
