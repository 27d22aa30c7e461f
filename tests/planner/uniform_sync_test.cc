// The fast solver for repeated layers (planner/uniform_sync.h) against the DP it replaces
// (planner/sync_dp.h) on a grid both solve: GPT sizes, device counts 1..64, memory-bound and
// compute-bound limits, re-materialization on/off/auto, gpipe and 1f1b memory, several
// micro-batch counts.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "models/cost.h"
#include "models/defaults.h"
#include "models/device.h"
#include "models/optimizer_memory.h"
#include "models/zoo.h"
#include "planner/plan_request.h"
#include "planner/planner.h"
#include "planner/sync_dp.h"
#include "planner/uniform_sync.h"

using namespace pw;

namespace {

models::Profile gpt_profile(int64_t layers, int64_t d_model, int64_t seq, int64_t vocab, const std::string& device) {
  models::ZooOptions o;
  o.layers = layers;
  o.d_model = d_model;
  o.heads = 16;
  o.seq = seq;
  o.vocab = vocab;
  o.batch = 32;
  models::CostOptions co;
  co.bf16 = true;
  co.optimizer = "adam";
  return models::analytic_profile(models::build_zoo_model("gpt", o), models::find_device(device), 1, co);
}

models::Cluster cluster_of(const std::string& device, int devices) {
  return models::make_node_cluster(models::find_device(device), devices, 8, models::find_link("nvlink3"),
                                   models::find_link("ib-100g"));
}

bool same_split(const std::vector<planner::SyncStage>& a, const std::vector<planner::SyncStage>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].begin != b[i].begin || a[i].end != b[i].end || a[i].recompute != b[i].recompute) return false;
  return true;
}

std::string split_text(const std::vector<planner::SyncStage>& st) {
  std::string s;
  for (const auto& x : st)
    s += "[" + std::to_string(x.begin) + "," + std::to_string(x.end) + (x.recompute ? "r" : "") + ")";
  return s;
}

}  // namespace

TEST_CASE("uniform run: a GPT's blocks, none when layers differ or the ends are long") {
  models::Profile p = gpt_profile(12, 256, 128, 1000, "a100-80g");
  auto run = planner::find_uniform_run(p);
  REQUIRE(run.has_value());
  CHECK(run->begin == 2);  // input, embedding
  CHECK(run->end == 14);   // then final_norm, lm_head, loss
  // One block made different: the longest run is what is left on either side, and the ends
  // outside it are then too long.
  p.layers[7].forward_ns += 1;
  CHECK_FALSE(planner::find_uniform_run(p).has_value());
  models::Profile one = gpt_profile(1, 256, 128, 1000, "a100-80g");
  CHECK_FALSE(planner::find_uniform_run(one).has_value());
}

