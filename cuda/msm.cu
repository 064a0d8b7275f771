// proofline cuda/msm.cu: BLS12-381 G1 multi-scalar multiplication (Pippenger), and the sort
// by bucket that the G2 MSM (msm_g2.cu) shares.
//
// Host orchestration: crates/proofline-gpu/src/msm/. Each kernel takes one argument struct
// and the shared constants (RED_THREADS, ACC_THREADS, ...) from proofline_abi.cuh, generated
// from crates/proofline-gpu/src/abi.rs. The curve kernels are templates (msm_curve.cuh)
// instantiated here for G1.
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
// With MsmAcc::BatchAffine, rounds of pairwise affine additions sharing one inversion each
// (msm_affine.cuh) first shrink every bucket, and step 4 sums what they leave.
// Sparse queries arrive split by the host (zeros dropped, a bitmap of the ones, the tail's
// indices and scalars): msm_ones_count / msm_ones_expand list the ones on the device, their bases
// are summed by the batch-affine rounds (one bucket) or by msm_sum_ones across the whole GPU
// (grid-stride + block tree, then xyzz_reduce), g1_gather copies the tail's bases next to each
// other, and the tail goes through the Pippenger pipeline above. The host combines windows
// (Horner, nw * c doublings) and the ones sum.
#include "fr.cuh"
#include "g1.cuh"
#include "msm_curve.cuh"
#include "msm_affine.cuh"
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

// The signed digit of a window whose c bits are `raw` with the carry `carry` from the window
// below: |d| in [0, 2^(c-1)] and its sign; returns the carry into the window above.
DEVI u32 signed_digit(u32 raw, u32 carry, u32 c, u32& d, u32& sign) {
    d = raw + carry;
    sign = 0;
    if (d > (1u << (c - 1))) {
        d = (1u << c) - d;
        sign = 1;
    }
    return sign;
}

// pass 0: counts; pass 1: scatter into vals using cursor. Windows go in groups
// of DIGIT_GROUP so that a group's atomics are issued before its stores wait
// for the returned positions. Measured on the H200: no faster than one window
// at a time (the scatter, ~18 ms at 2^24, is bound by the throughput of
// atomics that return a value; the histogram's plain reductions take ~3.5 ms).
// Window w's digit goes to bucket set w / copies and names point
// i + (w % copies) * stride (copies of the bases precomputed for fixed bases).
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
        u32 g[DIGIT_GROUP], val[DIGIT_GROUP], pos[DIGIT_GROUP];
#pragma unroll
        for (u32 j = 0; j < DIGIT_GROUP; j++) {
            const u32 w = w0 + j;
            g[j] = NONE;
            val[j] = 0;
            if (w < nw) {
                u32 d, sign;
                carry = signed_digit(window_bits(s, w * c, c), carry, c, d, sign);
                if (d != 0) {
                    g[j] = (w / a.copies) * nb + d - 1;
                    val[j] = (i + (w % a.copies) * a.stride) | (sign << 31);
                }
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
                if (g[j] != NONE) vals[pos[j]] = val[j];
        }
    }
}

// ---- two-level sort ------------------------------------------------------------
// The counting sort above pays one global atomic that returns a value per entry (13 per point
// at c = 20). The two-level sort counts in shared memory instead:
//  1. coarse pass 0: each block takes a tile of SORT_TILE points and counts its entries per
//     coarse bin (bucket set, top bits of |d| - 1) in shared memory, then writes the counts to
//     tile_counts[bin * tiles + tile];
//  2. an exclusive scan of tile_counts (one extra zero at the end: its scan is the total);
//  3. coarse pass 1: the same tiles again, each entry placed in its bin's slice of its tile
//     through a shared-memory cursor: the fine key (the low fine_bits of |d| - 1) as a u16,
//     the entry (point | sign << 31) as a u32;
//  4. fine pass: one block per coarse bin counts its entries per fine key in shared memory,
//     scans the counts, writes each bucket's size and end (`counts`, `ends`, as the counting
//     sort leaves them) and places the entries in bucket order.
// Entries of one bucket end up together in any order, which is all the accumulation needs.

// Calls f(w, d, sign) for each non-zero signed digit d (with sign) of window w of s.
template <class Fn>
DEVI void for_each_digit(const fr_t& s, u32 c, u32 nw, Fn f) {
    u32 carry = 0;
    for (u32 w = 0; w < nw; w++) {
        u32 d, sign;
        carry = signed_digit(window_bits(s, w * c, c), carry, c, d, sign);
        if (d != 0) f(w, d, sign);
    }
}

