#include "planner/schedule_gen.h"

#include <algorithm>

#include "models/error.h"
#include "models/limits.h"

namespace pw::planner {

namespace {

Op step_op() { return Op{OpKind::step, -1, -1, -1, 0}; }

// gpipe: all forwards, then fused backwards in reverse micro-batch order.
std::vector<Op> gpipe_ops(int s, int m) {
  std::vector<Op> ops;
  ops.reserve(2 * static_cast<size_t>(m) + 1);
  for (int j = 0; j < m; ++j) ops.push_back(compute_op(OpKind::F, s, j));
  for (int j = m - 1; j >= 0; --j) ops.push_back(compute_op(OpKind::BW, s, j));
  return ops;
}

std::vector<Op> one_f_one_b_ops(int s, int p, int m) {
  const int w = std::min(p - s - 1, m);
  std::vector<Op> ops;
  ops.reserve(2 * static_cast<size_t>(m) + 1);
  for (int j = 0; j < w; ++j) ops.push_back(compute_op(OpKind::F, s, j));
  for (int i = 0; i < m - w; ++i) {
    ops.push_back(compute_op(OpKind::F, s, w + i));
    ops.push_back(compute_op(OpKind::BW, s, i));
  }
  for (int i = m - w; i < m; ++i) ops.push_back(compute_op(OpKind::BW, s, i));
  return ops;
}

std::vector<Op> interleaved_ops(int d, int p, int m, int v) {
  if (v == 1) return one_f_one_b_ops(d, p, m);
  const int total = m * v;
  const int pv = p * v;
  const int warmup = std::min(2 * (p - d - 1) + (v - 1) * p, total);
  auto micro_batch = [&](int k) { return (k / pv) * p + k % p; };
  auto fwd = [&](int k) { return compute_op(OpKind::F, ((k % pv) / p) * p + d, micro_batch(k)); };
  auto bwd = [&](int k) { return compute_op(OpKind::BW, (v - 1 - (k % pv) / p) * p + d, micro_batch(k)); };
  std::vector<Op> ops;
  ops.reserve(2 * static_cast<size_t>(total) + 1);
  for (int k = 0; k < warmup; ++k) ops.push_back(fwd(k));
  for (int i = 0; i < total - warmup; ++i) {
    ops.push_back(fwd(warmup + i));
    ops.push_back(bwd(i));
  }
  for (int i = total - warmup; i < total; ++i) ops.push_back(bwd(i));
  return ops;
}

// Appends B(i) and the W that falls due after it (lag `lag`).
void push_b_and_due_w(std::vector<Op>& ops, int s, int i, int lag, int& next_w) {
  ops.push_back(compute_op(OpKind::B, s, i));
  if (i - lag >= 0) ops.push_back(compute_op(OpKind::W, s, next_w++));
}

std::vector<Op> zb_h1_ops(int s, int p, int m) {
  const int w = std::min(p - s - 1, m);
  const int lag = s;
  std::vector<Op> ops;
  ops.reserve(3 * static_cast<size_t>(m) + 1);
  int next_w = 0;
  for (int j = 0; j < w; ++j) ops.push_back(compute_op(OpKind::F, s, j));
  for (int i = 0; i < m - w; ++i) {
    ops.push_back(compute_op(OpKind::F, s, w + i));
    push_b_and_due_w(ops, s, i, lag, next_w);
  }
  for (int i = m - w; i < m; ++i) push_b_and_due_w(ops, s, i, lag, next_w);
  while (next_w < m) ops.push_back(compute_op(OpKind::W, s, next_w++));
  return ops;
}

std::vector<Op> zb_h2_ops(int s, int p, int m) {
  const int w = std::min(2 * (p - s) - 1, m);
  const int lag = 2 * s;
  std::vector<Op> ops;
  ops.reserve(3 * static_cast<size_t>(m) + 1);
  int next_w = 0;
  for (int j = 0; j < w; ++j) ops.push_back(compute_op(OpKind::F, s, j));
  for (int i = 0; i < m - w; ++i) {
    push_b_and_due_w(ops, s, i, lag, next_w);
    ops.push_back(compute_op(OpKind::F, s, w + i));
  }
  for (int i = m - w; i < m; ++i) push_b_and_due_w(ops, s, i, lag, next_w);
  while (next_w < m) ops.push_back(compute_op(OpKind::W, s, next_w++));
  return ops;
}

}  // namespace

Schedule make_schedule(ScheduleKind kind, int num_devices, int num_micro_batches, int chunks) {
  const std::string name(to_string(kind));
  if (num_devices < 1)
    throw InputError(name + " schedule: number of stages must be >= 1, got " + std::to_string(num_devices));
  if (num_micro_batches < 1)
    throw InputError(name + " schedule: number of micro-batches must be >= 1, got " +
                     std::to_string(num_micro_batches));
  if (chunks < 1) throw InputError(name + " schedule: chunks must be >= 1, got " + std::to_string(chunks));
  if (chunks > 1 && kind != ScheduleKind::interleaved_1f1b)
    throw InputError(name + " schedule: chunks > 1 needs interleaved-1f1b, got chunks = " + std::to_string(chunks));
  if (kind == ScheduleKind::interleaved_1f1b && chunks > 1 && num_micro_batches % num_devices != 0)
    throw InputError("interleaved-1f1b schedule: micro-batches (" + std::to_string(num_micro_batches) +
                     ") must be a multiple of the number of stages (" + std::to_string(num_devices) + ")");
  models::check_schedule_size(static_cast<int64_t>(num_devices) * chunks, num_micro_batches, name + " schedule");
  const int p = num_devices, m = num_micro_batches;
  Schedule s;
  s.kind = kind;
  s.num_devices = p;
  s.num_stages = p * chunks;
  s.num_micro_batches = m;
  s.stage_device.resize(s.num_stages);
  for (int k = 0; k < s.num_stages; ++k) s.stage_device[k] = k % p;
  s.device_ops.resize(p);
  for (int d = 0; d < p; ++d) {
    std::vector<Op>& ops = s.device_ops[d];
    switch (kind) {
      case ScheduleKind::gpipe: ops = gpipe_ops(d, m); break;
      case ScheduleKind::one_f_one_b:
      case ScheduleKind::pipedream_async:
      case ScheduleKind::two_bw: ops = one_f_one_b_ops(d, p, m); break;
      case ScheduleKind::interleaved_1f1b: ops = interleaved_ops(d, p, m, chunks); break;
      case ScheduleKind::zb_h1: ops = zb_h1_ops(d, p, m); break;
      case ScheduleKind::zb_h2: ops = zb_h2_ops(d, p, m); break;
    }
    if (is_synchronous(kind)) ops.push_back(step_op());
  }
  return s;
}

}  // namespace pw::planner
