// Training samples from a pair of .npy files (exec/data/npy.h): inputs [N, ...the model's input
// shape] (float32/float64, or uint8 pixels scaled to [0, 1]) and targets [N] (or [N, 1]) class
// ids for a softmax_xent model (any supported dtype, integral values in [0, classes)), or
// [N, ...the prediction's shape] floats for an mse_loss model.
#pragma once

#include <memory>
#include <string>

#include "exec/data/sample_source.h"

namespace pw::exec {

// Opens both files and checks them against `spec` before any training: shapes, the same N,
// every class id in range (read in chunks, not all at once). InputError("<file>: <what>").
std::unique_ptr<SampleReader> open_npy_samples(const std::string& inputs, const std::string& targets,
                                               const SampleSpec& spec);

}  // namespace pw::exec
