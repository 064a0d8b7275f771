// proofline cuda/msm_curve.cuh: the curve kernels of Pippenger's MSM, as templates over a curve
// (struct C with its field C::F, the point types C::A (affine) and C::X (XYZZ bucket) and
// C::RED, the threads of its tree reductions). msm.cu instantiates them for G1, msm_g2.cu for G2; the sort (digits,
// scans) does not depend on the curve and lives in msm.cu only.
//
// Host orchestration: crates/proofline-gpu/src/msm/ (generic over src/curve.rs's `Curve`).
#pragma once
#include "common.cuh"
#include "proofline_abi.cuh"

// Entry k of the sorted entries (point | sign << 31); without the array (the points left by
// the batch-affine rounds, msm_affine.cuh), entry k is point k.
DEVI u32 entry_at(const u32* vals, u32 k) { return vals ? vals[k] : k; }

// Every curve struct C also has C::madd(acc, x, y): acc += (x, y), the mixed addition of the
// accumulation kernels (an out-of-line call for G2, or the same inlined in the variant kernels).

// Tree sum of the bucket values of a block of C::RED threads through the shared memory `sh`
// (C::RED points); the total ends in thread 0's `acc` (every thread must call it).
template <class C>
DEVI void block_sum_in(typename C::X& acc, uint4* sh) {
    typedef typename C::X X;
    u32* mine = reinterpret_cast<u32*>(&sh[(X::WORDS / 4) * threadIdx.x]);
    acc.store(mine);
    __syncthreads();
    for (u32 off = C::RED / 2; off > 0; off >>= 1) {
        if (threadIdx.x < off) {
            curve_add(acc, X::load(reinterpret_cast<u32*>(&sh[(X::WORDS / 4) * (threadIdx.x + off)])));
            acc.store(mine);
        }
        __syncthreads();
    }
}

// block_sum_in through a shared array of its own.
template <class C>
DEVI void block_sum(typename C::X& acc) {
    __shared__ uint4 sh[C::RED * (C::X::WORDS / 4)];
    block_sum_in<C>(acc, sh);
}

// smallest g < m with ends[g] > x (ends non-decreasing, ends[m - 1] > x)
DEVI u32 bucket_of(const u32* ends, u32 m, u32 x) {
    u32 lo = 0, hi = m - 1;
    while (lo < hi) {
        u32 mid = (lo + hi) >> 1;
        if (ends[mid] > x) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

// Balanced bucket accumulation. The sorted entries (all buckets, in bucket
// order) are cut into equal ranges of L entries, one per thread, whatever the
// bucket sizes: every lane of a warp does the same number of additions, where
// one thread per bucket would make each warp wait for its fullest bucket
// (Poisson sizes: ~30% idle lanes at 32 points per bucket). Thread t walks
// [t L, min(t L + L, E)) in ONE loop (a nested per-bucket loop would
// reintroduce the wait) and at each bucket boundary flushes its sum:
//  * a bucket that starts inside the range is owned by this thread: the sum
//    goes to buckets[g]; if the bucket runs past the range, own_id[t] = g;
//  * the first segment of a bucket that started before the range goes to
//    head[t] with head_id[t] = g; bucket_fixup adds it to the owner's.
// Buckets above `big` points are skipped here (big_partial / big_final). Buckets nobody
// writes are empty (counts = 0) and read as infinity by the reduction.
template <class C>
DEVI void bucket_acc(const bucket_acc_args& a) {
    typedef typename C::A A;
    typedef typename C::X X;
    const u32* bases = a.bases;
    const u32* vals = a.vals;
    const u32* ends = a.ends;
    const u32* counts = a.counts;
    const u32 m = a.m, L = a.per_thread, big = a.big;
    u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= a.threads) return;
    const u32 E = ends[m - 1];
    u32 hid = NONE, oid = NONE;
    const u64 s64 = (u64)t * L;
    if (s64 < E) {
        const u32 s = (u32)s64;
        const u32 e = (u32)min((u64)E, s64 + L);
        u32 g = bucket_of(ends, m, s);
        u32 gend = ends[g];
        u32 gbeg = gend - counts[g];
        bool skip = counts[g] > big;
        X acc = X::inf();
        u32 v = entry_at(vals, s);
        A p = A::load(bases + A::WORDS * (size_t)(v & 0x7fffffffu));
        for (u32 k = s; k < e; k++) {
            // prefetch the next entry while this one is added
            u32 vn = 0;
            A pn;
            if (k + 1 < e) {
                vn = entry_at(vals, k + 1);
                pn = A::load(bases + A::WORDS * (size_t)(vn & 0x7fffffffu));
            }
            if (k == gend) {
                // flush bucket g, move to the bucket that holds entry k
                if (!skip) {
                    if (gbeg < s) {
                        acc.store(a.head + X::WORDS * (size_t)t);
                        hid = g;
                    } else {
                        acc.store(a.buckets + X::WORDS * (size_t)g);
                    }
                }
                acc = X::inf();
                do {
                    g++;
                    gend = ends[g];
                } while (gend == k);
                gbeg = k;
                skip = counts[g] > big;
            }
            if (!skip && !p.is_inf()) C::madd(acc, p.x, C::F::cneg(p.y, (v >> 31) != 0));
            v = vn;
            p = pn;
        }
        if (!skip) {
            if (gbeg < s) {
                acc.store(a.head + X::WORDS * (size_t)t);
                hid = g;
            } else {
                acc.store(a.buckets + X::WORDS * (size_t)g);
                if (gend > e) oid = g;
            }
        }
    }
    a.head_id[t] = hid;
    a.own_id[t] = oid;
}

// The owner of a bucket that runs past its range adds the heads of the
// following threads (consecutive, at most big / L + 1 of them).
template <class C>
DEVI void bucket_fixup(const bucket_fixup_args& a) {
    typedef typename C::X X;
    u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= a.threads) return;
    u32 g = a.own_id[t];
    if (g == NONE) return;
    X acc = X::load(a.buckets + X::WORDS * (size_t)g);
    for (u32 u = t + 1; u < a.threads && a.head_id[u] == g; u++)
        curve_add(acc, X::load(a.head + X::WORDS * (size_t)u));
    acc.store(a.buckets + X::WORDS * (size_t)g);
}

