//! The witness of bellperson's SHA-256 gadget, computed natively.
//!
//! bellperson's `sha256` gadget builds linear combinations eagerly while it computes
//! (`UInt32::addmany` sums 32 bits per operand into one, `MultiEq` clones its growing sums at
//! every addition), whether or not the constraint system keeps them: in a PoRep witness it is
//! about 89 % of the time. This module computes the same variables, in the same order, with plain
//! 32-bit arithmetic, and hands each one to a [`WitnessCs`] — the only system where dropping the
//! constraints is right, hence the concrete type.
//!
//! The variables are the gadget's, rule for rule: bits are constants (no variable), allocated
//! bits, or negations of allocated bits (no variable); `xor`, `and`, `sha256_ch` and
//! `sha256_maj` of bits fold constants exactly as bellpepper-core's `Boolean` does (the match
//! arms below follow its order: which arm applies decides whether a variable is allocated and
//! whether the result is a negation); a modular addition of n words allocates the bit length of
//! n·(2^32 − 1) result bits unless every operand bit is constant; the compression function defers
//! the additions of `a` and `e` as the gadget does. The test compares this module with the gadget
//! on inputs mixing constant, allocated and negated bits, variable for variable.

use bellpepper_core::boolean::Boolean;
use bellpepper_core::{ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use ff::Field;
use proofline_r1cs::WitnessCs;

/// A bit as the gadget sees it: a constant, an allocated bit, or the negation of one (the value
/// is the allocated bit's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bit {
    Const(bool),
    Is(bool),
    Not(bool),
}

impl Bit {
    /// The bit of a gadget `Boolean`, which must have its value.
    pub(crate) fn of(b: &Boolean) -> Result<Bit, SynthesisError> {
        Ok(match b {
            Boolean::Constant(c) => Bit::Const(*c),
            Boolean::Is(a) => Bit::Is(a.get_value().ok_or(SynthesisError::AssignmentMissing)?),
            Boolean::Not(a) => Bit::Not(a.get_value().ok_or(SynthesisError::AssignmentMissing)?),
        })
    }

    /// The bit's value.
    pub(crate) fn value(self) -> bool {
        match self {
            Bit::Const(b) | Bit::Is(b) => b,
            Bit::Not(b) => !b,
        }
    }

    fn not(self) -> Bit {
        match self {
            Bit::Const(b) => Bit::Const(!b),
            Bit::Is(b) => Bit::Not(b),
            Bit::Not(b) => Bit::Is(b),
        }
    }

    fn is_const(self) -> bool {
        matches!(self, Bit::Const(_))
    }
}

/// Allocates one bit variable with value `v`.
fn alloc(cs: &mut WitnessCs, v: bool) -> Result<Bit, SynthesisError> {
    cs.alloc(|| "", || Ok(if v { Scalar::ONE } else { Scalar::ZERO }))?;
    Ok(Bit::Is(v))
}

/// `Boolean::xor`.
fn xor(cs: &mut WitnessCs, a: Bit, b: Bit) -> Result<Bit, SynthesisError> {
    use Bit::*;
    Ok(match (a, b) {
        (Const(false), x) | (x, Const(false)) => x,
        (Const(true), x) | (x, Const(true)) => x.not(),
        (is @ Is(_), not @ Not(_)) | (not @ Not(_), is @ Is(_)) => xor(cs, is, not.not())?.not(),
        (Is(x), Is(y)) | (Not(x), Not(y)) => alloc(cs, x ^ y)?,
    })
}

/// `Boolean::and`.
fn and(cs: &mut WitnessCs, a: Bit, b: Bit) -> Result<Bit, SynthesisError> {
    use Bit::*;
    Ok(match (a, b) {
        (Const(false), _) | (_, Const(false)) => Const(false),
        (Const(true), x) | (x, Const(true)) => x,
        (Is(i), Not(n)) | (Not(n), Is(i)) => alloc(cs, i & !n)?,
        (Not(x), Not(y)) => alloc(cs, !x & !y)?,
        (Is(x), Is(y)) => alloc(cs, x & y)?,
    })
}

