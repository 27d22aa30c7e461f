// The only place for OpenMP in Pipewright (#pragma omp lives in parallel.cc).
//
// parallel_for(n, fn): splits [0, n) into contiguous chunks, one per thread, and calls
// fn(begin, end) for each non-empty chunk on the OpenMP team. Exceptions thrown by fn are
// caught inside the parallel region; the first one is rethrown on the calling thread after the
// region ends (no exception escapes an OpenMP region). Small n (< min_per_thread * 2) runs
// serially on the caller.
#pragma once

#include <cstdint>
#include <functional>

namespace pw::exec {

using RangeFn = std::function<void(int64_t begin, int64_t end)>;

void parallel_for(int64_t n, const RangeFn& fn, int64_t min_per_thread = 1);

// Like parallel_for, but also passes the chunk index t in [0, num_chunks) where num_chunks is
// returned by parallel_chunks(n, min_per_thread) — for per-thread partial sums.
int parallel_chunks(int64_t n, int64_t min_per_thread = 1);
void parallel_for_chunks(int64_t n, const std::function<void(int t, int64_t begin, int64_t end)>& fn,
                         int64_t min_per_thread = 1);

// OpenMP threads used by parallel_for and by oneDNN (which runs on the same OpenMP runtime).
int max_threads();
void set_num_threads(int n);

}  // namespace pw::exec
