//! Multi-scalar multiplication on the GPU in G1 and G2 (Pippenger with signed digits, counting
//! sort by bucket, batch-affine rounds in G1 then balanced XYZZ bucket accumulation, segmented
//! bucket reduction), driving
//! `cuda/msm.cu` (the sort and the G1 curve kernels) and `cuda/msm_g2.cu` (the G2 ones) through
//! an [`Exec`]; written once over [`MsmCurve`].
//!
//! Sparse queries arrive split by the CPU (`proofline_groth16::msm::SparseScalars`: zeros
//! dropped, a bitmap of the ones, the tail's indices and scalars); this is the only split, and
//! the GPU takes it as it is: the ones are listed from their bitmap on the device and their bases
//! summed (batch-affine rounds, one bucket per group), the tail's bases are gathered side by
//! side and go through Pippenger with the tail's scalars. The split goes up first
//! ([`upload_split`]: the bitmap's words, the tail's indices and scalars), so that a caller can
//! copy it before it runs kernels; [`sparse_uploaded`] then works from those device copies
//! (`sparse` does both).
//! Bases are either resident on the device ([`Bases::Device`]), resident with precomputed
//! copies for fixed-base MSMs ([`Bases::Precomputed`], `plan::Precomputation`), resident with
//! the pair sums of a sparse query's ones ([`Bases::Paired`], [`pair_sums`]), or streamed from
//! host memory in chunks of [`STREAM_CHUNK`] points ([`Bases::Host`]).
//!
//! Memory: every helper frees its temporaries and synchronises before it returns (a split on
//! the device is its caller's, held until dropped), so the phases' peaks add up simply;
//! `bytes.rs` has the formulas and tests them against this code.

use std::time::Instant;

use blstrs::G1Affine;
use group::Group;
use proofline_groth16::msm::SparseScalars;

use crate::abi::{
    AffineHalveArgs, AffineRoundArgs, BatchInvArgs, BigFinalArgs, BigPartialArgs, BucketAccArgs,
    BucketFixupArgs, BucketReduceArgs, DevPtr, DevPtrMut, FindBigArgs, GatherArgs, MsmDigitsArgs,
    OnesCountArgs, OnesExpandArgs, PairSumsArgs, PrecomputeArgs, RadixDigitsArgs, RadixEndsArgs,
    RadixPassArgs, RadixPrepArgs, ScalarsHighArgs, ScanAddArgs, ScanSumsArgs, ScanTilesArgs,
    SortCoarseArgs, SortFineArgs, SumOnesArgs, WindowCombineArgs, XyzzReduceArgs, ACC_THREADS,
    AFF_INV_MAX, AFF_INV_THREADS, AFF_THREADS, BIG_PER_BLOCK, ELEMENT_THREADS, FR_WORDS,
    ONES_THREADS, RADIX_BITS, RADIX_PREP_BLOCKS_PER_SM, RADIX_THREADS, SCAN_SUMS_THREADS,
    SCAN_THREADS, SCAN_TILE, SMALL_THREADS, SORT_THREADS, WINDOW_GROUPS,
};
use crate::config::{G2Madd, MsmAcc, MsmConfig, RoundPoints};
use crate::curve::{AffineKernels, MsmCurve, G1};
use crate::error::GpuError;
use crate::exec::{grid, DevBuf, Exec, Readback};
use crate::layout::scalars_as_u32;
use crate::plan::{
    affine_threads, combine_windows, split_big, AccSplit, AffineGroup, BucketSets, ChunkSort,
    ChunkWindows, OnesRounds, Precomputation, RadixPlan, SortPlan,
};
use crate::stager::stream_chunks;

/// Points per chunk when bases are streamed from host memory (384 MiB of G1 points, 768 MiB of
/// G2 points; two pinned host buffers of a chunk per streaming slot).
pub const STREAM_CHUNK: usize = 1 << 22;

/// What an MSM did (for logs and benchmarks).
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct MsmStats {
    /// points in
    pub points: usize,
    /// scalars that went through Pippenger
    pub tail: usize,
    /// window bits of the last chunk (its widest windows')
    pub window: u32,
    /// windows of the last chunk
    pub windows: u32,
    /// Pippenger chunks
    pub chunks: usize,
    /// Milliseconds of host-to-device copies of sparse splits (bitmaps of the ones, tail
    /// indices and tail scalars).
    pub upload_ms: f64,
    /// Milliseconds summing the bases of the ones (kernels and read-back).
    pub ones_ms: f64,
    /// Points the ones' sums added: one per one, or over pair sums one per pair of bases with a
    /// one.
    pub ones_summed: usize,
    /// Milliseconds gathering the tail's bases side by side.
    pub gather_ms: f64,
    /// Milliseconds in Pippenger (sort, accumulation, reduction, read-back).
    pub pippenger_ms: f64,
}

/// Milliseconds since `t`.
fn ms_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// Where an MSM's bases (affine points of type `P`) are.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Bases<'a, P = G1Affine> {
    /// On the device at this address (resident), at least as many as the MSM needs.
    Device(u64),
    /// On the device with precomputed copies: copy k (2^(k window) times each base) of base i
    /// at point `k * stride + i` from `ptr` (copy 0 is the bases themselves).
    Precomputed {
        /// Address of copy 0.
        ptr: u64,
        /// Points per copy.
        stride: usize,
        /// Window and copies.
        pre: Precomputation,
    },
    /// On the device at `ptr`: the query's `n` bases, then their pair sums (point `n + j` is
    /// base 2j + base 2j + 1, j < ceil(n / 2); [`pair_sums`]). A sparse MSM's ones then list
    /// one entry per pair of bases with a one ([`OnesList::Paired`]); everything else reads the
    /// bases as [`Bases::Device`].
    Paired {
        /// Address of base 0.
        ptr: u64,
        /// Bases before the pair sums.
        n: usize,
    },
    /// In host memory: streamed through a staging buffer of `chunk` points.
    Host {
        /// The bases.
        points: &'a [P],
        /// Points per chunk ([`STREAM_CHUNK`] in production).
        chunk: usize,
    },
}

/// Blocks of the ones sum (a few per multiprocessor).
pub(crate) fn ones_blocks(sm_count: u32) -> u32 {
    (sm_count * 4).max(1)
}

/// The device address of point `i` of a point array of `C` at `base`.
fn point_at<C: MsmCurve>(base: u64, i: usize) -> u64 {
    base.wrapping_add((i * C::AFFINE_WORDS * 4) as u64)
}

/// `sum scalars[i] * bases[i]`, i < n, both on the device; chunks of [`MsmConfig::max_chunk`].
pub(crate) fn pippenger<E: Exec, C: MsmCurve>(
    e: &E,
    bases: u64,
    scalars: u64,
    n: usize,
    cfg: &MsmConfig,
    stats: &mut MsmStats,
) -> Result<C::Projective, GpuError> {
    pippenger_sets::<E, C>(e, bases, None, scalars, n, cfg, stats)
}

