//! Device bytes of each GPU stage, from its shapes: what the partition driver asks the allocator
//! for, and what the stage's arena then allows. Each formula follows the host code of
//! `ntt.rs`, `msm/`, `resident.rs` and `stages.rs` phase by phase (every buffer is charged
//! in [`GRANULE`](crate::arena::GRANULE)s and freed memory counts until the next
//! synchronisation, see `arena.rs`); the tests run that code dry and check that its peak never
//! exceeds the formula, and that the formula is not loose.

use proofline_groth16::msm::SparseScalars;

use crate::abi::{AFFINE_WORDS, AFF_INV_THREADS, FR_WORDS, ONES_THREADS};
use crate::arena::{charge_in, GRANULE};
use crate::config::{MsmAcc, MsmConfig, SparseTails};
use crate::curve::{MsmCurve, G1, G2};
use crate::msm::{acc_target, held_words, ones_blocks, STREAM_CHUNK};
use crate::plan::{
    affine_threads, pow_table_lens, AccSplit, AffineGroup, BucketSets, ChunkSort, ChunkWindows,
    MsmBatch, Precomputation, SetsShape, SortPlan, ACC_WAVES, BIG_BUCKET_MIN, BIG_PER_BLOCK,
};
use crate::resident::{OnesSums, QueryLens, Residency};
use crate::tails::{HeldShape, TailLayout, Tails};

/// The shape of one sparse query: bases, ones, tail.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct QueryShape {
    /// Bases of the query.
    pub num_bases: usize,
    /// Scalars equal to one.
    pub ones: usize,
    /// Scalars neither zero nor one.
    pub tail: usize,
}

impl From<&SparseScalars> for QueryShape {
    fn from(s: &SparseScalars) -> Self {
        QueryShape {
            num_bases: s.num_bases,
            ones: s.ones.len(),
            tail: s.tail_index.len(),
        }
    }
}

/// The byte formulas, for one device, one charging granule (tests use a one-word granule, so
/// that every buffer shows) and one set of MSM variants.
#[derive(Clone, Copy, Debug)]
struct Sizer {
    sm_count: u32,
    granule: u64,
    cfg: MsmConfig,
    /// Copies of the H query's bases precomputed in the resident set.
    h_pre: Option<Precomputation>,
    /// The ones' subset sums the resident set's sparse queries hold.
    sums: OnesSums,
}

impl Sizer {
    fn new(sm_count: u32, cfg: &MsmConfig) -> Self {
        Sizer {
            sm_count,
            granule: GRANULE,
            cfg: *cfg,
            h_pre: None,
            sums: OnesSums::Absent,
        }
    }

    /// A sizer charging by the word (the emulation's account) instead of by granule.
    #[cfg(test)]
    fn by_word(sm_count: u32, cfg: &MsmConfig) -> Self {
        Sizer {
            granule: 4,
            ..Sizer::new(sm_count, cfg)
        }
    }

    fn with_h_pre(mut self, pre: Option<Precomputation>) -> Self {
        self.h_pre = pre;
        self
    }

    fn with_sums(mut self, sums: OnesSums) -> Self {
        self.sums = sums;
        self
    }

    fn r(&self, words: usize) -> u64 {
        charge_in(words, self.granule)
    }

    /// Peak of one Pippenger chunk of `len` > 0 points of `C` in the bucket sets `sets`.
    fn chunk_bytes<C: MsmCurve>(&self, len: usize, sets: &BucketSets) -> u64 {
        let sort = ChunkSort::of(self.cfg.sort, len, sets);
        self.sorted_chunk_bytes::<C>(len, sets, SetsShape::of(len, sets), &sort)
    }

    /// Peak of the Pippenger chunk of a batch of MSMs (`msm::pippenger_batch`): one radix sort
    /// over every MSM's sets, by the largest MSM's plan.
    fn batch_bytes<C: MsmCurve>(&self, batch: &MsmBatch) -> u64 {
        let sort = ChunkSort::Radix(batch.radix.clone());
        self.sorted_chunk_bytes::<C>(batch.total_points(), &batch.sets, batch.shape(), &sort)
    }

    /// Peak of a Pippenger chunk of `len` points in all sorted by `sort`, each MSM's windows in
    /// `sets`, and the chunk's sets in all as `shape` says (one MSM's, or a batch's).
    fn sorted_chunk_bytes<C: MsmCurve>(
        &self,
        len: usize,
        sets: &BucketSets,
        shape: SetsShape,
        sort: &ChunkSort,
    ) -> u64 {
        let r = |w| self.r(w);
        let sm_count = self.sm_count;
        let plan = sets.plan;
        let m = shape.sets * shape.nb;
        let e = len * plan.nw as usize;
        // bucket sets: one per window without precomputed copies, each MSM's
        let nw = shape.sets;
        let tiles = m.div_ceil(crate::abi::SCAN_TILE as usize);
        let xyzz = C::XYZZ_WORDS;
        // counts and ends: the radix sort's hold one value more (the total)
        let ends_len = match sort {
            ChunkSort::Radix(_) => m + 1,
            ChunkSort::Atomic | ChunkSort::TwoLevel(_) => m,
        };
        let sorted = 2 * r(ends_len) + r(e);
        let with_buckets = sorted + r(xyzz * m);
        let scan = match sort {
            // counts, ends, entries, the scan's tile sums
            ChunkSort::Atomic => sorted + r(tiles),
            // tile counts, their scan, fine keys (u16), coarse-sorted entries, the scan's tile
            // sums (freed, still charged: no synchronisation before the fine pass), then the
            // sorted counts, ends and entries
            ChunkSort::TwoLevel(sp) => {
                let slots = sp.bins as usize * SortPlan::tiles(len) + 1;
                2 * r(slots)
                    + r(e.div_ceil(2))
                    + r(e)
                    + r(slots.div_ceil(crate::abi::SCAN_TILE as usize))
                    + sorted
            }
            // counts, ends, entries, the scalars' words and carries, the digits' histogram and
            // starts, the sets' starts, the pairs between passes and the two buffers of
            // published counts, then the tile sums of the sizes' scan (those freed before it
            // still charged: no synchronisation between)
            ChunkSort::Radix(rp) => {
                let between = rp.passes.len().saturating_sub(1).min(2) as u64;
                let digits = (rp.passes.len() * nw) << crate::abi::RADIX_BITS;
                sorted
                    + r(8 * len)
                    + r(len)
                    + 2 * r(digits)
                    + r(nw + 1)
                    + between * r(2 * shape.set_entries)
                    + 2 * r(rp.slots(sets))
                    + r((m + 1).div_ceil(crate::abi::SCAN_TILE as usize))
            }
        };
        let accumulate = match (self.cfg.acc, C::KERNELS.affine) {
            // the rounds' scratch for the largest group of sets, with a scan's tile sums during
            // the rounds, then the XYZZ accumulation of the last round's points
            (MsmAcc::BatchAffine { rounds }, Some(ak)) => {
                let set_entries = shape.set_entries;
                let grp = AffineGroup::new(
                    AffineGroup::sets_per_group(nw, set_entries, ak.group_entries),
                    set_entries,
                    shape.nb,
                );
                let (mp, fw) = (grp.buckets, ak.field_words);
                let tmax = affine_threads(sm_count, ak.blocks_per_sm);
                let scratch = r(grp.caps[0] * C::AFFINE_WORDS)
                    + r(grp.caps[1] * C::AFFINE_WORDS)
                    + 4 * r(mp + 1)
                    + 2 * r(tmax * fw)
                    + r(tmax.div_ceil(AFF_INV_THREADS as usize) * fw);
                let scan_sums = r((mp + 1).div_ceil(crate::abi::SCAN_TILE as usize));
                let last = grp.cap(rounds.clamp(1, 8) as usize - 1);
                (with_buckets + scratch + scan_sums)
                    .max(with_buckets + scratch + self.acc_bytes::<C>(last, mp))
            }
            _ => with_buckets + self.acc_bytes::<C>(e, m),
        };
        let segs = plan.segments() as usize;
        let groups = plan.combine_groups(nw, self.cfg.combine) as usize;
        let reduce = 2 * r(ends_len)
            + r(xyzz * m)
            + r(2 * xyzz * nw * segs)
            + r(xyzz * nw * groups)
            + r(C::JACOBIAN_WORDS * nw);
        scan.max(accumulate).max(reduce)
    }

