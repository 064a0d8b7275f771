//! Multi-scalar multiplication inputs and the CPU implementations.
//!
//! The sparse queries of Groth16 (A, B in G1 and G2, L) mostly see scalars that are 0 or 1 in
//! Filecoin circuits. [`SparseScalars`] splits a query's scalars once: zeros are dropped, the
//! bases whose scalar is one (a bitmap of them) are summed with plain additions, and only the
//! rest (the "tail") goes through Pippenger. [`MsmPlan::build`] maps an [`Assignment`] onto the bases of each
//! query, following the density rules of bellperson's parameter layout:
//!
//! * `A`: one base per input (dense), then one per aux variable set in `a_aux_density`;
//! * `B` (G1 and G2): one base per input set in `b_input_density`, then one per aux variable
//!   set in `b_aux_density`;
//! * `L`: one base per aux variable.
//!
//! The CPU MSMs use blst's Pippenger (via the `blst` crate, on its own thread pool) over the
//! blstrs point types, which are `#[repr(transparent)]` wrappers of the blst types.

use blst::{blst_p1, blst_p1_affine, blst_p2, blst_p2_affine, MultiPoint};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;
use group::Group;
use rayon::prelude::*;

use crate::bitmap::IndexBitmap;
use crate::synthesis::{Assignment, Density};

/// A query's scalars, split into the bases with scalar one and the rest ("tail").
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SparseScalars {
    /// Number of bases the query has (the indices below point into them).
    pub num_bases: usize,
    /// Bases whose scalar is exactly one: summed with plain additions.
    pub ones: IndexBitmap,
    /// Bases whose scalar is neither zero nor one.
    pub tail_index: Vec<u32>,
    /// Scalars of `tail_index`, same order.
    pub tail_scalars: Vec<Scalar>,
    /// How many scalars were zero (skipped).
    pub zeros: usize,
}

impl SparseScalars {
    /// Splits a dense scalar vector (base `i` ↔ `scalars[i]`).
    pub fn from_dense(scalars: &[Scalar]) -> Self {
        let it = scalars.iter().enumerate().map(|(i, s)| (i as u32, s));
        let mut out = SparseScalars::default();
        out.extend(it, 0);
        out.num_bases = scalars.len();
        out
    }

    /// Classifies `(base, scalar)` pairs of increasing bases, all from `origin` on; the ones go
    /// into the bitmap numbered from `origin` (see [`SparseScalars::append`]).
    fn extend<'a>(&mut self, it: impl Iterator<Item = (u32, &'a Scalar)>, origin: u32) {
        for (i, s) in it {
            if bool::from(s.is_zero()) {
                self.zeros += 1;
            } else if *s == Scalar::ONE {
                self.ones.insert(i - origin);
            } else {
                self.tail_index.push(i);
                self.tail_scalars.push(*s);
            }
        }
    }

    /// Appends the split of the next bases, whose ones are numbered from `origin`.
    fn append(&mut self, mut other: SparseScalars, origin: usize) {
        self.ones.append_shifted(&other.ones, origin);
        self.tail_index.append(&mut other.tail_index);
        self.tail_scalars.append(&mut other.tail_scalars);
        self.zeros += other.zeros;
    }

    /// Number of scalars classified.
    pub fn len(&self) -> usize {
        self.zeros + self.ones.len() + self.tail_index.len()
    }

    /// Whether no scalar was classified.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The scalar of every base, zeros included (used by tests and by dense backends).
    pub fn to_dense(&self) -> Vec<Scalar> {
        let mut v = vec![Scalar::ZERO; self.num_bases];
        for i in self.ones.iter() {
            v[i as usize] = Scalar::ONE;
        }
        for (&i, s) in self.tail_index.iter().zip(&self.tail_scalars) {
            v[i as usize] = *s;
        }
        v
    }
}