extern "C" __global__ void __launch_bounds__(SORT_THREADS) msm_sort_coarse(const sort_coarse_args a) {
    __shared__ u32 bin[SORT_BINS_MAX];
    const u32 first = blockIdx.x * SORT_TILE;
    for (u32 k = threadIdx.x; k < a.bins; k += SORT_THREADS)
        bin[k] = a.pass == 0 ? 0 : a.offsets[(size_t)k * a.tiles + blockIdx.x];
    __syncthreads();
    const u32 fmask = (1u << a.fine_bits) - 1;
    unsigned short* keys = reinterpret_cast<unsigned short*>(a.keys);
    for (u32 j = threadIdx.x; j < SORT_TILE; j += SORT_THREADS) {
        const u32 i = first + j;
        if (i >= a.n) break;
        fr_t sm = fr_t::load(a.scalars + 8 * (size_t)i);
        if (sm.is_zero()) continue;
        fr_t s = fr_t::from_mont(sm);
        for_each_digit(s, a.c, a.nw, [&](u32 w, u32 d, u32 sign) {
            const u32 k = (w / a.copies) * a.coarse + ((d - 1) >> a.fine_bits);
            if (a.pass == 0) {
                atomicAdd(&bin[k], 1u);
            } else {
                const u32 pos = atomicAdd(&bin[k], 1u);
                keys[pos] = (unsigned short)((d - 1) & fmask);
                a.vals[pos] = (i + (w % a.copies) * a.stride) | (sign << 31);
            }
        });
    }
    if (a.pass == 0) {
        __syncthreads();
        for (u32 k = threadIdx.x; k < a.bins; k += SORT_THREADS)
            a.tile_counts[(size_t)k * a.tiles + blockIdx.x] = bin[k];
    }
}

extern "C" __global__ void __launch_bounds__(SORT_THREADS) msm_sort_fine(const sort_fine_args a) {
    __shared__ u32 h[1u << SORT_FINE_BITS_MAX];
    __shared__ u32 part[SORT_THREADS];
    const u32 k = blockIdx.x;
    const u32 start = a.offsets[(size_t)k * a.tiles], end = a.offsets[(size_t)(k + 1) * a.tiles];
    const u32 F = 1u << a.fine_bits;
    const unsigned short* keys = reinterpret_cast<const unsigned short*>(a.keys);
    for (u32 f = threadIdx.x; f < F; f += SORT_THREADS) h[f] = 0;
    __syncthreads();
    for (u32 p = start + threadIdx.x; p < end; p += SORT_THREADS) atomicAdd(&h[keys[p]], 1u);
    __syncthreads();
    // exclusive scan of h[0, F): thread t owns [t per, t per + per)
    const u32 per = (F + SORT_THREADS - 1) / SORT_THREADS;
    const u32 lo = min(threadIdx.x * per, F), hi = min(lo + per, F);
    u32 sum = 0;
    for (u32 f = lo; f < hi; f++) sum += h[f];
    part[threadIdx.x] = sum;
    __syncthreads();
    for (u32 off = 1; off < SORT_THREADS; off <<= 1) {
        u32 v = threadIdx.x >= off ? part[threadIdx.x - off] : 0;
        __syncthreads();
        part[threadIdx.x] += v;
        __syncthreads();
    }
    u32 run = start + part[threadIdx.x] - sum;
    // bucket of fine key f: set (k / coarse), then the coarse and fine bits of |d| - 1
    const size_t g0 = (size_t)(k / a.coarse) * a.nb + ((size_t)(k % a.coarse) << a.fine_bits);
    for (u32 f = lo; f < hi; f++) {
        const u32 cnt = h[f];
        a.counts[g0 + f] = cnt;
        a.ends[g0 + f] = run + cnt;
        h[f] = run;
        run += cnt;
    }
    __syncthreads();
    for (u32 p = start + threadIdx.x; p < end; p += SORT_THREADS) {
        const u32 pos = atomicAdd(&h[keys[p]], 1u);
        a.vals[pos] = a.vals_in[p];
    }
}

// ---- split windows --------------------------------------------------------------
// A chunk whose windows are split (plan::ChunkWindows::Split) runs as two MSMs over the same
// bases: the low windows over the scalars as they are (their digits' final carry dropped), the
// high windows over these scalars: s >> bit plus that carry, so that s = (the low windows'
// digits) + 2^bit (the high scalar). Back in Montgomery form (times R^2 mod r, then reduced), as
// the sorts read any scalars.

// R^2 mod r, R = 2^256.
__device__ __constant__ u32 FR_RR[8] = {0xf3f29c6d, 0xc999e990, 0x87925c23, 0x2b6cedcb,
                                        0x7254398f, 0x05d31496, 0x9f59ff11, 0x0748d9d9};

