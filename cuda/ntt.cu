// proofline cuda/ntt.cu: number-theoretic transforms over BLS12-381 Fr and the
// Groth16 H-polynomial helpers.
//
// Host orchestration: crates/proofline-gpu/src/ntt.rs. Each kernel takes one argument struct
// and the shared constants (NTT_TILE, NTT_THREADS, ...) from proofline_abi.cuh, generated from
// crates/proofline-gpu/src/abi.rs.
//
// Data are Fr elements in Montgomery form, 8 x u32 each (blstrs::Scalar).
//  * ntt_pass: a group of t radix-2 stages fused in shared memory, done two
//    at a time in registers (radix-4 step) with a last single stage when t is
//    odd. Stage s
//    pairs indices that differ in bit s. A block loads a tile of 2^t elements
//    along bits [s_lo, s_lo + t) times 2^lg_l consecutive low indices (so loads
//    are coalesced runs of 32 * 2^lg_l bytes), runs the t stages, and writes
//    the tile back. dif = 1: Gentleman-Sande (natural in, bit-reversed out,
//    stages high to low); dif = 0: Cooley-Tukey (bit-reversed in, natural out,
//    stages low to high). Twiddles: one table per stage s, w^(j 2^(log n - 1 - s))
//    for j < 2^s (`twiddle`), w the n-th root.
//    Scaling (coset powers, n^-1) is fused into the load of the first pass and
//    the store of the last; the last DIF pass can write bit-reversed into a
//    second buffer, which removes the separate permutation pass. The first
//    load can also multiply by a second array (c = a b read from a and b) and
//    the last store subtract one (H = Y - C, below).
//  * fr_h_pointwise: a = (a * b - c) * zinv.
//  * fr_pointwise_product: out = a * b (C's evaluations of a satisfied witness).
//  * fr_build_stage_tables: the twiddle tables, from two small host-computed
//    power tables (out = lo[m & lo_mask] * hi[m >> lo_bits] = w^m).
#include "fr.cuh"
#include "proofline_abi.cuh"

DEVI u32 bitrev(u32 x, u32 bits) { return bits == 0 ? 0 : (__brev(x) >> (32 - bits)); }

DEVI fr_t pow_from_tables(const u32* lo, const u32* hi, u32 idx, u32 lo_bits) {
    fr_t a = fr_t::load(lo + 8 * (idx & ((1u << lo_bits) - 1)));
    fr_t b = fr_t::load(hi + 8 * (idx >> lo_bits));
    return fr_t::mul(a, b);
}

// Twiddle w^(j 2^(log_n - 1 - s)) of a butterfly of stage s whose lower index
// is j mod 2^s: T_s[j] at tw[2^s - 1 + j], one contiguous table per stage, so
// the lanes of a warp read neighbours (one flat table of w^m, read at stride
// 2^(log_n - 1 - s), was 5-13 % slower on the H200: docs/gpu-kernels.md).
DEVI fr_t twiddle(const u32* tw, u32 s, u32 j) {
    return fr_t::load(tw + 8 * (size_t)((1u << s) - 1 + j));
}

// out[2^s - 1 + j] = w^(j 2^(log_n - 1 - s)) for s < log_n, j < 2^s (the stage
// tables), from the split power tables of w.
extern "C" __global__ void fr_build_stage_tables(const stage_tables_args a) {
    u32 idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx + 1 >= (1u << a.log_n)) return;
    u32 s = 31 - __clz(idx + 1);
    u32 j = idx + 1 - (1u << s);
    pow_from_tables(a.lo, a.hi, j << (a.log_n - 1 - s), a.lo_bits).store(a.out + 8 * (size_t)idx);
}

DEVI fr_t load_sm(const uint4* sm, u32 e) {
    uint4 a = sm[e], b = sm[NTT_TILE + e];
    fr_t r;
    r.v[0] = a.x; r.v[1] = a.y; r.v[2] = a.z; r.v[3] = a.w;
    r.v[4] = b.x; r.v[5] = b.y; r.v[6] = b.z; r.v[7] = b.w;
    return r;
}
DEVI void store_sm(uint4* sm, u32 e, const fr_t& x) {
    sm[e] = make_uint4(x.v[0], x.v[1], x.v[2], x.v[3]);
    sm[NTT_TILE + e] = make_uint4(x.v[4], x.v[5], x.v[6], x.v[7]);
}

