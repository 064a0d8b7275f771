//! Filecoin PoRep C2 over HTTP: a freshly sealed random 2KiB sector (filecoin-proofs'
//! add_piece, pre-commit 1 and 2, commit 1), its C1 output posted to the running daemon as a
//! `porep-c2` job, the returned proof checked with filecoin-proofs' own `verify_seal`; a proof
//! with one flipped byte is rejected. Client errors of the kind are 4xx bodies naming the field;
//! missing Filecoin parameters are a 4xx at submission.
//!
//! Uses the fixture of `proofline-filecoin` (random parameters under the published names in
//! `${PROOFLINE_TEST_CACHE:-~/.cache/proofline/test-fixtures}/params`, generated on first use,
//! ~2.5 min on 2 cores). Requires the daemon to register `PorepC2Adapter` from the
//! `[filecoin]` configuration section.

use std::time::Duration;

use proofline_actors::JobState;
use proofline_client::Client;
use proofline_filecoin::{c1, fixture, verify_c2, SealIdentity};
use proofline_integration::{api_error, start, test_config};
use proofline_jobs::JobRequest;

#[test]
fn porep_c2_over_http_is_accepted_by_verify_seal() {
    let fx = fixture::ensure_fixture(&fixture::default_cache_dir()).unwrap();
    let builtin = tempfile::tempdir().unwrap();
    let mut cfg = test_config(builtin.path()).unwrap();
    cfg.filecoin.params_dir = fx.params_dir.display().to_string();
    cfg.filecoin.verify_digests = false; // random test parameters
    let daemon = start(&cfg).unwrap();
    let c = Client::new(daemon.url());

    let body = c1::request_body(
        &fx.sector.c1_output,
        &fx.sector.prover_id,
        fx.sector.sector_id,
    );
    let req: JobRequest = serde_json::from_value(body.clone()).unwrap();
    let parsed = c1::parse_input(&req.input).unwrap();
    let id = SealIdentity::of(&parsed);

    let accepted = c.submit(&req).unwrap();
    let status = c.wait(&accepted.id, Duration::from_secs(1800)).unwrap();
    assert_eq!(status.state, JobState::Succeeded, "{status:?}");
    // The daemon ran the adapter's whole-proof check (verify_seal's logic) before answering.
    let metrics = c.metrics().unwrap();
    assert!(
        metrics.contains("proofline_stage_seconds_count{stage=\"final_check\"}"),
        "no final check recorded:\n{metrics}"
    );
    let proof = c.proof_bytes(&accepted.id).unwrap();
    assert_eq!(
        proof.len(),
        192,
        "one 2KiB partition proof, seal_commit_phase2's layout"
    );
    assert!(
        verify_c2(&proof, &id).unwrap(),
        "verify_seal rejected the daemon's proof"
    );
    let mut bad = proof.clone();
    bad[100] ^= 0x01;
    assert!(
        !matches!(verify_c2(&bad, &id), Ok(true)),
        "a flipped byte was accepted"
    );

    // Client errors name the field; the daemon keeps serving.
    let mut wrong = body.clone();
    wrong["input"]["prover_id"] = serde_json::json!("abcd");
    let (s, code, msg) = api_error(c.submit_raw(&serde_json::to_vec(&wrong).unwrap()));
    assert_eq!((s, code.as_str()), (400, "invalid_field"), "{msg}");
    assert!(msg.contains("input.prover_id"), "{msg}");
    let mut wrong = body.clone();
    wrong["input"]["c1_output_base64"] = serde_json::json!("%%%");
    let (s, _, msg) = api_error(c.submit_raw(&serde_json::to_vec(&wrong).unwrap()));
    assert_eq!(s, 400);
    assert!(msg.contains("input.c1_output_base64"), "{msg}");
    drop(daemon);

    // No Filecoin parameters in the configured directory: refused at submission with a 4xx.
    let empty = tempfile::tempdir().unwrap();
    cfg.filecoin.params_dir = empty.path().display().to_string();
    let daemon = start(&cfg).unwrap();
    let c = Client::new(daemon.url());
    let (s, code, msg) = api_error(c.submit(&req));
    assert!((400..500).contains(&s), "{s} {code} {msg}");
    assert_eq!(code, "params_missing", "{msg}");
}
