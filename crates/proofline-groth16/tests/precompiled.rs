//! Synthesis through recorded constraint systems equals the full synthesis bit for bit: a, b, c,
//! inputs, aux values and the three densities, for circuits that exercise every rule (zero
//! coefficients, terms that cancel, negative and repeated coefficients, more than 256 distinct
//! coefficients, inputs in every matrix, child systems joined with `extend`) and for the
//! built-in SHA-256 circuits; the recorded system survives its file; a proof made from a
//! pre-compiled partition verifies with bellperson.

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError, Variable};
use bellperson::groth16;
use blstrs::{Bls12, Scalar};
use ff::Field;
use proofline_circuits::Sha256Preimage;
use proofline_groth16::precompiled::{partition_from, record_blank, synthesize_recording};
use proofline_groth16::prover::{self, params_shape_of};
use proofline_groth16::synthesis::synthesize;
use proofline_groth16::{
    CpuBackend, PartitionCircuit, ProverError, ProvingKey, RecordedSystem, SynthesizedPartition,
};
use proofline_r1cs::R1csError;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

/// A circuit whose linear combinations hit every corner of the recording rules.
#[derive(Clone)]
struct Corners {
    x: Option<Scalar>,
    rounds: usize,
    extras: Extras,
}

/// Which parts of [`Corners`] are synthesized.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Extras {
    /// Also a variable used only with zero coefficients and a child system joined with
    /// `extend` (bellperson's parameter generation refuses the first and cannot do the second).
    All,
    /// Only what bellperson can make parameters for.
    Provable,
}

impl Circuit<Scalar> for Corners {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let missing = || SynthesisError::AssignmentMissing;
        let x_val = self.x;
        let x = cs.alloc(|| "x", || x_val.ok_or_else(missing))?;
        let k_val = x_val.map(|x| x + Scalar::from(7u64));
        let k = cs.alloc_input(|| "k", || k_val.ok_or_else(missing))?;
        let all = self.extras == Extras::All;
        let unused = if all {
            Some(cs.alloc(|| "unused", || Ok(Scalar::from(11u64)))?)
        } else {
            None
        };
        let mut acc = x;
        let mut acc_val = x_val;
        for i in 0..self.rounds {
            // A distinct coefficient per round: more than 256 of them widens the indices.
            let coeff = Scalar::from(i as u64 + 2);
            let bit_val = Some(if i % 3 == 0 {
                Scalar::ONE
            } else {
                Scalar::ZERO
            });
            let bit = cs.alloc(|| format!("bit {i}"), || bit_val.ok_or_else(missing))?;
            cs.enforce(
                || format!("bool {i}"),
                |lc| lc + bit,
                |lc| lc + CS::one() - bit,
                |lc| lc,
            );
            // y = (coeff·acc − k + acc + acc − 2·acc) · (k + bit): the acc terms partly cancel,
            // one input sits in A and one in B.
            let y_val = acc_val
                .zip(k_val)
                .zip(bit_val)
                .map(|((a, k), b)| (coeff * a - k) * (k + b));
            let y = cs.alloc(|| format!("y {i}"), || y_val.ok_or_else(missing))?;
            cs.enforce(
                || format!("mul {i}"),
                |lc| lc + (coeff, acc) - k + acc + acc - (Scalar::from(2u64), acc),
                |lc| lc + k + bit,
                |lc| lc + y,
            );
            // A term whose coefficient is zero, and a variable whose terms cancel to zero, count
            // for nothing and mark no density.
            if let Some(unused) = unused {
                cs.enforce(
                    || format!("zeros {i}"),
                    |lc| lc + (Scalar::ZERO, unused) + y,
                    |lc| lc + unused - unused + CS::one(),
                    |lc| lc + y + (-Scalar::ONE, bit) + bit,
                );
            }
            acc = y;
            acc_val = y_val;
        }
        // A child system with its own temporary ONE, joined with `extend`.
        if all && CS::is_extensible() {
            let mut child = CS::new();
            let one = child.alloc_input(|| "temp ONE", || Ok(Scalar::ONE))?;
            let c_val = acc_val.map(|a| a.square());
            let c_in = child.alloc_input(|| "child input", || c_val.ok_or_else(missing))?;
            let a = child.alloc(|| "child aux", || acc_val.ok_or_else(missing))?;
            child.enforce(|| "child square", |lc| lc + a, |lc| lc + a, |lc| lc + c_in);
            child.enforce(
                || "child one",
                |lc| lc + one,
                |lc| lc + (Scalar::from(5u64), one),
                |lc| lc + (Scalar::from(5u64), one),
            );
            cs.extend(&child);
        }
        let out = cs.alloc_input(|| "out", || acc_val.ok_or_else(missing))?;
        cs.enforce(
            || "out",
            |lc| lc + acc,
            |lc| lc + Variable::new_unchecked(bellpepper_core::Index::Input(0)),
            |lc| lc + out,
        );
        Ok(())
    }
}

