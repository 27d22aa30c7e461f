// device_compare: what `run --compare --device cuda` adds to the CPU comparison
// (exec/runtime/run_compare.h).
//
// Cards. The run puts every worker on a CUDA stream (exec/runtime/device_lanes.h); workers whose
// lanes are on the same GPU share that card, and the simulator, which treats each worker as a
// device of its own, does not see that. For a card with several workers the simulated
// iteration is an optimistic bound; shared_card_bound_ns gives one that accounts for the
// sharing: the iteration can be no shorter than all the compute the card's workers do in it
// (their F, B, W, BW and step ops, summed), so max(simulated, the busiest card's total work).
// The bound assumes the card runs one worker's kernels at a time at the speed it ran them
// alone; kernels that overlap on the card (small ones leave it room) make it pessimistic.
//
// Device memory: per card, the peak of the device allocator over the run (measured) beside the
// predicted peak, the largest sum over the card's workers of their simulated live bytes at one
// instant of the predicted trace (held tensors plus each op's transient, sim/engine.h).
//
// Pure functions over traces and lanes, except reset_device_memory_peaks and
// device_memory_peaks, which use the GPUs (not thread-safe with a run on them).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "exec/optimizer.h"
#include "exec/tensor.h"
#include "models/layer_graph.h"
#include "planner/plan.h"
#include "sim/trace.h"

namespace pw::exec {

// One GPU of a run and the workers (pipeline devices) whose lanes are on it.
struct Card {
  Device gpu;  // stream slot 0
  std::vector<int> workers;
};

// The cards of `lanes` (one lane per worker, all on CUDA devices), in order of first use.
std::vector<Card> cards_of_lanes(const std::vector<Device>& lanes);

// Compute time of `device` in `trace`: the summed durations of its F, B, W, BW and step events
// (not transfers, all-reduces or the data phase).
int64_t busy_ns(const sim::Trace& trace, int device);

// max(iteration_ns, the largest sum of busy_ns over one card's workers). `trace`: one
// simulated iteration.
int64_t shared_card_bound_ns(const sim::Trace& trace, int64_t iteration_ns, const std::vector<Card>& cards);

// The largest sum of the workers' live bytes at one instant of trace.memory (the samples taken
// in order; a worker without samples counts 0).
int64_t card_peak_bytes(const sim::Trace& trace, const std::vector<int>& workers);

// The one-line note for cards with more than one worker ("" when no card is shared).
std::string shared_card_note(const std::vector<Card>& cards);

// What the comparison on GPUs reports beside the CPU comparison's figures.
struct GpuComparison {
  std::string profile_device;                 // the GPU the profile was measured on (device_name)
  std::vector<Card> cards;                    // the run's GPUs and their workers
  std::vector<int64_t> predicted_peak_bytes;  // per card (card_peak_bytes of the prediction)
  std::vector<int64_t> measured_peak_bytes;   // per card: the device allocator's peak over the run
  double shared_iteration_ms = 0;             // shared_card_bound_ns when some card is shared, else 0
  std::string note;                           // shared_card_note
};

// The device allocator's peak of each card's GPU: a new window at the current live bytes, and
// the peak since.
void reset_device_memory_peaks(const std::vector<Card>& cards);
std::vector<int64_t> device_memory_peaks(const std::vector<Card>& cards);

}  // namespace pw::exec
