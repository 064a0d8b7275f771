//! WindowPoSt and WinningPoSt over freshly sealed 2KiB sectors, end to end: the vanilla proofs
//! a worker holds (filecoin-proofs-api's `generate_single_vanilla_proof`), planned by
//! `PoStAdapter`, every partition through `proofline_groth16::prover::prove` on the CPU backend
//! with parameters from `ParamsStore`, the result checked with filecoin-proofs' own
//! `verify_window_post` / `verify_winning_post` and by the adapter's final check. A flipped byte
//! and another randomness are rejected; vanilla proofs that do not verify are a clear
//! `invalid_field`.
//!
//! Needs random parameters for the 2KiB PoSt circuits in the fixture cache
//! (`${PROOFLINE_TEST_CACHE:-$HOME/.cache/proofline/test-fixtures}/params`, generated on first
//! use in seconds). Run with `--release`.

use std::path::PathBuf;

use filecoin_proofs_api::post::{
    generate_window_post_with_vanilla, generate_winning_post_with_vanilla,
};
use proofline_filecoin::fixture::{self, FIXTURE_PROOF};
use proofline_filecoin::post::{self, PoStKind};
use proofline_filecoin::sectors::{self, PoStCase};
use proofline_filecoin::{
    verify_post_with_vk, verify_window_post, verify_winning_post, FilecoinConfig, PoStAdapter,
    PoStIdentity,
};
use proofline_groth16::{proof_to_bytes, prover, CpuBackend, PROOF_BYTES};
use proofline_jobs::{JobAdapter, JobError, JobPlan, JobRequest, ParamsStore};

fn adapter(kind: PoStKind, params_dir: PathBuf) -> PoStAdapter {
    PoStAdapter::new(
        kind,
        FilecoinConfig {
            params_dir,
            verify_digests: false,
        },
    )
}

fn request(case: &PoStCase, vanilla: &[Vec<u8>]) -> JobRequest {
    let id = &case.identity;
    serde_json::from_value(post::request_body(
        case.kind,
        id.registered_proof,
        &id.randomness,
        &id.prover_id,
        vanilla,
    ))
    .unwrap()
}

/// Proves every partition of `plan` and runs its final check; returns the proof bytes and the
/// resident parameters.
fn prove(mut plan: JobPlan) -> (Vec<u8>, proofline_groth16::SharedProvingKey) {
    let pk = ParamsStore::new(false).get(&plan.params).unwrap();
    let check = plan
        .final_check
        .take()
        .expect("PoSt jobs have a final check");
    let mut rng = rand::rngs::OsRng;
    let mut proof = Vec::new();
    for part in plan.partitions {
        let circuit = (part.circuit)().unwrap();
        let (p, inputs) = prover::prove(&CpuBackend, &pk, circuit, &mut rng).unwrap();
        assert_eq!(inputs, part.public_inputs, "synthesis and plan agree");
        proof.extend_from_slice(&proof_to_bytes(&p));
    }
    check(&proof, &pk).expect("the adapter's final check (filecoin-proofs' logic) passes");
    (proof, pk)
}

fn assert_rejected(proof: &[u8], id: &PoStIdentity, accept: fn(&[u8], &PoStIdentity) -> bool) {
    for pos in [0usize, 40, 100, 191, proof.len() - 1] {
        let mut bad = proof.to_vec();
        bad[pos] ^= 0x01;
        assert!(
            !accept(&bad, id),
            "a proof with byte {pos} flipped was accepted"
        );
    }
    let mut other = id.clone();
    other.randomness[0] ^= 0x01;
    assert!(
        !accept(proof, &other),
        "the proof passed for another randomness"
    );
    assert!(!accept(&proof[..proof.len() - 1], id));
}

fn vanilla_error(a: &PoStAdapter, r: &JobRequest) -> (String, String) {
    match a.plan(r) {
        Err(JobError::InvalidField { field, message }) => (field, message),
        Err(e) => panic!("expected invalid_field, got {e}"),
        Ok(_) => panic!("expected an error"),
    }
}

