// proofline cuda/common.cuh: basic types and macros shared by every kernel file.
//
// No system headers are included so that the
// sources compile with the PyPI nvcc without a full CUDA toolkit install.
#pragma once

typedef unsigned int u32;
typedef unsigned long long u64;
typedef int i32;

#define DEVI __device__ __forceinline__
#define ASM asm volatile

// The dynamic shared memory of a kernel, as an array `name` of `type` (the launch sets its
// size). The host emulation of the tests defines it first, as a buffer of its runtime.
#ifndef DYNAMIC_SHARED
#define DYNAMIC_SHARED(type, name) extern __shared__ type name[]
#endif
