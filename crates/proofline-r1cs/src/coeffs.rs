//! The coefficient table of a recorded system, and the per-term indices into it.
//!
//! Circuit coefficients repeat: a PoRep partition's are mostly +1 and −1, then powers of two
//! (bit packing) and a few hundred constants (Poseidon round constants). Each distinct
//! coefficient is stored once in a [`CoeffTable`]; each matrix term stores its index, in the
//! narrowest unsigned width that holds every index ([`CoeffIndices`]). Index 0 is +1 and index 1
//! is −1 in every table, so that evaluation adds or subtracts those without a multiplication.

use std::collections::HashMap;

use blstrs::Scalar;
use ff::{Field, PrimeField};

/// Index of +1 in every table.
pub const PLUS_ONE: u32 = 0;
/// Index of −1 in every table.
pub const MINUS_ONE: u32 = 1;

/// The distinct coefficients of a system, each stored once.
#[derive(Clone, Debug)]
pub struct CoeffTable {
    values: Vec<Scalar>,
    index: HashMap<[u8; 32], u32>,
}

impl Default for CoeffTable {
    fn default() -> Self {
        Self::new()
    }
}

impl CoeffTable {
    /// A table holding +1 and −1.
    pub fn new() -> Self {
        let mut t = CoeffTable {
            values: Vec::new(),
            index: HashMap::new(),
        };
        t.insert(Scalar::ONE);
        t.insert(-Scalar::ONE);
        t
    }

    /// A table from its values, as [`CoeffTable::values`] returns them; `None` unless they start
    /// with +1 and −1 and are distinct.
    pub fn from_values(values: Vec<Scalar>) -> Option<Self> {
        if values.len() < 2 || values[0] != Scalar::ONE || values[1] != -Scalar::ONE {
            return None;
        }
        let mut t = CoeffTable {
            values: Vec::with_capacity(values.len()),
            index: HashMap::with_capacity(values.len()),
        };
        for v in values {
            if t.index.contains_key(&v.to_repr()) {
                return None;
            }
            t.insert(v);
        }
        Some(t)
    }

    fn insert(&mut self, v: Scalar) -> u32 {
        let i = self.values.len() as u32;
        self.values.push(v);
        self.index.insert(v.to_repr(), i);
        i
    }

    /// The index of `coeff`, added to the table if new. `None` when the table is full (2^32
    /// distinct coefficients).
    #[inline]
    pub fn intern(&mut self, coeff: &Scalar) -> Option<u32> {
        if *coeff == Scalar::ONE {
            return Some(PLUS_ONE);
        }
        let repr = coeff.to_repr();
        if let Some(&i) = self.index.get(&repr) {
            return Some(i);
        }
        u32::try_from(self.values.len()).ok()?;
        Some(self.insert(*coeff))
    }

    /// The coefficients, by index.
    pub fn values(&self) -> &[Scalar] {
        &self.values
    }

    /// Number of distinct coefficients.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Never true: +1 and −1 are always present.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

/// Per-term coefficient indices, stored in the narrowest width that holds them all. Pushing an
/// index that does not fit widens the whole vector once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CoeffIndices {
    /// Tables of at most 256 coefficients.
    U8(Vec<u8>),
    /// Tables of at most 65,536 coefficients.
    U16(Vec<u16>),
    /// Larger tables.
    U32(Vec<u32>),
}

impl Default for CoeffIndices {
    fn default() -> Self {
        CoeffIndices::U8(Vec::new())
    }
}

impl CoeffIndices {
    /// Appends one index, widening the vector if it does not fit.
    #[inline]
    pub fn push(&mut self, i: u32) {
        match self {
            CoeffIndices::U8(v) => match u8::try_from(i) {
                Ok(x) => v.push(x),
                Err(_) => {
                    self.widen(i);
                    self.push(i);
                }
            },
            CoeffIndices::U16(v) => match u16::try_from(i) {
                Ok(x) => v.push(x),
                Err(_) => {
                    self.widen(i);
                    self.push(i);
                }
            },
            CoeffIndices::U32(v) => v.push(i),
        }
    }

