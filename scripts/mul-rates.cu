// proofline scripts/mul-rates.cu: what bounds the Fp multiplication on the GPU, and whether the
// FP64 pipe can share its work. Measures, one launch per row, best of three:
//  - `rate`: independent IMAD.WIDE.U32 chains (each product's operand the previous low word, so
//    nothing is loop-invariant for the compiler to hoist), DFMA chains, and both in one thread;
//  - `mont`: the kernels' multiply (cuda/mont.cuh: 12 x 32-bit limbs, flag-carried chains) with K
//    independent products in flight per thread, at the most warps that fit and at 1..9 warps a
//    scheduler;
//  - `f28`: a carry-free multiply over 14 x 28-bit limbs whose columns add up in 64-bit registers
//    (R' = 2^392);
//  - `f48`: 8 x 48-bit limbs held as exact doubles, each product split on the FP64 pipe (R = 2^384,
//    mont.cuh's, so results are identical), its low halves from the FP64 pipe, the integer
//    multiplier, or each in turn;
//  - `hybrid`: mont and f48 multiplications side by side in one thread;
//  - `xchain`: bare IMAD.WIDE.U32.X carry chains of 12;
//  - `split F/N`: F of every N warps multiply by f48, the rest by mont.cuh (the pipes shared
//    between warps, each warp one multiply's registers);
//  - `pair`: the two multiplies as two kernels side by side on two streams, each at its own
//    registers, so many blocks of each an SM;
// and checks f28 and f48 against mont.cuh on 2^20 random inputs (reduced and unreduced operands).
// Built on this machine with the nvcc of scripts/install-nvcc.sh (its lib/ holds the static CUDA
// runtime) and carried to the GPU machine in .gpu-bin (ncu for the pipes: any other argument than
// `occupancy` runs each kernel once, shorter; `occupancy` runs the sweep over warps a scheduler
// alone):
//   NVCC=$(scripts/install-nvcc.sh | tail -n1)
//   $NVCC -arch=sm_90 -O3 -I cuda -L "$(dirname "$NVCC")/../lib" -o .gpu-bin/mul-rates scripts/mul-rates.cu
//   (on the GPU machine) .gpu-bin/mul-rates
// Figures and verdicts: docs/gpu-kernels.md, Results, "what bounds the Fp multiplication".
#include <cstdio>
#include <cstdint>
#include <cstring>
#include "fp.cuh"

// ---- 14 x 28-bit limbs, Montgomery with R' = 2^392 ------------------------------------------
__device__ __constant__ u32 P28[14] = {0xfffaaab, 0xfefffff, 0x3ffffb9, 0xfffeb15, 0x6241eab,
                                       0xa0f6b0f, 0xf6730d2, 0xf38512b, 0x4774b84, 0x4bacd76,
                                       0xba7b643, 0xe69a4b1, 0x1ea397f, 0x1a011};
__device__ __constant__ u32 P28_M0 = 0xffcfffd;  // -p^-1 mod 2^28
#define M28 0xfffffffu

// acc += a b, one IMAD.WIDE.U32 (no carry flag)
DEVI void madw(u64& acc, u32 a, u32 b) { asm("mad.wide.u32 %0, %1, %2, %0;" : "+l"(acc) : "r"(a), "r"(b)); }

