//! Number-theoretic transforms over the BLS12-381 scalar field, on the CPU, and the Groth16
//! H polynomial built from them.
//!
//! Conventions, shared with every backend (the GPU kernels implement the same definitions):
//! * a domain of size `n = 2^k` uses `omega = ROOT_OF_UNITY^(2^(S - k))`;
//! * `Forward` maps coefficients to evaluations at `omega^i`, `Inverse` maps them back
//!   (scaled by `1/n`);
//! * the coset is `g * <omega>` with `g = Scalar::MULTIPLICATIVE_GENERATOR` (7);
//!   `CosetForward` evaluates at `g * omega^i`, `CosetInverse` undoes it.
//!
//! [`h_poly_cpu`] computes the coefficients of `H = (A·B − C) / Z` from the evaluations of A, B
//! and C over the domain: 3 inverse NTTs, 3 coset NTTs, the pointwise step divided by
//! `Z(g·x) = g^n − 1` (constant on the coset), and one inverse coset NTT. The scalings of the
//! inverse transforms are fused with the coset shifts into a single pass.
//! [`h_poly_of_product_cpu`] does it in six transforms where C's evaluations are `a∘b` (a
//! witness that satisfies every constraint): then C = A·B mod Z and H is the upper half of
//! A·B's coefficients, which one coset inverse and C's coefficients give.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use blstrs::Scalar;
use ff::{Field, PrimeField};
use rayon::prelude::*;

/// Which transform to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NttKind {
    /// Coefficients to evaluations over the domain.
    Forward,
    /// Evaluations over the domain to coefficients.
    Inverse,
    /// Coefficients to evaluations over the coset `g·<omega>`.
    CosetForward,
    /// Evaluations over the coset to coefficients.
    CosetInverse,
}

/// Errors of the transforms.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum NttError {
    /// The length is not a power of two.
    #[error("NTT length {0} is not a power of two")]
    NotPowerOfTwo(usize),
    /// The domain is larger than the field's two-adicity allows.
    #[error("NTT domain 2^{0} exceeds the field's two-adicity 2^{max}", max = Scalar::S)]
    TooLarge(u32),
    /// Buffers of different lengths were passed together.
    #[error("buffers of different lengths: {0} and {1}")]
    LengthMismatch(usize, usize),
}

/// Precomputed constants for one domain size.
#[derive(Debug)]
pub struct Domain {
    /// log2 of the size.
    pub log_n: u32,
    /// The generator of the domain.
    pub omega: Scalar,
    /// `omega^i` for `i < n/2`.
    twiddles: Vec<Scalar>,
    /// `omega^-i` for `i < n/2`.
    inv_twiddles: Vec<Scalar>,
    /// `1/n`.
    pub n_inv: Scalar,
}

impl Domain {
    /// The size of the domain.
    pub fn size(&self) -> usize {
        1 << self.log_n
    }

    fn build(log_n: u32) -> Result<Self, NttError> {
        if log_n > Scalar::S {
            return Err(NttError::TooLarge(log_n));
        }
        let mut omega = Scalar::ROOT_OF_UNITY;
        for _ in log_n..Scalar::S {
            omega = omega.square();
        }
        let omega_inv = omega.invert().unwrap_or(Scalar::ONE);
        let half = (1usize << log_n) / 2;
        let twiddles = powers(omega, half);
        let inv_twiddles = powers(omega_inv, half);
        let n_inv = Scalar::from(1u64 << log_n).invert().unwrap_or(Scalar::ONE);
        Ok(Domain {
            log_n,
            omega,
            twiddles,
            inv_twiddles,
            n_inv,
        })
    }
}

/// `[base^0, base^1, ..., base^(len-1)]`, computed in parallel chunks.
pub fn powers(base: Scalar, len: usize) -> Vec<Scalar> {
    let mut out = vec![Scalar::ZERO; len];
    distribute_powers_into(&mut out, base, Scalar::ONE, true);
    out
}

/// Sets (`overwrite`) or multiplies each `data[i]` by `scale * base^i`.
fn distribute_powers_into(data: &mut [Scalar], base: Scalar, scale: Scalar, overwrite: bool) {
    const CHUNK: usize = 1 << 12;
    data.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(ci, chunk)| {
            let mut cur = base.pow_vartime([(ci * CHUNK) as u64]) * scale;
            for v in chunk.iter_mut() {
                if overwrite {
                    *v = cur;
                } else {
                    *v *= cur;
                }
                cur *= base;
            }
        });
}

