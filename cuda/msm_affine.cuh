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
// Point k of `src` has its x at src + k src_stride and its y at src_y + k src_stride (words), and
// likewise for `out`: interleaved (x and y side by side, the bases' layout: stride 2 F::WORDS)
// or split (all the x, then all the y: stride F::WORDS), so that a round that reads only the x
// of consecutive points (the forward pass after the first round) reads them contiguously.
//
// Host orchestration: crates/proofline-gpu/src/msm/affine.rs (`batch_affine`).
#pragma once
#include "common.cuh"
#include "fp2.cuh"
#include "fp_inv.cuh"
#include "msm_curve.cuh"
#include "proofline_abi.cuh"

// What an output position computes, and the denominator it puts into the shared inversion.
enum AffKind : u32 { AFF_ADD, AFF_DBL, AFF_LEFT, AFF_RIGHT, AFF_INF };

DEVI u32 aff_half(u32 cnt) { return (cnt + 1) >> 1; }

// Where output position o of a round takes its inputs: `first`, the index of its first input in
// the round's input order, and whether input first + 1 is its second or it is the odd one out.
struct aff_site {
    u32 first;
    bool pair;
};

// The site of position o in bucket g (o within the bucket's outputs).
DEVI aff_site aff_site_in(const affine_round_args& a, u32 g, u32 o) {
    const u32 cnt = a.counts[g];
    const u32 i = o - (a.out_ends[g] - aff_half(cnt));
    return {a.ends[g] - cnt + 2 * i, 2 * i + 1 < cnt};
}

// The site of position o, walking g up from a bucket at or before o's (the forward pass).
DEVI aff_site aff_site_up(const affine_round_args& a, u32 o, u32& g) {
    while (a.out_ends[g] <= o) g++;
    return aff_site_in(a, g, o);
}

// The site of position o, walking g down from a bucket at or after o's (the backward pass).
DEVI aff_site aff_site_down(const affine_round_args& a, u32 o, u32& g) {
    while (a.out_ends[g] - aff_half(a.counts[g]) > o) g--;
    return aff_site_in(a, g, o);
}

// A site's inputs as entries (point | sign << 31; q is 0 for the odd one out).
struct aff_entries {
    u32 p, q;
};

DEVI aff_entries aff_entries_of(const affine_round_args& a, aff_site s) {
    return {entry_at(a.vals, s.first), s.pair ? entry_at(a.vals, s.first + 1) : 0u};
}

// An asynchronous copy of one T (u32 or uint4) from global into shared memory (`cp.async`,
// completed by aff_staged_wait), which holds no register while in flight: cached in L1 for 4
// bytes, in L2 only for 16 (what `cp.async` allows); a plain copy in the host build.
template <class T>
DEVI void aff_copy_async(T* to, const T* from) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 16, "cp.async here copies 4 or 16 bytes");
#ifdef __CUDA_ARCH__
    const u32 at = static_cast<u32>(__cvta_generic_to_shared(to));
    if constexpr (sizeof(T) == 4)
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(at), "l"(from) : "memory");
    else
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(at), "l"(from) : "memory");
#else
    *to = *from;
#endif
}
// Waits for the thread's asynchronous copies.
DEVI void aff_staged_wait() {
#ifdef __CUDA_ARCH__
    asm volatile("cp.async.wait_all;" ::: "memory");
#endif
}

// What the backward pass stages in shared memory for a position, one position ahead: its entries
// (two words) and its prefix product (F's words), for AFF_THREADS threads. Staged, neither holds
// a register while its load is in flight: held in registers across the additions of the current
// position, ptxas spilled them, and the spill's store waited on the load.
template <class F>
struct aff_stage {
    u32 entries[2 * AFF_THREADS];
    uint4 prefix[AFF_THREADS * (F::WORDS / 4)];

