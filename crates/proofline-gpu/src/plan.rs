//! CPU-side planning for the GPU kernels, unit-tested on every machine: MSM
//! window sizing and signed-digit decomposition (the reference for
//! `cuda/msm.cu`), NTT pass planning (`cuda/ntt.cu`), power tables, and the
//! host-side final reductions (window combination). Constants the kernels also
//! use come from `abi.rs`.

use blstrs::Scalar;
use ff::{Field, PrimeField};
use group::Group;

use crate::config::{CombineBlocks, MsmSort, MsmWindows};

pub use crate::abi::{
    ACC_BLOCKS_PER_SM, ACC_THREADS, AFF_BLOCKS_PER_SM, AFF_INV_MAX, AFF_INV_THREADS, AFF_THREADS,
    BIG_PER_BLOCK, NTT_TILE_LOG, RADIX_BITS, RADIX_COUNT_MASK, RADIX_HIST_MAX, RADIX_TILE,
    REDUCE_SEGMENT, SORT_BINS_MAX, SORT_FINE_BITS_MAX, SORT_TILE, WINDOW_GROUPS,
};

/// Bits of a scalar that the digit decomposition covers (r < 2^255, plus one
/// spare bit for the final signed-digit carry).
pub const SCALAR_BITS: u32 = 256;
/// Largest window the GPU uses (bucket memory grows as 2^(c-1)).
pub const MAX_WINDOW: u32 = 20;
/// Smallest window.
pub const MIN_WINDOW: u32 = 8;
/// log2 of the points from which a plain chunk takes [`MAX_WINDOW`]-bit windows.
pub const WIDE_WINDOW_LOG: u32 = 24;

/// Window plan of a Pippenger chunk of `n` points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowPlan {
    /// window bits
    pub c: u32,
    /// number of windows
    pub nw: u32,
    /// buckets per window, 2^(c-1)
    pub nb: u32,
}

impl WindowPlan {
    /// Window choice: about log2(n) - 4 bits in [MIN_WINDOW, 16] below 2^24 points, and
    /// MAX_WINDOW (13 windows) from there. Measured side by side (`proofline-gpu-bench
    /// --windows`, H100, one process): dense G1 at 2^22 and 2^23 is fastest at 16 bits (28.1 /
    /// 52.2 ms against 36.3 / 58.3 at 20), at 2^24 level from 16 to 20 bits (100.1-101.9 ms)
    /// and slower at 21 and 22; dense G2 at 2^22 80.9 ms at 16 bits against 117.8 at 20. On
    /// the H200 the sparse queries' tails (2.7-3.8 M points) were slower at 17 and 18 bits
    /// than at 16, dense 2^25 and 2^26 slower at 18 and 19 bits than at 20. Chunks of
    /// `WIDE_CHUNK_POINTS` take the layout of `MsmWindows` instead (`ChunkWindows::plain`).
    pub fn for_points(n: usize) -> Self {
        let lg = usize::BITS - n.max(1).leading_zeros() - 1;
        let c = if lg >= WIDE_WINDOW_LOG {
            MAX_WINDOW
        } else {
            lg.saturating_sub(4).clamp(MIN_WINDOW, 16)
        };
        Self::with_window(c)
    }
    /// Plan for an explicit window size.
    pub fn with_window(c: u32) -> Self {
        let nw = SCALAR_BITS.div_ceil(c);
        WindowPlan {
            c,
            nw,
            nb: 1 << (c - 1),
        }
    }
    /// total buckets
    pub fn buckets(&self) -> usize {
        self.nw as usize * self.nb as usize
    }
    /// segments per window in the bucket reduction
    pub fn segments(&self) -> u32 {
        (self.nb / REDUCE_SEGMENT.min(self.nb)).max(1)
    }
    /// buckets per segment
    pub fn segment_len(&self) -> u32 {
        REDUCE_SEGMENT.min(self.nb)
    }
    /// Blocks of the window combination (`msm_window_combine`) for each of `sets` bucket sets of
    /// this plan, as `blocks` says ([`CombineBlocks`]); at most one a segment.
    pub fn combine_groups(&self, sets: usize, blocks: CombineBlocks) -> u32 {
        let per_set = match blocks {
            CombineBlocks::PerSet => WINDOW_GROUPS,
            CombineBlocks::Fill => {
                let share = (COMBINE_BLOCKS as usize / sets.max(1)).max(1) as u32;
                WINDOW_GROUPS.max(1 << share.ilog2())
            }
        };
        per_set.min(self.segments())
    }
}

/// The blocks [`CombineBlocks::Fill`] gives the window combination in all where the bucket sets
/// are few: what the plain layouts of 16 sets launch (16 a set), about two blocks an SM on
/// the cards measured (132 SMs).
pub const COMBINE_BLOCKS: u32 = 256;

/// Coarse bins the two-level sort aims for at least (blocks of its fine pass), where the
/// shared-memory limit allows.
pub const SORT_BINS_TARGET: u32 = 512;

/// Bins of the two-level sort (`msm_sort_coarse`, `msm_sort_fine`) for `sets` bucket sets of
/// `nb` buckets: bucket b of set s is coarse bin s * coarse + (b >> fine_bits), fine key
/// b & (2^fine_bits - 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SortPlan {
    /// Low bits of a bucket sorted in the fine pass.
    pub fine_bits: u32,
    /// Coarse bins per bucket set (nb >> fine_bits).
    pub coarse: u32,
    /// Coarse bins in all (sets * coarse).
    pub bins: u32,
}

impl SortPlan {
    /// The largest fine part (at most [`SORT_FINE_BITS_MAX`] bits) whose coarse bins fit the
    /// shared-memory counters ([`SORT_BINS_MAX`]), made smaller while there are fewer than
    /// [`SORT_BINS_TARGET`] bins; `None` when even the largest does not fit (the caller then
    /// sorts with global atomics).
    pub fn new(sets: u32, nb: u32) -> Option<Self> {
        if sets == 0 || !nb.is_power_of_two() {
            return None;
        }
        let lg_nb = nb.trailing_zeros();
        let bins = |f: u32| u64::from(sets) * u64::from(nb >> f);
        let mut f = SORT_FINE_BITS_MAX.min(lg_nb);
        if bins(f) > u64::from(SORT_BINS_MAX) {
            return None;
        }
        while f > 0
            && bins(f) < u64::from(SORT_BINS_TARGET)
            && bins(f - 1) <= u64::from(SORT_BINS_MAX)
        {
            f -= 1;
        }
        Some(SortPlan {
            fine_bits: f,
            coarse: nb >> f,
            bins: bins(f) as u32,
        })
    }

    /// Coarse tiles (blocks of the coarse passes) of `n` points.
    pub fn tiles(n: usize) -> usize {
        n.div_ceil(SORT_TILE as usize).max(1)
    }
}

/// The radix sort of one chunk (`MsmSort::Radix`, `msm_radix_*`): each bucket set's entries
/// sorted by their key (the bucket within the set, c - 1 bits) in passes of at most
/// [`RADIX_BITS`] bits, the lowest first, in tiles of [`RADIX_TILE`] entries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RadixPlan {
    /// (shift, bits) of each pass, lowest bits first; the bits as even as they can be.
    pub passes: Vec<(u32, u32)>,
    /// Tiles over one window's points: a set's first pass has `copies` times as many.
    pub tiles_per_window: usize,
}

