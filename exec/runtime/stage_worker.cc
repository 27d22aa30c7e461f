#include "exec/runtime/stage_worker.h"

#include <algorithm>
#include <functional>

#include "exec/device_ops.h"
#include "models/error.h"
#include "planner/schedule_validate.h"

namespace pw::exec {

using planner::OpKind;
using Clock = Transport::Clock;

StageWorker::StageWorker(WorkerConfig cfg) : cfg_(cfg), async_steps_(false) {
  PW_CHECK(cfg_.schedule && cfg_.compute && cfg_.transport, "StageWorker needs schedule, compute and transport");
  async_steps_ = !planner::is_synchronous(cfg_.schedule->kind);
  const planner::Schedule& sch = *cfg_.schedule;
  for (int s = 0; s < static_cast<int>(sch.stage_device.size()); ++s) {
    bool mine = sch.stage_device[s] == cfg_.device;
    if (!sch.stage_replicas.empty())
      for (int d : sch.stage_replicas[s]) mine = mine || d == cfg_.device;
    if (mine) my_stages_.push_back(s);
  }
  // The op that completes the gradients an allreduce(s, j) reduces: the last BW or W of s
  // before it (of micro-batch j when j >= 0).
  const std::vector<planner::Op>& ops = sch.device_ops.at(cfg_.device);
  writer_of_.assign(ops.size(), -1);
  for (size_t a = 0; a < ops.size(); ++a) {
    if (ops[a].kind != OpKind::allreduce) continue;
    for (size_t w = a; w-- > 0;) {
      const planner::Op& o = ops[w];
      if (o.stage != ops[a].stage || (o.kind != OpKind::BW && o.kind != OpKind::W)) continue;
      if (ops[a].micro_batch >= 0 && o.micro_batch != ops[a].micro_batch) continue;
      writer_of_[w] = static_cast<int>(a);
      break;
    }
  }
}

struct StageWorker::Reduction {
  planner::Op op;  // the allreduce op
  int iteration = 0;
  int64_t start_ns = -1;    // when the allreduce op ran; -1 before
  bool step_after = false;  // asynchronous: the stage steps once the all-reduce is complete
  int round = 0;            // tag round of bucket 0
  std::vector<Tensor*> grads;
  std::vector<GradBucket> buckets;
  std::vector<std::unique_ptr<RingAllreduce>> rings;  // of the buckets started so far, in order
  bool rings_done() const {
    for (const auto& r : rings)
      if (!r->done()) return false;
    return true;
  }
  const RingAllreduce* unfinished() const {
    for (const auto& r : rings)
      if (!r->done()) return r.get();
    return nullptr;
  }
};

StageWorker::~StageWorker() = default;

int64_t StageWorker::now_ns() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - cfg_.t0).count();
}

int64_t StageWorker::op_time() { return cfg_.clock ? cfg_.clock->mark() : now_ns(); }

void StageWorker::resolve_marks(size_t first_event, size_t first_sample) {
  const std::vector<int64_t> t = cfg_.clock->finish();
  const auto at = [&](int64_t mark) {
    PW_CHECK(mark >= 0 && mark < static_cast<int64_t>(t.size()), "op mark outside the clock's window");
    return t[static_cast<size_t>(mark)];
  };
  for (size_t i = first_event; i < events.size(); ++i) {
    events[i].start_ns = at(events[i].start_ns);
    events[i].end_ns = at(events[i].end_ns);
  }
  for (size_t i = first_sample; i < memory.size(); ++i) memory[i].time_ns = at(memory[i].time_ns);
}

void StageWorker::sample_memory(int64_t t) {
  if (!cfg_.record_trace) return;
  int64_t total = 0;
  for (int s : my_stages_) {
    const int64_t b = cfg_.compute->memory_bytes(s);
    if (b < 0) return;
    total += b;
  }
  memory.push_back({cfg_.device, t, total});
}

void StageWorker::progress_sends() {
  for (size_t i = 0; i < pending_.size();) {
    if (pending_[i]->test()) {
      pending_[i] = std::move(pending_.back());
      pending_.pop_back();
    } else {
      ++i;
    }
  }
}

