//! A sparse query's MSM from its split: the split copied to the device ([`upload_split`]) so
//! that a caller can do it before it runs kernels, then ([`sparse_uploaded`]) the ones summed,
//! the tail's bases gathered side by side and through Pippenger with the tail's scalars; bases
//! resident or streamed chunk by chunk. Several queries of one group can share their tails'
//! Pippenger ([`sparse_together`]).

use std::time::Instant;

use group::Group;
use proofline_groth16::msm::SparseScalars;

use super::ones::{sum_ones, OnesBits, OnesList};
use super::pippenger::{pippenger, pippenger_batch};
use super::{ms_since, point_at, Bases, MsmStats};
use crate::abi::{DevPtr, DevPtrMut, GatherArgs, ELEMENT_THREADS};
use crate::config::MsmConfig;
use crate::curve::MsmCurve;
use crate::error::GpuError;
use crate::exec::{grid, DevBuf, Exec};
use crate::layout::scalars_as_u32;
use crate::plan::MsmBatch;
use crate::stager::stream_chunks;

/// Copies the points at the `n` indices at `idx` (on the device, relative to `bases`) side by
/// side to `out`.
pub(super) fn gather<E: Exec, C: MsmCurve>(
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
    /// The tail's scalars, [`FR_WORDS`](crate::abi::FR_WORDS) words each (none without a tail).
    pub(super) tail_scalars: Option<B>,
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
    check_split::<E, C>(bases, split, dev)?;
    let tail = split.tail_index.len();
    let gathered = if tail > 0 {
        Some(e.alloc(tail * C::AFFINE_WORDS)?)
    } else {
        None
    };
    let mut total = ones_and_gather::<E, C>(
        e,
        bases,
        split,
        dev,
        gathered.as_ref().map(|g| g.ptr()),
        cfg,
        stats,
    )?;
    if let (Some(g), Some(scalars)) = (gathered, &dev.tail_scalars) {
        total += pippenger::<E, C>(e, g.ptr(), scalars.ptr(), tail, cfg, stats)?;
        drop(g);
        e.sync()?;
    }
    Ok(total)
}

/// A query of [`sparse_together`]: its bases, its split on the host and its split on the device.
pub(crate) type TogetherQuery<'a, 'b, P, B> =
    (Bases<'a, P>, &'b SparseScalars, &'b SplitOnDevice<B>);

/// The sparse MSMs of `queries` with their tails through one Pippenger chunk
/// (`SparseTails::Together`): each query's ones summed and its tail's bases gathered into one
/// buffer, side by side, then [`pippenger_batch`] over the tails that are not empty; one sum
/// per query, in order. Where one chunk cannot hold the tails (`MsmBatch::new`) they go through
/// Pippenger one after the other, as [`sparse_uploaded`] does.
pub(crate) fn sparse_together<E: Exec, C: MsmCurve, const N: usize>(
    e: &E,
    queries: &[TogetherQuery<'_, '_, C::Affine, E::Buf>; N],
    cfg: &MsmConfig,
    stats: &mut MsmStats,
) -> Result<[C::Projective; N], GpuError> {
    let mut sums = [C::Projective::identity(); N];
    let tails = queries.map(|q| q.1.tail_index.len());
    let with_tail: Vec<usize> = tails.iter().copied().filter(|&t| t > 0).collect();
    let Some(batch) = MsmBatch::new(&with_tail, cfg.sort, cfg.max_chunk()) else {
        for (sum, &(bases, split, dev)) in sums.iter_mut().zip(queries) {
            *sum = sparse_uploaded::<E, C>(e, bases, split, dev, cfg, stats)?;
        }
        return Ok(sums);
    };
    for &(bases, split, dev) in queries {
        check_split::<E, C>(bases, split, dev)?;
    }
    let gathered = e.alloc(batch.total_points() * C::AFFINE_WORDS)?;
    let mut scalars = Vec::with_capacity(with_tail.len());
    let mut at = 0usize;
    for ((sum, &(bases, split, dev)), &tail) in sums.iter_mut().zip(queries).zip(&tails) {
        let out = (tail > 0).then(|| gathered.at(at * C::AFFINE_WORDS));
        *sum = ones_and_gather::<E, C>(e, bases, split, dev, out, cfg, stats)?;
        if let Some(s) = &dev.tail_scalars {
            scalars.push(s.ptr());
        }
        at += tail;
    }
    let tail_sums = pippenger_batch::<E, C>(e, gathered.ptr(), &scalars, &batch, cfg, stats)?;
    drop(gathered);
    e.sync()?;
    // the batch's sums are those of the queries with a tail, in order
    let with_tails = sums.iter_mut().zip(&tails).filter(|(_, &t)| t > 0);
    for ((sum, _), tail_sum) in with_tails.zip(tail_sums) {
        *sum += tail_sum;
    }
    Ok(sums)
}

/// The split on the device matches the host's, and host bases cover the query.
pub(super) fn check_split<E: Exec, C: MsmCurve>(
    bases: Bases<'_, C::Affine>,
    split: &SparseScalars,
    dev: &SplitOnDevice<E::Buf>,
) -> Result<(), GpuError> {
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
    Ok(())
}

/// A checked query's ones summed and its tail's bases gathered side by side at `out` (room for
/// its whole tail; `None` when it has none): over resident bases in one go, over streamed
/// bases chunk by chunk. Returns the ones' sum.
pub(super) fn ones_and_gather<E: Exec, C: MsmCurve>(
    e: &E,
    bases: Bases<'_, C::Affine>,
    split: &SparseScalars,
    dev: &SplitOnDevice<E::Buf>,
    out: Option<u64>,
    cfg: &MsmConfig,
    stats: &mut MsmStats,
) -> Result<C::Projective, GpuError> {
    let tail = split.tail_index.len();
    stats.points += split.num_bases;
    let ones_rounds = C::ones_rounds(cfg);
    let ones = dev.ones.as_ref().map(|b| OnesBits::of(b, split.ones.len()));
    let mut total = C::Projective::identity();
    let out_at = |t0: usize| out.map(|o| point_at::<C>(o, t0));
    let list = match bases {
        Bases::Summed { n, group, .. } => OnesList::Summed { n, group },
        _ => OnesList::Single,
    };
    match bases {
        // the ones and the gathered tail use the bases themselves (copy 0)
        Bases::Device(p) | Bases::Precomputed { ptr: p, .. } | Bases::Summed { ptr: p, .. } => {
            if let Some(ones) = &ones {
                let all = 0..split.num_bases;
                total += sum_ones::<E, C>(e, p, ones, all, list, ones_rounds, cfg, stats)?;
            }
            if let (Some(o), Some(idx)) = (out_at(0), &dev.tail_index) {
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
                if let (Some(o), Some(idx)) = (out_at(t.start), &dev.tail_index) {
                    gather::<E, C>(e, base, idx.at(t.start), t.len(), o, stats)?;
                }
                // the chunk's copy and kernels are done: its host buffer can be refilled
                e.sync()
            })?;
            drop(staging);
            e.sync()?;
        }
    }
    Ok(total)
}
