#include "whatif/sweep.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "models/error.h"
#include "whatif/charts.h"
#include "whatif/runner.h"

using namespace pw::whatif;
using pw::InputError;
using pw::Json;

namespace {

Json spec_json() {
  return Json::parse(R"({
    "format": "pipewright.sweep/1",
    "fixed": {"family": "gpt", "d_model": 1024, "heads": 16, "device": "a100-80g"},
    "axes": {"schedule": ["1f1b", "zb-h1"], "layers": [24, 48, 96], "devices": [8, 64],
             "micro_batches": ["auto", 16], "recompute": [true, "off"]}
  })");
}

// A fake evaluation: a closed form of the settings, so every row can be checked by hand.
Json fake_eval(const WhatifConfig& c) {
  return Json{{"parameters", c.layers * 12 * c.d_model * c.d_model},
              {"feasible", c.layers <= 12 * c.devices},
              {"label", c.schedule + "," + c.recompute}};
}

}  // namespace

TEST_CASE("sweep spec: axes in canonical order, fixed settings, grid size") {
  SweepSpec s = sweep_spec_from_json(spec_json());
  REQUIRE(s.axes.size() == 5);
  CHECK(s.axes[0].name == "layers");
  CHECK(s.axes[1].name == "devices");
  CHECK(s.axes[2].name == "micro_batches");
  CHECK(s.axes[3].name == "schedule");
  CHECK(s.axes[4].name == "recompute");
  CHECK(s.num_points() == 3 * 2 * 2 * 2 * 2);
  auto points = expand_sweep(s);
  REQUIRE(points.size() == 48);
  // Last axis fastest.
  CHECK(points[0].config.layers == 24);
  CHECK(points[0].config.recompute == "on");
  CHECK(points[1].config.recompute == "off");
  CHECK(points[2].config.schedule == "zb-h1");
  CHECK(points[4].config.micro_batches == "16");
  CHECK(points[8].config.devices == 64);
  CHECK(points[16].config.layers == 48);
  CHECK(points[47].config.layers == 96);
  CHECK(points[47].config.d_model == 1024);
  CHECK(points[47].axis_values ==
        Json{{"layers", 96}, {"devices", 64}, {"micro_batches", 16}, {"schedule", "zb-h1"}, {"recompute", "off"}});
  CHECK(points[46].axis_values["recompute"] == true);
  CHECK(sweep_spec_from_json(to_json(s)).num_points() == 48);
}

TEST_CASE("sweep spec errors name the JSON path") {
  auto err = [](const std::function<void(Json&)>& edit) {
    Json j = spec_json();
    edit(j);
    try {
      sweep_spec_from_json(j);
    } catch (const InputError& e) { return std::string(e.what()); }
    return std::string("no error");
  };
  CHECK(err([](Json& j) { j["axes"]["devices"] = Json::array(); }) ==
        "/axes/devices: empty axis (expected at least one value)");
  CHECK(err([](Json& j) { j["axes"]["colour"] = {1}; }).find("/axes/colour: unknown setting \"colour\"") == 0);
  CHECK(err([](Json& j) {
          j["fixed"].erase("device");
          j["axes"]["device"] = {"a100-80g", "tpu-v9"};
        }).find("/axes/device/1: unknown device kind \"tpu-v9\"") == 0);
  CHECK(err([](Json& j) { j["axes"]["layers"] = {24, 0}; }).find("/axes/layers/1: expected an integer") == 0);
  CHECK(err([](Json& j) { j["axes"]["layers"] = {24, 24}; }).find("/axes/layers/1: duplicate value 24") == 0);
  CHECK(err([](Json& j) { j["axes"]["d_model"] = {512}; }) == "/axes/d_model: \"d_model\" is both fixed and an axis");
  CHECK(err([](Json& j) { j["axes"]["batch"] = 8; }).find("/axes/batch: expected an array") == 0);
  CHECK(err([](Json& j) { j["axes"] = Json::object(); }) == "/axes: expected at least one axis");
  CHECK(err([](Json& j) { j["axes"]["schedule"] = {"2f2b"}; }).find("/axes/schedule/0") == 0);
  CHECK(err([](Json& j) { j["axes"]["micro_batches"] = {"many"}; }).find("/axes/micro_batches/0: expected \"auto\"") ==
        0);
  CHECK(err([](Json& j) { j["format"] = "pipewright.plan/1"; }) != "no error");
  CHECK(err([](Json& j) { j["extra"] = 1; }).find("/extra: unknown key") == 0);
  // A combination that is invalid only as a whole is caught when the grid is expanded.
  Json j = spec_json();
  j["axes"]["heads"] = {16, 24};
  j["fixed"].erase("heads");
  SweepSpec s = sweep_spec_from_json(j);
  CHECK_THROWS_WITH_AS(expand_sweep(s), doctest::Contains("not divisible by heads = 24"), InputError);
}

