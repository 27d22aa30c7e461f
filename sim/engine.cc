#include "sim/engine.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <queue>
#include <tuple>

#include "models/error.h"
#include "planner/schedule_validate.h"

namespace pw::sim {

using planner::Op;
using planner::OpKind;
using planner::Schedule;

StageCosts StageCosts::uniform(int num_stages, int64_t f, int64_t b, int64_t w) {
  StageCosts c;
  c.forward_ns.assign(num_stages, f);
  c.backward_input_ns.assign(num_stages, b);
  c.backward_weight_ns.assign(num_stages, w);
  c.activation_bytes.assign(num_stages, 0);
  c.gradient_bytes.assign(num_stages, 0);
  return c;
}

void StageCosts::validate(int S, int D) const {
  auto check = [&](const std::vector<int64_t>& v, const char* name, int n, bool optional) {
    if (optional && v.empty()) return;
    if (static_cast<int>(v.size()) != n)
      throw InputError(std::string("stage costs: ") + name + " has " + std::to_string(v.size()) +
                       " entries, expected " + std::to_string(n));
    for (size_t k = 0; k < v.size(); ++k)
      if (v[k] < 0)
        throw InputError(std::string("stage costs: ") + name + "[" + std::to_string(k) + "] is negative (" +
                         std::to_string(v[k]) + ")");
  };
  check(forward_ns, "forward_ns", S, false);
  check(backward_input_ns, "backward_input_ns", S, false);
  check(backward_weight_ns, "backward_weight_ns", S, false);
  check(allreduce_ns, "allreduce_ns", S, true);
  check(step_ns, "step_ns", D, true);
  check(data_ns, "data_ns", D, true);
  check(activation_bytes, "activation_bytes", S, true);
  check(gradient_bytes, "gradient_bytes", S, true);
  check(weights_optimizer_bytes, "weights_optimizer_bytes", S, true);
  check(parameter_bytes, "parameter_bytes", S, true);
  check(stash_bytes_per_micro_batch, "stash_bytes_per_micro_batch", S, true);
  check(input_bytes_per_micro_batch, "input_bytes_per_micro_batch", S, true);
  check(working_bytes, "working_bytes", S, true);
  check(weight_pending_bytes_per_micro_batch, "weight_pending_bytes_per_micro_batch", S, true);
  if (!recompute.empty() && static_cast<int>(recompute.size()) != S)
    throw InputError("stage costs: recompute has " + std::to_string(recompute.size()) + " entries, expected " +
                     std::to_string(S));
  if (samples_per_micro_batch < 1) throw InputError("stage costs: samples_per_micro_batch must be >= 1");
}

std::vector<std::vector<Op>> unroll_async(const Schedule& s, int K) {
  const int m = s.num_micro_batches;
  std::vector<std::vector<Op>> out(s.num_devices);
  for (int d = 0; d < s.num_devices; ++d) {
    const auto& ops = s.device_ops[d];
    // Units: an op with the allreduce ops that follow it (one op each without all-reduces).
    std::vector<size_t> L;  // first op of each unit
    for (size_t k = 0; k < ops.size(); ++k)
      if (k == 0 || ops[k].kind != OpKind::allreduce) L.push_back(k);
    auto unit_end = [&](size_t u) { return u + 1 < L.size() ? L[u + 1] : ops.size(); };
    size_t lead = 0;
    while (lead < L.size() && ops[L[lead]].kind == OpKind::F) ++lead;
    size_t trailing = 0;  // non-F units at the end
    while (trailing < L.size() - lead && ops[L[L.size() - 1 - trailing]].kind != OpKind::F) ++trailing;
    // The drain: as many trailing units as there are warm-up forwards to pair them with.
    const size_t tail_begin = L.size() - std::min(lead, trailing);
    auto& o = out[d];
    auto push_unit = [&](size_t u, int it) {
      for (size_t k = L[u]; k < unit_end(u); ++k) {
        Op op = ops[k];
        if (op.micro_batch >= 0) op.micro_batch += it * m;
        o.push_back(op);
      }
    };
    o.reserve(ops.size() * K);
    for (size_t k = 0; k < lead; ++k) push_unit(k, 0);
    for (int it = 0; it < K; ++it) {
      for (size_t k = lead; k < tail_begin; ++k) push_unit(k, it);
      const size_t nt = L.size() - tail_begin, nl = it + 1 < K ? lead : 0;
      for (size_t i = 0; i < std::max(nt, nl); ++i) {
        if (i < nt) push_unit(tail_begin + i, it);
        if (i < nl) push_unit(i, it + 1);
      }
    }
  }
  return out;
}

namespace {

// What happens at an event's time. device_done: device `target` finished the op it ran.
// forward_arrives / gradient_arrives: an activation / a gradient reaches stage `target`; `slot`
// is its (stage, micro-batch) index in f_in_ / g_in_ and `stamp` the iteration stamp written there.
enum class EventKind { device_done, forward_arrives, gradient_arrives };
struct Event {
  int64_t t;
  uint64_t seq;  // order of pushing: ties in t are processed first in, first out
  EventKind kind;
  int target;
  int slot;
  int stamp;
};
struct Later {
  bool operator()(const Event& x, const Event& y) const { return x.t != y.t ? x.t > y.t : x.seq > y.seq; }
};

int64_t at(const std::vector<int64_t>& v, int k) { return v.empty() ? 0 : v[k]; }

class Engine {
 public:
  Engine(const Schedule& s, const StageCosts& c, const Network& net, const SimOptions& o)
      : s_(s), c_(c), o_(o), S_(s.num_stages), D_(s.num_devices), m_(s.num_micro_batches), K_(o.iterations) {
    async_ = !planner::is_synchronous(s.kind);
    if (async_) {
      merged_ = unroll_async(s, K_);
      for (auto& l : merged_) lists_.push_back(&l);
      mtot_ = static_cast<int64_t>(m_) * K_;
    } else {
      for (auto& l : s.device_ops) lists_.push_back(&l);
      mtot_ = m_;
    }
    const size_t n = static_cast<size_t>(S_) * mtot_;
    f_in_.assign(n, 0);
    f_done_.assign(n, 0);
    g_in_.assign(n, 0);
    b_done_.assign(n, 0);
    replicated_ = !s.stage_replicas.empty();
    slot_base_.assign(S_, 0);
    int slots = 0;
    for (int st = 0; st < S_; ++st) {
      slot_base_[st] = slots;
      slots += s.replicas(st);
    }
    setup_stages(net);
    devs_.assign(D_, Dev{});
    stage_in_flight_.assign(slots, 0);
    iter_start_.assign(K_, std::numeric_limits<int64_t>::max());
    for (int d = 0; d < D_; ++d) {
      devs_[d].first_start = -1;
      devs_[d].done = lists_[d]->empty();
    }
    for (int st = 0; st < S_; ++st) {
      int64_t fixed = at(c_.weights_optimizer_bytes, st);
      if (s.kind == planner::ScheduleKind::two_bw) fixed += at(c_.parameter_bytes, st);
      for (int r = 0; r < s.replicas(st); ++r) devs_[s.device_of(st, r)].live += fixed;
    }
    for (int d = 0; d < D_; ++d) {
      devs_[d].peak = devs_[d].live;
      if (o_.record_trace) trace_.memory.push_back({d, 0, devs_[d].live});
    }
  }

