#include "exec/huge_pages.h"

#include <cstdint>

#include <sys/mman.h>

namespace pw::exec {

void* map_huge_aligned(size_t bytes, void* hint) {
  constexpr int kProt = PROT_READ | PROT_WRITE, kFlags = MAP_PRIVATE | MAP_ANONYMOUS;
  void* p = ::mmap(hint, bytes, kProt, kFlags, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  if (reinterpret_cast<uintptr_t>(p) % kHugePage == 0) return p;
  ::munmap(p, bytes);
  const size_t span = bytes + kHugePage;
  void* raw = ::mmap(nullptr, span, kProt, kFlags, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto base = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (base + kHugePage - 1) / kHugePage * kHugePage;
  const size_t head = aligned - base, tail = span - head - bytes;
  if (head > 0) ::munmap(raw, head);
  if (tail > 0) ::munmap(reinterpret_cast<void*>(aligned + bytes), tail);
  return reinterpret_cast<void*>(aligned);
}

}  // namespace pw::exec