struct f28 {
    u32 v[14];
    // 12 x 32 -> 14 x 28
    static DEVI f28 from32(const u32* w) {
        f28 r;
#pragma unroll
        for (int i = 0; i < 14; i++) {
            const int bit = 28 * i, k = bit / 32, s = bit % 32;
            u32 lo = w[k] >> s;
            if (s > 4 && k + 1 < 12) lo |= w[k + 1] << (32 - s);
            r.v[i] = lo & M28;
        }
        return r;
    }
    // Product a b / 2^392 mod p, below 2 p for inputs below 2^385; limbs normalised.
    static DEVI f28 mul(const f28& a, const f28& b) {
        u64 t[15];
#pragma unroll
        for (int j = 0; j < 15; j++) t[j] = 0;
#pragma unroll
        for (int i = 0; i < 14; i++) {
#pragma unroll
            for (int j = 0; j < 14; j++) madw(t[j], a.v[j], b.v[i]);
            const u32 m = ((u32)t[0] * P28_M0) & M28;
#pragma unroll
            for (int j = 0; j < 14; j++) madw(t[j], m, P28[j]);
            t[1] += t[0] >> 28;
#pragma unroll
            for (int j = 0; j < 14; j++) t[j] = t[j + 1];
            t[14] = 0;
        }
        f28 r;
        u64 c = 0;
#pragma unroll
        for (int j = 0; j < 14; j++) {
            const u64 s = t[j] + c;
            r.v[j] = (u32)s & M28;
            c = s >> 28;
        }
        return r;
    }
    // canonical 12 x 32 words (value below 2 p: one conditional subtraction)
    DEVI void to32(u32* w) const {
        u32 o[12];
#pragma unroll
        for (int k = 0; k < 12; k++) o[k] = 0;
#pragma unroll
        for (int i = 0; i < 14; i++) {
            const int bit = 28 * i, k = bit / 32, s = bit % 32;
            o[k] |= v[i] << s;
            if (s > 4 && k + 1 < 12) o[k + 1] |= v[i] >> (32 - s);
        }
        fp_t x;
#pragma unroll
        for (int k = 0; k < 12; k++) x.v[k] = o[k];
        x.final_sub();
#pragma unroll
        for (int k = 0; k < 12; k++) w[k] = x.v[k];
    }
};

DEVI u32 mix(u32 x) {
    x ^= x >> 16; x *= 0x7feb352d; x ^= x >> 15; x *= 0x846ca68b; x ^= x >> 16;
    return x;
}
// a reduced pseudo-random Fp element (canonical words below p)
DEVI fp_t rnd(u32 seed) {
    fp_t r;
#pragma unroll
    for (int k = 0; k < 12; k++) r.v[k] = mix(seed * 12 + k + 1);
    r.v[11] &= 0x0fffffff;  // below 2^380 < p
    return r;
}


// ---- 8 x 48-bit limbs, products on the FP64 pipe, R = 2^384 (mont.cuh's) -------------------
// A 48 x 48-bit product x y (exact doubles) splits exactly in two fused multiply-adds rounded
// toward zero: hi = fma(x, y, 2^100) holds floor(x y / 2^48) in its mantissa (the ulp at 2^100 is
// 2^48), lo = fma(x, y, 2^100 + 2^52 - hi) = 2^52 + (x y mod 2^48) holds the low part. Their bit
// patterns, as integers, add into 64-bit column sums; each term's exponent bits are a known
// constant taken off when a column is read.
__device__ __constant__ double P48[8] = {281474976688811.0, 194974335351294.0, 270634993844222.0,
                                         113459389855408.0, 83034393350847.0, 73992301405303.0,
                                         253550359455670.0, 28591897852287.0};
#define MASK48 0xffffffffffffull
#define LO_BITS 0x4330000000000000ull  // 2^52
#define HI_BITS 0x4630000000000000ull  // 2^100
#define M0_48 0xfffcfffcfffdull          // -p^-1 mod 2^48

DEVI double exact48(u64 x) { return __longlong_as_double(LO_BITS | x) - 4503599627370496.0; }
DEVI u64 int48(const u32* w, int k) {
    const int j = 3 * (k / 2);
    return k % 2 == 0 ? (u64)w[j] | ((u64)(w[j + 1] & 0xffff) << 32)
                      : (u64)((w[j + 1] >> 16) | (w[j + 2] << 16)) | ((u64)(w[j + 2] >> 16) << 32);
}
// where a product's low part comes from: a second FP64 fused multiply-add, or the integer
// multiplier (the low 48 bits of the 64-bit product of the limbs as integers)
enum class Lo { Fp64, Int, Mixed };
template <Lo L>
DEVI void prod48(double x, double y, u64 xi, u64 yi, int j, u64& lo, u64& hi) {
    const double ph = __fma_rz(x, y, 0x1p100);
    hi += (u64)__double_as_longlong(ph);
    if (L == Lo::Fp64 || (L == Lo::Mixed && j % 2 == 0))
        lo += (u64)__double_as_longlong(__fma_rz(x, y, __dsub_rn(0x1p100 + 0x1p52, ph)));
    else
        lo += ((xi * yi) & MASK48) | LO_BITS;
}
__device__ __constant__ u64 P48I[8] = {281474976688811ull, 194974335351294ull, 270634993844222ull,
                                       113459389855408ull, 83034393350847ull, 73992301405303ull,
                                       253550359455670ull, 28591897852287ull};