impl RadixPlan {
    /// The plan for `n` points in `sets`; `None` where the carries' masks (one bit per window)
    /// cannot hold the windows, the chunk's entries do not fit 32 bits, a set's entries do not
    /// fit the count of a tile's published word ([`RADIX_COUNT_MASK`]), or the digits of every
    /// set and pass do not fit the preparation's histogram ([`RADIX_HIST_MAX`]) (the caller
    /// then sorts with global atomics).
    pub fn new(n: usize, sets: &BucketSets) -> Option<Self> {
        let plan = sets.plan;
        if plan.nw > 32
            || n == 0
            || (n as u64) * u64::from(plan.nw) > u64::from(u32::MAX)
            || (n as u64) * u64::from(sets.copies) >= u64::from(RADIX_COUNT_MASK)
        {
            return None;
        }
        let key_bits = plan.nb.trailing_zeros();
        let count = key_bits.div_ceil(RADIX_BITS).max(1);
        let mut passes = Vec::with_capacity(count as usize);
        let mut shift = 0;
        for p in 0..count {
            let bits = key_bits / count + u32::from(p < key_bits % count);
            passes.push((shift, bits));
            shift += bits;
        }
        let radix = RadixPlan {
            passes,
            tiles_per_window: Self::window_tiles(n),
        };
        // the preparation's histogram: every set's digits of every pass in shared memory
        (sets.sets * radix.set_bins() <= RADIX_HIST_MAX).then_some(radix)
    }

    /// Tiles of a first pass over one window of `n` points.
    pub fn window_tiles(n: usize) -> usize {
        n.div_ceil(RADIX_TILE as usize)
    }

    /// Digits over all passes: the counters of one set in the preparation's histogram.
    pub fn set_bins(&self) -> u32 {
        self.passes.iter().map(|&(_, bits)| 1u32 << bits).sum()
    }

    /// The passes' bits a byte each, lowest pass first (at most four passes: keys of at most
    /// 31 bits in passes of at most 8).
    pub fn packed_bits(&self) -> u32 {
        self.passes
            .iter()
            .enumerate()
            .map(|(p, &(_, bits))| bits << (8 * p))
            .sum()
    }

    /// Tiles of one set's passes (its first pass's tiles: the later passes have at most as many
    /// entries).
    pub fn tiles(&self, sets: &BucketSets) -> usize {
        self.tiles_per_window * sets.copies as usize
    }

    /// Words of a pass's published counts: the tiles' ticket, then a word per tile and digit
    /// of the widest pass.
    pub fn slots(&self, sets: &BucketSets) -> usize {
        (1usize << self.max_bits()) * self.tiles(sets) + 1
    }

    /// The widest pass.
    pub fn max_bits(&self) -> u32 {
        self.passes.iter().map(|p| p.1).max().unwrap_or(0)
    }
}

/// How one Pippenger chunk sorts its entries: the configured sort where its plan exists, else
/// the counting sort with global atomics.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChunkSort {
    /// `MsmSort::Atomic`, and the fallback.
    Atomic,
    /// `MsmSort::TwoLevel` with its bins.
    TwoLevel(SortPlan),
    /// `MsmSort::Radix` with its passes.
    Radix(RadixPlan),
}

impl ChunkSort {
    /// The sort of a chunk of `n` points in `sets` under `sort`.
    pub fn of(sort: MsmSort, n: usize, sets: &BucketSets) -> Self {
        let plan = match sort {
            MsmSort::Atomic => None,
            MsmSort::TwoLevel => SortPlan::new(sets.sets, sets.plan.nb).map(ChunkSort::TwoLevel),
            MsmSort::Radix => RadixPlan::new(n, sets).map(ChunkSort::Radix),
        };
        plan.unwrap_or(ChunkSort::Atomic)
    }
}

/// Several MSMs of the same windows through one Pippenger chunk (`SparseTails::Together`: the
/// tails of a partition's sparse G1 queries): their bases side by side (MSM k's points after
/// those of the MSMs before it), each its own scalars; one radix sort, one accumulation, one
/// bucket reduction and one window combination over all their bucket sets (MSM k's after
/// those of the MSMs before it), and one sum per MSM.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MsmBatch {
    /// Each MSM's bucket sets: the windows for its largest MSM's points, one set a window.
    pub sets: BucketSets,
    /// Each MSM's points (none zero), in the order of their bases.
    pub points: Vec<usize>,
    /// The radix sort of the largest MSM: every MSM's passes, and the tiles every pass runs
    /// (each MSM's first pass reads [`RadixPlan::window_tiles`] of its own points).
    pub radix: RadixPlan,
}

impl MsmBatch {
    /// The batch of MSMs of `points` points each, or `None` where one sort cannot hold them:
    /// no MSM or an empty one, an MSM larger than one chunk of `max_chunk` points, more entries
    /// in all than 32 bits count, or a sort other than the radix sort (the only one that
    /// sorts several MSMs at once) under `sort` or for one of them.
    pub fn new(points: &[usize], sort: MsmSort, max_chunk: usize) -> Option<Self> {
        let largest = points.iter().copied().max()?;
        if sort != MsmSort::Radix || points.contains(&0) || largest > max_chunk {
            return None;
        }
        let sets = BucketSets::plain(WindowPlan::for_points(largest));
        let total: u64 = points.iter().map(|&n| n as u64).sum();
        if total * u64::from(sets.plan.nw) > u64::from(u32::MAX) {
            return None;
        }
        // the largest MSM's plan holds the others: the same passes and histogram, more tiles
        let radix = RadixPlan::new(largest, &sets)?;
        Some(MsmBatch {
            sets,
            points: points.to_vec(),
            radix,
        })
    }

    /// Points of every MSM together.
    pub fn total_points(&self) -> usize {
        self.points.iter().sum()
    }

    /// Bucket sets of every MSM together.
    pub fn all_sets(&self) -> u32 {
        self.sets.sets * self.points.len() as u32
    }

    /// The sets the accumulation walks: every MSM's, each with at most the largest MSM's
    /// entries.
    pub fn shape(&self) -> SetsShape {
        SetsShape {
            sets: self.all_sets() as usize,
            nb: self.sets.plan.nb as usize,
            set_entries: self.points.iter().copied().max().unwrap_or(0) * self.sets.copies as usize,
        }
    }
}

/// The bucket sets a chunk's accumulation walks (`msm::affine`): `sets` sets of `nb` buckets,
/// each holding at most `set_entries` entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetsShape {
    /// Bucket sets.
    pub sets: usize,
    /// Buckets a set.
    pub nb: usize,
    /// Entries a set holds at most.
    pub set_entries: usize,
}

impl SetsShape {
    /// The sets of one MSM of `n` points in `sets`.
    pub fn of(n: usize, sets: &BucketSets) -> Self {
        SetsShape {
            sets: sets.sets as usize,
            nb: sets.plan.nb as usize,
            set_entries: n * sets.copies as usize,
        }
    }
}