void StageWorker::flush_sends(Clock::time_point deadline) {
  Transport& tr = *cfg_.transport;
  while (true) {
    const uint64_t epoch = tr.progress_epoch(cfg_.device);
    progress_sends();
    if (pending_.empty()) return;
    status_ = "flushing " + std::to_string(pending_.size()) + " pending sends";
    if (!tr.wait_for_progress(cfg_.device, epoch, deadline) && Clock::now() >= deadline)
      throw PipelineStall("device " + std::to_string(cfg_.device) + " " + status_);
  }
}

StageWorker::Reduction& StageWorker::reduction_for(const planner::Op& op, int iteration) {
  for (auto& r : reductions_)
    if (r->op == op && r->iteration == iteration) return *r;
  const planner::Schedule& sch = *cfg_.schedule;
  const int r = sch.replicas(op.stage);
  auto red = std::make_unique<Reduction>();
  red->op = op;
  red->iteration = iteration;
  red->step_after = op.micro_batch >= 0 && async_steps_;
  red->grads = cfg_.compute->weight_gradients(op.stage);
  // Tag rounds: synchronous 1 per iteration; asynchronous one per r micro-batches (j / r).
  const int rounds = op.micro_batch >= 0 ? (sch.num_micro_batches + r - 1) / r : 1;
  const int64_t slots = cfg_.transport->collective_slots();
  const int max_buckets =
      cfg_.overlap_allreduce ? static_cast<int>(std::max<int64_t>(1, slots / (int64_t{rounds} * (r - 1)))) : 1;
  red->buckets = grad_buckets(red->grads, cfg_.overlap_allreduce ? cfg_.bucket_bytes : 0, max_buckets);
  red->round = (op.micro_batch >= 0 ? op.micro_batch / r : 0) * static_cast<int>(red->buckets.size());
  reductions_.push_back(std::move(red));
  return *reductions_.back();
}

void StageWorker::start_buckets(Reduction& red, size_t final_from) {
  const planner::Schedule& sch = *cfg_.schedule;
  while (red.rings.size() < red.buckets.size() && red.buckets[red.rings.size()].first_tensor >= final_from) {
    const size_t b = red.rings.size();
    red.rings.push_back(std::make_unique<RingAllreduce>(*cfg_.transport, cfg_.device, sch.stage_replicas[red.op.stage],
                                                        red.iteration, red.op.stage, red.round + static_cast<int>(b),
                                                        red.grads, red.op.micro_batch >= 0, red.buckets[b].flat_begin,
                                                        red.buckets[b].flat_end));
  }
}

void StageWorker::progress_rings(bool finish_done) {
  for (size_t i = 0; i < reductions_.size();) {
    Reduction& red = *reductions_[i];
    for (auto& r : red.rings) r->progress();
    if (finish_done && red.start_ns >= 0 && red.rings.size() == red.buckets.size() && red.rings_done()) {
      const std::unique_ptr<Reduction> done = std::move(reductions_[i]);
      reductions_.erase(reductions_.begin() + static_cast<std::ptrdiff_t>(i));
      finish(*done);
    } else {
      ++i;
    }
  }
}

void StageWorker::finish(Reduction& red) {
  const std::string waiting_op = current_op_;
  current_op_ = planner::op_label(red.op);  // a fault in the deferred step names the allreduce
  if (red.step_after) cfg_.compute->step(red.op.stage, red.iteration);
  record(red.op, red.iteration, red.start_ns);
  current_op_ = waiting_op;
}

void StageWorker::complete_rings(int stage, Clock::time_point deadline) {
  Transport& tr = *cfg_.transport;
  const auto pending = [&]() -> const RingAllreduce* {
    for (const auto& r : reductions_)
      if (stage < 0 || r->op.stage == stage)
        if (const RingAllreduce* ring = r->unfinished()) return ring;
    return nullptr;
  };
  while (true) {
    const uint64_t epoch = tr.progress_epoch(cfg_.device);
    progress_rings();
    const RingAllreduce* ring = pending();
    if (!ring) return;
    progress_sends();
    progress_rings();
    if (!(ring = pending())) return;
    status_ = "at " + current_op_ + " waiting for all-reduce " + to_string(ring->waiting_tag()) + " from device " +
              std::to_string(ring->waiting_peer());
    if (!tr.wait_for_progress(cfg_.device, epoch, deadline) && Clock::now() >= deadline)
      throw PipelineStall("device " + std::to_string(cfg_.device) + " " + status_);
  }
}

