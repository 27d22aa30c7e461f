// Synthetic image classification with class-dependent patterns: the learnable task of the CNN
// zoo models (vgg16, resnet50, densenet) in `train` and `run`.
//
// Class k has a fixed pattern over [c, h, w]: a sum of two oriented sinusoidal gratings whose
// frequencies, orientations, phases and per-channel weights are drawn from (seed, k). A
// sample of class k (drawn uniformly) is pattern_k * a + noise, with amplitude a ~ U(0.5, 1.5)
// and i.i.d. N(0, 0.5^2) noise, so the class is visible to a small convolutional net but not
// trivially so. Targets: [batch, 1] class ids. next() is deterministic given (seed, number of
// previous calls). Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "exec/data/data.h"

namespace pw::exec {

// `image_shape` is [c, h, w] (h, w >= 1); classes >= 1.
std::unique_ptr<DataSource> make_image_patterns_source(std::vector<int64_t> image_shape, int64_t classes,
                                                       uint64_t seed);

}  // namespace pw::exec
