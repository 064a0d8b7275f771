// proofline cuda/msm_affine.cuh: batch-affine rounds of the bucket accumulation, as templates over
// a curve (struct C as in msm_curve.cuh; G1 over Fp in msm.cu, G2 over Fp2 in msm_g2.cu), and the
// batched inversion they share.
//
// One round halves every bucket: output point i of bucket g is the sum of its input points 2i and
// 2i + 1 (or input 2i alone, the odd one out). The sums are affine additions (chord and tangent:
// lambda = dy / dx), whose divisions share one inversion across the whole round (Montgomery's
// trick): msm_affine_fwd writes, per output position, the product of the denominators before it
// among its thread's positions (into the position's output slot) and, per thread, the product of
// them all; the batch-inversion kernels invert the threads' products (a product tree per block of
// AFF_INV_THREADS values, one tree over the blocks' products with the single inversion at its
// root, and back down); msm_affine_bwd walks each thread's positions backwards, recovers each
// denominator's inverse from the prefix products, and writes the sums. An affine addition costs
// 6 multiplications this way (3 of the trick, 3 of the addition) where the XYZZ mixed addition
// costs 10; after the rounds the balanced XYZZ accumulation (msm_curve.cuh) sums what is left of
// each bucket.
//
// Layout of a round: bucket g's inputs at [ends[g] - counts[g], ends[g]) of `src`, through `vals`
// (point | sign << 31) when it is given, else position k is point k; its outputs at
// [out_ends[g] - ceil(counts[g] / 2), out_ends[g]) of `out`, out_ends being the inclusive scan
// of the halved counts (msm_affine_halve, then an exclusive scan read one element on).
//
// Host orchestration: crates/proofline-gpu/src/msm.rs (`batch_affine`).
#pragma once
#include "common.cuh"
#include "fp2.cuh"
#include "fp_inv.cuh"
#include "msm_curve.cuh"
#include "proofline_abi.cuh"

// What an output position computes, and the denominator it puts into the shared inversion.
enum AffKind : u32 { AFF_ADD, AFF_DBL, AFF_LEFT, AFF_RIGHT, AFF_INF };

template <class C>
DEVI typename C::A aff_point(const affine_round_args& a, u32 k) {
    typedef typename C::A A;
    u32 v = entry_at(a.vals, k);
    A p = A::load(a.src + A::WORDS * (size_t)(v & 0x7fffffffu));
    if ((v >> 31) != 0) p.y = C::F::neg(p.y);
    return p;
}

// The kind of the sum of p and q (q absent: p is the odd one out) and its denominator d (never
// zero; one where there is no division).
template <class C>
DEVI AffKind aff_kind(const typename C::A& p, const typename C::A& q, bool has_q,
                      typename C::F& d) {
    typedef typename C::F F;
    d = F::one();
    if (!has_q) return AFF_LEFT;
    if (p.is_inf()) return AFF_RIGHT;
    if (q.is_inf()) return AFF_LEFT;
    F dx = F::sub(q.x, p.x);
    if (!dx.is_zero()) {
        d = dx;
        return AFF_ADD;
    }
    // same x: p = q (tangent) or p = -q (infinity); y = 0 has no tangent (2-torsion)
    if (q.y.eq(p.y) && !p.y.is_zero()) {
        d = F::dbl(p.y);
        return AFF_DBL;
    }
    return AFF_INF;
}

// The operands of output position o of bucket g (whose outputs start at `ostart`): p, and q
// unless p is the odd one out; the kind of the sum and its denominator (never zero).
template <class C>
DEVI AffKind aff_operands(const affine_round_args& a, u32 g, u32 o, u32 ostart, typename C::A& p,
                          typename C::A& q, typename C::F& d) {
    const u32 cnt = a.counts[g];
    const u32 i = o - ostart;
    const u32 first = a.ends[g] - cnt + 2 * i;
    p = aff_point<C>(a, first);
    const bool has_q = 2 * i + 1 != cnt;
    if (has_q) q = aff_point<C>(a, first + 1);
    return aff_kind<C>(p, q, has_q, d);
}

