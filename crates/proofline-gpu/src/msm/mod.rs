//! Multi-scalar multiplication on the GPU in G1 and G2 (Pippenger with signed digits, a sort
//! by bucket, batch-affine rounds then balanced XYZZ bucket accumulation, segmented bucket
//! reduction), driving `cuda/msm.cu` (the sort and the G1 curve kernels) and `cuda/msm_g2.cu`
//! (the G2 ones) through an [`Exec`](crate::exec::Exec); written once over [`MsmCurve`].
//!
//! Where the parts are:
//! * [`pippenger`](mod@pippenger): a chunk's windows from sort to window combination, and the
//!   dense MSM over bases of any kind ([`dense`]);
//! * [`sort`]: the (point, window) entries sorted by bucket (radix, two-level, atomic);
//! * [`accumulate`]: the balanced XYZZ bucket accumulation;
//! * [`affine`]: the batch-affine rounds (one batched inversion per round) and the inversion;
//! * [`ones`]: the sum of the bases of a sparse query's ones, listed from its bitmap;
//! * [`sparse`]: a sparse query's split on the device, its ones summed and its tail through
//!   Pippenger (several queries' tails through one, `pippenger::pippenger_batch`);
//! * [`held`]: a sparse query's tail held gathered on the device (with precomputed copies in
//!   G1), and a query's MSM split against it;
//! * [`fixed`]: what a resident set derives once from its fixed bases (the ones' subset sums,
//!   precomputed copies);
//! * [`scan`]: the exclusive scan the others share.
//!
//! Sparse queries arrive split by the CPU (`proofline_groth16::msm::SparseScalars`: zeros
//! dropped, a bitmap of the ones, the tail's indices and scalars); this is the only split, and
//! the GPU takes it as it is. Bases are either resident on the device ([`Bases::Device`]),
//! resident with precomputed copies for fixed-base MSMs ([`Bases::Precomputed`],
//! `plan::Precomputation`), resident with the subset sums of a sparse query's ones
//! ([`Bases::Summed`], [`ones_sums`]), or streamed from host memory in chunks of
//! [`STREAM_CHUNK`] points ([`Bases::Host`]).
//!
//! Memory: every helper frees its temporaries and synchronises before it returns (a split on
//! the device is its caller's, held until dropped), so the phases' peaks add up simply;
//! `bytes.rs` has the formulas and tests them against this code.

use std::time::Instant;

use blstrs::G1Affine;

use crate::curve::MsmCurve;
use crate::plan::Precomputation;

mod accumulate;
pub(crate) mod affine;
mod fixed;
mod held;
pub(crate) mod ones;
mod pippenger;
mod scan;
mod sort;
mod sparse;

pub(crate) use accumulate::acc_target;
pub(crate) use fixed::{ones_sums, precompute};
pub(crate) use held::{
    held_words, hold_tail, hold_tail_precomputed, sparse_held, sparse_over_own_tail, upload_held,
    HeldOnDevice, HeldTail,
};
pub(crate) use ones::ones_blocks;
pub(crate) use pippenger::dense;
#[cfg(test)]
pub(crate) use pippenger::pippenger_batch;
#[cfg(any(test, feature = "testkit"))]
pub(crate) use pippenger::{pippenger, pippenger_sets, pippenger_windows};
#[cfg(any(test, feature = "testkit"))]
pub(crate) use sparse::sparse;
pub(crate) use sparse::{sparse_together, sparse_uploaded, upload_split, SplitOnDevice};

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

/// The aligned groups of neighbouring bases whose subset sums a sparse query's bases may hold
/// for its ones ([`Bases::Summed`]): the ones of a group are one point of the ones' sum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OnesGroup {
    /// Bases (2j, 2j + 1): their sum, point `n + j`; half as many points again.
    Pairs,
    /// Bases (3j, 3j + 1, 3j + 2) = (a, b, c): a + b, a + c, b + c and a + b + c, points
    /// `n + 4j` on; four thirds as many points again.
    Triples,
}

impl OnesGroup {
    /// Bases a group.
    pub(crate) const fn bases(self) -> usize {
        match self {
            OnesGroup::Pairs => 2,
            OnesGroup::Triples => 3,
        }
    }

    /// Subset sums a group: those of two or more of its bases.
    pub(crate) const fn sums(self) -> usize {
        match self {
            OnesGroup::Pairs => 1,
            OnesGroup::Triples => crate::abi::ONES_TRIPLE_SUMS as usize,
        }
    }

    /// Points of the subset sums of `n` bases.
    pub(crate) const fn sum_points(self, n: usize) -> usize {
        n.div_ceil(self.bases()) * self.sums()
    }
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
    /// On the device at `ptr`: the query's `n` bases, then the subset sums of their aligned
    /// groups of `group` ([`OnesGroup`], [`ones_sums`]). A sparse MSM's ones then list one entry
    /// per group of bases with a one ([`OnesList::Summed`](ones::OnesList::Summed));
    /// everything else reads the bases as [`Bases::Device`].
    Summed {
        /// Address of base 0.
        ptr: u64,
        /// Bases before the subset sums.
        n: usize,
        /// The groups the sums are of.
        group: OnesGroup,
    },
    /// In host memory: streamed through a staging buffer of `chunk` points.
    Host {
        /// The bases.
        points: &'a [P],
        /// Points per chunk ([`STREAM_CHUNK`] in production).
        chunk: usize,
    },
}

/// The device address of point `i` of a point array of `C` at `base`.
fn point_at<C: MsmCurve>(base: u64, i: usize) -> u64 {
    base.wrapping_add((i * C::AFFINE_WORDS * 4) as u64)
}