  SimResult run() {
    for (int d = 0; d < D_; ++d) try_start(d);
    while (!heap_.empty()) {
      Event e = heap_.top();
      heap_.pop();
      now_ = e.t;
      if (e.kind == EventKind::device_done) {
        finish(e.target);
      } else {
        inbox(e.kind)[static_cast<size_t>(e.slot)] = e.stamp;
        wake(e.target, static_cast<int>(e.slot % mtot_));
      }
    }
    for (int d = 0; d < D_; ++d)
      if (!devs_[d].done) {
        planner::validate_schedule(s_);
        throw InputError("simulate: schedule " + std::string(to_string(s_.kind)) + " deadlocks at device " +
                         std::to_string(d));
      }
    return result();
  }

 private:
  struct Dev {
    size_t pos = 0;
    int iter = 0;
    bool busy = false, done = false;
    Op cur;
    int cur_iter = 0;
    int64_t cur_start = 0;
    int64_t live = 0, peak = 0;
    int in_flight = 0, max_in_flight = 0;
    int64_t busy_ns = 0, first_start = -1, last_end = 0;
    bool waiting = false;  // arrived at a collective all-reduce, waiting for its group
    int data_iter = -1;    // the last iteration whose data phase (StageCosts::data_ns) started
    bool in_data = false;  // busy with that data phase
  };