/// [`pippenger`] over bases with precomputed copies: copy k of base i at point
/// `k * stride + i` of `bases` (`stride` points per copy, at least n).
#[allow(clippy::too_many_arguments)]
pub(crate) fn pippenger_sets<E: Exec, C: MsmCurve>(
    e: &E,
    bases: u64,
    pre: Option<(Precomputation, usize)>,
    scalars: u64,
    n: usize,
    cfg: &MsmConfig,
    stats: &mut MsmStats,
) -> Result<C::Projective, GpuError> {
    if let Some((p, stride)) = pre {
        if stride < n || u64::from(p.copies) * stride as u64 >= 1 << 31 {
            return Err(GpuError::InvalidInput(format!(
                "{} copies of {stride} points for an MSM of {n}",
                p.copies
            )));
        }
    }
    let t = Instant::now();
    let mut total = C::Projective::identity();
    let mut start = 0usize;
    while start < n {
        let len = (n - start).min(cfg.max_chunk());
        let sp = scalars + (start * FR_WORDS as usize * 4) as u64;
        let (windows, stride) = match pre {
            Some((p, stride)) => (
                ChunkWindows::Uniform(BucketSets::precomputed(&p)),
                stride as u32,
            ),
            None => (ChunkWindows::plain(len, cfg.windows), 0),
        };
        let bp = point_at::<C>(bases, start);
        total += pippenger_windows::<E, C>(e, bp, sp, len, &windows, stride, cfg)?;
        stats.tail += len;
        stats.window = windows.widest();
        stats.windows = windows.windows();
        stats.chunks += 1;
        start += len;
    }
    stats.pippenger_ms += ms_since(t);
    Ok(total)
}

/// One chunk of `n` points at `bp`, scalars at `sp`, through `windows`: one [`pippenger_chunk`],
/// or for split windows the low windows over the scalars, then the high ones over the high
/// scalars (`msm_scalars_high`, made once the low part is done, so that they and the low
/// part's buffers are never on the device together).
pub(crate) fn pippenger_windows<E: Exec, C: MsmCurve>(
    e: &E,
    bp: u64,
    sp: u64,
    n: usize,
    windows: &ChunkWindows,
    stride: u32,
    cfg: &MsmConfig,
) -> Result<C::Projective, GpuError> {
    match windows {
        ChunkWindows::Uniform(sets) => pippenger_chunk::<E, C>(e, bp, sp, n, sets, stride, cfg),
        ChunkWindows::Split { low, high } => {
            let low_sum = pippenger_chunk::<E, C>(e, bp, sp, n, low, stride, cfg)?;
            let high_scalars = e.alloc(n * FR_WORDS as usize)?;
            e.launch(
                grid(n, ELEMENT_THREADS),
                ELEMENT_THREADS,
                &ScalarsHighArgs {
                    scalars: DevPtr(sp),
                    out: DevPtrMut(high_scalars.ptr()),
                    n: n as u32,
                    low_c: low.plan.c,
                    low_nw: low.plan.nw,
                },
            )?;
            let high_sum =
                pippenger_chunk::<E, C>(e, bp, high_scalars.ptr(), n, high, stride, cfg)?;
            drop(high_scalars);
            e.sync()?;
            let mut shifted = high_sum;
            for _ in 0..windows.high_bit() {
                shifted = shifted.double();
            }
            Ok(low_sum + shifted)
        }
    }
}

/// Threads the balanced accumulation of `C` targets on this device.
pub(crate) fn acc_target<C: MsmCurve>(sm_count: u32) -> u32 {
    sm_count * ACC_THREADS * C::ACC_BLOCKS_PER_SM
}

/// Words of the tile sums an exclusive scan of `m` values needs.
fn scan_sums_len(m: usize) -> usize {
    m.div_ceil(SCAN_TILE as usize)
}

/// Exclusive scan of `m` values from `inp` to `out` (a scan per tile, a scan of the tiles' sums,
/// then each tile's offset added).
fn exclusive_scan<E: Exec>(e: &E, inp: u64, out: u64, m: usize) -> Result<(), GpuError> {
    let tiles = scan_sums_len(m);
    let sums_buf = e.alloc(tiles)?;
    let sums = sums_buf.ptr();
    e.launch(
        tiles as u32,
        SCAN_THREADS,
        &ScanTilesArgs {
            input: DevPtr(inp),
            output: DevPtrMut(out),
            tile_sums: DevPtrMut(sums),
            m: m as u32,
        },
    )?;
    e.launch(
        1,
        SCAN_SUMS_THREADS,
        &ScanSumsArgs {
            sums: DevPtrMut(sums),
            count: tiles as u32,
        },
    )?;
    e.launch(
        grid(m, ELEMENT_THREADS),
        ELEMENT_THREADS,
        &ScanAddArgs {
            output: DevPtrMut(out),
            tile_sums: DevPtr(sums),
            m: m as u32,
        },
    )?;
    Ok(())
}

/// The entries of a chunk sorted by bucket: each bucket's size, its end in `vals`, and the
/// entries (point | sign << 31) in bucket order.
struct Sorted<B> {
    counts: B,
    ends: B,
    vals: B,
}

/// Counting sort with global atomics: histogram, scan, scatter.
fn sort_atomic<E: Exec>(
    e: &E,
    sp: u64,
    n: usize,
    sets: &BucketSets,
    stride: u32,
) -> Result<Sorted<E::Buf>, GpuError> {
    let plan = &sets.plan;
    let m = sets.buckets();
    let counts = e.zeros(m)?;
    let ends = e.alloc(m)?;
    let vals = e.alloc(n * plan.nw as usize)?;
    let digits = |pass: u32| {
        e.launch(
            grid(n, ELEMENT_THREADS),
            ELEMENT_THREADS,
            &MsmDigitsArgs {
                scalars: DevPtr(sp),
                counts: DevPtrMut(counts.ptr()),
                cursor: DevPtrMut(ends.ptr()),
                vals: DevPtrMut(vals.ptr()),
                n: n as u32,
                c: plan.c,
                nw: plan.nw,
                pass,
                copies: sets.copies,
                stride,
            },
        )
    };
    digits(0)?;
    exclusive_scan(e, counts.ptr(), ends.ptr(), m)?;
    digits(1)?;
    Ok(Sorted { counts, ends, vals })
}

/// Two-level sort with shared-memory counters (see `cuda/msm.cu`): coarse counts per tile, a
/// scan, the coarse scatter, then one block per coarse bin for the fine sort. Its temporaries
/// are freed (and the lane synchronised) before it returns.
fn sort_two_level<E: Exec>(
    e: &E,
    sp: u64,
    n: usize,
    sets: &BucketSets,
    stride: u32,
    sort: &SortPlan,
) -> Result<Sorted<E::Buf>, GpuError> {
    let plan = &sets.plan;
    let m = sets.buckets();
    let max_entries = n * plan.nw as usize;
    let tiles = SortPlan::tiles(n);
    // one more count, zero: its exclusive scan is the number of entries
    let slots = sort.bins as usize * tiles + 1;
    let tile_counts = e.zeros(slots)?;
    let offsets = e.alloc(slots)?;
    let keys = e.alloc(max_entries.div_ceil(2))?;
    let mid = e.alloc(max_entries)?;
    let coarse = |pass: u32| {
        e.launch(
            tiles as u32,
            SORT_THREADS,
            &SortCoarseArgs {
                scalars: DevPtr(sp),
                offsets: DevPtr(offsets.ptr()),
                tile_counts: DevPtrMut(tile_counts.ptr()),
                keys: DevPtrMut(keys.ptr()),
                vals: DevPtrMut(mid.ptr()),
                n: n as u32,
                c: plan.c,
                nw: plan.nw,
                copies: sets.copies,
                stride,
                fine_bits: sort.fine_bits,
                coarse: sort.coarse,
                bins: sort.bins,
                tiles: tiles as u32,
                pass,
            },
        )
    };
    coarse(0)?;
    exclusive_scan(e, tile_counts.ptr(), offsets.ptr(), slots)?;
    coarse(1)?;
    let counts = e.alloc(m)?;
    let ends = e.alloc(m)?;
    let vals = e.alloc(max_entries)?;
    e.launch(
        sort.bins,
        SORT_THREADS,
        &SortFineArgs {
            offsets: DevPtr(offsets.ptr()),
            keys: DevPtr(keys.ptr()),
            vals_in: DevPtr(mid.ptr()),
            vals: DevPtrMut(vals.ptr()),
            counts: DevPtrMut(counts.ptr()),
            ends: DevPtrMut(ends.ptr()),
            tiles: tiles as u32,
            fine_bits: sort.fine_bits,
            coarse: sort.coarse,
            nb: plan.nb,
        },
    )?;
    drop((tile_counts, offsets, keys, mid));
    e.sync()?;
    Ok(Sorted { counts, ends, vals })
}