void StageWorker::record(const planner::Op& op, int iteration, int64_t start) {
  if (!cfg_.record_trace) return;
  sim::TraceEvent ev;
  ev.device = cfg_.device;
  ev.kind = op.kind;
  ev.stage = op.stage;
  ev.micro_batch = op.micro_batch;
  ev.iteration = iteration;
  ev.start_ns = start;
  ev.end_ns = op_time();
  events.push_back(ev);
  sample_memory(ev.end_ns);
}

void StageWorker::wait_request(Request& req, const MessageTag& tag, int peer, Clock::time_point deadline) {
  Transport& tr = *cfg_.transport;
  while (true) {
    const uint64_t epoch = tr.progress_epoch(cfg_.device);
    if (req.test()) return;
    progress_sends();
    progress_rings();
    if (req.test()) return;
    status_ = "at " + current_op_ + " waiting for " + to_string(tag) + " from device " + std::to_string(peer);
    if (!tr.wait_for_progress(cfg_.device, epoch, deadline) && Clock::now() >= deadline)
      throw PipelineStall("device " + std::to_string(cfg_.device) + " " + status_);
  }
}

std::vector<Tensor> StageWorker::receive(int iteration, int src_stage, Direction dir, int micro_batch,
                                         Clock::time_point deadline, int64_t* version) {
  Transport& tr = *cfg_.transport;
  const int src = cfg_.schedule->device_of(src_stage, micro_batch);
  const MessageTag tag{iteration, src_stage, micro_batch, dir};
  auto req = tr.irecv(cfg_.device, src, tag);
  wait_request(*req, tag, src, deadline);
  Message msg = req->take();
  if (!cfg_.lane.is_cpu()) {
    // Host tensors come from another process (staged by its transport): upload them here.
    for (Tensor& t : msg.tensors)
      if (!t.empty() && t.device().is_cpu()) t = copy_to_device(t, cfg_.lane);
    receive_tensors(msg.tensors, msg.fence, cfg_.lane);
  }
  if (cfg_.record_trace && src != cfg_.device) {
    sim::TraceEvent ev;
    ev.device = src;
    ev.dst_device = cfg_.device;
    ev.is_transfer = true;
    ev.kind = dir == Direction::forward ? OpKind::F : OpKind::B;
    ev.stage = src_stage;
    ev.micro_batch = micro_batch;
    ev.iteration = iteration;
    if (cfg_.clock) {
      ev.start_ns = ev.end_ns = cfg_.clock->mark();
    } else {
      ev.start_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                        Clock::time_point(std::chrono::nanoseconds(msg.send_time_ns)) - cfg_.t0)
                        .count();
      ev.end_ns = now_ns();
    }
    ev.bytes = msg.bytes();
    events.push_back(ev);
  }
  if (version) *version = msg.weight_version;
  return std::move(msg.tensors);
}

void StageWorker::send(int iteration, int stage, Direction dir, int micro_batch, std::vector<Tensor> payload,
                       int64_t version) {
  const int dst_stage = dir == Direction::forward ? stage + 1 : stage - 1;
  const int dst = cfg_.schedule->device_of(dst_stage, micro_batch);
  Message msg;
  msg.tensors = std::move(payload);
  msg.weight_version = version;
  if (!cfg_.lane.is_cpu()) msg.fence = record_fence(cfg_.lane);
  msg.send_time_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
  auto req = cfg_.transport->isend(cfg_.device, dst, MessageTag{iteration, stage, micro_batch, dir}, std::move(msg));
  if (!req->test()) pending_.push_back(std::move(req));
}

void StageWorker::run_iteration(int iteration, Clock::time_point deadline) {
  status_ = "starting";
  if (!cfg_.lane.is_cpu()) bind_thread(cfg_.lane);
  const size_t first_event = events.size(), first_sample = memory.size();
  if (!cfg_.clock) {
    run_ops(iteration, deadline);
    return;
  }
  cfg_.clock->start();
  try {
    run_ops(iteration, deadline);
  } catch (...) {
    // The failed iteration's events hold unresolved marks: they are dropped.
    events.resize(first_event);
    memory.resize(first_sample);
    throw;
  }
  resolve_marks(first_event, first_sample);
  status_ = "done";
}