TEST_CASE("sweep spec file errors are prefixed with the file name") {
  std::string file = (std::filesystem::temp_directory_path() / "pw_whatif_sweep_test_spec.json").string();
  Json j = spec_json();
  j["axes"]["batch"] = Json::array();
  std::ofstream(file) << j.dump();
  CHECK_THROWS_WITH_AS(load_sweep_spec(file), doctest::Contains((file + ": /axes/batch: empty axis").c_str()),
                       InputError);
  std::remove(file.c_str());
}

TEST_CASE("run_sweep: rows in grid order, same table for 1 and 2 threads") {
  SweepSpec s = sweep_spec_from_json(spec_json());
  std::vector<std::string> cols = {"parameters", "feasible", "label"};
  Table one = run_sweep(s, cols, fake_eval, {1, ProgressMode::off, nullptr});
  Table two = run_sweep(s, cols, fake_eval, {2, ProgressMode::off, nullptr});
  CHECK(one.rows == two.rows);
  REQUIRE(one.rows.size() == 48);
  CHECK(one.columns == std::vector<std::string>{"point", "layers", "devices", "micro_batches", "schedule", "recompute",
                                                "parameters", "feasible", "label"});
  CHECK(one.rows[0] == std::vector<Json>{0, 24, 8, "auto", "1f1b", true, 24LL * 12 * 1024 * 1024, true, "1f1b,on"});
  CHECK(one.rows[47][0] == 47);
  CHECK(one.rows[47][7] == true);      // 96 <= 12 * 64
  CHECK(one.rows[16 + 0][7] == true);  // 48 layers, 8 devices: 48 <= 96
  CHECK(one.rows[32][7] == true);      // 96 layers, 8 devices: 96 <= 96
  std::string csv = to_csv(one);
  CHECK(csv.substr(0, csv.find('\n')) ==
        "point,layers,devices,micro_batches,schedule,recompute,parameters,feasible,label");
  CHECK(csv.find("\n0,24,8,auto,1f1b,true,301989888,true,\"1f1b,on\"\n") != std::string::npos);
  Json out = sweep_result_json(s, one);
  CHECK(out["format"] == "pipewright.sweep-result/1");
  CHECK(out["rows"].size() == 48);
  CHECK(out["rows"][1]["recompute"] == "off");
  CHECK(out["rows"][1]["label"] == "1f1b,off");
}

TEST_CASE("run_sweep: the error of the first failing point is reported") {
  SweepSpec s = sweep_spec_from_json(spec_json());
  auto eval = [](const WhatifConfig& c) -> Json {
    if (c.layers == 48 && c.devices == 64) throw InputError("bad point 48/64");
    if (c.layers == 96) throw InputError("bad point 96");
    return Json::object();
  };
  CHECK_THROWS_WITH_AS(run_sweep(s, {}, eval, {2, ProgressMode::off, nullptr}), "bad point 48/64", InputError);
}

TEST_CASE("parallel_for runs every index once and rethrows the smallest failing index") {
  std::vector<std::atomic<int>> hits(1000);
  parallel_for(1000, 2, [&](size_t i) { hits[i]++; });
  for (auto& h : hits) CHECK(h.load() == 1);
  parallel_for(0, 2, [&](size_t) { FAIL("no index expected"); });
  for (int rep = 0; rep < 5; ++rep)
    CHECK_THROWS_WITH(parallel_for(200, 2,
                                   [](size_t i) {
                                     if (i % 50 == 7) throw std::runtime_error("index " + std::to_string(i));
                                   }),
                      "index 7");
}

TEST_CASE("progress bar rendering and output") {
  ProgressBar quiet(nullptr, 10, "sweep", true);
  CHECK(quiet.render(5, 1.25) == "sweep [###############...............] 5/10  50% 1.2 s, ~1 s left");
  CHECK(quiet.render_line(2, 3) == "sweep: 2/10 20% 3.0 s, ~12 s left");
  CHECK(quiet.render(10, 3) == "sweep [##############################] 10/10 100% 3.0 s");
  std::FILE* f = std::tmpfile();
  {
    ProgressBar bar(f, 4, "grid", true);
    for (int i = 0; i < 4; ++i) bar.advance();
    bar.finish();
    CHECK(bar.done() == 4);
  }
  std::rewind(f);
  char buf[512] = {};
  size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::string s(buf, n);
  CHECK(s.find("grid [##############################] 4/4 100%") != std::string::npos);
  CHECK(s.back() == '\n');
  CHECK(s.front() == '\r');
  std::fclose(f);
}

namespace {
std::string read_all(std::FILE* f) {
  std::rewind(f);
  std::string s;
  char buf[512];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) s.append(buf, n);
  return s;
}
}  // namespace

