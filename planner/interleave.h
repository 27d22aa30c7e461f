// Interleaved 1F1B plans (Megatron-LM's virtual pipeline stages) for `plan --schedule
// interleaved-1f1b --chunks v`.
//
// The DP has no closed form for interleaving, so an interleaved plan is derived from the
// synchronous 1F1B plan of the same request: it keeps that plan's p pipeline devices, its
// micro-batch size and count, and re-cuts the model into p * v contiguous virtual stages
// that balance the per-micro-batch compute (F + B + W of the profile's layers, data-loading
// sources included at their cost): device_balanced_cuts below, over the segments between the
// places a stage may begin (models::stage_starts_allowed; every layer without module paths). Virtual stage k runs on
// the devices of the base plan's stage k mod p (Megatron's layout, as planner::make_schedule lays interleaved stages
// out), chunks = v, schedule interleaved-1f1b. Recompute is copied from the base plan's stage k mod p. Per-stage
// predictions are left empty: the caller simulates the plan (the prediction and the memory check, as for zb-h2).
//
// Throws InputError when v < 2, the base plan has replicated stages, a layer order of its own
// (PipeDream antichains), fewer than 2 stages, a micro-batch count not a multiple of p
// (interleaving needs it; the message names the nearest counts that work), or when the model
// has fewer layers than p * v.
#pragma once

#include <cstdint>
#include <vector>

#include "models/profile.h"
#include "planner/plan.h"

namespace pw::planner {

// Boundaries of the contiguous split of `cost` into `parts` non-empty parts that minimizes
// the largest part's sum (ties: each part, from the last, starts as early as it can);
// returns parts + 1 indices from 0 to
// cost.size(). Requires 1 <= parts <= cost.size(), costs >= 0.
std::vector<int> balanced_cuts(const std::vector<int64_t>& cost, int parts);

// The cut interleave_plan uses: balanced_cuts(cost, p * chunks), then boundaries moved one
// layer at a time while that lowers (the largest device load, virtual stage k on device
// k mod p; then the largest virtual stage), compared lexicographically: a device's load is
// what bounds 1F1B's steady state, and a heavy layer (an LM head) otherwise piles onto one
// device. A local optimum, not a proven one.
std::vector<int> device_balanced_cuts(const std::vector<int64_t>& cost, int p, int chunks);

Plan interleave_plan(const Plan& base, const models::Profile& profile, int chunks);

}  // namespace pw::planner
