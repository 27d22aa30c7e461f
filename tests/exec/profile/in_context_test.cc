// In-context passes of one pipeline worker (exec/profile/in_context.h): a layer mask with
// stand-ins at its edges, and an op order run in whole steps. Counts and shapes only; no times
// are compared.
#include <doctest/doctest.h>

#include <vector>

#include "exec/profile/in_context.h"
#include "models/error.h"
#include "tests/exec/runtime/training_util.h"

namespace pw::exec {
namespace {

using K = PassOp::Kind;

PassOptions quick() {
  PassOptions o;
  o.micro_batch = 2;
  o.reps = 3;
  o.warmup = 1;
  o.optimizer.kind = OptimizerKind::sgd;
  return o;
}

std::vector<bool> mask(int n, int begin, int end) {
  std::vector<bool> m(n, false);
  for (int i = begin; i < end; ++i) m[i] = true;
  return m;
}

}  // namespace

TEST_CASE("in-context passes with a layer mask: only the masked layers run, stand-ins at both edges") {
  const models::Model m = testing::tiny_model("mlp", 8);
  const int n = static_cast<int>(m.layers().size());
  const int cut = n / 2;
  for (const auto& [begin, end] : {std::pair{0, cut}, std::pair{cut, n}}) {
    CAPTURE(begin);
    PassOptions o = quick();
    o.layers = mask(n, begin, end);
    const PassTimes t = time_in_context(m, o);
    for (int i = 0; i < n; ++i) {
      CAPTURE(i);
      const size_t want = i >= begin && i < end ? 3 : 0;
      CHECK(t.forward[i].size() == want);
      CHECK(t.backward_input[i].size() == want);
      CHECK(t.backward_weight[i].size() == want);
    }
  }
  PassOptions o = quick();
  o.layers = mask(n - 1, 0, 1);
  CHECK_THROWS_AS(time_in_context(m, o), InputError);
}

TEST_CASE("in-context passes in an order: whole steps, B then W, and the order's rules") {
  const models::Model m = testing::tiny_model("mlp", 8);
  const int n = static_cast<int>(m.layers().size());
  const int cut = n / 2;
  PassOptions o = quick();
  o.layers = mask(n, cut, n);
  // A 1F1B-like worker of 2 micro-batches: F0 BW0 F1 BW1.
  o.order = {{K::F, 0, cut, n}, {K::BW, 0, cut, n}, {K::F, 1, cut, n}, {K::BW, 1, cut, n}};
  CHECK(order_micro_batches(o.order) == 2);
  CHECK(timed_passes_for(3, o.order) == 4);
  CHECK(timed_passes_for(4, o.order) == 4);
  CHECK(timed_passes_for(3, {}) == 3);
  PassTimes t = time_in_context(m, o);
  CHECK(t.forward[cut].size() == 4);  // reps 3 -> 2 timed steps of 2 micro-batches
  CHECK(t.backward_weight[n - 2].size() == 4);
  CHECK(t.step[cut].size() == 2);  // one optimizer step per step
  CHECK(t.forward[0].empty());

  // Zero bubble: B of both micro-batches, then their W.
  o.order = {{K::F, 0, cut, n}, {K::F, 1, cut, n}, {K::B, 0, cut, n},
             {K::B, 1, cut, n}, {K::W, 0, cut, n}, {K::W, 1, cut, n}};
  t = time_in_context(m, o);
  CHECK(t.backward_input[cut].size() == 4);
  CHECK(t.backward_weight[cut].size() == 4);

  // Out of turn: a backward before its forward, W before B, a forward twice, no backward.
  for (const std::vector<PassOp>& bad : std::vector<std::vector<PassOp>>{
           {{K::BW, 0, cut, n}, {K::F, 0, cut, n}},
           {{K::F, 0, cut, n}, {K::W, 0, cut, n}, {K::B, 0, cut, n}},
           {{K::F, 0, cut, n}, {K::F, 0, cut, n}, {K::BW, 0, cut, n}},
           {{K::F, 0, cut, n}},
           {{K::F, 0, cut, n}, {K::B, 0, cut, n}},
           {{K::F, 0, n, n}},
       }) {
    o.order = bad;
    CHECK_THROWS_AS(time_in_context(m, o), InputError);
  }
}

}  // namespace pw::exec
