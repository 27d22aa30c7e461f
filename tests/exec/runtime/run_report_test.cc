// The run-result document (exec/runtime/run_report.h: pipewright.run-result/1), built next to its
// type from a hand-made result: every field, with and without the --compare prediction, and on GPUs.
#include "exec/runtime/run_report.h"

#include <doctest/doctest.h>

#include "tests/exec/runtime/training_util.h"

using namespace pw;
using namespace pw::exec;

TEST_CASE("the run-result document is built next to its type, from the plan, the result and the prediction") {
  const models::Model m = testing::tiny_model("mlp", 8);
  const planner::Plan plan = even_plan(m, 2, 2, 4, planner::ScheduleKind::gpipe, false);
  PipelineRunResult r;
  r.losses = {2.5, 2.0};
  r.iteration_ns = {3'000'000, 2'000'000};
  r.samples_per_s = 3200;
  r.median_iteration_ms = 2.5;
  r.wall_s = 0.25;
  r.end_to_end_samples_per_s = 64;
  r.data_wait_s = 0.125;
  r.peak_memory_bytes = {1000, 2000};
  r.placement = {"core 0 (socket 0)", "core 1 (socket 0)"};
  r.transport_spin_ns = 50'000;
  r.first_step = 3;
  r.iterations_run = 2;
  r.checkpoint_step = 5;
  const RunReport plain{plan, "mlp", 2, 2, 0, 1, "ck", r, nullptr};
  const Json j = plain;
  CHECK(j.at("format") == "pipewright.run-result/1");
  CHECK(j.at("model") == "mlp");
  CHECK(j.at("schedule") == "gpipe");
  CHECK(j.at("stages") == 2);
  CHECK(j.at("workers") == 2);
  CHECK(j.at("micro_batches") == 2);
  CHECK(j.at("micro_batch_size") == 4);
  CHECK(j.at("batch") == 8);
  CHECK(j.at("steps") == 2);
  CHECK(j.at("warmup_steps") == 0);
  CHECK(j.at("prefetch") == 1);
  CHECK(j.at("losses") == Json::array({2.5, 2.0}));
  CHECK(j.at("samples_per_s") == 3200.0);
  CHECK(j.at("iteration_ms") == 2.5);
  CHECK(j.at("iteration_ms_per_step") == Json::array({3.0, 2.0}));
  CHECK(j.at("wall_s") == 0.25);
  CHECK(j.at("end_to_end_samples_per_s") == 64.0);
  CHECK(j.at("data_wait_s") == 0.125);
  CHECK(j.at("data_bound") == false);
  CHECK(j.at("peak_memory_bytes") == Json::array({1000, 2000}));
  CHECK(j.at("per_stage") ==
        Json::array({{{"device", 0}, {"cores", "core 0 (socket 0)"}, {"peak_memory_bytes", 1000}},
                     {{"device", 1}, {"cores", "core 1 (socket 0)"}, {"peak_memory_bytes", 2000}}}));
  CHECK(j.at("first_step") == 3);
  CHECK(j.at("completed_steps") == 5);
  CHECK(j.at("stopped") == false);
  CHECK(j.at("checkpoint") == Json{{"dir", "ck"}, {"step", 5}});
  CHECK(j.at("transport_spin_us") == 50.0);
  CHECK_FALSE(j.contains("warning"));
  CHECK_FALSE(j.contains("predicted_iteration_ms"));
  CHECK(j.size() == 26);

  Prediction p;
  p.iteration_ms = 2.25;
  p.peak_memory_bytes = {900, 2100};
  r.checkpoint_step = -1;
  r.warning = "oversubscribed";
  const RunReport compared{plan, "mlp", 2, 2, 0, 1, "", r, &p};
  const Json k = compared;
  CHECK(k.at("predicted_iteration_ms") == 2.25);
  CHECK(k.at("predicted_peak_memory_bytes") == Json::array({900, 2100}));
  CHECK(k.at("per_stage").at(1).at("predicted_peak_memory_bytes") == 2100);
  CHECK(k.at("warning") == "oversubscribed");
  CHECK_FALSE(k.contains("checkpoint"));
}

TEST_CASE("the run-result document on GPUs: each GPU's peaks, and the shared-card figure and note when compared") {
  const models::Model m = testing::tiny_model("mlp", 8);
  const planner::Plan plan = even_plan(m, 2, 2, 4, planner::ScheduleKind::gpipe, false);
  PipelineRunResult r;
  r.losses = {2.5};
  r.iteration_ns = {3'000'000};
  r.median_iteration_ms = 3;
  r.peak_memory_bytes = {1000, 2000};
  r.placement = {"core 0 (socket 0)", "core 1 (socket 0)"};
  r.lanes = {"cuda:0", "cuda:0/stream1"};
  r.iterations_run = 1;
  Prediction p;
  p.iteration_ms = 2.25;
  p.peak_memory_bytes = {900, 2100};
  // Without the prediction's GPU part (a host run) none of its fields.
  const Json host = RunReport{plan, "mlp", 2, 1, 0, 0, "", r, &p};
  for (const char* key : {"device_memory", "profile_device", "compare_note", "predicted_shared_iteration_ms"})
    CHECK_FALSE(host.contains(key));
  GpuComparison g;
  g.profile_device = "NVIDIA H200 (cuda:0)";
  g.cards = {{Device::cuda(0), {0, 1}}};
  g.predicted_peak_bytes = {4096};
  g.measured_peak_bytes = {5000};
  p.gpu = g;
  const Json one_card = RunReport{plan, "mlp", 2, 1, 0, 0, "", r, &p};
  CHECK(one_card.at("device_lanes") == Json::array({"cuda:0", "cuda:0/stream1"}));
  CHECK(one_card.at("profile_device") == "NVIDIA H200 (cuda:0)");
  CHECK(one_card.at("device_memory") ==
        Json::array({{{"gpu", "cuda:0"}, {"workers", {0, 1}}, {"predicted_peak_bytes", 4096}, {"peak_bytes", 5000}}}));
  CHECK_FALSE(one_card.contains("compare_note"));  // no note given: no shared figure either
  p.gpu->note = shared_card_note(g.cards);
  p.gpu->shared_iteration_ms = 2.75;
  const Json shared = RunReport{plan, "mlp", 2, 1, 0, 0, "", r, &p};
  CHECK(shared.at("compare_note") == p.gpu->note);
  CHECK(shared.at("predicted_shared_iteration_ms") == 2.75);
  CHECK(shared.at("predicted_iteration_ms") == 2.25);
}
