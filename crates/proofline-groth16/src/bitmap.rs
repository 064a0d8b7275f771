//! [`IndexBitmap`]: a set of base indices, one bit per base.
//!
//! The bases whose scalar is one make up about half of a Filecoin query (60 M of the 130 M
//! bases of a 32 GiB partition's L query): as a list of `u32` indices that is 240 MB per query
//! to hold and to send to a GPU, as bits 16 MB. Bit `i` of the set is bit `i % 32` of word
//! `i / 32`, so the words go to a device as they are.

/// A set of indices stored as bits: bit `i % 32` of word `i / 32` says whether `i` is in it.
#[derive(Clone, Debug, Default)]
pub struct IndexBitmap {
    words: Vec<u32>,
    len: usize,
}

impl IndexBitmap {
    /// The empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `i` (the words grow to hold it).
    pub fn insert(&mut self, i: u32) {
        let (w, b) = (i as usize / 32, i % 32);
        if w >= self.words.len() {
            self.words.resize(w + 1, 0);
        }
        if self.words[w] & (1 << b) == 0 {
            self.words[w] |= 1 << b;
            self.len += 1;
        }
    }

    /// Removes `i`; whether it was in the set.
    pub fn remove(&mut self, i: u32) -> bool {
        let (w, b) = (i as usize / 32, i % 32);
        match self.words.get_mut(w) {
            Some(word) if *word & (1 << b) != 0 => {
                *word &= !(1 << b);
                self.len -= 1;
                true
            }
            _ => false,
        }
    }

    /// Whether `i` is in the set.
    pub fn contains(&self, i: usize) -> bool {
        self.words
            .get(i / 32)
            .is_some_and(|w| w >> (i % 32) & 1 == 1)
    }

    /// Number of indices in the set.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The words (up to the one holding the largest index).
    pub fn words(&self) -> &[u32] {
        &self.words
    }

    /// Appends every index of `other` plus `offset`; each must be above every index already
    /// in the set. Parts of a set built in parallel, each numbered from its own first index,
    /// join this way in one pass over their words, with no bit counting.
    pub fn append_shifted(&mut self, other: &IndexBitmap, offset: usize) {
        if other.words.is_empty() {
            return;
        }
        debug_assert!(
            match (self.last(), other.iter().next()) {
                (Some(top), Some(first)) => first as usize + offset > top as usize,
                _ => true,
            },
            "append_shifted: indices out of order"
        );
        let (w0, sh) = (offset / 32, (offset % 32) as u32);
        let need = w0 + other.words.len() + usize::from(sh != 0);
        if self.words.len() < need {
            self.words.resize(need, 0);
        }
        for (k, &x) in other.words.iter().enumerate() {
            self.words[w0 + k] |= x << sh;
            if sh != 0 {
                self.words[w0 + k + 1] |= x >> (32 - sh);
            }
        }
        self.len += other.len;
        // no trailing zero words: equal sets have equal words
        while self.words.last() == Some(&0) {
            self.words.pop();
        }
    }

    /// The largest index, if any.
    fn last(&self) -> Option<u32> {
        let w = self.words.iter().rposition(|&x| x != 0)?;
        Some(w as u32 * 32 + 31 - self.words[w].leading_zeros())
    }

    /// The indices in `[lo, hi)`, ascending.
    pub fn iter_range(&self, lo: usize, hi: usize) -> impl Iterator<Item = u32> + '_ {
        let hi = hi.min(self.words.len() * 32);
        let (w_lo, w_hi) = (lo / 32, hi.div_ceil(32));
        self.words
            .get(w_lo.min(w_hi)..w_hi)
            .unwrap_or(&[])
            .iter()
            .enumerate()
            .flat_map(move |(k, &x)| {
                let base = (w_lo + k) * 32;
                Bits(x).map(move |b| base + b as usize)
            })
            .filter(move |&i| i >= lo && i < hi)
            .map(|i| i as u32)
    }

    /// Every index, ascending.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.iter_range(0, usize::MAX)
    }
}

