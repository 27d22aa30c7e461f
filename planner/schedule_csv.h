// Schedule exchange with PyTorch's torch.distributed.pipelining "compute_only" CSV format.
//
// The format (PipelineScheduleMulti._dump_csv / _load_csv, compute_only): one CSV row per
// pipeline rank, row r = rank r, in that rank's execution order; each cell one action
// "<stage><type><micro-batch>", e.g. "0F1" (forward of stage 0, micro-batch 1); an empty cell
// is an idle time step. Types: F forward, B full backward, I backward w.r.t. the input,
// W backward w.r.t. the weights. The stage-to-rank mapping is implied by which row holds a
// stage's actions (so interleaved "loop" and V-shaped placements are both expressible).
//
// Mapping to the Pipewright op IR (planner/schedule.h): F -> F, B -> BW, I -> B, W -> W,
// stage = virtual stage, rank = device. The CSV has no optimizer step and no schedule kind:
// export drops `step` ops; import appends one `step` to every device of a synchronous kind.
// Ops the compute-only format cannot carry (send, recv, allreduce) and replicated stages
// (Schedule::stage_replicas) are an export error.
// Thread-safe (no shared state).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "planner/schedule.h"

namespace pw::planner {

// One line per device, cells joined by ',' and lines ended by '\n'.
// Throws InputError for send/recv/allreduce ops and replicated stages.
std::string schedule_to_csv(const Schedule& schedule);

// Parses a compute-only CSV. `where` (a file name) prefixes messages. When `kind` is empty it
// is inferred: I/W actions -> zb-h1; a rank holding several stages -> interleaved-1f1b;
// otherwise 1f1b. num_devices = rows, num_stages = largest stage + 1, num_micro_batches =
// largest micro-batch + 1.
// Throws InputError with one line naming the row (1-based, = rank + 1) and column (1-based
// cell) for a malformed action, a communication action, a missing micro-batch, a stage
// placed on two ranks or a repeated action; and for an empty file or a stage no row holds.
// Does not check dependencies: call validate_schedule (planner/schedule_validate.h).
Schedule schedule_from_csv(std::string_view text, const std::string& where,
                           std::optional<ScheduleKind> kind = std::nullopt);

// Reads and parses `file` (InputError naming it if it cannot be read).
Schedule load_schedule_csv(const std::string& file, std::optional<ScheduleKind> kind = std::nullopt);

}  // namespace pw::planner