fn assert_same(what: &str, plain: &SynthesizedPartition, other: &SynthesizedPartition) {
    assert_eq!(plain.a, other.a, "{what}: a");
    assert_eq!(plain.b, other.b, "{what}: b");
    let (p, o) = (&plain.assignment, &other.assignment);
    assert_eq!(p.input, o.input, "{what}: inputs");
    assert_eq!(p.aux, o.aux, "{what}: aux");
    assert_eq!(p.a_aux_density, o.a_aux_density, "{what}: A aux density");
    assert_eq!(
        p.b_input_density, o.b_input_density,
        "{what}: B input density"
    );
    assert_eq!(p.b_aux_density, o.b_aux_density, "{what}: B aux density");
}

/// Records `blank`, writes and reads the system back, and checks that the witness of `real`
/// through it, and the recording of `real` itself, both equal the full synthesis of `real`.
fn check_equivalence<C>(what: &str, blank: C, real: impl Fn() -> C) -> RecordedSystem
where
    C: Circuit<Scalar> + Send + 'static,
{
    let plain = synthesize(real()).unwrap();
    let recorded = record_blank(blank, what, "blank circuit").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.r1cs");
    proofline_r1cs::file::write(&recorded, &path).unwrap();
    let sys = proofline_r1cs::file::read(&path, Some(what)).unwrap();
    assert_eq!(sys.counts().constraints, plain.num_constraints(), "{what}");
    prover::check_recorded_shape(&params_shape_of(&plain), &sys).unwrap();

    let w = (Box::new(real()) as Box<dyn PartitionCircuit>)
        .witness()
        .unwrap();
    let pre = partition_from(&sys, w).unwrap();
    assert_same(&format!("{what}, recorded blank"), &plain, &pre);

    let (first, from_real) =
        synthesize_recording(Box::new(real()), what, "first synthesis").unwrap();
    assert_same(&format!("{what}, first synthesis"), &plain, &first);
    assert_eq!(
        from_real.matrices(),
        sys.matrices(),
        "{what}: same matrices"
    );
    assert_eq!(from_real.table(), sys.table(), "{what}: same coefficients");
    sys
}

/// x · (y + 1) = 3y + x, directly or in a child system with its own temporary ONE (as
/// WindowPoSt's circuit does): ONE is used in B only, and in the child case only in the child.
#[derive(Clone, Copy)]
struct Chunked {
    in_child: bool,
}

impl Chunked {
    fn body<CS: ConstraintSystem<Scalar>>(cs: &mut CS) -> Result<(), SynthesisError> {
        let x = cs.alloc_input(|| "x", || Ok(Scalar::from(3u64)))?;
        let y = cs.alloc(|| "y", || Ok(Scalar::from(5u64)))?;
        cs.enforce(
            || "x * (y + 1)",
            |lc| lc + x,
            |lc| lc + y + CS::one(),
            |lc| lc + (Scalar::from(3u64), y) + x,
        );
        Ok(())
    }
}

impl Circuit<Scalar> for Chunked {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        if self.in_child && CS::is_extensible() {
            let mut child = CS::new();
            child.alloc_input(|| "temp ONE", || Ok(Scalar::ONE))?;
            Chunked::body(&mut child)?;
            cs.extend(&child);
            Ok(())
        } else {
            Chunked::body(cs)
        }
    }
}