    // A site's entries: copied where the round has entries (the first), written where a
    // position's entry is its index.
    DEVI void put_entries(const affine_round_args& a, aff_site s) {
        u32* slot = entries + 2 * threadIdx.x;
        if (a.vals == nullptr) {
            slot[0] = s.first;
            slot[1] = s.pair ? s.first + 1 : 0u;
            return;
        }
        aff_copy_async(slot, a.vals + s.first);
        if (s.pair) aff_copy_async(slot + 1, a.vals + s.first + 1);
        else slot[1] = 0;
    }
    // The prefix product the forward pass left at position o's output.
    DEVI void put_prefix(const affine_round_args& a, u32 o) {
        const uint4* from = reinterpret_cast<const uint4*>(a.out + a.out_stride * (size_t)o);
        uint4* to = prefix + (F::WORDS / 4) * threadIdx.x;
#pragma unroll
        for (u32 i = 0; i < F::WORDS / 4; i++) aff_copy_async(to + i, from + i);
    }
    // After aff_staged_wait.
    DEVI aff_entries get_entries() const {
        return {entries[2 * threadIdx.x], entries[2 * threadIdx.x + 1]};
    }
    DEVI typename F::wide_t get_prefix() const {
        return F::wide_t::load(reinterpret_cast<const u32*>(prefix + (F::WORDS / 4) * threadIdx.x));
    }
};

// Word offset of input point v (an entry: point | sign << 31) in `src` and `src_y`.
DEVI size_t aff_at(const affine_round_args& a, u32 v) {
    return a.src_stride * (size_t)(v & 0x7fffffffu);
}

template <class C>
DEVI typename C::F aff_x(const affine_round_args& a, u32 v) {
    return C::F::load(a.src + aff_at(a, v));
}

// Input point v (its sign bit not applied: aff_signed, once the load is wanted).
template <class C>
DEVI typename C::A aff_point(const affine_round_args& a, u32 v) {
    typename C::A p;
    p.x = aff_x<C>(a, v);
    p.y = C::F::load(a.src_y + aff_at(a, v));
    return p;
}

template <class C>
DEVI void aff_signed(typename C::A& p, u32 v) {
    if ((v >> 31) != 0) p.y = C::F::neg(p.y);
}

// The operands of a position, p and q (unless p is the odd one out) as aff_point loaded them;
// applies their signs and returns the kind of the sum and its denominator (never zero), which is
// only multiplied: unreduced where the field allows it (an addition's x difference skips its
// correction; distinct x are told by comparing them).
template <class C>
DEVI AffKind aff_classify(aff_site s, aff_entries e, typename C::A& p, typename C::A& q,
                          typename C::F::wide_t& d) {
    typedef typename C::F F;
    aff_signed<C>(p, e.p);
    d = F::widen(F::one());
    if (!s.pair) return AFF_LEFT;
    aff_signed<C>(q, e.q);
    if (p.is_inf()) return AFF_RIGHT;
    if (q.is_inf()) return AFF_LEFT;
    if (!q.x.eq(p.x)) {
        d = F::sub_wide(q.x, p.x);
        return AFF_ADD;
    }
    // same x: p = q (tangent) or p = -q (infinity); y = 0 has no tangent (2-torsion)
    if (q.y.eq(p.y) && !p.y.is_zero()) {
        d = F::add_wide(p.y, p.y);
        return AFF_DBL;
    }
    return AFF_INF;
}

// The denominator of a position as aff_classify gives it, from its inputs' x when they settle it
// (non-zero and distinct: an addition), from the whole points otherwise.
template <class C>
DEVI typename C::F::wide_t aff_denominator(const affine_round_args& a, aff_site s,
                                           aff_entries e, const typename C::F& px,
                                           const typename C::F& qx) {
    typedef typename C::A A;
    typedef typename C::F F;
    if (!s.pair) return F::widen(F::one());
    if (!px.is_zero() && !qx.is_zero() && !qx.eq(px)) return F::sub_wide(qx, px);
    A p = aff_point<C>(a, e.p), q = aff_point<C>(a, e.q);
    typename F::wide_t d;
    aff_classify<C>(s, e, p, q, d);
    return d;
}

