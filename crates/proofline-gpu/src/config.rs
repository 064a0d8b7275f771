//! Kernel variants, as types: what the benchmark varies to compare variants side by side in one
//! device call, and what production runs ([`MsmConfig::default`], the best measured variant).
//! No environment knobs: a variant is chosen by passing a config.

/// How a Pippenger chunk sorts its (point, window) entries by bucket.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub enum MsmSort {
    /// One counting sort with global atomics: a histogram, a scan, then a scatter where each
    /// entry takes its position with an atomic that returns a value (bound by those atomics:
    /// ~19 ms of a dense 2^24 MSM on the H200). Faster than `TwoLevel` at every size measured
    /// (dense 2^24 132.7 ms against 152.2, 2^26 503 against 584: docs/gpu-kernels.md).
    Atomic,
    /// Two levels with shared-memory counters: entries scattered by coarse bin (bucket set and
    /// top bits) per tile of points, then each bin sorted by its low bits in one block. No
    /// global atomics; more memory during the sort (`bytes.rs`). Falls back to `Atomic` where
    /// its bins do not fit shared memory (`plan::SortPlan`).
    TwoLevel,
    /// Least-significant-digit radix sort, one bucket set at a time: passes of at most
    /// `RADIX_BITS` bits of the bucket, each one kernel: a stable scatter ranked by warp ballots
    /// whose tiles find their offsets by looking back over the counts the tiles before them
    /// publish; every pass's digits counted once, in shared memory, and the buckets' sizes from
    /// the last pass. No global atomics beyond a block's histogram, a ticket per tile and two a
    /// bucket's run in a tile, and each tile writes a digit's entries as one run. More memory
    /// while sorting: the scalars out of Montgomery form and two buffers of one set's (key,
    /// entry) pairs (`bytes.rs`). Falls back to `Atomic` above 32 windows or where the digits'
    /// histogram does not fit shared memory (`plan::RadixPlan`). The production default: dense
    /// 2^24 / 2^25 / 2^26 in 106.2 / 194.9 / 371.1 ms against 115.0 / 214.6 / 411.4 with `Atomic`, the H
    /// MSM of a 32 GiB partition 741.3 against 823.6 (H200); the sparse and G2 MSMs level.
    #[default]
    Radix,
}

/// How G2's bucket accumulation makes its mixed additions. G2's curve operations are
/// out-of-line functions (inlined into every G2 kernel they made the module take over ten
/// minutes to compile): each addition is a call, with the bucket in local memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub enum G2Madd {
    /// The addition inlined into the accumulation kernel (`msm_g2_bucket_acc_inline`). The
    /// production default: the B query's tail of a 32 GiB partition in 84.5 ms of Pippenger
    /// against 118.3 with the call, a dense G2 MSM of 2^20 in 40.2 ms against 53.3 (H200).
    #[default]
    Inline,
    /// A call to the out-of-line addition (`msm_g2_bucket_acc`).
    Call,
}

/// How a Pippenger chunk accumulates its buckets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum MsmAcc {
    /// Each bucket summed with XYZZ mixed additions (10 multiplications each), in equal ranges
    /// of the sorted entries per thread (`msm_bucket_acc`).
    Xyzz,
    /// First `rounds` batch-affine rounds (`cuda/msm_affine.cuh`): each halves every bucket with
    /// affine additions whose divisions share one inversion per round (6 multiplications per
    /// addition); then the XYZZ accumulation sums what is left. Scratch: two point buffers (the
    /// first of half the entries) for the bucket sets of `plan::AFFINE_GROUP_ENTRIES` entries
    /// at a time (`AFFINE_GROUP_ENTRIES_G2` in G2; `bytes.rs`). The sparse MSMs' ones go through
    /// rounds of their own where they pay (`plan::OnesRounds`). The production
    /// default with 4 rounds: dense 2^24 / 2^25 / 2^26 in 115.7 / 215.4 / 412.9 ms against
    /// 135.0 / 260.6 / 509.7 with [`MsmAcc::Xyzz`], the H MSM of a 32 GiB partition 827.2
    /// against 1,013.1 (H200; 2 rounds were as fast at 2^24 and slower above; 5 and 6 within
    /// 0.8 % of 4 on dense MSMs and the H MSM). The variant `rounds=5` stays for the sparse
    /// tails, whose 16-bit windows hold ~116 entries a bucket at 32 GiB: four rounds leave them
    /// ~7 a bucket for the XYZZ accumulation, against ~2 for a dense MSM.
    BatchAffine {
        /// Rounds (1..=8): the XYZZ pass is left with about 2^-rounds of the additions.
        rounds: u32,
    },
}