    /// Peak of the XYZZ accumulation of `e` entries over `m` buckets (`msm::accumulate`), beyond
    /// what its caller holds: the big-bucket list, then either the accumulation's heads or the
    /// big buckets' work split and partial sums.
    fn acc_bytes<C: MsmCurve>(&self, e: usize, m: usize) -> u64 {
        let r = |w| self.r(w);
        let target = acc_target::<C>(self.sm_count);
        let threads = AccSplit::new(e, m, target, ACC_WAVES).threads as usize;
        // big buckets: each holds more than max(32 entries per thread, BIG_BUCKET_MIN) entries
        let cap = m
            .max(1)
            .min(threads / 32 + 1)
            .min(e / (BIG_BUCKET_MIN as usize + 1) + 1);
        let blocks = e.div_ceil(BIG_PER_BLOCK as usize) + cap;
        let xyzz = C::XYZZ_WORDS;
        let list = r(1) + r(2 * cap);
        let heads = r(xyzz * threads) + 2 * r(threads);
        let big = 2 * r(blocks) + 2 * r(cap) + r(xyzz * blocks);
        list + heads.max(big)
    }

    /// Peak of one chunk of `len` points through `windows`: a split's high part holds the high
    /// scalars beside its own buffers (`msm::pippenger_windows`).
    fn windows_bytes<C: MsmCurve>(&self, len: usize, windows: &ChunkWindows) -> u64 {
        match windows {
            ChunkWindows::Uniform(sets) => self.chunk_bytes::<C>(len, sets),
            ChunkWindows::Split { low, high } => self
                .chunk_bytes::<C>(len, low)
                .max(self.r(len * FR_WORDS as usize) + self.chunk_bytes::<C>(len, high)),
        }
    }

    /// Peak of a Pippenger MSM of `n` points of `C` whose bases and scalars are already on the
    /// device.
    fn pippenger<C: MsmCurve>(&self, n: usize) -> u64 {
        self.pippenger_sets::<C>(n, None)
    }

    /// [`Sizer::pippenger`] over bases with the precomputed copies of `pre`, if any.
    fn pippenger_sets<C: MsmCurve>(&self, n: usize, pre: Option<&Precomputation>) -> u64 {
        if n == 0 {
            return 0;
        }
        let windows = |len: usize| match pre {
            Some(p) => ChunkWindows::Uniform(BucketSets::precomputed(p)),
            None => ChunkWindows::plain(len, self.cfg.windows),
        };
        let max_chunk = self.cfg.max_chunk();
        let first = n.min(max_chunk);
        let full = self.windows_bytes::<C>(first, &windows(first));
        let rest = n % max_chunk;
        if n > max_chunk && rest != 0 {
            full.max(self.windows_bytes::<C>(rest, &windows(rest)))
        } else {
            full
        }
    }

    /// Peak of summing the bases of the `ones` ones among `bases` bases of `C` (`msm::sum_ones`),
    /// beyond the bitmap on the device: the listing's counts, offsets and scan, and the list;
    /// then the list and either the XYZZ sum's partial sums or the batch-affine rounds' groups.
    fn ones_bytes<C: MsmCurve>(&self, ones: usize, bases: usize) -> u64 {
        if ones == 0 {
            return 0;
        }
        let r = |w| self.r(w);
        // words the range's bits span: at most one more than its bits need
        let words = bases.div_ceil(32) + 1;
        // a count per block and one more (the total), their scan's tile sums (still charged when
        // the list is allocated after the read-back of the total), the list
        let blocks = words.div_ceil(ONES_THREADS as usize) + 1;
        let list = r(ones);
        let listing = 2 * r(blocks) + list + r(blocks.div_ceil(crate::abi::SCAN_TILE as usize));
        let sum = match (self.cfg.acc, C::KERNELS.affine, C::ones_rounds(&self.cfg)) {
            (MsmAcc::BatchAffine { .. }, Some(ak), Some(plan)) => {
                let groups = ones.div_ceil(plan.entries);
                let g = plan.group(ones.min(plan.entries));
                let tmax = affine_threads(self.sm_count, ak.blocks_per_sm);
                let fw = ak.field_words;
                r(C::XYZZ_WORDS * groups)
                    + r(g.caps[0] * C::AFFINE_WORDS)
                    + r(g.caps[1] * C::AFFINE_WORDS)
                    + 2 * r(tmax * fw)
                    + r(tmax.div_ceil(AFF_INV_THREADS as usize) * fw)
                    + r(g.sizes.len())
                    + self.acc_bytes::<C>(g.left(), 1)
            }
            _ => r(C::XYZZ_WORDS * ones_blocks(self.sm_count) as usize),
        };
        listing.max(list + r(C::JACOBIAN_WORDS) + sum)
    }

    /// Bytes of a sparse query's split on the device (`msm::upload_split`): the words of its
    /// bitmap of ones up to its last base (at most; none without ones), the tail's indices and
    /// its scalars (none without a tail).
    fn split_bytes(&self, q: &QueryShape) -> u64 {
        let r = |w| self.r(w);
        let bits = if q.ones > 0 && q.num_bases > 0 {
            r(q.num_bases.div_ceil(32))
        } else {
            0
        };
        let tail = if q.tail > 0 {
            r(q.tail) + r(FR_WORDS as usize * q.tail)
        } else {
            0
        };
        bits + tail
    }

    /// Peak of one sparse query of `C` beyond its split on the device (`msm::sparse_uploaded`;
    /// `chunk`: points per streamed chunk): the gathered tail's points with, first, the ones'
    /// sum (over the whole query, or a chunk at a time beside the chunk's staging buffer; the
    /// gather allocates nothing), then Pippenger over the gathered points.
    fn sparse_query<C: MsmCurve>(&self, q: &QueryShape, residency: Residency, chunk: usize) -> u64 {
        let r = |w| self.r(w);
        let gathered = if q.tail > 0 {
            r(C::AFFINE_WORDS * q.tail)
        } else {
            0
        };
        let pippenger = if q.tail > 0 {
            gathered + self.pippenger::<C>(q.tail)
        } else {
            0
        };
        (gathered + self.collect_bytes::<C>(q, residency, chunk)).max(pippenger)
    }

    /// Peak of summing a query's ones and gathering its tail (`msm::sparse`'s
    /// `ones_and_gather`), beyond the gathered points: over the whole query, or a chunk at a
    /// time beside the chunk's staging buffer (the gather allocates nothing).
    fn collect_bytes<C: MsmCurve>(
        &self,
        q: &QueryShape,
        residency: Residency,
        chunk: usize,
    ) -> u64 {
        match residency {
            Residency::Resident => self.ones_bytes::<C>(q.ones, q.num_bases),
            Residency::Streamed => {
                let chunk = chunk.min(q.num_bases).max(1);
                self.r(C::AFFINE_WORDS * chunk) + self.ones_bytes::<C>(q.ones.min(chunk), chunk)
            }
        }
    }