// Optional scaling factor c * G(idx) (either part may be absent: null pointers).
struct scale_t {
    const u32* c;
    const u32* plo;
    const u32* phi;
    u32 lo_bits;
    DEVI bool on() const { return c != nullptr || plo != nullptr; }
    DEVI fr_t factor(u32 idx) const {
        fr_t f;
        if (plo != nullptr) {
            f = pow_from_tables(plo, phi, idx, lo_bits);
            if (c != nullptr) f = fr_t::mul(f, fr_t::load(c));
        } else {
            f = fr_t::load(c);
        }
        return f;
    }
};

// The tile of one pass: 2^t elements along index bits [s_lo, s_lo + t) times 2^lg_l
// consecutive low indices, times 2^hb top index bits (see below), as block blockIdx.x sees it.
// hb > 0 (only with s_lo = lg_l = 0, the pass of stages 0.. of a plan whose DIF writes
// bit-reversed): the tile also spans the top hb index bits, which no stage of the pass
// touches. Bit reversal sends them to the lowest output bits, so the store visits them fastest
// and a warp writes runs of 2^hb consecutive outputs instead of one scattered element per
// thread.
struct tile_t {
    u32 log_n, s_lo, t, lg_l, hb;
    u32 L, E, lowblock;
    size_t base;
    DEVI tile_t(u32 log_n_, u32 s_lo_, u32 t_, u32 lg_l_, u32 hb_)
        : log_n(log_n_), s_lo(s_lo_), t(t_), lg_l(lg_l_), hb(hb_) {
        L = 1u << lg_l;
        E = 1u << (t + lg_l + hb);
        const u32 low_blocks = (1u << s_lo) >> lg_l;
        lowblock = blockIdx.x % low_blocks;
        const size_t high = blockIdx.x / low_blocks;
        base = ((size_t)lowblock << lg_l) + (high << (s_lo + t));
    }
    // global index of tile element e
    DEVI size_t gidx(u32 e) const {
        if (hb != 0)
            return (size_t)(e & ((1u << t) - 1)) + ((size_t)blockIdx.x << t) +
                   ((size_t)(e >> t) << (log_n - hb));
        return base + (e & (L - 1)) + ((size_t)(e >> lg_l) << s_lo);
    }
};

// Loads the tile of `in` into sm, each element multiplied by mul at its index (when mul is
// not null) and by ls at its index (bit-reversed with lrev); ends with a barrier.
DEVI void tile_load(uint4* sm, const tile_t& tl, const u32* in, const u32* mul,
                    const scale_t& ls, u32 lrev) {
#pragma unroll
    for (u32 jj = 0; jj < NTT_TILE / NTT_THREADS; jj++) {
        u32 e = threadIdx.x + jj * NTT_THREADS;
        if (e >= tl.E) break;
        size_t g = tl.gidx(e);
        const uint4* src = reinterpret_cast<const uint4*>(in + 8 * g);
        if (ls.on() || mul != nullptr) {
            fr_t x = fr_t::load(in + 8 * g);
            if (mul != nullptr) x = fr_t::mul(x, fr_t::load(mul + 8 * g));
            if (ls.on()) x = fr_t::mul(x, ls.factor(lrev ? bitrev((u32)g, tl.log_n) : (u32)g));
            store_sm(sm, e, x);
        } else {
            sm[e] = src[0];
            sm[NTT_TILE + e] = src[1];
        }
    }
    __syncthreads();
}

