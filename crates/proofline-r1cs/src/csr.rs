//! One constraint matrix (A, B or C) in compressed sparse row form.
//!
//! Row `r` (constraint `r`) holds the terms `row_ptr[r]..row_ptr[r + 1]` of `cols` and `coeffs`.
//! A column is a variable: an aux variable `j` is column `j`, an input `i` is column
//! `INPUT_TAG | i`. Inputs and aux share one 32-bit index space this way without the recorder
//! knowing how many inputs the circuit will allocate (PoRep allocates inputs in every challenge),
//! so a recording streams row by row and never renumbers. Offsets are 32-bit: the 32 GiB PoRep
//! partition, the largest circuit served, has about 10^9 terms per matrix at most; a larger matrix
//! is refused when recorded.

use crate::coeffs::CoeffIndices;

/// Set in a column index that names an input.
pub const INPUT_TAG: u32 = 1 << 31;

/// The largest variable index a column can name (inputs and aux alike).
pub const MAX_VARIABLE: usize = (INPUT_TAG - 1) as usize;

/// A variable as a column index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Column {
    /// Input `i`.
    Input(usize),
    /// Aux variable `j`.
    Aux(usize),
}

impl Column {
    /// The column index, `None` beyond [`MAX_VARIABLE`].
    #[inline]
    pub fn encode(self) -> Option<u32> {
        match self {
            Column::Input(i) if i <= MAX_VARIABLE => Some(INPUT_TAG | i as u32),
            Column::Aux(j) if j <= MAX_VARIABLE => Some(j as u32),
            _ => None,
        }
    }

    /// The variable of a column index.
    #[inline]
    pub fn decode(c: u32) -> Self {
        if c & INPUT_TAG != 0 {
            Column::Input((c & !INPUT_TAG) as usize)
        } else {
            Column::Aux(c as usize)
        }
    }
}

/// A sparse matrix, one row per constraint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Csr {
    /// Term offsets, one more than the rows.
    pub row_ptr: Vec<u32>,
    /// Column of each term.
    pub cols: Vec<u32>,
    /// Coefficient-table index of each term.
    pub coeffs: CoeffIndices,
}

impl Default for Csr {
    fn default() -> Self {
        Csr {
            row_ptr: vec![0],
            cols: Vec::new(),
            coeffs: CoeffIndices::default(),
        }
    }
}

/// A matrix outgrew the 32-bit offsets of the format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooManyTerms;

impl Csr {
    /// Appends a row of `(column, coefficient index)` terms.
    #[inline]
    pub fn push_row(&mut self, terms: &[(u32, u32)]) -> Result<(), TooManyTerms> {
        for &(c, k) in terms {
            self.cols.push(c);
            self.coeffs.push(k);
        }
        let end = u32::try_from(self.cols.len()).map_err(|_| TooManyTerms)?;
        self.row_ptr.push(end);
        Ok(())
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.row_ptr.len() - 1
    }

    /// Number of terms.
    pub fn nnz(&self) -> usize {
        self.cols.len()
    }

    /// The terms of row `r`.
    pub fn row(&self, r: usize) -> impl Iterator<Item = (u32, u32)> + '_ {
        let (s, e) = (self.row_ptr[r] as usize, self.row_ptr[r + 1] as usize);
        (s..e).map(move |k| (self.cols[k], self.coeffs.get(k)))
    }

    /// Bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.row_ptr.capacity() * 4 + self.cols.capacity() * 4 + self.coeffs.heap_bytes()
    }

    /// Releases spare capacity.
    pub fn shrink_to_fit(&mut self) {
        self.row_ptr.shrink_to_fit();
        self.cols.shrink_to_fit();
        self.coeffs.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_round_trip_and_rows_keep_their_terms() {
        for c in [
            Column::Input(0),
            Column::Input(7),
            Column::Aux(0),
            Column::Aux(9),
        ] {
            assert_eq!(Column::decode(c.encode().unwrap()), c);
        }
        assert_eq!(Column::Aux(MAX_VARIABLE + 1).encode(), None);
        let mut m = Csr::default();
        m.push_row(&[(1, 0), (INPUT_TAG, 1)]).unwrap();
        m.push_row(&[]).unwrap();
        m.push_row(&[(5, 2)]).unwrap();
        assert_eq!((m.rows(), m.nnz()), (3, 3));
        assert_eq!(m.row(0).collect::<Vec<_>>(), vec![(1, 0), (INPUT_TAG, 1)]);
        assert_eq!(m.row(1).count(), 0);
        assert_eq!(m.row(2).collect::<Vec<_>>(), vec![(5, 2)]);
    }
}