impl Default for MsmAcc {
    fn default() -> Self {
        MsmAcc::BatchAffine { rounds: 4 }
    }
}

/// How the batch-affine rounds hold the points they pass to the next round (the last round
/// writes them interleaved, as the XYZZ accumulation reads them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub enum RoundPoints {
    /// x and y side by side, as the bases are: a round's forward pass, which reads only the
    /// two x of each output's pair, reads them 96 bytes apart (G1), and each prefix it writes
    /// into an output's x is padded to whole 32-byte sectors.
    Interleaved,
    /// Every point's x, then every point's y, in the round's buffer: the forward pass reads a
    /// pair's two x contiguously, and a warp's prefixes fill whole sectors unpadded. The
    /// production default: dense 2^24 / 2^25 / 2^26 in 100.9 / 186.1 / 352.5 ms against 104.0 /
    /// 192.6 / 365.9 interleaved, the H MSM of a 32 GiB partition (two chunks) 706.7 against
    /// 731.9, the sparse and G2 MSMs up to 2.5 % faster (H200, side by side).
    #[default]
    Split,
}

/// How a plain Pippenger chunk of [`crate::plan::WIDE_CHUNK_POINTS`] points or more (the H MSM
/// of a 32 GiB partition in one chunk) lays out its windows; smaller chunks take
/// `plan::WindowPlan::for_points` under every variant.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub enum MsmWindows {
    /// 13 windows of 20 bits (2^19 buckets each), as below that size.
    Uniform,
    /// 12 windows of 22 bits: 8 % fewer entries to sort and add, for 3.7 times the buckets.
    Wide,
    /// 12 windows as two MSMs over the same bases (`plan::ChunkWindows::Split`): 8 of 21 bits
    /// over the scalars' low 168 bits, then 4 of 22 over the rest plus the low digits' carry.
    /// `Wide`'s entries for two thirds of its buckets, for one more pass over the scalars and
    /// a second bucket reduction. The production default: the H MSM of a 32 GiB partition in
    /// one chunk in 650.6-654.7 ms against 659.3-661.2 with `Uniform` and 654.0-654.5 with
    /// `Wide` (H200, side by side). Below 2^27 points it does not pay: dense 2^25 / 2^26 and
    /// the H MSM in two chunks 2-9 % slower split than uniform.
    #[default]
    Split,
}

/// How the sparse stage runs the tails of the L, A and B queries in G1 (each tail's bases
/// gathered side by side, then a Pippenger chunk over its scalars).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub enum SparseTails {
    /// One Pippenger per query, one after the other. The production default (measured).
    #[default]
    Apart,
    /// The three tails gathered into one buffer and through one Pippenger chunk
    /// (`plan::MsmBatch`: one radix sort, one bucket accumulation, one bucket reduction and one
    /// window combination over the three queries' bucket sets, one sum per query). What it
    /// was meant to save is what a chunk costs beside its entries: the reduction and the window
    /// combination, taken to run one wave at most (latency-bound), the rounds' inversions and
    /// launches, the synchronisations. It holds the three tails' points, entries and rounds'
    /// scratch at once. Measured slower on the H200: the three G1 MSMs of a partition 1.4-2.4 ms slower than
    /// apart (their Pippenger 65.6-65.8 ms against 63.9-64.3 for the three tails apart: the
    /// fixed costs it merges did not shrink), for 4.2 GB more of the sparse stage's lease.
    Together,
}