// The t stages of the tile in shared memory, with the twiddles of `tw`; each step ends with a
// barrier.
DEVI void tile_stages(uint4* sm, const tile_t& tl, const u32* tw, u32 dif) {
    const u32 s_lo = tl.s_lo, t = tl.t, lg_l = tl.lg_l;
    const u32 L = tl.L, E = tl.E, lowblock = tl.lowblock;
    // Stages two at a time (radix 4: four elements in registers, one
    // shared-memory round trip and one barrier per two stages), then a
    // last radix-2 stage when t is odd. DIF runs local stages t-1 .. 0,
    // DIT 0 .. t-1.
    for (u32 k = 0; k < t; k += (k + 1 < t) ? 2 : 1) {
        const bool quad = k + 1 < t;
        if (quad) {
            // local stages r (pairs at distance h) and r + 1 (distance 2h)
            const u32 r = dif ? (t - 2 - k) : k;
            const u32 h = 1u << r;
            const u32 s = s_lo + r;
#pragma unroll
            for (u32 jj = 0; jj < NTT_TILE / 4 / NTT_THREADS; jj++) {
                u32 b = threadIdx.x + jj * NTT_THREADS;
                if (b >= (E >> 2)) break;
                u32 lowpart = b & (L - 1);
                u32 q = b >> lg_l;
                u32 i = ((q >> r) << (r + 2)) | (q & (h - 1));
                u32 e0 = (i << lg_l) | lowpart;
                u32 eh = h << lg_l;
                // global index of x0 modulo 2^s
                const u32 g0 = ((q & (h - 1)) << s_lo) | (lowblock << lg_l) | lowpart;
                // twiddles: stage s + 1 pairs (x0, x2) with w^ma, (x1, x3) with
                // w^(ma + n/4); stage s pairs (x0, x1), (x2, x3) with w^(2 ma), where
                // ma = g0 2^(log_n - s - 2): all but wb are one where g0 is 0
                const bool twiddled = g0 != 0;
                fr_t x0 = load_sm(sm, e0), x1 = load_sm(sm, e0 + eh);
                fr_t x2 = load_sm(sm, e0 + 2 * eh), x3 = load_sm(sm, e0 + 3 * eh);
                fr_t wb = twiddle(tw, s + 1, g0 + (1u << s));
                // a difference or sum that is only multiplied skips its correction (wide_t)
                // each output is stored as soon as it is made (the thread owns its four places
                // in this step and has loaded all of them): fewer values live at once, so the
                // steps fit the 80 registers with less spilling (docs/gpu-kernels.md, Results)
                if (dif) {
                    const fr_t y0 = fr_t::add(x0, x2), y1 = fr_t::add(x1, x3);
                    const fr_t y3 = fr_t::mul(wb, fr_t::sub_wide(x1, x3));
                    store_sm(sm, e0, fr_t::add(y0, y1));
                    if (twiddled) {
                        const fr_t wc = twiddle(tw, s, g0);
                        store_sm(sm, e0 + eh, fr_t::mul(wc, fr_t::sub_wide(y0, y1)));
                        const fr_t y2 = fr_t::mul(twiddle(tw, s + 1, g0), fr_t::sub_wide(x0, x2));
                        store_sm(sm, e0 + 2 * eh, fr_t::add(y2, y3));
                        store_sm(sm, e0 + 3 * eh, fr_t::mul(wc, fr_t::sub_wide(y2, y3)));
                    } else {
                        store_sm(sm, e0 + eh, fr_t::sub(y0, y1));
                        const fr_t y2 = fr_t::sub(x0, x2);
                        store_sm(sm, e0 + 2 * eh, fr_t::add(y2, y3));
                        store_sm(sm, e0 + 3 * eh, fr_t::sub(y2, y3));
                    }
                } else {
                    if (twiddled) {
                        const fr_t wc = twiddle(tw, s, g0);
                        x1 = fr_t::mul(x1, wc);
                        x3 = fr_t::mul(x3, wc);
                    }
                    const fr_t y0 = fr_t::add(x0, x1), y1 = fr_t::sub(x0, x1);
                    const fr_t y2 = twiddled
                                        ? fr_t::mul(twiddle(tw, s + 1, g0), fr_t::add_wide(x2, x3))
                                        : fr_t::add(x2, x3);
                    store_sm(sm, e0, fr_t::add(y0, y2));
                    store_sm(sm, e0 + 2 * eh, fr_t::sub(y0, y2));
                    const fr_t y3 = fr_t::mul(wb, fr_t::sub_wide(x2, x3));
                    store_sm(sm, e0 + eh, fr_t::add(y1, y3));
                    store_sm(sm, e0 + 3 * eh, fr_t::sub(y1, y3));
                }
            }
        } else {
            const u32 r = dif ? (t - 1 - k) : k;
            const u32 h = 1u << r;
            const u32 s = s_lo + r;
#pragma unroll
            for (u32 jj = 0; jj < NTT_TILE / 2 / NTT_THREADS; jj++) {
                u32 b = threadIdx.x + jj * NTT_THREADS;
                if (b >= (E >> 1)) break;
                u32 lowpart = b & (L - 1);
                u32 q = b >> lg_l;
                u32 i = ((q >> r) << (r + 1)) | (q & (h - 1));
                u32 e0 = (i << lg_l) | lowpart;
                u32 e1 = e0 + (h << lg_l);
                const u32 m = ((q & (h - 1)) << s_lo) | (lowblock << lg_l) | lowpart;
                fr_t x0 = load_sm(sm, e0), x1 = load_sm(sm, e1);
                fr_t y0, y1;
                if (dif) {
                    y0 = fr_t::add(x0, x1);
                    y1 = m != 0 ? fr_t::mul(twiddle(tw, s, m), fr_t::sub_wide(x0, x1))
                                : fr_t::sub(x0, x1);
                } else {
                    fr_t v = m != 0 ? fr_t::mul(x1, twiddle(tw, s, m)) : x1;
                    y0 = fr_t::add(x0, v);
                    y1 = fr_t::sub(x0, v);
                }
                store_sm(sm, e0, y0);
                store_sm(sm, e1, y1);
            }
        }
        __syncthreads();
    }

}