// Big buckets: block b sums entries [part * per_block, +per_block) of bucket
// big_list[blk_bucket[b]] into partial[b] (XYZZ).
template <class C>
DEVI void big_partial(const big_partial_args& a) {
    typedef typename C::A A;
    typedef typename C::X X;
    u32 g = a.big_list[2 * a.blk_bucket[blockIdx.x]];
    u32 end = a.cursor[g];
    u32 beg = end - a.counts[g] + a.blk_part[blockIdx.x] * a.per_block;
    u32 stop = min(end, beg + a.per_block);
    X acc = X::inf();
    for (u32 k = beg + threadIdx.x; k < stop; k += C::RED) {
        u32 v = entry_at(a.vals, k);
        A p = A::load(a.bases + A::WORDS * (size_t)(v & 0x7fffffffu));
        if (p.is_inf()) continue;
        curve_add_affine(acc, p.x, C::F::cneg(p.y, (v >> 31) != 0));
    }
    block_sum<C>(acc);
    if (threadIdx.x == 0) acc.store(a.partial + X::WORDS * (size_t)blockIdx.x);
}

// Block j: buckets[big_list[j]] = sum of partial[first[j] .. first[j] + count[j])
template <class C>
DEVI void big_final(const big_final_args& a) {
    typedef typename C::X X;
    const u32* base = a.partial + X::WORDS * (size_t)a.first[blockIdx.x];
    u32 cnt = a.count[blockIdx.x];
    X acc = X::inf();
    for (u32 k = threadIdx.x; k < cnt; k += C::RED) curve_add(acc, X::load(base + X::WORDS * (size_t)k));
    block_sum<C>(acc);
    if (threadIdx.x == 0) acc.store(a.buckets + X::WORDS * (size_t)a.big_list[2 * blockIdx.x]);
}

