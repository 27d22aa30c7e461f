// replica_allreduce: the weight-gradient all-reduce among the replicas of one pipeline stage,
// written against the Transport interface only, so the same code runs on the in-process
// transport (replicas as threads) and on MPI (one rank per replica).
//
// Algorithm: reduce to replica 0, then broadcast. Every replica i > 0 sends a copy of its
// gradients to replica 0 (tag {iteration, stage, round, reduce}); replica 0 adds them into its
// own in replica order 1, 2, ... (a fixed order: the result does not depend on arrival), divides
// by the replica count when `average`, and sends a copy of the result to every other replica
// (tag {iteration, stage, round, broadcast}), which copies it over its gradients. Afterwards all
// replicas hold bit-identical gradients, so the same optimizer step keeps their weights
// bit-identical. Tags are unique: (source, tag) differs per replica, and `round` numbers the
// all-reduces of one stage within an iteration (0 for the synchronous flush; for PipeDream's
// per-backward all-reduce, the k-th backward of every replica is round k).
//
// Requirements: every replica calls this with the same tag, the same number of gradient
// tensors and equal shapes (checked: PW_CHECK on a mismatch). `wait` blocks until a request
// completes (the worker's loop: it progresses the sends in `pending` and enforces the deadline).
// Sends this call starts that are not complete yet are appended to `pending` (the caller's list
// of outstanding sends, progressed by `wait` and flushed at the end of the iteration).
// Thread-safety: as the Transport (one thread per endpoint).
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "exec/transport/transport.h"

namespace pw::exec {

using RequestWait = std::function<void(Request& req, const MessageTag& tag, int peer)>;

void replica_allreduce(Transport& transport, int device, const std::vector<int>& replica_devices, int iteration,
                       int stage, int round, const std::vector<Tensor*>& grads, bool average, const RequestWait& wait,
                       std::vector<std::unique_ptr<Request>>& pending);

}  // namespace pw::exec
