// CLI tests of `pipewright plan` and `pipewright import`: plans from a graph.txt, a profile JSON
// and a zoo model; -o writes a plan that plan_from_json reads back; bad input exits 2 with one
// line; infeasible exits 3 naming the smallest memory and the largest batch, with no plan file.
#include <doctest/doctest.h>

#include <string>

#include "models/json_util.h"
#include "planner/plan.h"
#include "tests/tools/cli_runner.h"

using pw::Json;
using pw::test::CliResult;
using pw::test::run_cli;
using pw::test::ScratchDir;

namespace {

const std::string kVgg = std::string(PW_PIPEDREAM_DIR) + "/vgg16/graph.txt";

void expect_exit(const CliResult& r, int rc, const std::vector<std::string>& needles, const ScratchDir& dir) {
  pw::test::expect_rejected(r, rc, needles, &dir);
}

}  // namespace

TEST_CASE("plan: a PipeDream graph.txt is recognised, -o writes a plan that reads back") {
  ScratchDir dir;
  const std::string out = dir.file("plan.json");
  CliResult r = run_cli({"plan", "--profile", kVgg, "--devices", "4", "-o", out});
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("plan for vgg16") != std::string::npos);
  CHECK(r.out.find("iteration") != std::string::npos);
  const pw::planner::Plan p = pw::planner::plan_from_json(pw::load_json_file(out));
  CHECK(p.model == "vgg16");
  CHECK(p.objective == "sync");
  CHECK(p.num_stages() >= 2);
  CHECK(p.num_stages() <= 4);
  CHECK(p.stages.front().first_layer == 0);
  CHECK(p.stages.back().end_layer == 41);
  CHECK(p.batch == 128);
  CHECK(p.batch == p.micro_batch_size * p.num_micro_batches);
  // --json prints the same plan.
  CliResult j = run_cli({"plan", "--profile", kVgg, "--devices", "4", "--json"});
  REQUIRE(j.rc == 0);
  const pw::planner::Plan pj = pw::planner::plan_from_json(Json::parse(j.out));
  CHECK(pj.predicted.iteration_time_s == doctest::Approx(p.predicted.iteration_time_s).epsilon(1e-12));
}

TEST_CASE("plan: pipedream objective prints PipeDream's time per stage (vgg16 -n 4, ratio 1)") {
  // _reference_runs/vgg16_n4: "Time per stage in pipeline: 0.1763491658666667" at 1.25e9 B/s.
  CliResult r = run_cli({"plan", "--profile", kVgg, "--objective", "pipedream", "--levels", "4", "--bandwidths",
                         "1.25e9", "--activation-comm", "--json"});
  REQUIRE(r.rc == 0);
  const pw::planner::Plan p = pw::planner::plan_from_json(Json::parse(r.out));
  CHECK(p.predicted.bottleneck_time_s <= 0.1763491658666667 * (1 + 1e-9));
  CHECK(p.predicted.bottleneck_time_s == doctest::Approx(0.1763491658666667).epsilon(1e-9));
}

TEST_CASE("plan: --model gpt --device a100-80g plans from the analytic profile, import writes a profile") {
  ScratchDir dir;
  CliResult r = run_cli({"plan", "--model", "gpt", "--device", "a100-80g", "--devices", "4", "-o", dir.file("p.json")});
  REQUIRE(r.rc == 0);
  const pw::planner::Plan p = pw::planner::load_plan_file(dir.file("p.json"));
  CHECK(p.num_stages() >= 1);
  CHECK(p.predicted.iteration_time_s > 0);
  CliResult imp = run_cli({"import", "pipedream", kVgg, "-o", dir.file("vgg.json")});
  REQUIRE(imp.rc == 0);
  CHECK(imp.out.find("41 nodes") != std::string::npos);
  CliResult again = run_cli({"plan", "--profile", dir.file("vgg.json"), "--devices", "4", "--json"});
  REQUIRE(again.rc == 0);
  CHECK(pw::planner::plan_from_json(Json::parse(again.out)).stages.back().end_layer == 41);
}

