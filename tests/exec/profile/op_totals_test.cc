// A worker's ops priced as wholes (exec/profile/op_totals.h): hand-made samples, no timing.
#include <doctest/doctest.h>

#include <vector>

#include "exec/profile/op_totals.h"

namespace pw::exec {
namespace {

using K = PassOp::Kind;

std::vector<int64_t> flat(int64_t v, int n = 20) { return std::vector<int64_t>(static_cast<size_t>(n), v); }

PassTimes empty_times(int layers) {
  PassTimes t;
  for (auto* v : {&t.forward, &t.backward_input, &t.backward_weight, &t.step})
    v->assign(static_cast<size_t>(layers), {});
  return t;
}

TEST_CASE("price_op_totals: an op's layers add up to the trimmed mean of the op's totals, in their own shares") {
  // Two layers of one F op, 20 passes; each runs long once, in different passes. Their own 5%
  // trims drop those samples (100 and 300), but in the op's totals each is a whole sample's
  // worth: 18 passes of 400 and two of 1120; trimmed (one each end): (17 x 400 + 1120) / 18 = 440.
  PassTimes s = empty_times(3);
  s.forward[0] = flat(100);
  s.forward[0][0] = 820;
  s.forward[1] = flat(300);
  s.forward[1][1] = 1020;
  s.forward[2] = flat(7);  // outside the op: untouched
  std::vector<models::PointTimes> t(3);
  t[0].forward_ns = 100;
  t[1].forward_ns = 300;
  t[2].forward_ns = 7;
  t[0].backward_input_ns = 55;  // other kinds of a priced layer: untouched
  const std::vector<PassOp> order = {{K::F, 0, 0, 2}, {K::F, 1, 0, 2}, {K::BW, 0, 0, 2}, {K::BW, 1, 0, 2}};
  s.backward_input[0] = s.backward_input[1] = s.backward_weight[0] = s.backward_weight[1] = {};  // BW: no samples
  CHECK(price_op_totals(t, s, order, 0.05) == 1);
  CHECK(t[0].forward_ns == 110);
  CHECK(t[1].forward_ns == 330);
  CHECK(t[2].forward_ns == 7);
  CHECK(t[0].backward_input_ns == 55);
}

TEST_CASE("price_op_totals: BW totals B and W together and scales both, B and W alone scale their own") {
  PassTimes s = empty_times(2);
  s.backward_input[0] = flat(10);
  s.backward_weight[0] = flat(30);
  s.backward_input[1] = flat(8);
  s.backward_weight[1] = flat(12);
  std::vector<models::PointTimes> t(2);
  t[0].backward_input_ns = 5;
  t[0].backward_weight_ns = 15;  // priced at 20 against totals of 40: both doubled
  CHECK(price_op_totals(t, s, {{K::BW, 0, 0, 1}}, 0.05) == 1);
  CHECK(t[0].backward_input_ns == 10);
  CHECK(t[0].backward_weight_ns == 30);
  // Split B and W ops (zero-bubble): each kind against its own totals.
  t[1].backward_input_ns = 4;
  t[1].backward_weight_ns = 24;
  CHECK(price_op_totals(t, s, {{K::B, 0, 1, 2}, {K::W, 0, 1, 2}}, 0.05) == 2);
  CHECK(t[1].backward_input_ns == 8);
  CHECK(t[1].backward_weight_ns == 12);
}

TEST_CASE("price_op_totals: unequal sample counts, no samples or a zero price leave the range as it is") {
  PassTimes s = empty_times(3);
  s.forward[0] = flat(100, 20);
  s.forward[1] = flat(100, 19);  // not one sample per op: the passes cannot be paired
  s.forward[2] = flat(50);
  std::vector<models::PointTimes> t(3);
  t[0].forward_ns = 1;
  t[1].forward_ns = 2;
  t[2].forward_ns = 0;  // priced 0: no share to scale by
  CHECK(price_op_totals(t, s, {{K::F, 0, 0, 2}, {K::F, 0, 2, 3}, {K::W, 0, 0, 3}}, 0.05) == 0);
  CHECK(t[0].forward_ns == 1);
  CHECK(t[1].forward_ns == 2);
  CHECK(t[2].forward_ns == 0);
  CHECK(price_op_totals(t, s, {}, 0.05) == 0);
}

}  // namespace
}  // namespace pw::exec