/// A query's split against a held tail: the bases of an earlier partition's tail, which a
/// backend may keep gathered side by side (the tails of a parameter set's partitions are the
/// same bases from one sector to the next). Every held base goes through Pippenger with its
/// scalar, whatever it is (a zero or a one costs there what any scalar does); the other bases
/// keep their split.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HeldSplit {
    /// The scalar of each held base, in the held list's order.
    pub held_scalars: Vec<Scalar>,
    /// The bases outside the held list: their ones, their tail and their zeros.
    pub rest: SparseScalars,
}

/// Why a held list does not fit a split.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum HeldTailError {
    /// The held bases are not strictly ascending.
    #[error("held base {index} at position {position} does not follow the one before it")]
    NotAscending {
        /// Position in the held list.
        position: usize,
        /// The base there.
        index: u32,
    },
    /// A held base beyond the query's bases.
    #[error("held base {index} is beyond the query's {num_bases} bases")]
    OutOfRange {
        /// The base.
        index: u32,
        /// Bases the query has.
        num_bases: usize,
    },
}

impl SparseScalars {
    /// This split against the held bases `held` (ascending): each held base's scalar, and the
    /// split of the other bases. `Σ held_scalars[k] · base[held[k]]` plus the rest's MSM is
    /// this split's MSM.
    pub fn against_held(&self, held: &[u32]) -> Result<HeldSplit, HeldTailError> {
        for (position, w) in held.windows(2).enumerate() {
            if w[1] <= w[0] {
                return Err(HeldTailError::NotAscending {
                    position: position + 1,
                    index: w[1],
                });
            }
        }
        if let Some(&index) = held.last().filter(|&&i| i as usize >= self.num_bases) {
            return Err(HeldTailError::OutOfRange {
                index,
                num_bases: self.num_bases,
            });
        }
        let mut rest = SparseScalars {
            num_bases: self.num_bases,
            ones: self.ones.clone(),
            tail_index: Vec::with_capacity(self.tail_index.len()),
            tail_scalars: Vec::with_capacity(self.tail_scalars.len()),
            zeros: self.zeros,
        };
        let mut held_scalars = Vec::with_capacity(held.len());
        // one merge of the two ascending lists: a tail base is held or kept
        let mut tail = self.tail_index.iter().zip(&self.tail_scalars).peekable();
        for &h in held {
            while let Some((&i, &s)) = tail.next_if(|(&i, _)| i < h) {
                rest.tail_index.push(i);
                rest.tail_scalars.push(s);
            }
            if let Some((_, &s)) = tail.next_if(|(&i, _)| i == h) {
                held_scalars.push(s);
            } else if rest.ones.remove(h) {
                held_scalars.push(Scalar::ONE);
            } else {
                // a held base neither one nor in the tail is one of the split's zeros
                rest.zeros = rest.zeros.saturating_sub(1);
                held_scalars.push(Scalar::ZERO);
            }
        }
        for (&i, &s) in tail {
            rest.tail_index.push(i);
            rest.tail_scalars.push(s);
        }
        Ok(HeldSplit { held_scalars, rest })
    }
}

/// Variables per parallel piece when splitting large assignments.
const SPLIT_CHUNK: usize = 1 << 16;