  void setup_stages(const Network& net) {
    dur_f_.resize(S_);
    dur_b_.resize(S_);
    dur_w_.resize(S_);
    fwd_.resize(S_);
    bwd_.resize(S_);
    for (int st = 0; st < S_; ++st) {
      const bool rc = !c_.recompute.empty() && c_.recompute[st];
      dur_f_[st] = c_.forward_ns[st];
      dur_b_[st] = c_.backward_input_ns[st] + (rc ? c_.forward_ns[st] : 0);
      dur_w_[st] = c_.backward_weight_ns[st];
      if (replicated_) continue;  // hops per replica pair (hop())
      const int d = s_.stage_device[st];
      if (st + 1 < S_) fwd_[st] = link(net, d, s_.stage_device[st + 1], at(c_.activation_bytes, st));
      if (st > 0) bwd_[st] = link(net, d, s_.stage_device[st - 1], at(c_.gradient_bytes, st));
    }
    net_ = &net;
  }

  struct Hop {
    TransferCost cost;
    int link = -1;  // index into link_free_; -1 = immediate (free transfer)
    int src = 0, dst = 0;
    int64_t bytes = 0;
  };
  Hop link(const Network& net, int a, int b, int64_t bytes) {
    Hop h;
    h.src = a;
    h.dst = b;
    h.bytes = bytes;
    h.cost = net.cost(a, b, bytes);
    if (h.cost.total() == 0) return h;
    h.link = link_index(a, b);
    return h;
  }
  int link_index(int a, int b) {
    const int64_t key = static_cast<int64_t>(a) * D_ + b;
    auto it = std::find(link_keys_.begin(), link_keys_.end(), key);
    if (it == link_keys_.end()) {
      link_keys_.push_back(key);
      link_free_.push_back(0);
      it = link_keys_.end() - 1;
    }
    return static_cast<int>(it - link_keys_.begin());
  }
  // The transfer of micro-batch g out of stage st: forward to st+1 or backward to st-1.
  const Hop& hop(int st, int g, bool forward) {
    if (!replicated_) return forward ? fwd_[st] : bwd_[st];
    const int to = forward ? st + 1 : st - 1;
    const int a = s_.device_of(st, g), b = s_.device_of(to, g);
    const auto key = std::make_tuple(st, forward, a, b);
    auto it = hops_.find(key);
    if (it == hops_.end())
      it = hops_.emplace(key, link(*net_, a, b, forward ? at(c_.activation_bytes, st) : at(c_.gradient_bytes, st)))
               .first;
    return it->second;
  }
  int slot(int st, int g) const { return slot_base_[st] + (g < 0 ? 0 : g % s_.replicas(st)); }

  size_t idx(int st, int g) const { return static_cast<size_t>(st) * mtot_ + g; }
  int stamp(int iter) const { return async_ ? 1 : iter + 1; }

