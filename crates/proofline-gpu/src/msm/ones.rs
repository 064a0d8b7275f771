//! The sum of the bases of a sparse query's ones: the ones listed from the query's bitmap on
//! the device (over subset sums, one entry per pair or triple of bases with a one), then summed by
//! batch-affine rounds in groups or by the grid-wide XYZZ sum.

use std::time::Instant;

use group::Group;

use super::accumulate::{accumulate, AccInput};
use super::affine::{affine_round, round_out, InvScratch, PointsAt, RoundInput};
use super::scan::exclusive_scan;
use super::{ms_since, MsmStats, OnesGroup};
use crate::abi::{
    DevPtr, DevPtrMut, OnesCountArgs, OnesExpandArgs, SumOnesArgs, XyzzReduceArgs, ONES_THREADS,
    ONES_TRIPLE_WORDS,
};
use crate::config::{MsmAcc, MsmConfig};
use crate::curve::{AffineKernels, MsmCurve};
use crate::error::GpuError;
use crate::exec::{DevBuf, Exec, Readback};
use crate::plan::OnesRounds;

/// Blocks of the ones sum (a few per multiprocessor).
pub(crate) fn ones_blocks(sm_count: u32) -> u32 {
    (sm_count * 4).max(1)
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
    /// The bases and their subset sums ([`Bases::Summed`](super::Bases::Summed) over `n`
    /// bases): an entry per group of bases with a one, their subset sum where two or more are
    /// ones.
    Summed {
        /// Bases before the subset sums.
        n: usize,
        /// The groups the sums are of.
        group: OnesGroup,
    },
}

/// `sum bases[i - lo]` over the ones `i` of `[lo, hi)` of the device bitmap `ones`: point `lo`
/// is the first at `bases`. The device lists the ones of the range (`ones_list`, from word
/// `lo / 32` of the bitmap; with [`OnesList::Summed`], where `lo` must be even for pairs and a
/// multiple of 32 x [`ONES_TRIPLE_WORDS`] = 96 for triples, the ones of a group as their subset
/// sum), and those points are summed by batch-affine rounds ([`MsmAcc::BatchAffine`]; groups and rounds of `rounds`, the curve's in
/// [`sparse_uploaded`](super::sparse_uploaded)) or by the grid-wide XYZZ sum.
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
    // where the range's subset sums start, from its first base: group g's sums are point
    // n + g sums(group) of the query, so the range's first group's (g = lo / bases(group)) lie
    // that less lo after base lo (every index a u32)
    let (sums, group) = match list {
        OnesList::Single => (0, 1),
        OnesList::Summed { n, group: g } => {
            let k = g.bases();
            let aligned = match g {
                OnesGroup::Pairs => lo % 2 == 0,
                OnesGroup::Triples => lo % (32 * ONES_TRIPLE_WORDS as usize) == 0,
            };
            if !aligned || hi > n || u32::try_from(n + g.sum_points(n)).is_err() {
                return Err(GpuError::InvalidInput(format!(
                    "ones {lo}..{hi} over {n} bases summed in {g:?}"
                )));
            }
            ((n + lo / k * g.sums() - lo) as u32, k as u32)
        }
    };
    let t = Instant::now();
    // the range's first word; its bits from bit_lo on, up to bit_hi (within the bitmap's words)
    let bits = ones.ptr.wrapping_add(4 * (lo / 32) as u64);
    let bit_lo = (lo % 32) as u32;
    let bit_hi = bit_lo + (hi - lo) as u32;
    let listed = ones_list(
        e,
        bits,
        bit_lo,
        bit_hi,
        (sums, group),
        ones.count.min(hi - lo),
    )?;
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
/// per block of threads, their exclusive scan (one element more: its last is the total, read
/// back), the positions. With `(sums, group)` = (s, 2) (`bit_lo` even) or (s, 3) (`bit_lo` 0),
/// an aligned pair or triple of bits with two or more set is one entry, its subset sum from `s`
/// on; with group 1 every set bit is its own entry.
fn ones_list<E: Exec>(
    e: &E,
    bits: u64,
    bit_lo: u32,
    bit_hi: u32,
    (sums, group): (u32, u32),
    max: usize,
) -> Result<Option<(E::Buf, usize)>, GpuError> {
    // a thread takes a word, or ONES_TRIPLE_WORDS for the triples (32 of them)
    let words = (bit_hi as usize).div_ceil(32);
    let threads = if group == 3 {
        words.div_ceil(ONES_TRIPLE_WORDS as usize)
    } else {
        words
    };
    let blocks = threads.div_ceil(ONES_THREADS as usize);
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
            sums,
            group,
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
            sums,
            group,
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
