// CIFAR-10's binary format (the "binary version" batches, data_batch_1.bin ... test_batch.bin):
// records of 1 label byte and 3072 pixel bytes, a 32x32 image channel by channel (red, green,
// blue), rows top to bottom. Samples: the pixels divided by 255 as a [3, 32, 32] input, the label
// as a class id. Several files are one data set, in the order given. Records are read as the
// mini-batches need them; only the labels are read when the files are opened (in chunks), to
// check them against the model's classes.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "exec/data/sample_source.h"

namespace pw::exec {

inline constexpr int64_t kCifarRecordBytes = 1 + 3 * 32 * 32;

// Checks `spec` (input [3, 32, 32], classes > 0) and every file: a regular file, a non-zero
// multiple of 3073 bytes (else truncated), labels < spec.classes. InputError("<file>: <what>"),
// or naming the model when its input or loss does not fit CIFAR-10.
std::unique_ptr<SampleReader> open_cifar_samples(const std::vector<std::string>& files, const SampleSpec& spec);

}  // namespace pw::exec
