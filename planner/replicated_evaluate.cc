// replicated_evaluate (planner/replicated_dp.h): the cost of a given hierarchical plan under
// the replicated DP's model, without the DP (used to check that printed plans reproduce the
// DP's value).
#include <algorithm>
#include <vector>

#include "planner/replicated_dp.h"
#include "planner/replicated_segment.h"

namespace pw::planner {
namespace {

struct Evaluator {
  const CutStates& s;
  const std::vector<ReplicatedLevel>& levels;
  const ReplicatedOptions& o;

  int64_t group_size(int level) const {
    int64_t gs = 1;
    for (int t = 0; t < level; ++t) gs *= levels[t].machines;
    return gs;
  }
  // Level-`level` machine indices of a stage (same for every replica span).
  std::vector<int> machines_of(int level, const ReplicatedStage& st) const {
    std::vector<int> ms;
    for (int d : st.devices) {
      int mi = static_cast<int>((d / group_size(level)) % levels[level].machines);
      if (std::find(ms.begin(), ms.end(), mi) == ms.end()) ms.push_back(mi);
    }
    std::sort(ms.begin(), ms.end());
    return ms;
  }
  // Time of a segment made of `stages` on one level-`level` group.
  double eval(int level, const std::vector<ReplicatedStage>& stages) const {
    const double B = levels[level].bandwidth;
    const double lat = levels[level].latency_s;
    const double w = level == 0 ? 1.0 : levels[level - 1].machines;
    const int n = s.num_states();
    std::vector<std::vector<ReplicatedStage>> parts;
    std::vector<std::vector<int>> keys;
    for (const auto& st : stages) {
      auto key = machines_of(level, st);
      if (parts.empty() || keys.back() != key) {
        parts.emplace_back();
        keys.push_back(key);
      }
      parts.back().push_back(st);
    }
    auto diff = [&](const std::vector<int64_t>& v, int a, int b) {
      return static_cast<double>(v[b] - (a == 0 ? 0 : v[a - 1]));
    };
    double worst = 0;
    int used = 0;
    for (size_t q = 0; q < parts.size(); ++q) {
      const int start = parts[q].front().start, end = parts[q].back().end;
      const int r = static_cast<int>(keys[q].size());
      used += r;
      const double C = level == 0 ? segment_compute_s(s, o, start, end - 1) : eval(level - 1, parts[q]);
      const double P = diff(s.parameter_bytes, start, end - 1);
      double t;
      if (o.quirks) {
        const double out_in = static_cast<double>(start > 0 ? s.out_bytes[start - 1] : 0);
        const double out_out = static_cast<double>(s.out_bytes[end - 1]);
        if (q == 0) {
          t = (C + 4.0 * (r - 1) * P / (B * r) / w) / r;
        } else {
          t = (C + 4.0 * (r - 1) * P / (B * r)) / r;
          if (o.activation_comm) {
            t = std::max(t, 2.0 * out_in / (B * r));
            if (end < n) t = std::max(t, 2.0 * out_out / (B * r));
          }
        }
      } else {
        const double ar = r > 1 ? 2.0 * (r - 1) / r * P / B + 2.0 * (r - 1) * lat : 0.0;
        const double in = q == 0 ? 0.0 : lat + s.cut_bytes[start - 1] * o.activation_scale / B;
        const double out = end < n ? lat + s.cut_bytes[end - 1] * o.activation_scale / B : 0.0;
        t = std::max((C + ar) / r, (in + out) / r);
      }
      worst = std::max(worst, t);
    }
    (void)used;
    return worst;
  }
};

}  // namespace

double replicated_evaluate(const CutStates& s, const std::vector<ReplicatedLevel>& levels, const ReplicatedOptions& o,
                           const std::vector<ReplicatedStage>& stages) {
  Evaluator ev{s, levels, o};
  return ev.eval(static_cast<int>(levels.size()) - 1, stages);
}

}  // namespace pw::planner
