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

// A kernel's dynamic shared memory, `count` elements of T: the launch asks for the bytes that
// abi.rs's `DYNAMIC_SHARED` gives the kernel, and the loader raises the kernel's limit to them.
// The host emulation (g++) gives it a static array of that size instead.
#ifdef __CUDACC__
#define DYNAMIC_SHARED(T, name, count) extern __shared__ __align__(16) T name[]
#else
#define DYNAMIC_SHARED(T, name, count) static T name[count]
#endif

// Asynchronous copies of 16 bytes from global to shared memory (cp.async, sm_80 on; cached in
// L2 only), committed in groups: what a thread starts copying for a later step stays in flight
// while it works on the current one, and `async_wait<N>` waits until at most N of its groups
// are pending; the copies of the groups waited for are then visible to the thread that made
// them (a barrier makes them visible to the block). Both addresses 16-byte aligned. Off the
// device (host emulation) the copy is a plain one, and commit and wait do nothing.
template <class V>
DEVI void async_copy16(V* smem, const V* gmem) {
    static_assert(sizeof(V) == 16, "16-byte copies");
#ifdef __CUDA_ARCH__
    const u32 s = (u32)__cvta_generic_to_shared(smem);
    ASM("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(gmem) : "memory");
#else
    *smem = *gmem;
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
