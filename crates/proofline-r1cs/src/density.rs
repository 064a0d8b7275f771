//! Densities: which variables a Groth16 query touches, one bit per variable.
//!
//! bellperson's rule, which every constraint system of this workspace follows: a variable counts
//! towards the density of A (aux variables only; inputs are dense in A) and of B (inputs and aux)
//! when it appears in that linear combination with a non-zero coefficient.

/// A growable bit vector that records which variables a query touches.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Density {
    words: Vec<u64>,
    len: usize,
    ones: usize,
}

impl Density {
    /// An empty density over zero variables.
    pub fn new() -> Self {
        Self::default()
    }

    /// A density of `len` variables, all set (a dense query).
    pub fn full(len: usize) -> Self {
        let mut words = vec![u64::MAX; len.div_ceil(64)];
        if let Some(last) = words.last_mut() {
            if !len.is_multiple_of(64) {
                *last = (1u64 << (len % 64)) - 1;
            }
        }
        Density {
            words,
            len,
            ones: len,
        }
    }

    /// A density of `len` variables, none set, with room for `len` more pushes without growing.
    pub fn with_capacity(len: usize) -> Self {
        Density {
            words: Vec::with_capacity(len.div_ceil(64)),
            len: 0,
            ones: 0,
        }
    }

    /// A density from its 64-bit words (bit `i % 64` of word `i / 64` is variable `i`), as
    /// [`Density::words`] returns them. `None` when the word count does not fit `len` or a bit
    /// beyond `len` is set.
    pub fn from_words(words: Vec<u64>, len: usize) -> Option<Self> {
        if words.len() != len.div_ceil(64) {
            return None;
        }
        if !len.is_multiple_of(64) {
            let last = *words.last()?;
            if last >> (len % 64) != 0 {
                return None;
            }
        }
        let ones = words.iter().map(|w| w.count_ones() as usize).sum();
        Some(Density { words, len, ones })
    }

    /// The 64-bit words of the bit vector.
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// Appends one variable, set or not.
    pub fn push(&mut self, set: bool) {
        if self.len.is_multiple_of(64) {
            self.words.push(0);
        }
        self.len += 1;
        if set {
            self.set(self.len - 1);
        }
    }

    /// Marks variable `i` as used.
    #[inline]
    pub fn set(&mut self, i: usize) {
        let (w, b) = (i / 64, i % 64);
        let mask = 1u64 << b;
        if self.words[w] & mask == 0 {
            self.words[w] |= mask;
            self.ones += 1;
        }
    }

    /// Whether variable `i` is used.
    #[inline]
    pub fn get(&self, i: usize) -> bool {
        (self.words[i / 64] >> (i % 64)) & 1 == 1
    }

    /// Number of variables tracked.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no variable is tracked.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of variables used (the number of query points for this range).
    pub fn count_ones(&self) -> usize {
        self.ones
    }

    /// Appends the variables of `other` from index `from` on.
    pub fn extend_from(&mut self, other: &Density, from: usize) {
        for i in from..other.len {
            self.push(other.get(i));
        }
    }

    /// Appends a child system's input density: its first input is the child's own ONE, which
    /// the parent skips, but a child that used it still marks the parent's ONE, as bellperson's
    /// `DensityTracker::extend` does for input densities (circuits that synthesize in child
    /// systems, WindowPoSt's for one, may use ONE in B only there).
    pub fn extend_child_inputs(&mut self, child: &Density) {
        if !self.is_empty() && !child.is_empty() && child.get(0) {
            self.set(0);
        }
        self.extend_from(child, 1);
    }

    /// Bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.words.capacity() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn density_bits() {
        let mut d = Density::new();
        for i in 0..130 {
            d.push(i % 3 == 0);
        }
        assert_eq!(d.len(), 130);
        assert_eq!(d.count_ones(), 44);
        d.set(1);
        d.set(1);
        assert_eq!(d.count_ones(), 45);
        assert!(d.get(129) && !d.get(128));
    }

    #[test]
    fn full_and_words_round_trip() {
        for len in [0, 1, 63, 64, 65, 200] {
            let f = Density::full(len);
            assert_eq!(f.count_ones(), len);
            assert!((0..len).all(|i| f.get(i)));
            let again = Density::from_words(f.words().to_vec(), len).unwrap();
            assert_eq!(again, f);
        }
        // A bit beyond the length, or the wrong number of words, is refused.
        assert!(Density::from_words(vec![1 << 5], 5).is_none());
        assert!(Density::from_words(vec![0, 0], 64).is_none());
    }

    #[test]
    fn extend_from_skips_the_leading_variables() {
        let mut parent = Density::new();
        parent.push(true);
        let mut child = Density::new();
        for set in [true, false, true] {
            child.push(set);
        }
        parent.extend_from(&child, 1);
        assert_eq!(parent.len(), 3);
        assert!(parent.get(0) && !parent.get(1) && parent.get(2));
        assert_eq!(parent.count_ones(), 2);
    }

    #[test]
    fn a_childs_one_marks_the_parents_one() {
        let mut parent = Density::new();
        parent.push(false);
        let mut child = Density::new();
        for set in [true, false, true] {
            child.push(set);
        }
        parent.extend_child_inputs(&child);
        assert_eq!(parent.len(), 3);
        assert!(parent.get(0) && !parent.get(1) && parent.get(2));
        assert_eq!(parent.count_ones(), 2);

        // An unused child ONE leaves the parent's as it was.
        let mut parent = Density::new();
        parent.push(false);
        let mut child = Density::new();
        child.push(false);
        child.push(true);
        parent.extend_child_inputs(&child);
        assert!(!parent.get(0) && parent.get(1));
        assert_eq!(parent.count_ones(), 1);
    }
}