/// `Boolean::sha256_ch`.
fn ch(cs: &mut WitnessCs, a: Bit, b: Bit, c: Bit) -> Result<Bit, SynthesisError> {
    use Bit::*;
    let v = (a.value() & b.value()) ^ (!a.value() & c.value());
    match (a, b, c) {
        (Const(_), Const(_), Const(_)) => return Ok(Const(v)),
        (Const(false), _, c) => return Ok(c),
        (a, Const(false), c) => return and(cs, a.not(), c),
        (a, b, Const(false)) => return and(cs, a, b),
        (a, b, Const(true)) => return Ok(and(cs, a, b.not())?.not()),
        (a, Const(true), c) => return Ok(and(cs, a.not(), c.not())?.not()),
        _ => {}
    }
    alloc(cs, v)
}

/// `Boolean::sha256_maj`.
fn maj(cs: &mut WitnessCs, a: Bit, b: Bit, c: Bit) -> Result<Bit, SynthesisError> {
    use Bit::*;
    let v = (a.value() & b.value()) ^ (a.value() & c.value()) ^ (b.value() & c.value());
    match (a, b, c) {
        (Const(_), Const(_), Const(_)) => return Ok(Const(v)),
        (Const(false), b, c) => return and(cs, b, c),
        (a, Const(false), c) => return and(cs, a, c),
        (a, b, Const(false)) => return and(cs, a, b),
        (a, b, Const(true)) => return Ok(and(cs, a.not(), b.not())?.not()),
        (a, Const(true), c) => return Ok(and(cs, a.not(), c.not())?.not()),
        (Const(true), b, c) => return Ok(and(cs, b.not(), c.not())?.not()),
        _ => {}
    }
    // The gadget allocates the result first, then `b and c` for its constraint.
    let out = alloc(cs, v)?;
    and(cs, b, c)?;
    Ok(out)
}

/// `UInt32`: bits least significant first.
#[derive(Clone, Copy, Debug)]
struct Word {
    bits: [Bit; 32],
    value: u32,
}

impl Word {
    fn constant(value: u32) -> Word {
        Word {
            bits: std::array::from_fn(|i| Bit::Const((value >> i) & 1 == 1)),
            value,
        }
    }

    /// `UInt32::from_bits_be`.
    fn from_bits_be(bits: &[Bit]) -> Word {
        let value = bits
            .iter()
            .fold(0u32, |v, b| (v << 1) | u32::from(b.value()));
        Word {
            bits: std::array::from_fn(|i| bits[31 - i]),
            value,
        }
    }

    fn rotr(&self, by: usize) -> Word {
        Word {
            bits: std::array::from_fn(|i| self.bits[(i + by) % 32]),
            value: self.value.rotate_right(by as u32),
        }
    }

    fn shr(&self, by: usize) -> Word {
        Word {
            bits: std::array::from_fn(|i| {
                self.bits.get(i + by).copied().unwrap_or(Bit::Const(false))
            }),
            value: self.value >> by,
        }
    }

    fn xor(&self, cs: &mut WitnessCs, other: &Word) -> Result<Word, SynthesisError> {
        let mut bits = [Bit::Const(false); 32];
        for (i, out) in bits.iter_mut().enumerate() {
            *out = xor(cs, self.bits[i], other.bits[i])?;
        }
        Ok(Word {
            bits,
            value: self.value ^ other.value,
        })
    }

    fn triop(
        cs: &mut WitnessCs,
        a: &Word,
        b: &Word,
        c: &Word,
        f: fn(&mut WitnessCs, Bit, Bit, Bit) -> Result<Bit, SynthesisError>,
    ) -> Result<Word, SynthesisError> {
        let mut bits = [Bit::Const(false); 32];
        for (i, out) in bits.iter_mut().enumerate() {
            *out = f(cs, a.bits[i], b.bits[i], c.bits[i])?;
        }
        let value = bits
            .iter()
            .rev()
            .fold(0u32, |v, b| (v << 1) | u32::from(b.value()));
        Ok(Word { bits, value })
    }