/// Radix sort (see `cuda/msm.cu`): the scalars' words and carries with every pass's digit
/// histogram, each pass's digit starts per set, then per bucket set the single-pass scatters of
/// `radix` (the last one adding up the buckets' sizes), then the scan of the sizes into each
/// bucket's start and end. Counts and ends hold one value more (the total). Its temporaries are
/// freed (and the lane synchronised) before it returns.
fn sort_radix<E: Exec>(
    e: &E,
    sp: u64,
    n: usize,
    sets: &BucketSets,
    stride: u32,
    radix: &RadixPlan,
) -> Result<Sorted<E::Buf>, GpuError> {
    let plan = &sets.plan;
    let m = sets.buckets();
    let counts = e.zeros(m + 1)?;
    let ends = e.alloc(m + 1)?;
    let vals = e.alloc(n * plan.nw as usize)?;
    let words = e.alloc(8 * n)?;
    let carries = e.alloc(n)?;
    let npasses = radix.passes.len();
    let nsets = sets.sets as usize;
    let bins = 1usize << RADIX_BITS;
    let hist = e.zeros(npasses * nsets * bins)?;
    let digits = e.alloc(npasses * nsets * bins)?;
    let set_starts = e.alloc(nsets + 1)?;
    let blocks = grid(n, ELEMENT_THREADS).min(e.sm_count() * RADIX_PREP_BLOCKS_PER_SM);
    e.launch(
        blocks,
        ELEMENT_THREADS,
        &RadixPrepArgs {
            scalars: DevPtr(sp),
            hist: DevPtrMut(hist.ptr()),
            words: DevPtrMut(words.ptr()),
            carries: DevPtrMut(carries.ptr()),
            n: n as u32,
            c: plan.c,
            nw: plan.nw,
            copies: sets.copies,
            sets: sets.sets,
            set_bins: radix.set_bins(),
            passes: npasses as u32,
            pass_bits: radix.packed_bits(),
        },
    )?;
    e.launch(
        sets.sets,
        RADIX_THREADS,
        &RadixDigitsArgs {
            hist: DevPtr(hist.ptr()),
            starts: DevPtrMut(digits.ptr()),
            set_starts: DevPtrMut(set_starts.ptr()),
            sets: sets.sets,
            passes: npasses as u32,
            pass_bits: radix.packed_bits(),
        },
    )?;
    // (key, entry) pairs of one set between passes: two buffers where three passes or more
    let set_entries = n * sets.copies as usize;
    let between = npasses.saturating_sub(1).min(2);
    let pairs = (0..between)
        .map(|_| e.alloc(2 * set_entries))
        .collect::<Result<Vec<_>, _>>()?;
    // the tiles' published counts: one buffer per pass in turn, each pass clearing the other
    let status = [e.zeros(radix.slots(sets))?, e.zeros(radix.slots(sets))?];
    let tiles = radix.tiles(sets);
    let last = npasses - 1;
    let mut turn = 0;
    for set in 0..sets.sets {
        for (p, &(shift, bits)) in radix.passes.iter().enumerate() {
            let out = if p == last {
                vals.ptr()
            } else {
                pairs[p % 2].ptr()
            };
            e.launch(
                tiles as u32,
                RADIX_THREADS,
                &RadixPassArgs {
                    words: DevPtr(words.ptr()),
                    carries: DevPtr(carries.ptr()),
                    pairs_in: DevPtr(if p == 0 { 0 } else { pairs[(p - 1) % 2].ptr() }),
                    set_starts: DevPtr(set_starts.ptr()),
                    digit_starts: DevPtr(digits.at((p * nsets + set as usize) * bins)),
                    counts: DevPtrMut(counts.ptr()),
                    status: DevPtrMut(status[turn % 2].ptr()),
                    status_next: DevPtrMut(status[(turn + 1) % 2].ptr()),
                    out: DevPtrMut(out),
                    n: n as u32,
                    c: plan.c,
                    nw: plan.nw,
                    nb: plan.nb,
                    copies: sets.copies,
                    stride,
                    set,
                    tiles: tiles as u32,
                    tiles_per_window: radix.tiles_per_window as u32,
                    shift,
                    bits,
                    next_bits: radix.passes[(p + 1) % npasses].1,
                    first: u32::from(p == 0),
                    last: u32::from(p == last),
                },
            )?;
            turn += 1;
        }
    }
    drop((words, carries, pairs, status, hist, digits, set_starts));
    exclusive_scan(e, counts.ptr(), ends.ptr(), m + 1)?;
    e.launch(
        grid(m, ELEMENT_THREADS),
        ELEMENT_THREADS,
        &RadixEndsArgs {
            ends: DevPtrMut(ends.ptr()),
            counts: DevPtr(counts.ptr()),
            m: m as u32,
        },
    )?;
    e.sync()?;
    Ok(Sorted { counts, ends, vals })
}

/// What one XYZZ accumulation sums: `m` buckets, bucket g's entries at `[ends[g] - counts[g],
/// ends[g])` of `vals` (point | sign << 31; with `vals` of 0, entry k is point k), `entries` in
/// all, of the points at `points`; bucket g's sum goes to bucket g of `buckets`.
struct AccInput {
    points: u64,
    vals: u64,
    ends: u64,
    counts: u64,
    m: usize,
    entries: usize,
    buckets: u64,
}

