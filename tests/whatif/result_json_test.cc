// The what-if result documents built next to their types: pipewright.whatif-rows/1
// (whatif/table.h: max-model and throughput --json) and pipewright.whatif-best/1
// (whatif/best_json.h: whatif best --json), from hand-made tables and search results.
#include <doctest/doctest.h>

#include "whatif/best_json.h"
#include "whatif/table.h"

using namespace pw;
using namespace pw::whatif;

TEST_CASE("whatif-rows: the study's name and one object per row, keys the columns") {
  Table t;
  t.columns = {"K", "M", "note"};
  t.rows = {{2, 4, nullptr}, {8, 1, "does not fit"}};
  const Json j = StudyRows{"throughput", t};
  CHECK(j == Json{{"format", "pipewright.whatif-rows/1"},
                  {"study", "throughput"},
                  {"rows", Json::array({{{"K", 2}, {"M", 4}, {"note", nullptr}},
                                        {{"K", 8}, {"M", 1}, {"note", "does not fit"}}})}});
  Table empty;
  empty.columns = {"devices"};
  CHECK(Json(StudyRows{"max-model", empty}).at("rows") == Json::array());
}

namespace {

SearchResult two_layouts() {
  SearchResult r;
  Layout a;
  a.tp = 2;
  a.pp = 4;
  a.dp = 1;
  a.micro_batch = 1;
  a.chunks = 2;
  a.recompute = false;
  a.sequence_parallel = true;
  Evaluation ea;
  ea.feasible = true;
  ea.iteration_s = 1.5;
  ea.samples_per_s = 42;
  ea.tflops_per_device = 100;
  ea.mfu = 0.25;
  ea.peak_memory_bytes = 1000;
  ea.weights_optimizer_bytes = 400;
  ea.split = {1.0, 0.25, 0.125, 0.5, 0.125};
  Layout b;
  b.tp = 8;
  b.zero1 = true;
  Evaluation eb;
  eb.reason = "needs 90 GB, more than the device's 80 GB";
  r.layouts = {a, b};
  r.evaluations = {ea, eb};
  r.best = 0;
  r.frontier = {0};
  return r;
}

}  // namespace

TEST_CASE("whatif-best: one row per layout, its axes and evaluation") {
  const SearchResult r = two_layouts();
  const Json row = EvaluatedLayout{r.layouts[0], r.evaluations[0]};
  CHECK(row == Json{{"tp", 2},
                    {"pp", 4},
                    {"dp", 1},
                    {"micro_batch", 1},
                    {"chunks", 2},
                    {"schedule", "interleaved-1f1b"},
                    {"recompute", false},
                    {"sequence_parallel", true},
                    {"zero1", false},
                    {"feasible", true},
                    {"reason", ""},
                    {"iteration_s", 1.5},
                    {"samples_per_s", 42.0},
                    {"tflops_per_device", 100.0},
                    {"mfu", 0.25},
                    {"peak_memory_bytes", 1000},
                    {"weights_optimizer_bytes", 400},
                    {"compute_s", 1.0},
                    {"bubble_s", 0.25},
                    {"tp_s", 0.125},
                    {"pp_s", 0.5},
                    {"dp_s", 0.125}});
  const Json other = EvaluatedLayout{r.layouts[1], r.evaluations[1]};
  CHECK(other.at("schedule") == "1f1b");
  CHECK(other.at("feasible") == false);
  CHECK(other.at("reason") == "needs 90 GB, more than the device's 80 GB");
  CHECK(other.at("zero1") == true);
}

TEST_CASE("whatif-best: candidates, best, frontier, and every candidate only when asked") {
  SearchResult r = two_layouts();
  const Json row0 = EvaluatedLayout{r.layouts[0], r.evaluations[0]};
  const Json row1 = EvaluatedLayout{r.layouts[1], r.evaluations[1]};
  const Json j = BestDocument{r, false};
  CHECK(j.size() == 4);
  CHECK(j.at("format") == "pipewright.whatif-best/1");
  CHECK(j.at("candidates") == 2);
  CHECK(j.at("best") == row0);
  CHECK(j.at("frontier") == Json::array({row0}));
  CHECK_FALSE(j.contains("all"));
  const Json all = BestDocument{r, true};
  CHECK(all.at("all") == Json::array({row0, row1}));
  r.best = -1;
  r.frontier.clear();
  const Json none = BestDocument{r, false};
  CHECK(none.at("best").is_null());
  CHECK(none.at("frontier") == Json::array());
}