// Stores the tile: position e goes to out[bitrev_out ? rev(g) : g] (g its global index),
// multiplied by ss at the destination index, minus sub[g] when sub is not null (after a DIF,
// sub[g] holds the element of index rev(g): what a bit-reversing store writes at g's
// destination).
DEVI void tile_store(const uint4* sm, const tile_t& tl, u32* out, const scale_t& ss,
                     const u32* sub, u32 bitrev_out) {
    const u32 t = tl.t, hb = tl.hb;
#pragma unroll
    for (u32 jj = 0; jj < NTT_TILE / NTT_THREADS; jj++) {
        u32 x = threadIdx.x + jj * NTT_THREADS;
        if (x >= tl.E) break;
        // with top batch bits, consecutive threads take consecutive top bits
        u32 e = hb != 0 ? (((x & ((1u << hb) - 1)) << t) | (x >> hb)) : x;
        size_t g = tl.gidx(e);
        size_t d = bitrev_out ? (size_t)bitrev((u32)g, tl.log_n) : g;
        if (ss.on() || sub != nullptr) {
            fr_t v = load_sm(sm, e);
            if (ss.on()) v = fr_t::mul(v, ss.factor((u32)d));
            if (sub != nullptr) v = fr_t::sub(v, fr_t::load(sub + 8 * g));
            v.store(out + 8 * d);
        } else {
            uint4* dst = reinterpret_cast<uint4*>(out + 8 * d);
            dst[0] = sm[e];
            dst[1] = sm[NTT_TILE + e];
        }
    }
}

// One pass of t fused stages. in/out may alias unless bitrev_out is set.
// Load: x[g] *= mul[g] (if any) * L(rev ? rev(g) : g). Store: position g goes to
// out[bitrev_out ? rev(g) : g], multiplied by S(destination index), minus sub[g] (if any).
DEVI void ntt_pass_body(const ntt_pass_args& a) {
    // two planes (low and high 16 bytes of each element): conflict-free 16-byte accesses
    __shared__ uint4 sm[NTT_TILE * 2];
    const scale_t ls{a.load_c, a.load_lo, a.load_hi, a.lo_bits};
    const scale_t ss{a.store_c, a.store_lo, a.store_hi, a.lo_bits};
    const tile_t tl(a.log_n, a.s_lo, a.t, a.lg_l, a.hb);
    tile_load(sm, tl, a.input, a.load_mul, ls, a.load_rev);
    tile_stages(sm, tl, a.tw, a.dif);
    tile_store(sm, tl, a.output, ss, a.store_sub, a.bitrev_out);
}

// Radix-4 steps, register cap for NTT_MIN_BLOCKS (3) blocks of 256 threads per SM (80
// registers). Measured on the H200 (docs/gpu-kernels.md) against: no cap (102 registers, 2
// blocks), blocks of 128, and plain radix-2 stages (64 registers, 4 blocks), all slower.
extern "C" __global__ void __launch_bounds__(NTT_THREADS, NTT_MIN_BLOCKS)
    ntt_pass(const ntt_pass_args a) {
    ntt_pass_body(a);
}

extern "C" __global__ void fr_pointwise_product(const pointwise_product_args p) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= p.n) return;
    fr_t::mul(fr_t::load(p.a + 8 * i), fr_t::load(p.b + 8 * i)).store(p.out + 8 * i);
}

extern "C" __global__ void fr_h_pointwise(const h_pointwise_args p) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= p.n) return;
    fr_t x = fr_t::mul(fr_t::load(p.a + 8 * i), fr_t::load(p.b + 8 * i));
    fr_t::mul(fr_t::load(p.zinv), fr_t::sub_wide(x, fr_t::load(p.c + 8 * i))).store(p.a + 8 * i);
}