  // t + dur: when something that starts at t and lasts dur ends. Past int64's nanoseconds (about
  // 292 years of simulated time: ops of up to 1e9 ms each, enough of them) it is refused, not
  // wrapped to a time before t.
  static int64_t after(int64_t t, int64_t dur) {
    if (dur > std::numeric_limits<int64_t>::max() - t)
      throw InputError("simulate: the simulated time passes 2^63 ns (about 292 years) at " + std::to_string(t) +
                       " ns + " + std::to_string(dur) + " ns: the ops' durations are too long for this many ops");
    return t + dur;
  }

  void push_done(int64_t t, int device) { heap_.push(Event{t, seq_++, EventKind::device_done, device, 0, 0}); }
  void push_arrival(int64_t t, EventKind kind, int stage, size_t slot, int stamp) {
    heap_.push(Event{t, seq_++, kind, stage, static_cast<int>(slot), stamp});
  }
  std::vector<int>& inbox(EventKind arrival) { return arrival == EventKind::forward_arrives ? f_in_ : g_in_; }

  void wake(int st, int g) {
    const int d = s_.device_of(st, g);
    if (!devs_[d].busy) try_start(d);
  }

  void mem(Dev& v, int d, int64_t delta) {
    if (delta == 0) return;
    if (delta > std::numeric_limits<int64_t>::max() - v.live)
      throw InputError("simulate: device " + std::to_string(d) + "'s memory passes 2^63 bytes at " +
                       std::to_string(now_) + " ns: the stages' sizes are too large for this many micro-batches");
    v.live += delta;
    v.peak = std::max(v.peak, v.live);
    if (o_.record_trace) trace_.memory.push_back({d, now_, v.live});
  }

  bool recompute(int st) const { return !c_.recompute.empty() && c_.recompute[st]; }

  void try_start(int d) {
    Dev& v = devs_[d];
    if (v.busy || v.done) return;
    if (!async_ && v.pos == 0 && v.data_iter != v.iter && at(c_.data_ns, d) > 0) {
      v.data_iter = v.iter;
      v.busy = v.in_data = true;
      v.cur_start = now_;
      if (v.first_start < 0) v.first_start = now_;
      push_done(after(now_, c_.data_ns[d]), d);
      return;
    }
    const Op& op = (*lists_[d])[v.pos];
    const int sp = stamp(v.iter);
    const int st = op.stage;
    int64_t dur = 0;
    switch (op.kind) {
      case OpKind::F:
        if (st > 0 && f_in_[idx(st, op.micro_batch)] != sp) return;
        dur = dur_f_[st];
        break;
      case OpKind::B:
      case OpKind::BW: {
        const size_t i = idx(st, op.micro_batch);
        if (f_done_[i] != sp || (st + 1 < S_ && g_in_[i] != sp)) return;
        dur = dur_b_[st] + (op.kind == OpKind::BW ? dur_w_[st] : 0);
        break;
      }
      case OpKind::W:
        if (b_done_[idx(st, op.micro_batch)] != sp) return;
        dur = dur_w_[st];
        break;
      case OpKind::allreduce:
        if (s_.replicas(st) > 1) return collective(d, op);
        dur = at(c_.allreduce_ns, st);
        break;
      case OpKind::step: dur = at(c_.step_ns, d); break;
      default: PW_CHECK(false, "simulate: explicit send/recv are not simulated");
    }
    v.busy = true;
    v.cur = op;
    v.cur_iter = async_ ? (op.micro_batch >= 0 ? op.micro_batch / m_ : std::min(K_ - 1, v.iter)) : v.iter;
    v.cur_start = now_;
    if (v.first_start < 0) v.first_start = now_;
    if (op.kind == OpKind::F || op.kind == OpKind::B || op.kind == OpKind::W || op.kind == OpKind::BW) {
      int64_t alloc = at(c_.working_bytes, st);
      if (op.kind == OpKind::F) {
        alloc += recompute(st) ? at(c_.input_bytes_per_micro_batch, st) : at(c_.stash_bytes_per_micro_batch, st);
        if (s_.kind == planner::ScheduleKind::pipedream_async && stage_in_flight_[slot(st, op.micro_batch)] >= 1)
          alloc += at(c_.parameter_bytes, st);
        ++stage_in_flight_[slot(st, op.micro_batch)];
        v.max_in_flight = std::max(v.max_in_flight, ++v.in_flight);
      } else if (op.kind != OpKind::W && recompute(st)) {
        alloc += at(c_.stash_bytes_per_micro_batch, st);
      }
      if (op.kind == OpKind::B) alloc += at(c_.weight_pending_bytes_per_micro_batch, st);
      mem(v, d, alloc);
    }
    if (o_.op_duration) dur = o_.op_duration(d, op, v.cur_iter, dur);
    push_done(after(now_, dur), d);
  }

