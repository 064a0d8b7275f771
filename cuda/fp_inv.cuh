// proofline cuda/fp_inv.cuh: variable-time inversions in Fp for the batched inversions of the
// batch-affine rounds (msm_affine.cuh): there one thread inverts while the GPU waits, so its
// latency is what counts. Fermat's a^(p - 2) is ~475 dependent Montgomery multiplications.
// Variable time: for public values only (MSM buckets are).
//
// fp_inv_vartime: the binary GCD in batches (Pornin, "Optimized Binary GCD for Modular
// Inversion", 2020), falling back to the plain binary extended Euclidean algorithm (fp_binary)
// should the batches not finish. The plain algorithm takes ~1,100 steps, each a shift,
// subtraction or comparison of 12-limb values. The batched one makes its steps' decisions on
// 64-bit approximations of a and b (their low 30 bits exact, the top 34 bits of the longer one),
// 30 steps a batch, gathering them into a matrix of small signed factors that it then applies
// to the 12-limb values once: 27 batches, each 30 cheap 64-bit steps and four 12-limb linear
// combinations.
//
// The plain algorithm's invariants, for A the Montgomery representation of x (A = x R mod p):
// x1 A = u RR and x2 A = v RR (mod p), from u = A, v = p, x1 = RR = R^2 mod p, x2 = 0; halving u
// halves x1 mod p, u -= v subtracts x2 from x1. When u = 1, x1 = RR / A = x^-1 R: the Montgomery
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

