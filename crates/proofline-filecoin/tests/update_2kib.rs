//! A SnapDeals update of a freshly sealed 2KiB sector, end to end: the vanilla partition proofs
//! a worker holds (filecoin-proofs-api's `generate_partition_proofs` after
//! `empty_sector_update_encode_into`), planned by `SnapUpdateAdapter`, proved with
//! `proofline_groth16::prover::prove` on the CPU backend, and checked with filecoin-proofs' own
//! `verify_empty_sector_update_proof` and the adapter's final check. A flipped byte and other
//! commitments are rejected; vanilla proofs of another update are a clear `invalid_field`.
//!
//! Needs random parameters for the 2KiB update circuit in the fixture cache
//! (`${PROOFLINE_TEST_CACHE:-$HOME/.cache/proofline/test-fixtures}/params`): generated on
//! first use, which takes minutes on 2 cores. Run with `--release`.

use filecoin_proofs_api::update::generate_empty_sector_update_proof_with_vanilla;
use filecoin_proofs_api::PartitionProofBytes;
use proofline_filecoin::fixture::{self, FIXTURE_PROOF};
use proofline_filecoin::sectors;
use proofline_filecoin::update;
use proofline_filecoin::{
    verify_update, verify_update_with_vk, FilecoinConfig, RegisteredUpdateProof, SnapUpdateAdapter,
    UpdateIdentity,
};
use proofline_groth16::{proof_to_bytes, prover, CpuBackend, PROOF_BYTES};
use proofline_jobs::{JobAdapter, JobError, JobRequest, ParamsStore};

fn request(id: &UpdateIdentity, vanilla: &[Vec<u8>]) -> JobRequest {
    serde_json::from_value(update::request_body(id, vanilla)).unwrap()
}

#[test]
fn snap_update_proof_is_accepted_by_verify_empty_sector_update_proof() {
    let cache = fixture::default_cache_dir();
    let rp = RegisteredUpdateProof::StackedDrg2KiBV1;
    let (params_dir, report) = fixture::ensure_circuit(&cache, rp).unwrap();
    if report.generated {
        eprintln!(
            "generated {} in {:.0} s",
            report.params.display(),
            report.secs
        );
    }
    let case = sectors::update_case(FIXTURE_PROOF, &mut rand::rngs::OsRng).unwrap();
    assert_eq!(case.identity.registered_proof, rp);
    let a = SnapUpdateAdapter::new(FilecoinConfig {
        params_dir,
        verify_digests: false,
    });
    let (mut plan, id) = a
        .plan_with_identity(&request(&case.identity, &case.vanilla_proofs))
        .unwrap();
    assert_eq!(id, case.identity);
    assert_eq!(plan.partitions.len(), 1, "2KiB updates have one partition");

    let pk = ParamsStore::new(false).get(&plan.params).unwrap();
    let check = plan.final_check.take().unwrap();
    let mut rng = rand::rngs::OsRng;
    let mut proof = Vec::new();
    for part in plan.partitions {
        let circuit = (part.circuit)().unwrap();
        let (p, inputs) = prover::prove(&CpuBackend, &pk, circuit, &mut rng).unwrap();
        assert_eq!(inputs, part.public_inputs, "synthesis and plan agree");
        proof.extend_from_slice(&proof_to_bytes(&p));
    }
    assert_eq!(proof.len(), PROOF_BYTES);
    check(&proof, &pk).expect("the adapter's final check passes");
    assert!(
        verify_update(&proof, &id).unwrap(),
        "verify_empty_sector_update_proof rejected our proof"
    );
    assert!(verify_update_with_vk(&proof, &id, pk.vk()).unwrap());

    for pos in [0usize, 47, 48, 143, 191] {
        let mut bad = proof.clone();
        bad[pos] ^= 0x01;
        assert!(
            !matches!(verify_update(&bad, &id), Ok(true)),
            "byte {pos} flipped was accepted"
        );
        assert!(!matches!(
            verify_update_with_vk(&bad, &id, pk.vk()),
            Ok(true)
        ));
    }
    for tweak in [0usize, 1, 2] {
        let mut other = id;
        match tweak {
            0 => other.comm_r_old[0] ^= 0x01,
            1 => other.comm_r_new[0] ^= 0x01,
            _ => other.comm_d_new[0] ^= 0x01,
        }
        assert!(
            !matches!(verify_update(&proof, &other), Ok(true)),
            "accepted for other commitments ({tweak})"
        );
    }

    // filecoin-proofs' own call on the same vanilla proofs: the same layout, also accepted.
    let theirs = generate_empty_sector_update_proof_with_vanilla(
        rp,
        case.vanilla_proofs
            .iter()
            .cloned()
            .map(PartitionProofBytes)
            .collect(),
        id.comm_r_old,
        id.comm_r_new,
        id.comm_d_new,
    )
    .unwrap();
    assert_eq!(theirs.0.len(), proof.len());
    assert!(verify_update(&theirs.0, &id).unwrap());

    // Vanilla proofs of this update do not verify against other commitments.
    let mut other = id;
    other.comm_d_new[0] ^= 0x01;
    match a.plan(&request(&other, &case.vanilla_proofs)) {
        Err(JobError::InvalidField { field, message }) => {
            assert_eq!(field, "input.vanilla_proofs", "{message}");
            assert!(message.contains("do not verify"), "{message}");
        }
        Err(e) => panic!("expected invalid_field, got {e}"),
        Ok(_) => panic!("planned vanilla proofs of other commitments"),
    }
}
