//! Interoperability with bellperson 0.27: our staged prover against parameters from bellperson's
//! `generate_random_parameters`, checked with bellperson's `verify_proof`, and bit-for-bit against
//! bellperson's own prover for the same randomness.

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use bellperson::groth16::{self, Proof};
use blstrs::{Bls12, G1Projective, Scalar};
use ff::Field;
use group::{Curve, Group};
use proofline_circuits::Sha256Preimage;
use proofline_groth16::msm::MsmPlan;
use proofline_groth16::ntt::{self, NttKind};
use proofline_groth16::prover::{self, MsmResults};
use proofline_groth16::synthesis::synthesize;
use proofline_groth16::{proof_to_bytes, CpuBackend, ProverError, ProvingKey};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

/// A small circuit with several public inputs, a mix of 0, 1 and other witness values, inputs
/// that appear in B and aux variables that appear in neither A nor B.
#[derive(Clone)]
struct Mix {
    x: Option<Scalar>,
    rounds: usize,
}

impl Circuit<Scalar> for Mix {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut x_val = self.x;
        let mut x = cs.alloc(|| "x", || x_val.ok_or(SynthesisError::AssignmentMissing))?;
        let k_val = Some(Scalar::from(3u64));
        let k = cs.alloc_input(|| "k", || k_val.ok_or(SynthesisError::AssignmentMissing))?;
        for i in 0..self.rounds {
            // bit = (i % 3 == 0) as a boolean-constrained variable
            let bit_val = Some(if i % 3 == 0 {
                Scalar::ONE
            } else {
                Scalar::ZERO
            });
            let bit = cs.alloc(
                || format!("bit {i}"),
                || bit_val.ok_or(SynthesisError::AssignmentMissing),
            )?;
            cs.enforce(
                || format!("bool {i}"),
                |lc| lc + bit,
                |lc| lc + CS::one() - bit,
                |lc| lc,
            );
            // y = x * (x + k)
            let y_val = x_val.zip(k_val).map(|(x, k)| x * (x + k));
            let y = cs.alloc(
                || format!("y {i}"),
                || y_val.ok_or(SynthesisError::AssignmentMissing),
            )?;
            cs.enforce(
                || format!("sq {i}"),
                |lc| lc + x,
                |lc| lc + x + k,
                |lc| lc + y,
            );
            // z = y + bit, only in C
            let z_val = y_val.zip(bit_val).map(|(y, b)| y + b);
            let z = cs.alloc(
                || format!("z {i}"),
                || z_val.ok_or(SynthesisError::AssignmentMissing),
            )?;
            cs.enforce(
                || format!("add {i}"),
                |lc| lc + y + bit,
                |lc| lc + CS::one(),
                |lc| lc + z,
            );
            x = z;
            x_val = z_val;
        }
        let out = cs.alloc_input(|| "out", || x_val.ok_or(SynthesisError::AssignmentMissing))?;
        cs.enforce(|| "out", |lc| lc + x, |lc| lc + CS::one(), |lc| lc + out);
        Ok(())
    }
}

fn mix(x: u64, rounds: usize) -> Mix {
    Mix {
        x: Some(Scalar::from(x)),
        rounds,
    }
}

fn keys<C: Circuit<Scalar>>(blank: C, seed: u64) -> ProvingKey {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let params = groth16::generate_random_parameters::<Bls12, _, _>(blank, &mut rng).unwrap();
    ProvingKey::new(params)
}

#[test]
fn mix_proof_verifies_with_bellperson_and_tampering_fails() {
    let pk = keys(
        Mix {
            x: None,
            rounds: 300,
        },
        1,
    );
    let mut rng = ChaCha20Rng::seed_from_u64(2);
    let (proof, inputs) =
        prover::prove(&CpuBackend, &pk, Box::new(mix(11, 300)), &mut rng).unwrap();
    assert_eq!(inputs.len(), 2);
    // bellperson's own verifier accepts it.
    let pvk = groth16::prepare_verifying_key(pk.vk());
    assert!(groth16::verify_proof(&pvk, &proof, &inputs).unwrap());

    // A wrong public input is rejected.
    let mut wrong = inputs.clone();
    wrong[1] += Scalar::ONE;
    assert!(!groth16::verify_proof(&pvk, &proof, &wrong).unwrap());

    // Tampered proofs are rejected: each element changed in turn.
    let mut t = proof.clone();
    t.a = (G1Projective::from(t.a) + G1Projective::generator()).to_affine();
    assert!(!groth16::verify_proof(&pvk, &t, &inputs).unwrap());
    let mut t = proof.clone();
    t.c = (-G1Projective::from(t.c)).to_affine();
    assert!(!groth16::verify_proof(&pvk, &t, &inputs).unwrap());
    let mut t = proof.clone();
    t.b = (-blstrs::G2Projective::from(t.b)).to_affine();
    assert!(!groth16::verify_proof(&pvk, &t, &inputs).unwrap());

    // Serialized: every flipped byte either fails to decode or fails to verify.
    let bytes = proof_to_bytes(&proof);
    assert_eq!(bytes.len(), 192);
    for pos in [0usize, 47, 48, 100, 143, 144, 191] {
        let mut b = bytes.clone();
        b[pos] ^= 0x01;
        if let Ok(p) = Proof::<Bls12>::read(&b[..]) {
            assert!(
                !groth16::verify_proof(&pvk, &p, &inputs).unwrap(),
                "byte {pos}"
            );
        }
    }
}