/// How many blocks the window combination (`msm_window_combine`) gives a bucket set. Each
/// thread of a block runs a dependent chain over a range of the set's segments (three additions
/// a segment), then multiplies its sums by its position (~30 operations): the kernel is
/// latency-bound, and its time is the longest chain while the blocks fit one wave.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub enum CombineBlocks {
    /// `WINDOW_GROUPS` (16) blocks a set, whatever the sets. Right for plain layouts of 12 to
    /// 16 sets (192-256 blocks); one set (precomputed copies, a held tail over copies) gets 16
    /// blocks on a card of 132 SMs, each thread 16 to 64 segments long.
    PerSet,
    /// At least [`crate::plan::COMBINE_BLOCKS`] blocks in all where the sets are few: each set
    /// the largest power of two of blocks within that total over the sets, never fewer than
    /// `WINDOW_GROUPS` nor more than its segments (`plan::WindowPlan::combine_groups`). Layouts
    /// of nine sets or more run as under `PerSet`. By G1's chains (three additions a segment
    /// plus ~30 for the position), a thread's chain over one set of 2^19 buckets (a tail over
    /// 13 copies of 20 bits) goes from ~78 operations to ~33, over one set of 2^21 (dense 2^24
    /// over 12 copies of 22 bits) from ~222 to ~42, and over the H MSM's four sets of 22 bits
    /// in one chunk from ~222 to ~78, in one wave of blocks either way. The default: measured
    /// on an H100, dense 2^24 over 12 copies 85.4 -> 83.1 ms, B's G2 tail over 13 copies 57.9
    /// -> 54.9 ms, plain layouts level (docs/gpu-kernels.md).
    #[default]
    Fill,
}

/// The default of [`MsmConfig::g1_ones_group_log`] (the size G1's kernel table names too).
pub(crate) const DEFAULT_G1_ONES_GROUP_LOG: u32 = 26;

/// The MSM variants.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct MsmConfig {
    /// The sort by bucket.
    pub sort: MsmSort,
    /// log2 of the most points one Pippenger chunk takes (10..=27). 26 by default: an H MSM
    /// of a 32 GiB partition runs as two chunks. 27 runs it as one (one sort and one bucket
    /// reduction fewer, and its windows laid out as `windows` says: 650.6-654.7 ms against
    /// 678.2-684.4 on the H200) for 3.5 GB more of the H stage's lease (the sort's entries), too
    /// much beside the evaluations on a 24 GB card. The H stage takes 27 where its lease allows
    /// (`bytes::h_stage_msm_config`, `h_stage_lease`).
    pub max_chunk_log: u32,
    /// G2's mixed additions in the bucket accumulation (G1's are inlined).
    pub g2_madd: G2Madd,
    /// The bucket accumulation.
    pub acc: MsmAcc,
    /// The batch-affine rounds' points between rounds.
    pub round_points: RoundPoints,
    /// The windows of the largest chunks.
    pub windows: MsmWindows,
    /// The sparse G1 queries' tails: one Pippenger each, or one for the three.
    pub sparse_tails: SparseTails,
    /// log2 of the most points per group of a sparse G1 query's ones' sums (16..=26; G2's are
    /// the group's own). 26 by default: L's and A's ones at 32 GiB (60 M each, 46 M over their
    /// pair sums) in one group each, one group's rounds (their batched inversions and launches)
    /// fewer than at 25: the sparse G1 MSMs of a partition 2.2-2.9 ms faster on the H200, for
    /// 2.4 GB more of round buffers in the sparse stage's lease, which stays below the H
    /// stage's (the lease that sets a slot's peak).
    pub g1_ones_group_log: u32,
    /// The window combination's blocks a bucket set.
    pub combine: CombineBlocks,
}

impl Default for MsmConfig {
    fn default() -> Self {
        MsmConfig {
            sort: MsmSort::default(),
            max_chunk_log: 26,
            g2_madd: G2Madd::default(),
            acc: MsmAcc::default(),
            round_points: RoundPoints::default(),
            windows: MsmWindows::default(),
            sparse_tails: SparseTails::default(),
            g1_ones_group_log: DEFAULT_G1_ONES_GROUP_LOG,
            combine: CombineBlocks::default(),
        }
    }
}

