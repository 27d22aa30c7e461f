// `train` and `run` on the user's own data (--data): a .npy pair for an MLP and CIFAR-10 binary
// records for a CNN, written here with a learnable pattern, train for 20 steps and the loss
// falls; malformed files are refused with one line naming the file, exit 2, before training.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "models/json_util.h"
#include "tests/exec/data/sample_files.h"
#include "tests/tools/cli_runner.h"

using pw::Json;
using pw::test::cifar_record;
using pw::test::npy_bytes;
using pw::test::run_cli;
using pw::test::SampleFilesDir;

namespace {

constexpr int64_t kWidth = 16;  // --width of the MLP

// A deterministic pseudo-random stream in [0, 1).
struct Lcg {
  uint64_t s = 12345;
  double next() {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(s >> 11) * 0x1.0p-53;
  }
};

// 256 samples for `mlp --depth 2 --width 16`: x uniform in [-1, 1), y_j = tanh(x_{j+1} - x_j).
std::string mlp_pair(const SampleFilesDir& dir) {
  const int64_t n = 256;
  Lcg rng;
  std::vector<float> x(static_cast<size_t>(n * kWidth)), y(x.size());
  for (float& v : x) v = static_cast<float>(2 * rng.next() - 1);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < kWidth; ++j)
      y[i * kWidth + j] = std::tanh(x[i * kWidth + (j + 1) % kWidth] - x[i * kWidth + j]);
  return dir.write("x.npy", npy_bytes("<f4", {n, kWidth}, x)) + "," +
         dir.write("y.npy", npy_bytes("<f4", {n, kWidth}, y));
}

// 128 CIFAR-10 records of 4 classes: class k is bright in the k-th quarter of the rows, plus noise.
std::string cifar_file(const SampleFilesDir& dir, const std::string& name, int label_offset = 0) {
  Lcg rng;
  std::string bytes;
  for (int i = 0; i < 128; ++i) {
    const int k = i % 4;
    std::vector<uint8_t> px(3072);
    for (int c = 0; c < 3; ++c)
      for (int row = 0; row < 32; ++row)
        for (int col = 0; col < 32; ++col)
          px[c * 1024 + row * 32 + col] = static_cast<uint8_t>((row / 8 == k ? 210 : 20) + 40 * rng.next());
    bytes += cifar_record(static_cast<uint8_t>(k + label_offset), px);
  }
  return dir.write(name, bytes);
}

// The mean of the first 3 losses and of the last 3.
std::pair<double, double> ends(const Json& j) {
  const std::vector<double> l = j.at("losses").get<std::vector<double>>();
  REQUIRE(l.size() == 20);
  return {(l[0] + l[1] + l[2]) / 3, (l[17] + l[18] + l[19]) / 3};
}

void expect_refused(const pw::test::CliResult& r, const std::string& file, const std::string& what) {
  CHECK(r.rc == 2);
  CHECK(r.out.empty());
  CHECK(r.err.find(file) != std::string::npos);
  CHECK(r.err.find(what) != std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.err.find("step ") == std::string::npos);  // nothing trained
}

}  // namespace

TEST_CASE("train and run: an MLP on a .npy pair, 20 steps, the loss falls") {
  SampleFilesDir dir;
  const std::string data = mlp_pair(dir);
  const std::vector<std::string> mlp{"--model", "mlp",       "--depth", "2",      "--width", "16",    "--steps",
                                     "20",      "--threads", "1",       "--data", data,      "--json"};
  std::vector<std::string> train{"train"}, run{"run", "--stages", "2", "--micro-batches", "2"};
  train.insert(train.end(), mlp.begin(), mlp.end());
  run.insert(run.end(), mlp.begin(), mlp.end());
  const auto t = run_cli(train);
  REQUIRE(t.rc == 0);
  const Json jt = Json::parse(t.out);
  CHECK(jt.at("data").get<std::string>() ==
        "npy " + dir.file("x.npy") + " [256, 16] '<f4', " + dir.file("y.npy") + " [256, 16] '<f4'");
  const auto [first, last] = ends(jt);
  CHECK(last < 0.8 * first);
  const auto r = run_cli(run);
  REQUIRE(r.rc == 0);
  const auto [run_first, run_last] = ends(Json::parse(r.out));
  CHECK(run_last < 0.8 * run_first);
}