TEST_CASE("progress lines for a pipe: one per tenth, then a heartbeat while nothing moves") {
  std::FILE* f = std::tmpfile();
  {
    ProgressBar lines(f, 20, "sweep", ProgressMode::lines, std::chrono::milliseconds(0));
    for (int i = 0; i < 20; ++i) lines.advance();
    lines.finish();
  }
  std::string s = read_all(f);
  CHECK(s.find('\r') == std::string::npos);
  CHECK(std::count(s.begin(), s.end(), '\n') == 10);
  CHECK(s.rfind("sweep: 2/20 10% ", 0) == 0);
  CHECK(s.find("sweep: 20/20 100% ") != std::string::npos);
  std::fclose(f);

  // Few, slow items: the heartbeat line shows the computation is alive.
  f = std::tmpfile();
  {
    ProgressBar slow(f, 3, "max-model", ProgressMode::lines, std::chrono::milliseconds(20));
    for (int waited = 0; waited < 10000 && std::ftell(f) == 0; waited += 10)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    slow.advance(3);
    slow.finish();
  }
  s = read_all(f);
  CHECK(s.rfind("max-model: 0/3 0% ", 0) == 0);
  CHECK(s.find("max-model: 3/3 100% ") != std::string::npos);
  std::fclose(f);

  // lines_when_slow: a quick run prints nothing at all.
  f = std::tmpfile();
  {
    ProgressBar quick(f, 4, "sweep", ProgressMode::lines_when_slow, std::chrono::milliseconds(0));
    quick.advance(4);
    quick.finish();
  }
  CHECK(read_all(f).empty());
  std::fclose(f);

  ProgressBar off(nullptr, 5, "x", ProgressMode::lines);
  off.advance(5);
  off.finish();
  CHECK(off.done() == 5);
}

TEST_CASE("a sweep chart is checked before the sweep computes") {
  std::vector<SweepAxis> axes{{"layers", {8, 16}}, {"devices", {2, 4}}, {"schedule", {"1f1b", "zb-h1"}}};
  const std::vector<std::string> results{"feasible", "throughput_samples_per_s", "iteration_s"};
  CHECK(check_sweep_chart(axes, results, "", "throughput_samples_per_s") == "devices");
  CHECK(check_sweep_chart(axes, results, "layers", "iteration_s") == "layers");
  CHECK_THROWS_WITH_AS(check_sweep_chart(axes, results, "schedule", "iteration_s"),
                       "--svg-x: column \"schedule\" is not numeric", InputError);
  CHECK_THROWS_WITH_AS(check_sweep_chart(axes, results, "", "speed"), "--svg-metric: no column \"speed\" in the sweep",
                       InputError);
  CHECK_THROWS_WITH_AS(check_sweep_chart(axes, results, "batch", "iteration_s"),
                       "--svg-x: no column \"batch\" in the sweep", InputError);
  axes.push_back({"batch", {8, 16, 32}});
  CHECK_THROWS_WITH_AS(check_sweep_chart(axes, results, "", "iteration_s"),
                       "--svg: the sweep has 12 lines (combinations of the axes other than devices); at most 10 can "
                       "be drawn",
                       InputError);
  CHECK_THROWS_WITH_AS(check_sweep_chart({{"schedule", {"1f1b"}}}, results, "", "iteration_s"),
                       "--svg: the sweep has no numeric axis to put on the x axis", InputError);
}

TEST_CASE("table renderings") {
  Table t;
  t.columns = {"name", "value", "note"};
  t.add_row(Json{{"name", "a,b"}, {"value", 1.5}});
  t.add_row(Json{{"name", "say \"hi\""}, {"value", 2e12}, {"note", "ok"}});
  CHECK(to_csv(t) == "name,value,note\n\"a,b\",1.5,\n\"say \"\"hi\"\"\",2000000000000,ok\n");
  CHECK(to_text(t) == "name              value  note\na,b                 1.5  -\nsay \"hi\"  2000000000000  ok\n");
  CHECK(rows_to_json(t)[0] == Json{{"name", "a,b"}, {"value", 1.5}, {"note", nullptr}});
}

TEST_CASE("config settings: JSON round trip and checks") {
  WhatifConfig c;
  apply_setting(c, "micro_batches", 8, "/x");
  apply_setting(c, "recompute", false, "/y");
  CHECK(c.micro_batches == "8");
  CHECK(micro_batch_count(c) == 8);
  CHECK(c.recompute == "off");
  Json j = to_json(c);
  CHECK(j["micro_batches"] == 8);
  CHECK(to_json(config_from_json(j, "")) == j);
  CHECK_THROWS_WITH_AS(apply_setting(c, "efficiency", 1.5, "/e"),
                       doctest::Contains("/e: expected a number in [0, 1] (0: the device's GEMM curve)"), InputError);
  CHECK_THROWS_WITH_AS(apply_setting(c, "partitioner", "random", "/p"), doctest::Contains("\"dp\" | "), InputError);
  CHECK_THROWS_WITH_AS(apply_setting(c, "devices", 2.5, "/d"), doctest::Contains("/d: expected an integer"),
                       InputError);
  c.optimizer = "adagrad";
  CHECK_THROWS_WITH_AS(validate_config(c, "cfg"), doctest::Contains("cfg: optimizer: unknown optimizer"), InputError);
}
