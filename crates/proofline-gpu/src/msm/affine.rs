//! The batch-affine rounds (`cuda/msm_affine.cuh`): every bucket of a group of bucket sets
//! halved per round by affine additions that share one batched inversion, until what is left
//! goes to the XYZZ accumulation; and the batched inversion itself.

use super::accumulate::{accumulate, AccInput};
use super::scan::exclusive_scan;
use crate::abi::{
    AffineHalveArgs, AffineRoundArgs, BatchInvArgs, DevPtr, DevPtrMut, AFF_INV_MAX,
    AFF_INV_THREADS, AFF_THREADS, ELEMENT_THREADS,
};
use crate::config::{MsmConfig, RoundPoints};
use crate::curve::{AffineKernels, MsmCurve};
use crate::error::GpuError;
use crate::exec::{grid, DevBuf, Exec, Readback};
use crate::plan::{affine_threads, AffineGroup, SetsShape};

/// The batch-affine accumulation
/// ([`MsmAcc::BatchAffine`](crate::config::MsmAcc::BatchAffine)) of a chunk's sorted entries:
/// its bucket sets in groups ([`AffineGroup`]), each group through `rounds` rounds of
/// `cuda/msm_affine.cuh` (every bucket halved, one batched inversion per round), then the XYZZ
/// accumulation of what they leave into the group's buckets. `shape`: the chunk's sets, their
/// buckets and the most entries a set holds. Frees its temporaries and synchronises after each
/// group.
pub(super) fn batch_affine<E: Exec, C: MsmCurve>(
    e: &E,
    ak: AffineKernels,
    sorted: &AccInput,
    shape: SetsShape,
    rounds: u32,
    cfg: &MsmConfig,
) -> Result<(), GpuError> {
    let SetsShape {
        sets: nsets,
        nb,
        set_entries,
    } = shape;
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
pub(super) fn word_at(p: u64, w: usize) -> u64 {
    p.wrapping_add(4 * w as u64)
}

/// Where a batch-affine round finds point k: x at `x + 4 k stride`, y at `y + 4 k stride`
/// (bytes; `stride` in words).
#[derive(Clone, Copy)]
pub(super) struct PointsAt {
    pub(super) x: u64,
    pub(super) y: u64,
    pub(super) stride: u32,
}

impl PointsAt {
    /// Points as the bases hold them, x and y side by side, from `p` (coordinates of
    /// `field_words` words).
    pub(super) fn interleaved(p: u64, field_words: usize) -> Self {
        PointsAt {
            x: p,
            y: word_at(p, field_words),
            stride: 2 * field_words as u32,
        }
    }

    /// A buffer of `cap` points from `p` holding every x, then every y.
    pub(super) fn split(p: u64, cap: usize, field_words: usize) -> Self {
        PointsAt {
            x: p,
            y: word_at(p, cap * field_words),
            stride: field_words as u32,
        }
    }
}

/// Where a round writes its outputs in a point buffer of `cap` points at `p`: interleaved after
/// the `last` round (the XYZZ accumulation reads them so), else as `cfg.round_points` says.
pub(super) fn round_out(
    ak: AffineKernels,
    cfg: &MsmConfig,
    p: u64,
    cap: usize,
    last: bool,
) -> PointsAt {
    match (cfg.round_points, last) {
        (RoundPoints::Split, false) => PointsAt::split(p, cap, ak.field_words),
        (RoundPoints::Interleaved, _) | (_, true) => PointsAt::interleaved(p, ak.field_words),
    }
}

/// The input of a batch-affine round: bucket g's points at `[ends[g] - counts[g], ends[g])`,
/// through `vals` (point | sign << 31) or, with `vals` of 0, position k is point k of `points`.
pub(super) struct RoundInput {
    pub(super) points: PointsAt,
    pub(super) vals: u64,
    pub(super) ends: u64,
    pub(super) counts: u64,
}

/// The batched inversion's buffers for the rounds (one wave of threads).
pub(super) struct InvScratch<B> {
    totals: B,
    inv: B,
    blk: B,
    threads: usize,
}

impl<B: DevBuf> InvScratch<B> {
    pub(super) fn new<E: Exec<Buf = B>>(e: &E, ak: AffineKernels) -> Result<Self, GpuError> {
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
pub(super) fn affine_round<E: Exec>(
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