/// The windows of a Pippenger chunk grouped into bucket sets: window w's digits go to set
/// w / copies with the bases' copy w % copies, copy k holding 2^(k c) times each base (see
/// [`Precomputation`]). Without precomputed copies every window is its own set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BucketSets {
    /// The windows.
    pub plan: WindowPlan,
    /// Copies of the bases the windows of one set use (1: none precomputed).
    pub copies: u32,
    /// Bucket sets: ceil(nw / copies).
    pub sets: u32,
}

impl BucketSets {
    /// One set per window (bases without copies).
    pub fn plain(plan: WindowPlan) -> Self {
        BucketSets {
            plan,
            copies: 1,
            sets: plan.nw,
        }
    }

    /// The sets over the copies of `pre`.
    pub fn precomputed(pre: &Precomputation) -> Self {
        let plan = WindowPlan::with_window(pre.window);
        BucketSets {
            plan,
            copies: pre.copies,
            sets: plan.nw.div_ceil(pre.copies),
        }
    }

    /// Buckets in all.
    pub fn buckets(&self) -> usize {
        self.sets as usize * self.plan.nb as usize
    }

    /// Bits between the results of consecutive sets (their Horner shift).
    pub fn shift(&self) -> u32 {
        self.plan.c * self.copies
    }
}

/// Points from which a plain chunk lays out its windows as [`MsmWindows`] says.
pub const WIDE_CHUNK_POINTS: usize = 1 << 27;

/// The windows of a Pippenger chunk: one layout of bucket sets, or the scalars' bits split
/// between two MSMs over the same bases.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChunkWindows {
    /// Every window through one layout of bucket sets.
    Uniform(BucketSets),
    /// `low`'s windows over the scalars' low [`ChunkWindows::high_bit`] bits (the carry of
    /// their top signed digit dropped), `high`'s over the scalars shifted right by that many
    /// bits plus that carry (`msm_scalars_high`); the MSM is low + 2^bit high.
    Split {
        /// The low windows.
        low: BucketSets,
        /// The high windows.
        high: BucketSets,
    },
}

impl ChunkWindows {
    /// The windows of a plain chunk of `n` points under `windows`.
    pub fn plain(n: usize, windows: MsmWindows) -> Self {
        let uniform = |plan| ChunkWindows::Uniform(BucketSets::plain(plan));
        if n < WIDE_CHUNK_POINTS {
            return uniform(WindowPlan::for_points(n));
        }
        match windows {
            MsmWindows::Uniform => uniform(WindowPlan::for_points(n)),
            MsmWindows::Wide => uniform(WindowPlan::with_window(22)),
            MsmWindows::Split => ChunkWindows::split(21, 8),
        }
    }

    /// `low_nw` windows of `c` bits, then as many of c + 1 bits as the rest of the scalars'
    /// [`SCALAR_BITS`] take.
    pub fn split(c: u32, low_nw: u32) -> Self {
        let windows = |c: u32, nw: u32| {
            BucketSets::plain(WindowPlan {
                c,
                nw,
                nb: 1 << (c - 1),
            })
        };
        ChunkWindows::Split {
            low: windows(c, low_nw),
            high: windows(c + 1, (SCALAR_BITS - c * low_nw).div_ceil(c + 1)),
        }
    }

    /// The first bit of the high windows (the scalars' bits the low windows cover); 0 when
    /// uniform.
    pub fn high_bit(&self) -> u32 {
        match self {
            ChunkWindows::Uniform(_) => 0,
            ChunkWindows::Split { low, .. } => low.plan.c * low.plan.nw,
        }
    }

    /// The layouts, low windows first.
    pub fn parts(&self) -> impl Iterator<Item = &BucketSets> {
        let (a, b) = match self {
            ChunkWindows::Uniform(s) => (s, None),
            ChunkWindows::Split { low, high } => (low, Some(high)),
        };
        std::iter::once(a).chain(b)
    }

    /// Windows in all.
    pub fn windows(&self) -> u32 {
        self.parts().map(|s| s.plan.nw).sum()
    }

    /// The widest window.
    pub fn widest(&self) -> u32 {
        self.parts().map(|s| s.plan.c).max().unwrap_or(0)
    }
}

/// Widest window of a precomputed MSM (its bucket set must sort in two levels).
pub const PRECOMPUTE_MAX_WINDOW: u32 = 24;
/// Narrowest window of a precomputed MSM.
pub const PRECOMPUTE_MIN_WINDOW: u32 = 16;

/// Fixed-base precomputation of a query's bases: `copies` copies, copy k holding 2^(k window)
/// times every base, so that an MSM over them has ceil(nw / copies) bucket sets to reduce
/// instead of nw, and can afford wider windows (fewer windows, fewer bucket additions). The
/// bases of a proving key are fixed: the copies are computed once per parameter set and device
/// and cost `copies` times the query's memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Precomputation {
    /// Window bits the copies were made for.
    pub window: u32,
    /// Copies, the bases themselves included (at least 2).
    pub copies: u32,
}

impl Precomputation {
    /// Bytes of the copies of a query of `points` bases (96 bytes per G1 point and copy).
    pub fn bytes(&self, points: usize) -> u64 {
        u64::from(self.copies) * points as u64 * 4 * crate::abi::AFFINE_WORDS as u64
    }

    /// Modelled cost of one chunk of `n` points, in bucket additions: n per window, and about
    /// 3 per bucket in the reduction (two full additions).
    pub fn cost(n: usize, sets: &BucketSets) -> u64 {
        n as u64 * u64::from(sets.plan.nw) + 3 * sets.buckets() as u64
    }

    /// The copies and window that model cheapest for MSMs of chunks of `chunk` points over a
    /// query of `points` bases, within `bytes_available` bytes for the copies (the bases
    /// included); `None` when no precomputation models cheaper than the plain plan of
    /// `WindowPlan::for_points(chunk)` or not even two copies fit.
    pub fn plan(points: usize, chunk: usize, bytes_available: u64) -> Option<Self> {
        let plain = BucketSets::plain(WindowPlan::for_points(chunk));
        let mut best: Option<(u64, Precomputation)> = None;
        for window in PRECOMPUTE_MIN_WINDOW..=PRECOMPUTE_MAX_WINDOW {
            let nw = WindowPlan::with_window(window).nw;
            for copies in 2..=nw {
                let pre = Precomputation { window, copies };
                // entries name point + copy * points in 31 bits
                if pre.bytes(points) > bytes_available
                    || u64::from(copies) * points as u64 >= 1 << 31
                {
                    break;
                }
                let cost = Self::cost(chunk, &BucketSets::precomputed(&pre));
                if best.is_none_or(|(c, _)| cost < c) {
                    best = Some((cost, pre));
                }
            }
        }
        best.filter(|(c, _)| *c < Self::cost(chunk, &plain))
            .map(|(_, p)| p)
    }
}