/// Splits `values[i]` for the positions selected by `density` (all when `None`), numbering the
/// selected positions from `first_base` on. Parallel over chunks of the assignment.
fn split_selected(values: &[Scalar], density: Option<&Density>, first_base: u32) -> SparseScalars {
    let chunks: Vec<(usize, usize)> = (0..values.len())
        .step_by(SPLIT_CHUNK)
        .map(|s| (s, (s + SPLIT_CHUNK).min(values.len())))
        .collect();
    // Bases before each chunk: prefix sums of selected counts.
    let counts: Vec<usize> = chunks
        .par_iter()
        .map(|&(s, e)| match density {
            Some(d) => (s..e).filter(|&i| d.get(i)).count(),
            None => e - s,
        })
        .collect();
    let mut offsets = Vec::with_capacity(counts.len());
    let mut acc = first_base as usize;
    for c in &counts {
        offsets.push(acc);
        acc += c;
    }
    let parts: Vec<(SparseScalars, usize)> = chunks
        .par_iter()
        .zip(offsets.par_iter())
        .map(|(&(s, e), &off)| {
            let mut part = SparseScalars::default();
            let mut base = off as u32;
            let selected = (s..e).filter(|&i| density.is_none_or(|d| d.get(i)));
            part.extend(
                selected.map(|i| {
                    let b = base;
                    base += 1;
                    (b, &values[i])
                }),
                off as u32,
            );
            (part, off)
        })
        .collect();
    let mut out = SparseScalars::default();
    for (p, off) in parts {
        out.append(p, off);
    }
    out.num_bases = acc;
    out
}

/// The split scalars of the three sparse queries of one partition.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MsmPlan {
    /// The A query (G1).
    pub a: SparseScalars,
    /// The B query; the same split serves B in G1 and B in G2.
    pub b: SparseScalars,
    /// The L query (G1).
    pub l: SparseScalars,
}

impl MsmPlan {
    /// Maps `asg` onto the bases of A, B and L (see the module documentation).
    pub fn build(asg: &Assignment) -> Self {
        let (a, (b, l)) = rayon::join(
            || {
                let mut a = split_selected(&asg.input, None, 0);
                let first = a.num_bases;
                let aux = split_selected(&asg.aux, Some(&asg.a_aux_density), first as u32);
                a.num_bases = aux.num_bases;
                a.append(aux, 0);
                a
            },
            || {
                rayon::join(
                    || {
                        let mut b = split_selected(&asg.input, Some(&asg.b_input_density), 0);
                        let aux =
                            split_selected(&asg.aux, Some(&asg.b_aux_density), b.num_bases as u32);
                        b.num_bases = aux.num_bases;
                        b.append(aux, 0);
                        b
                    },
                    || split_selected(&asg.aux, None, 0),
                )
            },
        );
        MsmPlan { a, b, l }
    }
}

/// Little-endian canonical bytes of the scalars, as blst's Pippenger reads them.
fn scalar_bytes(scalars: &[Scalar]) -> Vec<u8> {
    let mut out = vec![0u8; scalars.len() * 32];
    out.par_chunks_mut(32)
        .zip(scalars.par_iter())
        .for_each(|(dst, s)| dst.copy_from_slice(&s.to_bytes_le()));
    out
}

/// Curve operations the CPU MSMs need, for G1 and G2 alike.
pub trait CpuCurve: Sized {
    /// Affine points (the bases).
    type Affine: Copy + Send + Sync;
    /// Projective results.
    type Projective: Group + Copy + Send + Sync + std::iter::Sum;
    /// `Σ scalars[i] · bases[i]` with Pippenger.
    fn pippenger(bases: &[Self::Affine], scalars: &[Scalar]) -> Self::Projective;
    /// `Σ bases[i]` with plain (batched) additions, on the calling thread.
    fn sum(bases: &[Self::Affine]) -> Self::Projective;
}

/// Marker for G1.
pub struct G1;
/// Marker for G2.
pub struct G2;

impl CpuCurve for G1 {
    type Affine = G1Affine;
    type Projective = G1Projective;

    fn pippenger(bases: &[G1Affine], scalars: &[Scalar]) -> G1Projective {
        let n = bases.len().min(scalars.len());
        if n == 0 {
            return G1Projective::identity();
        }
        // SAFETY: G1Affine is #[repr(transparent)] over blst_p1_affine.
        let raw: &[blst_p1_affine] =
            unsafe { std::slice::from_raw_parts(bases.as_ptr().cast(), n) };
        let bytes = scalar_bytes(&scalars[..n]);
        let p: blst_p1 = raw.mult(&bytes, 255);
        // SAFETY: G1Projective is #[repr(transparent)] over blst_p1.
        unsafe { std::mem::transmute::<blst_p1, G1Projective>(p) }
    }

