// cuBLASLt, opened at run time on first use instead of linked.
//
// Why: loading libcublasLt costs a process about 94 MB of anonymous memory (static data its
// initialisers write), 59 MB of file pages and 90 ms before main (bench/RESULTS.md, "the CUDA
// libraries on demand"), whether or not the process ever drives a GPU. Linked, every pipewright
// command, every MPI rank and every test process paid that on any machine with CUDA, and it
// counted against ulimit -d and a container's memory limit. The CUDA runtime is linked
// statically (it opens the driver itself, on its first call), so a binary built with the backend
// needs no CUDA library to start, and cuBLASLt only once a CUDA device is used.
//
// The backend calls cuBLASLt only through cublaslt(): a table of the functions it uses, each
// typed from <cublasLt.h>'s own declaration.
//
// Thread-safety: every function is thread-safe; the process-wide library is opened once and
// never closed.
#pragma once

#include <cublasLt.h>

#include <string>
#include <vector>

namespace pw::exec::cuda {

// The cuBLASLt functions the backend calls, by their names after "cublasLt".
// clang-format off
#define PW_CUBLASLT_FUNCTIONS(X) \
  X(Create) X(Destroy) X(GetVersion) \
  X(Matmul) X(MatmulAlgoGetHeuristic) \
  X(MatmulDescCreate) X(MatmulDescDestroy) X(MatmulDescSetAttribute) \
  X(MatmulPreferenceCreate) X(MatmulPreferenceDestroy) X(MatmulPreferenceSetAttribute) \
  X(MatrixLayoutCreate) X(MatrixLayoutDestroy) X(MatrixLayoutSetAttribute)
// clang-format on

// Each field is the function cublasLt<field>, resolved from one opened library.
struct CublasLt {
#define PW_CUBLASLT_FIELD(name) decltype(&::cublasLt##name) name = nullptr;
  PW_CUBLASLT_FUNCTIONS(PW_CUBLASLT_FIELD)
#undef PW_CUBLASLT_FIELD
  std::string path;  // the candidate that was opened
};

// An attempt to open cuBLASLt: `api` with every function resolved, or `error` ("" on success)
// saying, for each candidate tried, why it was not used (dlopen's message, the first function it
// lacks, or a version older than the header's CUBLAS_VERSION). A candidate that opens but is not
// used is closed again.
struct CublasLtOpen {
  CublasLt api;
  std::string error;
};
CublasLtOpen open_cublaslt(const std::vector<std::string>& candidates);

// Where the process looks, in order: the soname of the toolkit built against
// ("libcublasLt.so.13") in the toolkit's library directory of the build (what the linked binary's
// RUNPATH found), then the soname alone (LD_LIBRARY_PATH, the loader's cache: a binary moved to
// another machine).
std::vector<std::string> cublaslt_candidates();

// Opens the process-wide library from cublaslt_candidates() on the first call; "" when it is
// open, else the reason it could not be. Never throws.
const std::string& cublaslt_unavailable_reason();

// The process-wide functions, opening the library if need be; throws std::runtime_error
// ("cuBLASLt: ...", with the reason) when it cannot be opened.
const CublasLt& cublaslt();

}  // namespace pw::exec::cuda