// The sum of p and q (signed, neither infinity) through lambda = (q.y - p.y) dinv (AFF_ADD) or
// 3 p.x^2 dinv (AFF_DBL, q = p), dinv the inverse of the kind's denominator (unreduced):
// x = lambda^2 - p.x - q.x, y = lambda (p.x - x) - p.y. Over a field with two spare bits (Fp:
// mont.cuh's TWO_SPARE) lambda, its square and the product of y stay unreduced, the differences
// that feed products skip their corrections, and each coordinate is reduced once.
template <class C>
DEVI typename C::A aff_sum(AffKind kind, const typename C::A& p, const typename C::A& q,
                           const typename C::F::wide_t& dinv) {
    typedef typename C::F F;
    typename C::A r;
    if constexpr (F::TWO_SPARE) {
        typename F::wide_t lambda;
        if (kind == AFF_ADD) {
            lambda = F::mul_unreduced(F::sub_wide(q.y, p.y), dinv);
        } else {
            const F xx = F::sqr(p.x);
            lambda = F::mul_unreduced(F::add_wide(xx, F::dbl(xx)), dinv);
        }
        r.x = F::reduce(F::sub_unreduced(F::sqr_unreduced(lambda), F::add_wide(p.x, q.x)));
        r.y = F::reduce(F::sub_unreduced(F::mul_unreduced(lambda, F::sub_wide(p.x, r.x)),
                                         F::widen(p.y)));
    } else {
        F lambda;
        if (kind == AFF_ADD) {
            lambda = F::mul(F::sub(q.y, p.y), dinv);
        } else {
            const F xx = F::sqr(p.x);
            lambda = F::mul(F::add(xx, F::dbl(xx)), dinv);
        }
        r.x = F::sub(F::sub(F::sqr(lambda), p.x), q.x);
        r.y = F::sub(F::mul(lambda, F::sub(p.x, r.x)), p.y);
    }
    return r;
}

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

