//! The two groups the MSM kernels run on, as types: their point layouts (words per affine
//! point, bucket and Jacobian result), their twins of the curve kernels (`cuda/msm_curve.cuh`
//! instantiated in `msm.cu` for G1 and `msm_g2.cu` for G2) and their block sizes. The host code
//! of `msm/` is written once over [`MsmCurve`].

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective};
use group::Group;

use crate::abi::{
    ACC_BLOCKS_PER_SM, ACC_BLOCKS_PER_SM_G2, AFFINE_WORDS, AFF_BLOCKS_PER_SM, AFF_BLOCKS_PER_SM_G2,
    G2_AFFINE_WORDS, G2_JACOBIAN_WORDS, G2_XYZZ_WORDS, JACOBIAN_WORDS, RED_THREADS, RED_THREADS_G2,
    XYZZ_WORDS,
};
use crate::config::{MsmConfig, DEFAULT_G1_ONES_GROUP_LOG};
use crate::layout::{affines_as_u32, g2_affines_as_u32, g2_jacobian_from_u32, jacobian_from_u32};
use crate::plan::{OnesRounds, AFFINE_GROUP_ENTRIES, AFFINE_GROUP_ENTRIES_G2};

/// The curve kernels of one group, by name.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CurveKernels {
    pub(crate) bucket_acc: &'static str,
    /// The accumulation with the mixed addition inlined (`MsmConfig::g2_madd`; G1's always is).
    pub(crate) bucket_acc_inline: &'static str,
    pub(crate) bucket_fixup: &'static str,
    pub(crate) big_partial: &'static str,
    pub(crate) big_final: &'static str,
    pub(crate) bucket_reduce: &'static str,
    pub(crate) window_combine: &'static str,
    pub(crate) xyzz_reduce: &'static str,
    pub(crate) sum_ones: &'static str,
    pub(crate) gather: &'static str,
    /// The ones' subset sums of a query's bases (`msm::ones_sums`).
    pub(crate) ones_sums: &'static str,
    /// The fixed-base precomputation's copies (`msm::precompute`).
    pub(crate) precompute: &'static str,
    /// The batch-affine rounds (`MsmAcc::BatchAffine`), where the group has them.
    pub(crate) affine: Option<AffineKernels>,
}

/// The batch-affine rounds of one group (`cuda/msm_affine.cuh`), by name, and the field their
/// batched inversion works in.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AffineKernels {
    pub(crate) fwd: &'static str,
    pub(crate) bwd: &'static str,
    pub(crate) inv_up: &'static str,
    pub(crate) inv_top: &'static str,
    pub(crate) inv_down: &'static str,
    /// u32 words per element of the field of the coordinates.
    pub(crate) field_words: usize,
    /// Blocks per multiprocessor of the rounds' kernels (their `__launch_bounds__`).
    pub(crate) blocks_per_sm: u32,
    /// Entries per group of bucket sets (`plan::AffineGroup::sets_per_group`).
    pub(crate) group_entries: usize,
    /// How a sparse query's ones are summed by the rounds.
    pub(crate) ones: OnesRounds,
}

/// A group the MSM kernels support.
pub(crate) trait MsmCurve {
    /// Affine points (the bases), as blstrs lays them out.
    type Affine: Copy + Send + Sync;
    /// Results.
    type Projective: Group + Copy + Send + Sync + std::fmt::Debug;
    /// "G1", "G2", for errors.
    const NAME: &'static str;
    /// u32 words per affine point.
    const AFFINE_WORDS: usize;
    /// u32 words per XYZZ bucket.
    const XYZZ_WORDS: usize;
    /// u32 words per Jacobian result.
    const JACOBIAN_WORDS: usize;
    /// Threads per block of the tree reductions.
    const RED_THREADS: u32;
    /// Blocks per multiprocessor of the bucket accumulation.
    const ACC_BLOCKS_PER_SM: u32;
    /// The group's curve kernels.
    const KERNELS: CurveKernels;
    /// The points as the u32 words the kernels read.
    fn affines_as_u32(points: &[Self::Affine]) -> &[u32];
    /// A Jacobian result written by a kernel.
    fn from_jacobian(words: &[u32]) -> Self::Projective;
    /// How a sparse query's ones are summed under `cfg`: by the group's rounds
    /// ([`AffineKernels::ones`]), `None` where it has none.
    fn ones_rounds(_cfg: &MsmConfig) -> Option<OnesRounds> {
        Self::KERNELS.affine.map(|ak| ak.ones)
    }
}

/// BLS12-381 G1.
#[derive(Clone, Copy, Debug)]
pub(crate) struct G1;

/// BLS12-381 G2.
#[derive(Clone, Copy, Debug)]
pub(crate) struct G2;

