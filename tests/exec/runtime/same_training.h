// Shared by the runtime comparison suites (replicated stages, MPI ranks): a small zoo model,
// the run options they compare under, and the check that two runs trained the same.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include "exec/runtime/run_pipeline.h"
#include "models/zoo.h"

namespace pw::exec::testing {

// gpt: `layers` blocks of d_model 16 over bytes; mlp: `depth` layers of 16; batch 8.
inline models::Model small_zoo_model(const std::string& family, int64_t layers, int64_t depth) {
  models::ZooOptions o;
  o.batch = 8;
  o.layers = layers;
  o.d_model = 16;
  o.heads = 2;
  o.ffn = 32;
  o.seq = 8;
  o.vocab = 256;  // byte-level text data
  o.depth = depth;
  o.width = 16;
  return models::build_zoo_model(family, o);
}

// 3 steps on 1 thread per worker, final weights kept, 60 s per iteration at most.
inline PipelineRunOptions compare_options() {
  PipelineRunOptions o;
  o.steps = 3;
  o.threads_per_worker = 1;
  o.keep_final_weights = true;
  o.timeout = std::chrono::seconds(60);
  return o;
}

inline double relative_difference(const Tensor& a, const Tensor& b) {
  double diff = 0, scale = 1e-30;
  for (int64_t k = 0; k < a.numel(); ++k) {
    diff = std::max(diff, static_cast<double>(std::fabs(a.data()[k] - b.data()[k])));
    scale = std::max(scale, static_cast<double>(std::fabs(b.data()[k])));
  }
  return diff / scale;
}

// Losses and every stage's weights and optimizer state (same names, shapes) within 1e-5 relative.
inline void check_same_training(const PipelineRunResult& a, const PipelineRunResult& b) {
  REQUIRE(a.losses.size() == b.losses.size());
  for (size_t i = 0; i < a.losses.size(); ++i) CHECK(a.losses[i] == doctest::Approx(b.losses[i]).epsilon(1e-5));
  REQUIRE(a.final_weights.size() == b.final_weights.size());
  int tensors = 0;
  for (size_t s = 0; s < b.final_weights.size(); ++s) {
    REQUIRE(a.final_weights[s].size() == b.final_weights[s].size());
    for (size_t k = 0; k < b.final_weights[s].size(); ++k) {
      CAPTURE(b.final_weights[s][k].first);
      CHECK(a.final_weights[s][k].first == b.final_weights[s][k].first);
      REQUIRE(a.final_weights[s][k].second.shape() == b.final_weights[s][k].second.shape());
      CHECK(relative_difference(a.final_weights[s][k].second, b.final_weights[s][k].second) <= 1e-5);
      ++tensors;
    }
  }
  CHECK(tensors > 0);
}

}  // namespace pw::exec::testing