TEST_CASE("uniform solver equals the DP: costs, stage counts, splits, memory needed") {
  struct Shape {
    int64_t layers, d_model, seq, vocab;
  };
  const Shape shapes[] = {{24, 512, 256, 8000}, {40, 1024, 512, 32000}, {61, 2048, 256, 32000}};
  const std::string device = "v100-16g";
  const auto& opt = models::find_optimizer("adam");
  const double ppb = opt.total() / opt.weight_bytes;
  int cases = 0, solved = 0, same = 0, rec_ties = 0;
  for (const Shape& sh : shapes) {
    models::Profile p = gpt_profile(sh.layers, sh.d_model, sh.seq, sh.vocab, device);
    auto run = planner::find_uniform_run(p);
    REQUIRE(run.has_value());
    for (int devices : {1, 2, 3, 5, 8, 16, 24, 64}) {
      models::Cluster c = cluster_of(device, devices);
      planner::SyncModel dp(p, c);
      planner::UniformSync fast(dp, *run);
      // Memory: unlimited (compute-bound), the device's, and tight limits between the smallest
      // that fits and the device's (memory-bound).
      planner::SyncConfig probe;
      probe.persistent_per_parameter_byte = ppb;
      probe.recompute = 1;
      probe.m = 8;
      probe.micro_batch_size = 4;
      const int64_t need = dp.min_memory_needed(probe);
      if (need > 0) {  // the search's floor is below the answer; `below` cuts it off exactly there
        CHECK(dp.memory_floor(probe) <= need);
        CHECK(dp.min_memory_needed(probe, need) == -1);
        CHECK(dp.min_memory_needed(probe, need + 1) == need);
      }
      std::vector<int64_t> limits{0, models::find_device(device).memory_bytes};
      if (need > 0) limits.insert(limits.end(), {need, need + need / 7, 2 * need});
      for (int64_t limit : limits)
        for (int rec : {-1, 0, 1})
          for (bool gpipe : {false, true})
            for (int m : {1, 2, 8, 32}) {
              planner::SyncConfig cfg;
              cfg.m = m;
              cfg.micro_batch_size = 32 / m;
              cfg.gpipe_memory = gpipe;
              cfg.recompute = rec;
              cfg.memory_limit = limit;
              cfg.persistent_per_parameter_byte = ppb;
              if (!fast.applies(cfg)) continue;
              ++cases;
              CAPTURE(sh.layers);
              CAPTURE(sh.d_model);
              CAPTURE(devices);
              CAPTURE(limit);
              CAPTURE(rec);
              CAPTURE(gpipe);
              CAPTURE(m);
              double bd = std::numeric_limits<double>::infinity(), bf = bd;
              const auto sd = dp.optimize(cfg, &bd);
              const auto sf = fast.optimize(cfg, &bf);
              REQUIRE(sd.empty() == sf.empty());
              if (fast.applies_min_memory(cfg)) CHECK(fast.min_memory_needed(cfg) == dp.min_memory_needed(cfg));
              if (sd.empty()) continue;
              ++solved;
              const planner::SyncEvaluation ed = dp.evaluate(sd, cfg), ef = dp.evaluate(sf, cfg);
              CAPTURE(split_text(sd));
              CAPTURE(split_text(sf));
              CHECK(ef.fits);
              CHECK(sf.size() == sd.size());
              CHECK(ef.iteration_s == doctest::Approx(ed.iteration_s).epsilon(1e-12));
              CHECK(bf == doctest::Approx(bd).epsilon(1e-12));
              same += same_split(sd, sf) ? 1 : 0;
              // Re-materialized stages add their forward to the DP's sums in an order that makes
              // partitions of exactly equal cost differ in the last bits, so the DP picks among
              // them by rounding; without re-materialization its pick is the exact rule's.
              if (rec != 1) CHECK(same_split(sd, sf));
              else rec_ties += same_split(sd, sf) ? 0 : 1;
              // Equal cost: the same slowest stage (its layers' times sum to the same) and the
              // same stage count. With one micro-batch the iteration is the fill-drain latency
              // alone (S + (m - 1) M), the same for every split of the run: the slowest stage
              // is then free among the ties.
              double td = 0, tf = 0;
              for (const auto& x : ed.stages) td = std::max(td, x.compute_s);
              for (const auto& x : ef.stages) tf = std::max(tf, x.compute_s);
              if (m > 1) CHECK(tf == td);
            }
    }
  }
  MESSAGE(cases << " configurations, " << solved << " with a partition, " << same << " with the same split, "
                << rec_ties << " re-materialized ties split otherwise");
  CHECK(solved > 1000);
  CHECK(same > solved * 9 / 10);
}

TEST_CASE("uniform solver at every micro-batch point of an analytic profile: the DP's plans") {
  // The GEMM curve gives the analytic profile one point per micro-batch size; the planner
  // partitions each point's blocks with the fast solver unless exact partitioning is asked.
  models::ZooOptions o;
  o.layers = 24;
  o.d_model = 1024;
  o.heads = 16;
  o.seq = 512;
  o.vocab = 8000;
  const models::Model gpt = models::build_zoo_model("gpt", o);
  const models::DeviceSpec& dev = models::find_device("a100-80g");
  const models::Profile p = models::default_analytic_profile(gpt, dev, 64, true, "adam", 0);
  REQUIRE(p.points.size() == 6);  // 2, 4, ..., 64 beside the profile's own 1
  int compared = 0;
  for (int devices : {4, 8, 16})
    for (const char* schedule : {"gpipe", "1f1b"})
      for (int64_t memory : {int64_t{0}, int64_t{6} << 30}) {
        CAPTURE(devices);
        CAPTURE(schedule);
        CAPTURE(memory);
        planner::PlanRequest req;
        req.batch = 64;
        req.schedule = planner::parse_schedule_request(schedule, "schedule");
        req.optimizer = "adam-mixed";
        req.memory_limit_bytes = memory;
        const models::Cluster c = cluster_of("a100-80g", devices);
        const planner::PlanOutcome fast = planner::make_plan(p, c, req);
        req.exact_partitioning = true;
        const planner::PlanOutcome dp = planner::make_plan(p, c, req);
        REQUIRE(fast.feasible == dp.feasible);
        if (!dp.feasible) continue;
        ++compared;
        CHECK(fast.plan.predicted.iteration_time_s ==
              doctest::Approx(dp.plan.predicted.iteration_time_s).epsilon(1e-9));
        CHECK(fast.plan.num_stages() == dp.plan.num_stages());
        CHECK(fast.plan.micro_batch_size == dp.plan.micro_batch_size);
      }
  CHECK(compared >= 8);
}