impl MsmCurve for G1 {
    type Affine = G1Affine;
    type Projective = G1Projective;
    const NAME: &'static str = "G1";
    const AFFINE_WORDS: usize = AFFINE_WORDS as usize;
    const XYZZ_WORDS: usize = XYZZ_WORDS as usize;
    const JACOBIAN_WORDS: usize = JACOBIAN_WORDS as usize;
    const RED_THREADS: u32 = RED_THREADS;
    const ACC_BLOCKS_PER_SM: u32 = ACC_BLOCKS_PER_SM;
    const KERNELS: CurveKernels = CurveKernels {
        bucket_acc: "msm_bucket_acc",
        bucket_acc_inline: "msm_bucket_acc",
        bucket_fixup: "msm_bucket_fixup",
        big_partial: "msm_big_partial",
        big_final: "msm_big_final",
        bucket_reduce: "msm_bucket_reduce",
        window_combine: "msm_window_combine",
        xyzz_reduce: "xyzz_reduce",
        sum_ones: "msm_sum_ones",
        gather: "g1_gather",
        ones_sums: "msm_ones_sums",
        precompute: "msm_precompute",
        affine: Some(AffineKernels {
            fwd: "msm_affine_fwd",
            bwd: "msm_affine_bwd",
            inv_up: "fp_batch_inv_up",
            inv_top: "fp_batch_inv_top",
            inv_down: "fp_batch_inv_down",
            field_words: AFFINE_WORDS as usize / 2,
            blocks_per_sm: AFF_BLOCKS_PER_SM,
            group_entries: AFFINE_GROUP_ENTRIES,
            // groups of 2^26 points (the default of `MsmConfig::g1_ones_group_log`, which sets
            // the size: `ones_rounds`): 4.8 GB of round buffers. Halved down to 2^19 points: on
            // the H200 each round below 2^22 saved more in XYZZ additions than its fixed cost
            // (2^18 and 2^17 left were slower again)
            ones: OnesRounds {
                entries: 1 << DEFAULT_G1_ONES_GROUP_LOG,
                left: 1 << 19,
            },
        }),
    };
    fn affines_as_u32(points: &[G1Affine]) -> &[u32] {
        affines_as_u32(points)
    }
    fn from_jacobian(words: &[u32]) -> G1Projective {
        jacobian_from_u32(words)
    }

    /// The group's rounds in groups of 2^`cfg.g1_ones_group_log` points.
    fn ones_rounds(cfg: &MsmConfig) -> Option<OnesRounds> {
        Self::KERNELS.affine.map(|ak| OnesRounds {
            entries: cfg.g1_ones_group(),
            ..ak.ones
        })
    }
}

impl MsmCurve for G2 {
    type Affine = G2Affine;
    type Projective = G2Projective;
    const NAME: &'static str = "G2";
    const AFFINE_WORDS: usize = G2_AFFINE_WORDS as usize;
    const XYZZ_WORDS: usize = G2_XYZZ_WORDS as usize;
    const JACOBIAN_WORDS: usize = G2_JACOBIAN_WORDS as usize;
    const RED_THREADS: u32 = RED_THREADS_G2;
    const ACC_BLOCKS_PER_SM: u32 = ACC_BLOCKS_PER_SM_G2;
    const KERNELS: CurveKernels = CurveKernels {
        bucket_acc: "msm_g2_bucket_acc",
        bucket_acc_inline: "msm_g2_bucket_acc_inline",
        bucket_fixup: "msm_g2_bucket_fixup",
        big_partial: "msm_g2_big_partial",
        big_final: "msm_g2_big_final",
        bucket_reduce: "msm_g2_bucket_reduce",
        window_combine: "msm_g2_window_combine",
        xyzz_reduce: "g2_xyzz_reduce",
        sum_ones: "msm_g2_sum_ones",
        gather: "g2_gather",
        ones_sums: "msm_g2_ones_sums",
        precompute: "msm_g2_precompute",
        affine: Some(AffineKernels {
            fwd: "msm_g2_affine_fwd",
            bwd: "msm_g2_affine_bwd",
            inv_up: "fp2_batch_inv_up",
            inv_top: "fp2_batch_inv_top",
            inv_down: "fp2_batch_inv_down",
            field_words: G2_AFFINE_WORDS as usize / 2,
            blocks_per_sm: AFF_BLOCKS_PER_SM_G2,
            group_entries: AFFINE_GROUP_ENTRIES_G2,
            // groups of 2^24 points: 2.4 GB of round buffers, halved down to 2^20 points (2^18,
            // 2^21 and 2^22 left were slower on the H200)
            ones: OnesRounds {
                entries: 1 << 24,
                left: 1 << 20,
            },
        }),
    };
    fn affines_as_u32(points: &[G2Affine]) -> &[u32] {
        g2_affines_as_u32(points)
    }
    fn from_jacobian(words: &[u32]) -> G2Projective {
        g2_jacobian_from_u32(words)
    }
}