    fn widen(&mut self, needed: u32) {
        let wide_enough_for_u16 = u16::try_from(needed).is_ok();
        *self = match std::mem::take(self) {
            CoeffIndices::U8(v) if wide_enough_for_u16 => {
                CoeffIndices::U16(v.into_iter().map(u16::from).collect())
            }
            CoeffIndices::U8(v) => CoeffIndices::U32(v.into_iter().map(u32::from).collect()),
            CoeffIndices::U16(v) => CoeffIndices::U32(v.into_iter().map(u32::from).collect()),
            wide @ CoeffIndices::U32(_) => wide,
        };
    }

    /// Index of term `k`.
    pub fn get(&self, k: usize) -> u32 {
        match self {
            CoeffIndices::U8(v) => u32::from(v[k]),
            CoeffIndices::U16(v) => u32::from(v[k]),
            CoeffIndices::U32(v) => v[k],
        }
    }

    /// Number of terms.
    pub fn len(&self) -> usize {
        match self {
            CoeffIndices::U8(v) => v.len(),
            CoeffIndices::U16(v) => v.len(),
            CoeffIndices::U32(v) => v.len(),
        }
    }

    /// Whether there are no terms.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes per index (1, 2 or 4).
    pub fn width(&self) -> u8 {
        match self {
            CoeffIndices::U8(_) => 1,
            CoeffIndices::U16(_) => 2,
            CoeffIndices::U32(_) => 4,
        }
    }

    /// The largest index, if any.
    pub fn max(&self) -> Option<u32> {
        match self {
            CoeffIndices::U8(v) => v.iter().max().map(|&x| u32::from(x)),
            CoeffIndices::U16(v) => v.iter().max().map(|&x| u32::from(x)),
            CoeffIndices::U32(v) => v.iter().max().copied(),
        }
    }

    /// Bytes held.
    pub fn heap_bytes(&self) -> usize {
        match self {
            CoeffIndices::U8(v) => v.capacity(),
            CoeffIndices::U16(v) => v.capacity() * 2,
            CoeffIndices::U32(v) => v.capacity() * 4,
        }
    }

    /// Releases spare capacity.
    pub fn shrink_to_fit(&mut self) {
        match self {
            CoeffIndices::U8(v) => v.shrink_to_fit(),
            CoeffIndices::U16(v) => v.shrink_to_fit(),
            CoeffIndices::U32(v) => v.shrink_to_fit(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plus_and_minus_one_have_fixed_indices_and_values_are_deduplicated() {
        let mut t = CoeffTable::new();
        assert_eq!(t.intern(&Scalar::ONE), Some(PLUS_ONE));
        assert_eq!(t.intern(&-Scalar::ONE), Some(MINUS_ONE));
        let two = Scalar::from(2u64);
        let i = t.intern(&two).unwrap();
        assert_eq!(i, 2);
        assert_eq!(t.intern(&two), Some(i));
        assert_eq!(t.len(), 3);
        let again = CoeffTable::from_values(t.values().to_vec()).unwrap();
        assert_eq!(again.values(), t.values());
        assert!(CoeffTable::from_values(vec![Scalar::ONE]).is_none());
        assert!(CoeffTable::from_values(vec![Scalar::ONE, -Scalar::ONE, two, two]).is_none());
        assert!(CoeffTable::from_values(vec![-Scalar::ONE, Scalar::ONE]).is_none());
    }

    #[test]
    fn indices_widen_when_needed() {
        let mut v = CoeffIndices::default();
        v.push(3);
        v.push(255);
        assert_eq!(v.width(), 1);
        v.push(256);
        assert_eq!(v.width(), 2);
        v.push(70_000);
        assert_eq!(v.width(), 4);
        let got: Vec<u32> = (0..v.len()).map(|k| v.get(k)).collect();
        assert_eq!(got, vec![3, 255, 256, 70_000]);
        let mut w = CoeffIndices::default();
        w.push(1);
        w.push(100_000);
        assert_eq!(w.width(), 4);
        assert_eq!((w.get(0), w.get(1), w.max()), (1, 100_000, Some(100_000)));
    }
}