    fn sum(bases: &[G1Affine]) -> G1Projective {
        if bases.is_empty() {
            return G1Projective::identity();
        }
        let mut out = blst_p1::default();
        let ptrs: [*const blst_p1_affine; 2] = [bases.as_ptr().cast(), std::ptr::null()];
        // SAFETY: a null second pointer makes blst read `bases` as one contiguous array of
        // `bases.len()` affine points (G1Affine is #[repr(transparent)] over blst_p1_affine).
        unsafe { blst::blst_p1s_add(&mut out, ptrs.as_ptr(), bases.len()) };
        // SAFETY: G1Projective is #[repr(transparent)] over blst_p1.
        unsafe { std::mem::transmute::<blst_p1, G1Projective>(out) }
    }
}

impl CpuCurve for G2 {
    type Affine = G2Affine;
    type Projective = G2Projective;

    fn pippenger(bases: &[G2Affine], scalars: &[Scalar]) -> G2Projective {
        let n = bases.len().min(scalars.len());
        if n == 0 {
            return G2Projective::identity();
        }
        // SAFETY: G2Affine is #[repr(transparent)] over blst_p2_affine.
        let raw: &[blst_p2_affine] =
            unsafe { std::slice::from_raw_parts(bases.as_ptr().cast(), n) };
        let bytes = scalar_bytes(&scalars[..n]);
        let p: blst_p2 = raw.mult(&bytes, 255);
        // SAFETY: G2Projective is #[repr(transparent)] over blst_p2.
        unsafe { std::mem::transmute::<blst_p2, G2Projective>(p) }
    }

    fn sum(bases: &[G2Affine]) -> G2Projective {
        if bases.is_empty() {
            return G2Projective::identity();
        }
        let mut out = blst_p2::default();
        let ptrs: [*const blst_p2_affine; 2] = [bases.as_ptr().cast(), std::ptr::null()];
        // SAFETY: as for G1: one contiguous array of `bases.len()` points.
        unsafe { blst::blst_p2s_add(&mut out, ptrs.as_ptr(), bases.len()) };
        // SAFETY: G2Projective is #[repr(transparent)] over blst_p2.
        unsafe { std::mem::transmute::<blst_p2, G2Projective>(out) }
    }
}

/// Errors of the MSM entry points.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MsmError {
    /// A split refers to more bases than the parameters hold.
    #[error("{query} query needs {needed} bases but the parameters hold {available}")]
    NotEnoughBases {
        /// Which query.
        query: &'static str,
        /// Bases the assignment maps onto.
        needed: usize,
        /// Bases in the parameters.
        available: usize,
    },
}

/// `Err(NotEnoughBases)` unless `available >= needed` (every backend checks before an MSM).
pub fn check_bases(query: &'static str, needed: usize, available: usize) -> Result<(), MsmError> {
    if needed > available {
        return Err(MsmError::NotEnoughBases {
            query,
            needed,
            available,
        });
    }
    Ok(())
}

/// Dense MSM on the CPU.
pub fn msm_dense<C: CpuCurve>(bases: &[C::Affine], scalars: &[Scalar]) -> C::Projective {
    C::pippenger(bases, scalars)
}

/// Bitmap words per piece when summing the "ones" (32 bases each).
const SUM_WORDS: usize = 1 << 7;

/// `Σ bases[i]` over the indices in `ones`, in parallel pieces, each gathered and summed with
/// batched additions.
pub fn sum_selected<C: CpuCurve>(bases: &[C::Affine], ones: &IndexBitmap) -> C::Projective {
    ones.words()
        .par_chunks(SUM_WORDS)
        .enumerate()
        .map(|(k, _)| {
            let lo = k * SUM_WORDS * 32;
            let pts: Vec<C::Affine> = ones
                .iter_range(lo, lo + SUM_WORDS * 32)
                .map(|i| bases[i as usize])
                .collect();
            C::sum(&pts)
        })
        .sum()
}

