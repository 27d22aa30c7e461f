// A mistyped command or flag: exit 2, one line, and the name the user most likely meant.
#include <doctest/doctest.h>

#include "tests/tools/cli_runner.h"

using pw::test::run_cli;

TEST_CASE("a mistyped command suggests the nearest one and lists them all") {
  pw::test::expect_rejected(
      run_cli({"plna", "--devices", "4"}), 2,
      {"unknown command \"plna\" (did you mean \"plan\"?)", "commands: calibrate, cluster, demo,", "whatif"});
  pw::test::expect_rejected(run_cli({"simulat"}), 2, {"(did you mean \"simulate\"?)"});
  const auto far = run_cli({"xyzzy"});
  pw::test::expect_rejected(far, 2, {"unknown command \"xyzzy\"; commands:"});
  CHECK(far.err.find("did you mean") == std::string::npos);
}

TEST_CASE("a mistyped flag names the flag it most likely meant") {
  pw::test::expect_rejected(run_cli({"plan", "--model", "gpt", "--device", "a100-80g", "--devcies", "4"}), 2,
                            {"not expected", "(did you mean --devices for --devcies?)"});
  pw::test::expect_rejected(run_cli({"simulate", "--uniform", "--stages", "2", "--micro-batchs", "4"}), 2,
                            {"did you mean --micro-batches for --micro-batchs?"});
  const auto none = run_cli({"plan", "--model", "gpt", "--device", "a100-80g", "--completely-unknown", "1"});
  pw::test::expect_rejected(none, 2, {"not expected"});
  CHECK(none.err.find("did you mean") == std::string::npos);
}

TEST_CASE("a flag named like a positional argument points at the positional, not at a near flag") {
  // `pipewright model` takes MODEL as a positional; --model once suggested --d-model.
  const auto r = run_cli({"model", "--model", "gpt"});
  pw::test::expect_rejected(r, 2, {"(did you mean MODEL, a positional argument given without a flag, for --model?)"});
  CHECK(r.err.find("--d-model") == std::string::npos);
}