    /// Peak of sparse queries of `C` with their tails together (`msm::sparse_together`): the
    /// gathered points of every tail, beside each query's ones' sum and gather in turn, then
    /// beside the batch's Pippenger chunk. Where one chunk cannot hold the tails, the queries'
    /// peaks one after the other, as it then runs them.
    fn sparse_together<C: MsmCurve>(
        &self,
        queries: &[QueryShape],
        residency: Residency,
        chunk: usize,
    ) -> u64 {
        let tails: Vec<usize> = queries.iter().map(|q| q.tail).filter(|&t| t > 0).collect();
        let Some(batch) = MsmBatch::new(&tails, self.cfg.sort, self.cfg.max_chunk()) else {
            return queries
                .iter()
                .map(|q| self.sparse_query::<C>(q, residency, chunk))
                .max()
                .unwrap_or(0);
        };
        let gathered = self.r(C::AFFINE_WORDS * batch.total_points());
        let collect = queries
            .iter()
            .map(|q| self.collect_bytes::<C>(q, residency, chunk))
            .max()
            .unwrap_or(0);
        gathered + collect.max(self.batch_bytes::<C>(&batch))
    }

    /// The splits of L, A and B on the device for the whole stage (B's once: it serves both
    /// groups), and beside them L, A and B in G1 (one after the other, or with their tails
    /// together as `cfg.sparse_tails` says), then B in G2 (B's shape).
    fn sparse_stage(&self, queries: &[QueryShape; 3], residency: Residency, chunk: usize) -> u64 {
        let splits: u64 = queries.iter().map(|q| self.split_bytes(q)).sum();
        let g1 = match self.cfg.sparse_tails {
            SparseTails::Apart => queries
                .iter()
                .map(|q| self.sparse_query::<G1>(q, residency, chunk))
                .max()
                .unwrap_or(0),
            SparseTails::Together => self.sparse_together::<G1>(queries, residency, chunk),
        };
        let msms = g1.max(self.sparse_query::<G2>(&queries[2], residency, chunk));
        (splits + msms).max(1)
    }

    /// The sparse stage over held tails (`stages::sparse_stage_held_device`): each G1 query's
    /// split on the device (its own where the held list is its tail, else the rest's split and
    /// the held scalars), B's whole split beside them for G2 where B's tail in G2 is not held
    /// and B's split is not that; then each G1 query's ones (and rest) and its held points
    /// through Pippenger, one after the other, then B in G2: over its held tail as B in G1, else
    /// over B's whole shape `b`.
    fn sparse_stage_held(&self, held: &Tails<HeldShape>, b: &QueryShape) -> u64 {
        let scalars = |n: usize| {
            if n > 0 {
                self.r(FR_WORDS as usize * n)
            } else {
                0
            }
        };
        let split = |q: &HeldShape| {
            if q.own_tail {
                self.split_bytes(&QueryShape {
                    tail: q.held,
                    ..q.rest
                })
            } else {
                self.split_bytes(&q.rest) + scalars(q.held)
            }
        };
        let b_g2_split = if held.g1[2].own_tail || held.b_g2.is_some() {
            0
        } else {
            self.split_bytes(b)
        };
        let splits: u64 = held.g1.iter().map(split).sum::<u64>() + b_g2_split;
        let g1 = held
            .g1
            .iter()
            .map(|q| self.sparse_held_query::<G1>(q))
            .max()
            .unwrap_or(0);
        let g2 = match &held.b_g2 {
            Some(q) => self.sparse_held_query::<G2>(q),
            None => self.sparse_query::<G2>(b, Residency::Resident, STREAM_CHUNK),
        };
        (splits + g1.max(g2)).max(1)
    }

    /// One query of the sparse stage over held tails: its ones (and rest), then its held points
    /// through Pippenger.
    fn sparse_held_query<C: MsmCurve>(&self, q: &HeldShape) -> u64 {
        let rest = self.sparse_query::<C>(&q.rest, Residency::Resident, STREAM_CHUNK);
        rest.max(self.pippenger_sets::<C>(q.held, q.pre.as_ref()))
    }

    /// Holding tails of `lens` points with the copies of `pres` (`tails::hold_tails_device`):
    /// the tails held before each (G1's, then B's in G2), then its points (and copies) beside
    /// its index list.
    fn held_tails(&self, lens: &Tails<usize>, pres: &Tails<Option<Precomputation>>) -> u64 {
        let g1 = lens
            .g1
            .iter()
            .zip(&pres.g1)
            .map(|(&len, pre)| (len, self.r(held_words::<G1>(len, pre.as_ref()))));
        let g2 = lens
            .b_g2
            .zip(pres.b_g2)
            .map(|(len, pre)| (len, self.r(held_words::<G2>(len, pre.as_ref()))));
        let mut kept = 0;
        let mut peak = 0;
        for (len, points) in g1.chain(g2).filter(|&(n, _)| n > 0) {
            peak = peak.max(kept + points + self.r(len));
            kept += points;
        }
        peak.max(kept)
    }

    fn h_stage(&self, log_n: u32, residency: Residency, chunk: usize) -> u64 {
        let r = |w| self.r(w);
        let n = 1usize << log_n;
        let coefficients = r(FR_WORDS as usize * n);
        let points = n - 1;
        let msm = match residency {
            Residency::Resident => self.pippenger_sets::<G1>(points, self.h_pre.as_ref()),
            Residency::Streamed if points == 0 => 0,
            Residency::Streamed => {
                let chunk = chunk.min(points).max(1);
                let last = points % chunk;
                let mut p = self.pippenger::<G1>(chunk);
                if last != 0 {
                    p = p.max(self.pippenger::<G1>(last));
                }
                r(AFFINE_WORDS as usize * chunk) + p
            }
        };
        (3 * coefficients).max(coefficients + msm)
    }

    /// Device bytes of the NTT tables of domain 2^`log_n` (while built, and once built).
    fn tables(&self, log_n: u32) -> (u64, u64) {
        let r = |w| self.r(w);
        let n = 1usize << log_n;
        let fr = FR_WORDS as usize;
        let stage = 2 * r(fr * (n - 1).max(1));
        let (_, wlo, whi) = pow_table_lens((n / 2).max(1));
        let (_, glo, ghi) = pow_table_lens(n);
        // g and g^-1 split tables, their low halves with n^-1 folded in, g^-1's low half with
        // n^-1 (g^n - 1)^-1 folded in; n^-1, (g^n - 1)^-1 and their product
        let kept = stage + 2 * (2 * r(fr * glo) + r(fr * ghi)) + r(fr * glo) + 3 * r(fr);
        let build_scratch = 2 * (r(fr * wlo) + r(fr * whi));
        (kept + build_scratch, kept)
    }

    fn resident(&self, log_n: u32, lens: &QueryLens, residency: Residency) -> u64 {
        let (building, kept) = self.tables(log_n);
        match residency {
            Residency::Streamed => building,
            Residency::Resident => {
                // the H query with its precomputed copies, if any
                let h_copies = self.h_pre.map_or(1, |p| p.copies as usize);
                // the sparse queries, with their subset sums if any
                let summed = |p: usize| self.sums.group().map_or(0, |g| g.sum_points(p));
                let bases: u64 = self.r(AFFINE_WORDS as usize * lens.h * h_copies)
                    + [lens.l, lens.a, lens.b_g1]
                        .iter()
                        .map(|&p| self.r(AFFINE_WORDS as usize * (p + summed(p))))
                        .sum::<u64>()
                    + self.r(G2::AFFINE_WORDS * (lens.b_g2 + summed(lens.b_g2)));
                building.max(kept + bases)
            }
        }
    }
}

/// Peak of a Pippenger MSM of `n` points whose bases and scalars are already on the device.
pub fn pippenger_bytes(n: usize, sm_count: u32) -> u64 {
    pippenger_bytes_with(n, &MsmConfig::default(), sm_count)
}