// The denominator of output position o as aff_operands gives it, reading only the x coordinates
// when they settle it (non-zero and distinct: an addition), the whole points otherwise.
template <class C>
DEVI typename C::F aff_denominator(const affine_round_args& a, u32 g, u32 o, u32 ostart) {
    typedef typename C::A A;
    typedef typename C::F F;
    const u32 cnt = a.counts[g];
    const u32 i = o - ostart;
    if (2 * i + 1 == cnt) return F::one();
    const u32 first = a.ends[g] - cnt + 2 * i;
    const u32 vp = entry_at(a.vals, first);
    const u32 vq = entry_at(a.vals, first + 1);
    const F px = F::load(a.src + A::WORDS * (size_t)(vp & 0x7fffffffu));
    const F qx = F::load(a.src + A::WORDS * (size_t)(vq & 0x7fffffffu));
    F dx = F::sub(qx, px);
    if (!px.is_zero() && !qx.is_zero() && !dx.is_zero()) return dx;
    A p, q;
    F d;
    aff_operands<C>(a, g, o, ostart, p, q, d);
    return d;
}

DEVI u32 aff_half(u32 cnt) { return (cnt + 1) >> 1; }

// half[g] = ceil(counts[g] / 2) for g < m, half[m] = 0 (its exclusive scan ends with the total)
DEVI void affine_halve(const affine_halve_args& a) {
    u32 g = blockIdx.x * blockDim.x + threadIdx.x;
    if (g < a.m) a.half[g] = aff_half(a.counts[g]);
    else if (g == a.m) a.half[g] = 0;
}

// Thread t's output positions: its warp owns [32 L w, min(32 L (w + 1), total)) for L =
// per_thread, and lane l takes every 32nd position of it from l, so that a warp's loads and stores
// of one step are consecutive (with one range per thread, a warp touched 32 distant places per
// step: the forward pass ran at a fifth of its arithmetic's speed). Returns the first position and
// the count.
DEVI u32 aff_positions(const affine_round_args& a, u32 t, u32& first) {
    const u64 span = 32ull * a.per_thread;
    const u64 wbeg = (u64)(t >> 5) * span;
    const u64 wend = min((u64)a.total, wbeg + span);
    const u64 f = wbeg + (t & 31);
    if (f >= wend) return 0;
    first = (u32)f;
    return (u32)((wend - f + 31) / 32);
}

template <class C>
DEVI void affine_fwd(const affine_round_args& a) {
    typedef typename C::F F;
    // the prefix's words rounded up to whole 32-byte sectors (within the slot of a point)
    constexpr u32 AFF_PREFIX_WORDS = (F::WORDS + 7) / 8 * 8;
    static_assert(AFF_PREFIX_WORDS <= C::A::WORDS, "prefix larger than a point");
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= a.threads) return;
    F acc = F::one();
    u32 first = 0;
    const u32 cnt = aff_positions(a, t, first);
    if (cnt > 0) {
        u32 g = bucket_of(a.out_ends, a.m, first);
        for (u32 k = 0; k < cnt; k++) {
            const u32 o = first + 32 * k;
            while (a.out_ends[g] <= o) g++;
            const F d = aff_denominator<C>(a, g, o, a.out_ends[g] - aff_half(a.counts[g]));
            // the prefix waits in the first words of the output slot, which the backward pass
            // reads before it writes the sum there; padded with zeros to whole 32-byte sectors
            // (a partly written sector costs the memory a read-modify-write)
            u32* slot = a.out + C::A::WORDS * (size_t)o;
            acc.store(slot);
#pragma unroll
            for (u32 w = F::WORDS; w < AFF_PREFIX_WORDS; w += 4)
                *reinterpret_cast<uint4*>(slot + w) = make_uint4(0, 0, 0, 0);
            acc = F::mul(acc, d);
        }
    }
    acc.store(a.totals + F::WORDS * (size_t)t);
}