/// Multiplies each `data[i]` by `scale * base^i`.
pub fn distribute_powers(data: &mut [Scalar], base: Scalar, scale: Scalar) {
    distribute_powers_into(data, base, scale, false);
}

fn domain_cache() -> &'static Mutex<HashMap<u32, Arc<Domain>>> {
    static CACHE: OnceLock<Mutex<HashMap<u32, Arc<Domain>>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The (cached) domain of size `n`.
pub fn domain(n: usize) -> Result<Arc<Domain>, NttError> {
    if !n.is_power_of_two() {
        return Err(NttError::NotPowerOfTwo(n));
    }
    let log_n = n.trailing_zeros();
    let mut cache = domain_cache().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(d) = cache.get(&log_n) {
        return Ok(d.clone());
    }
    let d = Arc::new(Domain::build(log_n)?);
    cache.insert(log_n, d.clone());
    Ok(d)
}

/// The coset generator `g` shared by all backends.
pub fn coset_generator() -> Scalar {
    Scalar::MULTIPLICATIVE_GENERATOR
}

/// A raw pointer that may cross threads; used only for disjoint swaps below.
#[derive(Clone, Copy)]
struct SharedMut(*mut Scalar);
// SAFETY: every use writes disjoint elements from different threads (see `bit_reverse`).
unsafe impl Send for SharedMut {}
unsafe impl Sync for SharedMut {}

/// Bit-reversal permutation, in parallel: the pairs `(i, rev(i))` are disjoint, and each is
/// swapped by exactly one index (the smaller), so threads never touch the same element.
fn bit_reverse(data: &mut [Scalar], log_n: u32) {
    if log_n == 0 {
        return;
    }
    let n = data.len();
    let shift = usize::BITS - log_n;
    let ptr = SharedMut(data.as_mut_ptr());
    (0..n)
        .into_par_iter()
        .with_min_len(1 << 12)
        .for_each(move |i| {
            let p = ptr;
            let j = i.reverse_bits() >> shift;
            if i < j {
                // SAFETY: i, j < n; the pair (i, j) is swapped only by index i (as i < j), so no
                // other thread reads or writes these two elements concurrently.
                unsafe { std::ptr::swap(p.0.add(i), p.0.add(j)) };
            }
        });
}

/// Unscaled radix-2 transform with the given twiddle table (`w^i`, `i < n/2`).
fn radix2(data: &mut [Scalar], log_n: u32, twiddles: &[Scalar]) {
    let n = data.len();
    bit_reverse(data, log_n);
    let threads = rayon::current_num_threads().max(1);
    let mut half = 1usize;
    while half < n {
        let block = 2 * half;
        let stride = n / block;
        let blocks = n / block;
        let butterfly = |lo: &mut [Scalar], hi: &mut [Scalar], j0: usize| {
            let tw = twiddles[j0 * stride..].iter().step_by(stride);
            for ((x, y), w) in lo.iter_mut().zip(hi.iter_mut()).zip(tw) {
                let t = *y * w;
                *y = *x - t;
                *x += t;
            }
        };
        if blocks >= threads || n < (1 << 12) {
            data.par_chunks_mut(block).for_each(|chunk| {
                let (lo, hi) = chunk.split_at_mut(half);
                butterfly(lo, hi, 0);
            });
        } else {
            // Few large blocks: split each block's butterflies across threads.
            let piece = (half / threads).max(1 << 10);
            for chunk in data.chunks_mut(block) {
                let (lo, hi) = chunk.split_at_mut(half);
                lo.par_chunks_mut(piece)
                    .zip(hi.par_chunks_mut(piece))
                    .enumerate()
                    .for_each(|(p, (l, h))| butterfly(l, h, p * piece));
            }
        }
        half = block;
    }
}

/// Runs one transform in place.
pub fn ntt_cpu(data: &mut [Scalar], kind: NttKind) -> Result<(), NttError> {
    let d = domain(data.len())?;
    let g = coset_generator();
    match kind {
        NttKind::Forward => radix2(data, d.log_n, &d.twiddles),
        NttKind::Inverse => {
            radix2(data, d.log_n, &d.inv_twiddles);
            data.par_iter_mut().for_each(|v| *v *= d.n_inv);
        }
        NttKind::CosetForward => {
            distribute_powers(data, g, Scalar::ONE);
            radix2(data, d.log_n, &d.twiddles);
        }
        NttKind::CosetInverse => {
            radix2(data, d.log_n, &d.inv_twiddles);
            let g_inv = g.invert().unwrap_or(Scalar::ONE);
            distribute_powers(data, g_inv, d.n_inv);
        }
    }
    Ok(())
}