/// Smallest big-bucket threshold.
pub const BIG_BUCKET_MIN: u32 = 64;
/// Fewest sorted entries per thread of the balanced bucket accumulation.
pub const ACC_MIN_PER_THREAD: usize = 16;
/// Number of full waves of resident threads of the accumulation (4
/// measured 2-3 % faster than 1 or 2 on the H200, no different from 8).
pub const ACC_WAVES: u32 = 4;

/// Work split of the balanced bucket accumulation (`msm_bucket_acc`): the
/// sorted entries are cut into `threads` ranges of `per_thread` entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccSplit {
    /// threads launched (a multiple of [`ACC_THREADS`] is not required)
    pub threads: u32,
    /// sorted entries per thread
    pub per_thread: u32,
    /// buckets with more points go to the big-bucket kernels: 32 ranges'
    /// worth, so that the fix-up chain of a bucket stays short
    pub big: u32,
    /// upper bound on the number of big buckets
    pub big_cap: usize,
}

impl AccSplit {
    /// Split of `entries` sorted entries over `buckets` buckets for a GPU with
    /// `slots` resident accumulation threads, in about `waves` waves.
    pub fn new(entries: usize, buckets: usize, slots: u32, waves: u32) -> Self {
        let target = (slots.max(1) as usize) * (waves.max(1) as usize);
        let threads = entries.div_ceil(ACC_MIN_PER_THREAD).clamp(1, target);
        let per_thread = entries.div_ceil(threads).max(1);
        let big = (32 * per_thread).clamp(BIG_BUCKET_MIN as usize, u32::MAX as usize / 2);
        AccSplit {
            threads: threads as u32,
            per_thread: per_thread as u32,
            big: big as u32,
            big_cap: (entries / (big + 1) + 1).min(buckets.max(1)),
        }
    }
}

/// Entries (points times windows) one group of bucket sets covers in the batch-affine rounds
/// (`MsmAcc::BatchAffine`) of G1: a chunk's sets go through the rounds in groups of at most this
/// many entries (at least one set), which bounds the rounds' scratch (about 72 bytes per entry of
/// G1) and amortises their inversions (one per round per group).
pub const AFFINE_GROUP_ENTRIES: usize = 1 << 27;
/// The same for G2, whose points are twice as large: the same scratch.
pub const AFFINE_GROUP_ENTRIES_G2: usize = 1 << 26;

/// Threads of one batch-affine round: one wave (`blocks_per_sm` blocks of AFF_THREADS per
/// multiprocessor, as the rounds' kernels are bounded), at most [`AFF_INV_MAX`], in whole warps.
pub fn affine_threads(sm_count: u32, blocks_per_sm: u32) -> usize {
    let wave = sm_count.max(1) * blocks_per_sm.max(1) * AFF_THREADS;
    (wave.min(AFF_INV_MAX) / 32 * 32) as usize
}

/// One group of bucket sets in the batch-affine rounds: its buckets and the capacities of its
/// two point buffers (rounds alternate between them, the first round writes the first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AffineGroup {
    /// Bucket sets in the group.
    pub sets: usize,
    /// Buckets in the group.
    pub buckets: usize,
    /// Points each buffer holds at most.
    pub caps: [usize; 2],
}

impl AffineGroup {
    /// Sets per group for `sets` bucket sets of at most `set_entries` entries each, in groups of
    /// at most `group_entries` entries.
    pub fn sets_per_group(sets: usize, set_entries: usize, group_entries: usize) -> usize {
        (group_entries / set_entries.max(1)).clamp(1, sets.max(1))
    }

    /// A group of `sets` sets of `nb` buckets and at most `set_entries` entries each. A round
    /// leaves ceil(s / 2) of a bucket's s points: from E entries over B buckets at most
    /// (E + B) / 2, and from at most caps[0] (with B <= caps[0]) at most caps[1], whose next
    /// round fits caps[0] again.
    pub fn new(sets: usize, set_entries: usize, nb: usize) -> Self {
        let buckets = sets * nb;
        let first = ((sets * set_entries + buckets) / 2 + 1).max(buckets);
        AffineGroup {
            sets,
            buckets,
            caps: [first, (first + buckets) / 2 + 1],
        }
    }

    /// Capacity of the buffer round `r` (from 0) writes.
    pub fn cap(&self, r: usize) -> usize {
        self.caps[r % 2]
    }
}

/// How a sparse query's ones are summed by batch-affine rounds: in groups of at most `entries`
/// points, each a single bucket halved round after round until at most `left` points are left
/// for the XYZZ accumulation. A round has a fixed cost (its batched inversion's single-thread
/// root, five launches: ~0.24 ms on an H200) and saves a fraction of an XYZZ addition per
/// point, so rounds pay only over millions of points; each curve sets its own
/// (`curve::AffineKernels::ones`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OnesRounds {
    /// Points per group.
    pub entries: usize,
    /// Points left to the XYZZ accumulation at most.
    pub left: usize,
}

impl OnesRounds {
    /// The group of `count` points (at most `entries`).
    pub fn group(&self, count: usize) -> OnesGroup {
        let mut sizes = vec![count];
        let left = self.left.max(1);
        while let Some(&s) = sizes.last().filter(|&&s| s > left) {
            sizes.push(s.div_ceil(2));
        }
        let cap = |r: usize| sizes.get(r).copied().unwrap_or(0);
        let caps = [cap(1), cap(2)];
        OnesGroup { sizes, caps }
    }
}

/// One group of [`OnesRounds`]: every size is known in advance (a round leaves ceil(s / 2) of
/// s points), so the rounds run without reading anything back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OnesGroup {
    /// The bucket's size before each round, then after the last.
    pub sizes: Vec<usize>,
    /// Points each of the two round buffers holds at most (rounds alternate, the first writes
    /// the first).
    pub caps: [usize; 2],
}

impl OnesGroup {
    /// Batch-affine rounds.
    pub fn rounds(&self) -> usize {
        self.sizes.len() - 1
    }

    /// Points the rounds leave.
    pub fn left(&self) -> usize {
        self.sizes[self.sizes.len() - 1]
    }
}

/// Work split of the big buckets: for sizes s_j, block b handles part
/// blk_part[b] of bucket blk_bucket[b]; bucket j's partials are
/// [first[j], first[j] + count[j]).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct BigSplit {
    /// bucket (index into the big list) of each block
    pub blk_bucket: Vec<u32>,
    /// part of the bucket of each block
    pub blk_part: Vec<u32>,
    /// first partial of each big bucket
    pub first: Vec<u32>,
    /// partials of each big bucket
    pub count: Vec<u32>,
}

/// Splits big buckets of the given sizes into blocks of `per_block` points.
pub fn split_big(sizes: &[u32], per_block: u32) -> BigSplit {
    let mut s = BigSplit::default();
    for (j, &size) in sizes.iter().enumerate() {
        let blocks = size.div_ceil(per_block).max(1);
        s.first.push(s.blk_bucket.len() as u32);
        s.count.push(blocks);
        for p in 0..blocks {
            s.blk_bucket.push(j as u32);
            s.blk_part.push(p);
        }
    }
    s
}

