//! Kernel variants, as types: what the benchmark varies to compare variants side by side in one
//! device call, and what production runs ([`MsmConfig::default`], the best measured variant).
//! No environment knobs: a variant is chosen by passing a config.

use crate::plan::{WindowPlan, MIN_WINDOW};

/// How a Pippenger chunk sorts its (point, window) entries by bucket.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub enum MsmSort {
    /// One counting sort with global atomics: a histogram, a scan, then a scatter where each
    /// entry takes its position with an atomic that returns a value (bound by those atomics).
    /// The production default: faster than `TwoLevel` at every size measured on the H200
    /// (dense 2^24 132.7 ms against 152.2, 2^26 503 against 584, the H MSM at 2^27 1,006 against
    /// 1,170: docs/gpu-kernels.md).
    #[default]
    Atomic,
    /// Two levels with shared-memory counters: entries scattered by coarse bin (bucket set and
    /// top bits) per tile of points, then each bin sorted by its low bits in one block. No
    /// global atomics; more memory during the sort (`bytes.rs`). Falls back to `Atomic` where
    /// its bins do not fit shared memory (`plan::SortPlan`).
    TwoLevel,
}

/// The window width of a Pippenger chunk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub enum MsmWindow {
    /// `plan::WindowPlan::for_points`: about log2(n) - 4 bits, 20 (13 windows) from 2^22
    /// points.
    #[default]
    Auto,
    /// This many bits (8..=24) for every chunk.
    Bits(u32),
}

/// The MSM variants.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct MsmConfig {
    /// The sort by bucket.
    pub sort: MsmSort,
    /// log2 of the most points one Pippenger chunk takes (26 by default: an H MSM of a 32 GiB
    /// partition runs as two chunks; at most 27, the sort's entries staying within 31 bits).
    pub max_chunk_log: u32,
    /// The window width.
    pub window: MsmWindow,
}

impl Default for MsmConfig {
    fn default() -> Self {
        MsmConfig {
            sort: MsmSort::default(),
            max_chunk_log: 26,
            window: MsmWindow::Auto,
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
        ]
    }

    /// Chunk and window variants of the default, for dense MSMs of 2^26 points and more.
    pub fn chunk_variants() -> Vec<(&'static str, MsmConfig)> {
        let d = MsmConfig::default();
        vec![
            (
                "chunk=2^27",
                MsmConfig {
                    max_chunk_log: 27,
                    ..d
                },
            ),
            (
                "chunk=2^27 c=21",
                MsmConfig {
                    max_chunk_log: 27,
                    window: MsmWindow::Bits(21),
                    ..d
                },
            ),
            (
                "chunk=2^27 c=22",
                MsmConfig {
                    max_chunk_log: 27,
                    window: MsmWindow::Bits(22),
                    ..d
                },
            ),
        ]
    }

    /// The most points one Pippenger chunk takes.
    pub fn max_chunk(&self) -> usize {
        1 << self.max_chunk_log.clamp(10, 27)
    }

    /// The windows of a chunk of `n` points.
    pub fn window_plan(&self, n: usize) -> WindowPlan {
        match self.window {
            MsmWindow::Auto => WindowPlan::for_points(n),
            MsmWindow::Bits(c) => WindowPlan::with_window(c.clamp(MIN_WINDOW, 24)),
        }
    }
}

/// How the Groth16 H sequence (3 inverse NTTs, 3 coset NTTs, the pointwise step, 1 inverse coset
/// NTT) is run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub enum HSequence {
    /// Seven transforms of separate passes and a pointwise kernel.
    Separate,
    /// Passes fused where two transforms meet on the same tiles: each inverse's lowest pass
    /// with the following coset transform's lowest pass, and c's top pass with the pointwise
    /// step and the final inverse's top pass (five passes over the data fewer at any size
    /// above one tile; n^-1 folded into the coset power tables). The production default: 280.8
    /// ms at 2^27 on the H200 against 291.5 separate.
    #[default]
    Fused,
}

/// How many stages the NTT passes after the first may fuse. A pass of t stages over tiles of
/// 2^10 elements keeps 2^(10 - t) consecutive elements per tile: the wider the pass, the
/// shorter the runs each warp reads and writes, and the fewer passes over the data.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub enum NttPassWidth {
    /// At most 8 stages: runs of at least 4 elements (128 bytes). 2^27: four passes.
    #[default]
    Runs128,
    /// At most 9 stages: runs of 2 elements (64 bytes). 2^27: three passes.
    Runs64,
    /// At most 10 stages: single elements (32-byte sectors). 2^27: three passes, the
    /// bit-reversing plan too.
    Runs32,
}

impl NttPassWidth {
    /// The most stages a pass after the first fuses.
    pub fn max_later_stages(self) -> u32 {
        match self {
            NttPassWidth::Runs128 => 8,
            NttPassWidth::Runs64 => 9,
            NttPassWidth::Runs32 => 10,
        }
    }
}

/// The NTT variants.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct NttConfig {
    /// The H sequence.
    pub h: HSequence,
    /// The passes' width.
    pub width: NttPassWidth,
}

impl NttConfig {
    /// Every variant, for the benchmark's side-by-side table.
    pub fn variants() -> Vec<(&'static str, NttConfig)> {
        let d = NttConfig::default();
        vec![
            (
                "h=separate",
                NttConfig {
                    h: HSequence::Separate,
                    ..d
                },
            ),
            (
                "h=fused",
                NttConfig {
                    h: HSequence::Fused,
                    ..d
                },
            ),
            (
                "width=64B",
                NttConfig {
                    width: NttPassWidth::Runs64,
                    ..d
                },
            ),
            (
                "width=32B",
                NttConfig {
                    width: NttPassWidth::Runs32,
                    ..d
                },
            ),
        ]
    }
}