/// Inverse transform fused with the shift to the coset: evaluations over the domain in,
/// evaluations over the coset out (`iNTT` then `coset NTT`, with one scaling pass).
fn domain_to_coset(data: &mut [Scalar], d: &Domain) {
    radix2(data, d.log_n, &d.inv_twiddles);
    distribute_powers(data, coset_generator(), d.n_inv);
    radix2(data, d.log_n, &d.twiddles);
}

/// `1 / Z(g·x)` on the coset, where `Z(x) = x^n − 1`: the constant `1 / (g^n − 1)`.
pub fn z_inv_on_coset(n: usize) -> Scalar {
    let gn = coset_generator().pow_vartime([n as u64]);
    (gn - Scalar::ONE).invert().unwrap_or(Scalar::ZERO)
}

/// Coefficients of `H = (A·B − C) / Z` from evaluations of A, B, C over the domain.
///
/// All three buffers must have the same power-of-two length `n`; on return `a` holds the `n`
/// coefficients of H (the last is zero for a satisfied system), `b` and `c` are scratch.
pub fn h_poly_cpu(a: &mut [Scalar], b: &mut [Scalar], c: &mut [Scalar]) -> Result<(), NttError> {
    if a.len() != b.len() || a.len() != c.len() {
        return Err(NttError::LengthMismatch(a.len(), b.len().max(c.len())));
    }
    let d = domain(a.len())?;
    rayon::join(
        || domain_to_coset(a, &d),
        || rayon::join(|| domain_to_coset(b, &d), || domain_to_coset(c, &d)),
    );
    let z_inv = z_inv_on_coset(a.len());
    a.par_iter_mut()
        .zip(b.par_iter())
        .zip(c.par_iter())
        .for_each(|((x, y), z)| {
            *x = (*x * y - z) * z_inv;
        });
    ntt_cpu(a, NttKind::CosetInverse)
}

/// `a∘b`: the evaluations of C at a witness that satisfies every constraint.
pub fn pointwise_product(a: &[Scalar], b: &[Scalar]) -> Vec<Scalar> {
    a.par_iter().zip(b).map(|(x, y)| *x * y).collect()
}

/// Coefficients of `H = (A·B − C) / Z` from evaluations of A and B over the domain, where C's
/// are `a∘b`: six transforms instead of [`h_poly_cpu`]'s seven.
///
/// With P = A·B (degree 2n − 2), C = P mod Z, so C_k = P_k + P_(k+n) and H_k = P_(k+n). The
/// coset inverse of P's coset evaluations A(g·x)·B(g·x) gives Y_k = P_k + g^n·P_(k+n), hence
/// H_k = (Y_k − C_k) / (g^n − 1): C's coefficients need one inverse transform, and only A and
/// B go to the coset. Both buffers must have the same power-of-two length `n`; on return `a`
/// holds the `n` coefficients of H (the last is zero), `b` is scratch.
pub fn h_poly_of_product_cpu(a: &mut [Scalar], b: &mut [Scalar]) -> Result<(), NttError> {
    if a.len() != b.len() {
        return Err(NttError::LengthMismatch(a.len(), b.len()));
    }
    let d = domain(a.len())?;
    let mut c = pointwise_product(a, b);
    let ((), ((), inverse)) = rayon::join(
        || domain_to_coset(a, &d),
        || {
            rayon::join(
                || domain_to_coset(b, &d),
                || ntt_cpu(&mut c, NttKind::Inverse),
            )
        },
    );
    inverse?;
    a.par_iter_mut()
        .zip(b.par_iter())
        .for_each(|(x, y)| *x *= y);
    ntt_cpu(a, NttKind::CosetInverse)?;
    let z_inv = z_inv_on_coset(a.len());
    a.par_iter_mut()
        .zip(c.par_iter())
        .for_each(|(y, c)| *y = (*y - c) * z_inv);
    Ok(())
}

