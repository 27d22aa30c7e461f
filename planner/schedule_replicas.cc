#include "planner/schedule_replicas.h"

#include <algorithm>
#include <numeric>

#include "models/error.h"
#include "planner/schedule_gen.h"

namespace pw::planner {

int round_robin_micro_batches(int m, const std::vector<int>& replicas) {
  int64_t l = m;
  for (int r : replicas) {
    l = std::lcm(l, static_cast<int64_t>(std::max(r, 1)));
    if (l > (1 << 20))
      throw InputError("replicated schedule: the round-robin period of " + std::to_string(m) +
                       " micro-batches over the replica counts exceeds 2^20 micro-batches");
  }
  int64_t need = 0, after = 0;
  for (size_t s = replicas.size(); s-- > 0;) {
    const int64_t r = std::max(replicas[s], 1);
    after += r;
    need = std::max(need, r * ((after + r - 1) / r));
  }
  return static_cast<int>(((need + l - 1) / l) * l);
}

Schedule make_replicated_schedule(ScheduleKind kind, const std::vector<int>& replicas, int m,
                                  const std::vector<bool>& allreduce) {
  const std::string name(to_string(kind));
  const int S = static_cast<int>(replicas.size());
  if (S < 1) throw InputError(name + " schedule: no stages");
  if (!allreduce.empty() && static_cast<int>(allreduce.size()) != S)
    throw InputError(name + " schedule: " + std::to_string(allreduce.size()) + " all-reduce flags for " +
                     std::to_string(S) + " stages");
  int total = 0;
  bool any = false;
  for (int s = 0; s < S; ++s) {
    if (replicas[s] < 1)
      throw InputError(name + " schedule: stage " + std::to_string(s) + " has " + std::to_string(replicas[s]) +
                       " replicas (expected >= 1)");
    total += replicas[s];
    any = any || replicas[s] > 1;
  }
  if (!any) return make_schedule(kind, S, m);
  if (m < 1) throw InputError(name + " schedule: number of micro-batches must be >= 1, got " + std::to_string(m));
  if (kind != ScheduleKind::gpipe && kind != ScheduleKind::one_f_one_b && kind != ScheduleKind::pipedream_async &&
      kind != ScheduleKind::two_bw)
    throw InputError(name + " schedule: replicated stages are simulated with gpipe, 1f1b, pipedream-async or 2bw");
  const bool sync = is_synchronous(kind);
  for (int s = 0; s < S; ++s)
    if (!sync && m % replicas[s] != 0)
      throw InputError(name + " schedule: stage " + std::to_string(s) + " has " + std::to_string(replicas[s]) +
                       " replicas, so the micro-batches per iteration must be a multiple of it, got " +
                       std::to_string(m));
  if (static_cast<int64_t>(total) * m > (int64_t{1} << 31) / 4)
    throw InputError(name + " schedule: devices x micro-batches too large");
  Schedule sc;
  sc.kind = kind;
  sc.num_devices = total;
  sc.num_stages = S;
  sc.num_micro_batches = m;
  sc.stage_device.resize(S);
  sc.stage_replicas.resize(S);
  sc.device_ops.resize(total);
  int first = 0;
  int after = total;  // devices of stages s..S-1
  for (int s = 0; s < S; ++s) {
    const int r = replicas[s];
    const bool ar = r > 1 && !allreduce.empty() && allreduce[s];
    for (int i = 0; i < r; ++i) {
      sc.stage_replicas[s].push_back(first + i);
      std::vector<int> own;
      for (int j = i; j < m; j += r) own.push_back(j);
      const int n = static_cast<int>(own.size());
      std::vector<Op>& ops = sc.device_ops[first + i];
      auto backward = [&](int j) {
        ops.push_back(compute_op(OpKind::BW, s, j));
        if (ar && !sync) ops.push_back(Op{OpKind::allreduce, s, j, -1, 0});
      };
      if (kind == ScheduleKind::gpipe) {
        for (int j : own) ops.push_back(compute_op(OpKind::F, s, j));
        for (int k = n - 1; k >= 0; --k) backward(own[k]);
      } else {
        const int w = std::min((after + r - 1) / r - 1, n);
        for (int k = 0; k < w; ++k) ops.push_back(compute_op(OpKind::F, s, own[k]));
        for (int k = 0; k < n - w; ++k) {
          ops.push_back(compute_op(OpKind::F, s, own[w + k]));
          backward(own[k]);
        }
        for (int k = n - w; k < n; ++k) backward(own[k]);
      }
      if (sync) {
        if (ar) ops.push_back(Op{OpKind::allreduce, s, -1, -1, 0});
        ops.push_back(Op{OpKind::step, -1, -1, -1, 0});
      }
    }
    sc.stage_device[s] = first;
    first += r;
    after -= r;
  }
  return sc;
}

}  // namespace pw::planner