// one thread per (window, segment t): W_t = sum_{j in seg} (j - start + 1) B_j
// and S_t = sum_{j in seg} B_j, written as out[2 tid], out[2 tid + 1].
template <class C>
DEVI void bucket_reduce(const bucket_reduce_args& a) {
    typedef typename C::X X;
    const u32 nw = a.nw, nb = a.nb, seg = a.seg;
    u32 segs = nb / seg;
    u32 tid = blockIdx.x * blockDim.x + threadIdx.x;
    if (tid >= nw * segs) return;
    u32 w = tid / segs, t = tid % segs;
    const size_t first = (size_t)w * nb + (size_t)t * seg;
    const u32* b = a.buckets + X::WORDS * first;
    X run = X::inf(), acc = X::inf();
    for (int j = (int)seg - 1; j >= 0; j--) {
        // empty buckets are never written: read them as infinity
        if (a.counts[first + j] != 0) curve_add(run, X::load(b + X::WORDS * j));
        curve_add(acc, run);
    }
    acc.store(a.out + 2 * X::WORDS * (size_t)tid);
    run.store(a.out + 2 * X::WORDS * (size_t)tid + X::WORDS);
}

// r = k1 p1 + k2 p2 for small k1, k2: one double-and-add over both (Shamir's trick) with one
// addition site, so that only r, p1 and p2 are live (two inlined sites spilled).
template <class X>
DEVI void mul_small2(X& r, const X& p1, u32 k1, const X& p2, u32 k2) {
    r = X::inf();
    const u32 k = k1 | k2;
    if (k == 0) return;
    for (int bit = 31 - __clz(k); bit >= 0; bit--) {
        curve_dbl(r);
#pragma unroll 1
        for (u32 j = 0; j < 2; j++)
            if ((((j ? k2 : k1) >> bit) & 1) != 0) curve_add(r, j ? p2 : p1);
    }
}

// Window combination of the segment results: block (w, grp) of `groups`
// blocks per window covers segments [grp * per_blk, ...); thread k of it a
// contiguous range [lo, hi). It forms sum W_t + seg * sum t S_t over its range
// (running sums from the top: sum (t - lo + 1) S_t, then + (lo - 1) sum S_t),
// and the block tree-sums the threads into partial[w * groups + grp]. The sum of
// the W_t waits in shared memory while the rest is formed, so that no more than
// three points are live at once (with all of them in registers the kernel spilled
// 2.8 KB). Its time is each thread's chain of ~30 dependent XYZZ operations: one
// wave of threads at most.
template <class C>
DEVI void window_combine(const window_combine_args& a) {
    typedef typename C::X X;
    __shared__ uint4 sh[C::RED * (X::WORDS / 4)];
    u32* parked = reinterpret_cast<u32*>(&sh[(X::WORDS / 4) * threadIdx.x]);
    const u32 segs = a.segs, seg = a.seg, groups = a.groups;
    u32 w = blockIdx.x / groups, grp = blockIdx.x % groups;
    u32 per_blk = (segs + groups - 1) / groups;
    u32 per = (per_blk + C::RED - 1) / C::RED;
    u32 lo = grp * per_blk + threadIdx.x * per;
    u32 hi = min(min(lo + per, (grp + 1) * per_blk), segs);
    const u32* base = a.segres + 2 * X::WORDS * (size_t)w * segs;
    {
        X wsum = X::inf();
        for (u32 t = lo; t < hi; t++) curve_add(wsum, X::load(base + 2 * X::WORDS * (size_t)t));
        wsum.store(parked);
    }
    X run = X::inf(), acc = X::inf();
    for (int t = (int)hi - 1; t >= (int)lo; t--) {
        curve_add(run, X::load(base + 2 * X::WORDS * (size_t)t + X::WORDS));
        curve_add(acc, run);
    }
    // acc = sum (t - lo + 1) S_t; want seg Q, Q = sum t S_t = acc + (lo - 1) run, as
    // seg acc + seg (lo - 1) run (with lo = 0: seg acc + seg (-run))
    if (lo < hi) {
        if (lo == 0) run.neg();
        X q;
        mul_small2(q, acc, seg, run, seg * (lo == 0 ? 1 : lo - 1));
        curve_add(q, X::load(parked));
        q.store(parked);
    }
    // each thread's total is in its own slot (its W_t alone where its range is empty)
    X total = X::load(parked);
    block_sum_in<C>(total, sh);
    if (threadIdx.x == 0) total.store(a.partial + X::WORDS * (size_t)blockIdx.x);
}

