// The host side of running a pipeline on devices: the lanes of `run --device`, the layers'
// devices, the device clock's time conversion, and the worker's use of a clock (a fake one here:
// op times come from the clock's marks, not from the host clock).
#include <doctest/doctest.h>

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "exec/device_streams.h"
#include "exec/layer.h"
#include "exec/runtime/device_lanes.h"
#include "exec/runtime/pipeline_runtime.h"
#include "models/error.h"
#include "planner/schedule_gen.h"
#include "planner/schedule_replicas.h"
#include "tests/exec/runtime/fake_compute.h"

namespace pw::exec {
namespace {

TEST_CASE("device lanes: --device words, stream slots in the device's name") {
  CHECK(parse_device_flag("cpu", "--device") == Device::cpu());
  CHECK(parse_device_flag("cuda", "--device") == Device::cuda(0));
  CHECK(parse_device_flag("cuda:3", "--device") == Device::cuda(3));
  CHECK_THROWS_WITH_AS(parse_device_flag("gpu", "--device"), "--device: expected cpu, cuda or cuda:N, got \"gpu\"",
                       InputError);
  CHECK_THROWS_AS(parse_device_flag("cuda:", "--device"), InputError);
  CHECK_THROWS_AS(parse_device_flag("cuda:x", "--device"), InputError);
  CHECK(Device::cuda(1, 0).to_string() == "cuda:1");
  CHECK(Device::cuda(1, 2).to_string() == "cuda:1/stream2");
  CHECK(Device::cuda(1, 2) != Device::cuda(1, 0));
  CHECK(Device::cuda(1, 2).same_memory(Device::cuda(1, 0)));
  CHECK_FALSE(Device::cuda(1, 2).same_memory(Device::cuda(0, 2)));
  CHECK_FALSE(Device::cpu().same_memory(Device::cuda(0)));
}

TEST_CASE("device lanes: one GPU gives every worker a slot, several GPUs take contiguous blocks") {
  CHECK(pipeline_lanes(3, Device::cpu()) == std::vector<Device>(3, Device::cpu()));
  CHECK(pipeline_lanes(4, Device::cuda(0)) ==
        std::vector<Device>{Device::cuda(0, 0), Device::cuda(0, 1), Device::cuda(0, 2), Device::cuda(0, 3)});
  CHECK(pipeline_lanes(2, Device::cuda(1)) == std::vector<Device>{Device::cuda(1, 0), Device::cuda(1, 1)});
  CHECK(pipeline_lanes(5, Device::cuda(0), 2) == std::vector<Device>{Device::cuda(0, 0), Device::cuda(0, 1),
                                                                     Device::cuda(0, 2), Device::cuda(1, 0),
                                                                     Device::cuda(1, 1)});
  CHECK(pipeline_lanes(4, Device::cuda(2), 4) ==
        std::vector<Device>{Device::cuda(2, 0), Device::cuda(3, 0), Device::cuda(4, 0), Device::cuda(5, 0)});
  CHECK_THROWS_WITH_AS(pipeline_lanes(2, Device::cuda(0), 3),
                       "--gpus: 3 GPUs for 2 pipeline devices (at most one GPU per device)", InputError);
  CHECK_THROWS_AS(pipeline_lanes(2, Device::cuda(0), 0), InputError);
  CHECK_THROWS_AS(pipeline_lanes(65, Device::cuda(0)), InputError);
  CHECK(pipeline_lanes(64, Device::cuda(0)).back() == Device::cuda(0, 63));
}

TEST_CASE("device lanes: each layer on its stage's worker lane, interleaved chunks included") {
  // 2 devices, 2 chunks: virtual stages 0..3 on devices 0, 1, 0, 1.
  const planner::Schedule s = planner::make_schedule(planner::ScheduleKind::interleaved_1f1b, 2, 4, 2);
  const std::vector<Device> lanes{Device::cuda(0, 0), Device::cuda(0, 1)};
  const std::vector<Device> d = layer_devices(s, {2, 3, 5, 6}, lanes);
  CHECK(d == std::vector<Device>{lanes[0], lanes[0], lanes[1], lanes[0], lanes[0], lanes[1]});
}

TEST_CASE("device clock: a mark's time is the window's host start plus the device's elapsed time") {
  CHECK(device_mark_ns(1000, 0.0) == 1000);
  CHECK(device_mark_ns(1000, 0.25) == 251000);
  CHECK(device_mark_ns(5, 1.0000004) == 1000005);
  CHECK(device_mark_ns(5, 1.0000006) == 1000006);
}

TEST_CASE("device clock: the host clock marks increasing times since its origin") {
  auto c = make_stream_clock(Device::cpu(), std::chrono::steady_clock::now());
  c->start();
  CHECK(c->mark() == 1);
  CHECK(c->mark() == 2);
  const std::vector<int64_t> t = c->finish();
  REQUIRE(t.size() == 3);
  CHECK(t[0] >= 0);
  CHECK(t[0] <= t[1]);
  CHECK(t[1] <= t[2]);
}

TEST_CASE("device streams: the host's fences are empty and its tensors stay where they are") {
  CHECK(record_fence(Device::cpu()) == nullptr);
  std::vector<Tensor> ts;
  ts.push_back(Tensor::zeros({2}));
  ts.emplace_back();
  receive_tensors(ts, nullptr, Device::cpu());
  CHECK(ts[0].device().is_cpu());
  CHECK(ts[1].empty());
  bind_thread(Device::cpu());
  synchronize(Device::cpu());
}

// A clock whose mark k of a window is at base + 10 * k ns, base = 1000 * (window + 1) * (device + 1).
class ScriptedClock final : public StreamClock {
 public:
  explicit ScriptedClock(int device) : device_(device) {}
  void start() override {
    ++window_;
    marks_ = 0;
    mark();
  }
  int mark() override { return marks_++; }
  std::vector<int64_t> finish() override {
    std::vector<int64_t> t;
    for (int k = 0; k < marks_; ++k) t.push_back(int64_t{1000} * (window_ + 1) * (device_ + 1) + 10 * k);
    return t;
  }

