//! CPU-side planning for the GPU kernels, unit-tested on every machine: MSM
//! window sizing and signed-digit decomposition (the reference for
//! `cuda/msm.cu`), NTT pass planning (`cuda/ntt.cu`), power tables, and the
//! host-side final reductions (window combination). Constants the kernels also
//! use come from `abi.rs`.

use blstrs::{G1Projective, Scalar};
use ff::{Field, PrimeField};
use group::Group;

pub use crate::abi::{ACC_BLOCKS_PER_SM, ACC_THREADS, BIG_PER_BLOCK, NTT_TILE_LOG, REDUCE_SEGMENT};

/// Bits of a scalar that the digit decomposition covers (r < 2^255, plus one
/// spare bit for the final signed-digit carry).
pub const SCALAR_BITS: u32 = 256;
/// Largest window the GPU uses (bucket memory grows as 2^(c-1)).
pub const MAX_WINDOW: u32 = 20;
/// Smallest window.
pub const MIN_WINDOW: u32 = 8;
/// Largest number of points handled by one Pippenger chunk on the device
/// (sort buffer: windows x chunk x 4 bytes = 3.5 GB at c = 20).
pub const MSM_MAX_CHUNK: usize = 1 << 26;

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
    /// Window choice: about log2(n) - 4 bits in [MIN_WINDOW, 16], and
    /// MAX_WINDOW (13 windows) from 2^22 points. Windows 17..19 would only
    /// add a nearly empty top window (255 = 15 * 17) for no fewer windows.
    pub fn for_points(n: usize) -> Self {
        let lg = usize::BITS - n.max(1).leading_zeros() - 1;
        let c = if lg >= 22 {
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
pub fn combine_windows(windows: &[G1Projective], c: u32) -> G1Projective {
    let mut acc = G1Projective::identity();
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
    use rand_chacha::rand_core::SeedableRng;

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
        assert_eq!(WindowPlan::for_points(1 << 22).c, 20);
        assert_eq!(WindowPlan::for_points(1 << 24).c, 20);
        assert_eq!(WindowPlan::for_points(1 << 27).c, 20);
        for n in [1usize, 100, 1 << 10, 1 << 20, 1 << 26] {
            let p = WindowPlan::for_points(n);
            assert_eq!(p.segments() * p.segment_len(), p.nb);
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