#[test]
fn same_randomness_gives_bellpersons_exact_proof() {
    let pk = keys(
        Mix {
            x: None,
            rounds: 64,
        },
        3,
    );
    let (r, s) = (Scalar::from(12345u64), Scalar::from(67890u64));
    let theirs: Proof<Bls12> = groth16::create_proof(mix(5, 64), pk.params(), r, s).unwrap();

    let synth = synthesize(mix(5, 64)).unwrap();
    prover::check_shape(&pk, &synth).unwrap();
    let plan = MsmPlan::build(&synth.assignment);
    let h = prover::compute_h(&CpuBackend, synth.a, synth.b).unwrap();
    let (l, a, b_g1) = prover::msm_sparse_g1(&CpuBackend, &pk, &plan).unwrap();
    let results = MsmResults {
        h: prover::msm_h(&CpuBackend, &pk, &h).unwrap(),
        l,
        a,
        b_g1,
        b_g2: prover::msm_b_g2(&CpuBackend, &pk, &plan).unwrap(),
    };
    let ours = prover::assemble(&pk, &results, r, s);
    assert_eq!(ours, theirs);
}

#[test]
fn sha256_proof_verifies() {
    let pk = keys(Sha256Preimage::blank(1).unwrap(), 4);
    let pre = Sha256Preimage::demo_preimage(1, 9);
    let circuit = Sha256Preimage::new(1, pre.clone()).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    let (proof, inputs) = prover::prove(&CpuBackend, &pk, Box::new(circuit), &mut rng).unwrap();
    assert_eq!(inputs, Sha256Preimage::public_inputs(&pre));
    assert!(prover::verify(&pk, &proof, &inputs).unwrap());
    let other = Sha256Preimage::public_inputs(&Sha256Preimage::demo_preimage(1, 10));
    assert!(!prover::verify(&pk, &proof, &other).unwrap());
}

#[test]
fn h_satisfies_the_divisibility_identity_at_a_random_point() {
    // A(x)·B(x) − C(x) = H(x)·(x^n − 1) at a random x, with A, B interpolated from the
    // synthesized evaluations, C from their product (synthesis checked C·w = a∘b row by row) and
    // H from compute_h.
    let synth = synthesize(mix(7, 100)).unwrap();
    let n = synth.num_constraints().next_power_of_two();
    let interp = |v: &[Scalar]| {
        let mut c = v.to_vec();
        c.resize(n, Scalar::ZERO);
        ntt::ntt_cpu(&mut c, NttKind::Inverse).unwrap();
        c
    };
    let c = prover::pointwise_product(&synth.a, &synth.b);
    let (ac, bc, cc) = (interp(&synth.a), interp(&synth.b), interp(&c));
    let h = prover::compute_h(&CpuBackend, synth.a.clone(), synth.b.clone()).unwrap();
    assert_eq!(h.len(), n - 1);
    let x = Scalar::random(&mut ChaCha20Rng::seed_from_u64(6));
    let eval = |c: &[Scalar]| c.iter().rev().fold(Scalar::ZERO, |acc, k| acc * x + k);
    let lhs = eval(&ac) * eval(&bc) - eval(&cc);
    let rhs = eval(&h) * (x.pow_vartime([n as u64]) - Scalar::ONE);
    assert_eq!(lhs, rhs);
}

#[test]
fn wrong_parameters_are_a_shape_error() {
    let pk = keys(
        Mix {
            x: None,
            rounds: 10,
        },
        7,
    );
    let err = prover::prove(
        &CpuBackend,
        &pk,
        Box::new(mix(1, 40)),
        &mut ChaCha20Rng::seed_from_u64(1),
    )
    .unwrap_err();
    assert!(matches!(err, ProverError::ShapeMismatch { .. }), "{err}");
}

#[test]
fn unsatisfied_witness_is_refused_before_proving() {
    // A witness that breaks a constraint would give a proof that fails verification (bellperson
    // makes one): synthesis refuses it instead, as the check that lets the H stage derive C's
    // evaluations from A's and B's.
    struct Bad;
    impl Circuit<Scalar> for Bad {
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> Result<(), SynthesisError> {
            let a = cs.alloc(|| "a", || Ok(Scalar::from(2u64)))?;
            let p = cs.alloc_input(|| "p", || Ok(Scalar::from(5u64)))?;
            cs.enforce(|| "a*a = p", |lc| lc + a, |lc| lc + a, |lc| lc + p);
            Ok(())
        }
    }
    let pk = keys(Bad, 8);
    let err = prover::prove(
        &CpuBackend,
        &pk,
        Box::new(Bad),
        &mut ChaCha20Rng::seed_from_u64(1),
    )
    .unwrap_err();
    assert!(
        matches!(err, ProverError::Synthesis(SynthesisError::Unsatisfiable)),
        "{err}"
    );
}
