#include "exec/runtime/stage_worker.h"

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
}

int64_t StageWorker::now_ns() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - cfg_.t0).count();
}

void StageWorker::sample_memory() {
  if (!cfg_.record_trace) return;
  int64_t total = 0;
  for (int s : my_stages_) {
    const int64_t b = cfg_.compute->memory_bytes(s);
    if (b < 0) return;
    total += b;
  }
  memory.push_back({cfg_.device, now_ns(), total});
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

void StageWorker::progress_ring() {
  if (ring_ && ring_->ring->progress()) finish_ring();
}

void StageWorker::finish_ring() {
  const std::unique_ptr<InFlight> f = std::move(ring_);
  const std::string waiting_op = current_op_;
  current_op_ = planner::op_label(f->op);  // a fault in the deferred step names the allreduce
  if (f->step_after) cfg_.compute->step(f->op.stage, f->iteration);
  record(f->op, f->iteration, f->start_ns);
  current_op_ = waiting_op;
}

void StageWorker::complete_ring(Clock::time_point deadline) {
  Transport& tr = *cfg_.transport;
  while (ring_) {
    const uint64_t epoch = tr.progress_epoch(cfg_.device);
    progress_ring();
    if (!ring_) return;
    progress_sends();
    progress_ring();
    if (!ring_) return;
    status_ = "at " + current_op_ + " waiting for all-reduce " + to_string(ring_->ring->waiting_tag()) +
              " from device " + std::to_string(ring_->ring->waiting_peer());
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
  ev.end_ns = now_ns();
  events.push_back(ev);
  sample_memory();
}

void StageWorker::wait_request(Request& req, const MessageTag& tag, int peer, Clock::time_point deadline) {
  Transport& tr = *cfg_.transport;
  while (true) {
    const uint64_t epoch = tr.progress_epoch(cfg_.device);
    if (req.test()) return;
    progress_sends();
    progress_ring();
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
  if (cfg_.record_trace && src != cfg_.device) {
    sim::TraceEvent ev;
    ev.device = src;
    ev.dst_device = cfg_.device;
    ev.is_transfer = true;
    ev.kind = dir == Direction::forward ? OpKind::F : OpKind::B;
    ev.stage = src_stage;
    ev.micro_batch = micro_batch;
    ev.iteration = iteration;
    ev.start_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                      Clock::time_point(std::chrono::nanoseconds(msg.send_time_ns)) - cfg_.t0)
                      .count();
    ev.end_ns = now_ns();
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
  msg.send_time_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
  auto req = cfg_.transport->isend(cfg_.device, dst, MessageTag{iteration, stage, micro_batch, dir}, std::move(msg));
  if (!req->test()) pending_.push_back(std::move(req));
}

void StageWorker::run_iteration(int iteration, Clock::time_point deadline) {
  const planner::Schedule& sch = *cfg_.schedule;
  const int last = sch.num_stages - 1;
  StageCompute& comp = *cfg_.compute;
  status_ = "starting";
  ring_.reset();  // a ring left by a failed iteration
  const std::vector<planner::Op>& ops = sch.device_ops[cfg_.device];
  for (size_t at = 0; at < ops.size(); ++at) {
    const planner::Op& op = ops[at];
    // Asynchronous replicas step after the all-reduce that follows their backward.
    const bool step_now = async_steps_ && !(at + 1 < ops.size() && ops[at + 1].kind == OpKind::allreduce &&
                                                ops[at + 1].stage == op.stage &&
                                                ops[at + 1].micro_batch == op.micro_batch);
    current_op_ = planner::op_label(op);
    OpContext ctx{iteration, op.stage, op.micro_batch, -1};
    int64_t start = -1;
    bool record_now = true;
    switch (op.kind) {
      case OpKind::F: {
        std::vector<Tensor> in;
        if (op.stage > 0)
          in = receive(iteration, op.stage - 1, Direction::forward, op.micro_batch, deadline, &ctx.weight_version);
        complete_ring(deadline);
        if (op.stage == 0 && cfg_.vertical_sync) ctx.weight_version = comp.weight_version(0);
        start = now_ns();
        std::vector<Tensor> out = comp.forward(ctx, std::move(in));
        if (op.stage < last) send(iteration, op.stage, Direction::forward, op.micro_batch, std::move(out), ctx.weight_version);
        break;
      }
      case OpKind::B:
      case OpKind::BW: {
        std::vector<Tensor> grad;
        if (op.stage < last) grad = receive(iteration, op.stage + 1, Direction::backward, op.micro_batch, deadline, nullptr);
        complete_ring(deadline);
        start = now_ns();
        std::vector<Tensor> out = op.kind == OpKind::B ? comp.backward_input(ctx, std::move(grad))
                                                       : comp.backward(ctx, std::move(grad));
        if (op.stage > 0) send(iteration, op.stage, Direction::backward, op.micro_batch, std::move(out), -1);
        if (op.kind == OpKind::BW && step_now) comp.step(op.stage, iteration);
        break;
      }
      case OpKind::W:
        complete_ring(deadline);
        start = now_ns();
        comp.backward_weight(ctx);
        if (step_now) comp.step(op.stage, iteration);
        break;
      case OpKind::step:
        complete_ring(deadline);
        start = now_ns();
        if (op.stage >= 0) {
          comp.step(op.stage, iteration);
        } else {
          for (int s : my_stages_) comp.step(s, iteration);
        }
        break;
      case OpKind::allreduce: {
        complete_ring(deadline);
        start = now_ns();
        const bool step_after = op.micro_batch >= 0 && async_steps_;
        const int r = sch.replicas(op.stage);
        if (r > 1) {
          const bool per_backward = op.micro_batch >= 0;
          ring_ = std::make_unique<InFlight>(InFlight{
              std::make_unique<RingAllreduce>(*cfg_.transport, cfg_.device, sch.stage_replicas[op.stage], iteration,
                                              op.stage, per_backward ? op.micro_batch / r : 0,
                                              comp.weight_gradients(op.stage), per_backward),
              op, iteration, start, step_after});
          record_now = false;  // recorded when the ring completes
          if (cfg_.overlap_allreduce) {
            progress_ring();
          } else {
            complete_ring(deadline);
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
    progress_ring();
  }
  complete_ring(deadline);
  flush_sends(deadline);
  status_ = "done";
}

}  // namespace pw::exec