// one block per group: Jacobian(out[g]) = sum of in[g * count .. (g+1) * count)
template <class C>
DEVI void xyzz_reduce(const xyzz_reduce_args& a) {
    typedef typename C::X X;
    const u32* base = a.input + X::WORDS * (size_t)blockIdx.x * a.count;
    X acc = X::inf();
    for (u32 k = threadIdx.x; k < a.count; k += C::RED) curve_add(acc, X::load(base + X::WORDS * (size_t)k));
    block_sum<C>(acc);
    if (threadIdx.x == 0) acc.store_jacobian(a.out + X::JAC_WORDS * blockIdx.x);
}

// grid-stride sum of bases[list[k]], k < count; one XYZZ per block
template <class C>
DEVI void sum_ones(const sum_ones_args& a) {
    typedef typename C::A A;
    typedef typename C::X X;
    X acc = X::inf();
    for (u32 k = blockIdx.x * C::RED + threadIdx.x; k < a.count; k += gridDim.x * C::RED) {
        A p = A::load(a.bases + A::WORDS * (size_t)a.list[k]);
        if (p.is_inf()) continue;
        C::madd(acc, p.x, p.y);
    }
    block_sum<C>(acc);
    if (threadIdx.x == 0) acc.store(a.out + X::WORDS * blockIdx.x);
}

// out[i] = bases[idx[i]]: the tail's bases side by side, so that the Pippenger kernels read
// them by position
template <class C>
DEVI void gather(const gather_args& a) {
    typedef typename C::A A;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= a.n) return;
    const uint4* src = reinterpret_cast<const uint4*>(a.bases + A::WORDS * (size_t)a.idx[i]);
    uint4* dst = reinterpret_cast<uint4*>(a.out + A::WORDS * i);
#pragma unroll
    for (int k = 0; k < A::WORDS / 4; k++) dst[k] = src[k];
}

// The ones' subset sums of aligned groups of a.group bases (in[n] and after are infinity).
// Pairs: out[j] = in[2j] + in[2j + 1]. Triples (a, b, c) = in[3j..3j + 3): out[4j..4j + 4) =
// a + b, a + c, b + c, a + b + c. With them resident after a sparse query's bases, the ones of a
// group are one entry of the ones' sum instead of two or three. Run once per parameter set, so
// each point takes its own inversion (xyzz::to_affine), as msm_precompute's do.
template <class C>
DEVI void ones_sums(const ones_sums_args& a) {
    typedef typename C::A A;
    typedef typename C::X X;
    const u32 g = a.group, j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= (a.n + g - 1) / g) return;
    const size_t i = (size_t)g * j;
    const A p = A::load(a.input + A::WORDS * i);
    const A q = i + 1 < a.n ? A::load(a.input + A::WORDS * (i + 1)) : A::inf();
    X s = X::from_affine(p);
    if (!q.is_inf()) C::madd(s, q.x, q.y);
    if (g == 2) {
        s.to_affine().store(a.output + A::WORDS * (size_t)j);
        return;
    }
    const A r = i + 2 < a.n ? A::load(a.input + A::WORDS * (i + 2)) : A::inf();
    u32* out = a.output + A::WORDS * ONES_TRIPLE_SUMS * (size_t)j;
    s.to_affine().store(out);
    X pr = X::from_affine(p), qr = X::from_affine(q);
    if (!r.is_inf()) {
        C::madd(pr, r.x, r.y);
        C::madd(qr, r.x, r.y);
        C::madd(s, r.x, r.y);
    }
    pr.to_affine().store(out + A::WORDS);
    qr.to_affine().store(out + 2 * A::WORDS);
    s.to_affine().store(out + 3 * A::WORDS);
}

// Fixed-base precomputation: out[i] = 2^c in[i], c doublings in XYZZ, then back to affine with
// one inversion per point (xyzz::to_affine); c = 0 copies. Run once per parameter set and copy
// (about 700 multiplications per G1 point at c = 22, three times that in G2), so the inversion
// is not batched.
template <class C>
DEVI void precompute(const precompute_args& a) {
    typedef typename C::A A;
    typedef typename C::X X;
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= a.n) return;
    A p = A::load(a.input + A::WORDS * (size_t)i);
    if (a.c != 0 && !p.is_inf()) {
        X x = X::from_affine(p);
        for (u32 k = 0; k < a.c; k++) x.dbl();
        p = x.to_affine();
    }
    p.store(a.output + A::WORDS * (size_t)i);
}