/// Sparse MSM on the CPU: skip zeros, add the ones, Pippenger on the tail.
pub fn msm_sparse<C: CpuCurve>(
    bases: &[C::Affine],
    split: &SparseScalars,
    query: &'static str,
) -> Result<C::Projective, MsmError> {
    check_bases(query, split.num_bases, bases.len())?;
    let (ones, tail) = rayon::join(
        || sum_selected::<C>(bases, &split.ones),
        || {
            let tail_bases: Vec<C::Affine> = split
                .tail_index
                .par_iter()
                .map(|&i| bases[i as usize])
                .collect();
            C::pippenger(&tail_bases, &split.tail_scalars)
        },
    );
    Ok(ones + tail)
}

#[cfg(test)]
mod tests {
    use super::*;
    use group::Curve;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    fn mixed_scalars(n: usize, rng: &mut impl Rng) -> Vec<Scalar> {
        (0..n)
            .map(|_| match rng.gen_range(0..10) {
                0..=5 => Scalar::ZERO,
                6..=8 => Scalar::ONE,
                _ => Scalar::random(&mut *rng),
            })
            .collect()
    }

    fn naive<C: CpuCurve>(bases: &[C::Affine], scalars: &[Scalar]) -> C::Projective
    where
        C::Projective: From<C::Affine> + std::ops::Mul<Scalar, Output = C::Projective>,
    {
        bases
            .iter()
            .zip(scalars)
            .map(|(b, s)| C::Projective::from(*b) * *s)
            .sum()
    }

    #[test]
    fn g1_dense_and_sparse_match_naive() {
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        for n in [0usize, 1, 5, 100, 700] {
            let bases: Vec<G1Affine> = (0..n)
                .map(|_| G1Projective::random(&mut rng).to_affine())
                .collect();
            let scalars = mixed_scalars(n, &mut rng);
            let expect = naive::<G1>(&bases, &scalars);
            assert_eq!(msm_dense::<G1>(&bases, &scalars), expect, "dense n={n}");
            let split = SparseScalars::from_dense(&scalars);
            assert_eq!(split.len(), n);
            assert_eq!(split.to_dense(), scalars);
            assert_eq!(
                msm_sparse::<G1>(&bases, &split, "t").unwrap(),
                expect,
                "sparse n={n}"
            );
        }
    }

    #[test]
    fn a_split_against_held_bases_keeps_its_msm() {
        let mut rng = ChaCha20Rng::seed_from_u64(9);
        let n = 600;
        let bases: Vec<G1Affine> = (0..n)
            .map(|_| G1Projective::random(&mut rng).to_affine())
            .collect();
        let scalars = mixed_scalars(n, &mut rng);
        let split = SparseScalars::from_dense(&scalars);
        let expect = naive::<G1>(&bases, &scalars);
        // an earlier partition's tail (part of it this one's tail, part ones and zeros), none,
        // every base, and this split's own tail
        let earlier = SparseScalars::from_dense(&mixed_scalars(n, &mut rng)).tail_index;
        let every: Vec<u32> = (0..n as u32).collect();
        for held in [earlier, Vec::new(), every, split.tail_index.clone()] {
            let h = split.against_held(&held).unwrap();
            assert_eq!(h.held_scalars.len(), held.len());
            assert_eq!(h.rest.len() + held.len(), n);
            // the scalars of the held bases and of the rest make the query's
            let mut dense = h.rest.to_dense();
            for (&i, s) in held.iter().zip(&h.held_scalars) {
                assert_eq!(dense[i as usize], Scalar::ZERO, "base {i} held and kept");
                dense[i as usize] = *s;
            }
            assert_eq!(dense, scalars);
            let held_bases: Vec<G1Affine> = held.iter().map(|&i| bases[i as usize]).collect();
            let sum = naive::<G1>(&held_bases, &h.held_scalars)
                + msm_sparse::<G1>(&bases, &h.rest, "t").unwrap();
            assert_eq!(sum, expect, "held {}", held.len());
        }
        // held as the split's own tail: nothing of the tail is left, the ones stay
        let own = split.against_held(&split.tail_index).unwrap();
        assert!(own.rest.tail_index.is_empty());
        assert_eq!(own.rest.ones, split.ones);
    }

