//! a and b of a partition as sparse matrix-vector products, `a = A·w` and `b = B·w`, and the
//! check that `w` satisfies every constraint: `C·w = a∘b` row by row. After the check c is the
//! pointwise product of a and b, so it is never stored: whoever needs C's evaluations (the H
//! stage) derives them, which saves a third of a partition's evaluation memory and, on a GPU, a
//! third of its upload.
//!
//! Rows are independent, so each product runs on rayon over blocks of rows. A term whose value
//! is zero is skipped; a term with coefficient index 0 (+1) is an addition, index 1 (−1) a
//! subtraction, and a term whose value is one adds its coefficient: only the rest multiply. Field
//! arithmetic is exact, so the sums equal the prover's synthesis, which adds the same terms in
//! the same order, bit for bit.

use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use crate::coeffs::{CoeffIndices, MINUS_ONE, PLUS_ONE};
use crate::csr::{Csr, INPUT_TAG};
use crate::system::RecordedSystem;
use crate::witness::Witness;
use crate::R1csError;

/// Rows per rayon task at least: small enough to balance, large enough to amortise scheduling.
const MIN_ROWS_PER_TASK: usize = 4096;

/// The evaluations of A and B at a witness that satisfies the system, one per constraint; C's
/// are their pointwise product.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Evaluations {
    /// `A·w`.
    pub a: Vec<Scalar>,
    /// `B·w`.
    pub b: Vec<Scalar>,
}

impl RecordedSystem {
    /// a and b at `w`, which must have exactly the system's inputs and aux variables and satisfy
    /// every constraint ([`R1csError::Unsatisfied`] names the first row that does not: every
    /// row is evaluated either way, so the check costs the same on any witness). Each vector
    /// has room for the NTT domain (the constraint count rounded up to a power of two), so that
    /// the H stage pads it in place.
    pub fn evaluate(&self, w: &Witness) -> Result<Evaluations, R1csError> {
        let counts = self.counts();
        if w.input.len() != counts.inputs || w.aux.len() != counts.aux {
            return Err(R1csError::WitnessShape {
                key: self.key().to_string(),
                inputs: (counts.inputs, w.input.len()),
                aux: (counts.aux, w.aux.len()),
            });
        }
        let domain = counts.constraints.max(1).next_power_of_two();
        let table = self.table();
        let m = self.matrices();
        let product = |x: &Csr| {
            let mut out = Vec::with_capacity(domain);
            spmv(x, table, &w.input, &w.aux, &mut out);
            out
        };
        let (a, b) = (product(&m.a), product(&m.b));
        if let Some(row) = first_row_off(&m.c, table, &w.input, &w.aux, &a, &b) {
            return Err(R1csError::Unsatisfied {
                key: self.key().to_string(),
                row,
            });
        }
        Ok(Evaluations { a, b })
    }
}

/// `out = x · (input ‖ aux)`, one value per row; `out` keeps its capacity.
pub fn spmv(x: &Csr, table: &[Scalar], input: &[Scalar], aux: &[Scalar], out: &mut Vec<Scalar>) {
    over_rows(x, table, input, aux, Collect(out))
}

/// The first row `r` of `x · (input ‖ aux)` that differs from `a[r]·b[r]`, if any (every row
/// is evaluated; nothing is stored).
fn first_row_off(
    x: &Csr,
    table: &[Scalar],
    input: &[Scalar],
    aux: &[Scalar],
    a: &[Scalar],
    b: &[Scalar],
) -> Option<usize> {
    if a.len() != x.rows() || b.len() != x.rows() {
        return Some(x.rows().min(a.len()).min(b.len()));
    }
    over_rows(x, table, input, aux, FirstOff { a, b })
}

/// The rows of one matrix at a witness, with coefficient indices of width `K`.
struct Rows<'a, K> {
    x: &'a Csr,
    coeffs: &'a [K],
    table: &'a [Scalar],
    input: &'a [Scalar],
    aux: &'a [Scalar],
}

impl<K: Copy + Into<u32>> Rows<'_, K> {
    #[inline]
    fn value(&self, r: usize) -> Scalar {
        let (s, e) = (self.x.row_ptr[r] as usize, self.x.row_ptr[r + 1] as usize);
        row(
            &self.x.cols[s..e],
            &self.coeffs[s..e],
            self.table,
            self.input,
            self.aux,
        )
    }
}

/// Work over every row of a matrix, compiled once per width of its coefficient indices.
trait OverRows {
    type Out;
    fn run<K: Copy + Into<u32> + Sync>(self, rows: Rows<'_, K>) -> Self::Out;
}

fn over_rows<W: OverRows>(
    x: &Csr,
    table: &[Scalar],
    input: &[Scalar],
    aux: &[Scalar],
    work: W,
) -> W::Out {
    match &x.coeffs {
        CoeffIndices::U8(coeffs) => work.run(Rows {
            x,
            coeffs,
            table,
            input,
            aux,
        }),
        CoeffIndices::U16(coeffs) => work.run(Rows {
            x,
            coeffs,
            table,
            input,
            aux,
        }),
        CoeffIndices::U32(coeffs) => work.run(Rows {
            x,
            coeffs,
            table,
            input,
            aux,
        }),
    }
}

/// Every row's value, in order.
struct Collect<'o>(&'o mut Vec<Scalar>);

impl OverRows for Collect<'_> {
    type Out = ();
    fn run<K: Copy + Into<u32> + Sync>(self, rows: Rows<'_, K>) {
        (0..rows.x.rows())
            .into_par_iter()
            .with_min_len(MIN_ROWS_PER_TASK)
            .map(|r| rows.value(r))
            .collect_into_vec(self.0);
    }
}

/// The first row whose value is not `a[r]·b[r]`.
struct FirstOff<'a> {
    a: &'a [Scalar],
    b: &'a [Scalar],
}

impl OverRows for FirstOff<'_> {
    type Out = Option<usize>;
    fn run<K: Copy + Into<u32> + Sync>(self, rows: Rows<'_, K>) -> Option<usize> {
        (0..rows.x.rows())
            .into_par_iter()
            .with_min_len(MIN_ROWS_PER_TASK)
            .filter(|&r| rows.value(r) != self.a[r] * self.b[r])
            .min()
    }
}

#[inline]
fn row<K: Copy + Into<u32>>(
    cols: &[u32],
    coeffs: &[K],
    table: &[Scalar],
    input: &[Scalar],
    aux: &[Scalar],
) -> Scalar {
    let mut acc = Scalar::ZERO;
    for (&c, &k) in cols.iter().zip(coeffs) {
        let v = if c & INPUT_TAG != 0 {
            &input[(c & !INPUT_TAG) as usize]
        } else {
            &aux[c as usize]
        };
        // Most values of Filecoin circuits are bits: a zero adds nothing, a one adds its
        // coefficient; only the other values need a multiplication.
        if *v == Scalar::ZERO {
            continue;
        }
        match k.into() {
            PLUS_ONE => acc += v,
            MINUS_ONE => acc -= v,
            k if *v == Scalar::ONE => acc += &table[k as usize],
            k => acc += *v * table[k as usize],
        }
    }
    acc
}