/// The balanced XYZZ accumulation of `inp`: big buckets (skewed digits, repeated scalars) split
/// over many blocks, the rest in equal ranges of the entries per thread, then the owners add the
/// heads. Frees its temporaries (the caller synchronises).
fn accumulate<E: Exec, C: MsmCurve>(
    e: &E,
    inp: &AccInput,
    cfg: &MsmConfig,
) -> Result<(), GpuError> {
    let k = C::KERNELS;
    let m = inp.m;
    let split = AccSplit::new(
        inp.entries,
        m,
        acc_target::<C>(e.sm_count()),
        crate::plan::ACC_WAVES,
    );
    let cap = split.big_cap;
    let big_count = e.zeros(1)?;
    let big_list = e.alloc(2 * cap)?;
    e.launch(
        grid(m, ELEMENT_THREADS),
        ELEMENT_THREADS,
        &FindBigArgs {
            counts: DevPtr(inp.counts),
            big_count: DevPtrMut(big_count.ptr()),
            big_list: DevPtrMut(big_list.ptr()),
            m: m as u32,
            big: split.big,
            big_cap: cap as u32,
        },
    )?;
    {
        let threads = split.threads as usize;
        let head = e.alloc(threads * C::XYZZ_WORDS)?;
        let head_id = e.alloc(threads)?;
        let own_id = e.alloc(threads)?;
        let acc = match cfg.g2_madd {
            G2Madd::Call => k.bucket_acc,
            G2Madd::Inline => k.bucket_acc_inline,
        };
        e.launch_as(
            acc,
            grid(threads, ACC_THREADS),
            ACC_THREADS,
            &BucketAccArgs {
                bases: DevPtr(inp.points),
                vals: DevPtr(inp.vals),
                ends: DevPtr(inp.ends),
                counts: DevPtr(inp.counts),
                buckets: DevPtrMut(inp.buckets),
                head: DevPtrMut(head.ptr()),
                head_id: DevPtrMut(head_id.ptr()),
                own_id: DevPtrMut(own_id.ptr()),
                m: m as u32,
                per_thread: split.per_thread,
                big: split.big,
                threads: split.threads,
            },
        )?;
        e.launch_as(
            k.bucket_fixup,
            grid(threads, SMALL_THREADS),
            SMALL_THREADS,
            &BucketFixupArgs {
                head: DevPtr(head.ptr()),
                head_id: DevPtr(head_id.ptr()),
                own_id: DevPtr(own_id.ptr()),
                buckets: DevPtrMut(inp.buckets),
                threads: split.threads,
            },
        )?;
    }
    let mut nbig = [0u32; 1];
    e.read(
        Readback::BigCount { max: cap as u32 },
        &big_count,
        0,
        &mut nbig,
    )?;
    let nbig = (nbig[0] as usize).min(cap);
    if nbig > 0 {
        let mut pairs = vec![0u32; 2 * nbig];
        e.read(
            Readback::BigList {
                entries: inp.entries as u32,
            },
            &big_list,
            0,
            &mut pairs,
        )?;
        let sizes: Vec<u32> = pairs.chunks_exact(2).map(|p| p[1]).collect();
        let bs = split_big(&sizes, BIG_PER_BLOCK);
        let blk_bucket = e.upload(&bs.blk_bucket)?;
        let blk_part = e.upload(&bs.blk_part)?;
        let first = e.upload(&bs.first)?;
        let count = e.upload(&bs.count)?;
        let partial = e.alloc(bs.blk_bucket.len() * C::XYZZ_WORDS)?;
        e.launch_as(
            k.big_partial,
            bs.blk_bucket.len() as u32,
            C::RED_THREADS,
            &BigPartialArgs {
                bases: DevPtr(inp.points),
                vals: DevPtr(inp.vals),
                cursor: DevPtr(inp.ends),
                counts: DevPtr(inp.counts),
                big_list: DevPtr(big_list.ptr()),
                blk_bucket: DevPtr(blk_bucket.ptr()),
                blk_part: DevPtr(blk_part.ptr()),
                partial: DevPtrMut(partial.ptr()),
                per_block: BIG_PER_BLOCK,
            },
        )?;
        e.launch_as(
            k.big_final,
            nbig as u32,
            C::RED_THREADS,
            &BigFinalArgs {
                partial: DevPtr(partial.ptr()),
                first: DevPtr(first.ptr()),
                count: DevPtr(count.ptr()),
                big_list: DevPtr(big_list.ptr()),
                buckets: DevPtrMut(inp.buckets),
            },
        )?;
    }
    drop((big_count, big_list));
    Ok(())
}

/// The batch-affine accumulation ([`MsmAcc::BatchAffine`]) of a chunk's sorted entries: its
/// bucket sets in groups ([`AffineGroup`]), each group through `rounds` rounds of
/// `cuda/msm_affine.cuh` (every bucket halved, one batched inversion per round), then the XYZZ
/// accumulation of what they leave into the group's buckets. `n` points, each in every set at
/// most `sets.copies` times. Frees its temporaries and synchronises after each group.
fn batch_affine<E: Exec, C: MsmCurve>(
    e: &E,
    ak: AffineKernels,
    sorted: &AccInput,
    sets: &BucketSets,
    n: usize,
    rounds: u32,
    cfg: &MsmConfig,
) -> Result<(), GpuError> {
    let nb = sets.plan.nb as usize;
    let nsets = sets.sets as usize;
    let set_entries = n * sets.copies as usize;
    let per_group = AffineGroup::sets_per_group(nsets, set_entries, ak.group_entries);
    let mut first = 0;
    while first < nsets {
        let grp = AffineGroup::new(per_group.min(nsets - first), set_entries, nb);
        let mp = grp.buckets;
        let g0 = first * nb;
        let pts = [
            e.alloc(grp.caps[0] * C::AFFINE_WORDS)?,
            e.alloc(grp.caps[1] * C::AFFINE_WORDS)?,
        ];
        let half = [e.alloc(mp + 1)?, e.alloc(mp + 1)?];
        let ends = [e.alloc(mp + 1)?, e.alloc(mp + 1)?];
        let inv = InvScratch::new(e, ak)?;
        // the round's input: points, entries (0: position k is point k), ends, counts
        let mut src = RoundInput {
            points: PointsAt::interleaved(sorted.points, ak.field_words),
            vals: sorted.vals,
            ends: word_at(sorted.ends, g0),
            counts: word_at(sorted.counts, g0),
        };
        let mut total = 0usize;
        for r in 0..rounds as usize {
            let (out, half, ends) = (&pts[r % 2], &half[r % 2], &ends[r % 2]);
            let last = r + 1 == rounds as usize;
            let out = round_out(ak, cfg, out.ptr(), grp.caps[r % 2], last);
            e.launch(
                grid(mp + 1, ELEMENT_THREADS),
                ELEMENT_THREADS,
                &AffineHalveArgs {
                    counts: DevPtr(src.counts),
                    half: DevPtrMut(half.ptr()),
                    m: mp as u32,
                },
            )?;
            exclusive_scan(e, half.ptr(), ends.ptr(), mp + 1)?;
            let mut t = [0u32; 1];
            e.read(
                Readback::Entries {
                    max: grp.cap(r) as u32,
                },
                ends,
                mp,
                &mut t,
            )?;
            total = t[0] as usize;
            let out_ends = word_at(ends.ptr(), 1);
            affine_round(e, ak, &src, out_ends, out, mp, total, &inv)?;
            src = RoundInput {
                points: out,
                vals: 0,
                ends: out_ends,
                counts: half.ptr(),
            };
        }
        accumulate::<E, C>(
            e,
            &AccInput {
                points: src.points.x,
                vals: 0,
                ends: src.ends,
                counts: src.counts,
                m: mp,
                entries: total,
                buckets: word_at(sorted.buckets, g0 * C::XYZZ_WORDS),
            },
            cfg,
        )?;
        drop((pts, half, ends, inv));
        e.sync()?;
        first += grp.sets;
    }
    Ok(())
}

/// The device address of word `w` from `p`.
fn word_at(p: u64, w: usize) -> u64 {
    p.wrapping_add(4 * w as u64)
}

/// Where a batch-affine round finds point k: x at `x + 4 k stride`, y at `y + 4 k stride`
/// (bytes; `stride` in words).
#[derive(Clone, Copy)]
struct PointsAt {
    x: u64,
    y: u64,
    stride: u32,
}

impl PointsAt {
    /// Points as the bases hold them, x and y side by side, from `p` (coordinates of
    /// `field_words` words).
    fn interleaved(p: u64, field_words: usize) -> Self {
        PointsAt {
            x: p,
            y: word_at(p, field_words),
            stride: 2 * field_words as u32,
        }
    }

    /// A buffer of `cap` points from `p` holding every x, then every y.
    fn split(p: u64, cap: usize, field_words: usize) -> Self {
        PointsAt {
            x: p,
            y: word_at(p, cap * field_words),
            stride: field_words as u32,
        }
    }
}

