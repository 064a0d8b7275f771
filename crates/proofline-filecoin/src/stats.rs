//! Proportions of zero, one and other scalars in the MSMs of a synthesized partition.
//!
//! Filecoin circuits are mostly bits: most aux values are 0 or 1. The prover skips zeros, adds
//! the bases of ones, and runs Pippenger only on the rest ("other"); these figures size that
//! split (and a GPU benchmark that mimics a real partition's shape). "other ≤ 64 bits" counts
//! the other scalars whose canonical value fits in 64 bits (small constants, packed bits).
//! "1+1 pairs" counts the pairs of bases (2j, 2j + 1) whose scalars are both one: with the
//! pair sums of a query's bases on the GPU (`proofline_gpu::OnesSums`), each such pair is
//! one addition of the ones' sum instead of two. "over 3s" is the share of the ones that the
//! ones' sum still adds over the subset sums of aligned triples (bases 3j, 3j + 1, 3j + 2): one
//! point per triple with a one.
//!
//! [`overlap`] compares two partitions of one circuit: which bases are in both tails (the
//! "other" scalars) and which in both ones. Which variables are field elements (hash outputs,
//! Merkle siblings) and which are bits is set by the circuit, so where the tails coincide, a
//! tail's bases can be gathered (and their multiples precomputed) once per parameter set instead
//! of once per partition.

use ff::PrimeField;
use proofline_groth16::{MsmPlan, SparseScalars, SynthesizedPartition};
use serde::Serialize;

/// The split of one query's scalars.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct QueryStats {
    /// Query name (`A`, `B`, `L`, `aux`).
    pub query: &'static str,
    /// Scalars (= bases of the query).
    pub scalars: usize,
    /// Scalars equal to zero.
    pub zeros: usize,
    /// Scalars equal to one.
    pub ones: usize,
    /// Other scalars.
    pub other: usize,
    /// Other scalars below 2^64.
    pub other_le_64_bits: usize,
    /// Pairs of bases (2j, 2j + 1) whose scalars are both one.
    pub one_pairs: usize,
    /// `one_pairs / (ones / 2)`: the share of the ones that come in such pairs (the fraction
    /// if ones were independent would be the ones' density).
    pub one_pair_frac: f64,
    /// Aligned triples of bases (3j, 3j + 1, 3j + 2) with a scalar equal to one: the points
    /// of the ones' sum over the triples' subset sums.
    pub one_triples: usize,
    /// `one_triples / ones`: the share of the ones' additions left over the triples' sums.
    pub one_triple_frac: f64,
    /// `zeros / scalars`.
    pub zero_frac: f64,
    /// `ones / scalars`.
    pub one_frac: f64,
    /// `other / scalars`.
    pub other_frac: f64,
}

impl QueryStats {
    /// Statistics of a split query.
    pub fn of(query: &'static str, s: &SparseScalars) -> Self {
        let scalars = s.len();
        let frac = |n: usize| {
            if scalars == 0 {
                0.0
            } else {
                n as f64 / scalars as f64
            }
        };
        let other_le_64_bits = s
            .tail_scalars
            .iter()
            .filter(|x| x.to_repr().as_ref()[8..].iter().all(|b| *b == 0))
            .count();
        // both bits of a pair set: bit 2j of x & (x >> 1) (32-bit words hold whole pairs)
        let one_pairs = s
            .ones
            .words()
            .iter()
            .map(|x| (x & (x >> 1) & 0x5555_5555).count_ones() as usize)
            .sum();
        let mut one_triples = 0;
        let mut last = None;
        for i in s.ones.iter() {
            if last != Some(i / 3) {
                one_triples += 1;
                last = Some(i / 3);
            }
        }
        let ones = s.ones.len();
        QueryStats {
            query,
            scalars,
            zeros: s.zeros,
            ones: s.ones.len(),
            other: s.tail_index.len(),
            other_le_64_bits,
            one_pairs,
            one_pair_frac: if ones == 0 {
                0.0
            } else {
                2.0 * one_pairs as f64 / ones as f64
            },
            one_triples,
            one_triple_frac: if ones == 0 {
                0.0
            } else {
                one_triples as f64 / ones as f64
            },
            zero_frac: frac(s.zeros),
            one_frac: frac(s.ones.len()),
            other_frac: frac(s.tail_index.len()),
        }
    }
}