TEST_CASE("smallest_fitting_limit: the least limit where a monotone test holds, -1 past 2^61") {
  using pw::planner::kMaxFittingLimit;
  using pw::planner::smallest_fitting_limit;
  CHECK(smallest_fitting_limit([](int64_t lim) { return lim >= 1; }) == 1);
  CHECK(smallest_fitting_limit([](int64_t lim) { return lim >= 1000; }) == 1000);
  CHECK(smallest_fitting_limit([](int64_t lim) { return lim >= 1025; }) == 1025);
  CHECK(smallest_fitting_limit([](int64_t lim) { return lim >= (int64_t{1} << 40) + 7; }) == (int64_t{1} << 40) + 7);
  CHECK(smallest_fitting_limit([](int64_t) { return false; }) == -1);
  // Near the range's end the answer does not depend on the guess either (2e18 lies between the
  // first doubling of 3000 past 2^60 and 2^61, which a search that stopped there missed).
  for (int64_t t : {int64_t{2'000'000'000'000'000'000}, kMaxFittingLimit - 1, kMaxFittingLimit, kMaxFittingLimit + 1}) {
    for (int64_t guess : {int64_t{1}, int64_t{3000}, int64_t{4000}, t, int64_t{1} << 62}) {
      CAPTURE(t);
      CAPTURE(guess);
      const int64_t want = t <= kMaxFittingLimit ? t : -1;
      CHECK(smallest_fitting_limit([t](int64_t lim) { return lim >= t; }, guess) == want);
    }
  }
}

TEST_CASE("smallest_fitting_limit: the same answer from any guess, -1 at or past `below`, few calls near the answer") {
  using pw::planner::smallest_fitting_limit;
  const int64_t big = std::numeric_limits<int64_t>::max();
  for (int64_t t : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{1000}, int64_t{1025}, (int64_t{1} << 40) + 7}) {
    for (int64_t guess : {int64_t{1}, t / 2, t - 1, t, t + 1, 3 * t, int64_t{1} << 62}) {
      CAPTURE(t);
      CAPTURE(guess);
      int calls = 0;
      const auto fits = [&](int64_t lim) {
        REQUIRE(lim >= 1);  // 0 means "no limit" to the planner: never asked
        ++calls;
        return lim >= t;
      };
      CHECK(smallest_fitting_limit(fits, guess) == t);
      CHECK(smallest_fitting_limit(fits, guess, t + 1) == t);
      CHECK(smallest_fitting_limit(fits, guess, 2 * t) == t);
      calls = 0;
      CHECK(smallest_fitting_limit(fits, guess, t) == -1);
      CHECK(calls <= 1);  // one call settles a limit that is not below `below`
      CHECK(smallest_fitting_limit(fits, guess, big) == t);
    }
    // From the answer itself: halving finds a miss at once, then the bisection.
    int calls = 0;
    CHECK(smallest_fitting_limit(
              [&](int64_t lim) {
                ++calls;
                return lim >= t;
              },
              t) == t);
    CHECK(calls <= 2 + static_cast<int>(std::log2(static_cast<double>(t)) + 1));
  }
  CHECK(smallest_fitting_limit([](int64_t) { return false; }, 1000) == -1);
  CHECK(smallest_fitting_limit([](int64_t) { return true; }, 1000) == 1);
  CHECK(smallest_fitting_limit([](int64_t) { return true; }, 1000, 1) == -1);
}

TEST_CASE("ceil_bytes equals std::ceil as an integer") {
  using pw::planner::ceil_bytes;
  for (double x : {0.0, 1e-300, 0.5, 1.0, 1.0 + 1e-15, 2.5, 1e15 + 0.5, 9007199254740993.0, 0x1p62 - 1024, 0x1p62,
                   0x1p62 + 2048, -0.5, -3.0})
    CHECK(ceil_bytes(x) == static_cast<int64_t>(std::ceil(x)));
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(0, 1e12);
  for (int i = 0; i < 100000; ++i) {
    const double x = u(rng) * (i % 3 == 0 ? 1e-9 : 1.0);
    REQUIRE(ceil_bytes(x) == static_cast<int64_t>(std::ceil(x)));
  }
}