TEST_CASE("plan: bad input exits 2 with one line and writes nothing") {
  ScratchDir dir;
  const std::string out = dir.file("plan.json");
  // Zero devices.
  expect_exit(run_cli({"plan", "--profile", kVgg, "--devices", "0", "-o", out}), 2, {"--devices"}, dir);
  // Memory smaller than the largest layer's weights and optimizer state (fc6: 411 MB * 4).
  expect_exit(run_cli({"plan", "--profile", kVgg, "--devices", "4", "--memory-limit", "1000000", "-o", out}), 2,
              {"memory limit 1000000", "layer"}, dir);
  // Batch smaller than the micro-batch count.
  expect_exit(run_cli({"plan", "--profile", kVgg, "--devices", "4", "--batch", "4", "--micro-batches", "8", "-o", out}),
              2, {"--micro-batches", "batch"}, dir);
  // Unknown schedule.
  expect_exit(run_cli({"plan", "--profile", kVgg, "--devices", "4", "--schedule", "fastest", "-o", out}), 2,
              {"--schedule", "fastest"}, dir);
  // --levels and --bandwidths of different lengths.
  expect_exit(run_cli({"plan", "--profile", kVgg, "--levels", "4,4", "--bandwidths", "1e9", "-o", out}), 2,
              {"--bandwidths"}, dir);
  // A cluster file whose level has no groups.
  {
    ScratchDir cdir;
    const std::string cl = cdir.write("c.json", R"({"format": "pipewright.cluster/1", "name": "bad",
      "device": "a100-80g", "levels": [{"name": "node", "count": 4, "bandwidth_bytes_per_s": 1e11, "latency_ns": 0},
                                     {"name": "net", "count": 0, "bandwidth_bytes_per_s": 1e10, "latency_ns": 0}]})");
    CliResult r = run_cli({"plan", "--profile", kVgg, "--cluster", cl, "-o", out});
    CHECK(r.rc == 2);
    CHECK(pw::test::line_count(r.err) == 1);
    CHECK(r.err.find("count") != std::string::npos);
    CHECK(dir.entries().empty());
  }
  // A missing profile file.
  expect_exit(run_cli({"plan", "--profile", dir.file("none.txt"), "--devices", "2", "-o", out}), 2, {"none.txt"}, dir);
}

TEST_CASE("plan: infeasible exits 3 with the smallest memory and the largest batch, no plan file") {
  ScratchDir dir;
  const std::string out = dir.file("plan.json");
  // One device of 3 GB and one micro-batch: vgg16's weights and Adam state (2.21 GB) fit,
  // 128 samples of activations do not.
  const std::vector<std::string> base = {"plan",       "--profile",       kVgg, "--devices", "1", "--memory-limit",
                                         "3000000000", "--micro-batches", "1"};
  std::vector<std::string> args = base;
  args.insert(args.end(), {"-o", out});
  CliResult r = run_cli(args);
  CHECK(r.rc == 3);
  CHECK(pw::test::line_count(r.err) == 1);
  // In GiB, with the nearest changes as flags: "nothing fits in 2.79 GiB per device (...); smallest
  // per-device memory that would fit: 3.06 GiB (--memory-limit N); largest batch that fits now: B (--batch B)".
  CHECK(r.err.find("nothing fits in 2.79 GiB per device") != std::string::npos);
  CHECK(r.err.find("smallest per-device memory that would fit: ") != std::string::npos);
  CHECK(r.err.find("largest batch that fits now: ") != std::string::npos);
  const size_t at = r.err.find("(--memory-limit ");
  REQUIRE(at != std::string::npos);
  const int64_t need = std::stoll(r.err.substr(at + 16));
  CHECK(need > 3000000000);
  CHECK(r.err.find(" GiB (--memory-limit ") != std::string::npos);
  const int64_t batch = std::stoll(r.err.substr(r.err.find("largest batch that fits now: ") + 29));
  CHECK(r.err.find("(--batch " + std::to_string(batch) + ")") != std::string::npos);
  CHECK(batch >= 1);
  CHECK(batch < 128);
  CHECK(dir.entries().empty());
  // The numbers are right: the memory named fits the batch, the batch named fits the memory
  // and one sample more does not.
  CliResult fit = run_cli(
      {"plan", "--profile", kVgg, "--devices", "1", "--memory-limit", std::to_string(need), "--micro-batches", "1"});
  CHECK(fit.rc == 0);
  CliResult less = run_cli({"plan", "--profile", kVgg, "--devices", "1", "--memory-limit", std::to_string(need - 1),
                            "--micro-batches", "1"});
  CHECK(less.rc == 3);
  std::vector<std::string> at_batch = base;
  at_batch.insert(at_batch.end(), {"--batch", std::to_string(batch)});
  CHECK(run_cli(at_batch).rc == 0);
  at_batch.back() = std::to_string(batch + 1);
  CHECK(run_cli(at_batch).rc == 3);
}