/// Canonical (non-Montgomery) little-endian u64 limbs of a scalar.
pub fn canonical_limbs(s: &Scalar) -> [u64; 4] {
    let b = s.to_bytes_le();
    let mut l = [0u64; 4];
    for (i, x) in l.iter_mut().enumerate() {
        let mut w = [0u8; 8];
        w.copy_from_slice(&b[8 * i..8 * i + 8]);
        *x = u64::from_le_bytes(w);
    }
    l
}

/// Signed c-bit digits, exactly as `msm_digits` in cuda/msm.cu computes them:
/// d in [-2^(c-1), 2^(c-1)], sum d_w 2^(c w) = s.
pub fn signed_digits(limbs: &[u64; 4], plan: &WindowPlan) -> Vec<i64> {
    let c = plan.c;
    let mut out = Vec::with_capacity(plan.nw as usize);
    let mut carry = 0u64;
    for w in 0..plan.nw {
        let off = w * c;
        let mut bits = 0u64;
        for b in 0..c {
            let pos = off + b;
            if pos < 256 && (limbs[(pos / 64) as usize] >> (pos % 64)) & 1 == 1 {
                bits |= 1 << b;
            }
        }
        let d = bits + carry;
        if d > u64::from(plan.nb) {
            out.push(d as i64 - (1i64 << c));
            carry = 1;
        } else {
            out.push(d as i64);
            carry = 0;
        }
    }
    out
}

/// Host-side combination of per-window sums: sum_w 2^(c w) R_w (Horner).
pub fn combine_windows<G: Group>(windows: &[G], c: u32) -> G {
    let mut acc = G::identity();
    for r in windows.iter().rev() {
        for _ in 0..c {
            acc = acc.double();
        }
        acc += r;
    }
    acc
}

/// One fused NTT pass: radix-2 stages [s_lo, s_lo + t) over tiles of
/// 2^t x 2^lg_l elements (see cuda/ntt.cu).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NttPass {
    /// first stage
    pub s_lo: u32,
    /// stages in this pass
    pub t: u32,
    /// log2 of consecutive low indices per tile
    pub lg_l: u32,
    /// top index bits the tile also spans (only in the first pass, s_lo = 0,
    /// of a plan for a DIF whose last pass writes bit-reversed)
    pub hb: u32,
}

/// Largest number of stages fused in a pass after the first one (tiles keep
/// at least 4 consecutive low indices, i.e. 128-byte runs).
pub const NTT_MAX_LATER_STAGES: u32 = 8;

/// Top index bits of the bit-reversing pass's tiles (runs of 4 consecutive
/// outputs, 128 bytes, per warp store instead of scattered 32-byte writes).
pub const NTT_BITREV_TOP_BITS: u32 = 2;

/// Passes (in increasing stage order) that cover all log_n stages: the first
/// pass takes up to 10 stages on contiguous tiles; the rest are split into
/// the fewest passes of at most [`NTT_MAX_LATER_STAGES`] stages, balanced, and
/// each tile is filled to 2^10 elements with consecutive low indices.
pub fn ntt_passes(log_n: u32) -> Vec<NttPass> {
    ntt_passes_with(log_n, 0)
}

/// The plan of a DIF whose last pass (stages 0..) writes bit-reversed: above
/// one tile, that pass takes 10 - [`NTT_BITREV_TOP_BITS`] stages and spans the
/// top [`NTT_BITREV_TOP_BITS`] index bits too (see `hb` in cuda/ntt.cu).
pub fn ntt_passes_bitrev(log_n: u32) -> Vec<NttPass> {
    if log_n <= NTT_TILE_LOG {
        ntt_passes(log_n)
    } else {
        ntt_passes_with(log_n, NTT_BITREV_TOP_BITS)
    }
}

fn ntt_passes_with(log_n: u32, hb: u32) -> Vec<NttPass> {
    let mut v = Vec::new();
    let first = (NTT_TILE_LOG - hb).min(log_n);
    if first == 0 {
        return v;
    }
    v.push(NttPass {
        s_lo: 0,
        t: first,
        lg_l: 0,
        hb: hb.min(log_n - first),
    });
    let rest = log_n - first;
    if rest == 0 {
        return v;
    }
    let k = rest.div_ceil(NTT_MAX_LATER_STAGES);
    let mut s = first;
    for i in 0..k {
        let t = rest / k + u32::from(i < rest % k);
        let lg_l = s.min(NTT_TILE_LOG - t);
        v.push(NttPass {
            s_lo: s,
            t,
            lg_l,
            hb: 0,
        });
        s += t;
    }
    v
}

/// Split power tables: value(m) = lo[m & (2^lo_bits - 1)] * hi[m >> lo_bits]
/// = base^m for m < count.
pub struct PowTables {
    /// base^j, j < 2^lo_bits
    pub lo: Vec<Scalar>,
    /// base^(j 2^lo_bits)
    pub hi: Vec<Scalar>,
    /// bits of the low index
    pub lo_bits: u32,
}

/// (lo_bits, lo length, hi length) of the [`PowTables`] of `count` powers.
pub fn pow_table_lens(count: usize) -> (u32, usize, usize) {
    let count = count.max(1);
    let lo_bits = 12u32.min(usize::BITS - (count - 1).max(1).leading_zeros());
    let lo_len = 1usize << lo_bits;
    (lo_bits, lo_len, count.div_ceil(lo_len).max(1))
}

/// Build [`PowTables`] for base^m, m < count.
pub fn pow_tables(base: Scalar, count: usize) -> PowTables {
    let (lo_bits, lo_len, hi_len) = pow_table_lens(count);
    let mut lo = Vec::with_capacity(lo_len);
    let mut x = Scalar::ONE;
    for _ in 0..lo_len {
        lo.push(x);
        x *= base;
    }
    // x = base^(2^lo_bits)
    let mut hi = Vec::with_capacity(hi_len);
    let mut y = Scalar::ONE;
    for _ in 0..hi_len {
        hi.push(y);
        y *= x;
    }
    PowTables { lo, hi, lo_bits }
}

/// Primitive 2^log_n-th root of unity (blstrs ROOT_OF_UNITY squared down), the
/// same one bellperson's EvaluationDomain uses.
pub fn root_of_unity(log_n: u32) -> Scalar {
    let mut w = Scalar::ROOT_OF_UNITY;
    for _ in log_n..Scalar::S {
        w = w.square();
    }
    w
}