// The sum of p and q of `kind`, dinv the inverse of its denominator.
template <class C>
DEVI typename C::A aff_sum(AffKind kind, const typename C::A& p, const typename C::A& q,
                           const typename C::F& dinv) {
    typedef typename C::A A;
    typedef typename C::F F;
    switch (kind) {
    case AFF_LEFT: return p;
    case AFF_RIGHT: return q;
    case AFF_INF: return A::inf();
    default: {
        F lambda;
        if (kind == AFF_ADD) {
            lambda = F::mul(F::sub(q.y, p.y), dinv);
        } else {
            F xx = F::sqr(p.x);
            lambda = F::mul(F::add(xx, F::dbl(xx)), dinv);
        }
        A r;
        r.x = F::sub(F::sub(F::sqr(lambda), p.x), q.x);
        r.y = F::sub(F::mul(lambda, F::sub(p.x, r.x)), p.y);
        return r;
    }
    }
}

template <class C>
DEVI void affine_bwd(const affine_round_args& a) {
    typedef typename C::A A;
    typedef typename C::F F;
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= a.threads) return;
    u32 first = 0;
    const u32 cnt = aff_positions(a, t, first);
    if (cnt == 0) return;
    F inv = F::load(a.inv + F::WORDS * (size_t)t);
    u32 g = bucket_of(a.out_ends, a.m, first + 32 * (cnt - 1));
    for (u32 k = cnt; k-- > 0;) {
        const u32 o = first + 32 * k;
        u32 ostart;
        while ((ostart = a.out_ends[g] - aff_half(a.counts[g])) > o) g--;
        A p, q;
        F d;
        const AffKind kind = aff_operands<C>(a, g, o, ostart, p, q, d);
        const F dinv = F::mul(inv, F::load(a.out + A::WORDS * (size_t)o));
        inv = F::mul(inv, d);
        aff_sum<C>(kind, p, q, dinv).store(a.out + A::WORDS * (size_t)o);
    }
}

// ---- the passes with their gathers in flight ------------------------------------------------
// The passes above wait on their loads one after the other at each position: the bucket's ends
// and count, then the entries, then the points (random bases in the first round), with 128
// registers per thread leaving 16 warps per multiprocessor to cover that latency (ncu at 2^24:
// the forward pass at 55 % of the DRAM bandwidth and 17 % of its issue slots). These passes
// locate the operands of the next S - 1 positions ahead of the one they work on and copy their
// coordinates into shared memory with cp.async, so that a thread has S positions' gathers in
// flight. Each thread owns its slices of the ring (S slots of `chunks` 16-byte chunks, chunk c
// of thread j at [c][j]: a warp's accesses of one chunk are consecutive), so no barrier is
// needed. The same positions and results as affine_fwd / affine_bwd.

constexpr u32 AFF_HAS_Q = 1u << 31;

// Where a position's operands are: its bucket (AFF_HAS_Q set unless p is the odd one out) and
// the entries of p and q.
struct aff_loc {
    u32 g, vp, vq;
};

template <class C>
DEVI aff_loc aff_locate(const affine_round_args& a, u32 g, u32 o, u32 ostart) {
    const u32 cnt = a.counts[g];
    const u32 i = o - ostart;
    const u32 first = a.ends[g] - cnt + 2 * i;
    aff_loc l;
    l.vp = entry_at(a.vals, first);
    if (2 * i + 1 == cnt) {
        l.g = g;
        l.vq = 0;
    } else {
        l.g = g | AFF_HAS_Q;
        l.vq = entry_at(a.vals, first + 1);
    }
    return l;
}