  // An all-reduce of a replicated stage (engine.h): synchronous, a barrier of the replicas'
  // all-reduces of the iteration, starting when the last arrives and the ring is free;
  // asynchronous, the replica's own, starting when the ring is free. It holds the ring's links
  // and its replica(s) for allreduce_ns.
  void collective(int d, const Op& op) {
    Dev& v = devs_[d];
    if (v.waiting) return;
    const int st = op.stage, r = s_.replicas(st);
    std::vector<int> members{d};
    if (!async_) {
      // Synchronous: a barrier of the replicas (as planner::validate_schedule groups them: the
      // iteration's allreduce with micro_batch -1, else the micro-batches g / r).
      const auto key = std::make_pair(
          st, op.micro_batch >= 0 ? static_cast<int64_t>(op.micro_batch / r) : -1 - static_cast<int64_t>(v.iter));
      std::vector<int>& arrived = groups_[key];
      arrived.push_back(d);
      v.waiting = true;
      if (static_cast<int>(arrived.size()) < r) return;
      members = std::move(arrived);
      groups_.erase(key);
    }
    const std::vector<int>& ring = s_.stage_replicas[st];
    const int64_t dur = at(c_.allreduce_ns, st);
    int64_t start = now_;
    std::vector<int> links;
    for (int i = 0; i < r; ++i) {
      links.push_back(link_index(ring[i], ring[(i + 1) % r]));
      start = std::max(start, link_free_[links.back()]);
    }
    for (int l : links) link_free_[l] = after(start, dur);
    for (int dm : members) {
      Dev& u = devs_[dm];
      u.waiting = false;
      const Op& mop = (*lists_[dm])[u.pos];
      u.busy = true;
      u.cur = mop;
      u.cur_iter = async_ ? (mop.micro_batch >= 0 ? mop.micro_batch / m_ : std::min(K_ - 1, u.iter)) : u.iter;
      u.cur_start = start;
      if (u.first_start < 0) u.first_start = start;
      const int64_t t = o_.op_duration ? o_.op_duration(dm, mop, u.cur_iter, dur) : dur;
      push_done(after(start, t), dm);
    }
  }

  void send(const Hop& h, EventKind arrival, int to_stage, size_t i, int sp, const Op& op, int iter) {
    // A free hop between two devices still takes the replayed latency when one is given.
    const bool replayed = o_.transfer_latency && h.src != h.dst;
    if (h.link < 0 && !replayed) {
      inbox(arrival)[i] = sp;
      wake(to_stage, static_cast<int>(i % mtot_));
      return;
    }
    int64_t start = now_, occupied_until = now_;
    if (h.link >= 0) {
      int64_t& free_at = link_free_[h.link];
      start = std::max(now_, free_at);
      occupied_until = free_at = after(start, h.cost.occupancy_ns);
    }
    const int64_t latency = replayed ? o_.transfer_latency(op, iter, h.cost.latency_ns) : h.cost.latency_ns;
    const int64_t arrive = after(occupied_until, latency);
    push_arrival(arrive, arrival, to_stage, i, sp);
    if (o_.record_trace) {
      TraceEvent e;
      e.device = h.src;
      e.kind = op.kind;
      e.stage = op.stage;
      e.micro_batch = op.micro_batch % m_;
      e.iteration = iter;
      e.start_ns = start;
      e.end_ns = arrive;
      e.bytes = h.bytes;
      e.is_transfer = true;
      e.dst_device = h.dst;
      trace_.events.push_back(e);
    }
  }

