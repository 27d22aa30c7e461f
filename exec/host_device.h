// PW_HOST_DEVICE marks a function both the host and CUDA kernels call (the optimizer's update
// rules, the calibration's operand words): __host__ __device__ under nvcc, nothing elsewhere, so
// the host build and its tests need no CUDA.
#pragma once

#if defined(__CUDACC__)
#define PW_HOST_DEVICE __host__ __device__
#else
#define PW_HOST_DEVICE
#endif
