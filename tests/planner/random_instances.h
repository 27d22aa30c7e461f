// Test helpers: small random profiles (a chain plus random skip edges, optional data-loading
// source) and clusters (flat or two levels, at most 4 devices) for the optimality tests.
#pragma once

#include <random>
#include <string>
#include <vector>

#include "models/cluster.h"
#include "models/profile.h"

namespace pw::test {

inline models::Profile random_profile(std::mt19937& rng, int n, int64_t micro_batch) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  models::Profile p;
  p.model = "random";
  p.source = "analytic";
  p.micro_batch = micro_batch;
  const bool loading = pick(0, 2) == 0;
  for (int i = 0; i < n; ++i) {
    models::LayerProfile l;
    l.name = "L" + std::to_string(i);
    l.kind = "linear";
    l.forward_ns = pick(0, 40) * 1000;
    l.backward_input_ns = pick(0, 50) * 1000;
    l.backward_weight_ns = pick(0, 30) * 1000;
    l.output_bytes = pick(0, 64) * 1000;
    l.stash_bytes = pick(0, 64) * 1000;
    l.parameter_bytes = pick(0, 20) * 1000;
    if (i == 0 && loading) {
      l.kind = "input";
      l.is_data_loading = true;
      l.parameter_bytes = 0;
    }
    p.layers.push_back(l);
  }
  for (int i = 0; i + 1 < n; ++i) {
    p.edges.push_back({i, i + 1});
    for (int j = i + 2; j < n; ++j)
      if (pick(0, 5) == 0) p.edges.push_back({i, j});
  }
  return p;
}

// 1..4 devices: flat, or two levels whose product is at most 4.
inline models::Cluster random_cluster(std::mt19937& rng, int64_t memory_bytes) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  models::DeviceSpec dev;
  dev.name = "dev";
  dev.memory_bytes = memory_bytes;
  std::vector<models::Level> lv;
  if (pick(0, 1) == 0) {
    lv.push_back({"flat", pick(1, 4), 1e7 * pick(1, 20), pick(0, 3) * 1000});
  } else {
    const int a = pick(1, 2), b = pick(1, 2);
    lv.push_back({"node", a, 1e7 * pick(5, 40), pick(0, 2) * 1000});
    lv.push_back({"net", b, 1e7 * pick(1, 10), pick(0, 5) * 1000});
  }
  return models::Cluster("random", dev, lv);
}

}  // namespace pw::test
