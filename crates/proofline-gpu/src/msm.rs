//! G1 multi-scalar multiplication on the GPU (Pippenger with signed digits, counting sort by
//! bucket, balanced bucket accumulation, segmented bucket reduction), driving `cuda/msm.cu`
//! through an [`Exec`].
//!
//! Sparse queries arrive split by the CPU (`proofline_groth16::msm::SparseScalars`: zeros
//! dropped, the indices of the ones, the tail's indices and scalars); this is the only split,
//! and the GPU takes it as it is: the bases of the ones are summed across the whole GPU, the
//! tail's bases are gathered side by side and go through Pippenger with the tail's scalars.
//! Bases are either resident on the device ([`Bases::Device`]) or streamed from host memory in
//! chunks of [`STREAM_CHUNK`] points ([`Bases::Host`]).
//!
//! Memory: every helper frees its temporaries and synchronises before it returns, so the
//! phases' peaks add up simply; `bytes.rs` has the formulas and tests them against this code.

use blstrs::{G1Affine, G1Projective};
use group::Group;
use proofline_groth16::msm::SparseScalars;

use crate::abi::{
    BigFinalArgs, BigPartialArgs, BucketAccArgs, BucketFixupArgs, BucketReduceArgs, DevPtr,
    DevPtrMut, FindBigArgs, GatherArgs, MsmDigitsArgs, ScanAddArgs, ScanSumsArgs, ScanTilesArgs,
    SumOnesArgs, WindowCombineArgs, XyzzReduceArgs, ACC_THREADS, AFFINE_WORDS, BIG_PER_BLOCK,
    ELEMENT_THREADS, FR_WORDS, JACOBIAN_WORDS, RED_THREADS, SCAN_SUMS_THREADS, SCAN_THREADS,
    SCAN_TILE, SMALL_THREADS, WINDOW_GROUPS, XYZZ_WORDS,
};
use crate::error::GpuError;
use crate::exec::{grid, DevBuf, Exec, Readback};
use crate::layout::{jacobian_from_u32, scalars_as_u32};
use crate::plan::{combine_windows, split_big, AccSplit, WindowPlan, MSM_MAX_CHUNK};
use crate::stager::stream_chunks;

/// Points per chunk when bases are streamed from host memory (384 MiB; two pinned host buffers
/// of it per streaming slot).
pub const STREAM_CHUNK: usize = 1 << 22;

/// What an MSM did (for logs and benchmarks).
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct MsmStats {
    /// points in
    pub points: usize,
    /// scalars that went through Pippenger
    pub tail: usize,
    /// window bits of the last chunk
    pub window: u32,
    /// Pippenger chunks
    pub chunks: usize,
}

/// Where an MSM's bases are.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Bases<'a> {
    /// On the device at this address (resident), at least as many as the MSM needs.
    Device(u64),
    /// In host memory: streamed through a staging buffer of `chunk` points.
    Host {
        /// The bases.
        points: &'a [G1Affine],
        /// Points per chunk ([`STREAM_CHUNK`] in production).
        chunk: usize,
    },
}

/// Blocks of the ones sum (a few per multiprocessor).
pub(crate) fn ones_blocks(sm_count: u32) -> u32 {
    (sm_count * 4).max(1)
}

/// The device address of point `i` of a point array at `base`.
fn point_at(base: u64, i: usize) -> u64 {
    base.wrapping_add((i * AFFINE_WORDS as usize * 4) as u64)
}

/// `sum scalars[i] * bases[i]`, i < n, both on the device; chunks of [`MSM_MAX_CHUNK`].
pub(crate) fn pippenger<E: Exec>(
    e: &E,
    bases: u64,
    scalars: u64,
    n: usize,
    stats: &mut MsmStats,
) -> Result<G1Projective, GpuError> {
    let mut total = G1Projective::identity();
    let mut start = 0usize;
    while start < n {
        let len = (n - start).min(MSM_MAX_CHUNK);
        let sp = scalars + (start * FR_WORDS as usize * 4) as u64;
        let (r, c) = pippenger_chunk(e, point_at(bases, start), sp, len)?;
        total += r;
        stats.tail += len;
        stats.window = c;
        stats.chunks += 1;
        start += len;
    }
    Ok(total)
}

/// Threads the balanced accumulation targets on this device.
pub(crate) fn acc_target(sm_count: u32) -> u32 {
    sm_count * ACC_THREADS * crate::abi::ACC_BLOCKS_PER_SM
}