/// Pads a vector of evaluations with zeros to the domain size (the next power of two).
pub fn pad_to_domain(v: &mut Vec<Scalar>) -> Result<usize, NttError> {
    let n = v.len().max(1).next_power_of_two();
    if n.trailing_zeros() > Scalar::S {
        return Err(NttError::TooLarge(n.trailing_zeros()));
    }
    v.resize(n, Scalar::ZERO);
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    fn random_vec(n: usize, seed: u64) -> Vec<Scalar> {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        (0..n).map(|_| Scalar::random(&mut rng)).collect()
    }

    /// Direct O(n^2) evaluation of a polynomial at `shift * omega^i`.
    fn naive_eval(coeffs: &[Scalar], shift: Scalar) -> Vec<Scalar> {
        let d = domain(coeffs.len()).unwrap();
        let omega = d.omega;
        (0..coeffs.len())
            .map(|i| {
                let x = shift * omega.pow_vartime([i as u64]);
                coeffs.iter().rev().fold(Scalar::ZERO, |acc, c| acc * x + c)
            })
            .collect()
    }

    #[test]
    fn forward_matches_direct_evaluation() {
        for log_n in [0u32, 1, 3, 6, 9] {
            let n = 1 << log_n;
            let coeffs = random_vec(n, log_n as u64);
            let mut v = coeffs.clone();
            ntt_cpu(&mut v, NttKind::Forward).unwrap();
            assert_eq!(v, naive_eval(&coeffs, Scalar::ONE), "n = {n}");
            let mut w = coeffs.clone();
            ntt_cpu(&mut w, NttKind::CosetForward).unwrap();
            assert_eq!(w, naive_eval(&coeffs, coset_generator()), "coset n = {n}");
        }
    }

    #[test]
    fn inverses_round_trip_at_parallel_sizes() {
        for log_n in [10u32, 13, 15] {
            let orig = random_vec(1 << log_n, 100 + log_n as u64);
            let mut v = orig.clone();
            ntt_cpu(&mut v, NttKind::Forward).unwrap();
            ntt_cpu(&mut v, NttKind::Inverse).unwrap();
            assert_eq!(v, orig);
            ntt_cpu(&mut v, NttKind::CosetForward).unwrap();
            ntt_cpu(&mut v, NttKind::CosetInverse).unwrap();
            assert_eq!(v, orig);
        }
    }

    #[test]
    fn h_poly_divides_exactly() {
        // Random A, B of degree < n. C interpolates A·B on the domain, so A·B = C + H·(x^n − 1)
        // and, writing A·B = Σ p_k x^k, H = Σ_{k<n} p_{n+k} x^k.
        let n = 1 << 8;
        let a_coeffs = random_vec(n, 1);
        let b_coeffs = random_vec(n, 2);
        // Evaluations over the domain.
        let mut a = a_coeffs.clone();
        ntt_cpu(&mut a, NttKind::Forward).unwrap();
        let mut b = b_coeffs.clone();
        ntt_cpu(&mut b, NttKind::Forward).unwrap();
        let mut c: Vec<Scalar> = a.iter().zip(&b).map(|(x, y)| *x * y).collect();
        let mut prod = vec![Scalar::ZERO; 2 * n];
        for (i, x) in a_coeffs.iter().enumerate() {
            for (j, y) in b_coeffs.iter().enumerate() {
                prod[i + j] += *x * y;
            }
        }
        let expected_h: Vec<Scalar> = prod[n..].to_vec();
        h_poly_cpu(&mut a, &mut b, &mut c).unwrap();
        assert_eq!(a, expected_h);
        assert_eq!(a[n - 1], Scalar::ZERO);
    }

    #[test]
    fn h_poly_of_a_product_matches_the_seven_transforms() {
        for log_n in [0u32, 1, 4, 11, 14] {
            let n = 1 << log_n;
            let (a, b) = (random_vec(n, 40 + u64::from(log_n)), random_vec(n, 41));
            let mut want = a.clone();
            let mut c = pointwise_product(&a, &b);
            h_poly_cpu(&mut want, &mut b.clone(), &mut c).unwrap();
            let mut got = a.clone();
            h_poly_of_product_cpu(&mut got, &mut b.clone()).unwrap();
            assert_eq!(got, want, "n = {n}");
        }
        let (mut a, mut b) = (vec![Scalar::ONE; 4], vec![Scalar::ONE; 8]);
        assert!(h_poly_of_product_cpu(&mut a, &mut b).is_err());
    }

    #[test]
    fn rejects_bad_lengths() {
        let mut v = vec![Scalar::ONE; 3];
        assert_eq!(
            ntt_cpu(&mut v, NttKind::Forward),
            Err(NttError::NotPowerOfTwo(3))
        );
        let mut a = vec![Scalar::ONE; 4];
        let mut b = vec![Scalar::ONE; 4];
        let mut c = vec![Scalar::ONE; 8];
        assert!(h_poly_cpu(&mut a, &mut b, &mut c).is_err());
    }
}
