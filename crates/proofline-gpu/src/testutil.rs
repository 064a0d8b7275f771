//! Input generators and CPU references shared by the GPU tests and the
//! benchmark binary: fast random G1 points and scalars (rayon), the PoRep-like
//! zero/one/other scalar mix, and a plain CPU radix-2 NTT over blstrs::Scalar.

use blstrs::{G1Affine, G1Projective, Scalar};
use ff::Field;
use group::{Curve, Group};
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;

use crate::layout::scalar_from_raw_montgomery;
use crate::plan::{coset_generator, root_of_unity};

const CHUNK: usize = 4096;

/// `n` pseudo-random G1 points: chunk k is start_k + j Q_k for random start_k,
/// Q_k (cheap: one addition per point plus a batch normalisation).
pub fn random_points(n: usize, seed: u64) -> Vec<G1Affine> {
    let mut out = vec![G1Affine::default(); n];
    out.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(k, chunk)| {
            let mut rng = ChaCha20Rng::seed_from_u64(seed ^ ((k as u64) << 20) ^ 0x9e37);
            let q = G1Projective::generator() * Scalar::random(&mut rng);
            let mut p = G1Projective::generator() * Scalar::random(&mut rng);
            let mut proj = Vec::with_capacity(chunk.len());
            for _ in 0..chunk.len() {
                proj.push(p);
                p += q;
            }
            G1Projective::batch_normalize(&proj, chunk);
        });
    out
}

/// `n` uniformly random scalars (raw Montgomery limbs below 2^254 < r).
pub fn random_scalars(n: usize, seed: u64) -> Vec<Scalar> {
    let mut out = vec![Scalar::ZERO; n];
    out.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(k, chunk)| {
            let mut rng = ChaCha20Rng::seed_from_u64(seed ^ ((k as u64) << 24) ^ 0x51ed);
            for s in chunk.iter_mut() {
                let mut l = [0u64; 4];
                for x in l.iter_mut() {
                    *x = rng.next_u64();
                }
                l[3] &= 0x3fff_ffff_ffff_ffff;
                *s = scalar_from_raw_montgomery(l);
            }
        });
    out
}

/// Zero / one / other fractions of a scalar vector (PoRep-like default
/// 0.6 / 0.3 / 0.1).
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct ScalarMix {
    /// fraction of zeros
    pub zero: f64,
    /// fraction of ones
    pub one: f64,
}

impl Default for ScalarMix {
    fn default() -> Self {
        ScalarMix {
            zero: 0.6,
            one: 0.3,
        }
    }
}

/// `n` scalars drawn with the given mix (others uniformly random).
pub fn mixed_scalars(n: usize, mix: ScalarMix, seed: u64) -> Vec<Scalar> {
    let mut out = random_scalars(n, seed);
    out.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(k, chunk)| {
            let mut rng = ChaCha20Rng::seed_from_u64(seed ^ ((k as u64) << 28) ^ 0x77);
            for s in chunk.iter_mut() {
                let u = (rng.next_u32() as f64) / (u32::MAX as f64 + 1.0);
                if u < mix.zero {
                    *s = Scalar::ZERO;
                } else if u < mix.zero + mix.one {
                    *s = Scalar::ONE;
                }
            }
        });
    out
}

fn bitreverse<T>(a: &mut [T]) {
    let n = a.len();
    let lg = n.trailing_zeros();
    if lg == 0 {
        return;
    }
    for i in 0..n {
        let j = i.reverse_bits() >> (usize::BITS - lg);
        if i < j {
            a.swap(i, j);
        }
    }
}

/// Plain CPU radix-2 NTT with root `w` (natural order in and out).
pub fn cpu_ntt_with_root(a: &mut [Scalar], w: Scalar) {
    let n = a.len();
    bitreverse(a);
    let mut m = 1;
    while m < n {
        let wm = w.pow_vartime([(n / (2 * m)) as u64]);
        for k in (0..n).step_by(2 * m) {
            let mut wj = Scalar::ONE;
            for j in 0..m {
                let t = a[k + j + m] * wj;
                a[k + j + m] = a[k + j] - t;
                a[k + j] += t;
                wj *= wm;
            }
        }
        m *= 2;
    }
}

/// CPU reference of [`crate::NttKind`] transforms.
pub fn cpu_ntt(a: &mut [Scalar], kind: crate::NttKind) {
    let n = a.len();
    let lg = n.trailing_zeros();
    let w = root_of_unity(lg);
    let g = coset_generator();
    let ninv = Scalar::from(n as u64).invert().unwrap_or(Scalar::ONE);
    match kind {
        crate::NttKind::Forward => cpu_ntt_with_root(a, w),
        crate::NttKind::Inverse => {
            cpu_ntt_with_root(a, w.invert().unwrap_or(Scalar::ONE));
            a.iter_mut().for_each(|x| *x *= ninv);
        }
        crate::NttKind::CosetForward => {
            let mut p = Scalar::ONE;
            for x in a.iter_mut() {
                *x *= p;
                p *= g;
            }
            cpu_ntt_with_root(a, w);
        }
        crate::NttKind::CosetInverse => {
            cpu_ntt_with_root(a, w.invert().unwrap_or(Scalar::ONE));
            let ginv = g.invert().unwrap_or(Scalar::ONE);
            let mut p = ninv;
            for x in a.iter_mut() {
                *x *= p;
                p *= ginv;
            }
        }
    }
}

/// CPU reference of [`crate::GpuContext::h_poly`] (the bellperson sequence).
pub fn cpu_h_poly(a: &mut [Scalar], b: &[Scalar], c: &[Scalar]) {
    use crate::NttKind::*;
    let mut b = b.to_vec();
    let mut c = c.to_vec();
    for x in [&mut *a, &mut b[..], &mut c[..]] {
        cpu_ntt(x, Inverse);
        cpu_ntt(x, CosetForward);
    }
    let n = a.len() as u64;
    let zinv = (coset_generator().pow_vartime([n]) - Scalar::ONE)
        .invert()
        .unwrap_or(Scalar::ONE);
    for i in 0..a.len() {
        a[i] = (a[i] * b[i] - c[i]) * zinv;
    }
    cpu_ntt(a, CosetInverse);
}

/// sum_i coeffs[i] x^i (Horner).
pub fn eval_poly(coeffs: &[Scalar], x: Scalar) -> Scalar {
    coeffs.iter().rev().fold(Scalar::ZERO, |acc, c| acc * x + c)
}
