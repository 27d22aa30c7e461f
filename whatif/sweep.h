// `whatif sweep`: a grid over what-if settings, evaluated in parallel.
//
// Spec file (JSON):
//   {"format": "pipewright.sweep/1",
//    "fixed": {SETTING: VALUE, ...},          optional; settings shared by every point
//    "axes":  {SETTING: [VALUE, ...], ...}}   required; at least one axis
// SETTING is any name of whatif_setting_names() (whatif/config.h), e.g. layers, d_model,
// devices, device, interconnect, batch, micro_batches, schedule, recompute. A setting may not
// be both fixed and an axis; an axis must have at least one value and no duplicates. Values
// are checked when the spec is read (types, ranges, catalog names), with the JSON path.
//
// Grid order: axes in the canonical setting order (not the file's), the last axis varying
// fastest. The grid may hold at most kMaxSweepPoints points.
#pragma once

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "models/json_util.h"
#include "whatif/config.h"
#include "whatif/runner.h"
#include "whatif/table.h"

namespace pw::whatif {

inline constexpr size_t kMaxSweepPoints = 10'000'000;

struct SweepAxis {
  std::string name;
  std::vector<Json> values;
};

struct SweepSpec {
  Json fixed = Json::object();
  std::vector<SweepAxis> axes;  // canonical setting order
  size_t num_points() const;
};

SweepSpec sweep_spec_from_json(const Json& j);
// Errors are prefixed with the file name.
SweepSpec load_sweep_spec(const std::string& file);
Json to_json(const SweepSpec& s);

struct SweepPoint {
  size_t index = 0;
  WhatifConfig config;  // fixed settings + this point's axis values
  Json axis_values;     // {axis name: value} for this point
};

// Every point, in grid order. Throws InputError for a point whose combination is invalid
// (e.g. d_model not divisible by heads), naming the point and its axis values.
std::vector<SweepPoint> expand_sweep(const SweepSpec& s);

// Evaluates one configuration; returns a JSON object holding (at least) the result columns.
// Called concurrently from several threads: must not share mutable state without locking.
// An InputError aborts the sweep; a configuration that does not fit is a normal row.
using SweepEvaluator = std::function<Json(const WhatifConfig&)>;

struct SweepOptions {
  int threads = 0;                            // 0 = available_threads()
  ProgressMode progress = ProgressMode::off;  // progress on progress_out (whatif/runner.h)
  std::FILE* progress_out = stderr;
};

// Table columns: "point", the axis names, then result_columns; one row per point in grid
// order (independent of the thread count).
Table run_sweep(const SweepSpec& s, const std::vector<std::string>& result_columns, const SweepEvaluator& evaluate,
                const SweepOptions& options = {});

// {"format": "pipewright.sweep-result/1", "spec": ..., "columns": [...], "rows": [{...}]}
Json sweep_result_json(const SweepSpec& s, const Table& t);

}  // namespace pw::whatif