// Starts copying the first `chunks` 16-byte chunks of p (and of q) into `slot` (this thread's
// chunk 0; q's from chunk `chunks`).
template <class C, u32 CHUNKS>
DEVI void aff_fetch(const affine_round_args& a, const aff_loc& l, uint4* slot) {
    typedef typename C::A A;
    const u32* pp = a.src + A::WORDS * (size_t)(l.vp & 0x7fffffffu);
#pragma unroll
    for (u32 c = 0; c < CHUNKS; c++) async_copy16(slot + c * AFF_THREADS, pp + 4 * c);
    if (l.g & AFF_HAS_Q) {
        const u32* qp = a.src + A::WORDS * (size_t)(l.vq & 0x7fffffffu);
#pragma unroll
        for (u32 c = 0; c < CHUNKS; c++)
            async_copy16(slot + (CHUNKS + c) * AFF_THREADS, qp + 4 * c);
    }
}

// A field element from this thread's chunks at `p` (chunk c at p[c * AFF_THREADS]).
template <class F>
DEVI F ring_field(const uint4* p) {
    F r;
#pragma unroll
    for (u32 c = 0; c < F::WORDS / 4; c++) {
        const uint4 u = p[c * AFF_THREADS];
        r.v[4 * c] = u.x;
        r.v[4 * c + 1] = u.y;
        r.v[4 * c + 2] = u.z;
        r.v[4 * c + 3] = u.w;
    }
    return r;
}

// A point of the ring (its entry's sign applied).
template <class C>
DEVI typename C::A ring_point(const uint4* p, u32 v) {
    typedef typename C::F F;
    typename C::A r;
    r.x = ring_field<F>(p);
    r.y = ring_field<F>(p + (F::WORDS / 4) * AFF_THREADS);
    if ((v >> 31) != 0) r.y = F::neg(r.y);
    return r;
}

// affine_fwd with S positions' x coordinates in flight.
template <class C, u32 S>
DEVI void affine_fwd_inflight(const affine_round_args& a) {
    typedef typename C::F F;
    constexpr u32 FC = F::WORDS / 4;  // chunks per coordinate
    constexpr u32 AFF_PREFIX_WORDS = (F::WORDS + 7) / 8 * 8;
    __shared__ uint4 ring[S * 2 * FC * AFF_THREADS];
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= a.threads) return;
    F acc = F::one();
    u32 first = 0;
    const u32 cnt = aff_positions(a, t, first);
    uint4* const mine = ring + threadIdx.x;
    // the walk that locates positions ahead: bucket g holds position `first + 32 j` next
    u32 g = cnt > 0 ? bucket_of(a.out_ends, a.m, first) : 0;
    aff_loc loc[S];
    auto start = [&](u32 j) -> aff_loc {
        const u32 o = first + 32 * j;
        while (a.out_ends[g] <= o) g++;
        const aff_loc l = aff_locate<C>(a, g, o, a.out_ends[g] - aff_half(a.counts[g]));
        aff_fetch<C, FC>(a, l, mine + (j % S) * 2 * FC * AFF_THREADS);
        return l;
    };
#pragma unroll
    for (u32 j = 0; j + 1 < S; j++) {
        if (j < cnt) loc[j] = start(j);
        async_commit();
    }
    for (u32 k = 0; k < cnt; k++) {
        if (k + S - 1 < cnt) loc[S - 1] = start(k + S - 1);
        async_commit();
        async_wait<S - 1>();
        const aff_loc l = loc[0];
        const u32 o = first + 32 * k;
        F d = F::one();
        if (l.g & AFF_HAS_Q) {
            const uint4* slot = mine + (k % S) * 2 * FC * AFF_THREADS;
            const F px = ring_field<F>(slot), qx = ring_field<F>(slot + FC * AFF_THREADS);
            const F dx = F::sub(qx, px);
            if (!px.is_zero() && !qx.is_zero() && !dx.is_zero()) {
                d = dx;
            } else {
                // an infinity, a doubling or a sum to infinity: the whole points decide
                const u32 bg = l.g & ~AFF_HAS_Q;
                typename C::A p, q;
                aff_operands<C>(a, bg, o, a.out_ends[bg] - aff_half(a.counts[bg]), p, q, d);
            }
        }
        u32* out = a.out + C::A::WORDS * (size_t)o;
        acc.store(out);
#pragma unroll
        for (u32 w = F::WORDS; w < AFF_PREFIX_WORDS; w += 4)
            *reinterpret_cast<uint4*>(out + w) = make_uint4(0, 0, 0, 0);
        acc = F::mul(acc, d);
#pragma unroll
        for (u32 j = 0; j + 1 < S; j++) loc[j] = loc[j + 1];
    }
    acc.store(a.totals + F::WORDS * (size_t)t);
}