  void finish(int d) {
    Dev& v = devs_[d];
    if (v.in_data) {
      v.busy_ns += now_ - v.cur_start;
      v.last_end = now_;
      v.busy = v.in_data = false;
      try_start(d);
      return;
    }
    const Op op = v.cur;
    const int st = op.stage;
    const int sp = async_ ? 1 : stamp(v.iter);
    v.busy_ns += now_ - v.cur_start;
    v.last_end = now_;
    iter_start_[v.cur_iter] = std::min(iter_start_[v.cur_iter], v.cur_start);
    if (o_.record_trace) {
      TraceEvent e;
      e.device = d;
      e.kind = op.kind;
      e.stage = st;
      e.micro_batch = op.micro_batch < 0 ? -1 : op.micro_batch % m_;
      e.iteration = v.cur_iter;
      e.start_ns = v.cur_start;
      e.end_ns = now_;
      trace_.events.push_back(e);
    }
    if (op.kind == OpKind::F || op.kind == OpKind::B || op.kind == OpKind::W || op.kind == OpKind::BW) {
      int64_t freed = at(c_.working_bytes, st);
      if (op.kind == OpKind::BW || op.kind == OpKind::W) {
        freed += recompute(st) ? at(c_.input_bytes_per_micro_batch, st) + at(c_.stash_bytes_per_micro_batch, st)
                               : at(c_.stash_bytes_per_micro_batch, st);
        if (s_.kind == planner::ScheduleKind::pipedream_async && stage_in_flight_[slot(st, op.micro_batch)] > 1)
          freed += at(c_.parameter_bytes, st);
        --stage_in_flight_[slot(st, op.micro_batch)];
        --v.in_flight;
      }
      if (op.kind == OpKind::W) freed += at(c_.weight_pending_bytes_per_micro_batch, st);
      mem(v, d, -freed);
    }
    // Advance before sending, so that a free transfer waking this device sees its next op.
    v.busy = false;
    if (++v.pos == lists_[d]->size()) {
      v.pos = 0;
      if (async_ || ++v.iter == K_) v.done = true;
    }
    if (op.kind == OpKind::F) {
      const size_t i = idx(st, op.micro_batch);
      f_done_[i] = sp;
      if (st + 1 < S_)
        send(hop(st, op.micro_batch, true), EventKind::forward_arrives, st + 1, idx(st + 1, op.micro_batch), sp, op,
             v.cur_iter);
    } else if (op.kind == OpKind::B || op.kind == OpKind::BW) {
      b_done_[idx(st, op.micro_batch)] = sp;
      if (st > 0)
        send(hop(st, op.micro_batch, false), EventKind::gradient_arrives, st - 1, idx(st - 1, op.micro_batch), sp, op,
             v.cur_iter);
    }
    try_start(d);
  }

  SimResult result() {
    SimResult r;
    Report& rep = r.report;
    rep.schedule = std::string(to_string(s_.kind));
    rep.num_devices = D_;
    rep.num_stages = S_;
    rep.num_micro_batches = m_;
    rep.iterations = K_;
    rep.samples_per_iteration = c_.samples_per_micro_batch * m_;
    rep.devices.resize(D_);
    for (int d = 0; d < D_; ++d) {
      const Dev& v = devs_[d];
      DeviceReport& dr = rep.devices[d];
      dr.busy_ns = v.busy_ns;
      dr.first_start_ns = v.first_start < 0 ? 0 : v.first_start;
      dr.last_end_ns = v.last_end;
      dr.peak_memory_bytes = v.peak;
      dr.max_in_flight = v.max_in_flight;
    }
    for (int64_t& t : iter_start_)
      if (t == std::numeric_limits<int64_t>::max()) t = 0;
    finish_report(rep, iter_start_);
    if (replicated_)
      for (int st = 0; st < S_; ++st) rep.stage_replicas.push_back(s_.replicas(st));
    if (o_.record_trace) {
      trace_.source = "predicted";
      trace_.num_devices = D_;
      r.trace = std::move(trace_);
    }
    return r;
  }