/// [`pippenger_bytes`] for the variants of `cfg`.
pub fn pippenger_bytes_with(n: usize, cfg: &MsmConfig, sm_count: u32) -> u64 {
    pippenger_bytes_of::<G1>(n, cfg, sm_count)
}

/// [`pippenger_bytes_with`] in the group `C`.
pub(crate) fn pippenger_bytes_of<C: MsmCurve>(n: usize, cfg: &MsmConfig, sm_count: u32) -> u64 {
    Sizer::new(sm_count, cfg).pippenger::<C>(n)
}

/// [`pippenger_bytes_with`] of one chunk of `n` points through `windows`.
pub fn chunk_windows_bytes(
    n: usize,
    windows: &ChunkWindows,
    cfg: &MsmConfig,
    sm_count: u32,
) -> u64 {
    chunk_windows_bytes_of::<G1>(n, windows, cfg, sm_count)
}

/// [`chunk_windows_bytes`] in the group `C`.
pub(crate) fn chunk_windows_bytes_of<C: MsmCurve>(
    n: usize,
    windows: &ChunkWindows,
    cfg: &MsmConfig,
    sm_count: u32,
) -> u64 {
    Sizer::new(sm_count, cfg).windows_bytes::<C>(n, windows)
}

/// [`pippenger_bytes_with`] over bases with the precomputed copies of `pre`.
pub fn pippenger_bytes_precomputed(
    n: usize,
    pre: &Precomputation,
    cfg: &MsmConfig,
    sm_count: u32,
) -> u64 {
    pippenger_bytes_precomputed_of::<G1>(n, pre, cfg, sm_count)
}

/// [`pippenger_bytes_precomputed`] in the group `C`.
pub(crate) fn pippenger_bytes_precomputed_of<C: MsmCurve>(
    n: usize,
    pre: &Precomputation,
    cfg: &MsmConfig,
    sm_count: u32,
) -> u64 {
    Sizer::new(sm_count, cfg).pippenger_sets::<C>(n, Some(pre))
}

/// [`h_stage_bytes`] with a resident set whose H query has the precomputed copies of `pre`.
pub fn h_stage_bytes_precomputed(log_n: u32, pre: &Precomputation, sm_count: u32) -> u64 {
    Sizer::new(sm_count, &MsmConfig::default())
        .with_h_pre(Some(*pre))
        .h_stage(log_n, Residency::Resident, STREAM_CHUNK)
}

/// [`resident_bytes`] of a resident set ([`Residency::Resident`]) whose H query has the
/// precomputed copies of `pre` (they replace the H bases: `pre.copies` times their bytes).
pub fn resident_bytes_precomputed(log_n: u32, lens: &QueryLens, pre: &Precomputation) -> u64 {
    resident_set_bytes(log_n, lens, Some(pre), OnesSums::Absent)
}

/// [`pippenger_bytes_with`] charged by the word (the emulation's account), for tests.
#[cfg(test)]
pub(crate) fn pippenger_bytes_exact(n: usize, cfg: &MsmConfig, sm_count: u32) -> u64 {
    Sizer::by_word(sm_count, cfg).pippenger::<G1>(n)
}

/// [`pippenger_bytes_exact`] of one chunk of `n` points through `windows`.
#[cfg(test)]
pub(crate) fn windows_bytes_exact(
    n: usize,
    windows: &ChunkWindows,
    cfg: &MsmConfig,
    sm_count: u32,
) -> u64 {
    Sizer::by_word(sm_count, cfg).windows_bytes::<G1>(n, windows)
}

/// Device bytes of the sparse stage (the splits of L, A and B on the device, and beside them
/// the L, A and B MSMs in G1, then B in G2 with B's split), from the shapes of L, A and B.
pub fn sparse_stage_bytes(queries: &[QueryShape; 3], residency: Residency, sm_count: u32) -> u64 {
    sparse_stage_bytes_with(queries, residency, &MsmConfig::default(), sm_count)
}

/// [`sparse_stage_bytes`] for the variants of `cfg`.
pub fn sparse_stage_bytes_with(
    queries: &[QueryShape; 3],
    residency: Residency,
    cfg: &MsmConfig,
    sm_count: u32,
) -> u64 {
    Sizer::new(sm_count, cfg).sparse_stage(queries, residency, STREAM_CHUNK)
}

/// [`sparse_stage_bytes`] with bases streamed by `chunk` points (tests of the streaming).
#[cfg(any(test, feature = "testkit"))]
pub(crate) fn sparse_stage_bytes_with_chunk(
    queries: &[QueryShape; 3],
    residency: Residency,
    chunk: usize,
    cfg: &MsmConfig,
    sm_count: u32,
) -> u64 {
    Sizer::new(sm_count, cfg).sparse_stage(queries, residency, chunk)
}

/// Device bytes of the sparse stage over held tails (`GpuSlot::sparse_stage_held`): the
/// shapes of the queries split against them ([`HeldTails::shapes`](crate::HeldTails::shapes))
/// and B's whole shape (its split serves B in G2 where B's tail in G2 is not held); the bases
/// resident.
pub fn sparse_stage_bytes_held(held: &Tails<HeldShape>, b: &QueryShape, sm_count: u32) -> u64 {
    Sizer::new(sm_count, &MsmConfig::default()).sparse_stage_held(held, b)
}

/// Device bytes of tails of `lens` points held in `layout` (`GpuSlot::hold_tails`): the
/// long-lived lease of the holding.
pub fn held_tails_bytes(lens: &Tails<usize>, layout: TailLayout) -> u64 {
    Sizer::new(1, &MsmConfig::default()).held_tails(lens, &layout.precomputations(lens))
}

/// The largest layout a holding of tails of `lens` points may take under a lease of `lease`
/// bytes (the most tails with copies, in `TailLayout::COPIES_FIRST` order); `None` where not
/// even the gathered points fit (or there is nothing to hold).
pub fn held_tails_granted(lens: &Tails<usize>, lease: u64) -> Option<TailLayout> {
    if lens.is_empty() {
        return None;
    }
    TailLayout::largest_first().find(|&l| held_tails_bytes(lens, l) <= lease)
}

/// Device bytes of the H stage of domain 2^`log_n`: a, b, c, then a and the H MSM.
pub fn h_stage_bytes(log_n: u32, residency: Residency, sm_count: u32) -> u64 {
    h_stage_bytes_with(log_n, residency, &MsmConfig::default(), sm_count)
}

/// [`h_stage_bytes`] with the H MSM's variants of `cfg`.
pub fn h_stage_bytes_with(log_n: u32, residency: Residency, cfg: &MsmConfig, sm_count: u32) -> u64 {
    Sizer::new(sm_count, cfg).h_stage(log_n, residency, STREAM_CHUNK)
}

/// The H MSM's configurations from the default's chunk size up to the largest
/// ([`MsmConfig::max_chunk_log`] 27), largest first.
fn h_msm_configs() -> impl Iterator<Item = MsmConfig> {
    let d = MsmConfig::default();
    (d.max_chunk_log..=27)
        .rev()
        .map(move |max_chunk_log| MsmConfig { max_chunk_log, ..d })
}

/// The H MSM's configuration within an H stage lease of `lease_bytes`: the default with the
/// largest Pippenger chunk whose stage the lease covers. Fewer chunks are one sort and one bucket
/// reduction fewer each: the H MSM of a 32 GiB partition in one chunk of 2^27 points (whose 12
/// windows run as two MSMs, `MsmConfig::windows`) takes ~30 ms less on the H200 than in two,
/// for 3.5 GB more of the lease (the sort's entries).
pub fn h_stage_msm_config(
    log_n: u32,
    residency: Residency,
    lease_bytes: u64,
    sm_count: u32,
) -> MsmConfig {
    h_msm_configs()
        .find(|cfg| h_stage_bytes_with(log_n, residency, cfg, sm_count) <= lease_bytes)
        .unwrap_or_default()
}