extern "C" __global__ void msm_scalars_high(const scalars_high_args a) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= a.n) return;
    const fr_t s = fr_t::from_mont(fr_t::load(a.scalars + 8 * (size_t)i));
    u32 carry = 0;
    for (u32 w = 0; w < a.low_nw; w++) {
        u32 d, sign;
        carry = signed_digit(window_bits(s, w * a.low_c, a.low_c), carry, a.low_c, d, sign);
    }
    const u32 bit = a.low_c * a.low_nw;
    fr_t h;
#pragma unroll
    for (u32 k = 0; k < 8; k++) {
        const u32 off = bit + 32 * k, j = off >> 5, sh = off & 31;
        const u64 lo = j < 8 ? select_word(s, j) : 0;
        const u64 hi = j + 1 < 8 ? select_word(s, j + 1) : 0;
        h.v[k] = (u32)((lo | (hi << 32)) >> sh);
    }
    // h < 2^(256 - bit): the carry never leaves the words
#pragma unroll
    for (u32 k = 0; k < 8; k++) {
        const u64 t = (u64)h.v[k] + carry;
        h.v[k] = (u32)t;
        carry = (u32)(t >> 32);
    }
    fr_t rr;
#pragma unroll
    for (u32 k = 0; k < 8; k++) rr.v[k] = FR_RR[k];
    fr_t::mul(h, rr).store(a.out + 8 * (size_t)i);
}

// ---- radix sort -------------------------------------------------------------------
// The counting sort above is bound by its returned atomics, the two-level sort by its scattered
// writes. The radix sort sorts one bucket set at a time by its bucket key (|d| - 1, c - 1 bits)
// in least-significant-digit passes of at most RADIX_BITS bits. Each pass is one kernel over
// tiles of entries (single pass, "onesweep"): a tile ranks its entries by digit within warps
// (ballots), publishes its count of each digit, finds the counts of the tiles before it by
// looking back through their published counts (decoupled look-back), and writes each digit's
// entries as one run after the digit's start in the pass (`msm_radix_digits`, from the digits'
// histogram). Global atomics: a block's histogram in the preparation, a ticket per tile, two a
// bucket's run in a tile of the last pass; no separate count pass or scan of per-tile counts.
//  1. msm_radix_prep: each scalar out of Montgomery form as 8 words stored word-major (word k of
//     point i at words[k * n + i], so that a window's two words are read coalesced), the carry
//     into each window as a bit mask (the signed digits' carries chain from the lowest window
//     up), and the histogram of every pass's digits per set (in shared memory per block, then
//     added to `hist`);
//  2. msm_radix_digits: from that histogram, where each digit starts in each pass of a set, and
//     where each set starts;
//  3. per set, per pass: msm_radix_scatter (below). The first pass makes the set's entries from
//     the words (window set * copies + t / tiles_per_window, points of tile t % tiles_per_window),
//     later passes read (key, entry) pairs; the last writes the entries at the set's start in
//     `vals`, and adds each bucket's entries in the tile to its size (`counts`);
//  4. the scan of the sizes and msm_radix_ends: each bucket's end.
// Sorted by key within its set and the sets in order, an entry lands where the counting sort
// would put its bucket: at [start, end) from the scan of the buckets' sizes.
// One sort can hold several MSMs of the same windows (the tails of a partition's sparse queries,
// bases side by side): MSM k's points follow those of the MSMs before it in `words` (point0),
// its bucket sets theirs (set0), and its scalars are its own; the preparation runs once per MSM,
// everything after it over all the sets at once.

// Bits of pass p of a plan whose passes' bits are packed a byte each.
DEVI u32 radix_pass_bits(u32 packed, u32 p) { return (packed >> (8 * p)) & 0xffu; }

// In place, the inclusive scan of the 2^RADIX_BITS counts in `scan` (every thread of a block of
// RADIX_THREADS calls it; it ends with a barrier).
DEVI void radix_scan_bins(u32* scan) {
    constexpr u32 BINS = 1u << RADIX_BITS;
    for (u32 off = 1; off < BINS; off <<= 1) {
        u32 add[(BINS + RADIX_THREADS - 1) / RADIX_THREADS];
        for (u32 d = threadIdx.x, q = 0; d < BINS; d += RADIX_THREADS, q++) add[q] = d >= off ? scan[d - off] : 0;
        __syncthreads();
        for (u32 d = threadIdx.x, q = 0; d < BINS; d += RADIX_THREADS, q++) scan[d] += add[q];
        __syncthreads();
    }
}