// a (reduced) times b (any 12 words) / 2^384 mod p, below 2 p, as 12 words
template <Lo L = Lo::Fp64>
DEVI void f48_mul(const u32* aw, const u32* bw, u32* out) {
    double a[8], b[8];
    u64 ai[8], bi[8];
#pragma unroll
    for (int k = 0; k < 8; k++) {
        ai[k] = int48(aw, k); bi[k] = int48(bw, k);
        a[k] = exact48(ai[k]); b[k] = exact48(bi[k]);
    }
    u64 t[16];
    int nlo[16], nhi[16];
#pragma unroll
    for (int k = 0; k < 16; k++) { t[k] = 0; nlo[k] = 0; nhi[k] = 0; }
#pragma unroll
    for (int i = 0; i < 8; i++) {
#pragma unroll
        for (int j = 0; j < 8; j++) {
            prod48<L>(a[j], b[i], ai[j], bi[i], j, t[i + j], t[i + j + 1]);
            nlo[i + j]++; nhi[i + j + 1]++;
        }
        const u64 ti = t[i] - (nlo[i] * LO_BITS + nhi[i] * HI_BITS);
        const u64 low = ti & MASK48;
        const u64 mi = (low * M0_48) & MASK48;
        const double m = exact48(mi);
        // column i plus m p_0's low part is a multiple of 2^48: its carry
        t[i + 1] += (ti >> 48) + (low != 0);
        t[i + 1] += (u64)__double_as_longlong(__fma_rz(m, P48[0], 0x1p100));
        nhi[i + 1]++;
#pragma unroll
        for (int j = 1; j < 8; j++) {
            prod48<L>(m, P48[j], mi, P48I[j], j, t[i + j], t[i + j + 1]);
            nlo[i + j]++; nhi[i + j + 1]++;
        }
    }
    u64 c = 0, r[8];
#pragma unroll
    for (int k = 8; k < 16; k++) {
        const u64 v = t[k] - (nlo[k] * LO_BITS + nhi[k] * HI_BITS) + c;
        r[k - 8] = v & MASK48;
        c = v >> 48;
    }
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const u64 x = r[2 * j], y = r[2 * j + 1];
        out[3 * j] = (u32)x;
        out[3 * j + 1] = (u32)(x >> 32) | ((u32)y << 16);
        out[3 * j + 2] = (u32)(y >> 16);
    }
}
template <int K, Lo L>
__global__ void f48_bench(u32* out, u32 iters) {
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    fp_t x[K], y[K];
#pragma unroll
    for (int k = 0; k < K; k++) { x[k] = rnd(t * 2 * K + 2 * k); y[k] = rnd(t * 2 * K + 2 * k + 1); }
    for (u32 i = 0; i < iters; i++)
#pragma unroll
        for (int k = 0; k < K; k++) {
            fp_t z;
            f48_mul<L>(x[k].v, y[k].v, z.v);
            z.final_sub();
            x[k] = z;
        }
    u32 s = 0;
#pragma unroll
    for (int k = 0; k < K; k++) s ^= x[k].v[0] ^ x[k].v[11];
    out[t] = s;
}

// M multiplications by mont.cuh and F by f48 side by side in one thread, all independent: the
// integer multiplier and the FP64 pipe busy at once
template <int M, int F>
__global__ void hybrid(u32* out, u32 iters) {
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    fp_t x[M + F], y[M + F];
#pragma unroll
    for (int k = 0; k < M + F; k++) {
        x[k] = rnd(t * 2 * (M + F) + 2 * k);
        y[k] = rnd(t * 2 * (M + F) + 2 * k + 1);
    }
    for (u32 i = 0; i < iters; i++) {
#pragma unroll
        for (int k = 0; k < M; k++) x[k] = fp_t::mul(x[k], y[k]);
#pragma unroll
        for (int k = M; k < M + F; k++) {
            fp_t z;
            f48_mul<Lo::Fp64>(x[k].v, y[k].v, z.v);
            z.final_sub();
            x[k] = z;
        }
    }
    u32 s = 0;
#pragma unroll
    for (int k = 0; k < M + F; k++) s ^= x[k].v[0] ^ x[k].v[11];
    out[t] = s;
}


