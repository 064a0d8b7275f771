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
