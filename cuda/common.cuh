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

// Asynchronous copies of 16 bytes from global to shared memory (cp.async, sm_80 on; cached in
// L1 too, so that the copies of one 32-byte sector after the first hit it), committed in groups: what a thread starts copying for a later step stays in flight
// while it works on the current one, and `async_wait<N>` waits until at most N of its groups
// are pending. Both addresses 16-byte aligned. Off the device (host emulation) the copy is a
// plain one, and commit and wait do nothing.
DEVI void async_copy16(uint4* smem, const void* gmem) {
#ifdef __CUDA_ARCH__
    const u32 s = (u32)__cvta_generic_to_shared(smem);
    ASM("cp.async.ca.shared.global [%0], [%1], 16;" ::"r"(s), "l"(gmem) : "memory");
#else
    *smem = *reinterpret_cast<const uint4*>(gmem);
#endif
}
DEVI void async_commit() {
#ifdef __CUDA_ARCH__
    ASM("cp.async.commit_group;" ::: "memory");
#endif
}
template <u32 N>
DEVI void async_wait() {
#ifdef __CUDA_ARCH__
    ASM("cp.async.wait_group %0;" ::"n"(N) : "memory");
#endif
}