#[test]
fn a_child_systems_use_of_one_is_recorded_like_the_full_synthesis() {
    let direct = synthesize(Chunked { in_child: false }).unwrap();
    for in_child in [false, true] {
        let c = Chunked { in_child };
        check_equivalence(&format!("chunked-{in_child}"), c, || c);
        let full = synthesize(c).unwrap();
        assert!(full.assignment.b_input_density.get(0), "ONE is used in B");
        assert_same(
            &format!("chunked-{in_child} against direct"),
            &direct,
            &full,
        );
    }
}

#[test]
fn corner_cases_match_the_full_synthesis() {
    let sys = check_equivalence(
        "corners",
        Corners {
            x: None,
            rounds: 300,
            extras: Extras::All,
        },
        || Corners {
            x: Some(Scalar::from(5u64)),
            rounds: 300,
            extras: Extras::All,
        },
    );
    // 300 distinct round coefficients, +1, −1 and a few constants: more than 256 entries, so
    // the terms that use them need 16-bit indices.
    assert!(sys.table().len() > 256);
    assert_eq!(sys.matrices().a.coeffs.width(), 2);
}

#[test]
fn sha256_circuits_match_the_full_synthesis() {
    for blocks in [1, 2] {
        let preimage = Sha256Preimage::demo_preimage(blocks, 9);
        check_equivalence(
            &format!("sha256-{blocks}"),
            Sha256Preimage::blank(blocks).unwrap(),
            || Sha256Preimage::new(blocks, preimage.clone()).unwrap(),
        );
    }
}

#[test]
fn a_witness_of_another_shape_or_an_unsatisfying_one_is_refused() {
    let sys = record_blank(
        Corners {
            x: None,
            rounds: 3,
            extras: Extras::All,
        },
        "corners-3",
        "blank",
    )
    .unwrap();
    let w = (Box::new(Corners {
        x: Some(Scalar::ONE),
        rounds: 4,
        extras: Extras::All,
    }) as Box<dyn PartitionCircuit>)
        .witness()
        .unwrap();
    let e = partition_from(&sys, w).unwrap_err();
    assert!(
        matches!(e, ProverError::Constraints(R1csError::WitnessShape { .. })),
        "{e}"
    );
    assert!(e.to_string().contains("corners-3"), "{e}");

    // A witness of the right shape that does not satisfy the circuit is refused too.
    let mut w = (Box::new(Corners {
        x: Some(Scalar::ONE),
        rounds: 3,
        extras: Extras::All,
    }) as Box<dyn PartitionCircuit>)
        .witness()
        .unwrap();
    // aux 2 is the first round's bit: 2 is not a bit.
    w.aux[2] += Scalar::ONE;
    let e = partition_from(&sys, w).unwrap_err();
    assert!(
        matches!(e, ProverError::Synthesis(SynthesisError::Unsatisfiable)),
        "{e}"
    );
}

#[test]
fn a_proof_from_a_precompiled_partition_verifies() {
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    let blank = Corners {
        x: None,
        rounds: 20,
        extras: Extras::Provable,
    };
    let params =
        groth16::generate_random_parameters::<Bls12, _, _>(blank.clone(), &mut rng).unwrap();
    let pvk = groth16::prepare_verifying_key(&params.vk);
    let pk = ProvingKey::new(params);
    let sys = record_blank(blank, "corners-20", "blank").unwrap();
    prover::check_recorded_shape(&pk.shape(), &sys).unwrap();
    let real = Corners {
        x: Some(Scalar::from(9u64)),
        rounds: 20,
        extras: Extras::Provable,
    };
    let w = (Box::new(real) as Box<dyn PartitionCircuit>)
        .witness()
        .unwrap();
    let synth = partition_from(&sys, w).unwrap();
    let (proof, inputs) = prover::prove_synthesized(&CpuBackend, &pk, synth, &mut rng).unwrap();
    assert!(groth16::verify_proof(&pvk, &proof, &inputs).unwrap());
    let mut wrong = inputs.clone();
    wrong[0] += Scalar::ONE;
    assert!(!groth16::verify_proof(&pvk, &proof, &wrong).unwrap());
}
