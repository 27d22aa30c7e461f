// Acceptance: `pipewright run --model resnet50` (small sizes: CIFAR-like images,
// bottleneck blocks with batch norm, channels / 8) trains as a 2-stage 1F1B pipeline on the
// synthetic image-pattern task: the loss falls by at least 30% in 200 steps, `--compare` works
// on it, and the predicted peak memory of every worker is within 10% of the measured one.
// Loss and memory only: no wall-clock figure is checked.
#include <doctest/doctest.h>

#include <cmath>
#include <numeric>

#include "models/json_util.h"
#include "tests/tools/cli_runner.h"

using pw::Json;
using pw::test::CliResult;
using pw::test::run_cli;

namespace {
double mean(const std::vector<double>& v, size_t first, size_t count) {
  return std::accumulate(v.begin() + first, v.begin() + first + count, 0.0) / count;
}
}  // namespace

TEST_CASE("run --model resnet50: the loss falls >= 30% in 200 steps and --compare predicts memory within 10%") {
  const CliResult r =
      run_cli({"run",  "--model",  "resnet50", "--image",         "32",    "--width-divisor",    "8", "--classes",
               "10",   "--stages", "2",        "--micro-batches", "4",     "--micro-batch-size", "8", "--schedule",
               "1f1b", "--steps",  "200",      "--compare",       "--json"});
  CAPTURE(r.err);
  REQUIRE(r.rc == 0);
  const Json j = Json::parse(r.out);
  const auto losses = j.at("losses").get<std::vector<double>>();
  REQUIRE(losses.size() == 200);
  for (double l : losses) REQUIRE(std::isfinite(l));
  const double first = mean(losses, 0, 10), last = mean(losses, 190, 10);
  CAPTURE(first);
  CAPTURE(last);
  CHECK(last <= 0.7 * first);

  CHECK(j.at("predicted_iteration_ms").get<double>() > 0);
  const auto measured = j.at("peak_memory_bytes").get<std::vector<double>>();
  const auto predicted = j.at("predicted_peak_memory_bytes").get<std::vector<double>>();
  REQUIRE(measured.size() == 2);
  REQUIRE(predicted.size() == 2);
  for (size_t w = 0; w < measured.size(); ++w) {
    CAPTURE(w);
    CAPTURE(measured[w]);
    CAPTURE(predicted[w]);
    CHECK(std::fabs(predicted[w] - measured[w]) <= 0.10 * measured[w]);
  }
}
