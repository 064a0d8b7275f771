// proofline-gpu emu/runtime.h: a host emulation of the parts of the CUDA device runtime that the
// kernels of cuda/ use, so that the same sources compile with g++ and run on the CPU in tests.
//
// Tests only (src/emu.rs builds each kernel module with this header forced in front of it, as a
// shared library, and runs the crate's real host code on it). Nothing here is timed or shipped.
//
// Execution model: a launch runs its blocks one after another; the threads of a block are
// fibers (ucontext) on the calling OS thread, run in turn until each reaches a barrier
// (__syncthreads, __syncwarp, a warp shuffle or vote) or returns; a block barrier releases when
// every thread of the block that has not returned waits at it, a warp barrier when every such
// lane of the warp does. A barrier that can never release (threads of one block waiting at
// different barriers) aborts the process with a message: in CUDA it would hang or be undefined.
// `__shared__` variables are function-local statics: one copy, used by one block at a time.
// Atomics are plain read-modify-writes (one OS thread). Memory given to kernels is host memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>
#include <sys/mman.h>
#include <ucontext.h>

// ---- qualifiers -----------------------------------------------------------------------------
#define __device__
#define __host__
#define __global__
#define __forceinline__ inline
#define __noinline__
#define __constant__ static
#define __shared__ static
#define __restrict__ __restrict
#define __launch_bounds__(...)

struct uint2 {
    unsigned x, y;
};
static inline uint2 make_uint2(unsigned x, unsigned y) { return uint2{x, y}; }
struct uint4 {
    unsigned x, y, z, w;
};
static inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) {
    return uint4{x, y, z, w};
}
struct dim3 {
    unsigned x, y, z;
};

// ---- integer intrinsics ---------------------------------------------------------------------
static inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
static inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline unsigned __brev(unsigned x) {
    unsigned r = 0;
    for (int i = 0; i < 32; i++) r |= ((x >> i) & 1u) << (31 - i);
    return r;
}
static inline unsigned __umulhi(unsigned a, unsigned b) {
    return (unsigned)(((unsigned long long)a * b) >> 32);
}
static inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
static inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
static inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
static inline unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
static inline unsigned long min(unsigned long a, unsigned long b) { return a < b ? a : b; }
static inline unsigned long max(unsigned long a, unsigned long b) { return a > b ? a : b; }
static inline int min(int a, int b) { return a < b ? a : b; }
static inline int max(int a, int b) { return a > b ? a : b; }

// ---- atomics (one OS thread runs every fiber: plain read-modify-writes) ----------------------
static inline unsigned atomicAdd(unsigned* p, unsigned v) {
    unsigned o = *p;
    *p = o + v;
    return o;
}
static inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
    unsigned long long o = *p;
    *p = o + v;
    return o;
}
static inline unsigned atomicMax(unsigned* p, unsigned v) {
    unsigned o = *p;
    if (v > o) *p = v;
    return o;
}
static inline unsigned atomicMin(unsigned* p, unsigned v) {
    unsigned o = *p;
    if (v < o) *p = v;
    return o;
}
static inline unsigned atomicOr(unsigned* p, unsigned v) {
    unsigned o = *p;
    *p = o | v;
    return o;
}
static inline unsigned atomicExch(unsigned* p, unsigned v) {
    unsigned o = *p;
    *p = v;
    return o;
}
static inline unsigned atomicCAS(unsigned* p, unsigned cmp, unsigned v) {
    unsigned o = *p;
    if (o == cmp) *p = v;
    return o;
}
static inline void __threadfence() {}
static inline void __threadfence_block() {}