// F of every N warps multiply by f48, the others by mont.cuh (K = 1 each): the two pipes shared
// between warps rather than within a thread, so each warp holds one multiply's registers. Warps
// take batches of SPLIT_BATCH multiplications from a ticket until `batches` are taken, so that
// both kinds finish together whatever their relative speed.
#define SPLIT_BATCH 32
template <int F, int N, int MINB>
__global__ void __launch_bounds__(128, MINB) split(u32* out, u32* ticket, u32 batches) {
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    const bool by_f48 = (int)((t / 32) % N) < F;
    fp_t x = rnd(2 * t), y = rnd(2 * t + 1);
    for (;;) {
        u32 b = 0;
        if (threadIdx.x % 32 == 0) b = atomicAdd(ticket, 1);
        b = __shfl_sync(0xffffffffu, b, 0);
        if (b >= batches) break;
        if (by_f48) {
#pragma unroll 1
            for (u32 i = 0; i < SPLIT_BATCH; i++) {
                fp_t z;
                f48_mul<Lo::Fp64>(x.v, y.v, z.v);
                z.final_sub();
                x = z;
            }
        } else {
#pragma unroll 1
            for (u32 i = 0; i < SPLIT_BATCH; i++) x = fp_t::mul(x, y);
        }
    }
    out[t] = x.v[0] ^ x.v[11];
}

// ---- throughput kernels --------------------------------------------------------------------
template <int K>
__global__ void cur_mul(u32* out, u32 iters) {
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    fp_t x[K], y[K];
#pragma unroll
    for (int k = 0; k < K; k++) { x[k] = rnd(t * 2 * K + 2 * k); y[k] = rnd(t * 2 * K + 2 * k + 1); }
    for (u32 i = 0; i < iters; i++)
#pragma unroll
        for (int k = 0; k < K; k++) x[k] = fp_t::mul(x[k], y[k]);
    u32 s = 0;
#pragma unroll
    for (int k = 0; k < K; k++) s ^= x[k].v[0] ^ x[k].v[11];
    out[t] = s;
}
// mont.cuh's squaring, K independent chains
template <int K>
__global__ void cur_sqr(u32* out, u32 iters) {
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    fp_t x[K];
#pragma unroll
    for (int k = 0; k < K; k++) x[k] = rnd(t * K + k);
    for (u32 i = 0; i < iters; i++)
#pragma unroll
        for (int k = 0; k < K; k++) x[k] = fp_t::sqr(x[k]);
    u32 s = 0;
#pragma unroll
    for (int k = 0; k < K; k++) s ^= x[k].v[0] ^ x[k].v[11];
    out[t] = s;
}
template <int K>
__global__ void f28_mul(u32* out, u32 iters) {
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    f28 x[K], y[K];
#pragma unroll
    for (int k = 0; k < K; k++) {
        fp_t a = rnd(t * 2 * K + 2 * k), b = rnd(t * 2 * K + 2 * k + 1);
        x[k] = f28::from32(a.v); y[k] = f28::from32(b.v);
    }
    for (u32 i = 0; i < iters; i++)
#pragma unroll
        for (int k = 0; k < K; k++) x[k] = f28::mul(x[k], y[k]);
    u32 s = 0;
#pragma unroll
    for (int k = 0; k < K; k++) s ^= x[k].v[0] ^ x[k].v[13];
    out[t] = s;
}
// K independent chains of 12 IMAD.WIDE.U32.X (the even-word pattern of mont.cuh's cmad_n)
template <int K>
__global__ void xchain(u32* out, u32 iters) {
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    u32 acc[K][12], a[12];
#pragma unroll
    for (int j = 0; j < 12; j++) a[j] = mix(t + j);
#pragma unroll
    for (int k = 0; k < K; k++)
#pragma unroll
        for (int j = 0; j < 12; j++) acc[k][j] = mix(t * 97 + k * 13 + j);
    for (u32 i = 0; i < iters; i++)
#pragma unroll
        for (int k = 0; k < K; k++) {
            const u32 bi = acc[k][1] | 1;
            ASM("mad.lo.cc.u32 %0, %12, %13, %0; madc.hi.cc.u32 %1, %12, %13, %1;"
                "madc.lo.cc.u32 %2, %14, %13, %2; madc.hi.cc.u32 %3, %14, %13, %3;"
                "madc.lo.cc.u32 %4, %15, %13, %4; madc.hi.cc.u32 %5, %15, %13, %5;"
                "madc.lo.cc.u32 %6, %16, %13, %6; madc.hi.cc.u32 %7, %16, %13, %7;"
                "madc.lo.cc.u32 %8, %17, %13, %8; madc.hi.cc.u32 %9, %17, %13, %9;"
                "madc.lo.cc.u32 %10, %18, %13, %10; madc.hi.u32 %11, %18, %13, %11;"
                : "+r"(acc[k][0]), "+r"(acc[k][1]), "+r"(acc[k][2]), "+r"(acc[k][3]),
                  "+r"(acc[k][4]), "+r"(acc[k][5]), "+r"(acc[k][6]), "+r"(acc[k][7]),
                  "+r"(acc[k][8]), "+r"(acc[k][9]), "+r"(acc[k][10]), "+r"(acc[k][11])
                : "r"(a[0]), "r"(bi), "r"(a[2]), "r"(a[4]), "r"(a[6]), "r"(a[8]), "r"(a[10]));
        }
    u32 s = 0;
#pragma unroll
    for (int k = 0; k < K; k++)
#pragma unroll
        for (int j = 0; j < 12; j++) s ^= acc[k][j];
    out[t] = s;
}