fn exclusive_scan<E: Exec>(e: &E, inp: u64, out: u64, m: usize) -> Result<(), GpuError> {
    let tiles = m.div_ceil(SCAN_TILE as usize);
    let sums = e.alloc(tiles)?;
    e.launch(
        tiles as u32,
        SCAN_THREADS,
        &ScanTilesArgs {
            input: DevPtr(inp),
            output: DevPtrMut(out),
            tile_sums: DevPtrMut(sums.ptr()),
            m: m as u32,
        },
    )?;
    e.launch(
        1,
        SCAN_SUMS_THREADS,
        &ScanSumsArgs {
            sums: DevPtrMut(sums.ptr()),
            count: tiles as u32,
        },
    )?;
    e.launch(
        grid(m, ELEMENT_THREADS),
        ELEMENT_THREADS,
        &ScanAddArgs {
            output: DevPtrMut(out),
            tile_sums: DevPtr(sums.ptr()),
            m: m as u32,
        },
    )?;
    Ok(())
}

/// One Pippenger chunk of n > 0 points: returns (sum, window bits).
fn pippenger_chunk<E: Exec>(
    e: &E,
    bp: u64,
    sp: u64,
    n: usize,
) -> Result<(G1Projective, u32), GpuError> {
    let plan = WindowPlan::for_points(n);
    let m = plan.buckets();
    let max_entries = n * plan.nw as usize;
    // 1. counting sort by bucket: histogram, scan, scatter
    let counts = e.zeros(m)?;
    let cursor = e.alloc(m)?;
    let vals = e.alloc(max_entries)?;
    let digits = |pass: u32| {
        e.launch(
            grid(n, ELEMENT_THREADS),
            ELEMENT_THREADS,
            &MsmDigitsArgs {
                scalars: DevPtr(sp),
                counts: DevPtrMut(counts.ptr()),
                cursor: DevPtrMut(cursor.ptr()),
                vals: DevPtrMut(vals.ptr()),
                n: n as u32,
                c: plan.c,
                nw: plan.nw,
                pass,
            },
        )
    };
    digits(0)?;
    exclusive_scan(e, counts.ptr(), cursor.ptr(), m)?;
    digits(1)?;
    // 2. bucket accumulation: big buckets (skewed digits, repeated scalars) split over many
    // blocks, the rest in equal ranges of the sorted entries per thread, then the owners add
    // the heads
    let mut entries = [0u32; 1];
    e.read(
        Readback::Entries {
            max: max_entries as u32,
        },
        &cursor,
        m - 1,
        &mut entries,
    )?;
    let split = AccSplit::new(
        entries[0] as usize,
        m,
        acc_target(e.sm_count()),
        crate::plan::ACC_WAVES,
    );
    let buckets = e.alloc(m * XYZZ_WORDS as usize)?;
    let cap = split.big_cap;
    let big_count = e.zeros(1)?;
    let big_list = e.alloc(2 * cap)?;
    e.launch(
        grid(m, ELEMENT_THREADS),
        ELEMENT_THREADS,
        &FindBigArgs {
            counts: DevPtr(counts.ptr()),
            big_count: DevPtrMut(big_count.ptr()),
            big_list: DevPtrMut(big_list.ptr()),
            m: m as u32,
            big: split.big,
            big_cap: cap as u32,
        },
    )?;
    {
        let threads = split.threads as usize;
        let head = e.alloc(threads * XYZZ_WORDS as usize)?;
        let head_id = e.alloc(threads)?;
        let own_id = e.alloc(threads)?;
        e.launch(
            grid(threads, ACC_THREADS),
            ACC_THREADS,
            &BucketAccArgs {
                bases: DevPtr(bp),
                vals: DevPtr(vals.ptr()),
                ends: DevPtr(cursor.ptr()),
                counts: DevPtr(counts.ptr()),
                buckets: DevPtrMut(buckets.ptr()),
                head: DevPtrMut(head.ptr()),
                head_id: DevPtrMut(head_id.ptr()),
                own_id: DevPtrMut(own_id.ptr()),
                m: m as u32,
                per_thread: split.per_thread,
                big: split.big,
                threads: split.threads,
            },
        )?;
        e.launch(
            grid(threads, SMALL_THREADS),
            SMALL_THREADS,
            &BucketFixupArgs {
                head: DevPtr(head.ptr()),
                head_id: DevPtr(head_id.ptr()),
                own_id: DevPtr(own_id.ptr()),
                buckets: DevPtrMut(buckets.ptr()),
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
                entries: entries[0],
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
        let partial = e.alloc(bs.blk_bucket.len() * XYZZ_WORDS as usize)?;
        e.launch(
            bs.blk_bucket.len() as u32,
            RED_THREADS,
            &BigPartialArgs {
                bases: DevPtr(bp),
                vals: DevPtr(vals.ptr()),
                cursor: DevPtr(cursor.ptr()),
                counts: DevPtr(counts.ptr()),
                big_list: DevPtr(big_list.ptr()),
                blk_bucket: DevPtr(blk_bucket.ptr()),
                blk_part: DevPtr(blk_part.ptr()),
                partial: DevPtrMut(partial.ptr()),
                per_block: BIG_PER_BLOCK,
            },
        )?;
        e.launch(
            nbig as u32,
            RED_THREADS,
            &BigFinalArgs {
                partial: DevPtr(partial.ptr()),
                first: DevPtr(first.ptr()),
                count: DevPtr(count.ptr()),
                big_list: DevPtr(big_list.ptr()),
                buckets: DevPtrMut(buckets.ptr()),
            },
        )?;
    }
    drop((vals, big_count, big_list));
    e.sync()?;
    // 3. segmented bucket reduction
    let segs = plan.segments();
    let seg_out = e.alloc(plan.nw as usize * segs as usize * 2 * XYZZ_WORDS as usize)?;
    e.launch(
        grid(plan.nw as usize * segs as usize, SMALL_THREADS),
        SMALL_THREADS,
        &BucketReduceArgs {
            buckets: DevPtr(buckets.ptr()),
            counts: DevPtr(counts.ptr()),
            out: DevPtrMut(seg_out.ptr()),
            nw: plan.nw,
            nb: plan.nb,
            seg: plan.segment_len(),
        },
    )?;
    drop(buckets);
    // 4. window combination, then per-window tree reduction to Jacobian
    let groups = WINDOW_GROUPS.min(segs);
    let partial = e.alloc(plan.nw as usize * groups as usize * XYZZ_WORDS as usize)?;
    e.launch(
        plan.nw * groups,
        RED_THREADS,
        &WindowCombineArgs {
            segres: DevPtr(seg_out.ptr()),
            partial: DevPtrMut(partial.ptr()),
            segs,
            seg: plan.segment_len(),
            groups,
        },
    )?;
    let win = e.alloc(plan.nw as usize * JACOBIAN_WORDS as usize)?;
    e.launch(
        plan.nw,
        RED_THREADS,
        &XyzzReduceArgs {
            input: DevPtr(partial.ptr()),
            out: DevPtrMut(win.ptr()),
            count: groups,
        },
    )?;
    let mut h = vec![0u32; plan.nw as usize * JACOBIAN_WORDS as usize];
    e.read(Readback::Values, &win, 0, &mut h)?;
    drop((counts, cursor, seg_out, partial, win));
    e.sync()?;
    let windows: Vec<G1Projective> = h
        .chunks_exact(JACOBIAN_WORDS as usize)
        .map(jacobian_from_u32)
        .collect();
    Ok((combine_windows(&windows, plan.c), plan.c))
}

/// `sum bases[i]` over `ones` (indices relative to the point array at `bases`).
pub(crate) fn sum_ones<E: Exec>(e: &E, bases: u64, ones: &[u32]) -> Result<G1Projective, GpuError> {
    if ones.is_empty() {
        return Ok(G1Projective::identity());
    }
    let blocks = ones_blocks(e.sm_count());
    let list = e.upload(ones)?;
    let partial = e.alloc(blocks as usize * XYZZ_WORDS as usize)?;
    let out = e.alloc(JACOBIAN_WORDS as usize)?;
    e.launch(
        blocks,
        RED_THREADS,
        &SumOnesArgs {
            bases: DevPtr(bases),
            list: DevPtr(list.ptr()),
            out: DevPtrMut(partial.ptr()),
            count: ones.len() as u32,
        },
    )?;
    e.launch(
        1,
        RED_THREADS,
        &XyzzReduceArgs {
            input: DevPtr(partial.ptr()),
            out: DevPtrMut(out.ptr()),
            count: blocks,
        },
    )?;
    let mut h = [0u32; JACOBIAN_WORDS as usize];
    e.read(Readback::Values, &out, 0, &mut h)?;
    drop((list, partial, out));
    e.sync()?;
    Ok(jacobian_from_u32(&h))
}

/// Copies the points at `idx` (relative to `bases`) side by side to `out`.
fn gather<E: Exec>(e: &E, bases: u64, idx: &[u32], out: u64) -> Result<(), GpuError> {
    if idx.is_empty() {
        return Ok(());
    }
    let list = e.upload(idx)?;
    e.launch(
        grid(idx.len(), ELEMENT_THREADS),
        ELEMENT_THREADS,
        &GatherArgs {
            bases: DevPtr(bases),
            idx: DevPtr(list.ptr()),
            out: DevPtrMut(out),
            n: idx.len() as u32,
        },
    )?;
    drop(list);
    e.sync()
}

/// Indices of `sorted` in `[lo, hi)`, as a range of positions.
fn in_range(sorted: &[u32], lo: usize, hi: usize) -> std::ops::Range<usize> {
    sorted.partition_point(|&i| (i as usize) < lo)..sorted.partition_point(|&i| (i as usize) < hi)
}

/// Sparse MSM of a split query: the ones summed, the tail gathered and through Pippenger.
pub(crate) fn sparse<E: Exec>(
    e: &E,
    bases: Bases<'_>,
    split: &SparseScalars,
    stats: &mut MsmStats,
) -> Result<G1Projective, GpuError> {
    let tail = split.tail_index.len();
    if tail != split.tail_scalars.len() {
        return Err(GpuError::InvalidInput(format!(
            "{tail} tail indices but {} tail scalars",
            split.tail_scalars.len()
        )));
    }
    if let Bases::Host { points: h, .. } = bases {
        if h.len() < split.num_bases {
            return Err(GpuError::InvalidInput(format!(
                "{} bases for a query of {}",
                h.len(),
                split.num_bases
            )));
        }
    }
    stats.points += split.num_bases;
    let mut total = G1Projective::identity();
    let gathered = if tail > 0 {
        Some(e.alloc(tail * AFFINE_WORDS as usize)?)
    } else {
        None
    };
    let out = |t0: usize| gathered.as_ref().map(|g| g.at(t0 * AFFINE_WORDS as usize));
    match bases {
        Bases::Device(p) => {
            total += sum_ones(e, p, &split.ones)?;
            if let Some(o) = out(0) {
                gather(e, p, &split.tail_index, o)?;
            }
        }
        Bases::Host { points: h, chunk } => {
            let chunk = chunk.min(split.num_bases).max(1);
            let mut staging = e.alloc(chunk * AFFINE_WORDS as usize)?;
            stream_chunks(e, &h[..split.num_bases], chunk, |st| {
                e.upload_host(
                    &mut staging,
                    &st.buf,
                    (st.hi - st.lo) * AFFINE_WORDS as usize,
                )?;
                // the kernels index from the query's first point
                let base = staging.ptr().wrapping_sub(point_at(0, st.lo));
                let ones = in_range(&split.ones, st.lo, st.hi);
                total += sum_ones(e, base, &split.ones[ones])?;
                let t = in_range(&split.tail_index, st.lo, st.hi);
                if let Some(o) = out(t.start) {
                    gather(e, base, &split.tail_index[t], o)?;
                }
                // the chunk's copy and kernels are done: its host buffer can be refilled
                e.sync()
            })?;
            drop(staging);
            e.sync()?;
        }
    }
    if let Some(g) = gathered {
        let scalars = e.upload(scalars_as_u32(&split.tail_scalars))?;
        total += pippenger(e, g.ptr(), scalars.ptr(), tail, stats)?;
        drop((g, scalars));
        e.sync()?;
    }
    Ok(total)
}

/// Dense MSM of the `n` scalars at `scalars` (on the device) with bases resident or streamed.
pub(crate) fn dense<E: Exec>(
    e: &E,
    bases: Bases<'_>,
    scalars: u64,
    n: usize,
    stats: &mut MsmStats,
) -> Result<G1Projective, GpuError> {
    stats.points += n;
    match bases {
        Bases::Device(p) => pippenger(e, p, scalars, n, stats),
        Bases::Host { points: h, chunk } => {
            if h.len() < n {
                return Err(GpuError::InvalidInput(format!(
                    "{} bases for an MSM of {n}",
                    h.len()
                )));
            }
            let mut total = G1Projective::identity();
            if n == 0 {
                return Ok(total);
            }
            let chunk = chunk.min(n).max(1);
            let mut staging = e.alloc(chunk * AFFINE_WORDS as usize)?;
            stream_chunks(e, &h[..n], chunk, |st| {
                e.upload_host(
                    &mut staging,
                    &st.buf,
                    (st.hi - st.lo) * AFFINE_WORDS as usize,
                )?;
                let sp = scalars + (st.lo * FR_WORDS as usize * 4) as u64;
                total += pippenger(e, staging.ptr(), sp, st.hi - st.lo, stats)?;
                e.sync()
            })?;
            drop(staging);
            e.sync()?;
            Ok(total)
        }
    }
}