// affine_bwd with S positions' points in flight (walking its positions backwards).
template <class C, u32 S>
DEVI void affine_bwd_inflight(const affine_round_args& a) {
    typedef typename C::A A;
    typedef typename C::F F;
    constexpr u32 PC = A::WORDS / 4;  // chunks per point
    __shared__ uint4 ring[S * 2 * PC * AFF_THREADS];
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= a.threads) return;
    u32 first = 0;
    const u32 cnt = aff_positions(a, t, first);
    if (cnt == 0) return;
    uint4* const mine = ring + threadIdx.x;
    F inv = F::load(a.inv + F::WORDS * (size_t)t);
    // the walk that locates positions ahead, from the last: step j is position
    // `first + 32 (cnt - 1 - j)`
    u32 g = bucket_of(a.out_ends, a.m, first + 32 * (cnt - 1));
    aff_loc loc[S];
    auto start = [&](u32 j) -> aff_loc {
        const u32 o = first + 32 * (cnt - 1 - j);
        u32 ostart;
        while ((ostart = a.out_ends[g] - aff_half(a.counts[g])) > o) g--;
        const aff_loc l = aff_locate<C>(a, g, o, ostart);
        aff_fetch<C, PC>(a, l, mine + (j % S) * 2 * PC * AFF_THREADS);
        return l;
    };
#pragma unroll
    for (u32 j = 0; j + 1 < S; j++) {
        if (j < cnt) loc[j] = start(j);
        async_commit();
    }
    for (u32 j = 0; j < cnt; j++) {
        if (j + S - 1 < cnt) loc[S - 1] = start(j + S - 1);
        async_commit();
        const u32 o = first + 32 * (cnt - 1 - j);
        u32* out = a.out + A::WORDS * (size_t)o;
        async_wait<S - 1>();
        const aff_loc l = loc[0];
        const uint4* slot = mine + (j % S) * 2 * PC * AFF_THREADS;
        const bool has_q = (l.g & AFF_HAS_Q) != 0;
        const A p = ring_point<C>(slot, l.vp);
        A q;
        if (has_q) q = ring_point<C>(slot + PC * AFF_THREADS, l.vq);
        F d;
        const AffKind kind = aff_kind<C>(p, q, has_q, d);
        const F dinv = F::mul(inv, F::load(out));
        inv = F::mul(inv, d);
        aff_sum<C>(kind, p, q, dinv).store(out);
#pragma unroll
        for (u32 i = 0; i + 1 < S; i++) loc[i] = loc[i + 1];
    }
}

// ---- batched inversion -----------------------------------------------------------------------
// The single inversion at the root: the binary algorithm in Fp (fp_inv.cuh: one thread's
// latency is what counts there), in Fp2 through the norm: 1 / (a0 + a1 u) = (a0 - a1 u) /
// (a0^2 + a1^2).
DEVI fp_t root_inv(const fp_t& a) { return fp_inv_vartime(a); }
DEVI fp2_t root_inv(const fp2_t& a) {
    const fp_t ni = fp_inv_vartime(fp_t::add(fp_t::sqr(a.c0), fp_t::sqr(a.c1)));
    return fp2_t::make(fp_t::mul(a.c0, ni), fp_t::neg(fp_t::mul(a.c1, ni)));
}