// 8 independent IMAD.WIDE.U32 chains a thread, each product's operand the previous low word
// (nothing loop-invariant for the compiler to hoist); with DFMA chains interleaved (MIX)
enum class Pipe { Wide, Dfma, Mix };
template <Pipe W>
__global__ void rate(u32* out, u32 iters) {
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    u64 acc[8];
    double d[8];
    const u32 b = mix(t) | 1;
#pragma unroll
    for (int k = 0; k < 8; k++) { acc[k] = mix(t * 8 + k); d[k] = (double)k; }
    for (u32 i = 0; i < iters; i++)
#pragma unroll
        for (int k = 0; k < 8; k++) {
            if (W != Pipe::Dfma) madw(acc[k], (u32)acc[k], b);
            if (W != Pipe::Wide) d[k] = fma(d[k], 0.999999, 1e-9);
        }
    u64 s = 0;
#pragma unroll
    for (int k = 0; k < 8; k++) s ^= acc[k] ^ (u64)d[k];
    out[t] = (u32)s ^ (u32)(s >> 32);
}

// ---- agreement: f28 (R' = 2^392) against mont.cuh (R = 2^384): f28(a, b) = mont(a, b) 2^-8,
// with 2^-8 applied as mont(., 2^376 mod p).
__global__ void check(u32* bad, u32 n) {
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    fp_t c = fp_t::zero();
    c.v[0] = 1;
#pragma unroll 1
    for (int i = 0; i < 376; i++) c = fp_t::add(c, c);  // 2^376 mod p (plain integer)
    fp_t a = rnd(2 * t + 7), b = rnd(2 * t + 8);
    if (t == 1) { a = fp_t::sub(fp_t::zero(), fp_t::one()); b = a; }  // p - R mod p: large limbs
    fp_t e = fp_t::mul(fp_t::mul(a, b), c);
    f28 x = f28::from32(a.v), y = f28::from32(b.v);
    f28 z = f28::mul(x, y);
    // a chain of products stays below 2 p without a reduction between them
    f28 z2 = f28::mul(f28::mul(z, y), x);
    fp_t e2 = fp_t::mul(fp_t::mul(fp_t::mul(fp_t::mul(e, b), c), a), c);
    u32 w[12], w2[12];
    z.to32(w);
    z2.to32(w2);
    u32 diff = 0;
#pragma unroll
    for (int k = 0; k < 12; k++) diff |= (w[k] ^ e.v[k]) | (w2[k] ^ e2.v[k]);
    if (diff) atomicAdd(bad, 1);
    // f48: a times a reduced b, and a times an unreduced b (a - b + p, up to 2 p), reduced after
    const fp_t::wide_t bw = fp_t::sub_wide(a, b);
    u32 bwords[12];
    bw.store(bwords);
    const fp_t h = fp_t::mul(a, b), h2 = fp_t::mul(a, bw);
    fp_t g[6];
    f48_mul<Lo::Fp64>(a.v, b.v, g[0].v);
    f48_mul<Lo::Fp64>(a.v, bwords, g[1].v);
    f48_mul<Lo::Int>(a.v, b.v, g[2].v);
    f48_mul<Lo::Int>(a.v, bwords, g[3].v);
    f48_mul<Lo::Mixed>(a.v, b.v, g[4].v);
    f48_mul<Lo::Mixed>(a.v, bwords, g[5].v);
    diff = 0;
#pragma unroll
    for (int q = 0; q < 6; q++) {
        g[q].final_sub();
#pragma unroll
        for (int k = 0; k < 12; k++) diff |= g[q].v[k] ^ (q % 2 ? h2.v[k] : h.v[k]);
    }
    if (diff) atomicAdd(bad + 1, 1);
    // the squaring against the multiply, also at p - 1 (t = 1) and 0 (a - a)
    const fp_t s = fp_t::sub(a, t == 2 ? a : fp_t::zero());
    diff = 0;
    const fp_t sq = fp_t::sqr(s), mm = fp_t::mul(s, s);
#pragma unroll
    for (int k = 0; k < 12; k++) diff |= sq.v[k] ^ mm.v[k];
    if (diff) atomicAdd(bad + 2, 1);
}

