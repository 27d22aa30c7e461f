// PW_VECTOR_CLONES: compile a hot row kernel for AVX-512, AVX2 and baseline x86-64 with runtime
// dispatch (GCC target_clones).
//
// The dispatch is an ifunc resolver that the dynamic loader runs while it relocates the program,
// before ThreadSanitizer's runtime is initialized; an instrumented resolver then crashes at
// start-up. ThreadSanitizer builds (scripts/sanitize.sh tsan) therefore compile the baseline
// version only.
#pragma once

#if defined(__SANITIZE_THREAD__)
#define PW_VECTOR_CLONES
#else
#define PW_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