TEST_CASE("plan --model: zoo sizing flags shape the model, and its own batch is the default") {
  CliResult r = run_cli({"plan", "--model", "gpt", "--layers", "2", "--d-model", "64", "--heads", "4", "--seq", "32",
                         "--vocab", "256", "--device", "a100-80g", "--devices", "2", "--json"});
  REQUIRE(r.rc == 0);
  const pw::planner::Plan p = pw::planner::plan_from_json(Json::parse(r.out));
  // input, embedding, block0, block1, final_norm, lm_head, loss
  CHECK(p.stages.back().end_layer == 7);
  CHECK(p.batch == 8);  // ZooOptions' default batch, not the profile's micro-batch of 1

  CliResult d = run_cli({"plan", "--model", "default", "--device", "cpu-core-avx2", "--devices", "2", "--json"});
  REQUIRE(d.rc == 0);
  CHECK(pw::planner::plan_from_json(Json::parse(d.out)).batch == 16);

  CliResult bad = run_cli({"plan", "--model", "default", "--layers", "3", "--device", "a100-80g", "--devices", "2"});
  CHECK(bad.rc == 2);
  CHECK(bad.err.find("--layers: sizing options apply to a zoo family") != std::string::npos);
}

namespace {

// The plan's stage count, micro-batch count and iteration time, then `whatif throughput` on
// that same (K, M) cell with the same extra flags: the two commands share one set of defaults
// (models/defaults.h), so they must agree.
void expect_plan_matches_whatif(const std::vector<std::string>& model, const std::vector<std::string>& plan_extra,
                                const std::vector<std::string>& whatif_extra) {
  std::vector<std::string> plan = {"plan", "--model", "gpt",        "--device", "a100-80g",    "--devices",
                                   "8",    "--json",  "--schedule", "1f1b",     "--recompute", "on"};
  plan.insert(plan.end(), model.begin(), model.end());
  plan.insert(plan.end(), plan_extra.begin(), plan_extra.end());
  CliResult pr = run_cli(plan);
  CAPTURE(pr.err);
  REQUIRE(pr.rc == 0);
  const pw::planner::Plan p = pw::planner::plan_from_json(Json::parse(pr.out));
  std::vector<std::string> whatif = {"whatif",      "throughput",
                                     "--family",    "gpt",
                                     "-K",          std::to_string(p.num_stages()),
                                     "-M",          std::to_string(p.num_micro_batches),
                                     "--schedules", "1f1b",
                                     "--recompute", "on",
                                     "--json",      "--no-progress"};
  whatif.insert(whatif.end(), model.begin(), model.end());
  whatif.insert(whatif.end(), whatif_extra.begin(), whatif_extra.end());
  CliResult wr = run_cli(whatif);
  CAPTURE(wr.err);
  REQUIRE(wr.rc == 0);
  const Json cell = Json::parse(wr.out).at("rows").at(0);
  REQUIRE(cell.at("feasible") == true);
  CHECK(cell.at("stages_used") == p.num_stages());
  CHECK(cell.at("micro_batch_size") == p.micro_batch_size);
  CHECK(cell.at("iteration_s").get<double>() == doctest::Approx(p.predicted.iteration_time_s).epsilon(0.01));
  CHECK(cell.at("peak_memory_bytes").get<int64_t>() == p.predicted.peak_memory_bytes);
}

}  // namespace

