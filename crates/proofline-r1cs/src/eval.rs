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
    match &x.coeffs {
        CoeffIndices::U8(k) => spmv_with(x, k, table, input, aux, out),
        CoeffIndices::U16(k) => spmv_with(x, k, table, input, aux, out),
        CoeffIndices::U32(k) => spmv_with(x, k, table, input, aux, out),
    }
}

fn spmv_with<K: Copy + Into<u32> + Sync>(
    x: &Csr,
    coeffs: &[K],
    table: &[Scalar],
    input: &[Scalar],
    aux: &[Scalar],
    out: &mut Vec<Scalar>,
) {
    let (row_ptr, cols) = (&x.row_ptr, &x.cols);
    (0..x.rows())
        .into_par_iter()
        .with_min_len(MIN_ROWS_PER_TASK)
        .map(|r| {
            let (s, e) = (row_ptr[r] as usize, row_ptr[r + 1] as usize);
            row(&cols[s..e], &coeffs[s..e], table, input, aux)
        })
        .collect_into_vec(out);
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
    match &x.coeffs {
        CoeffIndices::U8(k) => first_row_off_with(x, k, table, input, aux, a, b),
        CoeffIndices::U16(k) => first_row_off_with(x, k, table, input, aux, a, b),
        CoeffIndices::U32(k) => first_row_off_with(x, k, table, input, aux, a, b),
    }
}

fn first_row_off_with<K: Copy + Into<u32> + Sync>(
    x: &Csr,
    coeffs: &[K],
    table: &[Scalar],
    input: &[Scalar],
    aux: &[Scalar],
    a: &[Scalar],
    b: &[Scalar],
) -> Option<usize> {
    let (row_ptr, cols) = (&x.row_ptr, &x.cols);
    if a.len() != x.rows() || b.len() != x.rows() {
        return Some(x.rows().min(a.len()).min(b.len()));
    }
    (0..x.rows())
        .into_par_iter()
        .with_min_len(MIN_ROWS_PER_TASK)
        .filter(|&r| {
            let (s, e) = (row_ptr[r] as usize, row_ptr[r + 1] as usize);
            row(&cols[s..e], &coeffs[s..e], table, input, aux) != a[r] * b[r]
        })
        .min()
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
