#include "planner/schedule_validate.h"

#include <deque>
#include <map>
#include <set>

#include "models/error.h"

namespace pw::planner {

std::string op_label(const Op& op) {
  switch (op.kind) {
    case OpKind::step: return "step";
    case OpKind::allreduce:
      return "allreduce(" + std::to_string(op.stage) +
             (op.micro_batch >= 0 ? "," + std::to_string(op.micro_batch) : std::string()) + ")";
    default:
      return std::string(to_string(op.kind)) + "(" + std::to_string(op.stage) + "," + std::to_string(op.micro_batch) +
             ")";
  }
}

namespace {

enum Bit : uint8_t { kF = 1, kB = 2, kW = 4, kBW = 8 };

uint8_t bit_of(OpKind k) {
  switch (k) {
    case OpKind::F: return kF;
    case OpKind::B: return kB;
    case OpKind::W: return kW;
    case OpKind::BW: return kBW;
    default: return 0;
  }
}

void check_shape(const Schedule& s) {
  if (s.num_devices < 1) throw InputError("schedule: num_devices must be >= 1");
  if (s.stage_replicas.empty() && s.num_stages < s.num_devices)
    throw InputError("schedule: num_stages (" + std::to_string(s.num_stages) + ") must be >= num_devices (" +
                     std::to_string(s.num_devices) + ")");
  if (s.num_micro_batches < 1) throw InputError("schedule: num_micro_batches must be >= 1");
  if (static_cast<int>(s.stage_device.size()) != s.num_stages)
    throw InputError("schedule: stage_device has " + std::to_string(s.stage_device.size()) + " entries, expected " +
                     std::to_string(s.num_stages));
  for (int k = 0; k < s.num_stages; ++k)
    if (s.stage_device[k] < 0 || s.stage_device[k] >= s.num_devices)
      throw InputError("schedule: stage_device[" + std::to_string(k) + "] out of range");
  if (static_cast<int>(s.device_ops.size()) != s.num_devices)
    throw InputError("schedule: " + std::to_string(s.device_ops.size()) + " op lists for " +
                     std::to_string(s.num_devices) + " devices");
  if (s.stage_replicas.empty()) return;
  if (static_cast<int>(s.stage_replicas.size()) != s.num_stages)
    throw InputError("schedule: stage_replicas has " + std::to_string(s.stage_replicas.size()) + " entries, expected " +
                     std::to_string(s.num_stages));
  std::set<int> used;
  for (int k = 0; k < s.num_stages; ++k) {
    const auto& r = s.stage_replicas[k];
    const std::string at = "schedule: stage_replicas[" + std::to_string(k) + "]";
    if (r.empty()) throw InputError(at + " is empty");
    if (r[0] != s.stage_device[k])
      throw InputError(at + "[0] = " + std::to_string(r[0]) + " is not stage_device[" + std::to_string(k) +
                       "] = " + std::to_string(s.stage_device[k]));
    for (int d : r) {
      if (d < 0 || d >= s.num_devices) throw InputError(at + ": device " + std::to_string(d) + " out of range");
      if (!used.insert(d).second) throw InputError(at + ": device " + std::to_string(d) + " runs two replicas");
    }
    if (!is_synchronous(s.kind) && s.num_micro_batches % static_cast<int>(r.size()) != 0)
      throw InputError(at + ": " + std::to_string(r.size()) +
                       " replicas of an asynchronous schedule need a multiple of " + std::to_string(r.size()) +
                       " micro-batches per iteration, got " + std::to_string(s.num_micro_batches));
  }
  if (static_cast<int>(used.size()) != s.num_devices)
    throw InputError("schedule: stage_replicas use " + std::to_string(used.size()) + " of " +
                     std::to_string(s.num_devices) + " devices (every device runs one replica of one stage)");
}

void check_coverage(const Schedule& s, std::vector<uint8_t>& seen) {
  const int S = s.num_stages, M = s.num_micro_batches;
  const bool sync = is_synchronous(s.kind);
  seen.assign(static_cast<size_t>(S) * M, 0);
  for (int d = 0; d < s.num_devices; ++d) {
    const auto& ops = s.device_ops[d];
    const std::string dev = "device " + std::to_string(d);
    int steps = 0;
    for (size_t k = 0; k < ops.size(); ++k) {
      const Op& op = ops[k];
      if (op.kind == OpKind::send || op.kind == OpKind::recv)
        throw InputError("schedule: " + dev + " op " + std::to_string(k) + ": explicit " +
                         std::string(to_string(op.kind)) + " is not supported (communication is implicit)");
      if (op.kind == OpKind::step) {
        if (!sync)
          throw InputError("schedule: " + dev + ": step op in asynchronous schedule " + std::string(to_string(s.kind)));
        if (++steps > 1 || k + 1 != ops.size())
          throw InputError("schedule: " + dev + ": step must be the last op, once");
        continue;
      }
      if (op.stage < 0 || op.stage >= S)
        throw InputError("schedule: " + dev + " op " + std::to_string(k) + ": stage " + std::to_string(op.stage) +
                         " out of range [0," + std::to_string(S) + ")");
      if (op.kind == OpKind::allreduce && op.micro_batch < 0) {
        bool mine = s.stage_device[op.stage] == d;
        if (!s.stage_replicas.empty())
          for (int r : s.stage_replicas[op.stage]) mine = mine || r == d;
        if (!mine)
          throw InputError("schedule: " + dev + " runs " + op_label(op) + " but no replica of stage " +
                           std::to_string(op.stage) + " is on it");
        continue;
      }
      if (op.micro_batch < 0 || op.micro_batch >= M)
        throw InputError("schedule: " + dev + " op " + std::to_string(k) + ": micro-batch " +
                         std::to_string(op.micro_batch) + " out of range [0," + std::to_string(M) + ")");
      if (s.device_of(op.stage, op.micro_batch) != d)
        throw InputError("schedule: " + dev + " runs " + op_label(op) + " but " +
                         (s.replicas(op.stage) > 1 ? "micro-batch " + std::to_string(op.micro_batch) + " of " : "") +
                         "stage " + std::to_string(op.stage) + " is on device " +
                         std::to_string(s.device_of(op.stage, op.micro_batch)));
      if (op.kind == OpKind::allreduce) continue;
      uint8_t& b = seen[static_cast<size_t>(op.stage) * M + op.micro_batch];
      const uint8_t bit = bit_of(op.kind);
      if (b & bit) throw InputError("schedule: duplicate " + op_label(op) + " on " + dev);
      b |= bit;
    }
    if (sync && steps == 0) throw InputError("schedule: " + dev + " does not end with a step op");
  }
  for (int st = 0; st < S; ++st)
    for (int j = 0; j < M; ++j) {
      const uint8_t b = seen[static_cast<size_t>(st) * M + j];
      auto missing = [&](OpKind k) {
        return InputError("schedule: missing " + op_label(Op{k, st, j, -1, 0}) + " (device " +
                          std::to_string(s.stage_device[st]) + ")");
      };
      if (!(b & kF)) throw missing(OpKind::F);
      if (b & kBW) {
        if (b & (kB | kW))
          throw InputError("schedule: stage " + std::to_string(st) + " micro-batch " + std::to_string(j) +
                           " has both BW and split B/W");
      } else {
        if (!(b & kB)) throw missing(b & kW ? OpKind::B : OpKind::BW);
        if (!(b & kW)) throw missing(OpKind::W);
      }
    }
}

}  // namespace

void validate_schedule(const Schedule& s) {
  check_shape(s);
  std::vector<uint8_t> kinds;
  check_coverage(s, kinds);
  const int S = s.num_stages, M = s.num_micro_batches, D = s.num_devices;
  // done[stage*M + j]: bits of the ops of (stage, j) that have run.
  std::vector<uint8_t> done(static_cast<size_t>(S) * M, 0);
  auto idx = [M](int st, int j) { return static_cast<size_t>(st) * M + j; };
  // The op whose completion (s, j, kind) needs, or nullopt-like kind==step when ready.
  auto missing_dep = [&](const Op& op, Op& dep) -> bool {
    const int st = op.stage, j = op.micro_batch;
    switch (op.kind) {
      case OpKind::F:
        if (st > 0 && !(done[idx(st - 1, j)] & kF)) {
          dep = {OpKind::F, st - 1, j};
          return true;
        }
        return false;
      case OpKind::B:
      case OpKind::BW:
        if (!(done[idx(st, j)] & kF)) {
          dep = {OpKind::F, st, j};
          return true;
        }
        if (st + 1 < S && !(done[idx(st + 1, j)] & (kB | kBW))) {
          dep = {kinds[idx(st + 1, j)] & kBW ? OpKind::BW : OpKind::B, st + 1, j};
          return true;
        }
        return false;
      case OpKind::W:
        if (!(done[idx(st, j)] & kB)) {
          dep = {OpKind::B, st, j};
          return true;
        }
        return false;
      case OpKind::allreduce:
        // The all-reduce after a replica's backward of j needs that backward.
        if (j >= 0 && !(done[idx(st, j)] & (kBW | kW))) {
          dep = {kinds[idx(st, j)] & kBW ? OpKind::BW : OpKind::W, st, j};
          return true;
        }
        return false;
      default: return false;
    }
  };
  // Collectives (synchronous kinds): the allreduce of a replicated stage proceeds once every
  // replica has reached its allreduce of the same group (micro-batches j / r, or the n-th one
  // with micro_batch -1). Asynchronous replicas all-reduce on their own (sim/engine.h).
  std::map<std::pair<int, int>, int> arrived;
  std::vector<std::map<int, int>> passed(D);  // per device: stage -> allreduce(-1) ops passed
  std::vector<char> registered(D, 0);         // the device has arrived at its current collective
  auto collective = [&](const Op& op) {
    return op.kind == OpKind::allreduce && s.replicas(op.stage) > 1 && is_synchronous(s.kind);
  };
  auto group_of = [&](int d, const Op& op) {
    return std::make_pair(op.stage,
                          op.micro_batch >= 0 ? op.micro_batch / s.replicas(op.stage) : -1 - passed[d][op.stage]);
  };
  std::vector<size_t> pos(D, 0);
  std::vector<char> queued(D, 1);
  std::deque<int> work;
  for (int d = 0; d < D; ++d) work.push_back(d);
  auto wake_device = [&](int d) {
    if (!queued[d]) {
      queued[d] = 1;
      work.push_back(d);
    }
  };
  auto wake = [&](int st, int j) {
    if (st < 0 || st >= S) return;
    wake_device(s.device_of(st, j));
  };
  while (!work.empty()) {
    int d = work.front();
    work.pop_front();
    queued[d] = 0;
    const auto& ops = s.device_ops[d];
    Op dep;
    while (pos[d] < ops.size() && !missing_dep(ops[pos[d]], dep)) {
      const Op& cur = ops[pos[d]];
      if (collective(cur)) {
        const int r = s.replicas(cur.stage);
        int& n = arrived[group_of(d, cur)];
        if (!registered[d]) {
          registered[d] = 1;
          if (++n == r)
            for (int peer : s.stage_replicas[cur.stage]) wake_device(peer);
        }
        if (n < r) break;
        registered[d] = 0;
        if (cur.micro_batch < 0) ++passed[d][cur.stage];
      }
      const Op& op = ops[pos[d]++];
      if (op.kind == OpKind::F) {
        done[idx(op.stage, op.micro_batch)] |= kF;
        wake(op.stage + 1, op.micro_batch);
      } else if (op.kind == OpKind::B || op.kind == OpKind::BW) {
        done[idx(op.stage, op.micro_batch)] |= bit_of(op.kind);
        wake(op.stage - 1, op.micro_batch);
      } else if (op.kind == OpKind::W) {
        done[idx(op.stage, op.micro_batch)] |= kW;
      }
    }
  }
  std::string msg;
  int stuck = 0;
  for (int d = 0; d < D; ++d) {
    if (pos[d] == s.device_ops[d].size()) continue;
    if (++stuck <= 4) {
      Op dep;
      const Op& op = s.device_ops[d][pos[d]];
      const bool needs = missing_dep(op, dep);
      msg += (msg.empty() ? "" : "; ") + std::string("device ") + std::to_string(d) + " waits at " + op_label(op) +
             " for " + (needs ? op_label(dep) : "the other replicas of stage " + std::to_string(op.stage));
    }
  }
  if (stuck > 4) msg += "; and " + std::to_string(stuck - 4) + " more devices";
  if (stuck) throw InputError("schedule " + std::string(to_string(s.kind)) + ": deadlock: " + msg);
}

}  // namespace pw::planner
