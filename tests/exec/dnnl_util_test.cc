// MatmulCache and the GELU helpers make their oneDNN memory objects once and re-point them at the
// caller's buffers on every call. These cases check that a call always computes on the buffers it
// was given (never on an earlier call's), for every kind of entry, against a plain reference.
#include <doctest/doctest.h>

#include <cmath>
#include <new>
#include <stdexcept>
#include <vector>

#include "exec/backend_errors.h"
#include "exec/dnnl_util.h"
#include "models/error.h"

namespace pw::exec {
namespace {

std::vector<float> filled(size_t n, float seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = std::sin(seed + 0.37f * static_cast<float>(i));
  return v;
}

// C[m,n] = A[m,k] · B[k,n], both row-major; or B given as its transpose [n,k] when bt.
std::vector<float> reference(const std::vector<float>& a, const std::vector<float>& b, int64_t m, int64_t k, int64_t n,
                             bool bt) {
  std::vector<float> c(static_cast<size_t>(m * n), 0.0f);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) s += double(a[i * k + p]) * double(bt ? b[j * k + p] : b[p * n + j]);
      c[i * n + j] = static_cast<float>(s);
    }
  return c;
}

void check_close(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-4));
}

constexpr int64_t kM = 3, kK = 5, kN = 4;

// C = A·B with B given as its transpose, on fresh buffers filled from `seed`, through `cache`;
// checks C against the reference.
void check_plain(MatmulCache& cache, float seed) {
  auto a = filled(kM * kK, seed), b = filled(kN * kK, seed + 1.3f);
  std::vector<float> c(kM * kN, -7.0f);
  cache.run(row_major(kM, kK), a.data(), col_major(kK, kN), b.data(), row_major(kM, kN), c.data());
  check_close(c, reference(a, b, kM, kK, kN, /*bt=*/true));
}

}  // namespace

TEST_CASE("MatView: dims and strides must have one rank, 1..4") {
  CHECK_NOTHROW(MatView({2, 3}, {3, 1}));
  CHECK_THROWS_AS(MatView({2, 3}, {1}), std::invalid_argument);
  CHECK_THROWS_AS(MatView({}, {}), std::invalid_argument);
  CHECK_THROWS_AS(MatView({1, 1, 1, 1, 1}, {1, 1, 1, 1, 1}), std::invalid_argument);
  const MatView v = col_major(4, 5);
  CHECK(v.rank == 2);
  CHECK(v.dims[0] == 4);
  CHECK(v.strides[0] == 1);
  CHECK(v.strides[1] == 4);
}

TEST_CASE("MatmulCache: one entry per description, each call on the buffers it was given") {
  const int64_t m = kM, k = kK, n = kN;
  MatmulCache cache;
  for (int call = 0; call < 3; ++call) check_plain(cache, 0.1f + call);  // new buffers, one description
  CHECK(cache.size() == 1);

  SUBCASE("a second shape gets its own entry and the first still computes right") {
    auto a2 = filled(2 * k, 2.0f), b2 = filled(k * n, 3.0f);
    std::vector<float> c2(2 * n);
    cache.run(row_major(2, k), a2.data(), row_major(k, n), b2.data(), row_major(2, n), c2.data());
    check_close(c2, reference(a2, b2, 2, k, n, false));
    CHECK(cache.size() == 2);
    check_plain(cache, 4.0f);
    CHECK(cache.size() == 2);
  }
  SUBCASE("bias and accumulate are separate entries on their own buffers") {
    auto a = filled(m * k, 6.0f), b = filled(n * k, 7.0f), bias = filled(n, 8.0f);
    std::vector<float> c(m * n);
    cache.run(row_major(m, k), a.data(), col_major(k, n), b.data(), row_major(m, n), c.data(), bias.data());
    auto want = reference(a, b, m, k, n, true);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) want[i * n + j] += bias[j];
    check_close(c, want);
    CHECK(cache.size() == 2);

    std::vector<float> acc(m * n, 1.5f);
    cache.run(row_major(m, k), a.data(), col_major(k, n), b.data(), row_major(m, n), acc.data(), nullptr,
              /*accumulate=*/true);
    auto plus = reference(a, b, m, k, n, true);
    for (float& x : plus) x += 1.5f;
    check_close(acc, plus);
    CHECK(cache.size() == 3);
  }
  SUBCASE("a copy starts empty and computes on its own buffers") {
    MatmulCache copy = cache;
    CHECK(copy.size() == 0);
    check_plain(copy, 9.0f);
    CHECK(copy.size() == 1);
  }
}

TEST_CASE("gelu_tanh: each call reads and writes the buffers it was given") {
  const int64_t n = 37;
  auto gelu = [](float x) { return 0.5f * x * (1.0f + std::tanh(0.7978845608f * (x + 0.044715f * x * x * x))); };
  for (int call = 0; call < 3; ++call) {
    auto x = filled(n, 0.5f * call);
    for (float& v : x) v *= 3.0f;
    std::vector<float> y(n), dy(n, 1.0f), dx(n);
    gelu_tanh_forward(x.data(), y.data(), n);
    for (int64_t i = 0; i < n; ++i) CHECK(y[i] == doctest::Approx(gelu(x[i])).epsilon(1e-4));
    gelu_tanh_backward(x.data(), dy.data(), dx.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const float h = 1e-3f;
      const float slope = (gelu(x[i] + h) - gelu(x[i] - h)) / (2 * h);
      CHECK(dx[i] == doctest::Approx(slope).epsilon(5e-3));
    }
  }
}

TEST_CASE("backend_out_of_memory: oneDNN's out-of-memory status is named, every other exception is not") {
  CHECK(backend_out_of_memory(dnnl::error(dnnl_out_of_memory, "could not create a primitive")) ==
        "oneDNN: could not create a primitive");
  CHECK(backend_out_of_memory(dnnl::error(dnnl_invalid_arguments, "could not create a primitive")).empty());
  CHECK(backend_out_of_memory(std::runtime_error("out of memory")).empty());
  CHECK(backend_out_of_memory(std::bad_alloc()).empty());  // the CLI maps bad_alloc itself
}

TEST_CASE("out_of_memory_text: every way memory runs out has its infeasible text, other exceptions none") {
  CHECK(out_of_memory_text(OutOfMemory("host: out of memory: 4.00 MiB requested, 1.00 MiB in tensors")) ==
        "host: out of memory: 4.00 MiB requested, 1.00 MiB in tensors");
  CHECK(out_of_memory_text(std::bad_alloc()) == "out of memory (std::bad_alloc)");
  CHECK(out_of_memory_text(dnnl::error(dnnl_out_of_memory, "could not create a primitive")) ==
        "out of memory (oneDNN: could not create a primitive)");
  CHECK(out_of_memory_text(dnnl::error(dnnl_invalid_arguments, "could not create a primitive")).empty());
  CHECK(out_of_memory_text(std::runtime_error("out of memory")).empty());
  CHECK(out_of_memory_text(InputError("--batch: expected >= 1")).empty());
}

}  // namespace pw::exec
