#include "exec/profile/op_totals.h"

#include <cmath>
#include <set>
#include <tuple>

#include "models/median.h"

namespace pw::exec {

int price_op_totals(std::vector<models::PointTimes>& times, const PassTimes& samples, const std::vector<PassOp>& order,
                    double trim) {
  using K = PassOp::Kind;
  std::set<std::tuple<int, int, int>> ranges;  // (kind, begin, end)
  for (const PassOp& op : order) ranges.insert({static_cast<int>(op.kind), op.begin, op.end});
  const int n = static_cast<int>(times.size());
  int rescaled = 0;
  for (const auto& [k, begin, end] : ranges) {
    const K kind = static_cast<K>(k);
    if (begin < 0 || end > n || begin >= end) continue;
    const bool f = kind == K::F, b = kind == K::B || kind == K::BW, w = kind == K::W || kind == K::BW;
    // The sample lists that make up the op, all of one length.
    std::vector<const std::vector<int64_t>*> lists;
    for (int i = begin; i < end; ++i) {
      if (f) lists.push_back(&samples.forward.at(i));
      if (b) lists.push_back(&samples.backward_input.at(i));
      if (w) lists.push_back(&samples.backward_weight.at(i));
    }
    const size_t passes = lists.front()->size();
    bool aligned = passes > 0;
    for (const auto* l : lists) aligned = aligned && l->size() == passes;
    if (!aligned) continue;
    std::vector<double> totals(passes, 0.0);
    for (const auto* l : lists)
      for (size_t p = 0; p < passes; ++p) totals[p] += static_cast<double>((*l)[p]);
    double priced = 0;
    for (int i = begin; i < end; ++i) {
      const models::PointTimes& t = times[i];
      priced +=
          static_cast<double>((f ? t.forward_ns : 0) + (b ? t.backward_input_ns : 0) + (w ? t.backward_weight_ns : 0));
    }
    if (priced <= 0) continue;
    const double factor = models::trimmed_mean_of(totals, trim) / priced;
    const auto scale = [&](int64_t& v) { v = std::llround(static_cast<double>(v) * factor); };
    for (int i = begin; i < end; ++i) {
      models::PointTimes& t = times[i];
      if (f) scale(t.forward_ns);
      if (b) scale(t.backward_input_ns);
      if (w) scale(t.backward_weight_ns);
    }
    ++rescaled;
  }
  return rescaled;
}

}  // namespace pw::exec