TEST_CASE("train and run: a CNN on CIFAR-10 binary records, 20 steps, the loss falls") {
  SampleFilesDir dir;
  const std::string data = cifar_file(dir, "data_batch_1.bin");
  const auto t = run_cli({"train", "--model", "vgg16", "--classes", "4", "--batch", "16", "--steps", "20", "--threads",
                          "1", "--data", data, "--json"});
  REQUIRE(t.rc == 0);
  const Json jt = Json::parse(t.out);
  CHECK(jt.at("data").get<std::string>() == "CIFAR-10 binary 128 images (" + data + ")");
  const auto [first, last] = ends(jt);
  CHECK(last < 0.6 * first);
  const auto r = run_cli({"run", "--model", "vgg16", "--classes", "4", "--stages", "2", "--micro-batches", "2",
                          "--steps", "20", "--threads", "1", "--data", data, "--json"});
  REQUIRE(r.rc == 0);
  const auto [run_first, run_last] = ends(Json::parse(r.out));
  CHECK(run_last < 0.6 * run_first);
}

TEST_CASE("train and run: malformed data files, one line naming the file, exit 2, before training") {
  SampleFilesDir dir;
  const std::string pair = mlp_pair(dir);
  const std::string x = dir.file("x.npy"), y = dir.file("y.npy");
  const std::string high = cifar_file(dir, "high.bin", 1);  // labels 1..4
  for (const char* cmd : {"train", "run"}) {
    std::vector<std::string> base{cmd, "--steps", "2", "--threads", "1"};
    if (std::string(cmd) == "run") base.insert(base.end(), {"--stages", "2", "--micro-batches", "2"});
    auto with = [&](std::vector<std::string> more) {
      std::vector<std::string> a = base;
      a.insert(a.end(), more.begin(), more.end());
      return run_cli(a);
    };
    expect_refused(with({"--model", "mlp", "--depth", "2", "--width", "12", "--data", pair}), x,
                   "shape [N, 12] expected");
    expect_refused(with({"--model", "mlp", "--depth", "2", "--width", "16", "--data", x + "," + x + ".missing.npy"}),
                   x + ".missing.npy", "No such file");
    expect_refused(with({"--model", "vgg16", "--classes", "4", "--data", high}), high,
                   "label 4 of record 3 is out of range: the model has 4 classes [0, 4)");
    const std::string cut = dir.write("cut.bin", pw::test::slurp(high).substr(0, 3073 * 2 + 10));
    expect_refused(with({"--model", "vgg16", "--classes", "4", "--data", cut}), cut, "truncated?");
    expect_refused(with({"--model", "mlp", "--data", cifar_file(dir, "c.bin")}), dir.file("c.bin"),
                   "CIFAR-10 images are [N, 3, 32, 32]");
    const std::string bad = dir.write("bad.npy", "not numpy");
    expect_refused(with({"--model", "mlp", "--depth", "2", "--width", "16", "--data", bad + "," + y}), bad,
                   "not a .npy file (bad magic");
  }
}

TEST_CASE("train: --resume on a .npy pair draws the samples the uninterrupted run draws, across epochs") {
  SampleFilesDir dir;
  const std::string data = mlp_pair(dir);  // 256 samples: 8 steps of batch 32 an epoch
  const std::vector<std::string> base{"train", "--model",   "mlp", "--depth", "2",  "--width",
                                      "16",    "--threads", "1",   "--data",  data, "--json"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> a = base;
    a.insert(a.end(), more.begin(), more.end());
    return run_cli(a);
  };
  const auto full = with({"--steps", "20"});
  REQUIRE(full.rc == 0);
  REQUIRE(with({"--steps", "11", "--checkpoint", dir.file("ck")}).rc == 0);
  const auto rest = with({"--steps", "20", "--resume", dir.file("ck")});
  REQUIRE(rest.rc == 0);
  const std::vector<double> all = Json::parse(full.out).at("losses").get<std::vector<double>>();
  const Json j = Json::parse(rest.out);
  CHECK(j.at("first_step") == 11);
  CHECK(j.at("losses").get<std::vector<double>>() == std::vector<double>(all.begin() + 11, all.end()));
}