static int REPS = 3;
static u32 ITERS = 2048;
// Best of REPS launches of `kern` over `blocks` blocks of 128 threads, `iters` iterations each
// (one short warm-up launch first), and its rate in products a second and per SM per clock.
template <class F>
static void time_rate(const char* name, F kern, int k, int blocks, u32 iters, u32* buf, int sms,
                      const char* occupancy) {
    const int threads = 128;
    cudaFuncAttributes at;
    cudaFuncGetAttributes(&at, kern);
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0); cudaEventCreate(&e1);
    if (REPS > 1) kern<<<blocks, threads>>>(buf, 16);
    float best = 1e30f;
    for (int rep = 0; rep < REPS; rep++) {
        cudaEventRecord(e0);
        kern<<<blocks, threads>>>(buf, iters);
        cudaEventRecord(e1); cudaEventSynchronize(e1);
        float ms; cudaEventElapsedTime(&ms, e0, e1);
        if (ms < best) best = ms;
    }
    const double ops = (double)blocks * threads * iters * k;
    int clk = 0;
    cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, 0);
    printf("%-10s K=%d regs %3d %s  %8.3f ms  %8.2f G/s  %6.2f per SM per clock\n", name, k,
           at.numRegs, occupancy, best, ops / (best * 1e-3) / 1e9,
           ops / (best * 1e-3) / sms / (clk * 1e3));
}

// Blocks of 128 threads of `kern` that fit an SM.
template <class F>
static int blocks_that_fit(F kern) {
    int per_sm = 0;
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, 128, 0);
    return per_sm;
}

// `kern` in four waves of as many blocks as fit.
template <class F>
static void bench(const char* name, F kern, int k, u32* buf, int sms) {
    const int per_sm = blocks_that_fit(kern);
    char occ[32];
    snprintf(occ, sizeof occ, "warps/SM %2d", per_sm * 4);
    time_rate(name, kern, k, sms * per_sm * 4, ITERS, buf, sms, occ);
}

// `kern` at `per_sm` blocks of 128 threads an SM (per_sm * 4 warps an SM, per_sm warps a
// scheduler): one wave, each thread four times `bench`'s iterations, so that the SM's warps are
// all resident for the whole run: how the multiply's rate depends on the warps a scheduler
// holds and the independent products each keeps in flight
template <class F>
static void bench_occupancy(const char* name, F kern, int k, int per_sm, u32* buf, int sms) {
    if (per_sm > blocks_that_fit(kern)) return;
    char occ[32];
    snprintf(occ, sizeof occ, "warps/scheduler %d", per_sm);
    time_rate(name, kern, k, sms * per_sm, 4 * ITERS, buf, sms, occ);
}