// Grid-stride over the points of one MSM of the sort (points [point0, point0 + points) of the
// `n` the words and carries hold, its scalars from `scalars`, its sets from set0 of all_sets).
// The block's histogram holds, per set of the MSM, the counts of each pass's digits one pass
// after the other (`set_bins` counters a set); it goes to hist[(p * all_sets + set0 + set) *
// 2^RADIX_BITS + digit] at the end, so that the global atomics are a block's, not an entry's.
extern "C" __global__ void __launch_bounds__(ELEMENT_THREADS) msm_radix_prep(const radix_prep_args a) {
    constexpr u32 BINS = 1u << RADIX_BITS;
    __shared__ u32 h[RADIX_HIST_MAX];
    const u32 hist_len = a.sets * a.set_bins;
    for (u32 x = threadIdx.x; x < hist_len; x += ELEMENT_THREADS) h[x] = 0;
    __syncthreads();
    for (u32 i = blockIdx.x * ELEMENT_THREADS + threadIdx.x; i < a.points; i += gridDim.x * ELEMENT_THREADS) {
        const fr_t sm = fr_t::load(a.scalars + 8 * (size_t)i);
        const fr_t s = sm.is_zero() ? sm : fr_t::from_mont(sm);
        const u32 j = a.point0 + i;
#pragma unroll
        for (u32 k = 0; k < 8; k++) a.words[(size_t)k * a.n + j] = s.v[k];
        u32 carry = 0, mask = 0;
        for (u32 w = 0; w < a.nw; w++) {
            mask |= carry << w;
            u32 d, sign;
            carry = signed_digit(window_bits(s, w * a.c, a.c), carry, a.c, d, sign);
            if (d == 0) continue;
            const u32 key = d - 1;
            u32* hs = h + (w / a.copies) * a.set_bins;
            for (u32 p = 0, shift = 0; p < a.passes; p++) {
                const u32 bits = radix_pass_bits(a.pass_bits, p);
                atomicAdd(&hs[(key >> shift) & ((1u << bits) - 1)], 1u);
                hs += 1u << bits;
                shift += bits;
            }
        }
        a.carries[j] = mask;
    }
    __syncthreads();
    for (u32 x = threadIdx.x; x < hist_len; x += ELEMENT_THREADS) {
        const u32 v = h[x];
        if (v == 0) continue;
        const u32 set = a.set0 + x / a.set_bins;
        u32 d = x % a.set_bins, p = 0;
        while (d >= (1u << radix_pass_bits(a.pass_bits, p))) d -= 1u << radix_pass_bits(a.pass_bits, p++);
        atomicAdd(&a.hist[((size_t)p * a.all_sets + set) * BINS + d], v);
    }
}

// The entries of the pass's set (after the first pass), from the sets' starts.
DEVI u32 radix_items(const radix_pass_args& a) {
    return a.first ? 0 : a.set_starts[a.set + 1] - a.set_starts[a.set];
}

// Entry j of tile `tile` in this pass: its key and entry; false where there is none (a zero
// digit or past the points in the first pass, past the set's `items` entries in the others).
DEVI bool radix_item(const radix_pass_args& a, u32 items, u32 tile, u32 j, u32& key, u32& val) {
    if (a.first) {
        const u32 wo = tile / a.tiles_per_window;
        // tiles past the set's windows: the pass runs as many tiles as the sort's largest MSM
        if (wo >= a.copies) return false;
        const u32 i = (tile % a.tiles_per_window) * RADIX_TILE + j;
        if (i >= a.points) return false;
        const u32 w = (a.set - a.set0) * a.copies + wo;
        if (w >= a.nw) return false;  // the last set may hold fewer windows than copies
        const u32 pt = a.point0 + i;
        const u32 off = w * a.c, k = off >> 5, sh = off & 31;
        const u64 lo = k < 8 ? a.words[(size_t)k * a.n + pt] : 0;
        const u64 hi = k + 1 < 8 ? a.words[(size_t)(k + 1) * a.n + pt] : 0;
        const u32 raw = (u32)((lo | (hi << 32)) >> sh) & ((1u << a.c) - 1);
        u32 d, sign;
        signed_digit(raw, (a.carries[pt] >> w) & 1, a.c, d, sign);
        if (d == 0) return false;
        key = d - 1;
        val = (pt + (w % a.copies) * a.stride) | (sign << 31);
        return true;
    }
    const size_t p = (size_t)tile * RADIX_TILE + j;
    if (p >= items) return false;
    const uint2 kv = reinterpret_cast<const uint2*>(a.pairs_in)[p];
    key = kv.x;
    val = kv.y;
    return true;
}

