// `pipewright cluster`: writes cluster files that plan reads back, describes them, lists the
// catalog, and rejects mixed modes.
#include <doctest/doctest.h>

#include "models/cluster.h"
#include "models/json_util.h"
#include "planner/plan.h"
#include "tests/tools/cli_runner.h"

using pw::Json;
using pw::test::CliResult;
using pw::test::run_cli;
using pw::test::ScratchDir;

TEST_CASE("cluster: a written file describes itself, reads back, and plans like the flags it came from") {
  ScratchDir dir;
  CliResult w = run_cli({"cluster", "--device", "a100-80g", "--devices", "16", "-o", dir.file("c.json")});
  CAPTURE(w.err);
  REQUIRE(w.rc == 0);
  CHECK(w.out ==
        "cluster 16xa100-80g-ib-100g: 16 x a100-80g (80.00 GiB each, 19.5 TFLOP/s fp32, 312 TFLOP/s 16-bit)\n"
        "  level 0 \"node\": 8 devices joined at 180 GB/s, latency 700 ns; 8 devices per group\n"
        "  level 1 \"network\": 2 groups joined at 11.2 GB/s, latency 1500 ns; 16 devices per group\n");
  const pw::models::Cluster c = pw::models::load_cluster_file(dir.file("c.json"));
  CHECK(c.num_devices() == 16);
  REQUIRE(c.levels().size() == 2);
  // The catalog links at their achieved rates (models/device.h): NVLink3 0.6 x 300 GB/s, EDR
  // InfiniBand 0.9 x 12.5 GB/s.
  CHECK(c.levels()[0].bandwidth_bytes_per_s == 0.6 * 300e9);
  CHECK(c.levels()[1].bandwidth_bytes_per_s == 0.9 * 12.5e9);
  CHECK(run_cli({"cluster", "--describe", dir.file("c.json")}).out == w.out);
  CHECK(Json::parse(run_cli({"cluster", "--describe", dir.file("c.json"), "--json"}).out) ==
        pw::load_json_file(dir.file("c.json")));

  const std::vector<std::string> model = {"plan",     "--model",  "gpt",     "--layers", "16",
                                          "--device", "a100-80g", "--batch", "64",       "--json"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = model;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  CliResult from_file = run_cli(with({"--cluster", dir.file("c.json")}));
  CliResult from_flags = run_cli(with({"--devices", "16"}));
  REQUIRE(from_file.rc == 0);
  REQUIRE(from_flags.rc == 0);
  const pw::planner::Plan a = pw::planner::plan_from_json(Json::parse(from_file.out));
  const pw::planner::Plan b = pw::planner::plan_from_json(Json::parse(from_flags.out));
  CHECK(a.predicted.iteration_time_s == b.predicted.iteration_time_s);
  CHECK(a.num_stages() == b.num_stages());

  CliResult lv = run_cli({"cluster", "--levels", "4,4", "--bandwidths", "10GB/s,1.25GB/s", "--device", "v100-16g",
                          "--memory", "8GiB", "--json"});
  REQUIRE(lv.rc == 0);
  const pw::models::Cluster l = pw::models::cluster_from_json(Json::parse(lv.out));
  CHECK(l.levels()[1].bandwidth_bytes_per_s == 1.25e9);
  CHECK(l.device().memory_bytes == 8LL << 30);

  CliResult list = run_cli({"cluster", "--list"});
  REQUIRE(list.rc == 0);
  CHECK(list.out.find("  nvlink3  300 GB/s  700 ns") != std::string::npos);
  CHECK(list.out.find("; achieved 60% (Calculon systems/a100_80g.json: NVLink 0.6)\n") != std::string::npos);
  CHECK(list.out.find("  a100-80g  19.5 TFLOP/s  312 TFLOP/s  80.00 GiB  2.04 TB/s") != std::string::npos);
  CHECK(list.out.find("  eth-10g  1.25 GB/s  20000 ns  IEEE 802.3 10GBASE line rate\n") != std::string::npos);
}

TEST_CASE("cluster: bad input exits 2 with one line and writes nothing") {
  ScratchDir dir;
  pw::test::expect_rejected(run_cli({"cluster", "--list", "--devices", "3"}), 2, {"--list: does not take --devices"},
                            &dir);
  pw::test::expect_rejected(run_cli({"cluster", "--device", "a100-80g", "--devices", "12", "-o", dir.file("c.json")}),
                            2, {"12 is not a multiple of devices_per_node = 8"}, &dir);
  pw::test::expect_rejected(run_cli({"cluster", "--describe", dir.file("none.json")}), 2, {"none.json"}, &dir);
  pw::test::expect_rejected(run_cli({"cluster", "--device", "a100-80g", "--devices", "4", "--intra-node", "warp9"}), 2,
                            {"warp9"}, &dir);
  pw::test::expect_rejected(run_cli({"cluster", "--describe", dir.file("c.json"), "--here"}), 2,
                            {"--list, --here and --describe: give one of them"}, &dir);
}

#ifdef PW_HAVE_EXEC
TEST_CASE("cluster --here: this machine's cores, one device per core") {
  CliResult r = run_cli({"cluster", "--here", "--memory", "1GiB", "--json"});
  CAPTURE(r.err);
  REQUIRE(r.rc == 0);
  const pw::models::Cluster c = pw::models::cluster_from_json(Json::parse(r.out));
  CHECK(c.num_devices() >= 1);
  CHECK(c.device().memory_bytes == 1LL << 30);
  CHECK(c.levels().front().bandwidth_bytes_per_s > 0);
}
#endif
