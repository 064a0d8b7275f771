//! A recorded constraint system: everything about a circuit that depends only on its shape.

use blstrs::Scalar;
use rayon::prelude::*;

use crate::coeffs::CoeffTable;
use crate::csr::{Column, Csr};
use crate::density::Density;
use crate::R1csError;

/// The three matrices.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Matrices {
    /// A.
    pub a: Csr,
    /// B.
    pub b: Csr,
    /// C.
    pub c: Csr,
}

impl Matrices {
    /// A, B, C in order.
    pub fn iter(&self) -> [&Csr; 3] {
        [&self.a, &self.b, &self.c]
    }
}

/// Variable and constraint counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShapeCounts {
    /// Public inputs, ONE included.
    pub inputs: usize,
    /// Aux variables.
    pub aux: usize,
    /// Constraints, the `input_i · 0 = 0` ones included.
    pub constraints: usize,
}

/// A circuit's A, B, C matrices, coefficient table, densities and counts.
///
/// Built by [`crate::Recorder::finish`] or read by [`crate::file::read`]; both check it
/// ([`RecordedSystem::new`]) so that evaluation never indexes out of bounds.
#[derive(Clone, Debug)]
pub struct RecordedSystem {
    key: String,
    origin: String,
    counts: ShapeCounts,
    table: Vec<Scalar>,
    m: Matrices,
    a_aux_density: Density,
    b_input_density: Density,
    b_aux_density: Density,
}

impl RecordedSystem {
    /// Checks the parts against each other: every matrix has one row per constraint and
    /// monotone offsets, every column names an allocated variable, every coefficient index is in
    /// the table (which starts with +1 and −1, all distinct), and the densities have one bit per
    /// variable.
    pub fn new(
        key: String,
        origin: String,
        counts: ShapeCounts,
        table: Vec<Scalar>,
        m: Matrices,
        [a_aux_density, b_input_density, b_aux_density]: [Density; 3],
    ) -> Result<Self, R1csError> {
        let bad = |what: String| Err(R1csError::Malformed(what));
        if CoeffTable::from_values(table.clone()).is_none() {
            return bad(
                "the coefficient table does not start with +1, −1 or repeats a value".into(),
            );
        }
        for (name, d, len) in [
            ("A aux", &a_aux_density, counts.aux),
            ("B input", &b_input_density, counts.inputs),
            ("B aux", &b_aux_density, counts.aux),
        ] {
            if d.len() != len {
                return bad(format!(
                    "the {name} density has {} bits, not {len}",
                    d.len()
                ));
            }
        }
        for (name, x) in [("A", &m.a), ("B", &m.b), ("C", &m.c)] {
            check_matrix(name, x, &counts, table.len())?;
        }
        Ok(RecordedSystem {
            key,
            origin,
            counts,
            table,
            m,
            a_aux_density,
            b_input_density,
            b_aux_density,
        })
    }

    /// The name of the shape (the parameter file's name).
    pub fn key(&self) -> &str {
        &self.key
    }

    /// How the system was recorded.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// Counts of variables and constraints.
    pub fn counts(&self) -> ShapeCounts {
        self.counts
    }

    /// The coefficient table.
    pub fn table(&self) -> &[Scalar] {
        &self.table
    }

    /// The matrices.
    pub fn matrices(&self) -> &Matrices {
        &self.m
    }

    /// Which aux variables appear in A.
    pub fn a_aux_density(&self) -> &Density {
        &self.a_aux_density
    }

    /// Which inputs appear in B.
    pub fn b_input_density(&self) -> &Density {
        &self.b_input_density
    }

    /// Which aux variables appear in B.
    pub fn b_aux_density(&self) -> &Density {
        &self.b_aux_density
    }

    /// Terms of A, B and C.
    pub fn nnz(&self) -> [usize; 3] {
        [self.m.a.nnz(), self.m.b.nnz(), self.m.c.nnz()]
    }

    /// Bytes held in memory.
    pub fn resident_bytes(&self) -> usize {
        self.m.iter().iter().map(|x| x.heap_bytes()).sum::<usize>()
            + self.table.len() * 32
            + self.a_aux_density.heap_bytes()
            + self.b_input_density.heap_bytes()
            + self.b_aux_density.heap_bytes()
    }
}

fn check_matrix(
    name: &str,
    x: &Csr,
    counts: &ShapeCounts,
    table_len: usize,
) -> Result<(), R1csError> {
    let bad = |what: String| Err(R1csError::Malformed(format!("matrix {name}: {what}")));
    if x.rows() != counts.constraints {
        return bad(format!(
            "{} rows, {} constraints",
            x.rows(),
            counts.constraints
        ));
    }
    if x.cols.len() != x.coeffs.len() {
        return bad("columns and coefficients differ in length".into());
    }
    if x.row_ptr.first() != Some(&0) || x.row_ptr.last().map(|&e| e as usize) != Some(x.nnz()) {
        return bad("offsets do not span the terms".into());
    }
    if x.row_ptr.par_windows(2).any(|w| w[0] > w[1]) {
        return bad("offsets decrease".into());
    }
    let col_ok = |c: &u32| match Column::decode(*c) {
        Column::Input(i) => i < counts.inputs,
        Column::Aux(j) => j < counts.aux,
    };
    if !x.cols.par_iter().all(col_ok) {
        return bad("a column names a variable that is not allocated".into());
    }
    if x.coeffs.max().is_some_and(|k| k as usize >= table_len) {
        return bad("a coefficient index is beyond the table".into());
    }
    Ok(())
}