// Block `set`: from the histogram of `msm_radix_prep`, where each digit of each pass starts among
// the set's entries (starts, laid out as the histogram), and where the set starts among all
// entries (set_starts[set], and the total at set_starts[sets]: the sets' first-pass digits).
extern "C" __global__ void __launch_bounds__(RADIX_THREADS) msm_radix_digits(const radix_digits_args a) {
    constexpr u32 BINS = 1u << RADIX_BITS;
    __shared__ u32 scan[BINS];
    const u32 set = blockIdx.x;
    u32 total = 0;
    for (u32 p = 0; p < a.passes; p++) {
        const u32 bins = 1u << radix_pass_bits(a.pass_bits, p);
        const size_t at = ((size_t)p * a.sets + set) * BINS;
        for (u32 d = threadIdx.x; d < BINS; d += RADIX_THREADS) scan[d] = d < bins ? a.hist[at + d] : 0;
        __syncthreads();
        radix_scan_bins(scan);
        for (u32 d = threadIdx.x; d < bins; d += RADIX_THREADS) a.starts[at + d] = d == 0 ? 0 : scan[d - 1];
        total = scan[BINS - 1];
        __syncthreads();
    }
    // the entries of the sets before this one
    const u32 bins0 = 1u << radix_pass_bits(a.pass_bits, 0);
    for (u32 d = threadIdx.x; d < BINS; d += RADIX_THREADS) {
        u32 before = 0;
        if (d < bins0)
            for (u32 s = 0; s < set; s++) before += a.hist[(size_t)s * BINS + d];
        scan[d] = before;
    }
    __syncthreads();
    radix_scan_bins(scan);
    if (threadIdx.x == 0) {
        a.set_starts[set] = scan[BINS - 1];
        if (set + 1 == a.sets) a.set_starts[a.sets] = scan[BINS - 1] + total;
    }
}