/// The lease an H stage asks for on a device with `budget` bytes, `slots` compute slots and
/// the parameter set's `resident` bytes: the largest chunk's stage (see
/// [`h_stage_msm_config`]) when every slot's H stage fits at once beside the resident set, else
/// the default's, so that a budget too small for the larger leases costs the larger chunk, not
/// the slots' concurrency.
pub fn h_stage_lease(
    log_n: u32,
    residency: Residency,
    resident: u64,
    slots: usize,
    budget: u64,
    sm_count: u32,
) -> u64 {
    h_msm_configs()
        .map(|cfg| h_stage_bytes_with(log_n, residency, &cfg, sm_count))
        .find(|b| resident.saturating_add((slots.max(1) as u64).saturating_mul(*b)) <= budget)
        .unwrap_or_else(|| h_stage_bytes(log_n, residency, sm_count))
}

/// Device bytes of a parameter set's resident data: the NTT tables of domain 2^`log_n` and,
/// with [`Residency::Resident`], the five query bases. The long-lived lease of the set.
/// (The sizes do not depend on the device.)
pub fn resident_bytes(log_n: u32, lens: &QueryLens, residency: Residency) -> u64 {
    Sizer::new(1, &MsmConfig::default()).resident(log_n, lens, residency)
}

/// [`resident_bytes`] of a [`Residency::Resident`] set whose sparse queries (L, A, B in G1 and
/// in G2) hold the ones' subset sums of `sums` ([`OnesSums::Pairs`]: half as many points again;
/// [`OnesSums::Triples`]: four thirds as many again). A set uploaded under a lease of at least
/// this many bytes computes them.
pub fn resident_bytes_summed(log_n: u32, lens: &QueryLens, sums: OnesSums) -> u64 {
    resident_set_bytes(log_n, lens, None, sums)
}

/// [`resident_bytes`] of a [`Residency::Resident`] set with the H copies of `h_pre`, if any,
/// and the ones' subset sums of `sums`.
pub(crate) fn resident_set_bytes(
    log_n: u32,
    lens: &QueryLens,
    h_pre: Option<&Precomputation>,
    sums: OnesSums,
) -> u64 {
    Sizer::new(1, &MsmConfig::default())
        .with_h_pre(h_pre.copied())
        .with_sums(sums)
        .resident(log_n, lens, Residency::Resident)
}

/// What a set asking for `wanted` may hold, largest first: triples, then pairs, then none.
fn ones_sums_fallbacks(wanted: OnesSums) -> &'static [OnesSums] {
    match wanted {
        OnesSums::Triples => &[OnesSums::Triples, OnesSums::Pairs],
        OnesSums::Pairs => &[OnesSums::Pairs],
        OnesSums::Absent => &[],
    }
}

/// The ones' subset sums a [`Residency::Resident`] set (with the H copies of `h_pre`, if any)
/// holds under a lease of `lease` bytes when it asks for `wanted`: none unless asked for, and
/// then the largest of those asked for (triples, then pairs) that the lease covers. (On a small
/// domain the NTT tables' build peak can cover the sums of a lease sized without them: a set
/// that did not ask still holds none.)
pub(crate) fn ones_sums_granted(
    wanted: OnesSums,
    lease: u64,
    log_n: u32,
    lens: &QueryLens,
    h_pre: Option<&Precomputation>,
) -> OnesSums {
    ones_sums_fallbacks(wanted)
        .iter()
        .copied()
        .find(|&s| lease >= resident_set_bytes(log_n, lens, h_pre, s))
        .unwrap_or(OnesSums::Absent)
}

/// The lease of a [`Residency::Resident`] set on a device of `budget` bytes with `slots`
/// compute slots when it asks for the ones' subset sums of `wanted`: with the largest of those
/// asked for ([`resident_bytes_summed`]; triples, then pairs) that fits beside every slot's H
/// stage at the lease the set without them leaves it ([`h_stage_lease`]: the H MSM's largest
/// chunk saves more than the sums do), else without them ([`resident_bytes`]).
pub fn resident_lease(
    log_n: u32,
    lens: &QueryLens,
    wanted: OnesSums,
    slots: usize,
    budget: u64,
    sm_count: u32,
) -> u64 {
    let r = Residency::Resident;
    let plain = resident_bytes(log_n, lens, r);
    let h = h_stage_lease(log_n, r, plain, slots, budget, sm_count);
    let stages = (slots.max(1) as u64).saturating_mul(h);
    ones_sums_fallbacks(wanted)
        .iter()
        .map(|&s| resident_bytes_summed(log_n, lens, s))
        .find(|b| b.saturating_add(stages) <= budget)
        .unwrap_or(plain)
}

/// The query lengths of a 32 GiB PoRep partition (docs/filecoin.md; a 64 GiB partition has the
/// same domain and 0.7 % more constraints): the shape a GPU's automatic compute slots are sized
/// for ([`slots_that_fit`]).
pub const PARTITION_32GIB: QueryLens = QueryLens {
    h: (1 << 27) - 1,
    l: 130_278_541,
    a: 129_353_000,
    b_g1: 34_290_000,
    b_g2: 34_290_000,
};