/// Shape and scalar split of one partition.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PartitionStats {
    /// Constraints (before padding).
    pub constraints: usize,
    /// Public inputs including ONE.
    pub inputs: usize,
    /// Aux variables.
    pub aux: usize,
    /// NTT domain size.
    pub domain: usize,
    /// A, B (same split for G1 and G2), L, and all aux values.
    pub queries: Vec<QueryStats>,
}

/// Statistics of a synthesized partition.
pub fn partition_stats(p: &SynthesizedPartition) -> PartitionStats {
    let plan = MsmPlan::build(&p.assignment);
    let aux = SparseScalars::from_dense(&p.assignment.aux);
    PartitionStats {
        constraints: p.num_constraints(),
        inputs: p.assignment.input.len(),
        aux: p.assignment.aux.len(),
        domain: p.num_constraints().max(1).next_power_of_two(),
        queries: vec![
            QueryStats::of("A", &plan.a),
            QueryStats::of("B", &plan.b),
            QueryStats::of("L", &plan.l),
            QueryStats::of("aux", &aux),
        ],
    }
}

/// How far two partitions' bases of one kind (tail or ones) coincide in one query.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Shared {
    /// Bases of the first partition.
    pub first: usize,
    /// Bases of the second partition.
    pub second: usize,
    /// Bases in both.
    pub shared: usize,
    /// `shared / |first ∪ second|` (1 when both are empty).
    pub frac: f64,
}

impl Shared {
    fn new(first: usize, second: usize, shared: usize) -> Self {
        let union = first + second - shared;
        Shared {
            first,
            second,
            shared,
            frac: if union == 0 {
                1.0
            } else {
                shared as f64 / union as f64
            },
        }
    }
}

/// Indices in both of two ascending index lists.
fn in_both(x: &[u32], y: &[u32]) -> usize {
    let (mut i, mut j, mut both) = (0, 0, 0);
    while i < x.len() && j < y.len() {
        match x[i].cmp(&y[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                both += 1;
                i += 1;
                j += 1;
            }
        }
    }
    both
}

/// How far two partitions' splits of one query coincide: their tails and their ones.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct QueryOverlap {
    /// Query name (`A`, `B`, `L`).
    pub query: &'static str,
    /// The bases with an "other" scalar.
    pub tail: Shared,
    /// The bases with a scalar equal to one.
    pub ones: Shared,
}

impl QueryOverlap {
    /// The overlap of two splits of one query.
    pub fn of(query: &'static str, first: &SparseScalars, second: &SparseScalars) -> Self {
        let (x, y) = (&first.tail_index, &second.tail_index);
        let ones_in_both = (first.ones.words().iter())
            .zip(second.ones.words())
            .map(|(a, b)| (a & b).count_ones() as usize)
            .sum();
        QueryOverlap {
            query,
            tail: Shared::new(x.len(), y.len(), in_both(x, y)),
            ones: Shared::new(first.ones.len(), second.ones.len(), ones_in_both),
        }
    }
}

/// The overlap of the A, B and L splits of two partitions of one circuit.
pub fn overlap(first: &MsmPlan, second: &MsmPlan) -> Vec<QueryOverlap> {
    vec![
        QueryOverlap::of("A", &first.a, &second.a),
        QueryOverlap::of("B", &first.b, &second.b),
        QueryOverlap::of("L", &first.l, &second.l),
    ]
}

/// A plain-text table of two partitions' overlap.
pub fn overlap_table(o: &[QueryOverlap]) -> String {
    let mut out = format!(
        "{:<5} {:>10} {:>10} {:>10} {:>8} {:>10} {:>10} {:>10} {:>8}\n",
        "query", "tail 1", "tail 2", "shared", "of all", "ones 1", "ones 2", "shared", "of all"
    );
    for q in o {
        out.push_str(&format!(
            "{:<5} {:>10} {:>10} {:>10} {:>7.2}% {:>10} {:>10} {:>10} {:>7.2}%\n",
            q.query,
            q.tail.first,
            q.tail.second,
            q.tail.shared,
            100.0 * q.tail.frac,
            q.ones.first,
            q.ones.second,
            q.ones.shared,
            100.0 * q.ones.frac
        ));
    }
    out
}