    #[test]
    fn held_bases_out_of_order_or_range_are_errors() {
        let split = SparseScalars::from_dense(&[Scalar::ONE; 4]);
        assert_eq!(
            split.against_held(&[0, 2, 2]),
            Err(HeldTailError::NotAscending {
                position: 2,
                index: 2
            })
        );
        assert_eq!(
            split.against_held(&[1, 4]),
            Err(HeldTailError::OutOfRange {
                index: 4,
                num_bases: 4
            })
        );
    }

    #[test]
    fn g2_sparse_matches_naive() {
        let mut rng = ChaCha20Rng::seed_from_u64(8);
        let n = 300;
        let bases: Vec<G2Affine> = (0..n)
            .map(|_| G2Projective::random(&mut rng).to_affine())
            .collect();
        let scalars = mixed_scalars(n, &mut rng);
        let split = SparseScalars::from_dense(&scalars);
        assert_eq!(
            msm_sparse::<G2>(&bases, &split, "t").unwrap(),
            naive::<G2>(&bases, &scalars)
        );
    }

    #[test]
    fn too_few_bases_is_an_error() {
        let split = SparseScalars::from_dense(&[Scalar::ONE; 4]);
        let err =
            msm_sparse::<G1>(&[G1Projective::generator().to_affine(); 3], &split, "l").unwrap_err();
        assert!(matches!(
            err,
            MsmError::NotEnoughBases {
                needed: 4,
                available: 3,
                ..
            }
        ));
    }

    #[test]
    fn plan_follows_densities() {
        let mut rng = ChaCha20Rng::seed_from_u64(9);
        let aux = mixed_scalars(SPLIT_CHUNK * 2 + 17, &mut rng);
        let mut a_aux_density = Density::new();
        let mut b_aux_density = Density::new();
        for i in 0..aux.len() {
            a_aux_density.push(i % 3 != 0);
            b_aux_density.push(i % 5 == 0);
        }
        let input = vec![Scalar::ONE, Scalar::from(5u64), Scalar::ZERO];
        let mut b_input_density = Density::new();
        for i in 0..input.len() {
            b_input_density.push(i != 1);
        }
        let asg = Assignment {
            input: input.clone(),
            aux: aux.clone(),
            a_aux_density: a_aux_density.clone(),
            b_input_density: b_input_density.clone(),
            b_aux_density: b_aux_density.clone(),
        };
        let plan = MsmPlan::build(&asg);
        // Expected dense scalar vectors per query, by the layout rules.
        let mut a_exp = input.clone();
        a_exp.extend(
            (0..aux.len())
                .filter(|&i| a_aux_density.get(i))
                .map(|i| aux[i]),
        );
        let mut b_exp: Vec<Scalar> = (0..input.len())
            .filter(|&i| b_input_density.get(i))
            .map(|i| input[i])
            .collect();
        b_exp.extend(
            (0..aux.len())
                .filter(|&i| b_aux_density.get(i))
                .map(|i| aux[i]),
        );
        assert_eq!(plan.a.to_dense(), a_exp);
        assert_eq!(plan.b.to_dense(), b_exp);
        assert_eq!(plan.l.to_dense(), aux);
        assert_eq!(plan.l.num_bases, aux.len());
    }
}
