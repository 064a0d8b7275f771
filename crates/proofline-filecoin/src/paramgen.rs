//! Fast random Groth16 parameters for test fixtures.
//!
//! Produces the same CRS as bellperson's `generate_random_parameters` (same circuit layout:
//! ONE first, one `x·0 = 0` constraint per input appended, the QAP over bellperson's evaluation
//! domain, A/B entries dropped where the polynomial evaluates to zero, L never zero), with
//! independent random toxic waste — but computed differently, for speed on few cores:
//!
//! * the circuit is synthesized twice with assembly-only constraint systems: once to count
//!   constraints and variables, then once more accumulating `a_i(τ)`, `b_i(τ)`, `c_i(τ)` for
//!   every variable directly from the Lagrange coefficients `L_j(τ) = ω^j (τ^n − 1) / (n (τ − ω^j))`
//!   (no per-variable term lists, no IFFT);
//! * every point is `scalar · generator`: a fixed-base comb (precomputed `d · 2^{w·k} · G` for
//!   every window `k` and digit `d`) turns each into about 26 (G1) or 32 (G2) mixed additions
//!   with no doublings, in parallel chunks that are batch-normalised.
//!
//! Test parameters only: the toxic waste is drawn from the caller's RNG and dropped, and the
//! generators are the standard ones.

use std::sync::Arc;

