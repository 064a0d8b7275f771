// proofline cuda/msm.cu: BLS12-381 G1 multi-scalar multiplication (Pippenger).
//
// Host orchestration: crates/proofline-gpu/src/msm.rs. Each kernel takes one argument struct
// and the shared constants (RED_THREADS, ACC_THREADS, ...) from proofline_abi.cuh, generated
// from crates/proofline-gpu/src/abi.rs.
//
// Pipeline for one chunk of n (point, scalar) pairs, window c bits, nw windows,
// nb = 2^(c-1) buckets per window (signed digits in [-2^(c-1), 2^(c-1)]):
//  1. msm_digits (pass 0): histogram of (window, |digit|) over all non-zero
//     digits (atomics on counts[w * nb + |d| - 1]).
//  2. scan_* : exclusive prefix sum of counts -> cursor (bucket start offsets).
//  3. msm_digits (pass 1): counting-sort scatter; each non-zero digit writes
//     (point index | sign << 31) at cursor[bucket]++. After this pass
//     cursor[g] is the END of bucket g and counts[g] its size.
//  4. msm_bucket_acc: equal ranges of the sorted entries per thread (mixed XYZZ
//     adds), heads of split buckets added by msm_bucket_fixup;
//     buckets above a size threshold go to msm_big_partial / msm_big_final
//     (many blocks per bucket, then a tree), so skewed digits stay parallel.
//  5. msm_bucket_reduce: per window, segments of SEG buckets: running sums give
//     W_t = sum_j (j - start + 1) B_j inside segment t and its total S_t.
//  6. msm_window_combine: sum_t W_t + SEG * sum_t t S_t (running sums again,
//     several blocks per window), then xyzz_reduce: per window, tree-sum of the
//     block results -> Jacobian.
// Sparse queries arrive split by the host (zeros dropped, the indices of the ones, the tail's
// indices and scalars): msm_sum_ones sums the bases of the ones across the whole GPU
// (grid-stride + block tree, then xyzz_reduce), g1_gather copies the tail's bases next to each
// other, and the tail goes through the Pippenger pipeline above. The host combines windows
// (Horner, nw * c doublings) and the ones sum.
#include "fr.cuh"
#include "g1.cuh"
#include "proofline_abi.cuh"

DEVI u32 select_word(const fr_t& s, u32 k) {
    u32 r = 0;
#pragma unroll
    for (int j = 0; j < 8; j++) r = ((u32)j == k) ? s.v[j] : r;
    return r;
}

DEVI u32 window_bits(const fr_t& s, u32 off, u32 c) {
    u32 k = off >> 5, sh = off & 31;
    u64 lo = k < 8 ? select_word(s, k) : 0;
    u64 hi = (k + 1) < 8 ? select_word(s, k + 1) : 0;
    u64 w = (lo | (hi << 32)) >> sh;
    return (u32)w & ((1u << c) - 1);
}