// One pass over the tiles of a set, each block taking the next tile from a ticket (word 0 of
// `status`), so that every tile before a block's is held by a block that already runs.
// Stable: each warp ranks a contiguous part of the tile in batches of 32 entries, keeping its own
// count per digit (the lanes with a lane's digit from one ballot per digit bit; no block barrier
// between batches). The tile's count of each digit is published at once (status word
// 1 + tile * bins + digit, RADIX_AGGREGATE), then thread `digit` looks back over the tiles
// before it, summing their counts until a tile whose word holds the sum of all tiles up to it
// (RADIX_INCLUSIVE), and publishes that sum for its own tile. The warps' counts give each entry
// its place in the tile sorted by digit (digits in order, in a digit the warps in order, in a
// warp the ranks): the entries are put there in shared memory, and the tile is written out in
// that order, so that consecutive threads write consecutive places of a digit's run (a scattered
// write per entry cost more than the bytes). A tile's entries keep their order within each
// digit, as the passes after the first need. The block also clears its words of `status_next`,
// the other buffer, for the next pass (the ticket with tile 0), so no pass needs a memset.
extern "C" __global__ void __launch_bounds__(RADIX_THREADS) msm_radix_scatter(const radix_pass_args a) {
    constexpr u32 WARPS = RADIX_THREADS / 32;
    constexpr u32 BATCHES = RADIX_TILE / RADIX_THREADS;
    constexpr u32 BINS = 1u << RADIX_BITS;
    constexpr u32 AGGREGATE = RADIX_AGGREGATE, INCLUSIVE = RADIX_INCLUSIVE, COUNT = RADIX_COUNT_MASK;
    __shared__ u32 wc[WARPS][BINS];
    __shared__ u32 start[BINS];  // the digit's first place in the sorted tile
    __shared__ u32 scan[BINS];
    __shared__ u32 gbase[BINS];  // the digit's offset for the tile in the pass's output
    __shared__ uint2 tile[RADIX_TILE];
    __shared__ u32 ticket;
    const u32 bins = 1u << a.bits, dmask = bins - 1;
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const u32 below = (1u << lane) - 1;
    if (threadIdx.x == 0) ticket = atomicAdd(a.status, 1u);
    for (u32 x = threadIdx.x; x < (WARPS << a.bits); x += RADIX_THREADS) wc[x >> a.bits][x & dmask] = 0;
    __syncthreads();
    const u32 t = ticket;
    {
        const u32 next_bins = 1u << a.next_bits;
        u32* next = a.status_next + 1 + (size_t)t * next_bins;
        for (u32 d = threadIdx.x; d < next_bins; d += RADIX_THREADS) next[d] = 0;
        if (t == 0 && threadIdx.x == 0) a.status_next[0] = 0;
    }
    const u32 items = radix_items(a);
    u32 key[BATCHES], val[BATCHES], rank[BATCHES];
#pragma unroll
    for (u32 b = 0; b < BATCHES; b++) {
        u32 k = 0, v = 0;
        const bool valid = radix_item(a, items, t, (warp * BATCHES + b) * 32 + lane, k, v);
        const u32 digit = (k >> a.shift) & dmask;
        u32 peers = __ballot_sync(0xffffffffu, valid);
        for (u32 bit = 0; bit < a.bits; bit++) {
            const bool on = (digit >> bit) & 1;
            const u32 lanes = __ballot_sync(0xffffffffu, valid && on);
            peers &= on ? lanes : ~lanes;
        }
        const u32 before = valid ? wc[warp][digit] : 0;
        __syncwarp();
        if (valid && (peers & below) == 0) wc[warp][digit] = before + __popc(peers);
        __syncwarp();
        key[b] = k;
        val[b] = v;
        rank[b] = valid ? before + __popc(peers & below) : NONE;
    }
    __syncthreads();
    // each digit's entries in the tile, published for the tiles after this one
    volatile u32* status = a.status + 1;
    for (u32 d = threadIdx.x; d < BINS; d += RADIX_THREADS) {
        u32 total = 0;
        if (d < bins) {
            for (u32 w = 0; w < WARPS; w++) total += wc[w][d];
            status[(size_t)t * bins + d] = (t == 0 ? INCLUSIVE : AGGREGATE) | total;
        }
        scan[d] = total;
    }
    // the digits' first places in the tile (an exclusive scan over digits) ...
    __syncthreads();
    radix_scan_bins(scan);
    // ... and each digit's entries in the tiles before this one (the look-back), then each warp's
    // first place in each digit: the digit's, then the warps before it
    for (u32 d = threadIdx.x; d < bins; d += RADIX_THREADS) {
        const u32 mine = scan[d] - (d == 0 ? 0 : scan[d - 1]);
        u32 before = 0;
        for (u32 p = t; p-- > 0;) {
            u32 s;
            do {
                s = status[(size_t)p * bins + d];
            } while (s == 0);
            before += s & COUNT;
            if ((s & INCLUSIVE) != 0) break;
        }
        if (t != 0) status[(size_t)t * bins + d] = INCLUSIVE | (before + mine);
        u32 run = d == 0 ? 0 : scan[d - 1];
        start[d] = run;
        gbase[d] = a.digit_starts[d] + before;
        for (u32 w = 0; w < WARPS; w++) {
            const u32 cnt = wc[w][d];
            wc[w][d] = run;
            run += cnt;
        }
    }
    __syncthreads();
#pragma unroll
    for (u32 b = 0; b < BATCHES; b++) {
        if (rank[b] == NONE) continue;
        tile[wc[warp][(key[b] >> a.shift) & dmask] + rank[b]] = make_uint2(key[b], val[b]);
    }
    __syncthreads();
    // place e of the sorted tile goes to its digit's offset for the tile plus its place in the run.
    // In the last pass a digit's run is sorted by the whole key, so each bucket's entries in the
    // tile are one run [first, last]: last + 1 - first is added to the bucket's size, as -first
    // at its first entry and last + 1 at its last (wrapping).
    const u32 count = scan[BINS - 1];
    const size_t set_start = a.last ? a.set_starts[a.set] : 0;
    for (u32 e = threadIdx.x; e < count; e += RADIX_THREADS) {
        const uint2 kv = tile[e];
        const u32 d = (kv.x >> a.shift) & dmask;
        const size_t pos = (size_t)gbase[d] + (e - start[d]);
        if (a.last) {
            a.out[set_start + pos] = kv.y;
            u32* size = a.counts + (size_t)a.set * a.nb + kv.x;
            if (e == start[d] || tile[e - 1].x != kv.x) atomicAdd(size, 0u - e);
            if (e + 1 == scan[d] || tile[e + 1].x != kv.x) atomicAdd(size, e + 1);
        } else {
            reinterpret_cast<uint2*>(a.out)[pos] = kv;
        }
    }
}

