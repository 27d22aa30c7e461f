// The tool chooses libgomp's wait behaviour itself (exec/machine_load.h, tools/main.cc): a
// computing command re-executes once with GOMP_SPINCOUNT set, and a user's own setting wins.
// libgomp prints the values it took with OMP_DISPLAY_ENV=verbose, which is what is checked.
#include <doctest/doctest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/tools/cli_runner.h"

namespace {

using pw::test::run_cli;

// Sets or unsets an environment variable for one scope (the spawned CLI inherits environ).
class EnvVar {
 public:
  EnvVar(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) ::setenv(name, value->c_str(), 1);
    else ::unsetenv(name);
  }
  ~EnvVar() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// The last GOMP_SPINCOUNT libgomp displayed (the re-executed process displays last).
std::string displayed_spin_count(const std::string& err) {
  const std::string key = "GOMP_SPINCOUNT = '";
  const size_t at = err.rfind(key);
  if (at == std::string::npos) return "";
  const size_t b = at + key.size();
  return err.substr(b, err.find('\'', b) - b);
}

TEST_CASE("train and plan --measure: with no OpenMP setting the tool picks a bounded spin, the user's setting wins") {
  EnvVar display("OMP_DISPLAY_ENV", "verbose");
  {
    EnvVar policy("OMP_WAIT_POLICY", std::nullopt);
    EnvVar spin("GOMP_SPINCOUNT", std::nullopt);
    const auto r = run_cli({"train", "--model", "mlp", "--steps", "1"});
    REQUIRE(r.rc == 0);
    const std::string chosen = displayed_spin_count(r.err);
    CAPTURE(r.err);
    CHECK((chosen == "100" || chosen == "20000"));  // busy or quiet, whichever this machine is now
  }
  {
    EnvVar policy("OMP_WAIT_POLICY", std::nullopt);
    EnvVar spin("GOMP_SPINCOUNT", "777");
    const auto r = run_cli({"train", "--model", "mlp", "--steps", "1"});
    REQUIRE(r.rc == 0);
    CHECK(displayed_spin_count(r.err) == "777");
  }
  {
    // plan --measure profiles and trial-runs plans on this machine: the same choice as `run`.
    EnvVar policy("OMP_WAIT_POLICY", std::nullopt);
    EnvVar spin("GOMP_SPINCOUNT", std::nullopt);
    const auto r = run_cli(
        {"plan", "--model", "mlp", "--depth", "2", "--width", "32", "--batch", "4", "--measure", "--trials", "0"});
    REQUIRE(r.rc == 0);
    const std::string chosen = displayed_spin_count(r.err);
    CAPTURE(r.err);
    CHECK((chosen == "100" || chosen == "20000"));
    // plan without --measure computes nothing: libgomp's default.
    const auto q = run_cli({"plan", "--model", "mlp", "--device", "cpu-core-avx2", "--devices", "2"});
    REQUIRE(q.rc == 0);
    CHECK(displayed_spin_count(q.err) == "300000");
    // cluster --here measures the hand-off, whose latency follows the same choice.
    const auto c = run_cli({"cluster", "--here"});
    REQUIRE(c.rc == 0);
    const std::string measured = displayed_spin_count(c.err);
    CHECK((measured == "100" || measured == "20000"));
  }
  {
    // A command that does not compute is not re-executed: libgomp displays its default once.
    EnvVar policy("OMP_WAIT_POLICY", std::nullopt);
    EnvVar spin("GOMP_SPINCOUNT", std::nullopt);
    const auto r = run_cli({"model", "mlp"});
    REQUIRE(r.rc == 0);
    CHECK(displayed_spin_count(r.err) == "300000");
  }
}

TEST_CASE("run: a waiting worker spins long only on the tool's quiet choice, with a core per worker") {
  // GOMP_SPINCOUNT set here: the CLI does not re-execute, and PW_OPENMP_SPIN stays as given.
  EnvVar spin("GOMP_SPINCOUNT", "20000");
  const std::vector<std::string> cmd = {"run", "--model", "mlp", "--stages",       "2", "--micro-batches",
                                        "2",   "--steps", "1",   "--warmup-steps", "0", "--json"};
  for (const char* tool : {"quiet", "busy", ""}) {
    CAPTURE(tool);
    EnvVar choice("PW_OPENMP_SPIN", *tool ? std::optional<std::string>(tool) : std::nullopt);
    const auto r = run_cli(cmd);
    REQUIRE(r.rc == 0);
    const auto j = nlohmann::json::parse(r.out);
    // Two workers on one core (the run warns) share it: no long spin there either.
    const bool own_cores = !j.contains("warning");
    const double expected = std::string(tool) == "quiet" && own_cores ? 5000.0 : 50.0;
    CHECK(j.at("transport_spin_us").get<double>() == expected);
  }
}

}  // namespace
