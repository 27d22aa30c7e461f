// The zoo sizing flags shared by `model`, `train` and `run`: --layers --d-model --heads --ffn
// --seq --vocab --depth --width --image --width-divisor --classes --tied-embeddings (not
// --batch: its meaning differs per command). Each command has its own defaults (`model` the
// zoo's, `train`/`run` small sizes that train in seconds on 2 cores).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "models/zoo.h"

namespace pw::tools {

// Sizes that train in seconds on 2 cores, the one default of `train` and `run` (the zoo's
// defaults, GPT-2 small and the papers' networks, are those of the analytic commands): gpt 4
// blocks, d_model 64, 4 heads, ffn 4 * d_model (256), seq 64, byte vocabulary; mlp 4 layers of 256; conv
// nets at 32 px, 1/8 of the channels, 10 classes.
models::ZooOptions small_zoo_options();
// Their samples per step: gpt 16, mlp 32, others 8.
int64_t small_zoo_batch(const std::string& family);

// Registers the flags on `sub`, bound to `z`; --help shows the values in `defaults`.
void add_zoo_size_options(CLI::App* sub, models::ZooOptions& z, const models::ZooOptions& defaults);

// `given` with every sizing flag the user did not pass on `sub` taken from `defaults`.
models::ZooOptions with_unset_sizes_from(const models::ZooOptions& given, const models::ZooOptions& defaults,
                                         const CLI::App& sub);

// The first sizing flag given on `sub`, or nullptr (to reject sizes given with a model file).
const char* first_size_flag_given(const CLI::App& sub);

// InputError("<flag>: sizes <families>, not <family>") for a sizing flag given on `sub` that
// the zoo family `family` does not use (e.g. --depth with gpt): it would be ignored.
void check_size_flags_for_family(const std::string& family, const CLI::App& sub);

}  // namespace pw::tools
