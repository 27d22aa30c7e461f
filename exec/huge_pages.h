// Anonymous mappings on huge-page boundaries, for the host allocator's large buffers
// (exec/tensor.cc).
#pragma once

#include <cstddef>

namespace pw::exec {

inline constexpr size_t kHugePage = size_t{2} << 20;

// `bytes` (a multiple of kHugePage) of private anonymous memory mapped at a kHugePage boundary,
// or nullptr when the system refuses. The kernel usually places a mapping of whole huge pages on
// such a boundary; otherwise a span one huge page longer is mapped and its unaligned head and
// tail are unmapped, so the result holds exactly `bytes` of the data segment. `hint`: where to
// try first (mmap's address hint; tests use it to reach the second path). Free with munmap.
void* map_huge_aligned(size_t bytes, void* hint = nullptr);

}  // namespace pw::exec
