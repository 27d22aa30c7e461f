// How the CUDA column reductions cut their rows (exec/cuda/column_chunks.h), without a GPU: the
// chunks cover every row once, fit the grid, and need scratch only when there are several; and
// the kernels' walk (chunk, row-group, step) visits every row of a chunk exactly once.
#include "exec/cuda/column_chunks.h"

#include <doctest/doctest.h>

#include <vector>

namespace pw::exec::cuda {
namespace {

TEST_CASE("column chunks: 256 rows a chunk, more past the grid's limit") {
  CHECK(column_chunks(0) == 0);
  CHECK(column_chunks(1) == 1);
  CHECK(column_chunks(256) == 1);
  CHECK(column_chunks(257) == 2);
  CHECK(column_chunks(8192) == 32);  // GPT-2 small: batch 8 x seq 1024
  CHECK(column_sum_scratch(256, 768) == 0);
  CHECK(column_sum_scratch(8192, 768) == 32 * 768);
  for (int64_t rows : {int64_t{1}, int64_t{255}, int64_t{4097}, 256 * kMaxColumnChunks, 256 * kMaxColumnChunks + 1,
                       int64_t{1} << 31}) {
    CAPTURE(rows);
    const int64_t chunk = column_chunk_rows(rows), chunks = column_chunks(rows);
    CHECK(chunks <= kMaxColumnChunks);
    CHECK(chunks * chunk >= rows);       // every row in a chunk
    CHECK((chunks - 1) * chunk < rows);  // no empty chunk
  }
}

TEST_CASE("column chunks: the kernels' walk visits each row once") {
  constexpr int64_t kGroups = 8;  // norm_kernels.cu's row-groups of a block
  for (int64_t rows : {1, 7, 256, 300, 2049}) {
    CAPTURE(rows);
    std::vector<int> seen(static_cast<size_t>(rows), 0);
    const int64_t chunk = column_chunk_rows(rows);
    for (int64_t y = 0; y < column_chunks(rows); ++y) {  // blockIdx.y
      const int64_t r0 = y * chunk, r1 = rows - r0 < chunk ? rows : r0 + chunk;
      for (int64_t g = 0; g < kGroups; ++g)  // threadIdx.y
        for (int64_t r = r0 + g; r < r1; r += kGroups) ++seen[static_cast<size_t>(r)];
    }
    for (int64_t r = 0; r < rows; ++r) CHECK(seen[static_cast<size_t>(r)] == 1);
  }
}

}  // namespace
}  // namespace pw::exec::cuda
