// proofline cuda/fp_inv.cuh: a variable-time inversion in Fp by the binary extended Euclidean
// algorithm, for the batched inversions of the batch-affine rounds (msm_affine.cuh): there one
// thread inverts while the GPU waits, so its latency is what counts. Fermat's a^(p - 2) is ~475
// dependent Montgomery multiplications; this is ~1,100 steps of 12-limb shifts, subtractions and
// comparisons, no multiplication. Variable time: for public values only (MSM buckets are).
//
// Invariants, for A the Montgomery representation of x (A = x R mod p): x1 A = u RR and
// x2 A = v RR (mod p), from u = A, v = p, x1 = RR = R^2 mod p, x2 = 0; halving u halves x1 mod
// p, u -= v subtracts x2 from x1. When u = 1, x1 = RR / A = x^-1 R: the Montgomery
// representation of x^-1.
#pragma once
#include "fp.cuh"

// R^2 mod p, R = 2^384
__device__ __constant__ u32 FP_RR[12] = {0x1c341746, 0xf4df1f34, 0x09d104f1, 0x0a76e6a6,
                                         0x4c95b6d5, 0x8de5476c, 0x939d83c0, 0x67eb88a9,
                                         0xb519952d, 0x9a793e85, 0x92cae3aa, 0x11988fe5};

namespace fp_binary {
constexpr int N = 12;

DEVI bool is_one(const u32* a) {
    u32 acc = a[0] ^ 1u;
#pragma unroll
    for (int i = 1; i < N; i++) acc |= a[i];
    return acc == 0;
}
// a >= b
DEVI bool geq(const u32* a, const u32* b) {
#pragma unroll
    for (int i = N - 1; i >= 0; i--)
        if (a[i] != b[i]) return a[i] > b[i];
    return true;
}
// a -= b (a >= b)
DEVI void sub(u32* a, const u32* b) {
    u64 borrow = 0;
#pragma unroll
    for (int i = 0; i < N; i++) {
        const u64 d = (u64)a[i] - b[i] - borrow;
        a[i] = (u32)d;
        borrow = (d >> 32) & 1;
    }
}
// a += b (no carry out: both below 2^382)
DEVI void add(u32* a, const u32* b) {
    u64 carry = 0;
#pragma unroll
    for (int i = 0; i < N; i++) {
        const u64 s = (u64)a[i] + b[i] + carry;
        a[i] = (u32)s;
        carry = s >> 32;
    }
}
DEVI void shr1(u32* a) {
#pragma unroll
    for (int i = 0; i < N - 1; i++) a[i] = (a[i] >> 1) | (a[i + 1] << 31);
    a[N - 1] >>= 1;
}
// x / 2 mod p, x < p
DEVI void halve(u32* x) {
    if (x[0] & 1) add(x, FP_MOD);
    shr1(x);
}
// x = x - y mod p, x, y < p
DEVI void sub_mod(u32* x, const u32* y) {
    if (!geq(x, y)) add(x, FP_MOD);
    sub(x, y);
}
}  // namespace fp_binary

// a^-1 (0 for 0), Montgomery form in and out
DEVI fp_t fp_inv_vartime(const fp_t& a) {
    using namespace fp_binary;
    if (a.is_zero()) return a;
    u32 u[N], v[N], x1[N], x2[N];
#pragma unroll
    for (int i = 0; i < N; i++) {
        u[i] = a.v[i];
        v[i] = FP_MOD[i];
        x1[i] = FP_RR[i];
        x2[i] = 0;
    }
    while (!is_one(u) && !is_one(v)) {
        while ((u[0] & 1) == 0) {
            shr1(u);
            halve(x1);
        }
        while ((v[0] & 1) == 0) {
            shr1(v);
            halve(x2);
        }
        if (geq(u, v)) {
            sub(u, v);
            sub_mod(x1, x2);
        } else {
            sub(v, u);
            sub_mod(x2, x1);
        }
    }
    fp_t r;
    const u32* x = is_one(u) ? x1 : x2;
#pragma unroll
    for (int i = 0; i < N; i++) r.v[i] = x[i];
    return r;
}
