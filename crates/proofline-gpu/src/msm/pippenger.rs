//! Pippenger over scalars on the device: chunks of at most [`MsmConfig::max_chunk`] points, a
//! chunk's windows (uniform, or split in two MSMs) from the sort by bucket through the bucket
//! accumulation, the segmented bucket reduction and the window combination to one point; and
//! the dense MSM over resident, precomputed, paired or streamed bases; and several MSMs of the
//! same windows through one chunk ([`pippenger_batch`]).

use std::time::Instant;

use group::Group;

use super::accumulate::{accumulate, AccInput};
use super::affine::batch_affine;
use super::sort::{sort_atomic, sort_radix, sort_two_level, SortSegment, Sorted};
use super::{ms_since, point_at, Bases, MsmStats};
use crate::abi::{
    BucketReduceArgs, DevPtr, DevPtrMut, ScalarsHighArgs, WindowCombineArgs, XyzzReduceArgs,
    ELEMENT_THREADS, FR_WORDS, SMALL_THREADS,
};
use crate::config::{MsmAcc, MsmConfig};
use crate::curve::MsmCurve;
use crate::error::GpuError;
use crate::exec::{grid, DevBuf, Exec, Readback};
use crate::plan::{
    combine_windows, BucketSets, ChunkSort, ChunkWindows, MsmBatch, Precomputation, SetsShape,
};
use crate::stager::stream_chunks;

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
    // 1. sort the (point, window) entries by bucket
    let sorted = match ChunkSort::of(cfg.sort, n, sets) {
        ChunkSort::TwoLevel(s) => sort_two_level(e, sp, n, sets, stride, &s)?,
        ChunkSort::Radix(radix) => {
            let one = SortSegment {
                scalars: sp,
                points: n,
            };
            sort_radix(e, &[one], sets, stride, &radix)?
        }
        ChunkSort::Atomic => sort_atomic(e, sp, n, sets, stride)?,
    };
    let sums = sorted_sums::<E, C>(e, bp, sorted, sets, SetsShape::of(n, sets), n, cfg)?;
    Ok(sums.into_iter().sum())
}

/// The MSMs of `batch` in one Pippenger chunk: their bases side by side at `bp` (MSM k's
/// points after those of the MSMs before it), MSM k's scalars at `scalars[k]`; one sum per
/// MSM, in order.
pub(crate) fn pippenger_batch<E: Exec, C: MsmCurve>(
    e: &E,
    bp: u64,
    scalars: &[u64],
    batch: &MsmBatch,
    cfg: &MsmConfig,
    stats: &mut MsmStats,
) -> Result<Vec<C::Projective>, GpuError> {
    if scalars.len() != batch.points.len() {
        return Err(GpuError::InvalidInput(format!(
            "{} scalar arrays for a batch of {} MSMs",
            scalars.len(),
            batch.points.len()
        )));
    }
    let t = Instant::now();
    let segments: Vec<SortSegment> = scalars
        .iter()
        .zip(&batch.points)
        .map(|(&scalars, &points)| SortSegment { scalars, points })
        .collect();
    let sorted = sort_radix(e, &segments, &batch.sets, 0, &batch.radix)?;
    let total = batch.total_points();
    let sums = sorted_sums::<E, C>(e, bp, sorted, &batch.sets, batch.shape(), total, cfg)?;
    stats.tail += total;
    stats.window = batch.sets.plan.c;
    stats.windows = batch.sets.plan.nw;
    stats.chunks += 1;
    stats.pippenger_ms += ms_since(t);
    Ok(sums)
}

/// From a chunk's sorted entries over the `n` points at `bp` (all its MSMs' together), each
/// MSM's sum: the bucket accumulation (the batch-affine rounds first, G1 with
/// `MsmAcc::BatchAffine`, then the balanced XYZZ accumulation of what is left) over the sets of
/// `shape`, the segmented bucket reduction, the window combination and the per-window tree,
/// then each MSM's windows (`sets.sets` of them, its sets after those of the MSMs before it)
/// combined on the host.
fn sorted_sums<E: Exec, C: MsmCurve>(
    e: &E,
    bp: u64,
    sorted: Sorted<E::Buf>,
    sets: &BucketSets,
    shape: SetsShape,
    n: usize,
    cfg: &MsmConfig,
) -> Result<Vec<C::Projective>, GpuError> {
    let k = C::KERNELS;
    let plan = sets.plan;
    let nsets = shape.sets as u32;
    let m = shape.sets * shape.nb;
    let max_entries = n * plan.nw as usize;
    let Sorted {
        counts,
        ends: cursor,
        vals,
    } = sorted;
    // 2. bucket accumulation
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
    let acc = AccInput {
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
            batch_affine::<E, C>(e, ak, &acc, shape, rounds.clamp(1, 8), cfg)?
        }
        _ => accumulate::<E, C>(e, &acc, cfg)?,
    }
    drop(vals);
    e.sync()?;
    // 3. segmented bucket reduction
    let segs = plan.segments();
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
    let groups = plan.combine_groups(shape.sets, cfg.combine);
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
    Ok(windows
        .chunks(sets.sets as usize)
        .map(|w| combine_windows(w, sets.shift()))
        .collect())
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
        Bases::Device(p) | Bases::Summed { ptr: p, .. } => {
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