// a^-1 (0 for 0) by the plain binary algorithm, Montgomery form in and out
DEVI fp_t fp_inv_binary(const fp_t& a) {
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

namespace fp_batched {
constexpr int N = 12;
// binary-GCD steps per batch: the factors of a batch stay within 2^STEPS in absolute value (per
// row, |f| + |g| <= 2^STEPS), so a factor times a limb plus the other's fits a signed 64-bit sum
constexpr int STEPS = 30;
// 27 x 30 = 810 steps; the binary GCD of two values below 2^381 takes at most 2 x 381 - 1 = 761
constexpr int BATCHES = 27;

typedef long long i64;

DEVI int bit_len(const u32* a) {
    for (int i = N - 1; i >= 0; i--)
        if (a[i] != 0) return 32 * i + 32 - __clz((int)a[i]);
    return 0;
}

// floor(a / 2^s) mod 2^64
DEVI u64 bits_from(const u32* a, int s) {
    const int w = s >> 5, b = s & 31;
    const u64 lo = (w < N ? a[w] : 0u) | ((u64)(w + 1 < N ? a[w + 1] : 0u) << 32);
    const u64 hi = w + 2 < N ? a[w + 2] : 0u;
    return b == 0 ? lo : (lo >> b) | (hi << (64 - b));
}

// a's 64-bit approximation at the length n of the longer of a and b: the top 34 bits of n and
// the low 30 bits (a itself when n <= 64)
DEVI u64 approx(const u32* a, int n) {
    if (n <= 64) return (u64)a[0] | ((u64)a[1] << 32);
    return (bits_from(a, n - 34) << STEPS) | (a[0] & ((1u << STEPS) - 1));
}

// t = f a + g b as a signed 13-limb (two's complement) value, for |f| + |g| <= 2^STEPS and a, b
// below 2^384; returns whether it is negative
DEVI bool combine(u32* t, const u32* a, const u32* b, i64 f, i64 g) {
    i64 carry = 0;
#pragma unroll
    for (int i = 0; i < N; i++) {
        const i64 acc = f * (i64)a[i] + g * (i64)b[i] + carry;
        t[i] = (u32)acc;
        carry = acc >> 32;
    }
    t[N] = (u32)carry;
    return carry < 0;
}

// r = (f a + g b) / 2^STEPS, made non-negative: returns whether it was negative (r is then
// its absolute value). The low STEPS bits of f a + g b are zero by the batch's construction.
DEVI bool combine_shift(u32* r, const u32* a, const u32* b, i64 f, i64 g) {
    u32 t[N + 1];
    const bool neg = combine(t, a, b, f, g);
    if (neg) {
        u64 c = 1;
#pragma unroll
        for (int i = 0; i <= N; i++) {
            const u64 x = (u64)(~t[i]) + c;
            t[i] = (u32)x;
            c = x >> 32;
        }
    }
#pragma unroll
    for (int i = 0; i < N; i++) r[i] = (t[i] >> STEPS) | (t[i + 1] << (32 - STEPS));
    return neg;
}

// r = (f u + g v) / 2^32 mod p, for u, v < p: the signed sum (below 2^30 p in absolute value),
// plus 2^32 p when negative, then one Montgomery step (below 2 p) and a conditional subtraction
DEVI void combine_mod(u32* r, const u32* u, const u32* v, i64 f, i64 g) {
    u32 t[N + 1];
    if (combine(t, u, v, f, g)) {
        u64 c = 0;
#pragma unroll
        for (int i = 0; i < N; i++) {
            const u64 x = (u64)t[i + 1] + FP_MOD[i] + c;
            t[i + 1] = (u32)x;
            c = x >> 32;
        }
    }
    const u32 m = t[0] * FP_M0;
    u64 c = ((u64)m * FP_MOD[0] + t[0]) >> 32;
#pragma unroll
    for (int i = 1; i < N; i++) {
        const u64 x = (u64)m * FP_MOD[i] + t[i] + c;
        r[i - 1] = (u32)x;
        c = x >> 32;
    }
    r[N - 1] = (u32)((u64)t[N] + c);
    if (fp_binary::geq(r, FP_MOD)) fp_binary::sub(r, FP_MOD);
}
}  // namespace fp_batched

// a^-1 by the batched binary GCD, Montgomery form in and out; false (out untouched) when its
// batches did not bring the GCD down to one (a = 0 among others). Invariants, for y = A the
// Montgomery representation of x and k the steps so far: U y = a 2^k 2^(-32 j) and
// V y = b 2^k 2^(-32 j) (mod p) after j batches (combine_mod's Montgomery step divides each
// batch by 2^32); a step halves a and doubles b's factors, or subtracts b from a (swapping them
// first when a < b). At the end b = 1 and k = 30 BATCHES, so V = y^-1 2^(-2 BATCHES) and
// x^-1 R = y^-1 R^2 = V R^2 2^(2 BATCHES).
DEVI bool fp_inv_batched(const fp_t& x, fp_t& out) {
    using namespace fp_batched;
    u32 a[N], b[N], u[N], v[N];
#pragma unroll
    for (int i = 0; i < N; i++) {
        a[i] = x.v[i];
        b[i] = FP_MOD[i];
        u[i] = i == 0 ? 1u : 0u;
        v[i] = 0;
    }
    for (int batch = 0; batch < BATCHES; batch++) {
        const int la = bit_len(a), lb = bit_len(b);
        const int n = la > lb ? la : lb;
        u64 ab = approx(a, n), bb = approx(b, n);
        i64 f0 = 1, g0 = 0, f1 = 0, g1 = 1;
        for (int j = 0; j < STEPS; j++) {
            if (ab & 1) {
                if (ab < bb) {
                    const u64 t = ab;
                    ab = bb;
                    bb = t;
                    i64 s = f0;
                    f0 = f1;
                    f1 = s;
                    s = g0;
                    g0 = g1;
                    g1 = s;
                }
                ab -= bb;
                f0 -= f1;
                g0 -= g1;
            }
            ab >>= 1;
            f1 *= 2;
            g1 *= 2;
        }
        u32 na[N], nb[N], nu[N], nv[N];
        if (combine_shift(na, a, b, f0, g0)) {
            f0 = -f0;
            g0 = -g0;
        }
        if (combine_shift(nb, a, b, f1, g1)) {
            f1 = -f1;
            g1 = -g1;
        }
        combine_mod(nu, u, v, f0, g0);
        combine_mod(nv, u, v, f1, g1);
#pragma unroll
        for (int i = 0; i < N; i++) {
            a[i] = na[i];
            b[i] = nb[i];
            u[i] = nu[i];
            v[i] = nv[i];
        }
    }
    if (bit_len(a) != 0 || !fp_binary::is_one(b)) return false;
    // V R^2 2^(2 BATCHES): V RR = V R, again = V R^2, then times 2^(2 BATCHES) R
    fp_t rr, r, two;
#pragma unroll
    for (int i = 0; i < N; i++) {
        rr.v[i] = FP_RR[i];
        r.v[i] = v[i];
        two.v[i] = 0;
    }
    two.v[(2 * BATCHES) / 32] = 1u << ((2 * BATCHES) % 32);
    r = fp_t::mul(fp_t::mul(r, rr), rr);
    out = fp_t::mul(r, fp_t::mul(two, rr));
    return true;
}

// a^-1 (0 for 0), Montgomery form in and out: the batched binary GCD, the plain one should its
// batches not finish
DEVI fp_t fp_inv_vartime(const fp_t& a) {
    fp_t r;
    if (fp_inv_batched(a, r)) return r;
    return fp_inv_binary(a);
}