#[test]
fn window_post_of_three_sectors_is_accepted_by_verify_window_post() {
    let cache = fixture::default_cache_dir();
    let post_rp = proofline_filecoin::RegisteredPoStProof::StackedDrgWindow2KiBV1_2;
    let (params_dir, _) = fixture::ensure_circuit(&cache, post_rp).unwrap();
    let winning_rp = proofline_filecoin::RegisteredPoStProof::StackedDrgWinning2KiBV1;
    fixture::ensure_circuit(&cache, winning_rp).unwrap();
    let case = sectors::window_post_case(FIXTURE_PROOF, 3, &mut rand::rngs::OsRng).unwrap();
    assert_eq!(case.identity.registered_proof, post_rp);
    let a = adapter(PoStKind::Window, params_dir);

    // The worker's order does not matter: the verifier's is ascending by sector number.
    let mut shuffled = case.vanilla_proofs.clone();
    shuffled.reverse();
    let (plan, id) = a.plan_with_identity(&request(&case, &shuffled)).unwrap();
    assert_eq!(id, case.identity, "sectors in ascending order");
    assert_eq!(
        plan.partitions.len(),
        2,
        "2KiB WindowPoSt proves 2 sectors per partition"
    );
    let (proof, pk) = prove(plan);
    assert_eq!(proof.len(), 2 * PROOF_BYTES);
    assert!(
        verify_window_post(&proof, &id).unwrap(),
        "verify_window_post rejected our proof"
    );
    assert!(verify_post_with_vk(&proof, &id, pk.vk()).unwrap());
    assert_rejected(&proof, &id, |p, id| {
        matches!(verify_window_post(p, id), Ok(true))
    });
    assert_rejected(&proof, &id, |p, id| {
        matches!(
            verify_post_with_vk(p, id, &fixture_vk(id.registered_proof)),
            Ok(true)
        )
    });

    // filecoin-proofs' own call on the same vanilla proofs: the same layout, also accepted.
    let theirs = generate_window_post_with_vanilla(
        post_rp,
        &id.randomness,
        id.prover_id,
        &case.vanilla_proofs,
    )
    .unwrap();
    assert_eq!(theirs.len(), 1);
    assert_eq!(theirs[0].0, post_rp);
    assert_eq!(theirs[0].1.len(), proof.len());
    assert!(verify_window_post(&theirs[0].1, &id).unwrap());

    // Vanilla proofs for another randomness do not verify; a sector twice is refused.
    let mut other = case.clone();
    other.identity.randomness[1] ^= 0x01;
    let (field, msg) = vanilla_error(&a, &request(&other, &case.vanilla_proofs));
    assert_eq!(field, "input.vanilla_proofs", "{msg}");
    assert!(msg.contains("do not verify"), "{msg}");
    let twice = vec![
        case.vanilla_proofs[0].clone(),
        case.vanilla_proofs[0].clone(),
    ];
    let (field, msg) = vanilla_error(&a, &request(&case, &twice));
    assert_eq!(field, "input.vanilla_proofs", "{msg}");
    assert!(msg.contains("two vanilla proofs"), "{msg}");
    // A WindowPoSt vanilla proof is not a WinningPoSt one.
    let winning = adapter(PoStKind::Winning, a_params_dir());
    let mut as_winning = request(&case, &case.vanilla_proofs[..1]);
    as_winning.kind = "winning-post".into();
    as_winning.input["registered_proof"] =
        serde_json::json!(proofline_filecoin::proofs::name(winning_rp));
    let (field, msg) = vanilla_error(&winning, &as_winning);
    assert_eq!(field, "input.vanilla_proofs[0]", "{msg}");
    assert!(msg.contains("challenge proofs"), "{msg}");
}

fn a_params_dir() -> PathBuf {
    fixture::params_dir(&fixture::default_cache_dir())
}

/// The verifying key of the fixture's random parameters of `rp`.
fn fixture_vk(
    rp: proofline_filecoin::RegisteredPoStProof,
) -> bellperson::groth16::VerifyingKey<blstrs::Bls12> {
    let path = proofline_filecoin::params::vk_path(rp, &a_params_dir()).unwrap();
    bellperson::groth16::VerifyingKey::read(std::fs::File::open(path).unwrap()).unwrap()
}

#[test]
fn winning_post_is_accepted_by_verify_winning_post() {
    let cache = fixture::default_cache_dir();
    let post_rp = proofline_filecoin::RegisteredPoStProof::StackedDrgWinning2KiBV1;
    let (params_dir, _) = fixture::ensure_circuit(&cache, post_rp).unwrap();
    let case = sectors::winning_post_case(FIXTURE_PROOF, 4, &mut rand::rngs::OsRng).unwrap();
    let a = adapter(PoStKind::Winning, params_dir);
    let (plan, id) = a
        .plan_with_identity(&request(&case, &case.vanilla_proofs))
        .unwrap();
    assert_eq!(id, case.identity);
    assert_eq!(plan.partitions.len(), 1);
    let (proof, pk) = prove(plan);
    assert_eq!(proof.len(), PROOF_BYTES);
    assert!(
        verify_winning_post(&proof, &id).unwrap(),
        "verify_winning_post rejected our proof"
    );
    assert!(verify_post_with_vk(&proof, &id, pk.vk()).unwrap());
    assert_rejected(&proof, &id, |p, id| {
        matches!(verify_winning_post(p, id), Ok(true))
    });
    // The proof is for the challenged sector only.
    let mut other_sector = id.clone();
    other_sector.sectors[0].0 += 1;
    assert!(!matches!(
        verify_winning_post(&proof, &other_sector),
        Ok(true)
    ));
    // The SNARK does not bind the prover id (the sector selection does, which the worker
    // computed from it): filecoin-proofs accepts the proof under another valid prover id.
    let mut other_prover = id.clone();
    other_prover.prover_id[0] ^= 0x01;
    assert!(verify_winning_post(&proof, &other_prover).unwrap());

    let theirs = generate_winning_post_with_vanilla(
        post_rp,
        &id.randomness,
        id.prover_id,
        &case.vanilla_proofs,
    )
    .unwrap();
    assert_eq!(theirs[0].1.len(), proof.len());
    assert!(verify_winning_post(&theirs[0].1, &id).unwrap());

    // More than the one challenged sector is refused.
    let two = vec![
        case.vanilla_proofs[0].clone(),
        case.vanilla_proofs[0].clone(),
    ];
    let (field, msg) = vanilla_error(&a, &request(&case, &two));
    assert_eq!(field, "input.vanilla_proofs", "{msg}");
}