extern "C" __global__ void msm_radix_ends(const radix_ends_args a) {
    const u32 g = blockIdx.x * blockDim.x + threadIdx.x;
    if (g < a.m) a.ends[g] += a.counts[g];
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

// ---- the ones' bitmap -------------------------------------------------------------
// A sparse query's bases with scalar one arrive as a bitmap (bit i % 32 of word i / 32: 16 MB
// for a 32 GiB partition's L query instead of a 240 MB index list). The two kernels below turn
// bits [bit_lo, bit_hi) into the list of their positions (less bit_lo) on the device: a count per
// block, an exclusive scan of the counts, then each block writes its words' positions from its
// offset. Each thread takes one word.

// Word k's set bits among [bit_lo, bit_hi).
DEVI u32 ones_word(const u32* bits, u32 k, u32 bit_lo, u32 bit_hi) {
    const u32 w0 = bit_lo >> 5, w1 = (bit_hi + 31) >> 5;
    const u32 w = w0 + k;
    if (w >= w1) return 0;
    u32 x = bits[w];
    if (w == w0) x &= ~0u << (bit_lo & 31);
    if (w == (bit_hi - 1) >> 5 && (bit_hi & 31) != 0) x &= ~0u >> (32 - (bit_hi & 31));
    return x;
}

// Inclusive sum of v over the block's threads (ONES_THREADS), in shared memory `sh`.
DEVI u32 ones_block_scan(u32* sh, u32 v) {
    sh[threadIdx.x] = v;
    __syncthreads();
    for (u32 off = 1; off < ONES_THREADS; off <<= 1) {
        const u32 x = threadIdx.x >= off ? sh[threadIdx.x - off] : 0;
        __syncthreads();
        sh[threadIdx.x] += x;
        __syncthreads();
    }
    return sh[threadIdx.x];
}

// With subset sums (group 2 or 3), the bits are read in aligned groups of `group` bases, each
// group with a bit set one entry: a lone one its base, two or three ones their sum. A group of
// three straddles words, so a thread of the triples takes three words (32 triples) instead of one.
DEVI u32 ones_words_per_thread(u32 group) { return group == 3 ? ONES_TRIPLE_WORDS : 1u; }

// A word's 16 pairs of bits (2j, 2j + 1) each give one entry when either bit is set: bit 2j of
// the result.
DEVI u32 ones_pairs_of(u32 x) { return (x | (x >> 1)) & 0x55555555u; }

// Triple j (bits 3j, 3j + 1, 3j + 2) of the 96 bits x0, x1, x2 (x0's bit 0 first), as 3 bits.
DEVI u32 ones_triple(u32 x0, u32 x1, u32 x2, u32 j) {
    const u32 p = 3 * j, w = p >> 5, s = p & 31;
    const u32 lo = w == 0 ? x0 : (w == 1 ? x1 : x2);
    const u32 hi = w == 0 ? x1 : (w == 1 ? x2 : 0u);
    return (u32)(((((u64)hi) << 32) | lo) >> s) & 7u;
}

// Where a triple's subset sum of mask m (3, 5, 6 or 7: two or three of its bases) lies among the
// triple's four sums: a + b, a + c, b + c, a + b + c.
DEVI u32 ones_triple_slot(u32 m) { return m == 3u ? 0u : m - 4u; }

// Thread k's words (ones_words_per_thread of them from word k times that) and its entries.
struct ones_unit {
    u32 x[3];
    u32 entries;
};

DEVI ones_unit ones_unit_of(const u32* bits, u32 k, u32 bit_lo, u32 bit_hi, u32 group) {
    ones_unit u;
    const u32 per = ones_words_per_thread(group);
    u.x[1] = u.x[2] = 0;
    for (u32 i = 0; i < per; i++) u.x[i] = ones_word(bits, k * per + i, bit_lo, bit_hi);
    if (group == 3) {
        u.entries = 0;
        for (u32 j = 0; j < 32; j++) u.entries += ones_triple(u.x[0], u.x[1], u.x[2], j) != 0;
    } else {
        u.entries = __popc(group == 2 ? ones_pairs_of(u.x[0]) : u.x[0]);
    }
    return u;
}

extern "C" __global__ void __launch_bounds__(ONES_THREADS) msm_ones_count(const ones_count_args a) {
    __shared__ u32 sh[ONES_THREADS];
    const u32 k = blockIdx.x * ONES_THREADS + threadIdx.x;
    const ones_unit u = ones_unit_of(a.bits, k, a.bit_lo, a.bit_hi, a.group);
    const u32 total = ones_block_scan(sh, u.entries);
    if (threadIdx.x == ONES_THREADS - 1) a.counts[blockIdx.x] = total;
}

extern "C" __global__ void __launch_bounds__(ONES_THREADS) msm_ones_expand(const ones_expand_args a) {
    __shared__ u32 sh[ONES_THREADS];
    const u32 k = blockIdx.x * ONES_THREADS + threadIdx.x;
    const ones_unit u = ones_unit_of(a.bits, k, a.bit_lo, a.bit_hi, a.group);
    u32 pos = a.offsets[blockIdx.x] + ones_block_scan(sh, u.entries) - u.entries;
    // position of the thread's first bit from the range's first base
    const u32 first = ((a.bit_lo >> 5) + k * ones_words_per_thread(a.group)) * 32 - a.bit_lo;
    const u32 x = u.x[0];
    if (a.group == 3) {
        // bit_lo is 0 and the range starts at a multiple of 32 * ONES_TRIPLE_WORDS bases, so
        // `first` is a multiple of three: the thread's triple j is triple first / 3 + j of the
        // range, its sums ONES_TRIPLE_SUMS points each from `sums` on
        for (u32 j = 0; j < 32; j++) {
            const u32 m = ones_triple(u.x[0], u.x[1], u.x[2], j);
            if (m == 0) continue;
            a.list[pos++] = __popc(m) == 1
                                ? first + 3 * j + __ffs(m) - 1
                                : a.sums + ONES_TRIPLE_SUMS * (first / 3 + j) + ones_triple_slot(m);
        }
        return;
    }
    if (a.group != 2) {
        for (u32 y = x; y != 0; y &= y - 1) a.list[pos++] = first + __ffs(y) - 1;
        return;
    }
    // bit_lo is even, so `first` is too: a pair (b, b + 1) of the word is pair (first + b) / 2
    // of the range, and its sum the point `sums` after that
    for (u32 m = ones_pairs_of(x); m != 0; m &= m - 1) {
        const u32 b = __ffs(m) - 1;
        const u32 both = (x >> b) & 3u;
        a.list[pos++] = both == 3u ? a.sums + (first + b) / 2 : first + b + (both >> 1);
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

// ---- the G1 instances of the curve kernels (msm_curve.cuh) -----------------------

struct G1 {
    typedef fp_t F;
    typedef affine_t A;
    typedef xyzz_t X;
    static constexpr u32 RED = RED_THREADS;
    static DEVI void madd(X& acc, const F& x, const F& y) { curve_add_affine(acc, x, y); }
};

// ACC_BLOCKS_PER_SM (6) blocks of ACC_THREADS (64) threads per SM (168 registers); a cap for 8
// blocks (128 registers) measured 2-5 % slower on the H200 (docs/gpu-kernels.md).
extern "C" __global__ void __launch_bounds__(ACC_THREADS, ACC_BLOCKS_PER_SM)
    msm_bucket_acc(const bucket_acc_args a) {
    bucket_acc<G1>(a);
}
extern "C" __global__ void __launch_bounds__(SMALL_THREADS) msm_bucket_fixup(const bucket_fixup_args a) {
    bucket_fixup<G1>(a);
}
extern "C" __global__ void __launch_bounds__(RED_THREADS) msm_big_partial(const big_partial_args a) {
    big_partial<G1>(a);
}
extern "C" __global__ void __launch_bounds__(RED_THREADS) msm_big_final(const big_final_args a) {
    big_final<G1>(a);
}
extern "C" __global__ void __launch_bounds__(SMALL_THREADS) msm_bucket_reduce(const bucket_reduce_args a) {
    bucket_reduce<G1>(a);
}
extern "C" __global__ void __launch_bounds__(RED_THREADS) msm_window_combine(const window_combine_args a) {
    window_combine<G1>(a);
}
extern "C" __global__ void __launch_bounds__(RED_THREADS) xyzz_reduce(const xyzz_reduce_args a) {
    xyzz_reduce<G1>(a);
}
extern "C" __global__ void __launch_bounds__(RED_THREADS) msm_sum_ones(const sum_ones_args a) {
    sum_ones<G1>(a);
}
extern "C" __global__ void g1_gather(const gather_args a) { gather<G1>(a); }
extern "C" __global__ void msm_ones_sums(const ones_sums_args a) { ones_sums<G1>(a); }
extern "C" __global__ void msm_precompute(const precompute_args a) { precompute<G1>(a); }

// batch-affine rounds and their batched inversion (msm_affine.cuh)
extern "C" __global__ void msm_affine_halve(const affine_halve_args a) { affine_halve(a); }
// AFF_BLOCKS_PER_SM blocks per multiprocessor: one wave of the round's threads
extern "C" __global__ void __launch_bounds__(AFF_THREADS, AFF_BLOCKS_PER_SM) msm_affine_fwd(const affine_round_args a) {
    affine_fwd<G1>(a);
}
extern "C" __global__ void __launch_bounds__(AFF_THREADS, AFF_BLOCKS_PER_SM) msm_affine_bwd(const affine_round_args a) {
    affine_bwd<G1>(a);
}
extern "C" __global__ void __launch_bounds__(AFF_INV_THREADS) fp_batch_inv_up(const batch_inv_args a) {
    batch_inv_up<fp_t>(a);
}
extern "C" __global__ void __launch_bounds__(AFF_INV_THREADS) fp_batch_inv_top(const batch_inv_args a) {
    batch_inv_top<fp_t>(a);
}
extern "C" __global__ void __launch_bounds__(AFF_INV_THREADS) fp_batch_inv_down(const batch_inv_args a) {
    batch_inv_down<fp_t>(a);
}