// pass 0: counts; pass 1: scatter into vals using cursor. Windows go in groups
// of DIGIT_GROUP so that a group's atomics are issued before its stores wait
// for the returned positions. Measured on the H200: no faster than one window
// at a time (the scatter, ~18 ms at 2^24, is bound by the throughput of
// atomics that return a value; the histogram's plain reductions take ~3.5 ms).
extern "C" __global__ void msm_digits(const msm_digits_args a) {
    const u32 n = a.n, c = a.c, nw = a.nw, pass = a.pass;
    u32* counts = a.counts;
    u32* cursor = a.cursor;
    u32* vals = a.vals;
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    fr_t sm = fr_t::load(a.scalars + 8 * (size_t)i);
    if (sm.is_zero()) return;
    fr_t s = fr_t::from_mont(sm);
    const u32 nb = 1u << (c - 1);
    u32 carry = 0;
    for (u32 w0 = 0; w0 < nw; w0 += DIGIT_GROUP) {
        u32 g[DIGIT_GROUP], sign[DIGIT_GROUP], pos[DIGIT_GROUP];
#pragma unroll
        for (u32 j = 0; j < DIGIT_GROUP; j++) {
            const u32 w = w0 + j;
            g[j] = NONE;
            sign[j] = 0;
            if (w < nw) {
                u32 d = window_bits(s, w * c, c) + carry;
                if (d > nb) {
                    d = (1u << c) - d;
                    sign[j] = 1;
                    carry = 1;
                } else {
                    carry = 0;
                }
                if (d != 0) g[j] = w * nb + d - 1;
            }
        }
#pragma unroll
        for (u32 j = 0; j < DIGIT_GROUP; j++) {
            if (g[j] == NONE) continue;
            if (pass == 0) atomicAdd(&counts[g[j]], 1u);
            else pos[j] = atomicAdd(&cursor[g[j]], 1u);
        }
        if (pass != 0) {
#pragma unroll
            for (u32 j = 0; j < DIGIT_GROUP; j++)
                if (g[j] != NONE) vals[pos[j]] = i | (sign[j] << 31);
        }
    }
}

// ---- exclusive scan (u32) ----------------------------------------------------
extern "C" __global__ void scan_tiles(const scan_tiles_args a) {
    const u32* in = a.input;
    u32* out = a.output;
    const u32 m = a.m;
    __shared__ u32 sh[SCAN_THREADS];
    u32 base = blockIdx.x * SCAN_TILE + threadIdx.x * SCAN_ITEMS;
    u32 x[SCAN_ITEMS], sum = 0;
#pragma unroll
    for (int k = 0; k < SCAN_ITEMS; k++) {
        x[k] = (base + k < m) ? in[base + k] : 0;
        sum += x[k];
    }
    sh[threadIdx.x] = sum;
    __syncthreads();
    for (u32 off = 1; off < SCAN_THREADS; off <<= 1) {
        u32 v = threadIdx.x >= off ? sh[threadIdx.x - off] : 0;
        __syncthreads();
        sh[threadIdx.x] += v;
        __syncthreads();
    }
    u32 run = sh[threadIdx.x] - sum;  // exclusive prefix of this thread
#pragma unroll
    for (int k = 0; k < SCAN_ITEMS; k++) {
        if (base + k < m) out[base + k] = run;
        run += x[k];
    }
    if (threadIdx.x == SCAN_THREADS - 1) a.tile_sums[blockIdx.x] = sh[threadIdx.x];
}

// single block: exclusive scan of tile sums in place
extern "C" __global__ void scan_sums(const scan_sums_args a) {
    u32* sums = a.sums;
    const u32 count = a.count;
    __shared__ u32 sh[SCAN_SUMS_THREADS];
    u32 per = (count + SCAN_SUMS_THREADS - 1) / SCAN_SUMS_THREADS;
    u32 start = threadIdx.x * per;
    u32 local = 0;
    for (u32 k = 0; k < per; k++)
        if (start + k < count) local += sums[start + k];
    sh[threadIdx.x] = local;
    __syncthreads();
    for (u32 off = 1; off < SCAN_SUMS_THREADS; off <<= 1) {
        u32 v = threadIdx.x >= off ? sh[threadIdx.x - off] : 0;
        __syncthreads();
        sh[threadIdx.x] += v;
        __syncthreads();
    }
    u32 run = sh[threadIdx.x] - local;
    for (u32 k = 0; k < per; k++)
        if (start + k < count) {
            u32 x = sums[start + k];
            sums[start + k] = run;
            run += x;
        }
}

extern "C" __global__ void scan_add(const scan_add_args a) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < a.m) a.output[i] += a.tile_sums[i / SCAN_TILE];
}

