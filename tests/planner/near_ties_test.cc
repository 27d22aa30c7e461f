// near_ties / fastest_by_median (planner/near_ties.h): which candidates `plan --measure` runs,
// and which measured fastest. Hand-made candidate lists and measurements.
#include <doctest/doctest.h>

#include "models/error.h"
#include "models/median.h"
#include "planner/near_ties.h"

namespace pw::planner {
namespace {

PlanCandidate cand(int k, int m, double ms) { return {k, m, k == 2 ? 1 : 2, ms * 1e-3}; }

TEST_CASE("near ties: the candidates within the band of the fastest, at most max_count, fastest first") {
  const std::vector<PlanCandidate> all{cand(2, 1, 30.0), cand(1, 8, 31.5), cand(1, 16, 32.9), cand(1, 4, 33.1),
                                       cand(1, 2, 40.0)};
  std::vector<PlanCandidate> t = near_ties(all, 0.10, 4);  // up to 33.0 ms
  REQUIRE(t.size() == 3);
  CHECK(t[0].micro_batches == 1);
  CHECK(t[1].micro_batches == 8);
  CHECK(t[2].micro_batches == 16);
  CHECK(near_ties(all, 0.10, 2).size() == 2);
  CHECK(near_ties(all, 0.5, 10).size() == 5);
  t = near_ties(all, 0.0, 4);  // the fastest alone
  REQUIRE(t.size() == 1);
  CHECK(t[0].threads_per_stage == 2);
  CHECK(near_ties({}, 0.1, 4).empty());
  // Two shapes (1 stage x 2 threads; 2 stages x 1 thread): with room for two, one of each,
  // although the second-best candidate is of the first shape.
  const std::vector<PlanCandidate> shapes{cand(2, 1, 30.0), cand(2, 2, 30.5), cand(1, 8, 31.0), cand(1, 16, 31.2)};
  t = near_ties(shapes, 0.10, 2);
  REQUIRE(t.size() == 2);
  CHECK(t[0].micro_batches == 1);
  CHECK(t[1].micro_batches == 8);
  t = near_ties(shapes, 0.10, 3);  // then the others, fastest first; returned fastest first
  REQUIRE(t.size() == 3);
  CHECK(t[0].micro_batches == 1);
  CHECK(t[1].micro_batches == 2);
  CHECK(t[2].micro_batches == 8);
  CHECK_THROWS_AS(near_ties(all, -0.1, 4), InputError);
  CHECK_THROWS_AS(near_ties(all, 0.1, 0), InputError);
}

TEST_CASE("fastest by median: the smallest median wins, not the smallest single run") {
  // List 0 has the fastest single run (25) but median 33; list 1's median is 32.
  CHECK(fastest_by_median({{25, 33, 40}, {32, 31, 35}}) == 1);
  CHECK(models::median_of({4, 1, 3, 2}) == doctest::Approx(2.5));
  CHECK(models::median_of({}) == 0);
  CHECK(fastest_by_median({{30, 30}, {30}}) == 0);  // a tie: the earlier (better predicted)
  CHECK(fastest_by_median({{}, {50}}) == 1);        // a candidate never measured never wins
  CHECK(fastest_by_median({{}, {}}) == -1);
  CHECK(fastest_by_median({}) == -1);
}

TEST_CASE("trials settled: the winner clear of every other median by the margin") {
  CHECK(trials_settled({{30, 31, 29}, {35, 34, 36}}, 0.03));          // 30 against 35: clear
  CHECK_FALSE(trials_settled({{30, 31, 29}, {30.5, 31, 30}}, 0.03));  // 30 against 30.5: a tie
  CHECK_FALSE(trials_settled({{30}, {40}, {30.8}}, 0.03));            // the third is within 3%
  CHECK(trials_settled({{30}, {40}, {31}}, 0.03));                    // 31 > 30 x 1.03
  CHECK(trials_settled({{40}, {30}}, 0.0) == true);                   // the later list may win
  CHECK_FALSE(trials_settled({{30}, {30}}, 0.0));                     // equal medians: not settled
  CHECK_FALSE(trials_settled({{30}, {}}, 0.03));                      // one never measured
  CHECK(trials_settled({{30}}, 0.03));                                // nothing to tie with
  CHECK_FALSE(trials_settled({}, 0.03));
  CHECK_FALSE(trials_settled({{}, {}}, 0.03));
  // The medians decide, not one fast run: 25 is the fastest sample, but 32.5 (its list's
  // median) is within 3% of the other list's 32.
  CHECK_FALSE(trials_settled({{25, 32.5, 40}, {32, 31, 35}}, 0.03));
  CHECK(trials_settled({{25, 33.5, 40}, {32, 31, 35}}, 0.03));
  CHECK_THROWS_AS(trials_settled({{30}}, -0.01), InputError);
}

}  // namespace
}  // namespace pw::planner
