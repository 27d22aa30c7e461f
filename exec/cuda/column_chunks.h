// How the CUDA column reductions (add_column_sums, layer_norm_backward_weight in kernels.h) cut
// their rows: chunks of column_chunk_rows(rows) rows, column_chunks(rows) of them, each summed
// by its own blocks, then the chunks' sums added in order. The order is a function of the shape
// alone, so results are deterministic. Host code (the launches), shared with the host tests.
#pragma once

#include <algorithm>
#include <cstdint>

namespace pw::exec::cuda {

// The grid's y dimension holds the chunks: at most this many.
inline constexpr int64_t kMaxColumnChunks = 65535;

// 256 rows a chunk (32 per thread of a block's 8 row-groups), more only where 256 would need
// more than kMaxColumnChunks chunks.
inline int64_t column_chunk_rows(int64_t rows) {
  return std::max<int64_t>(256, (rows + kMaxColumnChunks - 1) / kMaxColumnChunks);
}

inline int64_t column_chunks(int64_t rows) {
  if (rows <= 0) return 0;
  const int64_t chunk = column_chunk_rows(rows);
  return (rows + chunk - 1) / chunk;
}

// Floats of device scratch a column reduction needs per output: the chunks' sums, none with one chunk.
inline int64_t column_sum_scratch(int64_t rows, int64_t cols) {
  const int64_t chunks = column_chunks(rows);
  return chunks > 1 ? chunks * cols : 0;
}

}  // namespace pw::exec::cuda