// ---- the H sequence with fused passes -------------------------------------------------------
// For each of a, b, c the inverse transform (DIF with w^-1) ends with the pass of the low
// stages, and the coset transform (DIT with w) starts with the same pass over the same tiles:
// ntt_fused_mid runs both on one tile load, with the n^-1 g^rev(i) scaling in between. For c,
// the DIT ends with the pass of the top stages, which is also the first pass of the final
// inverse (DIF with w^-1, same plan): ntt_fused_top runs c's last DIT pass, the pointwise
// (a b - c) / Z with a and b read at the same indices, and the inverse's first pass on one
// tile load, and writes into a. The H sequence thus reads and writes each array 5 times
// fewer than with separate passes and the pointwise kernel.
//
// The quotient sequence (six transforms) uses the same two kernels: C = A B mod Z, so H is
// the upper half of A B's coefficients. With P = A B and gamma = g^n, the coset inverse of
// the coset evaluations of P gives Y_k = P_k + gamma P_(k+n), C's coefficients are
// C_k = P_k + P_(k+n), so H_k = P_(k+n) = (Y_k - C_k) / (gamma - 1): c is only inverted (never
// taken to the coset), ntt_fused_top runs its FUSED_TOP_PRODUCT step on b's last coset pass
// (pa = A's coset evaluations), and the final pass subtracts C's scaled coefficients as it
// stores.
extern "C" __global__ void __launch_bounds__(NTT_THREADS, NTT_MIN_BLOCKS)
    ntt_fused_mid(const ntt_fused_args a) {
    __shared__ uint4 sm[NTT_TILE * 2];
    const tile_t tl(a.log_n, a.s_lo, a.t, a.lg_l, a.hb);
    const scale_t none{nullptr, nullptr, nullptr, 0};
    const scale_t mid{nullptr, a.scale_lo, a.scale_hi, a.lo_bits};
    tile_load(sm, tl, a.data, nullptr, none, 0);
    tile_stages(sm, tl, a.tw_first, 1);
    // position e holds coefficient rev(g) (times n): scale by n^-1 g^rev(g)
#pragma unroll
    for (u32 jj = 0; jj < NTT_TILE / NTT_THREADS; jj++) {
        u32 e = threadIdx.x + jj * NTT_THREADS;
        if (e >= tl.E) break;
        const u32 g = (u32)tl.gidx(e);
        store_sm(sm, e, fr_t::mul(load_sm(sm, e), mid.factor(bitrev(g, tl.log_n))));
    }
    __syncthreads();
    tile_stages(sm, tl, a.tw_second, 0);
    tile_store(sm, tl, a.data, none, nullptr, 0);
}

extern "C" __global__ void __launch_bounds__(NTT_THREADS, NTT_MIN_BLOCKS)
    ntt_fused_top(const ntt_fused_args a) {
    __shared__ uint4 sm[NTT_TILE * 2];
    const tile_t tl(a.log_n, a.s_lo, a.t, a.lg_l, a.hb);
    const scale_t none{nullptr, nullptr, nullptr, 0};
    tile_load(sm, tl, a.data, nullptr, none, 0);
    tile_stages(sm, tl, a.tw_first, 0);
    if (a.pointwise == FUSED_TOP_PRODUCT) {
#pragma unroll
        for (u32 jj = 0; jj < NTT_TILE / NTT_THREADS; jj++) {
            u32 e = threadIdx.x + jj * NTT_THREADS;
            if (e >= tl.E) break;
            const size_t g = tl.gidx(e);
            store_sm(sm, e, fr_t::mul(fr_t::load(a.pa + 8 * g), load_sm(sm, e)));
        }
    } else {
        const fr_t zinv = fr_t::load(a.zinv);
#pragma unroll
        for (u32 jj = 0; jj < NTT_TILE / NTT_THREADS; jj++) {
            u32 e = threadIdx.x + jj * NTT_THREADS;
            if (e >= tl.E) break;
            const size_t g = tl.gidx(e);
            fr_t v = fr_t::mul(fr_t::load(a.pa + 8 * g), fr_t::load(a.pb + 8 * g));
            store_sm(sm, e, fr_t::mul(zinv, fr_t::sub_wide(v, load_sm(sm, e))));
        }
    }
    __syncthreads();
    tile_stages(sm, tl, a.tw_second, 1);
    tile_store(sm, tl, a.out, none, nullptr, 0);
}
