//! A chunk's (point, window) entries sorted by bucket: the radix sort (the default), the
//! two-level sort with shared-memory counters, and the counting sort with global atomics.

use super::scan::exclusive_scan;
use crate::abi::{
    DevPtr, DevPtrMut, MsmDigitsArgs, RadixDigitsArgs, RadixEndsArgs, RadixPassArgs, RadixPrepArgs,
    SortCoarseArgs, SortFineArgs, ELEMENT_THREADS, RADIX_BITS, RADIX_PREP_BLOCKS_PER_SM,
    RADIX_THREADS, SORT_THREADS,
};
use crate::error::GpuError;
use crate::exec::{grid, DevBuf, Exec};
use crate::plan::{BucketSets, RadixPlan, SortPlan};

/// The entries of a chunk sorted by bucket: each bucket's size, its end in `vals`, and the
/// entries (point | sign << 31) in bucket order.
pub(super) struct Sorted<B> {
    pub(super) counts: B,
    pub(super) ends: B,
    pub(super) vals: B,
}

/// Counting sort with global atomics: histogram, scan, scatter.
pub(super) fn sort_atomic<E: Exec>(
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
pub(super) fn sort_two_level<E: Exec>(
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

/// One MSM of a radix sort: its `points` scalars at `scalars` (on the device). A sort of
/// several MSMs ([`MsmBatch`](crate::plan::MsmBatch)) takes their bases side by side: MSM k's
/// entries name the points after those of the MSMs before it.
pub(super) struct SortSegment {
    pub(super) scalars: u64,
    pub(super) points: usize,
}

/// Radix sort (see `cuda/msm.cu`) of the entries of one MSM or of several (`segments`, each in
/// the bucket sets `sets`, its sets after those of the MSMs before it; `radix` the plan of the
/// largest): the scalars' words and carries with every pass's digit histogram (one preparation
/// per MSM), each pass's digit starts per set, then per bucket set the single-pass scatters of
/// the passes (the last one adding up the buckets' sizes), then the scan of the sizes into each
/// bucket's start and end. Counts and ends hold one value more (the total). Every pass runs the
/// largest MSM's tiles, so that each clears for the next all the published counts that one
/// reads. Its temporaries are freed (and the lane synchronised) before it returns.
pub(super) fn sort_radix<E: Exec>(
    e: &E,
    segments: &[SortSegment],
    sets: &BucketSets,
    stride: u32,
    radix: &RadixPlan,
) -> Result<Sorted<E::Buf>, GpuError> {
    if segments.is_empty() {
        return Err(GpuError::InvalidInput("a radix sort of no MSM".into()));
    }
    let plan = &sets.plan;
    let n: usize = segments.iter().map(|s| s.points).sum();
    let msm_sets = sets.sets as usize;
    let nsets = msm_sets * segments.len();
    let m = sets.buckets() * segments.len();
    let counts = e.zeros(m + 1)?;
    let ends = e.alloc(m + 1)?;
    let vals = e.alloc(n * plan.nw as usize)?;
    let words = e.alloc(8 * n)?;
    let carries = e.alloc(n)?;
    let npasses = radix.passes.len();
    let bins = 1usize << RADIX_BITS;
    let hist = e.zeros(npasses * nsets * bins)?;
    let digits = e.alloc(npasses * nsets * bins)?;
    let set_starts = e.alloc(nsets + 1)?;
    let mut point0 = 0usize;
    for (k, seg) in segments.iter().enumerate() {
        let blocks = grid(seg.points, ELEMENT_THREADS).min(e.sm_count() * RADIX_PREP_BLOCKS_PER_SM);
        e.launch(
            blocks,
            ELEMENT_THREADS,
            &RadixPrepArgs {
                scalars: DevPtr(seg.scalars),
                hist: DevPtrMut(hist.ptr()),
                words: DevPtrMut(words.ptr()),
                carries: DevPtrMut(carries.ptr()),
                n: n as u32,
                point0: point0 as u32,
                points: seg.points as u32,
                c: plan.c,
                nw: plan.nw,
                copies: sets.copies,
                sets: sets.sets,
                set0: (k * msm_sets) as u32,
                all_sets: nsets as u32,
                set_bins: radix.set_bins(),
                passes: npasses as u32,
                pass_bits: radix.packed_bits(),
            },
        )?;
        point0 += seg.points;
    }
    e.launch(
        nsets as u32,
        RADIX_THREADS,
        &RadixDigitsArgs {
            hist: DevPtr(hist.ptr()),
            starts: DevPtrMut(digits.ptr()),
            set_starts: DevPtrMut(set_starts.ptr()),
            sets: nsets as u32,
            passes: npasses as u32,
            pass_bits: radix.packed_bits(),
        },
    )?;
    // (key, entry) pairs of one set between passes: two buffers where three passes or more
    let largest = segments.iter().map(|s| s.points).max().unwrap_or(0);
    let set_entries = largest * sets.copies as usize;
    let between = npasses.saturating_sub(1).min(2);
    let pairs = (0..between)
        .map(|_| e.alloc(2 * set_entries))
        .collect::<Result<Vec<_>, _>>()?;
    // the tiles' published counts: one buffer per pass in turn, each pass clearing the other
    let status = [e.zeros(radix.slots(sets))?, e.zeros(radix.slots(sets))?];
    let tiles = radix.tiles(sets);
    let last = npasses - 1;
    let mut turn = 0;
    let mut point0 = 0usize;
    for (k, seg) in segments.iter().enumerate() {
        let set0 = (k * msm_sets) as u32;
        for set in set0..set0 + sets.sets {
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
                        point0: point0 as u32,
                        points: seg.points as u32,
                        c: plan.c,
                        nw: plan.nw,
                        nb: plan.nb,
                        copies: sets.copies,
                        stride,
                        set,
                        set0,
                        tiles: tiles as u32,
                        tiles_per_window: RadixPlan::window_tiles(seg.points) as u32,
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
        point0 += seg.points;
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