/// Where a round writes its outputs in a point buffer of `cap` points at `p`: interleaved after
/// the `last` round (the XYZZ accumulation reads them so), else as `cfg.round_points` says.
fn round_out(ak: AffineKernels, cfg: &MsmConfig, p: u64, cap: usize, last: bool) -> PointsAt {
    match (cfg.round_points, last) {
        (RoundPoints::Split, false) => PointsAt::split(p, cap, ak.field_words),
        (RoundPoints::Interleaved, _) | (_, true) => PointsAt::interleaved(p, ak.field_words),
    }
}

/// The input of a batch-affine round: bucket g's points at `[ends[g] - counts[g], ends[g])`,
/// through `vals` (point | sign << 31) or, with `vals` of 0, position k is point k of `points`.
struct RoundInput {
    points: PointsAt,
    vals: u64,
    ends: u64,
    counts: u64,
}

/// The batched inversion's buffers for the rounds (one wave of threads).
struct InvScratch<B> {
    totals: B,
    inv: B,
    blk: B,
    threads: usize,
}

impl<B: DevBuf> InvScratch<B> {
    fn new<E: Exec<Buf = B>>(e: &E, ak: AffineKernels) -> Result<Self, GpuError> {
        let threads = affine_threads(e.sm_count(), ak.blocks_per_sm);
        let fw = ak.field_words;
        Ok(InvScratch {
            totals: e.alloc(threads * fw)?,
            inv: e.alloc(threads * fw)?,
            blk: e.alloc(threads.div_ceil(AFF_INV_THREADS as usize) * fw)?,
            threads,
        })
    }
}

/// One batch-affine round (`cuda/msm_affine.cuh`) over `m` buckets: `total` > 0 outputs to
/// `out`, bucket g's ending at `out_ends[g]`; the forward pass, the batched inversion, the
/// backward pass.
#[allow(clippy::too_many_arguments)]
fn affine_round<E: Exec>(
    e: &E,
    ak: AffineKernels,
    src: &RoundInput,
    out_ends: u64,
    out: PointsAt,
    m: usize,
    total: usize,
    inv: &InvScratch<E::Buf>,
) -> Result<(), GpuError> {
    if total == 0 {
        return Ok(());
    }
    // whole warps, each over 32 * per_thread consecutive positions
    let per_thread = total.div_ceil(inv.threads);
    let threads = 32 * total.div_ceil(32 * per_thread);
    let args = AffineRoundArgs {
        src: DevPtr(src.points.x),
        src_y: DevPtr(src.points.y),
        vals: DevPtr(src.vals),
        ends: DevPtr(src.ends),
        counts: DevPtr(src.counts),
        out_ends: DevPtr(out_ends),
        totals: DevPtrMut(inv.totals.ptr()),
        inv: DevPtr(inv.inv.ptr()),
        out: DevPtrMut(out.x),
        out_y: DevPtrMut(out.y),
        m: m as u32,
        total: total as u32,
        per_thread: per_thread as u32,
        threads: threads as u32,
        src_stride: src.points.stride,
        out_stride: out.stride,
    };
    let blocks = grid(threads, AFF_THREADS);
    e.launch_as(ak.fwd, blocks, AFF_THREADS, &args)?;
    batch_invert(
        e,
        ak,
        inv.totals.ptr(),
        inv.blk.ptr(),
        inv.inv.ptr(),
        threads,
    )?;
    e.launch_as(ak.bwd, blocks, AFF_THREADS, &args)
}

/// `out[i] = 1 / values[i]` for the `n` non-zero field elements at `values`, with one inversion
/// (`cuda/msm_affine.cuh`: a product tree per block of AFF_INV_THREADS values, one over the
/// blocks' products, and back down); `blk` holds a field element per block of values. More
/// than [`AFF_INV_MAX`] values is an error: the single top tree cannot hold their blocks.
pub(crate) fn batch_invert<E: Exec>(
    e: &E,
    ak: AffineKernels,
    values: u64,
    blk: u64,
    out: u64,
    n: usize,
) -> Result<(), GpuError> {
    if n > AFF_INV_MAX as usize {
        return Err(GpuError::InvalidInput(format!(
            "batched inversion of {n} values: at most {AFF_INV_MAX}"
        )));
    }
    let inv_blocks = n.div_ceil(AFF_INV_THREADS as usize) as u32;
    let inv_args = BatchInvArgs {
        values: DevPtr(values),
        blk: DevPtrMut(blk),
        out: DevPtrMut(out),
        n: n as u32,
        blocks: inv_blocks,
    };
    e.launch_as(ak.inv_up, inv_blocks, AFF_INV_THREADS, &inv_args)?;
    e.launch_as(ak.inv_top, 1, AFF_INV_THREADS, &inv_args)?;
    e.launch_as(ak.inv_down, inv_blocks, AFF_INV_THREADS, &inv_args)
}

/// One Pippenger chunk of n > 0 points in the bucket sets of `sets` (bases at `bp`, their
/// copies `stride` points apart).
fn pippenger_chunk<E: Exec, C: MsmCurve>(
    e: &E,
    bp: u64,
    sp: u64,
    n: usize,
    sets: &BucketSets,
    stride: u32,
    cfg: &MsmConfig,
) -> Result<C::Projective, GpuError> {
    let k = C::KERNELS;
    let plan = sets.plan;
    let m = sets.buckets();
    let max_entries = n * plan.nw as usize;
    // 1. sort the (point, window) entries by bucket
    let Sorted {
        counts,
        ends: cursor,
        vals,
    } = match ChunkSort::of(cfg.sort, n, sets) {
        ChunkSort::TwoLevel(s) => sort_two_level(e, sp, n, sets, stride, &s)?,
        ChunkSort::Radix(r) => sort_radix(e, sp, n, sets, stride, &r)?,
        ChunkSort::Atomic => sort_atomic(e, sp, n, sets, stride)?,
    };
    // 2. bucket accumulation: the batch-affine rounds first (G1, `MsmAcc::BatchAffine`), then
    // the balanced XYZZ accumulation of what is left
    let mut entries = [0u32; 1];
    e.read(
        Readback::Entries {
            max: max_entries as u32,
        },
        &cursor,
        m - 1,
        &mut entries,
    )?;
    let buckets = e.alloc(m * C::XYZZ_WORDS)?;
    let sorted = AccInput {
        points: bp,
        vals: vals.ptr(),
        ends: cursor.ptr(),
        counts: counts.ptr(),
        m,
        entries: entries[0] as usize,
        buckets: buckets.ptr(),
    };
    match (cfg.acc, k.affine) {
        (MsmAcc::BatchAffine { rounds }, Some(ak)) => {
            batch_affine::<E, C>(e, ak, &sorted, sets, n, rounds.clamp(1, 8), cfg)?
        }
        _ => accumulate::<E, C>(e, &sorted, cfg)?,
    }
    drop(vals);
    e.sync()?;
    // 3. segmented bucket reduction
    let segs = plan.segments();
    let nsets = sets.sets;
    let seg_out = e.alloc(nsets as usize * segs as usize * 2 * C::XYZZ_WORDS)?;
    e.launch_as(
        k.bucket_reduce,
        grid(nsets as usize * segs as usize, SMALL_THREADS),
        SMALL_THREADS,
        &BucketReduceArgs {
            buckets: DevPtr(buckets.ptr()),
            counts: DevPtr(counts.ptr()),
            out: DevPtrMut(seg_out.ptr()),
            nw: nsets,
            nb: plan.nb,
            seg: plan.segment_len(),
        },
    )?;
    drop(buckets);
    // 4. window combination, then per-window tree reduction to Jacobian
    let groups = WINDOW_GROUPS.min(segs);
    let partial = e.alloc(nsets as usize * groups as usize * C::XYZZ_WORDS)?;
    e.launch_as(
        k.window_combine,
        nsets * groups,
        C::RED_THREADS,
        &WindowCombineArgs {
            segres: DevPtr(seg_out.ptr()),
            partial: DevPtrMut(partial.ptr()),
            segs,
            seg: plan.segment_len(),
            groups,
        },
    )?;
    let win = e.alloc(nsets as usize * C::JACOBIAN_WORDS)?;
    e.launch_as(
        k.xyzz_reduce,
        nsets,
        C::RED_THREADS,
        &XyzzReduceArgs {
            input: DevPtr(partial.ptr()),
            out: DevPtrMut(win.ptr()),
            count: groups,
        },
    )?;
    let mut h = vec![0u32; nsets as usize * C::JACOBIAN_WORDS];
    e.read(Readback::Values, &win, 0, &mut h)?;
    drop((counts, cursor, seg_out, partial, win));
    e.sync()?;
    let windows: Vec<C::Projective> = h
        .chunks_exact(C::JACOBIAN_WORDS)
        .map(C::from_jacobian)
        .collect();
    Ok(combine_windows(&windows, sets.shift()))
}