use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use bellperson::groth16::{Parameters, VerifyingKey};
use blstrs::{Bls12, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::{Field, PrimeField};
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use rand_core::RngCore;
use rayon::prelude::*;

/// Counts constraints and variables (first pass).
#[derive(Default)]
struct Counter {
    inputs: usize,
    aux: usize,
    constraints: usize,
}

impl ConstraintSystem<Scalar> for Counter {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux += 1;
        Ok(Variable(Index::Aux(self.aux - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs += 1;
        Ok(Variable(Index::Input(self.inputs - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        self.constraints += 1;
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}

/// Shape of a circuit without synthesizing witnesses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CircuitShape {
    /// Constraints of the circuit (without the one `x·0 = 0` per input the prover adds).
    pub constraints: usize,
    /// Public inputs including ONE.
    pub inputs: usize,
    /// Aux variables.
    pub aux: usize,
}

/// Counts the constraints and variables of a (blank) circuit.
pub fn circuit_shape<C: Circuit<Scalar>>(circuit: C) -> Result<CircuitShape, SynthesisError> {
    let mut counter = Counter::default();
    counter.alloc_input(|| "", || Ok(Scalar::ONE))?;
    circuit.synthesize(&mut counter)?;
    Ok(CircuitShape {
        constraints: counter.constraints,
        inputs: counter.inputs,
        aux: counter.aux,
    })
}

/// Evaluations at τ of the QAP polynomials of every variable (second pass).
struct Evaluator<'a> {
    lagrange: &'a [Scalar],
    inputs: usize,
    aux: usize,
    constraint: usize,
    /// `[a, b, c]` per input.
    at_inputs: Vec<[Scalar; 3]>,
    /// `[a, b, c]` per aux variable.
    at_aux: Vec<[Scalar; 3]>,
    /// Set when a constraint refers to a variable or constraint index the first pass did not
    /// see (the two passes synthesized different circuits).
    inconsistent: bool,
}

impl Evaluator<'_> {
    fn add(&mut self, which: usize, lc: &LinearCombination<Scalar>) -> Result<(), SynthesisError> {
        let l = *self
            .lagrange
            .get(self.constraint)
            .ok_or(SynthesisError::PolynomialDegreeTooLarge)?;
        for (var, coeff) in lc.iter() {
            let slot = match var.get_unchecked() {
                Index::Input(i) => self.at_inputs.get_mut(i),
                Index::Aux(i) => self.at_aux.get_mut(i),
            }
            .ok_or(SynthesisError::UnconstrainedVariable)?;
            slot[which] += *coeff * l;
        }
        Ok(())
    }
}

impl ConstraintSystem<Scalar> for Evaluator<'_> {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux += 1;
        Ok(Variable(Index::Aux(self.aux - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs += 1;
        Ok(Variable(Index::Input(self.inputs - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        // `enforce` cannot return an error: a mismatch between the passes is recorded and
        // reported after synthesis.
        let ok = self.add(0, &a(LinearCombination::zero())).is_ok()
            & self.add(1, &b(LinearCombination::zero())).is_ok()
            & self.add(2, &c(LinearCombination::zero())).is_ok();
        self.inconsistent |= !ok;
        self.constraint += 1;
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}

/// The projective group operations the comb needs, for G1 and G2.
trait CombCurve: Copy + Send + Sync + Sized {
    type Affine: Copy + Send + Sync;
    fn zero() -> Self;
    fn add_affine(&mut self, p: &Self::Affine);
    fn add_proj(&mut self, p: &Self);
    fn affine_zero() -> Self::Affine;
    fn normalize(p: &[Self], out: &mut [Self::Affine]);
}

macro_rules! comb_curve {
    ($proj:ty, $aff:ty) => {
        impl CombCurve for $proj {
            type Affine = $aff;
            fn zero() -> Self {
                <$proj as Group>::identity()
            }
            fn add_affine(&mut self, p: &$aff) {
                *self += p;
            }
            fn add_proj(&mut self, p: &Self) {
                *self += p;
            }
            fn affine_zero() -> $aff {
                <$aff as PrimeCurveAffine>::identity()
            }
            fn normalize(p: &[Self], out: &mut [$aff]) {
                <$proj as Curve>::batch_normalize(p, out);
            }
        }
    };
}
comb_curve!(G1Projective, G1Affine);
comb_curve!(G2Projective, G2Affine);

/// `scalar · G` for a fixed `G`: `table[k·(2^w − 1) + d − 1] = d · 2^{w·k} · G`.
struct Comb<C: CombCurve> {
    w: usize,
    windows: usize,
    table: Vec<C::Affine>,
}

impl<C: CombCurve> Comb<C> {
    fn new(generator: C, w: usize) -> Self {
        let windows = 255usize.div_ceil(w);
        let digits = (1usize << w) - 1;
        let mut proj = Vec::with_capacity(windows * digits);
        let mut base = generator;
        for _ in 0..windows {
            let mut acc = base;
            for _ in 0..digits {
                proj.push(acc);
                acc.add_proj(&base);
            }
            // After 2^w − 1 additions acc = 2^w · base: the next window's base.
            base = acc;
        }
        let mut table = vec![C::affine_zero(); proj.len()];
        C::normalize(&proj, &mut table);
        Comb { w, windows, table }
    }

    fn mul(&self, s: &Scalar) -> C {
        let repr = s.to_repr();
        let bytes = repr.as_ref();
        let mut acc = C::zero();
        let digits = (1usize << self.w) - 1;
        for k in 0..self.windows {
            let mut d = 0usize;
            for bit in 0..self.w {
                let pos = k * self.w + bit;
                if pos < 256 && (bytes[pos / 8] >> (pos % 8)) & 1 == 1 {
                    d |= 1 << bit;
                }
            }
            if d != 0 {
                acc.add_affine(&self.table[k * digits + d - 1]);
            }
        }
        acc
    }

    /// `s_i · G` for every scalar, in parallel, affine.
    fn mul_many(&self, scalars: &[Scalar]) -> Vec<C::Affine> {
        let mut out = vec![C::affine_zero(); scalars.len()];
        out.par_chunks_mut(1 << 12)
            .zip(scalars.par_chunks(1 << 12))
            .for_each(|(dst, src)| {
                let proj: Vec<C> = src.iter().map(|s| self.mul(s)).collect();
                C::normalize(&proj, dst);
            });
        out
    }
}

/// The Lagrange basis of bellperson's domain of size `n` evaluated at `tau`.
fn lagrange_at(n: usize, tau: Scalar) -> Result<Vec<Scalar>, SynthesisError> {
    let log_n = n.trailing_zeros();
    if log_n > Scalar::S {
        return Err(SynthesisError::PolynomialDegreeTooLarge);
    }
    let mut omega = Scalar::ROOT_OF_UNITY;
    for _ in log_n..Scalar::S {
        omega = omega.square();
    }
    let n_inv = Option::<Scalar>::from(Scalar::from(n as u64).invert())
        .ok_or(SynthesisError::UnexpectedIdentity)?;
    let z = tau.pow_vartime([n as u64]) - Scalar::ONE;
    let factor = z * n_inv;
    let chunk = 1 << 14;
    let mut out = vec![Scalar::ZERO; n];
    out.par_chunks_mut(chunk)
        .enumerate()
        .try_for_each(|(c, dst)| {
            let start = omega.pow_vartime([(c * chunk) as u64]);
            let mut w = start;
            let mut omegas = Vec::with_capacity(dst.len());
            for d in dst.iter_mut() {
                omegas.push(w);
                *d = tau - w;
                w *= omega;
            }
            // Batch inversion of (tau − ω^j).
            let mut prefix = Vec::with_capacity(dst.len());
            let mut acc = Scalar::ONE;
            for d in dst.iter() {
                prefix.push(acc);
                acc *= d;
            }
            let mut inv =
                Option::<Scalar>::from(acc.invert()).ok_or(SynthesisError::UnexpectedIdentity)?;
            for i in (0..dst.len()).rev() {
                let d_inv = inv * prefix[i];
                inv *= dst[i];
                dst[i] = factor * omegas[i] * d_inv;
            }
            Ok::<(), SynthesisError>(())
        })?;
    Ok(out)
}

fn nonzero_random(rng: &mut dyn RngCore) -> Scalar {
    loop {
        let s = Scalar::random(&mut *rng);
        if !bool::from(s.is_zero()) {
            return s;
        }
    }
}

/// Random parameters for `circuit` (built by `make` twice), layout-compatible with
/// bellperson's `generate_random_parameters` and our prover.
pub fn generate_random_parameters<C, F>(
    make: F,
    rng: &mut dyn RngCore,
) -> Result<Parameters<Bls12>, SynthesisError>
where
    C: Circuit<Scalar>,
    F: Fn() -> C,
{
    // Pass 1: shape.
    let mut counter = Counter::default();
    counter.alloc_input(|| "", || Ok(Scalar::ONE))?;
    make().synthesize(&mut counter)?;
    let (num_inputs, num_aux) = (counter.inputs, counter.aux);
    let m = counter.constraints + num_inputs;
    let n = m.max(1).next_power_of_two();

    let tau = nonzero_random(rng);
    let alpha = nonzero_random(rng);
    let beta = nonzero_random(rng);
    let gamma = nonzero_random(rng);
    let delta = nonzero_random(rng);
    let gamma_inv =
        Option::<Scalar>::from(gamma.invert()).ok_or(SynthesisError::UnexpectedIdentity)?;
    let delta_inv =
        Option::<Scalar>::from(delta.invert()).ok_or(SynthesisError::UnexpectedIdentity)?;
    let lagrange = lagrange_at(n, tau)?;

    // Pass 2: QAP evaluations at tau.
    let mut ev = Evaluator {
        lagrange: &lagrange,
        inputs: 0,
        aux: 0,
        constraint: 0,
        at_inputs: vec![[Scalar::ZERO; 3]; num_inputs],
        at_aux: vec![[Scalar::ZERO; 3]; num_aux],
        inconsistent: false,
    };
    ev.alloc_input(|| "", || Ok(Scalar::ONE))?;
    make().synthesize(&mut ev)?;
    if ev.inconsistent
        || ev.constraint + num_inputs != m
        || ev.inputs != num_inputs
        || ev.aux != num_aux
    {
        return Err(SynthesisError::Unsatisfiable);
    }
    // x_i · 0 = 0 for every input, so the IC query is fully dense.
    for i in 0..num_inputs {
        ev.at_inputs[i][0] += lagrange[ev.constraint + i];
    }
    let Evaluator {
        at_inputs, at_aux, ..
    } = ev;
    drop(lagrange);

    let g1 = Comb::<G1Projective>::new(G1Projective::generator(), 10);
    let g2 = Comb::<G2Projective>::new(G2Projective::generator(), 8);

    // H: tau^i · t(tau) / delta.
    let t_over_delta = (tau.pow_vartime([n as u64]) - Scalar::ONE) * delta_inv;
    let mut h_scalars = vec![Scalar::ZERO; n - 1];
    let chunk = 1 << 14;
    h_scalars
        .par_chunks_mut(chunk)
        .enumerate()
        .for_each(|(c, dst)| {
            let mut p = tau.pow_vartime([(c * chunk) as u64]) * t_over_delta;
            for d in dst {
                *d = p;
                p *= tau;
            }
        });
    let h = g1.mul_many(&h_scalars);
    drop(h_scalars);

    let all: Vec<&[Scalar; 3]> = at_inputs.iter().chain(at_aux.iter()).collect();
    let a_scalars: Vec<Scalar> = all
        .iter()
        .map(|e| e[0])
        .filter(|s| !bool::from(s.is_zero()))
        .collect();
    let b_scalars: Vec<Scalar> = all
        .iter()
        .map(|e| e[1])
        .filter(|s| !bool::from(s.is_zero()))
        .collect();
    let ext = |e: &[Scalar; 3], inv: Scalar| (beta * e[0] + alpha * e[1] + e[2]) * inv;
    let ic_scalars: Vec<Scalar> = at_inputs.iter().map(|e| ext(e, gamma_inv)).collect();
    let l_scalars: Vec<Scalar> = at_aux.iter().map(|e| ext(e, delta_inv)).collect();
    if l_scalars.iter().any(|s| bool::from(s.is_zero())) {
        return Err(SynthesisError::UnconstrainedVariable);
    }
    drop(all);
    let a = g1.mul_many(&a_scalars);
    let b_g1 = g1.mul_many(&b_scalars);
    let b_g2 = g2.mul_many(&b_scalars);
    let ic = g1.mul_many(&ic_scalars);
    let l = g1.mul_many(&l_scalars);

    let g1_gen = G1Affine::generator();
    let g2_gen = G2Affine::generator();
    let vk = VerifyingKey::<Bls12> {
        alpha_g1: (g1_gen * alpha).to_affine(),
        beta_g1: (g1_gen * beta).to_affine(),
        beta_g2: (g2_gen * beta).to_affine(),
        gamma_g2: (g2_gen * gamma).to_affine(),
        delta_g1: (g1_gen * delta).to_affine(),
        delta_g2: (g2_gen * delta).to_affine(),
        ic,
    };
    Ok(Parameters {
        vk,
        h: Arc::new(h),
        l: Arc::new(l),
        a: Arc::new(a),
        b_g1: Arc::new(b_g1),
        b_g2: Arc::new(b_g2),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellperson::groth16;
    use proofline_groth16::{prover, CpuBackend, ProvingKey};

    /// x³ + x + 5 = y with public y, a standard toy circuit.
    #[derive(Clone)]
    struct Cube(Option<Scalar>);

    impl Circuit<Scalar> for Cube {
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> Result<(), SynthesisError> {
            let x_val = self.0;
            let x = cs.alloc(|| "x", || x_val.ok_or(SynthesisError::AssignmentMissing))?;
            let x2_val = x_val.map(|x| x.square());
            let x2 = cs.alloc(|| "x2", || x2_val.ok_or(SynthesisError::AssignmentMissing))?;
            cs.enforce(|| "x2", |lc| lc + x, |lc| lc + x, |lc| lc + x2);
            let x3_val = x2_val.zip(x_val).map(|(a, b)| a * b);
            let x3 = cs.alloc(|| "x3", || x3_val.ok_or(SynthesisError::AssignmentMissing))?;
            cs.enforce(|| "x3", |lc| lc + x2, |lc| lc + x, |lc| lc + x3);
            let y_val = x3_val.zip(x_val).map(|(a, b)| a + b + Scalar::from(5u64));
            let y = cs.alloc_input(|| "y", || y_val.ok_or(SynthesisError::AssignmentMissing))?;
            cs.enforce(
                || "y",
                |lc| lc + x3 + x + (Scalar::from(5u64), CS::one()),
                |lc| lc + CS::one(),
                |lc| lc + y,
            );
            Ok(())
        }
    }

    #[test]
    fn parameters_have_bellpersons_shape_and_prove() {
        let mut rng = rand::rngs::OsRng;
        let ours = generate_random_parameters(|| Cube(None), &mut rng).unwrap();
        let theirs =
            groth16::generate_random_parameters::<Bls12, _, _>(Cube(None), &mut rng).unwrap();
        assert_eq!(ours.h.len(), theirs.h.len());
        assert_eq!(ours.l.len(), theirs.l.len());
        assert_eq!(ours.a.len(), theirs.a.len());
        assert_eq!(ours.b_g1.len(), theirs.b_g1.len());
        assert_eq!(ours.b_g2.len(), theirs.b_g2.len());
        assert_eq!(ours.vk.ic.len(), theirs.vk.ic.len());

        // bellperson proves with them and verifies...
        let x = Scalar::from(3u64);
        let y = Scalar::from(35u64);
        let proof = groth16::create_random_proof(Cube(Some(x)), &ours, &mut rng).unwrap();
        let pvk = groth16::prepare_verifying_key(&ours.vk);
        assert!(groth16::verify_proof(&pvk, &proof, &[y]).unwrap());
        assert!(!groth16::verify_proof(&pvk, &proof, &[y + Scalar::ONE]).unwrap());
        // ...and so does our staged prover.
        let pk = ProvingKey::new(ours);
        let (p, inputs) =
            prover::prove(&CpuBackend, &pk, Box::new(Cube(Some(x))), &mut rng).unwrap();
        assert_eq!(inputs, vec![y]);
        assert!(prover::verify(&pk, &p, &[y]).unwrap());
    }

    #[test]
    fn comb_matches_scalar_multiplication() {
        let g1 = Comb::<G1Projective>::new(G1Projective::generator(), 10);
        let g2 = Comb::<G2Projective>::new(G2Projective::generator(), 8);
        let mut rng = rand::rngs::OsRng;
        let mut scalars: Vec<Scalar> = (0..50).map(|_| Scalar::random(&mut rng)).collect();
        scalars.extend([Scalar::ZERO, Scalar::ONE, -Scalar::ONE]);
        let a = g1.mul_many(&scalars);
        let b = g2.mul_many(&scalars);
        for (i, s) in scalars.iter().enumerate() {
            assert_eq!(a[i], (G1Projective::generator() * s).to_affine());
            assert_eq!(b[i], (G2Projective::generator() * s).to_affine());
        }
    }

    #[test]
    fn lagrange_basis_interpolates() {
        // Σ_j L_j(τ)·f(ω^j) = f(τ) for a polynomial of degree < n.
        let n = 8;
        let tau = Scalar::from(123456789u64);
        let l = lagrange_at(n, tau).unwrap();
        let mut omega = Scalar::ROOT_OF_UNITY;
        for _ in 3..Scalar::S {
            omega = omega.square();
        }
        let f = |x: Scalar| x * x * x + Scalar::from(7u64) * x + Scalar::ONE;
        let mut acc = Scalar::ZERO;
        let mut w = Scalar::ONE;
        for lj in &l {
            acc += *lj * f(w);
            w *= omega;
        }
        assert_eq!(acc, f(tau));
    }
}
