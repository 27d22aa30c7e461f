// The runtime's stage workers under seeded interleavings (tests/exec/runtime/interleaved_transport.h:
// one thread at a time, a switch at every transport call), on channels of capacity 1: every
// schedule kind completes, in its protocol (FakeCompute checks every payload and call), and
// replicated stages finish their ring all-reduces with the same bits on every replica, for
// every seed. A wait in the workers that tested too little (the blocking all-reduce's bug,
// replica_allreduce_test.cc) shows here as a deadlock in a few hundred seeds.
#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include "exec/runtime/pipeline_runtime.h"
#include "exec/runtime/stage_worker.h"
#include "planner/schedule.h"
#include "planner/schedule_replicas.h"
#include "tests/exec/runtime/fake_compute.h"
#include "tests/exec/runtime/interleaved_transport.h"

using namespace pw;
using namespace pw::exec;
using planner::ScheduleKind;

namespace {

RuntimeOptions capacity_one() {
  RuntimeOptions o;
  o.channel_capacity = 1;
  o.pin_threads = false;
  o.threads_per_worker = 1;
  o.allreduce_bucket_bytes = 8;  // two of the three gradient tensors a bucket: rings overlap
  return o;
}

// Runs one iteration of every worker of `sch` under the schedule of `seed`; false on a deadlock.
bool run_seed(const planner::Schedule& sch, const std::vector<StageCompute*>& computes, unsigned seed) {
  InProcTransport inner(sch.num_devices, 1);
  const auto t0 = Transport::Clock::now();
  return testing::run_interleaved(inner, sch.num_devices, seed, [&](int device, Transport& tr) {
    StageWorker worker(worker_config(capacity_one(), device, &sch, computes[device], &tr, t0));
    worker.run_iteration(0, Transport::Clock::now() + std::chrono::hours(1));
  });
}

// A stage's three gradient tensors (3, 1 and 5 floats: chunks of 3 replicas cross them), set by
// each backward to the device's number plus the micro-batch; step() records what it was given.
class GradCompute final : public StageCompute {
 public:
  GradCompute(int stages, int device) : stages_(stages), device_(device), grads_(stages) {
    for (auto& g : grads_)
      for (int64_t n : {3, 1, 5}) g.emplace_back(std::vector<int64_t>{n});
  }
  int num_stages() const override { return stages_; }
  std::vector<Tensor> forward(const OpContext& c, std::vector<Tensor>) override { return payload(c); }
  std::vector<Tensor> backward_input(const OpContext& c, std::vector<Tensor>) override {
    return c.stage == 0 ? std::vector<Tensor>{} : payload(c);
  }
  void backward_weight(const OpContext& c) override {
    for (Tensor& g : grads_[c.stage]) g.fill(static_cast<float>(device_ + c.micro_batch));
  }
  void step(int stage, int) override {
    std::vector<float> v;
    for (Tensor& g : grads_[stage]) v.insert(v.end(), g.data(), g.data() + g.numel());
    stepped.push_back(v);
  }
  std::vector<Tensor*> weight_gradients(int stage) override {
    return {&grads_[stage][0], &grads_[stage][1], &grads_[stage][2]};
  }
  std::vector<std::vector<float>> stepped;

 private:
  std::vector<Tensor> payload(const OpContext& c) const {
    if (c.stage == stages_ - 1) return {};
    Tensor t(std::vector<int64_t>{1});
    t.data()[0] = static_cast<float>(c.micro_batch);
    std::vector<Tensor> out;
    out.push_back(std::move(t));
    return out;
  }
  int stages_, device_;
  std::vector<std::vector<Tensor>> grads_;
};

}  // namespace

TEST_CASE("interleaved workers: every schedule kind completes under 40 seeded interleavings each (capacity 1)") {
  int runs = 0, deadlocks = 0;
  for (ScheduleKind kind : {ScheduleKind::gpipe, ScheduleKind::one_f_one_b, ScheduleKind::zb_h1, ScheduleKind::zb_h2,
                            ScheduleKind::interleaved_1f1b, ScheduleKind::pipedream_async, ScheduleKind::two_bw})
    for (int stages : {2, 4}) {
      const planner::Schedule sch =
          planner::make_schedule(kind, stages, 8, kind == ScheduleKind::interleaved_1f1b ? 2 : 1);
      for (unsigned seed = 0; seed < 40; ++seed) {
        CAPTURE(planner::to_string(kind));
        CAPTURE(stages);
        CAPTURE(seed);
        testing::FakeCompute fake(sch.num_stages);
        const std::vector<StageCompute*> computes(sch.num_devices, &fake);
        const bool completed = run_seed(sch, computes, seed);
        deadlocks += completed ? 0 : 1;
        ++runs;
        if (!completed) continue;
        for (int s = 0; s < sch.num_stages; ++s) CHECK(fake.state(s).live == 0);
      }
    }
  CHECK(runs == 7 * 2 * 40);
  CHECK(deadlocks == 0);
}

TEST_CASE("interleaved workers: replicated stages reduce to the same bits on every replica under 40 seeds each") {
  int deadlocks = 0;
  for (ScheduleKind kind : {ScheduleKind::gpipe, ScheduleKind::one_f_one_b, ScheduleKind::pipedream_async})
    for (const std::vector<int>& replicas : {std::vector<int>{3}, std::vector<int>{1, 3}}) {
      const planner::Schedule sch =
          planner::make_replicated_schedule(kind, replicas, 6, std::vector<bool>(replicas.size(), true));
      for (unsigned seed = 0; seed < 40; ++seed) {
        CAPTURE(planner::to_string(kind));
        CAPTURE(replicas.size());
        CAPTURE(seed);
        std::vector<std::unique_ptr<GradCompute>> owned;
        std::vector<StageCompute*> computes;
        for (int d = 0; d < sch.num_devices; ++d) {
          owned.push_back(std::make_unique<GradCompute>(sch.num_stages, d));
          computes.push_back(owned.back().get());
        }
        if (!run_seed(sch, computes, seed)) {
          ++deadlocks;
          continue;
        }
        // The replicas of the last stage (devices 1-3 or 0-2) stepped on the same values.
        const int first = sch.num_devices - 3;
        REQUIRE_FALSE(owned[first]->stepped.empty());
        for (int d = first + 1; d < sch.num_devices; ++d) CHECK(owned[d]->stepped == owned[first]->stepped);
      }
    }
  CHECK(deadlocks == 0);
}