 private:
  int device_;
  int window_ = -1;
  int marks_ = 0;
};

TEST_CASE("device clock: a worker with a clock takes every op time and memory sample from its marks") {
  const planner::Schedule s = planner::make_schedule(planner::ScheduleKind::one_f_one_b, 2, 3, 1);
  testing::FakeCompute compute(2);
  RuntimeOptions o;
  o.timeout = std::chrono::milliseconds(20000);
  o.pin_threads = false;
  o.make_clock = [](int device) { return std::make_unique<ScriptedClock>(device); };
  PipelineRuntime rt(s, compute, o);
  rt.run_iteration();
  rt.run_iteration();
  std::map<std::pair<int, int>, std::vector<const sim::TraceEvent*>> by;  // (device, iteration)
  for (const auto& e : rt.trace().events)
    by[{e.dst_device >= 0 && e.is_transfer ? e.dst_device : e.device, e.iteration}].push_back(&e);
  for (int d = 0; d < 2; ++d)
    for (int it = 0; it < 2; ++it) {
      const auto& evs = by[{d, it}];
      REQUIRE_FALSE(evs.empty());
      const int64_t base = int64_t{1000} * (it + 1) * (d + 1);
      int64_t last = base;
      for (const sim::TraceEvent* e : evs) {
        // Marks of the window in the order the worker made them: base + 10 * k, k >= 1.
        CHECK(e->start_ns > base);
        CHECK(e->start_ns >= last);
        CHECK(e->end_ns >= e->start_ns);
        CHECK((e->start_ns - base) % 10 == 0);
        CHECK((e->end_ns - base) % 10 == 0);
        CHECK(e->end_ns - base < 1000);
        if (e->is_transfer) CHECK(e->end_ns == e->start_ns);
        else CHECK(e->end_ns == e->start_ns + 10);  // nothing is marked inside an op
        last = e->end_ns;
      }
    }
  for (const auto& m : rt.trace().memory) CHECK((m.time_ns % 10) == 0);
}

TEST_CASE("device lanes: a runtime refuses lanes that do not match its devices") {
  const planner::Schedule s = planner::make_schedule(planner::ScheduleKind::gpipe, 2, 2, 1);
  testing::FakeCompute compute(2);
  RuntimeOptions o;
  o.pin_threads = false;
  o.lanes = {Device::cpu()};
  CHECK_THROWS_WITH_AS(PipelineRuntime(s, compute, o), "pipeline: 1 device lanes for 2 devices", InputError);
}

TEST_CASE("device lanes: every replica of a stage is a worker with its own lane, its compute's layers on it") {
  // Stage 0 on 2 replicas (devices 0, 1), stage 1 on device 2.
  const planner::Schedule s = planner::make_replicated_schedule(planner::ScheduleKind::gpipe, {2, 1}, 4);
  REQUIRE(s.num_devices == 3);
  const std::vector<Device> lanes = pipeline_lanes(s.num_devices, Device::cuda(0));
  CHECK(lanes == std::vector<Device>{Device::cuda(0, 0), Device::cuda(0, 1), Device::cuda(0, 2)});
  CHECK(layer_devices(s, {2, 3}, lanes) == std::vector<Device>{lanes[0], lanes[0], lanes[2]});
  CHECK(layer_devices(s, {2, 3}, lanes, 0) == std::vector<Device>{lanes[0], lanes[0], lanes[2]});
  // Replica 1 runs stage 0 on device 1; stage 1 has one replica: replica 0's lane (never run).
  CHECK(layer_devices(s, {2, 3}, lanes, 1) == std::vector<Device>{lanes[1], lanes[1], lanes[2]});
}

TEST_CASE("device lanes: an MPI rank's GPU is local rank mod the GPUs for cuda, the named one for cuda:N") {
  CHECK(rank_gpu(Device::cpu(), false, 3, 0) == Device::cpu());
  CHECK(rank_gpu(Device::cuda(0), false, 0, 2) == Device::cuda(0));
  CHECK(rank_gpu(Device::cuda(0), false, 1, 2) == Device::cuda(1));
  CHECK(rank_gpu(Device::cuda(0), false, 2, 2) == Device::cuda(0));
  CHECK(rank_gpu(Device::cuda(0), false, 1, 1) == Device::cuda(0));  // two ranks share the one GPU
  CHECK(rank_gpu(Device::cuda(1), true, 0, 2) == Device::cuda(1));
  CHECK(rank_gpu(Device::cuda(1), true, 1, 2) == Device::cuda(1));
  CHECK(rank_gpu(Device::cuda(0), true, 5, 1) == Device::cuda(0));
  CHECK_THROWS_WITH_AS(rank_gpu(Device::cuda(2), true, 0, 2), "--device cuda:2: this machine has 2 GPU(s)", InputError);
  CHECK_THROWS_WITH_AS(rank_gpu(Device::cuda(0), false, 0, 0), "--device cuda:0: this machine has no GPU", InputError);
}

TEST_CASE("device lanes: an MPI rank's own device on slot 0 of its GPU, the devices of other ranks on the host") {
  CHECK(rank_lanes(3, 1, Device::cuda(2)) == std::vector<Device>{Device::cpu(), Device::cuda(2, 0), Device::cpu()});
  CHECK(rank_lanes(2, 0, Device::cuda(0)) == std::vector<Device>{Device::cuda(0, 0), Device::cpu()});
  CHECK(rank_lanes(2, 1, Device::cpu()) == std::vector<Device>(2, Device::cpu()));
  // Rank 1 is replica 1 of stage 0: its compute has stage 0 on its GPU, stage 1 on the host.
  const planner::Schedule s = planner::make_replicated_schedule(planner::ScheduleKind::gpipe, {2, 1}, 4);
  const std::vector<Device> lanes = rank_lanes(3, 1, Device::cuda(0));
  CHECK(layer_devices(s, {2, 3}, lanes, 1) ==
        std::vector<Device>{Device::cuda(0, 0), Device::cuda(0, 0), Device::cpu()});
  // Rank 2 (stage 1): stage 0 on the host.
  CHECK(layer_devices(s, {2, 3}, rank_lanes(3, 2, Device::cuda(0)), 0) ==
        std::vector<Device>{Device::cpu(), Device::cpu(), Device::cuda(0, 0)});
}

TEST_CASE("device lanes: the usable GPUs are those the build and machine can use") {
  const int n = usable_gpu_count();
  CHECK(n >= 0);
  CHECK(unusable_reason(Device::cuda(n)) != "");
  for (int i = 0; i < n; ++i) CHECK(unusable_reason(Device::cuda(i)) == "");
}

}  // namespace
}  // namespace pw::exec