void StageWorker::run_ops(int iteration, Clock::time_point deadline) {
  const planner::Schedule& sch = *cfg_.schedule;
  const int last = sch.num_stages - 1;
  StageCompute& comp = *cfg_.compute;
  reductions_.clear();  // all-reduces left by a failed iteration
  const std::vector<planner::Op>& ops = sch.device_ops[cfg_.device];
  for (size_t at = 0; at < ops.size(); ++at) {
    const planner::Op& op = ops[at];
    // Asynchronous replicas step after the all-reduce that follows their backward.
    const bool step_now = async_steps_ && !(at + 1 < ops.size() && ops[at + 1].kind == OpKind::allreduce &&
                                            ops[at + 1].stage == op.stage && ops[at + 1].micro_batch == op.micro_batch);
    current_op_ = planner::op_label(op);
    OpContext ctx{iteration, op.stage, op.micro_batch, -1, nullptr};
    // The backward that completes an all-reduce's gradients starts its buckets between layers.
    Reduction* red = nullptr;
    const std::function<void(size_t)> grads_done = [&](size_t final_from) {
      start_buckets(*red, final_from);
      progress_sends();
      progress_rings(false);  // no compute call (deferred step) from inside the compute
    };
    if (cfg_.overlap_allreduce && writer_of_[at] >= 0 && sch.replicas(op.stage) > 1 &&
        (op.kind == OpKind::BW || op.kind == OpKind::W)) {
      red = &reduction_for(ops[writer_of_[at]], iteration);
      ctx.grads_done = &grads_done;
    }
    int64_t start = -1;
    bool record_now = true;
    switch (op.kind) {
      case OpKind::F: {
        std::vector<Tensor> in;
        if (op.stage > 0)
          in = receive(iteration, op.stage - 1, Direction::forward, op.micro_batch, deadline, &ctx.weight_version);
        complete_rings(op.stage, deadline);
        if (op.stage == 0 && cfg_.vertical_sync) ctx.weight_version = comp.weight_version(0);
        start = op_time();
        std::vector<Tensor> out = comp.forward(ctx, std::move(in));
        if (op.stage < last)
          send(iteration, op.stage, Direction::forward, op.micro_batch, std::move(out), ctx.weight_version);
        break;
      }
      case OpKind::B:
      case OpKind::BW: {
        std::vector<Tensor> grad;
        if (op.stage < last)
          grad = receive(iteration, op.stage + 1, Direction::backward, op.micro_batch, deadline, nullptr);
        complete_rings(op.stage, deadline);
        start = op_time();
        std::vector<Tensor> out =
            op.kind == OpKind::B ? comp.backward_input(ctx, std::move(grad)) : comp.backward(ctx, std::move(grad));
        if (op.stage > 0) send(iteration, op.stage, Direction::backward, op.micro_batch, std::move(out), -1);
        if (op.kind == OpKind::BW && step_now) comp.step(op.stage, iteration);
        break;
      }
      case OpKind::W:
        complete_rings(op.stage, deadline);
        start = op_time();
        comp.backward_weight(ctx);
        if (step_now) comp.step(op.stage, iteration);
        break;
      case OpKind::step:
        complete_rings(op.stage, deadline);
        start = op_time();
        if (op.stage >= 0) {
          comp.step(op.stage, iteration);
        } else {
          for (int s : my_stages_) comp.step(s, iteration);
        }
        break;
      case OpKind::allreduce: {
        start = op_time();
        const bool step_after = op.micro_batch >= 0 && async_steps_;
        if (sch.replicas(op.stage) > 1) {
          Reduction& r = reduction_for(op, iteration);
          r.start_ns = start;
          start_buckets(r, 0);
          record_now = false;  // recorded when the rings complete
          if (cfg_.overlap_allreduce) {
            progress_rings();
          } else {
            complete_rings(op.stage, deadline);
          }
        } else if (step_after) {
          comp.step(op.stage, iteration);
        }
        break;
      }
      case OpKind::send:
      case OpKind::recv:
        throw InputError("schedule: op " + current_op_ + " on device " + std::to_string(cfg_.device) +
                         " is not supported by the runtime (communication is implicit)");
    }
    if (record_now) record(op, iteration, start);
    progress_sends();
    progress_rings();
  }
  complete_rings(-1, deadline);
  flush_sends(deadline);
  status_ = "done";
}

}  // namespace pw::exec