  const Schedule& s_;
  const StageCosts& c_;
  const SimOptions o_;
  const int S_, D_, m_, K_;
  bool async_ = false;
  int64_t mtot_ = 0;
  std::vector<std::vector<Op>> merged_;
  std::vector<const std::vector<Op>*> lists_;
  std::vector<int> f_in_, f_done_, g_in_, b_done_;
  std::vector<int64_t> dur_f_, dur_b_, dur_w_;
  std::vector<Hop> fwd_, bwd_;
  bool replicated_ = false;
  const Network* net_ = nullptr;
  std::vector<int> slot_base_;                                  // stage -> first replica slot
  std::map<std::tuple<int, bool, int, int>, Hop> hops_;         // replicated: (stage, fwd, a, b)
  std::map<std::pair<int, int64_t>, std::vector<int>> groups_;  // collective -> devices arrived
  std::vector<int64_t> link_keys_, link_free_;
  std::vector<Dev> devs_;
  std::vector<int> stage_in_flight_;
  std::vector<int64_t> iter_start_;
  std::priority_queue<Event, std::vector<Event>, Later> heap_;
  uint64_t seq_ = 0;
  int64_t now_ = 0;
  Trace trace_;
};

// The schedule bubble's costs (report.h): per op kind, r_s x the mean over stages of X_t / r_t;
// no transfers, all-reduce, step or memory.
StageCosts equalised(const Schedule& s, const StageCosts& c) {
  const int S = s.num_stages;
  double f = 0, b = 0, w = 0;
  for (int st = 0; st < S; ++st) {
    const double r = s.replicas(st);
    const bool rc = !c.recompute.empty() && c.recompute[st];
    f += c.forward_ns[st] / r;
    b += (c.backward_input_ns[st] + (rc ? c.forward_ns[st] : 0)) / r;
    w += c.backward_weight_ns[st] / r;
  }
  StageCosts e = StageCosts::uniform(S, 0, 0, 0);
  for (int st = 0; st < S; ++st) {
    const double r = s.replicas(st);
    e.forward_ns[st] = std::llround(r * f / S);
    e.backward_input_ns[st] = std::llround(r * b / S);
    e.backward_weight_ns[st] = std::llround(r * w / S);
  }
  e.samples_per_micro_batch = c.samples_per_micro_batch;
  return e;
}

}  // namespace

SimResult simulate(const Schedule& schedule, const StageCosts& costs, const Network& network,
                   const SimOptions& options) {
  if (options.iterations < 1)
    throw InputError("simulate: iterations must be >= 1, got " + std::to_string(options.iterations));
  if (options.validate) planner::validate_schedule(schedule);
  costs.validate(schedule.num_stages, schedule.num_devices);
  if (static_cast<int64_t>(schedule.num_micro_batches) * options.iterations > (int64_t{1} << 30))
    throw InputError("simulate: micro-batches x iterations too large");
  Engine e(schedule, costs, network, options);
  SimResult r = e.run();
  if (options.schedule_bubble) {
    const StageCosts eq = equalised(schedule, costs);
    const Network free;
    SimOptions o;
    o.iterations = options.iterations;
    o.validate = false;
    r.report.schedule_bubble = Engine(schedule, eq, free, o).run().report.idle_share;
    r.report.has_schedule_bubble = true;
  }
  return r;
}

}  // namespace pw::sim