/// A plain-text table of the statistics.
pub fn table(s: &PartitionStats) -> String {
    let mut out = format!(
        "constraints {}  inputs {}  aux {}  domain {}\n{:<5} {:>10} {:>8} {:>8} {:>8} {:>12} {:>10} {:>8}\n",
        s.constraints,
        s.inputs,
        s.aux,
        s.domain,
        "query",
        "scalars",
        "zero",
        "one",
        "other",
        "other<=64bit",
        "1+1 pairs",
        "over 3s"
    );
    for q in &s.queries {
        out.push_str(&format!(
            "{:<5} {:>10} {:>7.2}% {:>7.2}% {:>7.2}% {:>12} {:>9.2}% {:>7.2}%\n",
            q.query,
            q.scalars,
            100.0 * q.zero_frac,
            100.0 * q.one_frac,
            100.0 * q.other_frac,
            q.other_le_64_bits,
            100.0 * q.one_pair_frac,
            100.0 * q.one_triple_frac
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use blstrs::Scalar;

    #[test]
    fn fractions_add_up() {
        let v = [
            Scalar::from(0u64),
            Scalar::from(1u64),
            Scalar::from(5u64),
            -Scalar::from(1u64),
        ];
        let q = QueryStats::of("x", &SparseScalars::from_dense(&v));
        assert_eq!((q.zeros, q.ones, q.other, q.other_le_64_bits), (1, 1, 2, 1));
        assert!((q.zero_frac + q.one_frac + q.other_frac - 1.0).abs() < 1e-12);
        assert_eq!(q.one_pairs, 0);
    }

    #[test]
    fn pairs_of_ones_are_aligned_pairs() {
        let (zero, one) = (Scalar::from(0u64), Scalar::from(1u64));
        // pairs (0, 1) both ones, (2, 3) one and zero, (4, 5) zero and one; ones at 5 and 6 are
        // neighbours but not a pair; (32, 33) spans no word boundary; 34 is alone at the end
        let mut v = vec![one, one, one, zero, zero, one, one, zero];
        v.resize(32, zero);
        v.extend([one, one, one]);
        let q = QueryStats::of("x", &SparseScalars::from_dense(&v));
        assert_eq!((q.ones, q.one_pairs), (8, 2));
        assert!((q.one_pair_frac - 0.5).abs() < 1e-12);
        // triples (0, 1, 2) three ones, (3, 4, 5) one, (6, 7, 8) one, (30, 31, 32) one across a
        // word boundary, (33, 34, 35) two: five points for eight ones
        assert_eq!(q.one_triples, 5);
        assert!((q.one_triple_frac - 5.0 / 8.0).abs() < 1e-12);
    }

    #[test]
    fn overlap_counts_bases_in_both_splits() {
        let (zero, one, x) = (Scalar::from(0u64), Scalar::from(1u64), Scalar::from(7u64));
        // tails {1, 2, 4} and {2, 3, 4, 5}: shared {2, 4} of five; ones {3} and {0}: none of two
        let first = SparseScalars::from_dense(&[zero, x, x, one, x, zero]);
        let second = SparseScalars::from_dense(&[one, zero, x, x, x, x]);
        let o = QueryOverlap::of("x", &first, &second);
        assert_eq!((o.tail.first, o.tail.second, o.tail.shared), (3, 4, 2));
        assert!((o.tail.frac - 0.4).abs() < 1e-12);
        assert_eq!((o.ones.first, o.ones.second, o.ones.shared), (1, 1, 0));
        assert_eq!(o.ones.frac, 0.0);
        let same = QueryOverlap::of("x", &first, &first);
        assert_eq!((same.tail.shared, same.tail.frac), (3, 1.0));
        assert_eq!((same.ones.shared, same.ones.frac), (1, 1.0));
        let none = SparseScalars::from_dense(&[zero, zero]);
        assert_eq!(QueryOverlap::of("x", &none, &none).tail.frac, 1.0);
        assert_eq!(QueryOverlap::of("x", &first, &none).tail.frac, 0.0);
    }
}
