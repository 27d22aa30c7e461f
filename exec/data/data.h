// Training data for single-device training and the runtime: deterministic, seeded batches of
// (":data", ":targets") tensors for a model (exec/network.h names).
//
// - Text (models with an embedding layer and a softmax_xent loss, e.g. gpt): byte-level tokens
//   from a text file (default /usr/share/common-licenses/GPL-3). A sample is a window of seq
//   bytes at a seeded random offset; targets are the next bytes. Byte values >= vocab are
//   folded (byte % vocab).
// - Synthetic images (softmax_xent, input [c, h, w], e.g. vgg16, resnet50): class-dependent
//   patterns plus noise (exec/data/data_images.h).
// - Synthetic classification (softmax_xent without embedding, other inputs): inputs
//   approximately N(0, 1) (exec/data/fast_normal.h); the class is the argmax of a fixed random
//   low-rank linear teacher over the flattened input.
// - Synthetic regression (mse_loss, e.g. mlp): inputs approximately N(0, 1); targets =
//   tanh(teacher · x) with a fixed random low-rank teacher, so the loss can fall.
// - Files of samples, for models without an embedding (--data): a pair "INPUTS.npy,TARGETS.npy"
//   (exec/data/npy_samples.h) or CIFAR-10 binary batches "A.bin[,B.bin...]" (exec/data/cifar.h),
//   drawn in seeded epochs and read as the batches need them (exec/data/sample_source.h).
// The synthetic sources cost O(input + output) per sample (mlp 8x1024, batch 256: ~7 ms of CPU
// a mini-batch on the 2-core CI machine, was ~200 ms; bench/RESULTS.md), the text source a
// copy of the window.
// next() is deterministic given (seed, samples drawn before): samples are drawn one after the
// other, so next(a) then next(b) yields the rows of next(a + b). state() / restore() capture
// and reset that position (RNG state and batches drawn), so a resumed run draws exactly the
// batches the uninterrupted run would have (exec/checkpoint.h). Not thread-safe; describe()
// is constant and may be called from any thread. exec/data/loader.h draws in the background.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "exec/tensor.h"
#include "models/layer_graph.h"

namespace pw::exec {

inline constexpr const char* kDefaultTextFile = "/usr/share/common-licenses/GPL-3";

// A data source's position: its RNG state and the number of batches drawn so far.
struct DataState {
  uint64_t rng = 0;
  int64_t batches = 0;
};

struct Batch {
  Tensor data;     // [batch, input sample shape]
  Tensor targets;  // [batch, target sample shape]
};

class DataSource {
 public:
  virtual ~DataSource() = default;
  virtual Batch next(int64_t batch) = 0;
  virtual std::string describe() const = 0;
  virtual DataState state() const = 0;
  // Throws InputError for a position the source cannot be at (a hand-made checkpoint).
  virtual void restore(const DataState& s) = 0;
};

// Picks the source for the model. `text_file` empty = the default file for text models,
// synthetic data for the others; for the others a non-empty `text_file` names sample files
// ("INPUTS.npy,TARGETS.npy" or "A.bin[,B.bin...]"). Throws InputError naming `flag` and the file
// when a file is missing, unreadable or malformed, when a text file is empty or shorter than
// seq + 1 bytes, when sample files do not fit the model (shapes, N, class ids), or when the
// model has no input or no loss layer.
std::unique_ptr<DataSource> make_data_source(const models::Model& model, const std::string& text_file, uint64_t seed,
                                             const std::string& flag = "--data");

}  // namespace pw::exec