impl MsmConfig {
    /// Every variant, for the benchmark's side-by-side table.
    pub fn variants() -> Vec<(&'static str, MsmConfig)> {
        let d = MsmConfig::default();
        vec![
            (
                "sort=atomic",
                MsmConfig {
                    sort: MsmSort::Atomic,
                    ..d
                },
            ),
            (
                "sort=two-level",
                MsmConfig {
                    sort: MsmSort::TwoLevel,
                    ..d
                },
            ),
            (
                "sort=radix",
                MsmConfig {
                    sort: MsmSort::Radix,
                    ..d
                },
            ),
            (
                "chunk=2^27",
                MsmConfig {
                    max_chunk_log: 27,
                    ..d
                },
            ),
            (
                "g2-madd=call",
                MsmConfig {
                    g2_madd: G2Madd::Call,
                    ..d
                },
            ),
            (
                "acc=xyzz",
                MsmConfig {
                    acc: MsmAcc::Xyzz,
                    ..d
                },
            ),
            (
                "rounds=5",
                MsmConfig {
                    acc: MsmAcc::BatchAffine { rounds: 5 },
                    ..d
                },
            ),
            (
                "chunk=2^27 windows=uniform",
                MsmConfig {
                    max_chunk_log: 27,
                    windows: MsmWindows::Uniform,
                    ..d
                },
            ),
            (
                "chunk=2^27 windows=wide",
                MsmConfig {
                    max_chunk_log: 27,
                    windows: MsmWindows::Wide,
                    ..d
                },
            ),
            (
                "round-points=interleaved",
                MsmConfig {
                    round_points: RoundPoints::Interleaved,
                    ..d
                },
            ),
            (
                "round-points=split",
                MsmConfig {
                    round_points: RoundPoints::Split,
                    ..d
                },
            ),
            (
                "tails=together",
                MsmConfig {
                    sparse_tails: SparseTails::Together,
                    ..d
                },
            ),
            (
                "ones-group=2^25",
                MsmConfig {
                    g1_ones_group_log: 25,
                    ..d
                },
            ),
            (
                "combine=per-set",
                MsmConfig {
                    combine: CombineBlocks::PerSet,
                    ..d
                },
            ),
            (
                "combine=fill",
                MsmConfig {
                    combine: CombineBlocks::Fill,
                    ..d
                },
            ),
            (
                "chunk=2^27 combine=per-set",
                MsmConfig {
                    max_chunk_log: 27,
                    combine: CombineBlocks::PerSet,
                    ..d
                },
            ),
        ]
    }

    /// The [`MsmConfig::variants`] that differ from the defaults in the window combination's
    /// blocks alone (`combine`): what only layouts of few bucket sets run differently.
    pub fn combine_variants() -> Vec<(&'static str, MsmConfig)> {
        let d = MsmConfig::default();
        MsmConfig::variants()
            .into_iter()
            .filter(|(_, m)| {
                *m != d
                    && MsmConfig {
                        combine: d.combine,
                        ..*m
                    } == d
            })
            .collect()
    }

    /// The defaults, then each [`MsmConfig::variants`] a single MSM of fewer than 2^25 points
    /// runs differently (the tests'): without those that only group the sparse stage's G1
    /// MSMs (`sparse_tails`), size the ones' groups (`g1_ones_group_log`: both sizes hold such
    /// an MSM's ones in one group), lay out chunks larger than such an MSM (`max_chunk_log`,
    /// `windows`) or size the window combination of few bucket sets (`combine`: plain windows
    /// of such an MSM make nine sets or more; the tests over precomputed copies run both), and
    /// without one that equals the defaults.
    pub fn single_msm_variants() -> Vec<(&'static str, MsmConfig)> {
        let d = MsmConfig::default();
        let as_run = |m: &MsmConfig| MsmConfig {
            max_chunk_log: d.max_chunk_log,
            windows: d.windows,
            sparse_tails: d.sparse_tails,
            g1_ones_group_log: d.g1_ones_group_log,
            combine: d.combine,
            ..*m
        };
        let mut runs: Vec<MsmConfig> = Vec::new();
        std::iter::once(("default", d))
            .chain(MsmConfig::variants())
            .filter(|(_, m)| {
                let run = as_run(m);
                let new = !runs.contains(&run);
                runs.push(run);
                new
            })
            .collect()
    }

