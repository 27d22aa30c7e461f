// What the GPU pipeline tests share: their model (GPT, 4 blocks of d_model 256 over bytes,
// batch 16 = 8 micro-batches of 2) and the options of a run on `device`.
#pragma once

#include <chrono>

#include "exec/optimizer.h"
#include "exec/runtime/run_pipeline.h"
#include "models/zoo.h"

namespace pw::exec::cuda::testing {

inline constexpr int kGptMicroBatches = 8;

inline models::Model gpt_4x256(bool tied = false) {
  models::ZooOptions z;
  z.tied_embeddings = tied;
  z.layers = 4;
  z.d_model = 256;
  z.heads = 4;
  z.seq = 32;
  z.vocab = 256;
  z.batch = 16;
  return models::build_zoo_model("gpt", z);
}

// `steps` Adam steps at the default rate, seed 11, one thread per worker, no prefetch, the
// final weights kept, a 120 s deadline per wait.
inline PipelineRunOptions gpu_run_options(Device device, int steps = 10) {
  PipelineRunOptions o;
  o.steps = steps;
  o.seed = 11;
  o.optimizer.kind = OptimizerKind::adam;
  o.optimizer.lr = default_learning_rate(OptimizerKind::adam);
  o.threads_per_worker = 1;
  o.prefetch = 0;
  o.keep_final_weights = true;
  o.timeout = std::chrono::seconds(120);
  o.device = device;
  return o;
}

}  // namespace pw::exec::cuda::testing
