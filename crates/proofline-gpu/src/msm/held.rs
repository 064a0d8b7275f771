//! A sparse query's tail held on the device: the bases of an earlier partition's tail gathered
//! side by side once ([`hold_tail`]), with precomputed copies where asked. The tails of a
//! parameter set's partitions are the same bases from one sector to the next (docs/filecoin.md),
//! so a query split against the held list on the host (`SparseScalars::against_held`) leaves
//! nothing or little of its own tail: its held bases go through Pippenger over the held points
//! with their scalars (zeros and ones included), and the rest (its ones, a tail outside the
//! held list) as any sparse query ([`sparse_held`]). No gather of the tail's bases per MSM, and
//! over copies fewer windows at the bucket count of the tail's plain windows.

use group::Group;
use proofline_groth16::msm::{HeldSplit, SparseScalars};

use super::sparse::{
    check_split, gather, ones_and_gather, sparse_uploaded, upload_split, SplitOnDevice,
};
use super::{ms_since, precompute, Bases, MsmStats};
use crate::abi::FR_WORDS;
use crate::config::MsmConfig;
use crate::curve::MsmCurve;
use crate::error::GpuError;
use crate::exec::{DevBuf, Exec};
use crate::layout::scalars_as_u32;
use crate::msm::pippenger::pippenger_sets;
use crate::plan::Precomputation;

/// A query's held tail on the device: its base indices (ascending, on the host) and their
/// points side by side, followed by their precomputed copies when `pre` is set (copy k of held
/// point j at point `k * len + j`).
#[derive(Debug)]
pub(crate) struct HeldTail<B> {
    index: Vec<u32>,
    points: Option<B>,
    pre: Option<Precomputation>,
}

impl<B> HeldTail<B> {
    /// A held list without points (tests of what is counted against it).
    #[cfg(test)]
    pub(crate) fn listed(index: Vec<u32>) -> Self {
        HeldTail {
            index,
            points: None,
            pre: None,
        }
    }

    /// The held bases' indices.
    pub(crate) fn index(&self) -> &[u32] {
        &self.index
    }

    /// The copies the held points carry, if any.
    pub(crate) fn precomputation(&self) -> Option<Precomputation> {
        self.pre
    }

    /// The same tail over its points' buffer as `f` makes it (kept beyond its stage).
    pub(crate) fn map_points<B2>(self, f: impl FnOnce(B) -> B2) -> HeldTail<B2> {
        HeldTail {
            index: self.index,
            points: self.points.map(f),
            pre: self.pre,
        }
    }
}

/// Words of a held tail of `len` points of `C` with `pre`'s copies (the points alone without).
pub(crate) fn held_words<C: MsmCurve>(len: usize, pre: Option<&Precomputation>) -> usize {
    len * C::AFFINE_WORDS * pre.map_or(1, |p| p.copies as usize)
}

/// Gathers the resident bases at `bases` of the ascending indices `index` side by side on `e`
/// (the index list goes up, then is freed); synchronises.
pub(crate) fn hold_tail<E: Exec, C: MsmCurve>(
    e: &E,
    bases: u64,
    index: Vec<u32>,
) -> Result<HeldTail<E::Buf>, GpuError> {
    let points = gather_held::<E, C>(e, bases, &index, None)?;
    Ok(HeldTail {
        index,
        points,
        pre: None,
    })
}

/// [`hold_tail`] with the copies of `pre` after the gathered points.
pub(crate) fn hold_tail_precomputed<E: Exec, C: MsmCurve>(
    e: &E,
    bases: u64,
    index: Vec<u32>,
    pre: Precomputation,
) -> Result<HeldTail<E::Buf>, GpuError> {
    if u64::from(pre.copies) * index.len() as u64 >= 1 << 31 {
        return Err(GpuError::InvalidInput(format!(
            "{} copies of a held tail of {} points",
            pre.copies,
            index.len()
        )));
    }
    let points = gather_held::<E, C>(e, bases, &index, Some(&pre))?;
    if let Some(p) = &points {
        precompute::<E, C>(e, p.ptr(), index.len(), &pre, p.ptr())?;
        e.sync()?;
    }
    Ok(HeldTail {
        index,
        points,
        pre: Some(pre),
    })
}

/// The points of `index` gathered into a buffer with room for `pre`'s copies.
fn gather_held<E: Exec, C: MsmCurve>(
    e: &E,
    bases: u64,
    index: &[u32],
    pre: Option<&Precomputation>,
) -> Result<Option<E::Buf>, GpuError> {
    if index.windows(2).any(|w| w[1] <= w[0]) {
        return Err(GpuError::InvalidInput(
            "a held tail's indices are not ascending".into(),
        ));
    }
    if index.is_empty() {
        return Ok(None);
    }
    let points = e.alloc(held_words::<C>(index.len(), pre))?;
    let idx = e.upload(index)?;
    gather::<E, C>(
        e,
        bases,
        idx.ptr(),
        index.len(),
        points.ptr(),
        &mut MsmStats::default(),
    )?;
    drop(idx);
    e.sync()?;
    Ok(Some(points))
}