    /// `UInt32::addmany`.
    fn addmany(cs: &mut WitnessCs, ops: &[Word]) -> Result<Word, SynthesisError> {
        let sum: u64 = ops.iter().map(|w| u64::from(w.value)).sum();
        if ops.iter().all(|w| w.bits.iter().all(|b| b.is_const())) {
            return Ok(Word::constant(sum as u32));
        }
        let mut max = ops.len() as u64 * u64::from(u32::MAX);
        let mut bits = [Bit::Const(false); 32];
        let mut i = 0;
        while max != 0 {
            let b = alloc(cs, (sum >> i) & 1 == 1)?;
            if let Some(slot) = bits.get_mut(i) {
                *slot = b;
            }
            max >>= 1;
            i += 1;
        }
        Ok(Word {
            bits,
            value: sum as u32,
        })
    }

    fn into_bits_be(self) -> impl Iterator<Item = Bit> {
        self.bits.into_iter().rev()
    }
}

const ROUND_CONSTANTS: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

const IV: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

/// A word the gadget computes only when it is used (`Maybe` in the gadget): the operands of a
/// deferred addition, or a computed word.
enum Lazy {
    Deferred(Vec<Word>),
    Concrete(Word),
}

impl Lazy {
    fn compute(self, cs: &mut WitnessCs, others: &[Word]) -> Result<Word, SynthesisError> {
        match self {
            Lazy::Concrete(w) => Ok(w),
            Lazy::Deferred(mut v) => {
                v.extend_from_slice(others);
                Word::addmany(cs, &v)
            }
        }
    }
}

fn sigma(cs: &mut WitnessCs, x: &Word, r: [usize; 3]) -> Result<Word, SynthesisError> {
    x.rotr(r[0]).xor(cs, &x.rotr(r[1]))?.xor(cs, &x.rotr(r[2]))
}

fn small_sigma(
    cs: &mut WitnessCs,
    x: &Word,
    r: [usize; 2],
    s: usize,
) -> Result<Word, SynthesisError> {
    x.rotr(r[0]).xor(cs, &x.rotr(r[1]))?.xor(cs, &x.shr(s))
}

/// `sha256_compression_function`.
fn compress(
    cs: &mut WitnessCs,
    input: &[Bit],
    cur: &[Word; 8],
) -> Result<[Word; 8], SynthesisError> {
    let mut w: Vec<Word> = input.chunks(32).map(Word::from_bits_be).collect();
    for i in 16..64 {
        let s0 = small_sigma(cs, &w[i - 15], [7, 18], 3)?;
        let s1 = small_sigma(cs, &w[i - 2], [17, 19], 10)?;
        let t = Word::addmany(cs, &[w[i - 16], s0, w[i - 7], s1])?;
        w.push(t);
    }
    let mut a = Lazy::Concrete(cur[0]);
    let (mut b, mut c, mut d) = (cur[1], cur[2], cur[3]);
    let mut e = Lazy::Concrete(cur[4]);
    let (mut f, mut g, mut h) = (cur[5], cur[6], cur[7]);
    for (i, k) in ROUND_CONSTANTS.iter().enumerate() {
        let new_e = e.compute(cs, &[])?;
        let s1 = sigma(cs, &new_e, [6, 11, 25])?;
        let ch = Word::triop(cs, &new_e, &f, &g, self::ch)?;
        let temp1 = [h, s1, ch, Word::constant(*k), w[i]];
        let new_a = a.compute(cs, &[])?;
        let s0 = sigma(cs, &new_a, [2, 13, 22])?;
        let maj = Word::triop(cs, &new_a, &b, &c, self::maj)?;
        h = g;
        g = f;
        f = new_e;
        e = Lazy::Deferred(temp1.iter().copied().chain(Some(d)).collect());
        d = c;
        c = b;
        b = new_a;
        a = Lazy::Deferred(temp1.iter().copied().chain([s0, maj]).collect());
    }
    Ok([
        a.compute(cs, &[cur[0]])?,
        Word::addmany(cs, &[cur[1], b])?,
        Word::addmany(cs, &[cur[2], c])?,
        Word::addmany(cs, &[cur[3], d])?,
        e.compute(cs, &[cur[4]])?,
        Word::addmany(cs, &[cur[5], f])?,
        Word::addmany(cs, &[cur[6], g])?,
        Word::addmany(cs, &[cur[7], h])?,
    ])
}

