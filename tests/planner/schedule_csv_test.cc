// PyTorch compute_only CSV exchange: round trips of every generator, PyTorch-style examples
// (written by hand from torch.distributed.pipelining's documented action format), errors.
#include <doctest/doctest.h>

#include "models/error.h"
#include "planner/schedule_csv.h"
#include "planner/schedule_gen.h"
#include "planner/schedule_validate.h"

using namespace pw;
using namespace pw::planner;

namespace {

void check_same(const Schedule& a, const Schedule& b) {
  CHECK(a.kind == b.kind);
  CHECK(a.num_devices == b.num_devices);
  CHECK(a.num_stages == b.num_stages);
  CHECK(a.num_micro_batches == b.num_micro_batches);
  CHECK(a.stage_device == b.stage_device);
  CHECK(a.device_ops == b.device_ops);
}

std::string error_of(const std::string& csv) {
  try {
    schedule_from_csv(csv, "s.csv");
  } catch (const InputError& e) { return e.what(); }
  return "";
}

}  // namespace

TEST_CASE("every generated schedule survives export and import unchanged") {
  const ScheduleKind kinds[] = {ScheduleKind::gpipe, ScheduleKind::one_f_one_b,     ScheduleKind::zb_h1,
                                ScheduleKind::zb_h2, ScheduleKind::pipedream_async, ScheduleKind::two_bw};
  for (ScheduleKind k : kinds)
    for (int p : {1, 2, 4})
      for (int m : {1, 3, 8}) {
        CAPTURE(to_string(k));
        CAPTURE(p);
        CAPTURE(m);
        const Schedule s = make_schedule(k, p, m);
        check_same(schedule_from_csv(schedule_to_csv(s), "rt.csv", k), s);
      }
  for (int p : {2, 4})
    for (int v : {2, 3}) {
      const Schedule s = make_schedule(ScheduleKind::interleaved_1f1b, p, 2 * p, v);
      check_same(schedule_from_csv(schedule_to_csv(s), "rt.csv", ScheduleKind::interleaved_1f1b), s);
      // The kind is inferred from a rank holding several stages.
      CHECK(schedule_from_csv(schedule_to_csv(s), "rt.csv").kind == ScheduleKind::interleaved_1f1b);
    }
}

TEST_CASE("export writes one row per rank in PyTorch's action notation") {
  const Schedule s = make_schedule(ScheduleKind::one_f_one_b, 2, 3);
  CHECK(schedule_to_csv(s) == "0F0,0F1,0B0,0F2,0B1,0B2\n1F0,1B0,1F1,1B1,1F2,1B2\n");
  const Schedule z = make_schedule(ScheduleKind::zb_h1, 2, 2);
  CHECK(schedule_to_csv(z) == "0F0,0F1,0I0,0W0,0I1,0W1\n1F0,1I0,1F1,1I1,1W0,1W1\n");
  Schedule bad = s;
  bad.device_ops[0].insert(bad.device_ops[0].begin(), Op{OpKind::allreduce, 0, -1});
  CHECK_THROWS_WITH_AS(
      schedule_to_csv(bad),
      "schedule CSV: device 0 has a allreduce op, which PyTorch's compute_only CSV format cannot carry", InputError);
}

TEST_CASE("malformed CSVs are one-line errors naming the row and column") {
  CHECK(error_of("0F0,0X1\n") ==
        "s.csv: row 1, column 2: unknown action type \"X\" in \"0X1\" (expected <stage><F|B|I|W><micro-batch>, e.g. "
        "0F1)");
  CHECK(error_of("0F0,0B0\n1F0,F1\n") ==
        "s.csv: row 2, column 2: \"F1\" has no stage index (expected <stage><F|B|I|W><micro-batch>, e.g. 0F1)");
  CHECK(error_of("0F0,0F\n") ==
        "s.csv: row 1, column 2: \"0F\" has no micro-batch index (expected <stage><F|B|I|W><micro-batch>, e.g. 0F1)");
  CHECK(error_of("0F0,0F1x\n") ==
        "s.csv: row 1, column 2: \"0F1x\" has a malformed micro-batch index (expected <stage><F|B|I|W><micro-batch>, "
        "e.g. 0F1)");
  CHECK(error_of("0F0,0SEND_F0\n") ==
        "s.csv: row 1, column 2: \"0SEND_F0\" is a communication action; only the compute_only format (F, B, I, W) is "
        "read");
  CHECK(error_of("0F0,0B0\n1F0,0F1\n") ==
        "s.csv: row 2, column 2: stage 0 is also on rank 0 (row 1, column 1); a stage runs on one rank");
  CHECK(error_of("0F0,0F0\n") == "s.csv: row 1, column 2: \"0F0\" appears twice");
  CHECK(error_of("0F0,0B0\n2F0,2B0\n") == "s.csv: stage 1 has no actions (stages 0..2 expected)");
  CHECK(error_of("") == "s.csv: empty schedule CSV (expected one row of actions per rank)");
  CHECK(error_of(",,\n") == "s.csv: no actions (expected one row of actions per rank)");
}

TEST_CASE("a well-formed CSV that cannot run fails validation") {
  // Rank 1 runs the backward of micro-batch 0 before its forward.
  const Schedule s = schedule_from_csv("0F0,0B0\n1B0,1F0\n", "dead.csv");
  CHECK_THROWS_AS(validate_schedule(s), InputError);
}
