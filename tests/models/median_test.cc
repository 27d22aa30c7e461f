// models/median.h: the median and the trimmed mean the profiler sums into stage times.
#include <doctest/doctest.h>

#include <vector>

#include "models/median.h"

using pw::models::median_of;
using pw::models::trimmed_mean_of;

TEST_CASE("median_of: middle value, mean of the two middle ones, 0 for none") {
  CHECK(median_of({}) == 0);
  CHECK(median_of({3, 1, 2}) == 2);
  CHECK(median_of({4, 1, 2, 3}) == doctest::Approx(2.5));
}

TEST_CASE("trimmed_mean_of: drops floor(n * trim) values at each end, then averages") {
  CHECK(trimmed_mean_of({}, 0.05) == 0);
  CHECK(trimmed_mean_of({5}, 0.05) == 5);
  // Right-skewed op times: the mean is above the median, as a stage's summed time is.
  const std::vector<double> skewed{10, 10, 10, 11, 11, 12, 14, 20};
  CHECK(median_of(skewed) == doctest::Approx(11));
  CHECK(trimmed_mean_of(skewed, 0) == doctest::Approx(98.0 / 8));
  // 20 values, 5%: one dropped at each end (the 1000 outlier and the lowest).
  std::vector<double> v(18, 10.0);
  v.push_back(1000);
  v.push_back(1);
  CHECK(trimmed_mean_of(v, 0.05) == doctest::Approx(10));
  CHECK(trimmed_mean_of(v, 0) == doctest::Approx((180.0 + 1001) / 20));
  // Out-of-range trims are clamped: never every value dropped.
  CHECK(trimmed_mean_of({1, 2, 3}, 0.9) == doctest::Approx(2));
  CHECK(trimmed_mean_of({1, 2, 3}, -1) == doctest::Approx(2));
}