/// Compute slots for a device of `budget` bytes, at most `most` and at least 1: as many as can
/// run the H stage of a [`PARTITION_32GIB`] at once beside its parameter set, resident where
/// the set and one H stage fit the budget, else streamed (the set is then its NTT tables).
///
/// A slot whose H stage cannot run beside the others' only waits for their leases, and its
/// stages' hand-overs cost pool trims, while the H stages of all slots take the smaller H MSM
/// chunk ([`h_stage_lease`]): on an 80 GB H100 at the 32 GiB shape two slots made 42.9
/// partitions a minute against one slot's 45.2, on an H200 (room for two) 51.7 against 47.2.
pub fn slots_that_fit(budget: u64, sm_count: u32, most: usize) -> usize {
    let lens = PARTITION_32GIB;
    let log_n = 27;
    let resident = resident_bytes(log_n, &lens, Residency::Resident);
    let stage = h_stage_bytes(log_n, Residency::Resident, sm_count);
    let (set, stage) = if resident.saturating_add(stage) <= budget {
        (resident, stage)
    } else {
        (
            resident_bytes(log_n, &lens, Residency::Streamed),
            h_stage_bytes(log_n, Residency::Streamed, sm_count),
        )
    };
    let fit = budget.saturating_sub(set) / stage.max(1);
    (fit.min(most as u64) as usize).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arena::DryRun;
    use crate::config::NttConfig;
    use crate::exec::Exec;
    use crate::msm::{self, Bases, MsmStats};
    use crate::ntt::build_tables;
    use crate::resident::{upload_resident, HostQueries, StageBases};
    use crate::stages::{h_stage_device, sparse_stage_device, SparseGroups};
    use blstrs::{G1Affine, G2Affine, Scalar};
    use proofline_groth16::msm::MsmPlan;
    use std::time::Instant;

    const SMS: u32 = 132;

    /// The production granule, and one word (with it every buffer shows in the peak), for
    /// every MSM variant.
    fn sizers() -> Vec<Sizer> {
        let mut v = Vec::new();
        for (_, cfg) in MsmConfig::variants() {
            v.push(Sizer::new(SMS, &cfg));
            v.push(Sizer::by_word(SMS, &cfg));
        }
        v
    }

    fn dry(z: &Sizer) -> DryRun {
        DryRun::new(z.sm_count, z.granule)
    }

    /// The dry run's peak is within the formula, and the formula within a few granules (and
    /// 1 %) of the peak: the formula is what the code allocates, in the worst case.
    fn check(what: &str, z: &Sizer, peak: u64, formula: u64) {
        assert!(
            peak <= formula,
            "{what} (granule {}): the code peaks at {peak} > formula {formula}",
            z.granule
        );
        let slack = 4 * z.granule + formula / 100;
        assert!(
            formula <= peak + slack,
            "{what} (granule {}): formula {formula} is loose (the code peaks at {peak})",
            z.granule
        );
    }

    #[test]
    fn pippenger_formula_matches_the_code() {
        for z in sizers() {
            for n in [
                1usize,
                2,
                100,
                5000,
                1 << 16,
                (1 << 20) + 3,
                1 << 24,
                (1 << 27) - 1,
            ] {
                let e = dry(&z);
                msm::pippenger::<_, G1>(&e, 0, 0, n, &z.cfg, &mut MsmStats::default()).unwrap();
                assert!(e.launches() > 0);
                check(
                    &format!("pippenger {n}"),
                    &z,
                    e.peak(),
                    z.pippenger::<G1>(n),
                );
                let e = dry(&z);
                msm::pippenger::<_, G2>(&e, 0, 0, n, &z.cfg, &mut MsmStats::default()).unwrap();
                check(
                    &format!("G2 pippenger {n}"),
                    &z,
                    e.peak(),
                    z.pippenger::<G2>(n),
                );
            }
        }
    }

    #[test]
    fn precomputed_pippenger_formula_matches_the_code() {
        for z in sizers() {
            for (n, pre) in [
                (
                    5000usize,
                    Precomputation {
                        window: 16,
                        copies: 3,
                    },
                ),
                (
                    (1 << 20) + 3,
                    Precomputation {
                        window: 22,
                        copies: 12,
                    },
                ),
                (
                    (1 << 27) - 1,
                    Precomputation {
                        window: 20,
                        copies: 2,
                    },
                ),
            ] {
                let e = dry(&z);
                msm::pippenger_sets::<_, G1>(
                    &e,
                    0,
                    Some((pre, n)),
                    0,
                    n,
                    &z.cfg,
                    &mut MsmStats::default(),
                )
                .unwrap();
                check(
                    &format!("precomputed pippenger {n} {pre:?}"),
                    &z,
                    e.peak(),
                    z.pippenger_sets::<G1>(n, Some(&pre)),
                );
            }
            // the H stage over a precomputed resident set
            let pre = Precomputation {
                window: 22,
                copies: 4,
            };
            let log_n = 22;
            let n = 1usize << log_n;
            let tables = build_tables(&dry(&z), log_n).unwrap();
            let e = dry(&z);
            let up = || e.zeros(n * FR_WORDS as usize).unwrap();
            let (a, b) = (up(), up());
            let h = Bases::Precomputed {
                ptr: 0,
                stride: n - 1,
                pre,
            };
            h_stage_device(
                &e,
                a,
                b,
                &tables.ptrs(),
                h,
                &NttConfig::default(),
                &z.cfg,
                Instant::now(),
            )
            .unwrap();
            check(
                "h stage 2^22 precomputed",
                &z,
                e.peak(),
                z.with_h_pre(Some(pre))
                    .h_stage(log_n, Residency::Resident, STREAM_CHUNK),
            );
        }
    }

    #[test]
    fn h_stage_formula_matches_the_code() {
        let ntt = NttConfig::default();
        for z in sizers() {
            for log_n in [0u32, 1, 5, 12, 16, 22, 27] {
                let n = 1usize << log_n;
                let tables = build_tables(&dry(&z), log_n).unwrap();
                let e = dry(&z);
                let up = || e.zeros(n * FR_WORDS as usize).unwrap();
                let (a, b) = (up(), up());
                h_stage_device(
                    &e,
                    a,
                    b,
                    &tables.ptrs(),
                    Bases::Device(0),
                    &ntt,
                    &z.cfg,
                    Instant::now(),
                )
                .unwrap();
                check(
                    &format!("h stage 2^{log_n} resident"),
                    &z,
                    e.peak(),
                    z.h_stage(log_n, Residency::Resident, STREAM_CHUNK),
                );
            }
            // streamed: one chunk, several chunks with a short last one
            for (log_n, chunk) in [(10u32, 100usize), (12, 4095), (12, 5000), (12, 1000)] {
                let n = 1usize << log_n;
                let host = vec![G1Affine::default(); n - 1];
                let tables = build_tables(&dry(&z), log_n).unwrap();
                let e = dry(&z);
                let up = || e.zeros(n * FR_WORDS as usize).unwrap();
                let (a, b) = (up(), up());
                let bases = Bases::Host {
                    points: &host,
                    chunk,
                };
                h_stage_device(
                    &e,
                    a,
                    b,
                    &tables.ptrs(),
                    bases,
                    &ntt,
                    &z.cfg,
                    Instant::now(),
                )
                .unwrap();
                check(
                    &format!("h stage 2^{log_n} streamed by {chunk}"),
                    &z,
                    e.peak(),
                    z.h_stage(log_n, Residency::Streamed, chunk),
                );
            }
        }
    }

    /// A split of `num_bases` scalars with `ones` ones and `tail` others interleaved over the
    /// whole query (sorted indices, as `MsmPlan::build` makes them).
    fn split(num_bases: usize, ones: usize, tail: usize) -> SparseScalars {
        let set = ones + tail;
        assert!(set <= num_bases);
        let mut s = SparseScalars {
            num_bases,
            zeros: num_bases - set,
            ..Default::default()
        };
        for k in 0..set {
            let i = (k * num_bases / set.max(1)) as u32;
            if (k + 1) * ones / set > k * ones / set {
                s.ones.insert(i);
            } else {
                s.tail_index.push(i);
                s.tail_scalars.push(Scalar::from(3u64));
            }
        }
        assert_eq!((s.ones.len(), s.tail_index.len()), (ones, tail));
        s
    }

    #[test]
    fn sparse_stage_formula_matches_the_code() {
        let plans = [
            // the 2KiB circuit's mix, scaled down
            (
                split(20_000, 9_400, 330),
                split(19_900, 9_450, 250),
                split(5_100, 2_400, 240),
            ),
            // only ones; only tail; a single zero
            (
                split(3_000, 3_000, 0),
                split(3_000, 0, 3_000),
                split(1, 0, 0),
            ),
            // a tail large enough for the big windows
            (
                split(1 << 21, 1 << 19, 1 << 20),
                split(64, 10, 10),
                split(64, 10, 10),
            ),
        ];
        let host = vec![G1Affine::default(); 1 << 21];
        let host_g2 = vec![G2Affine::default(); 1 << 21];
        for z in sizers() {
            for (l, a, b) in plans.clone() {
                let plan = MsmPlan { a, b, l };
                let shapes = [(&plan.l).into(), (&plan.a).into(), (&plan.b).into()];
                let sb = StageBases {
                    h: Bases::Device(0),
                    l: Bases::Device(0),
                    a: Bases::Device(0),
                    b_g1: Bases::Device(0),
                    b_g2: Bases::Device(0),
                };
                let e = dry(&z);
                sparse_stage_device(&e, &plan, &sb, SparseGroups::G1AndG2, &z.cfg).unwrap();
                check(
                    "sparse stage resident",
                    &z,
                    e.peak(),
                    z.sparse_stage(&shapes, Residency::Resident, STREAM_CHUNK),
                );
                for chunk in [777usize, 1 << 20, 1 << 24] {
                    let h = |len: usize| Bases::Host {
                        points: &host[..len],
                        chunk,
                    };
                    let sb = StageBases {
                        h: h(0),
                        l: h(plan.l.num_bases),
                        a: h(plan.a.num_bases),
                        b_g1: h(plan.b.num_bases),
                        b_g2: Bases::Host {
                            points: &host_g2[..plan.b.num_bases],
                            chunk,
                        },
                    };
                    let e = dry(&z);
                    sparse_stage_device(&e, &plan, &sb, SparseGroups::G1AndG2, &z.cfg).unwrap();
                    check(
                        &format!("sparse stage streamed by {chunk}"),
                        &z,
                        e.peak(),
                        z.sparse_stage(&shapes, Residency::Streamed, chunk),
                    );
                }
            }
        }
    }

    /// Holding tails and the sparse stage over them: held from an earlier split (part of
    /// them this split's zeros and ones, part of this tail outside them) and from this split,
    /// gathered and over copies, B's tail in G2 held or not; an empty tail among them.
    #[test]
    fn held_tails_formulas_match_the_code() {
        use crate::stages::sparse_stage_held_device;
        use crate::tails::hold_tails_device;
        let this = MsmPlan {
            l: split(40_000, 18_000, 3_000),
            a: split(30_000, 14_000, 2_500),
            b: split(9_000, 4_000, 0),
        };
        let earlier = MsmPlan {
            l: split(40_000, 17_000, 3_300),
            a: split(30_000, 14_500, 2_000),
            b: split(9_000, 4_200, 700),
        };
        let copies = Some(Precomputation {
            window: 16,
            copies: 3,
        });
        let sb = StageBases {
            h: Bases::Device(0),
            l: Bases::Device(0),
            a: Bases::Device(0),
            b_g1: Bases::Device(0),
            b_g2: Bases::Device(0),
        };
        let layouts = [
            Tails {
                g1: [None; 3],
                b_g2: None,
            },
            Tails {
                g1: [None; 3],
                b_g2: Some(None),
            },
            Tails {
                g1: [copies, None, copies],
                b_g2: Some(copies),
            },
        ];
        let bases = Tails {
            g1: [0; 3],
            b_g2: Some(0),
        };
        for z in sizers() {
            for from in [&earlier, &this] {
                for pres in layouts {
                    let mut lens = Tails::of(from, SparseGroups::G1AndG2);
                    lens.b_g2 = lens.b_g2.filter(|_| pres.b_g2.is_some());
                    let e = dry(&z);
                    let held = hold_tails_device(&e, bases, from, pres).unwrap();
                    check("held tails", &z, e.peak(), z.held_tails(&lens, &pres));
                    let shapes = Tails {
                        g1: [&this.l, &this.a, &this.b]
                            .iter()
                            .zip(&held.g1)
                            .map(|(s, h)| HeldShape::of(s, h))
                            .collect::<Vec<_>>()
                            .try_into()
                            .unwrap(),
                        b_g2: held.b_g2.as_ref().map(|h| HeldShape::of(&this.b, h)),
                    };
                    let e = dry(&z);
                    sparse_stage_held_device(&e, &this, &held, &sb, SparseGroups::G1AndG2, &z.cfg)
                        .unwrap();
                    check(
                        &format!("sparse stage over held tails {pres:?}"),
                        &z,
                        e.peak(),
                        z.sparse_stage_held(&shapes, &(&this.b).into()),
                    );
                }
            }
        }
    }

    #[test]
    fn resident_formula_matches_the_code() {
        let pts = vec![G1Affine::default(); 3000];
        let pts2 = vec![G2Affine::default(); 800];
        let q = HostQueries {
            h: &pts[..1023],
            l: &pts[..3000],
            a: &pts[..2900],
            b_g1: &pts[..800],
            b_g2: &pts2,
        };
        for z in sizers() {
            for log_n in [0u32, 1, 4, 12, 20, 27] {
                let e = dry(&z);
                upload_resident(&e, log_n, None, None, OnesSums::Absent).unwrap();
                check(
                    &format!("tables 2^{log_n}"),
                    &z,
                    e.peak(),
                    z.resident(log_n, &q.lens(), Residency::Streamed),
                );
            }
            for sums in [OnesSums::Absent, OnesSums::Pairs, OnesSums::Triples] {
                let e = dry(&z);
                upload_resident(&e, 10, Some(&q), None, sums).unwrap();
                check(
                    &format!("resident set 2^10, sums {sums:?}"),
                    &z,
                    e.peak(),
                    z.with_sums(sums)
                        .resident(10, &q.lens(), Residency::Resident),
                );
            }
            let pre = Precomputation {
                window: 16,
                copies: 5,
            };
            let e = dry(&z);
            upload_resident(&e, 10, Some(&q), Some(&pre), OnesSums::Absent).unwrap();
            check(
                "resident set 2^10 with H copies",
                &z,
                e.peak(),
                z.with_h_pre(Some(pre))
                    .resident(10, &q.lens(), Residency::Resident),
            );
        }
    }

    #[test]
    fn a_32gib_partition_fits_an_h200_at_four_slots() {
        let lens = PARTITION_32GIB;
        let resident = resident_bytes(27, &lens, Residency::Resident);
        let h = h_stage_bytes(27, Residency::Resident, SMS);
        let worst = QueryShape {
            num_bases: lens.l,
            ones: lens.l / 2,
            tail: lens.l / 12,
        };
        let sparse = sparse_stage_bytes(&[worst; 3], Residency::Resident, SMS);
        // 3 x 2^27 x 32 B of evaluations, and all five query bases
        assert!(h >= 3 * (1u64 << 27) * 32);
        assert!(resident >= (lens.g1().iter().sum::<usize>() * 96 + lens.b_g2 * 192) as u64);
        assert!(sparse < h);
        // an H200 (~140 GB; a budget of 95 % of it) holds the set and four H stages
        assert!(resident + 4 * h < 133_000_000_000, "{resident} + 4 x {h}");
        // streamed, the set is the tables only, and a stage adds one chunk of bases
        let tables = resident_bytes(27, &lens, Residency::Streamed);
        assert!(tables < resident / 4);
        let streamed = h_stage_bytes(27, Residency::Streamed, SMS);
        assert!(streamed < h + 3 * (STREAM_CHUNK as u64) * 96);
        // and a 24 GB card (a budget of 95 % of it) holds the tables and one streamed H stage:
        // its peak is the three evaluations, above the MSM's over chunks of streamed bases
        // (the batch-affine rounds' scratch included)
        assert!(tables + streamed < 22_800_000_000, "{tables} + {streamed}");
        assert_eq!(streamed, 3 * (1u64 << 27) * 32);
    }

    /// Automatic compute slots by card: an H200 runs two 32 GiB partitions' H stages beside a
    /// resident set, an 80 GB H100 one, a 24 GB card one streamed; the most asked for caps it.
    #[test]
    fn automatic_slots_are_the_h_stages_a_card_holds_at_once() {
        // the budgets the pipeline gives them (95 % of what is free at start)
        let (h200, h100, small) = (133_000_000_000, 80_164_136_520, 22_800_000_000);
        assert_eq!(slots_that_fit(h200, SMS, 2), 2, "H200");
        assert_eq!(slots_that_fit(h200, SMS, 8), 4, "H200, up to 8");
        assert_eq!(slots_that_fit(h100, SMS, 2), 1, "H100 80GB");
        assert_eq!(slots_that_fit(small, 60, 2), 1, "24 GB");
        assert_eq!(slots_that_fit(0, SMS, 2), 1, "at least one");
        // the threshold is the set and two H stages
        let lens = PARTITION_32GIB;
        let two = resident_bytes(27, &lens, Residency::Resident)
            + 2 * h_stage_bytes(27, Residency::Resident, SMS);
        assert_eq!(slots_that_fit(two, SMS, 2), 2);
        assert_eq!(slots_that_fit(two - 1, SMS, 2), 1);
    }

    /// The tails of a 32 GiB partition (docs/filecoin.md: L 3.8 M, A and B 2.7 M points) held
    /// on an H200 beside a resident set with the ones' pair sums and two slots' H stages: every
    /// G1 tail with its copies, B's in G2 gathered (its copies too beside one slot's). Beside
    /// the triple sums and two slots nothing fits.
    #[test]
    fn a_32gib_partitions_held_tails_fit_an_h200_beside_the_pair_sums_and_two_slots() {
        let lens = PARTITION_32GIB;
        let budget = 133_000_000_000u64;
        let tails = Tails {
            g1: [3_800_000, 2_700_000, 2_700_000],
            b_g2: Some(2_700_000),
        };
        let copies = held_tails_bytes(&tails, TailLayout::ALL_COPIES);
        let gathered = held_tails_bytes(&tails, TailLayout::GATHERED);
        // the points, 96 bytes each in G1 and 192 in G2 (each buffer rounded to a granule), and
        // the last tail's index list while it is gathered
        let points = 9_200_000 * 96 + 2_700_000 * 192;
        assert!(
            (points..points + 11_000_000 + 4 * GRANULE).contains(&gathered),
            "{gathered}"
        );
        assert!(copies >= 8 * gathered, "{copies}");
        let room = |sums, slots: u64| {
            let set = resident_bytes_summed(27, &lens, sums);
            let h = h_stage_lease(27, Residency::Resident, set, slots as usize, budget, SMS);
            budget.saturating_sub(set + slots * h)
        };
        let g1_copies = held_tails_bytes(&tails, TailLayout::G1_COPIES);
        assert_eq!(
            held_tails_granted(&tails, room(OnesSums::Pairs, 2)),
            Some(TailLayout::G1_COPIES),
            "{g1_copies} > {}",
            room(OnesSums::Pairs, 2)
        );
        assert_eq!(
            held_tails_granted(&tails, room(OnesSums::Pairs, 1)),
            Some(TailLayout::ALL_COPIES),
            "{copies} > {}",
            room(OnesSums::Pairs, 1)
        );
        assert_eq!(held_tails_granted(&tails, room(OnesSums::Triples, 2)), None);
    }

    #[test]
    fn the_ones_sums_take_only_the_room_the_h_stages_leave() {
        let lens = PARTITION_32GIB;
        let r = Residency::Resident;
        let plain = resident_bytes(27, &lens, r);
        let paired = resident_bytes_summed(27, &lens, OnesSums::Pairs);
        let tripled = resident_bytes_summed(27, &lens, OnesSums::Triples);
        // half as many points again for L, A and B in G1 and B in G2 with pairs, four thirds
        // as many with triples (each buffer rounded to a granule)
        let extra = |bases: usize, sums: usize| {
            let g1 = [lens.l, lens.a, lens.b_g1].map(|p| (p.div_ceil(bases) * sums) as u64 * 96);
            g1.iter().sum::<u64>() + (lens.b_g2.div_ceil(bases) * sums) as u64 * 192
        };
        assert!(
            (paired - plain).abs_diff(extra(2, 1)) <= 4 * GRANULE,
            "{paired} - {plain}"
        );
        assert!(
            (tripled - plain).abs_diff(extra(3, 4)) <= 4 * GRANULE,
            "{tripled} - {plain}"
        );
        // a set that asks for them makes the largest its lease covers
        let granted = |wanted, lease| ones_sums_granted(wanted, lease, 27, &lens, None);
        assert_eq!(granted(OnesSums::Pairs, paired), OnesSums::Pairs);
        assert_eq!(granted(OnesSums::Pairs, tripled), OnesSums::Pairs);
        assert_eq!(granted(OnesSums::Pairs, paired - 1), OnesSums::Absent);
        assert_eq!(granted(OnesSums::Pairs, plain), OnesSums::Absent);
        assert_eq!(granted(OnesSums::Triples, tripled), OnesSums::Triples);
        assert_eq!(granted(OnesSums::Triples, tripled - 1), OnesSums::Pairs);
        assert_eq!(granted(OnesSums::Triples, paired - 1), OnesSums::Absent);
        // and one that does not never does
        assert_eq!(granted(OnesSums::Absent, u64::MAX), OnesSums::Absent);
        let h200 = 133_000_000_000;
        let lease = |wanted, slots, budget| resident_lease(27, &lens, wanted, slots, budget, SMS);
        // one slot keeps its one-chunk H stage beside the triples, two beside the pairs only
        assert_eq!(lease(OnesSums::Triples, 1, h200), tripled);
        assert_eq!(lease(OnesSums::Triples, 2, h200), paired);
        for slots in [1, 2] {
            assert_eq!(lease(OnesSums::Pairs, slots, h200), paired);
            assert_eq!(lease(OnesSums::Absent, slots, h200), plain);
            assert_eq!(
                h_stage_lease(27, r, paired, slots, h200, SMS),
                h_stage_lease(27, r, plain, slots, h200, SMS)
            );
        }
        assert_eq!(
            h_stage_lease(27, r, tripled, 1, h200, SMS),
            h_stage_lease(27, r, plain, 1, h200, SMS)
        );
        // four slots' H stages leave no room for any, nor does a card of 80 GB with one slot
        for wanted in [OnesSums::Pairs, OnesSums::Triples] {
            assert_eq!(lease(wanted, 4, h200), plain);
            assert_eq!(lease(wanted, 1, 76_000_000_000), plain);
        }
    }

    #[test]
    fn a_small_set_holds_ones_sums_only_when_it_asks_for_them() {
        // a domain of 2^10 with few bases: the NTT tables' build peak is the whole lease, so the
        // lease sized without subset sums covers them too
        let lens = QueryLens {
            h: (1 << 10) - 1,
            l: 300,
            a: 500,
            b_g1: 400,
            b_g2: 400,
        };
        let plain = resident_bytes(10, &lens, Residency::Resident);
        for sums in [OnesSums::Absent, OnesSums::Pairs, OnesSums::Triples] {
            assert_eq!(plain, resident_bytes_summed(10, &lens, sums));
            assert_eq!(ones_sums_granted(sums, plain, 10, &lens, None), sums);
        }
    }

    #[test]
    fn the_h_stage_takes_the_largest_chunk_its_device_holds_for_every_slot() {
        let r = Residency::Resident;
        let resident = resident_bytes(27, &PARTITION_32GIB, r);
        let d = MsmConfig::default();
        let one_chunk = MsmConfig {
            max_chunk_log: 27,
            ..d
        };
        let small = h_stage_bytes(27, r, SMS);
        let large = h_stage_bytes_with(27, r, &one_chunk, SMS);
        // one chunk of 2^27: the sort's entries for twice the points, ~3.5 GB more
        assert!(large > small + 3_000_000_000, "{large} against {small}");
        // an H200's budget holds two slots of one chunk, not four
        let h200 = 133_000_000_000;
        assert_eq!(h_stage_lease(27, r, resident, 1, h200, SMS), large);
        assert_eq!(h_stage_lease(27, r, resident, 2, h200, SMS), large);
        assert_eq!(h_stage_lease(27, r, resident, 4, h200, SMS), small);
        // and the stage runs the largest chunk its lease covers
        assert_eq!(h_stage_msm_config(27, r, large, SMS), one_chunk);
        assert_eq!(h_stage_msm_config(27, r, large - 1, SMS), d);
        assert_eq!(h_stage_msm_config(27, r, small, SMS), d);
        // below 2^27 points one chunk is the default's: the same bytes either way
        assert_eq!(
            h_stage_lease(24, r, resident, 4, h200, SMS),
            h_stage_bytes(24, r, SMS)
        );
        // streamed, the chunk follows the streamed bases, whatever the lease
        let streamed = h_stage_lease(27, Residency::Streamed, 0, 4, h200, SMS);
        assert_eq!(streamed, h_stage_bytes(27, Residency::Streamed, SMS));
    }
}
