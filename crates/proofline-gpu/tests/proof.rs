//! Whole Groth16 proofs with the GPU steps: every stage of `proofline-groth16`'s prover through
//! `GpuBackend`, checked step by step against the CPU backend (the H coefficients and each MSM
//! must be equal) and the proof verified by bellperson. Skips when no GPU is usable.

use bellperson::groth16;
use blstrs::Bls12;
use proofline_circuits::Sha256Preimage;
use proofline_gpu::GpuBackend;
use proofline_groth16::msm::MsmPlan;
use proofline_groth16::prover;
use proofline_groth16::synthesis::synthesize;
use proofline_groth16::{CpuBackend, ProverBackend, ProvingKey};
use rand::SeedableRng;

fn gpu() -> Option<GpuBackend> {
    match GpuBackend::new(0) {
        Ok(b) => Some(b),
        Err(e) => {
            eprintln!("SKIP: no GPU ({e})");
            None
        }
    }
}

#[test]
fn sha256_proof_with_gpu_steps_equals_cpu_and_verifies() {
    let Some(gpu) = gpu() else { return };
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(11);
    for blocks in [1usize, 4] {
        let params = groth16::generate_random_parameters::<Bls12, _, _>(
            Sha256Preimage::blank(blocks).unwrap(),
            &mut rng,
        )
        .unwrap();
        let pk = ProvingKey::new(params);
        let pre = Sha256Preimage::demo_preimage(blocks, 3);
        let synth = synthesize(Sha256Preimage::new(blocks, pre.clone()).unwrap()).unwrap();
        prover::check_shape(&pk, &synth).unwrap();
        let plan = MsmPlan::build(&synth.assignment);

        // H on both backends: identical coefficients.
        let h_gpu =
            prover::compute_h(&gpu, synth.a.clone(), synth.b.clone(), synth.c.clone()).unwrap();
        let h_cpu = prover::compute_h(
            &CpuBackend,
            synth.a.clone(),
            synth.b.clone(),
            synth.c.clone(),
        )
        .unwrap();
        assert_eq!(h_gpu, h_cpu, "H coefficients, {blocks} block(s)");

        // Every MSM on both backends: identical points.
        let m = |b: &dyn ProverBackend| {
            let (l, a, b_g1) = prover::msm_sparse_g1(b, &pk, &plan).unwrap();
            (prover::msm_h(b, &pk, &h_cpu).unwrap(), l, a, b_g1)
        };
        assert_eq!(m(&gpu), m(&CpuBackend), "MSMs, {blocks} block(s)");

        // The whole proof through the GPU backend verifies (prove() verifies too).
        let (proof, inputs) = prover::prove(
            &gpu,
            &pk,
            Box::new(Sha256Preimage::new(blocks, pre.clone()).unwrap()),
            &mut rng,
        )
        .unwrap();
        assert_eq!(inputs, Sha256Preimage::public_inputs(&pre));
        let pvk = groth16::prepare_verifying_key(pk.vk());
        assert!(groth16::verify_proof(&pvk, &proof, &inputs).unwrap());
        let mut wrong = inputs.clone();
        wrong[0] += blstrs::Scalar::from(1u64);
        assert!(!groth16::verify_proof(&pvk, &proof, &wrong).unwrap());
        eprintln!("gpu proof of sha256-{blocks}: verified");
    }
}