TEST_CASE("plan and whatif throughput agree for the same model, devices, precision and optimizer") {
  // The 48x2048 GPT on 8 A100s, batch 256: once 63.1 s from plan (fp32, Adam, 1.25 GB/s) and
  // 5.26 s from whatif (bf16, mixed Adam, NVLink). Both defaults now: bf16, adam priced as
  // adam-mixed, NVLink inside the node.
  const std::vector<std::string> gpt = {"--layers", "48", "--d-model", "2048", "--heads", "32", "--batch", "256"};
  expect_plan_matches_whatif(gpt, {}, {});
  expect_plan_matches_whatif(gpt, {"--partitioner", "even", "--micro-batches", "32"}, {"--partitioner", "even"});
  // fp32 and plain Adam on both sides.
  const std::vector<std::string> small = {"--layers", "8", "--d-model", "1024", "--heads", "16", "--batch", "64"};
  expect_plan_matches_whatif(small, {"--dtype", "fp32", "--optimizer", "adam"}, {"--fp32", "--optimizer", "adam"});
  // Two nodes of 4 joined by Ethernet: the links come from the same flags.
  CliResult pr = run_cli({"plan", "--model", "gpt", "--layers", "8", "--device", "a100-80g", "--devices", "8",
                          "--devices-per-node", "4", "--interconnect", "eth-25g", "--json"});
  REQUIRE(pr.rc == 0);
  CHECK(Json::parse(pr.out).at("cluster").at("name") == "8xa100-80g-eth-25g");
  pw::test::expect_rejected(run_cli({"plan", "--model", "gpt", "--device", "a100-80g", "--devices", "8", "--bandwidth",
                                     "1e9", "--interconnect", "eth-25g"}),
                            2, {"--bandwidth and --intra-node/--interconnect/--devices-per-node"});
  pw::test::expect_rejected(run_cli({"plan", "--model", "gpt", "--device", "a100-80g", "--dtype", "fp16"}), 2,
                            {"--dtype: expected fp32 or bf16, got \"fp16\""});
}

TEST_CASE("plan --schedule zb-h2: zb-h1's partition, simulated as zb-h2, refused when it does not fit") {
  ScratchDir dir;
  const std::vector<std::string> gpt = {"plan", "--model", "gpt", "--layers",        "24",       "--d-model",
                                        "1024", "--heads", "16",  "--device",        "a100-80g", "--devices",
                                        "4",    "--batch", "64",  "--micro-batches", "16"};
  auto plan_with = [&](const std::string& schedule) {
    std::vector<std::string> args = gpt;
    args.insert(args.end(), {"--schedule", schedule, "-o", dir.file(schedule + ".json")});
    CliResult r = run_cli(args);
    CAPTURE(r.err);
    REQUIRE(r.rc == 0);
    return pw::planner::load_plan_file(dir.file(schedule + ".json"));
  };
  const pw::planner::Plan h1 = plan_with("zb-h1"), h2 = plan_with("zb-h2");
  CHECK(to_string(h2.schedule) == "zb-h2");
  REQUIRE(h2.num_stages() == h1.num_stages());
  for (int s = 0; s < h1.num_stages(); ++s) CHECK(h2.stages[s].first_layer == h1.stages[s].first_layer);
  // ZB-H2 trades memory for the bubble (Qi et al. 2024): faster, more memory, near-zero bubble.
  CHECK(h2.predicted.iteration_time_s < h1.predicted.iteration_time_s);
  CHECK(h2.predicted.peak_memory_bytes > h1.predicted.peak_memory_bytes);
  CHECK(h2.predicted.schedule_bubble < h1.predicted.schedule_bubble);
  CliResult sim = run_cli({"simulate", "--plan", dir.file("zb-h2.json"), "--json"});
  REQUIRE(sim.rc == 0);
  CHECK(Json::parse(sim.out).at("makespan_ns").get<int64_t>() == std::llround(h2.predicted.iteration_time_s * 1e9));
  std::vector<std::string> big = gpt;
  big.insert(big.end(), {"--schedule", "zb-h2", "--memory-limit", "12GiB", "-o", dir.file("big.json")});
  pw::test::expect_rejected(run_cli(big), 3, {"zb-h2 on the zb-h1 partition needs", "try --schedule zb-h1"});
  CHECK(!dir.exists("big.json"));
}