// The passes are software-pipelined: a position's inputs are found through a chain of dependent
// loads (its bucket's bounds, then its entries, then the points), which a pass that starts them
// only when it reaches the position waits on in full before its arithmetic. The forward pass
// finds position k + 2's site and issues its entries' loads, and issues k + 1's x loads, before
// it multiplies for k; the backward pass finds k - 1's site and stages k - 1's entries and prefix
// product in shared memory (aff_stage) before the additions of k, then issues k's gathers and
// makes k's first product, which needs none of them, while they are in flight (a value in flight
// in a register costs the registers the backward pass does not have: ptxas spilled them).
template <class C>
DEVI void affine_fwd(const affine_round_args& a) {
    typedef typename C::F F;
    // the prefix's words rounded up to whole 32-byte sectors (within the slot of a point)
    constexpr u32 AFF_PREFIX_WORDS = (F::WORDS + 7) / 8 * 8;
    static_assert(AFF_PREFIX_WORDS <= C::A::WORDS, "prefix larger than a point");
    typedef typename F::wide_t W;
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= a.threads) return;
    // unreduced where the field allows it (Fp: mont.cuh's TWO_SPARE): only multiplied again
    W acc = F::widen(F::one());
    u32 first = 0;
    const u32 cnt = aff_positions(a, t, first);
    if (cnt > 0) {
        u32 g = bucket_of(a.out_ends, a.m, first);
        // position k (current), k + 1 (next) and k + 2 (after)
        aff_site sc = aff_site_up(a, first, g), sn = sc, sa = sc;
        aff_entries ec = aff_entries_of(a, sc), en = ec, ea = ec;
        F pxc = aff_x<C>(a, ec.p), qxc = sc.pair ? aff_x<C>(a, ec.q) : pxc, pxn = pxc, qxn = qxc;
        if (cnt > 1) {
            sn = aff_site_up(a, first + 32, g);
            en = aff_entries_of(a, sn);
        }
        for (u32 k = 0; k < cnt; k++) {
            const u32 o = first + 32 * k;
            if (k + 1 < cnt) {
                pxn = aff_x<C>(a, en.p);
                if (sn.pair) qxn = aff_x<C>(a, en.q);
            }
            if (k + 2 < cnt) {
                sa = aff_site_up(a, o + 64, g);
                ea = aff_entries_of(a, sa);
            }
            const W d = aff_denominator<C>(a, sc, ec, pxc, qxc);
            // the prefix waits in the output's x, which the backward pass reads before it
            // writes the sum there; with interleaved outputs padded with zeros (into the y) to
            // whole 32-byte sectors (a partly written sector costs the memory a
            // read-modify-write); split outputs' x are contiguous, a warp's writes whole sectors
            u32* slot = a.out + a.out_stride * (size_t)o;
            acc.store(slot);
            if (a.out_stride == C::A::WORDS) {
#pragma unroll
                for (u32 w = F::WORDS; w < AFF_PREFIX_WORDS; w += 4)
                    *reinterpret_cast<uint4*>(slot + w) = make_uint4(0, 0, 0, 0);
            }
            acc = F::mul_unreduced(acc, d);
            sc = sn;
            ec = en;
            pxc = pxn;
            qxc = qxn;
            sn = sa;
            en = ea;
        }
    }
    // reduced for the batched inversion, whose products take reduced first operands
    F::reduce(acc).store(a.totals + F::WORDS * (size_t)t);
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
    // the running inverse, unreduced as the forward pass's product
    typename F::wide_t inv = F::widen(F::load(a.inv + F::WORDS * (size_t)t));
    u32 g = bucket_of(a.out_ends, a.m, first + 32 * (cnt - 1));
    aff_site sc = aff_site_down(a, first + 32 * (cnt - 1), g);
    // two stages, position k's in stage k % 2
    __shared__ aff_stage<F> stage[2];
    stage[(cnt - 1) & 1].put_entries(a, sc);
    stage[(cnt - 1) & 1].put_prefix(a, first + 32 * (cnt - 1));
    for (u32 k = cnt; k-- > 0;) {
        const u32 o = first + 32 * k;
        aff_staged_wait();
        const aff_entries e = stage[k & 1].get_entries();
        const aff_site s = sc;
        // the next position's site, entries and prefix first, while no gather is in flight
        if (k > 0) {
            sc = aff_site_down(a, o - 32, g);
            stage[(k - 1) & 1].put_entries(a, sc);
            stage[(k - 1) & 1].put_prefix(a, o - 32);
        }
        A p = aff_point<C>(a, e.p), q;
        if (s.pair) q = aff_point<C>(a, e.q);
        const size_t at = a.out_stride * (size_t)o;
        // a position's inverse is only multiplied again (as the second operand, dy and 3 x^2
        // being reduced): it skips its final subtraction. Made while the gathers are in flight.
        const typename F::wide_t dinv = F::mul_unreduced(inv, stage[k & 1].get_prefix());
        typename F::wide_t d;
        const AffKind kind = aff_classify<C>(s, e, p, q, d);
        inv = F::mul_unreduced(inv, d);
        A r;
        switch (kind) {
        case AFF_LEFT: r = p; break;
        case AFF_RIGHT: r = q; break;
        case AFF_INF: r = A::inf(); break;
        default: r = aff_sum<C>(kind, p, q, dinv);
        }
        r.x.store(a.out + at);
        r.y.store(a.out_y + at);
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

// One block: blk[b] = 1 / blk[b], b < blocks (at most 2 AFF_INV_THREADS), with one inversion.
// Leaf j is the product of blk[2j] and blk[2j + 1] (one where absent); its inverse times the one
// value gives the other's.
static_assert(AFF_INV_MAX == 2 * AFF_INV_THREADS * AFF_INV_THREADS,
              "the top tree takes two blocks' products per leaf");
template <class F>
DEVI void batch_inv_top(const batch_inv_args& a) {
    __shared__ uint4 tree[2 * AFF_INV_THREADS * (F::WORDS / 4)];
    const u32 j = threadIdx.x;
    const F lo = 2 * j < a.blocks ? F::load(a.blk + F::WORDS * (size_t)(2 * j)) : F::one();
    const F hi = 2 * j + 1 < a.blocks ? F::load(a.blk + F::WORDS * (size_t)(2 * j + 1)) : F::one();
    tree_up<F>(tree, j, F::mul(lo, hi));
    if (j == 0) root_inv(F::load(tree_node<F>(tree, 1))).store(tree_node<F>(tree, 1));
    __syncthreads();
    const F inv = tree_down<F>(tree, j);
    if (2 * j < a.blocks) F::mul(inv, hi).store(a.blk + F::WORDS * (size_t)(2 * j));
    if (2 * j + 1 < a.blocks) F::mul(inv, lo).store(a.blk + F::WORDS * (size_t)(2 * j + 1));
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
