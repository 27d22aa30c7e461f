// measure_memory: whether an in-context measurement fits in this machine's memory before it
// runs. `plan --model gpt --measure` (GPT-2 small, sequence 1024, batch 8) was killed by the
// kernel's OOM killer at 24 GB, minutes in, at micro-batch 4 of its two co-run copies: each copy
// holds the whole model's weights, gradients and optimizer state and one whole pass's stash.
// A point that cannot fit is refused (or, for `plan --measure`, left out) with a one-line reason
// instead.
//
// The estimate is taken from the bytes pass's profile (measured at the base micro-batch) and
// scales its activations linearly in the micro-batch size. Pure functions except
// available_memory_bytes; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "exec/profile/in_context.h"
#include "models/profile.h"

namespace pw::exec {

// Bytes one in-context copy holds at micro-batch `mb` when the profile `bytes` was measured at
// micro-batch `base_mb` (>= 1): the weights, gradients and optimizer state of its layers, plus,
// scaled by mb / base_mb, the most stash it holds at once and the largest layer's output,
// output gradient and workspace (its transients). `layers`: the copy's layers
// (MeasureOptions::copy_layers); empty = every layer. `order`: the copy's ops
// (MeasureOptions::copy_order), followed op by op: an F holds its layers' stash, a split B adds
// what it keeps for W (weight_pending_bytes), W or BW frees both; so a GPipe-ordered copy holds
// all its micro-batches' stash at once, as its worker does. Empty = whole-model passes: one
// pass's stash (each layer's W follows its B, so what B keeps is a transient). Measured against
// peak RSS (bench/RESULTS.md): within 3% for a 4-layer gpt at micro-batches 4 and 16,
// the 4x4096 mlp at 64 and GPT-2 small (the zoo's gpt) at 2, two copies each. A process that
// measured a smaller size first can hold more (freed memory its allocator keeps): hence the
// margin below.
// Throws InputError for a size < 1, a mask of the wrong length or an op outside the profile.
int64_t in_context_copy_bytes(const models::Profile& bytes, int64_t base_mb, int64_t mb,
                              const std::vector<bool>& layers = {}, const std::vector<PassOp>& order = {});

// A measurement's margin: its need is compared against this share of the available memory
// (the estimate leaves out the allocator's slack, oneDNN's primitive caches and the process).
inline constexpr double kMeasureMemoryShare = 0.8;

// "" when `need` bytes (all of a point's copies together) fit in kMeasureMemoryShare of
// `available` (or `available` is 0: unknown, not checked); else the reason, naming the point:
// "micro-batch 4 with 2 co-run copies needs about 28.1 GiB, more than 80% of the 23.5 GiB
// available".
std::string measure_memory_shortfall(int64_t mb, int copies, int64_t need, int64_t available);

}  // namespace pw::exec
