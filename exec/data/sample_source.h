// Training data from files of samples (exec/data/npy.h pairs, exec/data/cifar.h batches): a
// SampleReader reads sample i by offset; make_sample_source draws them in epochs, each epoch
// one permutation of all N samples drawn from (seed, epoch), so the order is the same for every
// run with that seed and each sample is seen once per epoch.
//
// The source's position is the number of samples drawn: DataState::rng holds it (there is no
// generator state beyond it) and DataState::batches the batches drawn, so a resumed run draws
// exactly the samples the uninterrupted one would (exec/checkpoint.h). next(a) then next(b)
// yields the rows of next(a + b). Memory: the current epoch's permutation (8 bytes a sample)
// and one mini-batch; samples are read as next() needs them. Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "exec/data/data.h"

namespace pw::exec {

// What the model trains on: one sample's input shape, and its targets: class ids in
// [0, classes) as a [1] target (classes > 0, softmax_xent), or floats of target_shape (mse_loss).
struct SampleSpec {
  std::vector<int64_t> input_shape;
  int64_t classes = 0;
  std::vector<int64_t> target_shape;  // regression only
  std::string model;                  // the model's name, for messages
  int64_t input_elements() const;
  int64_t target_elements() const;
};

class SampleReader {
 public:
  virtual ~SampleReader() = default;
  virtual int64_t samples() const = 0;
  // Sample i (0 <= i < samples()): spec.input_elements() floats into `input`, its target
  // (target_elements() floats) into `target`.
  virtual void read(int64_t i, float* input, float* target) const = 0;
  virtual std::string describe() const = 0;
};

std::unique_ptr<DataSource> make_sample_source(std::unique_ptr<SampleReader> reader, const SampleSpec& spec,
                                               uint64_t seed);

}  // namespace pw::exec