impl PartialEq for IndexBitmap {
    fn eq(&self, other: &Self) -> bool {
        let trim = |w: &[u32]| w.len() - w.iter().rev().take_while(|&&x| x == 0).count();
        self.words[..trim(&self.words)] == other.words[..trim(&other.words)]
    }
}

impl Eq for IndexBitmap {}

impl FromIterator<u32> for IndexBitmap {
    fn from_iter<I: IntoIterator<Item = u32>>(it: I) -> Self {
        let mut s = IndexBitmap::new();
        for i in it {
            s.insert(i);
        }
        s
    }
}

/// The set bits of a word, lowest first.
struct Bits(u32);

impl Iterator for Bits {
    type Item = u32;
    fn next(&mut self) -> Option<u32> {
        if self.0 == 0 {
            return None;
        }
        let b = self.0.trailing_zeros();
        self.0 &= self.0 - 1;
        Some(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    fn random_set(rng: &mut impl Rng, n: usize, p: f64) -> Vec<u32> {
        (0..n as u32).filter(|_| rng.gen_bool(p)).collect()
    }

    #[test]
    fn removes_what_it_holds_and_nothing_else() {
        let mut rng = ChaCha20Rng::seed_from_u64(2);
        let v = random_set(&mut rng, 500, 0.4);
        let mut s: IndexBitmap = v.iter().copied().collect();
        let (gone, kept): (Vec<u32>, Vec<u32>) = v.iter().partition(|&&i| i % 3 == 0);
        for i in (0..600).step_by(3) {
            assert_eq!(s.remove(i), gone.contains(&i), "{i}");
            assert!(!s.remove(i), "{i} removed twice");
        }
        assert_eq!(s.len(), kept.len());
        assert_eq!(s, kept.iter().copied().collect());
    }

    #[test]
    fn holds_what_was_inserted_in_order() {
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        for (n, p) in [
            (0, 0.5),
            (1, 1.0),
            (31, 0.5),
            (32, 1.0),
            (33, 0.5),
            (1000, 0.46),
        ] {
            let v = random_set(&mut rng, n, p);
            let s: IndexBitmap = v.iter().copied().collect();
            assert_eq!(s.len(), v.len());
            assert_eq!(s.iter().collect::<Vec<_>>(), v);
            for i in 0..n + 40 {
                assert_eq!(s.contains(i), v.binary_search(&(i as u32)).is_ok(), "{i}");
            }
            for (lo, hi) in [
                (0, n),
                (3, n / 2),
                (n / 3, n + 5),
                (31, 65),
                (40, 40),
                (9, 2),
            ] {
                let want: Vec<u32> = v
                    .iter()
                    .copied()
                    .filter(|&i| (i as usize) >= lo && (i as usize) < hi)
                    .collect();
                assert_eq!(s.iter_range(lo, hi).collect::<Vec<_>>(), want, "{lo}..{hi}");
            }
        }
    }

    #[test]
    fn parts_numbered_from_their_start_join_into_the_whole() {
        let mut rng = ChaCha20Rng::seed_from_u64(2);
        let v = random_set(&mut rng, 5000, 0.46);
        let whole: IndexBitmap = v.iter().copied().collect();
        // parts of any lengths (most not multiples of 32), each numbered from 0
        let mut joined = IndexBitmap::new();
        let mut start = 0usize;
        for len in [0usize, 7, 32, 1, 100, 333, 64, 29, 4434] {
            let part: IndexBitmap = v
                .iter()
                .filter(|&&i| (i as usize) >= start && (i as usize) < start + len)
                .map(|&i| i - start as u32)
                .collect();
            joined.append_shifted(&part, start);
            start += len;
        }
        assert_eq!(joined, whole);
        assert_eq!(joined.len(), whole.len());
        assert_eq!(joined.words(), whole.words());
    }
}