// the split kernels: as many multiplications in all as `bench` times for K = 1
template <class F>
static void bench_split(const char* name, F kern, u32* buf, u32* ticket, int sms) {
    cudaFuncAttributes at;
    cudaFuncGetAttributes(&at, kern);
    int per_sm = 0;
    const int threads = 128;
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, threads, 0);
    const int blocks = sms * per_sm;
    const u32 batches = (u32)((u64)sms * per_sm * 4 * (threads / 32) * ITERS / SPLIT_BATCH);
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0); cudaEventCreate(&e1);
    float best = 1e30f;
    for (int rep = 0; rep < REPS; rep++) {
        cudaMemset(ticket, 0, 4);
        cudaEventRecord(e0);
        kern<<<blocks, threads>>>(buf, ticket, batches);
        cudaEventRecord(e1); cudaEventSynchronize(e1);
        float ms; cudaEventElapsedTime(&ms, e0, e1);
        if (ms < best) best = ms;
    }
    const double ops = (double)batches * SPLIT_BATCH * 32;
    int clk = 0;
    cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, 0);
    printf("%-14s regs %3d warps/SM %2d  %8.3f ms  %8.2f G/s  %6.2f per SM per clock\n", name, at.numRegs,
           per_sm * threads / 32, best, ops / (best * 1e-3) / 1e9, ops / (best * 1e-3) / sms / (clk * 1e3));
}


// two kernels side by side on two streams, sharing one ticket: `bm` blocks an SM of mont.cuh's
// multiply (split<0, 1, ..>) and `bf` of f48's (split<1, 1, ..>), each kernel at its own
// registers, so that an SM holds blocks of both at once where their registers fit
template <class M, class F>
static void bench_pair(const char* name, M km, int bm, F kf, int bf, u32* buf, u32* ticket, int sms,
                       cudaStream_t s1, cudaStream_t s2) {
    const int threads = 128;
    const u32 batches = (u32)((u64)sms * 8 * 4 * (threads / 32) * ITERS / SPLIT_BATCH);
    cudaEvent_t e0, e1, e2;
    cudaEventCreate(&e0); cudaEventCreate(&e1); cudaEventCreate(&e2);
    float best = 1e30f;
    for (int rep = 0; rep < REPS; rep++) {
        cudaMemset(ticket, 0, 4);
        cudaDeviceSynchronize();
        cudaEventRecord(e0, s1);
        cudaStreamWaitEvent(s2, e0, 0);
        if (bm > 0) km<<<sms * bm, threads, 0, s1>>>(buf, ticket, batches);
        if (bf > 0) kf<<<sms * bf, threads, 0, s2>>>(buf + sms * bm * threads, ticket, batches);
        cudaEventRecord(e2, s2);
        cudaStreamWaitEvent(s1, e2, 0);
        cudaEventRecord(e1, s1);
        cudaEventSynchronize(e1);
        float ms; cudaEventElapsedTime(&ms, e0, e1);
        if (ms < best) best = ms;
    }
    const double ops = (double)batches * SPLIT_BATCH * 32;
    int clk = 0;
    cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, 0);
    printf("%-14s mont %d + f48 %d blocks/SM  %8.3f ms  %8.2f G/s  %6.2f per SM per clock\n", name, bm, bf, best,
           ops / (best * 1e-3) / 1e9, ops / (best * 1e-3) / sms / (clk * 1e3));
}