    /// The most points per group of a sparse G1 query's ones' sums.
    pub fn g1_ones_group(&self) -> usize {
        1 << self.g1_ones_group_log.clamp(16, 26)
    }

    /// The most points one Pippenger chunk takes.
    pub fn max_chunk(&self) -> usize {
        1 << self.max_chunk_log.clamp(10, 27)
    }
}

/// How the Groth16 H polynomial H = (A B - C) / Z is computed from the evaluations a, b, c.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub enum HSequence {
    /// Seven transforms of separate passes and a pointwise kernel.
    Separate,
    /// Passes fused where two transforms meet on the same tiles: each inverse's lowest pass
    /// with the following coset transform's lowest pass, and c's top pass with the pointwise
    /// step and the final inverse's top pass (five passes over the data fewer at any size
    /// above one tile; n^-1 folded into the coset power tables): 282.1 ms at 2^27 on the H200
    /// against 292.2 separate.
    Fused,
    /// Six transforms: C = A B mod Z when c = a∘b (a witness that satisfies every constraint,
    /// which synthesis checks), so H is the upper half of A B's coefficients. c is only
    /// inverted; a and b go to the coset, their product comes back by one coset inverse, and
    /// H_k = (Y_k - C_k) / (g^n - 1) as it stores (cuda/ntt.cu). Fused passes as in `Fused`,
    /// and c's product taken as its first pass loads a and b. Only for c = a∘b: with other
    /// values of c it does not compute the seven transforms' result. The production default
    /// (the H stage derives c = a∘b): 241.7 ms at 2^27 and 27.2 at 2^24 on the H200 against
    /// 282.1 and 31.7 for `Fused`.
    #[default]
    Quotient,
}

impl HSequence {
    /// Whether the sequence computes (A B - C) / Z's interpolation on the coset for any c
    /// (the seven-transform sequences), rather than only for c = a∘b.
    pub fn takes_any_c(self) -> bool {
        match self {
            HSequence::Separate | HSequence::Fused => true,
            HSequence::Quotient => false,
        }
    }
}

/// The NTT variants.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct NttConfig {
    /// The H sequence.
    pub h: HSequence,
}

impl NttConfig {
    /// Every variant, for the benchmark's side-by-side table.
    pub fn variants() -> Vec<(&'static str, NttConfig)> {
        vec![
            (
                "h=separate",
                NttConfig {
                    h: HSequence::Separate,
                },
            ),
            (
                "h=fused",
                NttConfig {
                    h: HSequence::Fused,
                },
            ),
            (
                "h=quotient",
                NttConfig {
                    h: HSequence::Quotient,
                },
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::MsmConfig;

    /// The names of a list of variants.
    fn names(variants: &[(&'static str, MsmConfig)]) -> Vec<&'static str> {
        variants.iter().map(|(n, _)| *n).collect()
    }

    /// The tests' variants: the defaults once, then every variant a small MSM runs differently,
    /// and none that differs only in the layout of chunks of 2^27 points.
    #[test]
    fn single_msm_variants_each_run_differently() {
        assert_eq!(
            names(&MsmConfig::single_msm_variants()),
            [
                "default",
                "sort=atomic",
                "sort=two-level",
                "g2-madd=call",
                "acc=xyzz",
                "rounds=5",
                "round-points=interleaved"
            ]
        );
    }

    /// The variants the runs over few bucket sets add: the window combination's blocks alone
    /// (not `chunk=2^27 combine=per-set`, which lays out the H MSM's chunk too).
    #[test]
    fn combine_variants_change_the_blocks_alone() {
        assert_eq!(names(&MsmConfig::combine_variants()), ["combine=per-set"]);
    }
}
