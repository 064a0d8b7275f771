//! WindowPoSt, WinningPoSt and SnapDeals over HTTP: vanilla proofs of freshly sealed (and, for
//! SnapDeals, updated) 2KiB sectors, made with filecoin-proofs-api's own calls, posted to the
//! running daemon; each returned proof is checked with filecoin-proofs' own verifier
//! (`verify_window_post`, `verify_winning_post`, `verify_empty_sector_update_proof`) and a
//! proof with one flipped byte is rejected. Bad inputs are 400 bodies naming the field.
//!
//! Uses the fixture cache of `proofline-filecoin` (random parameters under the published names
//! in `${PROOFLINE_TEST_CACHE:-~/.cache/proofline/test-fixtures}/params`; the update circuit's
//! take minutes to generate the first time).

use std::time::Duration;

use proofline_actors::JobState;
use proofline_client::Client;
use proofline_filecoin::fixture::{self, FIXTURE_PROOF};
use proofline_filecoin::post::{self, PoStKind};
use proofline_filecoin::{
    sectors, update, verify_update, verify_window_post, verify_winning_post, PoStIdentity,
    RegisteredPoStProof, RegisteredUpdateProof,
};
use proofline_integration::{api_error, start, test_config};
use proofline_jobs::{priority, JobRequest};
use serde_json::Value;

fn job(c: &Client, body: &Value) -> (proofline_actors::JobStatus, Vec<u8>) {
    let req: JobRequest = serde_json::from_value(body.clone()).unwrap();
    let accepted = c.submit(&req).unwrap();
    let status = c.wait(&accepted.id, Duration::from_secs(1800)).unwrap();
    assert_eq!(status.state, JobState::Succeeded, "{status:?}");
    let proof = c.proof_bytes(&accepted.id).unwrap();
    (status, proof)
}

fn flipped(proof: &[u8], accept: impl Fn(&[u8]) -> bool) {
    for pos in [3usize, proof.len() / 2, proof.len() - 1] {
        let mut bad = proof.to_vec();
        bad[pos] ^= 0x01;
        assert!(!accept(&bad), "byte {pos} flipped was accepted");
    }
}

fn post_body(kind: PoStKind, id: &PoStIdentity, vanilla: &[Vec<u8>]) -> Value {
    post::request_body(
        kind,
        id.registered_proof,
        &id.randomness,
        &id.prover_id,
        vanilla,
    )
}

/// `(status, code, message)` of a submission of `body`.
fn refused(c: &Client, body: &Value) -> (u16, String, String) {
    api_error(c.submit_raw(&serde_json::to_vec(body).unwrap()))
}

#[test]
fn post_and_snap_over_http_are_accepted_by_filecoin_proofs() {
    let cache = fixture::default_cache_dir();
    let window_rp = RegisteredPoStProof::StackedDrgWindow2KiBV1_2;
    let winning_rp = RegisteredPoStProof::StackedDrgWinning2KiBV1;
    let update_rp = RegisteredUpdateProof::StackedDrg2KiBV1;
    let (params_dir, _) = fixture::ensure_circuit(&cache, window_rp).unwrap();
    fixture::ensure_circuit(&cache, winning_rp).unwrap();
    fixture::ensure_circuit(&cache, update_rp).unwrap();
    let mut rng = rand::rngs::OsRng;
    let window = sectors::window_post_case(FIXTURE_PROOF, 3, &mut rng).unwrap();
    let winning = sectors::winning_post_case(FIXTURE_PROOF, 3, &mut rng).unwrap();
    let snap = sectors::update_case(FIXTURE_PROOF, &mut rng).unwrap();

    let builtin = tempfile::tempdir().unwrap();
    let mut cfg = test_config(builtin.path()).unwrap();
    cfg.filecoin.params_dir = params_dir.display().to_string();
    cfg.filecoin.verify_digests = false; // random test parameters
    let daemon = start(&cfg).unwrap();
    let c = Client::new(daemon.url());

    // WindowPoSt over 3 sectors: 2 partitions, the SnarkProof bytes filecoin-proofs returns.
    let body = post_body(PoStKind::Window, &window.identity, &window.vanilla_proofs);
    let (status, proof) = job(&c, &body);
    assert_eq!(status.kind, "window-post");
    assert_eq!(status.partitions, 2);
    assert_eq!(status.priority, priority::WINDOW_POST, "the kind's default");
    assert_eq!(proof.len(), 2 * 192);
    assert!(verify_window_post(&proof, &window.identity).unwrap());
    flipped(&proof, |p| {
        matches!(verify_window_post(p, &window.identity), Ok(true))
    });

    // WinningPoSt of the challenged sector.
    let body = post_body(
        PoStKind::Winning,
        &winning.identity,
        &winning.vanilla_proofs,
    );
    let (status, proof) = job(&c, &body);
    assert_eq!(status.priority, priority::WINNING_POST);
    assert_eq!(proof.len(), 192);
    assert!(verify_winning_post(&proof, &winning.identity).unwrap());
    flipped(&proof, |p| {
        matches!(verify_winning_post(p, &winning.identity), Ok(true))
    });

    // SnapDeals update.
    let body = update::request_body(&snap.identity, &snap.vanilla_proofs);
    let (status, proof) = job(&c, &body);
    assert_eq!(status.priority, priority::SNAP_UPDATE);
    assert_eq!(proof.len(), 192);
    assert!(verify_update(&proof, &snap.identity).unwrap());
    flipped(&proof, |p| {
        matches!(verify_update(p, &snap.identity), Ok(true))
    });

    // The daemon ran each kind's whole-proof check before answering.
    let metrics = c.metrics().unwrap();
    assert!(metrics.contains("proofline_stage_seconds_count{stage=\"final_check\"} 3"));

    // Bad inputs are 400s naming the field; the daemon keeps serving.
    let good = post_body(PoStKind::Window, &window.identity, &window.vanilla_proofs);
    let cases: Vec<(Value, &str)> = vec![
        (
            {
                let mut b = good.clone();
                b["input"]["randomness"] = "ff".repeat(32).into();
                b
            },
            "input.randomness",
        ),
        (
            {
                let mut b = good.clone();
                b["input"]["vanilla_proofs"][1] = "%%".into();
                b
            },
            "input.vanilla_proofs[1]",
        ),
        (
            {
                // Valid vanilla proofs of other sectors under this randomness: they do not verify.
                let mut b = good.clone();
                b["input"]["randomness"] = hex::encode(winning.identity.randomness).into();
                b
            },
            "input.vanilla_proofs",
        ),
        (
            {
                let mut b = good.clone();
                b["kind"] = "winning-post".into();
                b
            },
            "input.registered_proof",
        ),
        (
            {
                let mut b = update::request_body(&snap.identity, &snap.vanilla_proofs);
                b["input"].as_object_mut().unwrap().remove("comm_r_new");
                b
            },
            "input.comm_r_new",
        ),
        (
            {
                let mut b = update::request_body(&snap.identity, &snap.vanilla_proofs);
                b["input"]["comm_d_new"] = hex::encode(snap.identity.comm_r_new).into();
                b
            },
            "input.vanilla_proofs",
        ),
    ];
    for (body, field) in cases {
        let (s, code, msg) = refused(&c, &body);
        assert_eq!((s, code.as_str()), (400, "invalid_field"), "{field}: {msg}");
        assert!(msg.contains(&format!("'{field}'")), "{field}: {msg}");
    }
    let health = c.health().unwrap();
    assert!(health.is_object(), "still serving: {health}");
}
