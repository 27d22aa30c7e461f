#include "sim/replay.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "models/error.h"
#include "models/median.h"
#include "planner/schedule_gen.h"
#include "planner/schedule_validate.h"
#include "sim/trace_io.h"

namespace pw::sim {

namespace {

using planner::OpKind;
using Key = std::tuple<int, int, int, int>;  // kind, stage (step: device), micro-batch, iteration

bool is_compute(OpKind k) {
  return k == OpKind::F || k == OpKind::B || k == OpKind::W || k == OpKind::BW || k == OpKind::step;
}

int64_t at_or_zero(const std::vector<int64_t>& v, size_t i) { return i < v.size() ? v[i] : 0; }

int64_t predicted_duration(const StageCosts& c, OpKind kind, int stage_or_device) {
  const size_t s = static_cast<size_t>(stage_or_device);
  const bool rc = kind != OpKind::step && s < c.recompute.size() && c.recompute[s];
  switch (kind) {
    case OpKind::F: return at_or_zero(c.forward_ns, s);
    case OpKind::B: return at_or_zero(c.backward_input_ns, s) + (rc ? at_or_zero(c.forward_ns, s) : 0);
    case OpKind::W: return at_or_zero(c.backward_weight_ns, s);
    case OpKind::BW:
      return at_or_zero(c.backward_input_ns, s) + at_or_zero(c.backward_weight_ns, s) +
             (rc ? at_or_zero(c.forward_ns, s) : 0);
    case OpKind::step: return at_or_zero(c.step_ns, s);
    default: return 0;
  }
}

}  // namespace

ReplayResult replay(const planner::Schedule& schedule, const Trace& measured, const StageCosts& predicted, int first,
                    int iterations, int64_t handoff_ns) {
  if (handoff_ns < 0) throw InputError("replay: handoff_ns must be >= 0");
  const Network network = handoff_ns > 0 ? Network::fixed(handoff_ns) : Network{};
  const int m = schedule.num_micro_batches;
  int64_t total = 0;  // iterations in the trace; 64-bit: a trace may number an iteration INT_MAX
  std::map<Key, int64_t> dur;
  std::set<int> has_ops;  // iterations with compute ops
  // Transfers between devices, keyed (direction, sending stage, micro-batch, iteration): the
  // measured latency from the sender's hand-off to the receiver taking the message. A measured
  // trace (the runtime's) ends a transfer when the receiver took the message, and counts the
  // hand-off itself (waking the receiver) in the sending op; so its latency is counted from
  // the latest of: the hand-off, the end of the sending op, and the end of the receiver's last
  // compute op before it took the message. Before that the sender was still busy handing off,
  // or the message waited while the receiver computed (or waited for another op's input):
  // time the simulation charges itself, as the sending op's duration or as the receiver's
  // queue. Counted in the latency too it showed twice (gpt replayed 1.1% long in 1F1B and
  // 1.8% in interleaved 1F1B). A simulated trace ends a transfer on arrival, whatever the
  // receiver does: its latency is end - start.
  const bool taken = measured.source == "measured";
  std::map<Key, int64_t> sent_end;  // (direction, stage, micro-batch, iteration) of the sending op -> its end
  std::vector<std::vector<int64_t>> compute_ends(std::max(0, schedule.num_devices));  // per device, sorted
  for (const TraceEvent& e : measured.events) {
    if (e.is_transfer || !is_compute(e.kind)) continue;
    if (e.device >= 0 && e.device < schedule.num_devices) compute_ends[e.device].push_back(e.end_ns);
    if ((e.kind == OpKind::F || e.kind == OpKind::B || e.kind == OpKind::BW) && e.micro_batch >= 0)
      sent_end[{e.kind == OpKind::F ? 0 : 1, e.stage, e.micro_batch % std::max(1, m), e.iteration}] = e.end_ns;
  }
  for (auto& v : compute_ends) std::sort(v.begin(), v.end());
  // The end of device `dev`'s last compute op that ended at or before `t` (none: INT64_MIN).
  const auto last_end = [&](int dev, int64_t t) {
    if (dev < 0 || dev >= static_cast<int>(compute_ends.size())) return std::numeric_limits<int64_t>::min();
    const auto& v = compute_ends[dev];
    auto it = std::upper_bound(v.begin(), v.end(), t);
    return it == v.begin() ? std::numeric_limits<int64_t>::min() : *std::prev(it);
  };
  std::map<Key, int64_t> latency;
  for (const TraceEvent& e : measured.events) {
    if (e.is_transfer) {
      if (e.dst_device >= 0 && e.dst_device != e.device && e.micro_batch >= 0) {
        const Key key{e.kind == OpKind::F ? 0 : 1, e.stage, e.micro_batch % std::max(1, m), e.iteration};
        int64_t ready = e.start_ns;
        if (taken) {
          ready = std::max(ready, last_end(e.dst_device, e.end_ns));
          if (auto f = sent_end.find(key); f != sent_end.end()) ready = std::max(ready, f->second);
        }
        latency[key] = std::max<int64_t>(0, e.end_ns - ready);
      }
      continue;
    }
    if (!is_compute(e.kind)) continue;
    total = std::max(total, int64_t{e.iteration} + 1);
    has_ops.insert(e.iteration);
    const int who = e.kind == OpKind::step ? e.device : e.stage;
    const int mb = e.kind == OpKind::step ? -1 : e.micro_batch % std::max(1, m);
    dur[{static_cast<int>(e.kind), who, mb, e.iteration}] = e.end_ns - e.start_ns;
  }
  if (total == 0) throw InputError("replay: the trace has no compute ops");
  const int64_t count = iterations > 0 ? iterations : first < 0 ? total : total - first;
  const int64_t from = first < 0 ? total - count : first;
  if (from < 0 || count < 1 || from + count > total)
    throw InputError("replay: iterations [" + std::to_string(from) + ", " + std::to_string(from + count) +
                     ") are not all in the trace (it has " + std::to_string(total) + ")");
  // Every replayed iteration has compute ops (an empty one has no span to measure). The first
  // missing one is found within has_ops.size() + 1 steps, so count fits an int past this.
  for (int64_t k = from; k < from + count; ++k)
    if (!has_ops.contains(static_cast<int>(k)))
      throw InputError("replay: the trace has no compute ops in iteration " + std::to_string(k));
  first = static_cast<int>(from);
  iterations = static_cast<int>(count);
  ReplayResult r;
  r.first_iteration = first;
  r.iterations = iterations;
  SimOptions one;
  one.iterations = 1;
  r.predicted_ns = static_cast<double>(simulate(schedule, predicted, network, one).report.makespan_ns);
  // Per (stage, kind): count per iteration and measured durations.
  std::map<std::pair<int, int>, OpKindError> items;
  for (int d = 0; d < schedule.num_devices; ++d)
    for (const planner::Op& op : schedule.device_ops[d]) {
      if (!is_compute(op.kind)) continue;
      const int who = op.kind == OpKind::step ? d : op.stage;
      OpKindError& it = items[{who, static_cast<int>(op.kind)}];
      it.stage = who;
      it.kind = op.kind;
      ++it.count;
      it.predicted_ns = static_cast<double>(predicted_duration(predicted, op.kind, who));
    }
  // Transfers: one row per sending stage (kind send, both directions), predicted = the
  // hand-off latency, measured = the mean replayed latency; counted in the first replayed
  // iteration (every iteration sends the same).
  const int transfer_kind = static_cast<int>(OpKind::send);
  std::map<std::pair<int, int>, double> sums;
  std::vector<double> measured_k, replayed_k;
  // The replay charges no data phase: where the loader held a worker's core, the measured op
  // durations and transfer latencies already show it.
  StageCosts replayed_costs = predicted;
  replayed_costs.data_ns.clear();
  for (int64_t k64 = from; k64 < from + count; ++k64) {
    const int k = static_cast<int>(k64);
    int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
    for (const TraceEvent& e : measured.events)
      if (!e.is_transfer && e.iteration == k && is_compute(e.kind)) {
        lo = std::min(lo, e.start_ns);
        hi = std::max(hi, e.end_ns);
      }
    measured_k.push_back(static_cast<double>(hi - lo));
    SimOptions so;
    so.iterations = 1;
    so.record_trace = k64 + 1 == from + count;
    so.op_duration = [&](int d, const planner::Op& op, int, int64_t modeled) -> int64_t {
      if (!is_compute(op.kind)) return modeled;
      const int who = op.kind == OpKind::step ? d : op.stage;
      const int mb = op.kind == OpKind::step ? -1 : op.micro_batch % std::max(1, m);
      auto f = dur.find({static_cast<int>(op.kind), who, mb, k});
      if (f == dur.end())
        throw InputError("replay: the trace has no " + planner::op_label(op) + " on device " + std::to_string(d) +
                         " in iteration " + std::to_string(k));
      sums[{who, static_cast<int>(op.kind)}] += static_cast<double>(f->second);
      return f->second;
    };
    so.transfer_latency = [&](const planner::Op& op, int, int64_t modeled) -> int64_t {
      const int mb = op.micro_batch % std::max(1, m);
      auto f = latency.find({op.kind == OpKind::F ? 0 : 1, op.stage, mb, k});
      const int64_t ns = f == latency.end() ? modeled : f->second;  // traces without transfers: the model's
      if (k == first) {
        OpKindError& it = items[{op.stage, transfer_kind}];
        it.stage = op.stage;
        it.kind = OpKind::send;
        ++it.count;
        it.predicted_ns = static_cast<double>(handoff_ns);
      }
      sums[{op.stage, transfer_kind}] += static_cast<double>(ns);
      return ns;
    };
    SimResult sr = simulate(schedule, replayed_costs, network, so);
    replayed_k.push_back(static_cast<double>(sr.report.makespan_ns));
    if (so.record_trace) r.replayed = std::move(sr.trace);
  }
  r.measured_ns = models::median_of(measured_k);
  r.replayed_ns = models::median_of(replayed_k);
  for (auto& [key, it] : items) {
    it.measured_ns = sums[key] / (static_cast<double>(it.count) * iterations);
    r.ops.push_back(it);
  }
  return r;
}

std::string format_replay(const ReplayResult& r) {
  std::ostringstream os;
  char buf[200];
  auto pct = [&](double x) { return r.measured_ns > 0 ? 100.0 * x / r.measured_ns : 0.0; };
  std::snprintf(buf, sizeof buf, "replay of iterations %d..%d (median iteration)\n", r.first_iteration,
                r.first_iteration + (r.iterations - 1));
  os << buf;
  std::snprintf(buf, sizeof buf, "measured %.3f ms, replayed %.3f ms, predicted %.3f ms\n", r.measured_ns / 1e6,
                r.replayed_ns / 1e6, r.predicted_ns / 1e6);
  os << buf;
  std::snprintf(buf, sizeof buf,
                "error of the prediction %+.3f ms (%+.1f%%) = cost model %+.3f ms (%+.1f%%) + scheduling %+.3f ms "
                "(%+.1f%%)\n",
                (r.predicted_ns - r.measured_ns) / 1e6, pct(r.predicted_ns - r.measured_ns),
                r.cost_model_error_ns() / 1e6, pct(r.cost_model_error_ns()), -r.scheduling_error_ns() / 1e6,
                pct(-r.scheduling_error_ns()));
  os << buf;
  os << "stage  op    count  predicted ms  measured ms  error ms/iteration\n";
  for (const OpKindError& e : r.ops) {
    std::snprintf(buf, sizeof buf, "%-6s %-5s %5d  %12.4f  %11.4f  %+.4f\n",
                  (e.kind == OpKind::step ? "dev " + std::to_string(e.stage) : std::to_string(e.stage)).c_str(),
                  std::string(planner::to_string(e.kind)).c_str(), e.count, e.predicted_ns / 1e6, e.measured_ns / 1e6,
                  e.error_ns() / 1e6);
    os << buf;
  }
  return os.str();
}

ReplayResult replay_run_trace(const RunTrace& rt, const std::string& where) {
  if (!rt.has_predicted) throw InputError(where + ": /predicted: missing (record the run with --compare)");
  if (rt.chunks < 1 || rt.stages % rt.chunks != 0) throw InputError(where + ": /stages: not a multiple of /chunks");
  try {
    const planner::Schedule schedule =
        planner::make_schedule(rt.schedule, rt.stages / rt.chunks, rt.micro_batches, rt.chunks);
    return replay(schedule, rt.trace, rt.predicted, replay_first_iteration(rt), 0, rt.handoff_ns);
  } catch (const InputError& e) { throw InputError(where + ": " + e.what()); }
}

}  // namespace pw::sim