/// Coset generator (Fr multiplicative generator, 7).
pub fn coset_generator() -> Scalar {
    Scalar::MULTIPLICATIVE_GENERATOR
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_combination_fills_the_card_only_over_few_sets() {
        let w = |c| WindowPlan::with_window(c);
        for blocks in [CombineBlocks::PerSet, CombineBlocks::Fill] {
            // plain layouts of nine sets or more: 16 blocks a set either way
            for (c, sets) in [(20, 13), (16, 16), (16, 48), (21, 9)] {
                assert_eq!(
                    w(c).combine_groups(sets, blocks),
                    WINDOW_GROUPS,
                    "{c} x{sets}"
                );
            }
            // never more than a set's segments (a window of 8 bits has 8)
            assert_eq!(w(8).combine_groups(1, blocks), 8);
        }
        let fill = |c, sets| w(c).combine_groups(sets, CombineBlocks::Fill);
        // one set (a tail over copies; 12 copies of 22 bits) takes the whole total
        assert_eq!(fill(20, 1), COMBINE_BLOCKS);
        assert_eq!(fill(22, 1), COMBINE_BLOCKS);
        // a power of two a set within the total: 8 sets 32, 6 sets 32, 3 sets 64, 4 sets 64
        assert_eq!(fill(21, 8), 32);
        assert_eq!(fill(16, 6), 32);
        assert_eq!(fill(20, 3), 64);
        assert_eq!(fill(22, 4), 64);
        // a set of 2^15 buckets has 2048 segments: 256 blocks hold them
        assert_eq!(fill(16, 1), 256);
        assert_eq!(
            w(20).combine_groups(1, CombineBlocks::PerSet),
            WINDOW_GROUPS
        );
    }

    #[test]
    fn a_batch_holds_the_msms_one_radix_sort_can() {
        // a 32 GiB partition's G1 tails: 16-bit windows for the largest, one set a window
        let tails = [3_800_000, 2_900_000, 2_700_000];
        let b = MsmBatch::new(&tails, MsmSort::Radix, 1 << 26).expect("the tails fit one sort");
        assert_eq!(b.sets, BucketSets::plain(WindowPlan::with_window(16)));
        assert_eq!((b.total_points(), b.all_sets()), (9_400_000, 48));
        assert_eq!(
            b.shape(),
            SetsShape {
                sets: 48,
                nb: 1 << 15,
                set_entries: 3_800_000
            }
        );
        assert_eq!(
            b.radix,
            RadixPlan::new(3_800_000, &b.sets).expect("the largest fits")
        );
        assert_eq!(
            b.radix.tiles_per_window,
            3_800_000usize.div_ceil(RADIX_TILE as usize)
        );
        // what one sort cannot hold
        assert_eq!(MsmBatch::new(&[], MsmSort::Radix, 1 << 26), None);
        assert_eq!(MsmBatch::new(&[5, 0], MsmSort::Radix, 1 << 26), None);
        assert_eq!(MsmBatch::new(&tails, MsmSort::Atomic, 1 << 26), None);
        assert_eq!(MsmBatch::new(&tails, MsmSort::TwoLevel, 1 << 26), None);
        assert_eq!(MsmBatch::new(&tails, MsmSort::Radix, 1 << 21), None);
        // 13 windows of 2^26 points each: four MSMs' entries fit 32 bits, five do not
        assert!(MsmBatch::new(&[1 << 26; 4], MsmSort::Radix, 1 << 26).is_some());
        assert_eq!(MsmBatch::new(&[1 << 26; 5], MsmSort::Radix, 1 << 26), None);
    }

    #[test]
    fn radix_passes_cover_the_key_once_in_order() {
        // from 8 bits: at most 32 windows
        for c in 8..=22u32 {
            let sets = BucketSets::plain(WindowPlan::with_window(c));
            let r = RadixPlan::new(1 << 20, &sets).expect("windows fit");
            let mut next = 0;
            for &(shift, bits) in &r.passes {
                assert_eq!(shift, next, "c = {c}: {r:?}");
                assert!(bits <= RADIX_BITS && bits > 0, "c = {c}: {r:?}");
                next += bits;
            }
            assert_eq!(next, c - 1, "c = {c}: {r:?}");
            let widest = r.passes.iter().map(|p| p.1).max().unwrap_or(0);
            let narrowest = r.passes.iter().map(|p| p.1).min().unwrap_or(0);
            assert!(widest - narrowest <= 1, "c = {c}: {r:?}");
        }
        let c20 = RadixPlan::new(1 << 24, &BucketSets::plain(WindowPlan::with_window(20))).unwrap();
        assert_eq!(c20.passes, vec![(0, 7), (7, 6), (13, 6)]);
        assert_eq!(c20.tiles_per_window, (1 << 24) / RADIX_TILE as usize);
        assert_eq!(c20.set_bins(), 128 + 64 + 64);
        assert_eq!(c20.packed_bits(), 7 | 6 << 8 | 6 << 16);
        // 255 bits in windows of 7: 37 windows, more than a carry mask holds
        assert_eq!(
            RadixPlan::new(1 << 10, &BucketSets::plain(WindowPlan::with_window(7))),
            None
        );
        // the preparation's histogram: the precomputed copies' windows fit (few sets), 11
        // windows of 25 bits do not (11 x (256 + 256 + 256) counters)
        for (window, copies) in [(22, 12), (24, 6), (24, 4)] {
            let sets = BucketSets::precomputed(&Precomputation { window, copies });
            let r = RadixPlan::new(1 << 24, &sets).expect("histogram fits");
            assert!(sets.sets * r.set_bins() <= RADIX_HIST_MAX);
        }
        assert_eq!(
            RadixPlan::new(1 << 20, &BucketSets::plain(WindowPlan::with_window(25))),
            None
        );
        // a set's entries stay below the published words' count
        let copies = BucketSets::precomputed(&Precomputation {
            window: 24,
            copies: 6,
        });
        assert_eq!(RadixPlan::new(1 << 28, &copies), None);
    }

    #[test]
    fn ones_rounds_halve_to_what_is_left_and_fit_their_buffers() {
        let r = OnesRounds {
            entries: 1000,
            left: 40,
        };
        for count in [1usize, 2, 39, 40, 41, 81, 999, 1000] {
            let g = r.group(count);
            assert_eq!(g.sizes[0], count);
            assert!(g.left() <= 40 && g.left() >= 1, "{count}: {g:?}");
            for w in g.sizes.windows(2) {
                assert_eq!(w[1], w[0].div_ceil(2));
            }
            // round k writes buffer k % 2, which must hold its output
            for k in 0..g.rounds() {
                assert!(g.caps[k % 2] >= g.sizes[k + 1], "{count}: {g:?}");
            }
        }
        assert_eq!(r.group(40).rounds(), 0);
        assert_eq!(r.group(1000).sizes, vec![1000, 500, 250, 125, 63, 32]);
        let d = OnesRounds {
            entries: 1 << 25,
            left: 1 << 22,
        }
        .group(60_000_000 / 2);
        assert_eq!((d.rounds(), d.left()), (3, 3_750_000));
    }
    use blstrs::G1Projective;
    use rand_chacha::rand_core::SeedableRng;

    /// Every round of every group fits the buffer it writes, for bucket sizes from all-odd to
    /// one giant bucket, and the groups cover the sets.
    #[test]
    fn affine_rounds_fit_their_buffers() {
        use rand_chacha::rand_core::RngCore;
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(5);
        for (sets, set_entries, nb) in [
            (13usize, 1usize << 20, 1usize << 15),
            (4, 37, 128),
            (1, 1, 1),
        ] {
            let per = AffineGroup::sets_per_group(sets, set_entries, AFFINE_GROUP_ENTRIES);
            assert!(per >= 1 && per <= sets);
            assert!(per == 1 || per * set_entries <= AFFINE_GROUP_ENTRIES);
            let grp = AffineGroup::new(per, set_entries, nb);
            let entries = per * set_entries;
            let shapes: Vec<Vec<usize>> = vec![
                // as many odd buckets as the entries allow, the rest in bucket 0
                {
                    let mut v = vec![0usize; grp.buckets];
                    v.iter_mut().take(entries).for_each(|c| *c = 1);
                    v[0] += entries.saturating_sub(grp.buckets);
                    v
                },
                // one giant bucket
                {
                    let mut v = vec![0usize; grp.buckets];
                    v[grp.buckets - 1] = entries;
                    v
                },
                // random sizes summing to at most the entries
                {
                    let mut v = vec![0usize; grp.buckets];
                    for _ in 0..entries {
                        v[rng.next_u32() as usize % grp.buckets] += 1;
                    }
                    v
                },
            ];
            for mut counts in shapes {
                assert!(counts.iter().sum::<usize>() <= entries);
                for r in 0..8 {
                    counts.iter_mut().for_each(|c| *c = c.div_ceil(2));
                    let total: usize = counts.iter().sum();
                    assert!(total <= grp.cap(r), "round {r}: {total} > {}", grp.cap(r));
                }
            }
        }
        // an H200's whole wave fits the inversion
        assert_eq!(
            affine_threads(132, AFF_BLOCKS_PER_SM),
            (132 * AFF_BLOCKS_PER_SM * AFF_THREADS) as usize
        );
        // more multiprocessors than the inversion takes threads: capped at what it takes
        assert_eq!(
            affine_threads(1000, AFF_BLOCKS_PER_SM),
            AFF_INV_MAX as usize
        );
        assert_eq!(
            affine_threads(2, AFF_BLOCKS_PER_SM),
            (2 * AFF_BLOCKS_PER_SM * AFF_THREADS) as usize
        );
    }

    #[test]
    fn digits_recompose() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(1);
        for c in MIN_WINDOW..=MAX_WINDOW {
            let plan = WindowPlan::with_window(c);
            assert!(plan.nw * plan.c >= SCALAR_BITS);
            let mut samples: Vec<Scalar> = (0..50).map(|_| Scalar::random(&mut rng)).collect();
            samples.push(Scalar::ZERO);
            samples.push(Scalar::ONE);
            samples.push(-Scalar::ONE);
            for s in samples {
                let d = signed_digits(&canonical_limbs(&s), &plan);
                assert_eq!(d.len(), plan.nw as usize);
                let mut acc = Scalar::ZERO;
                let radix = Scalar::from(1u64 << c);
                for x in d.iter().rev() {
                    assert!(x.unsigned_abs() <= u64::from(plan.nb));
                    acc *= radix;
                    let m = Scalar::from(x.unsigned_abs());
                    acc += if *x < 0 { -m } else { m };
                }
                assert_eq!(acc, s, "c = {c}");
            }
        }
    }

    #[test]
    fn sort_plans_fit_shared_memory_and_cover_every_bucket() {
        for sets in [1u32, 2, 7, 13, 16, 32] {
            for lg_nb in 0..24 {
                let nb = 1u32 << lg_nb;
                match SortPlan::new(sets, nb) {
                    Some(p) => {
                        assert!(p.bins <= SORT_BINS_MAX && p.fine_bits <= SORT_FINE_BITS_MAX);
                        assert_eq!(p.coarse << p.fine_bits, nb);
                        assert_eq!(p.bins, sets * p.coarse);
                        // enough fine-pass blocks where the limit allows
                        if p.fine_bits > 0 {
                            assert!(
                                p.bins >= SORT_BINS_TARGET
                                    || sets * (nb >> (p.fine_bits - 1)) > SORT_BINS_MAX
                            );
                        }
                    }
                    // only when the coarse bins cannot fit
                    None => assert!(
                        u64::from(sets) * u64::from(nb >> SORT_FINE_BITS_MAX.min(lg_nb))
                            > u64::from(SORT_BINS_MAX)
                    ),
                }
            }
        }
        // every window plan of the dense MSM sorts in two levels (c = 20: 13 x 256 bins)
        for c in MIN_WINDOW..=MAX_WINDOW {
            let w = WindowPlan::with_window(c);
            assert!(SortPlan::new(w.nw, w.nb).is_some(), "c = {c}");
        }
        assert_eq!(
            SortPlan::new(13, 1 << 19),
            Some(SortPlan {
                fine_bits: 12,
                coarse: 128,
                bins: 1664
            })
        );
        assert_eq!(SortPlan::tiles(1), 1);
        assert_eq!(SortPlan::tiles((SORT_TILE as usize) + 1), 2);
    }

    #[test]
    fn precomputation_plans_fit_their_memory_and_pay() {
        let n = 1usize << 24;
        let one_copy = 96 * n as u64;
        // under two copies: nothing
        assert_eq!(Precomputation::plan(n, n, one_copy), None);
        assert_eq!(Precomputation::plan(n, n, 2 * one_copy - 1), None);
        let plain = Precomputation::cost(n, &BucketSets::plain(WindowPlan::for_points(n)));
        let mut last = plain;
        for copies in 2..=14u64 {
            let p = Precomputation::plan(n, n, copies * one_copy).expect("a plan");
            assert!(p.bytes(n) <= copies * one_copy && p.copies >= 2);
            assert!((PRECOMPUTE_MIN_WINDOW..=PRECOMPUTE_MAX_WINDOW).contains(&p.window));
            let sets = BucketSets::precomputed(&p);
            assert!(p.copies <= sets.plan.nw);
            // every precomputed plan sorts in two levels, and more memory never costs more
            assert!(SortPlan::new(sets.sets, sets.plan.nb).is_some());
            let cost = Precomputation::cost(n, &sets);
            assert!(cost < plain && cost <= last, "{copies} copies: {p:?}");
            last = cost;
        }
        // with every window precomputed: one bucket set, 12 % fewer bucket additions at least
        let full = Precomputation::plan(n, n, 14 * one_copy).expect("a plan");
        assert_eq!(BucketSets::precomputed(&full).sets, 1);
        assert!(last * 100 <= plain * 88, "{last} vs {plain}");
        // entries stay within 31 bits
        let h = (1usize << 27) - 1;
        let p = Precomputation::plan(h, 1 << 26, u64::MAX).expect("a plan");
        assert!(u64::from(p.copies) * (h as u64) < 1 << 31);
    }

    #[test]
    fn bucket_sets_group_windows() {
        let plain = BucketSets::plain(WindowPlan::with_window(20));
        assert_eq!((plain.sets, plain.copies, plain.shift()), (13, 1, 20));
        let p = BucketSets::precomputed(&Precomputation {
            window: 22,
            copies: 5,
        });
        // 12 windows in sets of 5: 3 sets, 110 bits apart
        assert_eq!((p.plan.nw, p.sets, p.shift()), (12, 3, 110));
        assert_eq!(p.buckets(), 3 << 21);
    }

    #[test]
    fn big_split() {
        let s = split_big(&[100, 2048, 2049, 5000], 2048);
        assert_eq!(s.count, vec![1, 1, 2, 3]);
        assert_eq!(s.first, vec![0, 1, 2, 4]);
        assert_eq!(s.blk_bucket, vec![0, 1, 2, 2, 3, 3, 3]);
        assert_eq!(s.blk_part, vec![0, 0, 0, 1, 0, 1, 2]);
    }

    #[test]
    fn accumulation_split_covers_every_entry() {
        let slots = 132 * ACC_THREADS * ACC_BLOCKS_PER_SM;
        for entries in [0usize, 1, 15, 16, 17, 1000, 13 << 24, (13 << 26) + 7] {
            let a = AccSplit::new(entries, 13 << 19, slots, ACC_WAVES);
            let t = a.threads as usize;
            let l = a.per_thread as usize;
            assert!(t >= 1 && t <= (slots * ACC_WAVES) as usize);
            // the ranges cover every entry, and at most one range's worth of
            // threads at the end has nothing to do
            assert!(t * l >= entries, "{entries}: {t} x {l}");
            assert!(t * l - entries <= t.max(l), "{entries}: {t} x {l}");
            assert!(entries < ACC_MIN_PER_THREAD * t || l >= ACC_MIN_PER_THREAD);
            assert!(a.big >= BIG_BUCKET_MIN && a.big as usize >= 32 * l);
            // there cannot be more big buckets than the capacity
            assert!(a.big_cap >= (entries / (a.big as usize + 1)).min(13 << 19));
        }
    }

    #[test]
    fn window_sizing() {
        assert_eq!(WindowPlan::for_points(1).c, MIN_WINDOW);
        assert_eq!(WindowPlan::for_points(1 << 16).c, 12);
        assert_eq!(WindowPlan::for_points(1 << 21).c, 16);
        assert_eq!(WindowPlan::for_points(1 << 22).c, 16);
        assert_eq!(WindowPlan::for_points((1 << 24) - 1).c, 16);
        assert_eq!(WindowPlan::for_points(1 << 24).c, 20);
        assert_eq!(WindowPlan::for_points(1 << 27).c, 20);
        for n in [1usize, 100, 1 << 10, 1 << 20, 1 << 26] {
            let p = WindowPlan::for_points(n);
            assert_eq!(p.segments() * p.segment_len(), p.nb);
        }
    }

    #[test]
    fn largest_chunks_lay_out_their_windows_by_the_variant() {
        let bits = |w: &ChunkWindows| -> u32 { w.parts().map(|s| s.plan.c * s.plan.nw).sum() };
        // below the threshold every variant keeps the size's uniform windows
        for v in [MsmWindows::Uniform, MsmWindows::Wide, MsmWindows::Split] {
            let w = ChunkWindows::plain(WIDE_CHUNK_POINTS - 1, v);
            assert_eq!(
                w,
                ChunkWindows::Uniform(BucketSets::plain(WindowPlan::with_window(20)))
            );
        }
        let n = WIDE_CHUNK_POINTS;
        let uniform = ChunkWindows::plain(n, MsmWindows::Uniform);
        let wide = ChunkWindows::plain(n, MsmWindows::Wide);
        let split = ChunkWindows::plain(n, MsmWindows::Split);
        assert_eq!((uniform.windows(), uniform.widest()), (13, 20));
        assert_eq!((wide.windows(), wide.widest()), (12, 22));
        assert_eq!(
            (split.windows(), split.widest(), split.high_bit()),
            (12, 22, 168)
        );
        let buckets = |w: &ChunkWindows| -> usize { w.parts().map(|s| s.buckets()).sum() };
        assert_eq!(buckets(&split), (8 << 20) + (4 << 21));
        assert_eq!(3 * buckets(&split), 2 * buckets(&wide));
        for w in [uniform, wide, split] {
            // the signed digits' top carry fits: at least SCALAR_BITS in all, and each part
            // sorts by radix at this size
            assert!(bits(&w) >= SCALAR_BITS, "{w:?}");
            for sets in w.parts() {
                assert!(RadixPlan::new(n, sets).is_some(), "{w:?}");
            }
        }
        // the high part of any split covers what its low part leaves
        for c in MIN_WINDOW..=MAX_WINDOW {
            for low_nw in 1..SCALAR_BITS / c {
                let w = ChunkWindows::split(c, low_nw);
                assert_eq!(w.high_bit(), c * low_nw);
                assert!(bits(&w) >= SCALAR_BITS && bits(&w) < SCALAR_BITS + c + 1);
            }
        }
    }

    #[test]
    fn ntt_pass_plan_covers_all_stages() {
        for log_n in 1..=28 {
            for (p, bitrev) in [(ntt_passes(log_n), false), (ntt_passes_bitrev(log_n), true)] {
                let mut s = 0;
                for (i, pass) in p.iter().enumerate() {
                    assert_eq!(pass.s_lo, s);
                    assert!(pass.lg_l <= pass.s_lo);
                    assert!(pass.t + pass.lg_l + pass.hb <= NTT_TILE_LOG);
                    assert!(pass.t >= 1);
                    // top batch bits: first pass of a bit-reversing plan only,
                    // untouched by that pass's stages
                    if pass.hb > 0 {
                        assert!(bitrev && i == 0 && pass.lg_l == 0);
                        assert!(pass.t + pass.hb <= log_n);
                    }
                    s += pass.t;
                }
                assert_eq!(s, log_n);
            }
        }
        assert_eq!(ntt_passes_bitrev(24).len(), 3);
        assert_eq!(ntt_passes_bitrev(24)[0].hb, NTT_BITREV_TOP_BITS);
        assert!(ntt_passes_bitrev(24)
            .iter()
            .all(|p| p.t + p.lg_l + p.hb == NTT_TILE_LOG));
        assert_eq!(ntt_passes(24).len(), 3);
        assert_eq!(ntt_passes(27).len(), 4);
        assert!(ntt_passes(27).iter().all(|p| p.t + p.lg_l == NTT_TILE_LOG));
    }

    #[test]
    fn pow_tables_match() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(2);
        let base = Scalar::random(&mut rng);
        for count in [1usize, 2, 3, 4096, 5000, 1 << 14] {
            let t = pow_tables(base, count);
            for m in [0usize, 1, count / 2, count - 1] {
                let v = t.lo[m & ((1 << t.lo_bits) - 1)] * t.hi[m >> t.lo_bits];
                assert_eq!(v, base.pow_vartime([m as u64]));
            }
        }
    }

    #[test]
    fn roots() {
        let w = root_of_unity(10);
        assert_eq!(w.pow_vartime([1u64 << 10]), Scalar::ONE);
        assert_ne!(w.pow_vartime([1u64 << 9]), Scalar::ONE);
        assert_eq!(coset_generator(), Scalar::from(7u64));
    }

    #[test]
    fn horner_combination() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(3);
        let ws: Vec<G1Projective> = (0..5).map(|_| G1Projective::random(&mut rng)).collect();
        let c = 13;
        let got = combine_windows(&ws, c);
        let mut want = G1Projective::identity();
        for (i, w) in ws.iter().enumerate() {
            let k = Scalar::from(2u64).pow_vartime([u64::from(c) * i as u64]);
            want += w * k;
        }
        assert_eq!(got, want);
    }
}