// ---- the grid runner ------------------------------------------------------------------------
namespace emu {

enum class State { Ready, BlockBarrier, WarpBarrier, Done };

struct Fiber {
    ucontext_t ctx;
    void* stack = nullptr;
    State state = State::Ready;
};

constexpr size_t STACK_BYTES = 256 * 1024;

struct Runner {
    ucontext_t main_ctx;
    std::vector<Fiber> fibers;
    void (*body)(const void*) = nullptr;
    const void* args = nullptr;
    unsigned current = 0;
    unsigned block_threads = 0;
    // warp exchange slots for shuffles and votes
    unsigned long long xchg[1024];
    const char* kernel = "";
};

static Runner g_run;
static dim3 threadIdx{0, 0, 0}, blockIdx{0, 0, 0}, blockDim{1, 1, 1}, gridDim{1, 1, 1};

static void fiber_entry() {
    g_run.body(g_run.args);
    g_run.fibers[g_run.current].state = State::Done;
    swapcontext(&g_run.fibers[g_run.current].ctx, &g_run.main_ctx);
}

static inline void wait_at(State s) {
    Fiber& f = g_run.fibers[g_run.current];
    f.state = s;
    swapcontext(&f.ctx, &g_run.main_ctx);
}

[[noreturn]] static void deadlock() {
    std::fprintf(stderr, "emu: barrier deadlock in kernel %s, block %u:", g_run.kernel, blockIdx.x);
    for (unsigned t = 0; t < g_run.block_threads; t++) {
        State s = g_run.fibers[t].state;
        std::fprintf(stderr, " %u:%c", t,
                     s == State::Done ? 'D' : s == State::BlockBarrier ? 'B' : s == State::WarpBarrier ? 'W' : 'R');
    }
    std::fprintf(stderr, "\n");
    std::abort();
}

// Runs `body(args)` for every thread of every block.
static void run(const char* kernel, unsigned grid, unsigned block, void (*body)(const void*),
                const void* args) {
    if (block == 0 || block > 1024) {
        std::fprintf(stderr, "emu: kernel %s launched with %u threads per block\n", kernel, block);
        std::abort();
    }
    g_run.kernel = kernel;
    g_run.body = body;
    g_run.args = args;
    g_run.block_threads = block;
    if (g_run.fibers.size() < block) g_run.fibers.resize(block);
    for (unsigned t = 0; t < block; t++) {
        Fiber& f = g_run.fibers[t];
        if (f.stack == nullptr) {
            f.stack = mmap(nullptr, STACK_BYTES, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
            if (f.stack == MAP_FAILED) {
                std::fprintf(stderr, "emu: cannot map a fiber stack\n");
                std::abort();
            }
        }
    }
    gridDim = dim3{grid, 1, 1};
    blockDim = dim3{block, 1, 1};
    const unsigned warps = (block + 31) / 32;
    for (unsigned b = 0; b < grid; b++) {
        blockIdx = dim3{b, 0, 0};
        for (unsigned t = 0; t < block; t++) {
            Fiber& f = g_run.fibers[t];
            getcontext(&f.ctx);
            f.ctx.uc_stack.ss_sp = f.stack;
            f.ctx.uc_stack.ss_size = STACK_BYTES;
            f.ctx.uc_link = nullptr;
            makecontext(&f.ctx, fiber_entry, 0);
            f.state = State::Ready;
        }
        for (;;) {
            for (unsigned t = 0; t < block; t++) {
                if (g_run.fibers[t].state != State::Ready) continue;
                g_run.current = t;
                threadIdx = dim3{t, 0, 0};
                swapcontext(&g_run.main_ctx, &g_run.fibers[t].ctx);
            }
            // every thread is done or waits at a barrier: release what can be released
            bool all_done = true, released = false;
            for (unsigned w = 0; w < warps; w++) {
                bool waiting = false, other = false;
                for (unsigned t = w * 32; t < block && t < w * 32 + 32; t++) {
                    State s = g_run.fibers[t].state;
                    if (s == State::WarpBarrier) waiting = true;
                    else if (s != State::Done) other = true;
                }
                if (waiting && !other) {
                    for (unsigned t = w * 32; t < block && t < w * 32 + 32; t++)
                        if (g_run.fibers[t].state == State::WarpBarrier) g_run.fibers[t].state = State::Ready;
                    released = true;
                }
            }
            if (!released) {
                bool block_waiting = false, other = false;
                for (unsigned t = 0; t < block; t++) {
                    State s = g_run.fibers[t].state;
                    if (s == State::BlockBarrier) block_waiting = true;
                    else if (s != State::Done) other = true;
                }
                if (block_waiting && !other) {
                    for (unsigned t = 0; t < block; t++)
                        if (g_run.fibers[t].state == State::BlockBarrier) g_run.fibers[t].state = State::Ready;
                    released = true;
                }
            }
            for (unsigned t = 0; t < block; t++)
                if (g_run.fibers[t].state != State::Done) all_done = false;
            if (all_done) break;
            if (!released) deadlock();
        }
    }
}

}  // namespace emu

using emu::blockDim;
using emu::blockIdx;
using emu::gridDim;
using emu::threadIdx;

static inline void __syncthreads() { emu::wait_at(emu::State::BlockBarrier); }
static inline void __syncwarp(unsigned = 0xffffffffu) { emu::wait_at(emu::State::WarpBarrier); }

// Warp exchange: every live lane of the warp deposits a value, the lanes wait for each other,
// each reads what it needs, and they wait again (so that no slot is overwritten early). Slots of
// lanes that returned read as 0.
static inline void emu_warp_deposit(unsigned long long v) {
    const unsigned base = threadIdx.x & ~31u;
    for (unsigned t = base; t < base + 32; t++)
        if (t >= emu::g_run.block_threads || emu::g_run.fibers[t].state == emu::State::Done)
            emu::g_run.xchg[t] = 0;
    emu::g_run.xchg[threadIdx.x] = v;
    __syncwarp();
}
static inline unsigned long long emu_warp_slot(unsigned lane) {
    return emu::g_run.xchg[(threadIdx.x & ~31u) + (lane & 31)];
}
static inline unsigned __shfl_sync(unsigned, unsigned v, int src) {
    emu_warp_deposit(v);
    unsigned r = (unsigned)emu_warp_slot((unsigned)src);
    __syncwarp();
    return r;
}
static inline unsigned __shfl_up_sync(unsigned, unsigned v, unsigned d) {
    const unsigned lane = threadIdx.x & 31;
    emu_warp_deposit(v);
    unsigned r = lane >= d ? (unsigned)emu_warp_slot(lane - d) : v;
    __syncwarp();
    return r;
}
static inline unsigned __shfl_down_sync(unsigned, unsigned v, unsigned d) {
    const unsigned lane = threadIdx.x & 31;
    emu_warp_deposit(v);
    unsigned r = lane + d < 32 ? (unsigned)emu_warp_slot(lane + d) : v;
    __syncwarp();
    return r;
}
static inline unsigned __shfl_xor_sync(unsigned, unsigned v, int m) {
    emu_warp_deposit(v);
    unsigned r = (unsigned)emu_warp_slot((threadIdx.x & 31) ^ (unsigned)m);
    __syncwarp();
    return r;
}
static inline unsigned __ballot_sync(unsigned, int pred) {
    emu_warp_deposit(pred ? 1 : 0);
    unsigned mask = 0;
    for (unsigned l = 0; l < 32; l++)
        if (emu_warp_slot(l)) mask |= 1u << l;
    __syncwarp();
    return mask;
}
static inline unsigned __reduce_max_sync(unsigned, unsigned v) {
    emu_warp_deposit(v);
    unsigned m = 0;
    for (unsigned l = 0; l < 32; l++) m = max(m, (unsigned)emu_warp_slot(l));
    __syncwarp();
    return m;
}
static inline unsigned __reduce_add_sync(unsigned, unsigned v) {
    emu_warp_deposit(v);
    unsigned m = 0;
    for (unsigned l = 0; l < 32; l++) m += (unsigned)emu_warp_slot(l);
    __syncwarp();
    return m;
}
static inline unsigned __activemask() { return 0xffffffffu; }

// The entry point of one kernel module's shared library: runs `kernel` over `grid` blocks of
// `block` threads with the argument struct at `args`. Returns 0, or -1 for an unknown kernel.
// Launches of one module are serialised (its `__shared__` statics and the runner are global).
#define EMU_EXPORT extern "C" __attribute__((visibility("default")))