/// The gadget's `sha256(cs, input)`: its variables go to `cs`, its 256 output bits (big-endian
/// words, as the gadget returns them) are returned.
pub(crate) fn sha256(cs: &mut WitnessCs, input: &[Bit]) -> Result<Vec<Bit>, SynthesisError> {
    assert!(input.len().is_multiple_of(8), "whole bytes");
    let mut padded = input.to_vec();
    let len = padded.len() as u64;
    padded.push(Bit::Const(true));
    while !(padded.len() + 64).is_multiple_of(512) {
        padded.push(Bit::Const(false));
    }
    padded.extend((0..64).rev().map(|i| Bit::Const((len >> i) & 1 == 1)));
    let mut cur = IV.map(Word::constant);
    for block in padded.chunks(512) {
        cur = compress(cs, block, &cur)?;
    }
    Ok(cur.into_iter().flat_map(Word::into_bits_be).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellpepper_core::boolean::AllocatedBit;
    use rand::{Rng, SeedableRng};

    /// Random input bits: constants, allocated bits and negated allocated bits, allocated in
    /// `cs`; returns the gadget's view and ours.
    fn inputs(cs: &mut WitnessCs, n: usize, seed: u64) -> (Vec<Boolean>, Vec<Bit>) {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut gadget = Vec::new();
        for _ in 0..n {
            let v: bool = rng.gen();
            let b = match rng.gen_range(0..4) {
                0 => Boolean::Constant(v),
                1 => Boolean::Not(AllocatedBit::alloc(&mut *cs, Some(v)).unwrap()),
                _ => Boolean::Is(AllocatedBit::alloc(&mut *cs, Some(v)).unwrap()),
            };
            gadget.push(b);
        }
        let ours = gadget.iter().map(|b| Bit::of(b).unwrap()).collect();
        (gadget, ours)
    }

    #[test]
    fn native_sha256_has_the_gadgets_variables_and_output() {
        // 0, 1 and several blocks; the gadget's own padding makes partly constant blocks.
        for (len, seed) in [(0usize, 1u64), (256, 2), (440, 3), (512, 4), (1248 * 8, 5)] {
            let mut g = WitnessCs::root();
            let (gadget_in, _) = inputs(&mut g, len, seed);
            let out = bellperson::gadgets::sha256::sha256(&mut g, &gadget_in).unwrap();
            let gadget_out: Vec<bool> = out.iter().map(|b| b.get_value().unwrap()).collect();
            let gadget_w = g.finish();

            let mut n = WitnessCs::root();
            let (_, ours) = inputs(&mut n, len, seed);
            let native_out: Vec<bool> = sha256(&mut n, &ours)
                .unwrap()
                .into_iter()
                .map(Bit::value)
                .collect();
            let native_w = n.finish();

            assert_eq!(native_out, gadget_out, "output of {len} bits");
            assert_eq!(
                native_w.aux.len(),
                gadget_w.aux.len(),
                "variables of {len} bits"
            );
            if let Some(i) = (0..native_w.aux.len()).find(|&i| native_w.aux[i] != gadget_w.aux[i]) {
                panic!("{len} bits: variable {i} differs");
            }
            // And the output is SHA-256 of the input bytes.
            let bytes: Vec<u8> = ours
                .chunks(8)
                .map(|c| c.iter().fold(0u8, |v, b| (v << 1) | u8::from(b.value())))
                .collect();
            use sha2::Digest;
            let digest = sha2::Sha256::digest(&bytes);
            let expected: Vec<bool> = digest
                .iter()
                .flat_map(|byte| (0..8).rev().map(move |i| (byte >> i) & 1 == 1))
                .collect();
            assert_eq!(native_out, expected, "SHA-256 of {len} bits");
        }
    }
}