TEST_CASE("plan --schedule interleaved-1f1b: 1F1B's devices and micro-batches, p x v virtual stages, simulated") {
  ScratchDir dir;
  const std::vector<std::string> gpt = {"plan",     "--model",         "gpt",       "--layers", "12",
                                        "--device", "a100-80g",        "--devices", "4",        "--batch",
                                        "64",       "--micro-batches", "16"};
  std::vector<std::string> args = gpt;
  args.insert(args.end(), {"--schedule", "interleaved-1f1b", "--chunks", "2", "-o", dir.file("il.json")});
  CliResult r = run_cli(args);
  CAPTURE(r.err);
  REQUIRE(r.rc == 0);
  const pw::planner::Plan il = pw::planner::load_plan_file(dir.file("il.json"));
  CHECK(to_string(il.schedule) == "interleaved-1f1b");
  CHECK(il.chunks == 2);
  REQUIRE(il.num_stages() == 8);
  for (int k = 0; k < 8; ++k) CHECK(il.stages[k].devices == il.stages[k % 4].devices);
  for (int k = 0; k + 1 < 8; ++k) CHECK(il.stages[k].end_layer == il.stages[k + 1].first_layer);
  // What plan says is what simulate says.
  CliResult sim = run_cli({"simulate", "--plan", dir.file("il.json"), "--json"});
  REQUIRE(sim.rc == 0);
  CHECK(Json::parse(sim.out).at("makespan_ns").get<int64_t>() == std::llround(il.predicted.iteration_time_s * 1e9));
  // 6 micro-batches of 16 on 4 devices: the counts suggested are multiples of 4 that divide 96.
  const std::vector<std::string> odd = {"plan",     "--model",           "gpt",       "--layers",   "12",
                                        "--device", "a100-80g",          "--devices", "4",          "--batch",
                                        "96",       "--micro-batches",   "6",         "--schedule", "interleaved-1f1b",
                                        "-o",       dir.file("odd.json")};
  pw::test::expect_rejected(run_cli(odd), 2,
                            {"6 micro-batches are not a multiple of the 4 devices", "try --micro-batches 4 or 8"});
  // A count that does not divide the batch is refused before any planning.
  std::vector<std::string> uneven = gpt;
  uneven[uneven.size() - 1] = "18";
  pw::test::expect_rejected(
      run_cli(uneven), 2,
      {"--micro-batches: 18 does not divide the batch of 64 samples", "counts that do: 1, 2, 4, 8, 16, 32, 64"});
  CHECK(!dir.exists("odd.json"));
  std::vector<std::string> chunks_alone = gpt;
  chunks_alone.insert(chunks_alone.end(), {"--chunks", "3"});
  pw::test::expect_rejected(run_cli(chunks_alone), 2, {"--chunks: only with --schedule interleaved-1f1b"});
}