/// A bitmap of ones on the device: `words` u32 words at `ptr` (bit i of the bitmap is bit
/// `i % 32` of word `i / 32`), `count` bits set in all.
#[derive(Clone, Copy, Debug)]
pub(crate) struct OnesBits {
    /// Address of word 0.
    pub(crate) ptr: u64,
    /// Words of the bitmap.
    pub(crate) words: usize,
    /// Bits set.
    pub(crate) count: usize,
}

impl OnesBits {
    /// The bitmap held by `buf` (all its words), with `count` bits set.
    pub(crate) fn of(buf: &impl DevBuf, count: usize) -> Self {
        OnesBits {
            ptr: buf.ptr(),
            words: buf.words(),
            count,
        }
    }
}

/// What the ones' list of a sparse MSM indexes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OnesList {
    /// The bases: an entry per one.
    Single,
    /// The bases and their pair sums ([`Bases::Paired`] over `n` bases): an entry per pair of
    /// bases (2j, 2j + 1) with a one, the pair sum j where both are ones.
    Paired {
        /// Bases before the pair sums.
        n: usize,
    },
}

/// `sum bases[i - lo]` over the ones `i` of `[lo, hi)` of the device bitmap `ones`: point `lo`
/// is the first at `bases`. The device lists the ones of the range (`ones_list`, from word
/// `lo / 32` of the bitmap; with [`OnesList::Paired`], where `lo` must be even, a pair of ones
/// as its pair sum), and those points are summed by batch-affine rounds
/// ([`MsmAcc::BatchAffine`]; groups and rounds of `rounds`, the curve's in [`sparse_uploaded`])
/// or by the grid-wide XYZZ sum.
#[allow(clippy::too_many_arguments)]
pub(crate) fn sum_ones<E: Exec, C: MsmCurve>(
    e: &E,
    bases: u64,
    ones: &OnesBits,
    range: std::ops::Range<usize>,
    list: OnesList,
    rounds: Option<OnesRounds>,
    cfg: &MsmConfig,
    stats: &mut MsmStats,
) -> Result<C::Projective, GpuError> {
    let lo = range.start;
    let hi = range.end.min(ones.words * 32);
    if lo >= hi || ones.count == 0 {
        return Ok(C::Projective::identity());
    }
    // where the range's pair sums start, from its first base: pair lo / 2 is point n + lo / 2 of
    // the query, n - lo / 2 points after base lo (every index a u32)
    let pairs = match list {
        OnesList::Single => 0,
        OnesList::Paired { n } => {
            if lo % 2 != 0 || hi > n || u32::try_from(n + n.div_ceil(2)).is_err() {
                return Err(GpuError::InvalidInput(format!(
                    "ones {lo}..{hi} over {n} paired bases"
                )));
            }
            (n - lo / 2) as u32
        }
    };
    let t = Instant::now();
    // the range's first word; its bits from bit_lo on, up to bit_hi (within the bitmap's words)
    let bits = ones.ptr.wrapping_add(4 * (lo / 32) as u64);
    let bit_lo = (lo % 32) as u32;
    let bit_hi = bit_lo + (hi - lo) as u32;
    let listed = ones_list(e, bits, bit_lo, bit_hi, pairs, ones.count.min(hi - lo))?;
    // the listing's scratch goes back before the sums allocate
    e.sync()?;
    let Some((list, count)) = listed else {
        stats.ones_ms += ms_since(t);
        return Ok(C::Projective::identity());
    };
    stats.ones_summed += count;
    let out = e.alloc(C::JACOBIAN_WORDS)?;
    let (partial, parts) = match (cfg.acc, C::KERNELS.affine, rounds) {
        (MsmAcc::BatchAffine { .. }, Some(ak), Some(rounds)) => {
            ones_affine::<E, C>(e, ak, bases, &list, count, rounds, cfg)?
        }
        _ => {
            let blocks = ones_blocks(e.sm_count());
            let partial = e.alloc(blocks as usize * C::XYZZ_WORDS)?;
            e.launch_as(
                C::KERNELS.sum_ones,
                blocks,
                C::RED_THREADS,
                &SumOnesArgs {
                    bases: DevPtr(bases),
                    list: DevPtr(list.ptr()),
                    out: DevPtrMut(partial.ptr()),
                    count: count as u32,
                },
            )?;
            (partial, blocks)
        }
    };
    e.launch_as(
        C::KERNELS.xyzz_reduce,
        1,
        C::RED_THREADS,
        &XyzzReduceArgs {
            input: DevPtr(partial.ptr()),
            out: DevPtrMut(out.ptr()),
            count: parts,
        },
    )?;
    let mut h = vec![0u32; C::JACOBIAN_WORDS];
    e.read(Readback::Values, &out, 0, &mut h)?;
    drop((list, partial, out));
    e.sync()?;
    stats.ones_ms += ms_since(t);
    Ok(C::from_jacobian(&h))
}

/// The positions (less `bit_lo`) of the set bits `[bit_lo, bit_hi)` of the words at `bits` (at
/// most `max`), ascending, as a device list, and their count (none when there are none): a count
/// per block of words, their exclusive scan (one element more: its last is the total, read
/// back), the positions. With `pairs` != 0 (`bit_lo` even), a pair of set bits (2j, 2j + 1)
/// is one entry, `pairs + j`.
fn ones_list<E: Exec>(
    e: &E,
    bits: u64,
    bit_lo: u32,
    bit_hi: u32,
    pairs: u32,
    max: usize,
) -> Result<Option<(E::Buf, usize)>, GpuError> {
    let words = (bit_hi as usize).div_ceil(32);
    let blocks = words.div_ceil(ONES_THREADS as usize);
    let counts = e.zeros(blocks + 1)?;
    let offsets = e.alloc(blocks + 1)?;
    e.launch(
        blocks as u32,
        ONES_THREADS,
        &OnesCountArgs {
            bits: DevPtr(bits),
            counts: DevPtrMut(counts.ptr()),
            bit_lo,
            bit_hi,
            pairs,
        },
    )?;
    exclusive_scan(e, counts.ptr(), offsets.ptr(), blocks + 1)?;
    let mut total = [0u32; 1];
    e.read(
        Readback::Entries { max: max as u32 },
        &offsets,
        blocks,
        &mut total,
    )?;
    let count = total[0] as usize;
    if count == 0 {
        drop((counts, offsets));
        return Ok(None);
    }
    let list = e.alloc(count)?;
    e.launch(
        blocks as u32,
        ONES_THREADS,
        &OnesExpandArgs {
            bits: DevPtr(bits),
            offsets: DevPtr(offsets.ptr()),
            list: DevPtrMut(list.ptr()),
            bit_lo,
            bit_hi,
            pairs,
        },
    )?;
    drop((counts, offsets));
    Ok(Some((list, count)))
}