/// A split against a held tail on the device: the rest's split and the held bases' scalars.
#[derive(Debug)]
pub(crate) struct HeldOnDevice<B> {
    rest: SplitOnDevice<B>,
    scalars: Option<B>,
}

/// Copies `split` to the device (the rest as [`upload_split`] does, then the held scalars);
/// synchronises and adds the time to `stats.upload_ms`.
pub(crate) fn upload_held<E: Exec>(
    e: &E,
    split: &HeldSplit,
    stats: &mut MsmStats,
) -> Result<HeldOnDevice<E::Buf>, GpuError> {
    let rest = upload_split(e, &split.rest, stats)?;
    let t = std::time::Instant::now();
    let scalars = if split.held_scalars.is_empty() {
        None
    } else {
        Some(e.upload(scalars_as_u32(&split.held_scalars))?)
    };
    e.sync()?;
    stats.upload_ms += ms_since(t);
    Ok(HeldOnDevice { rest, scalars })
}

/// The MSM of a query split against `held` (`split`, on the device as `dev`): the rest over
/// `bases` as [`sparse_uploaded`] runs it, plus the held bases' scalars through Pippenger over
/// the held points (and their copies). Uploads nothing.
pub(crate) fn sparse_held<E: Exec, C: MsmCurve, H: DevBuf>(
    e: &E,
    bases: Bases<'_, C::Affine>,
    held: &HeldTail<H>,
    split: &HeldSplit,
    dev: &HeldOnDevice<E::Buf>,
    cfg: &MsmConfig,
    stats: &mut MsmStats,
) -> Result<C::Projective, GpuError> {
    let n = held.index.len();
    if split.held_scalars.len() != n
        || dev.scalars.as_ref().map_or(0, |s| s.words()) != n * FR_WORDS as usize
    {
        return Err(GpuError::InvalidInput(format!(
            "{} held scalars ({} words on the device) for a held tail of {n}",
            split.held_scalars.len(),
            dev.scalars.as_ref().map_or(0, |s| s.words())
        )));
    }
    let rest = sparse_uploaded::<E, C>(e, bases, &split.rest, &dev.rest, cfg, stats)?;
    Ok(rest + over_held_points::<E, C, H>(e, held, dev.scalars.as_ref(), cfg, stats)?)
}

/// The MSM of a query whose tail is the held list (`held.index()` equal to its tail's indices),
/// from its whole split `dev` on the device (`upload_split` of `split`): its ones summed, its
/// tail's scalars through Pippenger over the held points (and their copies). Nothing is
/// gathered. Uploads nothing.
pub(crate) fn sparse_over_own_tail<E: Exec, C: MsmCurve, H: DevBuf>(
    e: &E,
    bases: Bases<'_, C::Affine>,
    held: &HeldTail<H>,
    split: &SparseScalars,
    dev: &SplitOnDevice<E::Buf>,
    cfg: &MsmConfig,
    stats: &mut MsmStats,
) -> Result<C::Projective, GpuError> {
    check_split::<E, C>(bases, split, dev)?;
    let n = split.tail_index.len();
    if held.index.len() != n || held.points.is_none() != (n == 0) {
        return Err(GpuError::InvalidInput(format!(
            "a held tail of {} points for a tail of {n}",
            held.index.len()
        )));
    }
    let ones = ones_and_gather::<E, C>(e, bases, split, dev, None, cfg, stats)?;
    Ok(ones + over_held_points::<E, C, H>(e, held, dev.tail_scalars.as_ref(), cfg, stats)?)
}

/// The MSM of `scalars` (one per held point, on the device) over the held points, through
/// Pippenger over their copies where the tail has them; waits for it. The identity when the
/// tail holds no points.
fn over_held_points<E: Exec, C: MsmCurve, H: DevBuf>(
    e: &E,
    held: &HeldTail<H>,
    scalars: Option<&E::Buf>,
    cfg: &MsmConfig,
    stats: &mut MsmStats,
) -> Result<C::Projective, GpuError> {
    let (Some(points), Some(scalars)) = (&held.points, scalars) else {
        return Ok(C::Projective::identity());
    };
    let n = held.index.len();
    let pre = held.pre.map(|p| (p, n));
    let sum = pippenger_sets::<E, C>(e, points.ptr(), pre, scalars.ptr(), n, cfg, stats)?;
    e.sync()?;
    Ok(sum)
}