// Tree sum of the XYZZ values of a block of RED_THREADS threads through shared
// memory; the total ends in thread 0's `acc` (every thread must call it).
DEVI void block_sum(xyzz_t& acc) {
    __shared__ uint4 sh[RED_THREADS * 12];
    u32* mine = reinterpret_cast<u32*>(&sh[12 * threadIdx.x]);
    acc.store(mine);
    __syncthreads();
    for (u32 off = RED_THREADS / 2; off > 0; off >>= 1) {
        if (threadIdx.x < off) {
            acc.add(xyzz_t::load(reinterpret_cast<u32*>(&sh[12 * (threadIdx.x + off)])));
            acc.store(mine);
        }
        __syncthreads();
    }
}

// ---- buckets -------------------------------------------------------------------

// Buckets with more than `big` points go to the big-bucket kernels: their
// (index, size) pairs are appended to big_list.
extern "C" __global__ void msm_find_big(const find_big_args a) {
    u32 g = blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= a.m) return;
    u32 size = a.counts[g];
    if (size > a.big) {
        u32 k = atomicAdd(a.big_count, 1u);
        if (k < a.big_cap) {
            a.big_list[2 * k] = g;
            a.big_list[2 * k + 1] = size;
        }
    }
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
//    head[t] with head_id[t] = g; msm_bucket_fixup adds it to the owner's.
// Buckets above `big` points are skipped here (msm_big_*). Buckets nobody
// writes are empty (counts = 0) and read as infinity by the reduction.
DEVI void bucket_acc(const u32* bases, const u32* vals, const u32* ends, const u32* counts, u32 m,
                     u32 L, u32 big, u32 threads, u32* buckets, u32* head, u32* head_id,
                     u32* own_id) {
    u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= threads) return;
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
        xyzz_t acc = xyzz_t::inf();
        u32 v = vals[s];
        affine_t p = affine_t::load(bases + 24 * (size_t)(v & 0x7fffffffu));
        for (u32 k = s; k < e; k++) {
            // prefetch the next entry while this one is added
            u32 vn = 0;
            affine_t pn;
            if (k + 1 < e) {
                vn = vals[k + 1];
                pn = affine_t::load(bases + 24 * (size_t)(vn & 0x7fffffffu));
            }
            if (k == gend) {
                // flush bucket g, move to the bucket that holds entry k
                if (!skip) {
                    if (gbeg < s) {
                        acc.store(head + 48 * (size_t)t);
                        hid = g;
                    } else {
                        acc.store(buckets + 48 * (size_t)g);
                    }
                }
                acc = xyzz_t::inf();
                do {
                    g++;
                    gend = ends[g];
                } while (gend == k);
                gbeg = k;
                skip = counts[g] > big;
            }
            if (!skip && !p.is_inf()) acc.add_affine(p.x, fp_t::cneg(p.y, (v >> 31) != 0));
            v = vn;
            p = pn;
        }
        if (!skip) {
            if (gbeg < s) {
                acc.store(head + 48 * (size_t)t);
                hid = g;
            } else {
                acc.store(buckets + 48 * (size_t)g);
                if (gend > e) oid = g;
            }
        }
    }
    head_id[t] = hid;
    own_id[t] = oid;
}

// ACC_BLOCKS_PER_SM (6) blocks of ACC_THREADS (64) threads per SM (168 registers); a cap for 8
// blocks (128 registers) measured 2-5 % slower on the H200 (docs/gpu-kernels.md).
extern "C" __global__ void __launch_bounds__(ACC_THREADS, ACC_BLOCKS_PER_SM)
    msm_bucket_acc(const bucket_acc_args a) {
    bucket_acc(a.bases, a.vals, a.ends, a.counts, a.m, a.per_thread, a.big, a.threads, a.buckets,
               a.head, a.head_id, a.own_id);
}