/// The sum of the bases at the `count` positions of `list` by batch-affine rounds: groups of
/// `plan.entries` points, each one bucket halved until at most `plan.left` points are left (the
/// sizes are known, so no round reads anything back), then the XYZZ accumulation of the rest.
/// Returns the groups' XYZZ sums and their count.
#[allow(clippy::too_many_arguments)]
fn ones_affine<E: Exec, C: MsmCurve>(
    e: &E,
    ak: AffineKernels,
    bases: u64,
    list: &E::Buf,
    count: usize,
    plan: OnesRounds,
    cfg: &MsmConfig,
) -> Result<(E::Buf, u32), GpuError> {
    let per_group = plan.entries.max(1);
    let groups = count.div_ceil(per_group);
    let sums = e.alloc(groups * C::XYZZ_WORDS)?;
    let cap = plan.group(count.min(per_group));
    let pts = [
        e.alloc(cap.caps[0] * C::AFFINE_WORDS)?,
        e.alloc(cap.caps[1] * C::AFFINE_WORDS)?,
    ];
    let inv = InvScratch::new(e, ak)?;
    for k in 0..groups {
        let first = k * per_group;
        let grp = plan.group((count - first).min(per_group));
        // the bucket's size before each round and after the last: counts, ends and the next
        // round's out_ends of a single bucket are all this one value
        let sizes: Vec<u32> = grp.sizes.iter().map(|&c| c as u32).collect();
        let sizes_dev = e.upload(&sizes)?;
        let mut src = RoundInput {
            points: PointsAt::interleaved(bases, ak.field_words),
            vals: list.at(first),
            ends: sizes_dev.ptr(),
            counts: sizes_dev.ptr(),
        };
        let rounds = grp.rounds();
        for r in 0..rounds {
            let out = round_out(ak, cfg, pts[r % 2].ptr(), cap.caps[r % 2], r + 1 == rounds);
            let out_ends = sizes_dev.at(r + 1);
            affine_round(e, ak, &src, out_ends, out, 1, grp.sizes[r + 1], &inv)?;
            src = RoundInput {
                points: out,
                vals: 0,
                ends: out_ends,
                counts: out_ends,
            };
        }
        accumulate::<E, C>(
            e,
            &AccInput {
                points: src.points.x,
                vals: src.vals,
                ends: src.ends,
                counts: src.counts,
                m: 1,
                entries: grp.left(),
                buckets: sums.at(k * C::XYZZ_WORDS),
            },
            cfg,
        )?;
        // the next group reuses the point buffers
        drop(sizes_dev);
        e.sync()?;
    }
    drop((pts, inv));
    Ok((sums, groups as u32))
}

/// Copies the points at the `n` indices at `idx` (on the device, relative to `bases`) side by
/// side to `out`.
fn gather<E: Exec, C: MsmCurve>(
    e: &E,
    bases: u64,
    idx: u64,
    n: usize,
    out: u64,
    stats: &mut MsmStats,
) -> Result<(), GpuError> {
    if n == 0 {
        return Ok(());
    }
    let t = Instant::now();
    e.launch_as(
        C::KERNELS.gather,
        grid(n, ELEMENT_THREADS),
        ELEMENT_THREADS,
        &GatherArgs {
            bases: DevPtr(bases),
            idx: DevPtr(idx),
            out: DevPtrMut(out),
            n: n as u32,
        },
    )?;
    e.sync()?;
    stats.gather_ms += ms_since(t);
    Ok(())
}

/// Indices of `sorted` in `[lo, hi)`, as a range of positions.
fn in_range(sorted: &[u32], lo: usize, hi: usize) -> std::ops::Range<usize> {
    sorted.partition_point(|&i| (i as usize) < lo)..sorted.partition_point(|&i| (i as usize) < hi)
}

/// A sparse query's split on the device ([`upload_split`]): the words of its ones' bitmap that
/// cover its bases, the tail's indices and scalars (each absent when there are none).
#[derive(Debug)]
pub(crate) struct SplitOnDevice<B> {
    /// The bitmap's words (none without ones).
    ones: Option<B>,
    /// The tail's indices, ascending, one word each (none without a tail).
    tail_index: Option<B>,
    /// The tail's scalars, [`FR_WORDS`] words each (none without a tail).
    tail_scalars: Option<B>,
}

impl<B: DevBuf> SplitOnDevice<B> {
    /// Length of the tail on the device.
    fn tail(&self) -> usize {
        self.tail_index.as_ref().map_or(0, |b| b.words())
    }
}

/// Copies `split` to the device: the words of its bitmap of ones up to its last base, its tail's
/// indices and its tail's scalars (none of them when empty); synchronises, and adds the time to
/// `stats.upload_ms`.
pub(crate) fn upload_split<E: Exec>(
    e: &E,
    split: &SparseScalars,
    stats: &mut MsmStats,
) -> Result<SplitOnDevice<E::Buf>, GpuError> {
    let tail = split.tail_index.len();
    if tail != split.tail_scalars.len() {
        return Err(GpuError::InvalidInput(format!(
            "{tail} tail indices but {} tail scalars",
            split.tail_scalars.len()
        )));
    }
    let t = Instant::now();
    // bits from num_bases on are never read: the words up to the last base's
    let words = split.ones.words();
    let words = &words[..words.len().min(split.num_bases.div_ceil(32))];
    let ones = if split.ones.is_empty() || words.is_empty() {
        None
    } else {
        Some(e.upload(words)?)
    };
    let (tail_index, tail_scalars) = if tail > 0 {
        (
            Some(e.upload(&split.tail_index)?),
            Some(e.upload(scalars_as_u32(&split.tail_scalars))?),
        )
    } else {
        (None, None)
    };
    e.sync()?;
    stats.upload_ms += ms_since(t);
    Ok(SplitOnDevice {
        ones,
        tail_index,
        tail_scalars,
    })
}

/// Sparse MSM of a split query: the split up ([`upload_split`]), then [`sparse_uploaded`];
/// the split is freed (and the lane synchronised) before it returns. The tests' and the
/// benchmark's entry (the sparse stage uploads its splits before its kernel turn).
#[cfg(any(test, feature = "testkit"))]
pub(crate) fn sparse<E: Exec, C: MsmCurve>(
    e: &E,
    bases: Bases<'_, C::Affine>,
    split: &SparseScalars,
    cfg: &MsmConfig,
    stats: &mut MsmStats,
) -> Result<C::Projective, GpuError> {
    let dev = upload_split(e, split, stats)?;
    let r = sparse_uploaded::<E, C>(e, bases, split, &dev, cfg, stats);
    drop(dev);
    let synced = e.sync();
    let total = r?;
    synced?;
    Ok(total)
}

