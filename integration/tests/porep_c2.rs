//! Filecoin PoRep C2 over HTTP: a freshly sealed random 2KiB sector (filecoin-proofs'
//! add_piece, pre-commit 1 and 2, commit 1), its C1 output posted to the running daemon as a
//! `porep-c2` job in each form a worker may hold it (base64 in JSON; a Lotus `Commit2In` file
//! uploaded raw; the bare C1 bytes uploaded as a multipart form), every returned proof checked
//! with filecoin-proofs' own `verify_seal`; a proof with one flipped byte is rejected. Client
//! errors of the kind are 4xx bodies naming the field; missing Filecoin parameters are a 4xx at
//! submission.
//!
//! Uses the fixture of `proofline-filecoin` (random parameters under the published names in
//! `${PROOFLINE_TEST_CACHE:-~/.cache/proofline/test-fixtures}/params`, generated on first use,
//! ~2.5 min on 2 cores). Requires the daemon to register `PorepC2Adapter` from the
//! `[filecoin]` configuration section.

use std::time::Duration;

use proofline_actors::JobState;
use proofline_client::{new_idempotency_key, Client};
use proofline_filecoin::{c1, fixture, verify_c2, Commit2In, SealIdentity};
use proofline_integration::{api_error, start, test_config};
use proofline_jobs::JobRequest;

#[test]
fn porep_c2_over_http_is_accepted_by_verify_seal() {
    let fx = fixture::ensure_fixture(&fixture::default_cache_dir()).unwrap();
    let builtin = tempfile::tempdir().unwrap();
    let mut cfg = test_config(builtin.path()).unwrap();
    cfg.filecoin.params_dir = fx.params_dir.display().to_string();
    cfg.filecoin.verify_digests = false; // random test parameters
    cfg.pipeline.max_partitions_in_flight = 1.into(); // one 2KiB partition's buffers at a time
    let daemon = start(&cfg).unwrap();
    let c = Client::new(daemon.url());

    let body = c1::request_body(
        &fx.sector.c1_output,
        &fx.sector.prover_id,
        fx.sector.sector_id,
    );
    let req: JobRequest = serde_json::from_value(body.clone()).unwrap();
    let parsed = c1::parse_input(&req.input, None).unwrap();
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

    // A Lotus Commit2In file, uploaded raw: the sector number comes from its SectorNum.
    let commit2in = serde_json::to_vec(&Commit2In {
        sector_num: fx.sector.sector_id,
        phase1_out: fx.sector.c1_output.clone(),
        sector_size: 2048,
    })
    .unwrap();
    let prover_hex = hex_of(&fx.sector.prover_id);
    let up = c
        .submit_document(
            "porep-c2",
            &commit2in,
            &[("prover_id", prover_hex.clone())],
            &new_idempotency_key(),
        )
        .unwrap();
    assert!(!up.replayed);
    let status = c.wait(&up.status.id, Duration::from_secs(1800)).unwrap();
    assert_eq!(status.state, JobState::Succeeded, "{status:?}");
    let proof = c.proof_bytes(&up.status.id).unwrap();
    assert!(
        verify_c2(&proof, &id).unwrap(),
        "verify_seal rejected the proof of the Commit2In upload"
    );

    // The bare C1 bytes as a multipart form (curl -F file=@c1.json -F sector_id=... ...).
    let boundary = "proofline-test-boundary";
    let mut form = Vec::new();
    for (name, value) in [
        ("sector_id", fx.sector.sector_id.to_string()),
        ("prover_id", prover_hex.clone()),
    ] {
        form.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
            )
            .as_bytes(),
        );
    }
    form.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"c1.json\"\r\n\
             Content-Type: application/octet-stream\r\n\r\n"
        )
        .as_bytes(),
    );
    form.extend_from_slice(&fx.sector.c1_output);
    form.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    let (code, answer) = post(
        &daemon.url(),
        "/v1/jobs/porep-c2",
        &[(
            "Content-Type",
            format!("multipart/form-data; boundary={boundary}"),
        )],
        &form,
    );
    assert_eq!(code, 202, "{answer}");
    let form_job: proofline_actors::JobStatus = serde_json::from_str(&answer).unwrap();
    let status = c.wait(&form_job.id, Duration::from_secs(1800)).unwrap();
    assert_eq!(status.state, JobState::Succeeded, "{status:?}");
    let proof = c.proof_bytes(&form_job.id).unwrap();
    assert!(
        verify_c2(&proof, &id).unwrap(),
        "verify_seal rejected the proof of the multipart upload"
    );

    // A sector number in a header that contradicts the Commit2In: 400 naming the field.
    let (code, answer) = post(
        &daemon.url(),
        "/v1/jobs/porep-c2",
        &[
            ("X-Proofline-Prover-Id", prover_hex.clone()),
            (
                "X-Proofline-Sector-Id",
                (fx.sector.sector_id + 1).to_string(),
            ),
        ],
        &commit2in,
    );
    assert_eq!(code, 400, "{answer}");
    assert!(
        answer.contains("input.sector_id") && answer.contains("SectorNum"),
        "{answer}"
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

fn hex_of(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A bare HTTP/1.1 POST over a TCP socket: status code and body.
fn post(base: &str, path: &str, headers: &[(&str, String)], body: &[u8]) -> (u16, String) {
    use std::io::{Read, Write};
    let addr = base.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = out.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    (status, body.to_string())
}
