// Measuring profiler (exec/profiler.h): Profile shape and bytes. Run-to-run stability of the
// measured times is a timing property and lives in bench/exec_bench.cc (BM_ProfilerStability).
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <thread>
#include <vector>

#include "exec/parallel.h"
#include "exec/profile/in_context.h"
#include "exec/profile/profiler.h"
#include "models/cost.h"
#include "models/error.h"
#include "models/zoo.h"

namespace pw::exec {
namespace {

models::Model mlp(int64_t width, int64_t depth) {
  models::ZooOptions z;
  z.width = width;
  z.depth = depth;
  z.batch = 8;
  return models::build_zoo_model("mlp", z);
}

TEST_CASE("measured profile: fields, bytes and device") {
  MeasureOptions o;
  o.micro_batch = 4;
  o.reps = 3;
  o.warmup = 1;
  const models::Model m = mlp(16, 2);
  models::Profile p = measure_profile(m, o);
  CHECK(p.source == "measured");
  CHECK(p.micro_batch == 4);
  CHECK(p.device.name == cpu_model_name());
  CHECK(p.device.threads >= 1);
  REQUIRE(p.layers.size() == m.size());
  CHECK(p.edges == m.edges());
  const models::LayerProfile& in = p.layers[0];
  CHECK(in.is_data_loading);
  CHECK(in.output_bytes == 4 * 16 * 4);
  const models::LayerProfile& fc0 = p.layers[1];
  CHECK(fc0.kind == "linear");
  CHECK(fc0.parameter_bytes == (16 * 16 + 16) * 4);
  CHECK(fc0.optimizer_bytes == 2 * fc0.parameter_bytes);  // adam: m and v
  CHECK(fc0.output_bytes == 4 * 16 * 4);
  CHECK(fc0.stash_bytes == 4 * 16 * 4);  // its input
  CHECK(fc0.forward_ns > 0);
  CHECK(fc0.backward_input_ns > 0);
  CHECK(fc0.backward_weight_ns > 0);
  CHECK(p.layers[2].backward_weight_ns == 0);  // relu has no weights
  CHECK(p.layers.back().kind == "mse_loss");
  MeasureOptions bad = o;
  bad.micro_batch = 0;
  CHECK_THROWS_AS(measure_profile(m, bad), InputError);
  // In context by default: the profile says so, and the optimizer step is measured per layer.
  REQUIRE(p.measurement.has_value());
  CHECK(p.measurement->context == "in-context");
  CHECK(p.measurement->reps == 3);
  CHECK(fc0.step_ns > 0);
  CHECK(p.layers[2].step_ns == 0);  // relu: no parameters, no step
}

TEST_CASE("measured weight_pending_bytes equal the cost model's, layer by layer (gpt, tied gpt, resnet50, vgg16)") {
  // What a split B keeps for its W, as the executor keeps it, is what models::layer_cost says
  // (the analytic profiles that plan zb-h1 / zb-h2 and run's memory check use it).
  models::ZooOptions g;
  g.layers = 1;
  g.d_model = 32;
  g.heads = 2;
  g.ffn = 96;
  g.seq = 16;
  g.vocab = 64;
  g.batch = 2;
  models::ZooOptions tied = g;
  tied.tied_embeddings = true;
  models::ZooOptions cnn;
  cnn.image = 32;
  cnn.width_divisor = 16;
  cnn.classes = 10;
  cnn.batch = 2;
  cnn.dropout_permille = 100;
  for (const auto& [family, z] :
       {std::pair<std::string, models::ZooOptions>{"gpt", g}, {"gpt", tied}, {"resnet50", cnn}, {"vgg16", cnn}}) {
    const models::Model m = models::build_zoo_model(family, z);
    MeasureOptions o;
    o.micro_batch = 2;
    o.reps = 1;
    o.warmup = 0;
    const models::Profile p = measure_profile(m, o);
    REQUIRE(p.layers.size() == m.size());
    for (size_t i = 0; i < m.size(); ++i) {
      CAPTURE(m.name());
      CAPTURE(p.layers[i].name);
      CHECK(p.layers[i].weight_pending_bytes == models::layer_cost(m.layers()[i], 2).weight_pending_bytes);
    }
  }
}

TEST_CASE("measured profile: isolated mode, co-run copies and points at several sizes and thread counts") {
  const models::Model m = mlp(16, 2);
  MeasureOptions o;
  o.micro_batch = 2;
  o.threads = 1;
  o.reps = 2;
  o.warmup = 0;
  o.micro_batches = {2, 4};
  o.thread_counts = {1, 2};
  o.co_run_workers = 2;
  models::Profile p = measure_profile(m, o);
  REQUIRE(p.measurement.has_value());
  CHECK(p.measurement->context == "in-context");
  CHECK(p.measurement->co_run_workers == 2);
  CHECK(p.micro_batch == 2);
  CHECK(p.device.threads == 1);
  REQUIRE(p.points.size() == 3);  // (4,1), (2,2), (4,2); (2,1) is the base
  CHECK(p.points[0].micro_batch == 4);
  CHECK(p.points[0].threads == 1);
  CHECK(p.points[1].micro_batch == 2);
  CHECK(p.points[1].threads == 2);
  CHECK(p.points[2].co_run_workers == 2);
  for (const auto& pt : p.points) {
    REQUIRE(pt.layers.size() == p.layers.size());
    CHECK(pt.layers[1].forward_ns > 0);
    CHECK(pt.layers[0].backward_input_ns == 0);  // the input layer has no B
  }
  CHECK(p.layers[1].output_bytes == 2 * 16 * 4);  // bytes at the base micro-batch
  MeasureOptions iso = o;
  iso.in_context = false;
  iso.thread_counts = {1};
  models::Profile q = measure_profile(m, iso);
  REQUIRE(q.measurement.has_value());
  CHECK(q.measurement->context == "isolated");
  CHECK(q.measurement->co_run_workers == 1);
  REQUIRE(q.points.size() == 1);
  CHECK(q.points[0].micro_batch == 4);
  CHECK(q.layers[1].stash_bytes == p.layers[1].stash_bytes);  // same bytes either way
}

TEST_CASE("measured profile: one profile per co-run copy, the pooled medians between the copies") {
  const models::Model m = mlp(16, 2);
  MeasureOptions o;
  o.micro_batch = 2;
  o.threads = 1;
  o.reps = 5;
  o.warmup = 1;
  o.co_run_workers = 2;
  o.micro_batches = {2, 4};
  std::vector<models::Profile> copies;
  const models::Profile p = measure_profile(m, o, nullptr, &copies);
  REQUIRE(copies.size() == 2);
  for (size_t i = 0; i < p.layers.size(); ++i) {
    CAPTURE(i);
    const auto& a = copies[0].layers[i];
    const auto& b = copies[1].layers[i];
    // Each copy's base times are medians of its own passes; pooling two equal-sized sets puts
    // the pooled median between theirs.
    CHECK(p.layers[i].forward_ns >= std::min(a.forward_ns, b.forward_ns));
    CHECK(p.layers[i].forward_ns <= std::max(a.forward_ns, b.forward_ns));
    CHECK(p.layers[i].backward_weight_ns >= std::min(a.backward_weight_ns, b.backward_weight_ns));
    CHECK(p.layers[i].backward_weight_ns <= std::max(a.backward_weight_ns, b.backward_weight_ns));
    CHECK(a.output_bytes == p.layers[i].output_bytes);  // bytes and the rest as the pooled profile
    CHECK(a.parameter_bytes == p.layers[i].parameter_bytes);
  }
  CHECK(copies[0].layers[1].forward_ns > 0);
  CHECK(copies[1].layers[1].step_ns > 0);
  REQUIRE(copies[0].points.size() == p.points.size());  // the other points stay pooled
  CHECK(copies[0].points[0].layers[1].forward_ns == p.points[0].layers[1].forward_ns);
  // Isolated measurements have no copies.
  MeasureOptions iso = o;
  iso.in_context = false;
  iso.micro_batches.clear();
  measure_profile(m, iso, nullptr, &copies);
  CHECK(copies.empty());
}

TEST_CASE("in-context passes: the optimizer step after every passes_per_step passes and after the last") {
  const models::Model m = mlp(16, 2);
  PassOptions o;
  o.micro_batch = 2;
  o.reps = 5;
  o.warmup = 1;
  o.passes_per_step = 2;  // passes 0..5: steps after passes 1, 3 and 5 (the last); pass 0 is warm-up
  const PassTimes t = time_in_context(m, o);
  REQUIRE(t.forward.size() == m.size());
  CHECK(t.forward[1].size() == 5);
  CHECK(t.backward_weight[1].size() == 5);
  CHECK(t.step[1].size() == 3);
  CHECK(t.step[2].size() == 3);  // relu: a 0 per step
  for (int64_t ns : t.step[1]) CHECK(ns > 0);
  o.passes_per_step = 4;  // passes 0..5: a step after pass 3 and after the last
  CHECK(time_in_context(m, o).step[1].size() == 2);
  o.passes_per_step = 1;
  CHECK(time_in_context(m, o).step[1].size() == 5);
  o.passes_per_step = 0;
  CHECK_THROWS_AS(time_in_context(m, o), InputError);
}

// Threads of this process (/proc/self/task), or -1 where /proc is not there.
int process_threads() {
  std::error_code ec;
  int n = 0;
  for (std::filesystem::directory_iterator it("/proc/self/task", ec), end; !ec && it != end; it.increment(ec)) ++n;
  return ec ? -1 : n;
}

// Waits (up to `limit`) for the process's thread count to fall back to `want`: the OpenMP team
// threads of a thread that ended exit on their own, a moment later.
int settle_threads(int want, std::chrono::seconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  int n = process_threads();
  while (n > want && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    n = process_threads();
  }
  return n;
}

TEST_CASE("measured profile: an in-context measurement leaves no OpenMP team on the calling thread") {
  // libgomp counts idle team threads; with more of them than CPUs it cuts its spin-wait, and
  // the co-run's multi-threaded copies then slept and woke at every parallel region.
  // So no OpenMP threads stay behind on the thread that asked for the profile: measured on a
  // fresh thread, whose own team would otherwise live as long as it does.
  if (process_threads() < 0) return;  // no /proc: nothing to count with
  const models::Model m = mlp(256, 2);
  MeasureOptions o;
  o.micro_batch = 8;
  o.threads = 2;
  o.co_run_workers = 1;
  o.reps = 1;
  o.warmup = 0;
  int before = 0, after = 0;
  std::thread caller([&] {
    before = process_threads();
    (void)measure_profile(m, o);
    after = settle_threads(before, std::chrono::seconds(10));
  });
  caller.join();
  CHECK(after == before);
}

TEST_CASE("measured profile in rounds: every point once per round, in the same order each round") {
  const models::Model m = mlp(16, 2);
  MeasureOptions o;
  o.micro_batch = 2;
  o.threads = 1;
  o.reps = 3;
  o.warmup = 0;
  o.rounds = 3;
  o.micro_batches = {2, 4};
  o.thread_counts = {1};
  o.co_run_workers = 1;
  std::vector<std::string> seen;
  int last_total = 0;
  o.progress = [&](int done, int total, const std::string& what) {
    CHECK(done == static_cast<int>(seen.size()) + 1);
    last_total = total;
    seen.push_back(what);
  };
  const models::Profile p = measure_profile(m, o);
  CHECK(last_total == 6);
  CHECK(seen == std::vector<std::string>{"micro-batch 2, 1 threads, round 1", "micro-batch 4, 1 threads, round 1",
                                         "micro-batch 2, 1 threads, round 2", "micro-batch 4, 1 threads, round 2",
                                         "micro-batch 2, 1 threads, round 3", "micro-batch 4, 1 threads, round 3"});
  REQUIRE(p.points.size() == 1);
  CHECK(p.points[0].micro_batch == 4);
  CHECK(p.layers[1].forward_ns > 0);
  CHECK(p.points[0].layers[1].forward_ns > 0);
  MeasureOptions bad = o;
  bad.rounds = 0;
  CHECK_THROWS_AS(measure_profile(m, bad), InputError);
}

}  // namespace
}  // namespace pw::exec