// The owner of a bucket that runs past its range adds the heads of the
// following threads (consecutive, at most big / L + 1 of them).
extern "C" __global__ void __launch_bounds__(SMALL_THREADS)
msm_bucket_fixup(const bucket_fixup_args a) {
    const u32* head = a.head;
    const u32* head_id = a.head_id;
    const u32 threads = a.threads;
    u32* buckets = a.buckets;
    u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= threads) return;
    u32 g = a.own_id[t];
    if (g == NONE) return;
    xyzz_t acc = xyzz_t::load(buckets + 48 * (size_t)g);
    for (u32 u = t + 1; u < threads && head_id[u] == g; u++) acc.add(xyzz_t::load(head + 48 * (size_t)u));
    acc.store(buckets + 48 * (size_t)g);
}

// Big buckets: block b sums entries [part * per_block, +per_block) of bucket
// big_list[blk_bucket[b]] into partial[b] (XYZZ).
extern "C" __global__ void __launch_bounds__(RED_THREADS)
msm_big_partial(const big_partial_args a) {
    u32 g = a.big_list[2 * a.blk_bucket[blockIdx.x]];
    u32 end = a.cursor[g];
    u32 beg = end - a.counts[g] + a.blk_part[blockIdx.x] * a.per_block;
    u32 stop = min(end, beg + a.per_block);
    xyzz_t acc = xyzz_t::inf();
    for (u32 k = beg + threadIdx.x; k < stop; k += RED_THREADS) {
        u32 v = a.vals[k];
        affine_t p = affine_t::load(a.bases + 24 * (size_t)(v & 0x7fffffffu));
        if (p.is_inf()) continue;
        acc.add_affine(p.x, fp_t::cneg(p.y, (v >> 31) != 0));
    }
    block_sum(acc);
    if (threadIdx.x == 0) acc.store(a.partial + 48 * (size_t)blockIdx.x);
}

// Block j: buckets[big_list[j]] = sum of partial[first[j] .. first[j] + count[j])
extern "C" __global__ void __launch_bounds__(RED_THREADS)
msm_big_final(const big_final_args a) {
    const u32* base = a.partial + 48 * (size_t)a.first[blockIdx.x];
    u32 cnt = a.count[blockIdx.x];
    xyzz_t acc = xyzz_t::inf();
    for (u32 k = threadIdx.x; k < cnt; k += RED_THREADS) acc.add(xyzz_t::load(base + 48 * (size_t)k));
    block_sum(acc);
    if (threadIdx.x == 0) acc.store(a.buckets + 48 * (size_t)a.big_list[2 * blockIdx.x]);
}

// one thread per (window, segment t): W_t = sum_{j in seg} (j - start + 1) B_j
// and S_t = sum_{j in seg} B_j, written as out[2 tid], out[2 tid + 1].
extern "C" __global__ void __launch_bounds__(SMALL_THREADS)
msm_bucket_reduce(const bucket_reduce_args a) {
    const u32* buckets = a.buckets;
    const u32* counts = a.counts;
    const u32 nw = a.nw, nb = a.nb, seg = a.seg;
    u32* out = a.out;
    u32 segs = nb / seg;
    u32 tid = blockIdx.x * blockDim.x + threadIdx.x;
    if (tid >= nw * segs) return;
    u32 w = tid / segs, t = tid % segs;
    const size_t first = (size_t)w * nb + (size_t)t * seg;
    const u32* b = buckets + 48 * first;
    xyzz_t run = xyzz_t::inf(), acc = xyzz_t::inf();
    for (int j = (int)seg - 1; j >= 0; j--) {
        // empty buckets are never written: read them as infinity
        if (counts[first + j] != 0) run.add(xyzz_t::load(b + 48 * j));
        acc.add(run);
    }
    acc.store(out + 96 * (size_t)tid);
    run.store(out + 96 * (size_t)tid + 48);
}

DEVI void mul_small(xyzz_t& r, const xyzz_t& p, u32 k) {
    r = xyzz_t::inf();
    if (k == 0 || p.is_inf()) return;
    for (int bit = 31 - __clz(k); bit >= 0; bit--) {
        r.dbl();
        if ((k >> bit) & 1) r.add(p);
    }
}

