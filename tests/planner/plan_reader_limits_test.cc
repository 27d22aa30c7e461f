// The plan reader holds a plan's recorded prediction (/predicted) and its record of the flags it
// was made with (/inputs/options) to the ranges of the flags and quantities they mean
// (models/limits.h), as the CLI fuzz pass found it did not: an efficiency of 7 or an idle share
// of -3 in a plan file was read without a word.
#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "models/error.h"
#include "planner/plan.h"

namespace pw::planner {
namespace {

Json two_stage_plan_json() {
  Plan p;
  p.schedule = ScheduleKind::one_f_one_b;
  p.num_micro_batches = 4;
  p.micro_batch_size = 2;
  p.batch = 8;
  for (int s = 0; s < 2; ++s) {
    StagePlan st;
    st.first_layer = s;
    st.end_layer = s + 1;
    st.devices = {s};
    p.stages.push_back(st);
  }
  p.num_devices_used = 2;
  p.predicted.iteration_time_s = 0.25;
  p.predicted.throughput_samples_per_s = 32;
  p.predicted.idle_share = 0.1;
  p.inputs.options = {{"efficiency", 0.5},
                      {"batch", 8},
                      {"memory_limit_bytes", 0},
                      {"schedule", "1f1b"},
                      {"micro_batches", "auto"},
                      {"measured_here", false},
                      {"trials", Json::array({{{"stages", 2}, {"measured_ms", {1.5, 2.0}}, {"median_ms", 1.75}}})}};
  Json j;
  to_json(j, p);
  return j;
}

std::string refusal_of(const Json& j) {
  try {
    plan_from_json(j);
  } catch (const InputError& e) { return e.what(); }
  return "(accepted)";
}

TEST_CASE("plan reader: recorded predictions and options within their flags' ranges are read back") {
  const Plan p = plan_from_json(two_stage_plan_json());
  CHECK(p.predicted.iteration_time_s == 0.25);
  CHECK(p.predicted.idle_share == 0.1);
  CHECK(p.inputs.options.at("efficiency") == 0.5);
}

TEST_CASE("plan reader: a recorded prediction out of range is refused, naming the field and the range") {
  struct Case {
    const char* key;
    double value;
    const char* message;
  };
  const Case cases[] = {
      {"iteration_time_s", -1, "/predicted/iteration_time_s: expected a value in [0, 1000000], got -1"},
      {"iteration_time_s", 1e300, "/predicted/iteration_time_s: expected a value in [0, 1000000], got 1e+300"},
      {"bottleneck_time_s", -0.5, "/predicted/bottleneck_time_s: expected a value in [0, 1000000], got -0.5"},
      {"throughput_samples_per_s", -2, "/predicted/throughput_samples_per_s: expected a value in [0, 1e+18], got -2"},
      {"bubble_rate", 1.5, "/predicted/bubble_rate: expected a value in [0, 1], got 1.5"},
      {"schedule_bubble", -3, "/predicted/schedule_bubble: expected a value in [0, 1], got -3"},
      {"stage_imbalance", 2, "/predicted/stage_imbalance: expected a value in [0, 1], got 2"},
      {"idle_share", 1.0000001, "/predicted/idle_share: expected a value in [0, 1], got 1.0000001"},
  };
  for (const Case& c : cases) {
    Json j = two_stage_plan_json();
    j["predicted"][c.key] = c.value;
    CHECK(refusal_of(j) == c.message);
  }
}

TEST_CASE("plan reader: a recorded option out of its flag's range, or of the wrong type, is refused") {
  struct Case {
    const char* key;
    Json value;
    const char* message;
  };
  const Case cases[] = {
      {"efficiency", 7, "/inputs/options/efficiency: expected a value in [0, 1], got 7"},
      {"efficiency", -0.5, "/inputs/options/efficiency: expected a value in [0, 1], got -0.5"},
      {"batch", -8, "/inputs/options/batch: expected an integer in [0, 1000000000000], got -8"},
      {"batch", 10000000000000LL,
       "/inputs/options/batch: expected an integer in [0, 1000000000000], got 10000000000000"},
      {"memory_limit_bytes", -1,
       "/inputs/options/memory_limit_bytes: expected an integer in [0, 1000000000000000000], got -1"},
      {"chunks", 4096, "/inputs/options/chunks: expected an integer in [1, 1024], got 4096"},
      {"schedule", 3, "/inputs/options/schedule: expected a string, got integer"},
      {"measured_here", "yes", "/inputs/options/measured_here: expected true or false, got string"},
  };
  for (const Case& c : cases) {
    Json j = two_stage_plan_json();
    j["inputs"]["options"][c.key] = c.value;
    CHECK(refusal_of(j) == c.message);
  }
  Json j = two_stage_plan_json();
  j["inputs"]["options"]["trials"][0]["measured_ms"][1] = -4;
  CHECK(refusal_of(j) == "/inputs/options/trials/0/measured_ms/1: expected a value in [0, 1000000000], got -4");
  j = two_stage_plan_json();
  j["inputs"]["options"]["trials"][0]["stages"] = 0;
  CHECK(refusal_of(j) == "/inputs/options/trials/0/stages: expected an integer in [1, 65536], got 0");
  j = two_stage_plan_json();
  j["inputs"]["options"]["candidates"] = 5;
  CHECK(refusal_of(j).find("/inputs/options/candidates: expected an array") == 0);
}

}  // namespace

// What a command writes or prints as a plan must read back: a plan whose micro-batch or
// predictions are past a plan file's limits is refused with the reader's words, and
// save_plan_file writes nothing.
TEST_CASE("check_plan_reads_back: a plan past a plan file's limits is refused, and not saved") {
  Plan p = plan_from_json(two_stage_plan_json());
  CHECK_NOTHROW(check_plan_reads_back(p));
  p.micro_batch_size = int64_t{1} << 31;
  p.batch = p.micro_batch_size * p.num_micro_batches;
  CHECK_THROWS_WITH_AS(check_plan_reads_back(p),
                       "the plan for these inputs holds a value no plan file may hold (/micro_batch_size: expected an "
                       "integer in [1, 1073741824], got 2147483648)",
                       InputError);
  const std::string file = "check_plan_reads_back_test.json";
  std::remove(file.c_str());
  CHECK_THROWS_AS(save_plan_file(file, p), InputError);
  CHECK_FALSE(std::ifstream(file).good());
  p = plan_from_json(two_stage_plan_json());
  p.predicted.iteration_time_s = 5e9;
  CHECK_THROWS_WITH_AS(check_plan_reads_back(p), doctest::Contains("/predicted/iteration_time_s"), InputError);
}

}  // namespace pw::planner