// A product tree of AFF_INV_THREADS leaves in shared memory (heap order: node k's children are
// 2k and 2k + 1, the leaves at AFF_INV_THREADS + j); every thread of the block calls these.

// Node k of the tree (the root is node 1).
template <class F>
DEVI u32* tree_node(uint4* tree, u32 k) {
    return reinterpret_cast<u32*>(tree + (F::WORDS / 4) * k);
}

// Leaf j := x (one where x is absent), then the products up to the root.
template <class F>
DEVI void tree_up(uint4* tree, u32 j, const F& x) {
    x.store(tree_node<F>(tree, AFF_INV_THREADS + j));
    __syncthreads();
    for (u32 span = AFF_INV_THREADS / 2; span >= 1; span >>= 1) {
        if (j < span) {
            const u32 k = span + j;
            F::mul(F::load(tree_node<F>(tree, 2 * k)), F::load(tree_node<F>(tree, 2 * k + 1)))
                .store(tree_node<F>(tree, k));
        }
        __syncthreads();
    }
}

// From the inverse at the root to the inverses of the leaves; returns leaf j's.
template <class F>
DEVI F tree_down(uint4* tree, u32 j) {
    for (u32 span = 1; span < AFF_INV_THREADS; span <<= 1) {
        if (j < span) {
            const u32 k = span + j;
            u32* nl = tree_node<F>(tree, 2 * k);
            u32* nr = tree_node<F>(tree, 2 * k + 1);
            F iv = F::load(tree_node<F>(tree, k)), l = F::load(nl), r = F::load(nr);
            F::mul(iv, r).store(nl);
            F::mul(iv, l).store(nr);
        }
        __syncthreads();
    }
    return F::load(tree_node<F>(tree, AFF_INV_THREADS + j));
}

// Block b: blk[b] = product of values[b AFF_INV_THREADS + j], j < AFF_INV_THREADS, i < n.
template <class F>
DEVI void batch_inv_up(const batch_inv_args& a) {
    __shared__ uint4 tree[2 * AFF_INV_THREADS * (F::WORDS / 4)];
    const u32 j = threadIdx.x, i = blockIdx.x * AFF_INV_THREADS + j;
    tree_up<F>(tree, j, i < a.n ? F::load(a.values + F::WORDS * (size_t)i) : F::one());
    if (j == 0) F::load(tree_node<F>(tree, 1)).store(a.blk + F::WORDS * (size_t)blockIdx.x);
}

// One block: blk[b] = 1 / blk[b], b < blocks (at most AFF_INV_THREADS), with one inversion.
template <class F>
DEVI void batch_inv_top(const batch_inv_args& a) {
    __shared__ uint4 tree[2 * AFF_INV_THREADS * (F::WORDS / 4)];
    const u32 j = threadIdx.x;
    tree_up<F>(tree, j, j < a.blocks ? F::load(a.blk + F::WORDS * (size_t)j) : F::one());
    if (j == 0) root_inv(F::load(tree_node<F>(tree, 1))).store(tree_node<F>(tree, 1));
    __syncthreads();
    const F inv = tree_down<F>(tree, j);
    if (j < a.blocks) inv.store(a.blk + F::WORDS * (size_t)j);
}

// Block b: out[i] = 1 / values[i] for its values, from blk[b] = 1 / (their product).
template <class F>
DEVI void batch_inv_down(const batch_inv_args& a) {
    __shared__ uint4 tree[2 * AFF_INV_THREADS * (F::WORDS / 4)];
    const u32 j = threadIdx.x, i = blockIdx.x * AFF_INV_THREADS + j;
    tree_up<F>(tree, j, i < a.n ? F::load(a.values + F::WORDS * (size_t)i) : F::one());
    if (j == 0) F::load(a.blk + F::WORDS * (size_t)blockIdx.x).store(tree_node<F>(tree, 1));
    __syncthreads();
    const F inv = tree_down<F>(tree, j);
    if (i < a.n) inv.store(a.out + F::WORDS * (size_t)i);
}