// Window combination of the segment results: block (w, grp) of `groups`
// blocks per window covers segments [grp * per_blk, ...); thread k of it a
// contiguous range [lo, hi). It forms sum W_t + seg * sum t S_t over its range
// (running sums from the top: sum (t - lo + 1) S_t, then + (lo - 1) sum S_t),
// and the block tree-sums the threads into partial[w * groups + grp].
extern "C" __global__ void __launch_bounds__(RED_THREADS)
msm_window_combine(const window_combine_args a) {
    const u32* segres = a.segres;
    const u32 segs = a.segs, seg = a.seg, groups = a.groups;
    u32* partial = a.partial;
    u32 w = blockIdx.x / groups, grp = blockIdx.x % groups;
    u32 per_blk = (segs + groups - 1) / groups;
    u32 per = (per_blk + RED_THREADS - 1) / RED_THREADS;
    u32 lo = grp * per_blk + threadIdx.x * per;
    u32 hi = min(min(lo + per, (grp + 1) * per_blk), segs);
    const u32* base = segres + 96 * (size_t)w * segs;
    xyzz_t wsum = xyzz_t::inf(), run = xyzz_t::inf(), acc = xyzz_t::inf();
    for (int t = (int)hi - 1; t >= (int)lo; t--) {
        wsum.add(xyzz_t::load(base + 96 * (size_t)t));
        run.add(xyzz_t::load(base + 96 * (size_t)t + 48));
        acc.add(run);
    }
    // acc = sum (t - lo + 1) S_t; want Q = sum t S_t = acc + (lo - 1) run
    if (lo < hi) {
        if (lo == 0) {
            xyzz_t neg = run;
            neg.Y = fp_t::neg(neg.Y);
            acc.add(neg);
        } else {
            xyzz_t m;
            mul_small(m, run, lo - 1);
            acc.add(m);
        }
        xyzz_t q;
        mul_small(q, acc, seg);
        wsum.add(q);
    }
    block_sum(wsum);
    if (threadIdx.x == 0) wsum.store(partial + 48 * (size_t)blockIdx.x);
}

// one block per group: Jacobian(out[g]) = sum of in[g * count .. (g+1) * count)
extern "C" __global__ void __launch_bounds__(RED_THREADS)
xyzz_reduce(const xyzz_reduce_args a) {
    const u32* base = a.input + 48 * (size_t)blockIdx.x * a.count;
    xyzz_t acc = xyzz_t::inf();
    for (u32 k = threadIdx.x; k < a.count; k += RED_THREADS) acc.add(xyzz_t::load(base + 48 * (size_t)k));
    block_sum(acc);
    if (threadIdx.x == 0) acc.store_jacobian(a.out + 36 * blockIdx.x);
}

// grid-stride sum of bases[list[k]], k < count; one XYZZ per block
extern "C" __global__ void __launch_bounds__(RED_THREADS)
msm_sum_ones(const sum_ones_args a) {
    xyzz_t acc = xyzz_t::inf();
    for (u32 k = blockIdx.x * RED_THREADS + threadIdx.x; k < a.count; k += gridDim.x * RED_THREADS) {
        affine_t p = affine_t::load(a.bases + 24 * (size_t)a.list[k]);
        if (p.is_inf()) continue;
        acc.add_affine(p.x, p.y);
    }
    block_sum(acc);
    if (threadIdx.x == 0) acc.store(a.out + 48 * blockIdx.x);
}

// out[i] = bases[idx[i]]: the tail's bases side by side, so that the Pippenger kernels read
// them by position
extern "C" __global__ void g1_gather(const gather_args a) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= a.n) return;
    const uint4* src = reinterpret_cast<const uint4*>(a.bases + 24 * (size_t)a.idx[i]);
    uint4* dst = reinterpret_cast<uint4*>(a.out + 24 * i);
#pragma unroll
    for (int k = 0; k < 6; k++) dst[k] = src[k];
}