int main(int argc, char** argv) {
    // `occupancy`: the sweep over warps a scheduler alone; any other argument: each kernel once,
    // shorter (for a profiler)
    const bool occupancy = argc > 1 && strcmp(argv[1], "occupancy") == 0;
    if (argc > 1 && !occupancy) { REPS = 1; ITERS = 256; }
    cudaDeviceProp p; cudaGetDeviceProperties(&p, 0);
    int clk = 0; cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, 0);
    const int sms = p.multiProcessorCount;
    u32* buf; cudaMalloc(&buf, (size_t)sms * 64 * 128 * 4 * 4);
    u32* bad; cudaMalloc(&bad, 12); cudaMemset(bad, 0, 12);
    u32* ticket; cudaMalloc(&ticket, 4);
    cudaStream_t s1, s2;
    cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking); cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
    const u32 n = 1 << 20;
    check<<<n / 256, 256>>>(bad, n);
    u32 nbad[3] = {0, 0, 0}; cudaMemcpy(nbad, bad, 12, cudaMemcpyDeviceToHost);
    printf("against mont.cuh's multiply: f28 %u, f48 %u, sqr %u of %u differ (%s)\n", nbad[0], nbad[1], nbad[2], n,
           cudaGetErrorString(cudaGetLastError()));
    printf("%s, %d SMs at %d MHz; G/s = products (or chains of 12) per second\n", p.name, sms, clk / 1000);
    if (!occupancy) {
        bench("wide x8", rate<Pipe::Wide>, 8, buf, sms);
        bench("dfma x8", rate<Pipe::Dfma>, 8, buf, sms);
        bench("both x8", rate<Pipe::Mix>, 8, buf, sms);
    }
    for (int w = 1; w <= 9; w++) {
        bench_occupancy("mont", cur_mul<1>, 1, w, buf, sms);
        bench_occupancy("mont", cur_mul<2>, 2, w, buf, sms);
        bench_occupancy("sqr", cur_sqr<1>, 1, w, buf, sms);
    }
    if (occupancy) return 0;
    for (int r = 0; r < (argc > 1 ? 1 : 2); r++) {
        bench("mont", cur_mul<1>, 1, buf, sms);
        bench("mont", cur_mul<2>, 2, buf, sms);
        bench("mont", cur_mul<4>, 4, buf, sms);
        bench("sqr", cur_sqr<1>, 1, buf, sms);
        bench("sqr", cur_sqr<2>, 2, buf, sms);
        bench("sqr", cur_sqr<4>, 4, buf, sms);
        bench("f28", f28_mul<1>, 1, buf, sms);
        bench("f28", f28_mul<2>, 2, buf, sms);
        bench("f28", f28_mul<4>, 4, buf, sms);
        bench("f48 fp64", f48_bench<1, Lo::Fp64>, 1, buf, sms);
        bench("f48 fp64", f48_bench<2, Lo::Fp64>, 2, buf, sms);
        bench("f48 int", f48_bench<1, Lo::Int>, 1, buf, sms);
        bench("f48 int", f48_bench<2, Lo::Int>, 2, buf, sms);
        bench("f48 mixed", f48_bench<1, Lo::Mixed>, 1, buf, sms);
        bench("f48 mixed", f48_bench<2, Lo::Mixed>, 2, buf, sms);
        bench("mont+f48", hybrid<1, 1>, 2, buf, sms);
        bench("2mont+f48", hybrid<2, 1>, 3, buf, sms);
        bench("mont+2f48", hybrid<1, 2>, 3, buf, sms);
        bench("xchain", xchain<1>, 1, buf, sms);
        bench("xchain", xchain<2>, 2, buf, sms);
        bench("xchain", xchain<4>, 4, buf, sms);
        bench_split("split 0/1", split<0, 1, 1>, buf, ticket, sms);
        bench_split("split 1/1 b4", split<1, 1, 4>, buf, ticket, sms);
        bench_split("split 1/4 b4", split<1, 4, 4>, buf, ticket, sms);
        bench_split("split 1/3 b4", split<1, 3, 4>, buf, ticket, sms);
        bench_split("split 1/2 b4", split<1, 2, 4>, buf, ticket, sms);
        bench_split("split 2/3 b4", split<2, 3, 4>, buf, ticket, sms);
        bench_split("split 1/1 b6", split<1, 1, 6>, buf, ticket, sms);
        bench_split("split 1/4 b6", split<1, 4, 6>, buf, ticket, sms);
        bench_split("split 1/3 b6", split<1, 3, 6>, buf, ticket, sms);
        bench_split("split 1/2 b6", split<1, 2, 6>, buf, ticket, sms);
        bench_split("split 2/3 b6", split<2, 3, 6>, buf, ticket, sms);
        bench_split("split 1/1 b8", split<1, 1, 8>, buf, ticket, sms);
        bench_split("split 1/4 b8", split<1, 4, 8>, buf, ticket, sms);
        bench_split("split 1/3 b8", split<1, 3, 8>, buf, ticket, sms);
        bench_split("split 1/2 b8", split<1, 2, 8>, buf, ticket, sms);
        bench_split("split 2/3 b8", split<2, 3, 8>, buf, ticket, sms);
        for (int bm = 0; bm <= 8; bm++)
            bench_pair("pair b8", split<0, 1, 8>, bm, split<1, 1, 8>, 8 - bm, buf, ticket, sms, s1, s2);
        bench_pair("pair b4", split<0, 1, 8>, 4, split<1, 1, 4>, 2, buf, ticket, sms, s1, s2);
        bench_pair("pair b4", split<0, 1, 8>, 6, split<1, 1, 4>, 1, buf, ticket, sms, s1, s2);
    }
    printf("error: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 0;
}