/// Sparse MSM of a split query whose split `dev` is on the device (`upload_split` of `split`;
/// the host split gives the shapes and, for streamed bases, each chunk's part of the tail): the
/// ones summed, the tail gathered and through Pippenger. Uploads nothing of the split.
pub(crate) fn sparse_uploaded<E: Exec, C: MsmCurve>(
    e: &E,
    bases: Bases<'_, C::Affine>,
    split: &SparseScalars,
    dev: &SplitOnDevice<E::Buf>,
    cfg: &MsmConfig,
    stats: &mut MsmStats,
) -> Result<C::Projective, GpuError> {
    let tail = split.tail_index.len();
    if tail != split.tail_scalars.len() || tail != dev.tail() {
        return Err(GpuError::InvalidInput(format!(
            "{tail} tail indices, {} tail scalars, {} on the device",
            split.tail_scalars.len(),
            dev.tail()
        )));
    }
    if let Bases::Host { points: h, .. } = bases {
        if h.len() < split.num_bases {
            return Err(GpuError::InvalidInput(format!(
                "{} {} bases for a query of {}",
                h.len(),
                C::NAME,
                split.num_bases
            )));
        }
    }
    stats.points += split.num_bases;
    let ones_rounds = C::KERNELS.affine.map(|ak| ak.ones);
    let ones = dev.ones.as_ref().map(|b| OnesBits::of(b, split.ones.len()));
    let mut total = C::Projective::identity();
    let gathered = if tail > 0 {
        Some(e.alloc(tail * C::AFFINE_WORDS)?)
    } else {
        None
    };
    let out = |t0: usize| gathered.as_ref().map(|g| g.at(t0 * C::AFFINE_WORDS));
    let list = match bases {
        Bases::Paired { n, .. } => OnesList::Paired { n },
        _ => OnesList::Single,
    };
    match bases {
        // the ones and the gathered tail use the bases themselves (copy 0)
        Bases::Device(p) | Bases::Precomputed { ptr: p, .. } | Bases::Paired { ptr: p, .. } => {
            if let Some(ones) = &ones {
                let all = 0..split.num_bases;
                total += sum_ones::<E, C>(e, p, ones, all, list, ones_rounds, cfg, stats)?;
            }
            if let (Some(o), Some(idx)) = (out(0), &dev.tail_index) {
                gather::<E, C>(e, p, idx.ptr(), tail, o, stats)?;
            }
        }
        Bases::Host { points: h, chunk } => {
            let chunk = chunk.min(split.num_bases).max(1);
            let mut staging = e.alloc(chunk * C::AFFINE_WORDS)?;
            stream_chunks::<E, C>(e, &h[..split.num_bases], chunk, |st| {
                e.upload_host(&mut staging, &st.buf, (st.hi - st.lo) * C::AFFINE_WORDS)?;
                // the gather indexes from the query's first point, the ones' sum from the chunk's
                let base = staging.ptr().wrapping_sub(point_at::<C>(0, st.lo));
                let p = staging.ptr();
                if let Some(ones) = &ones {
                    let (chunk_ones, single) = (st.lo..st.hi, OnesList::Single);
                    total +=
                        sum_ones::<E, C>(e, p, ones, chunk_ones, single, ones_rounds, cfg, stats)?;
                }
                // the chunk's part of the tail: a range of the device's index list
                let t = in_range(&split.tail_index, st.lo, st.hi);
                if let (Some(o), Some(idx)) = (out(t.start), &dev.tail_index) {
                    gather::<E, C>(e, base, idx.at(t.start), t.len(), o, stats)?;
                }
                // the chunk's copy and kernels are done: its host buffer can be refilled
                e.sync()
            })?;
            drop(staging);
            e.sync()?;
        }
    }
    if let (Some(g), Some(scalars)) = (gathered, &dev.tail_scalars) {
        total += pippenger::<E, C>(e, g.ptr(), scalars.ptr(), tail, cfg, stats)?;
        drop(g);
        e.sync()?;
    }
    Ok(total)
}

/// Dense MSM of the `n` scalars at `scalars` (on the device) with bases resident or streamed.
pub(crate) fn dense<E: Exec, C: MsmCurve>(
    e: &E,
    bases: Bases<'_, C::Affine>,
    scalars: u64,
    n: usize,
    cfg: &MsmConfig,
    stats: &mut MsmStats,
) -> Result<C::Projective, GpuError> {
    stats.points += n;
    match bases {
        Bases::Device(p) | Bases::Paired { ptr: p, .. } => {
            pippenger::<E, C>(e, p, scalars, n, cfg, stats)
        }
        Bases::Precomputed { ptr, stride, pre } => {
            pippenger_sets::<E, C>(e, ptr, Some((pre, stride)), scalars, n, cfg, stats)
        }
        Bases::Host { points: h, chunk } => {
            if h.len() < n {
                return Err(GpuError::InvalidInput(format!(
                    "{} bases for an MSM of {n}",
                    h.len()
                )));
            }
            let mut total = C::Projective::identity();
            if n == 0 {
                return Ok(total);
            }
            let chunk = chunk.min(n).max(1);
            let mut staging = e.alloc(chunk * C::AFFINE_WORDS)?;
            stream_chunks::<E, C>(e, &h[..n], chunk, |st| {
                e.upload_host(&mut staging, &st.buf, (st.hi - st.lo) * C::AFFINE_WORDS)?;
                let sp = scalars + (st.lo * FR_WORDS as usize * 4) as u64;
                total += pippenger::<E, C>(e, staging.ptr(), sp, st.hi - st.lo, cfg, stats)?;
                e.sync()
            })?;
            drop(staging);
            e.sync()?;
            Ok(total)
        }
    }
}

/// Writes the pair sums of the `n` bases of `C` at `bases` to `out` (`n.div_ceil(2)` points:
/// point j is base 2j + base 2j + 1, the last a lone base where n is odd), for
/// [`Bases::Paired`].
pub(crate) fn pair_sums<E: Exec, C: MsmCurve>(
    e: &E,
    bases: u64,
    n: usize,
    out: u64,
) -> Result<(), GpuError> {
    let pairs = n.div_ceil(2);
    if pairs == 0 {
        return Ok(());
    }
    let n =
        u32::try_from(n).map_err(|_| GpuError::InvalidInput(format!("pair sums of {n} bases")))?;
    e.launch_as(
        C::KERNELS.pair_sums,
        grid(pairs, ELEMENT_THREADS),
        ELEMENT_THREADS,
        &PairSumsArgs {
            input: DevPtr(bases),
            output: DevPtrMut(out),
            n,
        },
    )
}

/// Fills `out` with the copies of `pre` of the `n` G1 bases at `bases`: copy k at point
/// `k * n` of `out` (`pre.copies * n` points), copy 0 the bases themselves.
pub(crate) fn precompute<E: Exec>(
    e: &E,
    bases: u64,
    n: usize,
    pre: &Precomputation,
    out: u64,
) -> Result<(), GpuError> {
    if n == 0 {
        return Ok(());
    }
    let copy = |k: u32| point_at::<G1>(out, k as usize * n);
    for k in 0..pre.copies {
        e.launch(
            grid(n, ELEMENT_THREADS),
            ELEMENT_THREADS,
            &PrecomputeArgs {
                input: DevPtr(if k == 0 { bases } else { copy(k - 1) }),
                output: DevPtrMut(copy(k)),
                n: n as u32,
                c: if k == 0 { 0 } else { pre.window },
            },
        )?;
    }
    Ok(())
}
