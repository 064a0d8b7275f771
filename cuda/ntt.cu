// proofline cuda/ntt.cu: number-theoretic transforms over BLS12-381 Fr and the
// Groth16 H-polynomial helpers.
//
// Owner: GPU kernels (issue 4). Host orchestration: crates/proofline-gpu/src/ntt.rs.
//
// Data are Fr elements in Montgomery form, 8 x u32 each (blstrs::Scalar).
//  * ntt_pass: a group of t radix-2 stages fused in shared memory. Stage s
//    pairs indices that differ in bit s. A block loads a tile of 2^t elements
//    along bits [s_lo, s_lo + t) times 2^lg_l consecutive low indices (so loads
//    are coalesced runs of 32 * 2^lg_l bytes), runs the t stages, and writes
//    the tile back. dif = 1: Gentleman-Sande (natural in, bit-reversed out,
//    stages high to low); dif = 0: Cooley-Tukey (bit-reversed in, natural out,
//    stages low to high). Twiddles: tw[m] = w^m, m < n/2, w the n-th root.
//    Scaling (coset powers, n^-1) is fused into the load of the first pass and
//    the store of the last; the last DIF pass can write bit-reversed into a
//    second buffer, which removes the separate permutation pass.
//  * fr_h_pointwise: a = (a * b - c) * zinv.
//  * fr_build_table: out[m] = lo[m & lo_mask] * hi[m >> lo_bits] (twiddles,
//    coset powers), from two small host-computed tables.
#include "fr.cuh"

#define NTT_TILE 1024
#define NTT_THREADS 256

DEVI u32 bitrev(u32 x, u32 bits) { return bits == 0 ? 0 : (__brev(x) >> (32 - bits)); }

DEVI fr_t pow_from_tables(const u32* lo, const u32* hi, u32 idx, u32 lo_bits) {
    fr_t a = fr_t::load(lo + 8 * (idx & ((1u << lo_bits) - 1)));
    fr_t b = fr_t::load(hi + 8 * (idx >> lo_bits));
    return fr_t::mul(a, b);
}

extern "C" __global__ void fr_build_table(u32* out, const u32* lo, const u32* hi, u32 count, u32 lo_bits) {
    u32 m = blockIdx.x * blockDim.x + threadIdx.x;
    if (m >= count) return;
    pow_from_tables(lo, hi, m, lo_bits).store(out + 8 * (size_t)m);
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

// One pass of t fused stages. in/out may alias unless bitrev_out is set.
// Load: x[g] *= L(rev ? rev(g) : g). Store: position g goes to out[bitrev_out ?
// rev(g) : g], multiplied by S(destination index).
extern "C" __global__ void __launch_bounds__(NTT_THREADS)
ntt_pass(const u32* in, u32* out, const u32* tw, u32 log_n, u32 s_lo, u32 t, u32 lg_l, u32 dif,
         const u32* lc, const u32* lplo, const u32* lphi, u32 lrev, const u32* sc, const u32* splo,
         const u32* sphi, u32 bitrev_out, u32 lo_bits) {
    // two planes (low and high 16 bytes of each element): conflict-free 16-byte accesses
    __shared__ uint4 sm[NTT_TILE * 2];
    const scale_t ls{lc, lplo, lphi, lo_bits}, ss{sc, splo, sphi, lo_bits};
    const u32 L = 1u << lg_l;
    const u32 E = 1u << (t + lg_l);
    const u32 low_blocks = (1u << s_lo) >> lg_l;
    const u32 lowblock = blockIdx.x % low_blocks;
    const size_t high = blockIdx.x / low_blocks;
    const size_t base = ((size_t)lowblock << lg_l) + (high << (s_lo + t));

#pragma unroll
    for (u32 jj = 0; jj < NTT_TILE / NTT_THREADS; jj++) {
        u32 e = threadIdx.x + jj * NTT_THREADS;
        if (e >= E) break;
        size_t g = base + (e & (L - 1)) + ((size_t)(e >> lg_l) << s_lo);
        const uint4* src = reinterpret_cast<const uint4*>(in + 8 * g);
        if (ls.on()) {
            fr_t x = fr_t::load(in + 8 * g);
            x = fr_t::mul(x, ls.factor(lrev ? bitrev((u32)g, log_n) : (u32)g));
            store_sm(sm, e, x);
        } else {
            sm[e] = src[0];
            sm[NTT_TILE + e] = src[1];
        }
    }
    __syncthreads();

    for (u32 k = 0; k < t; k++) {
        const u32 r = dif ? (t - 1 - k) : k;
        const u32 h = 1u << r;
        const u32 s = s_lo + r;
        // fixed trip count, unrolled: the two butterflies of a thread overlap
#pragma unroll
        for (u32 jj = 0; jj < NTT_TILE / 2 / NTT_THREADS; jj++) {
            u32 b = threadIdx.x + jj * NTT_THREADS;
            if (b >= (E >> 1)) break;
            u32 lowpart = b & (L - 1);
            u32 q = b >> lg_l;
            u32 i = ((q >> r) << (r + 1)) | (q & (h - 1));
            u32 e0 = (i << lg_l) | lowpart;
            u32 e1 = e0 + (h << lg_l);
            size_t m = ((((size_t)(q & (h - 1))) << s_lo) | ((size_t)lowblock << lg_l) | lowpart)
                       << (log_n - s - 1);
            fr_t x0 = load_sm(sm, e0), x1 = load_sm(sm, e1);
            fr_t y0, y1;
            if (dif) {
                y0 = fr_t::add(x0, x1);
                y1 = fr_t::sub(x0, x1);
                if (m != 0) y1 = fr_t::mul(y1, fr_t::load(tw + 8 * m));
            } else {
                fr_t v = m != 0 ? fr_t::mul(x1, fr_t::load(tw + 8 * m)) : x1;
                y0 = fr_t::add(x0, v);
                y1 = fr_t::sub(x0, v);
            }
            store_sm(sm, e0, y0);
            store_sm(sm, e1, y1);
        }
        __syncthreads();
    }

#pragma unroll
    for (u32 jj = 0; jj < NTT_TILE / NTT_THREADS; jj++) {
        u32 e = threadIdx.x + jj * NTT_THREADS;
        if (e >= E) break;
        size_t g = base + (e & (L - 1)) + ((size_t)(e >> lg_l) << s_lo);
        size_t d = bitrev_out ? (size_t)bitrev((u32)g, log_n) : g;
        if (ss.on()) {
            fr_t x = load_sm(sm, e);
            fr_t::mul(x, ss.factor((u32)d)).store(out + 8 * d);
        } else {
            uint4* dst = reinterpret_cast<uint4*>(out + 8 * d);
            dst[0] = sm[e];
            dst[1] = sm[NTT_TILE + e];
        }
    }
}

extern "C" __global__ void fr_h_pointwise(u32* a, const u32* b, const u32* c, u32 n, const u32* zinv) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    fr_t x = fr_t::mul(fr_t::load(a + 8 * i), fr_t::load(b + 8 * i));
    x = fr_t::sub(x, fr_t::load(c + 8 * i));
    fr_t::mul(x, fr_t::load(zinv)).store(a + 8 * i);
}
