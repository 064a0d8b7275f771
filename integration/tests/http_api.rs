//! The daemon over real HTTP: proofs that verify, every documented client error, and a daemon
//! that keeps serving afterwards.

use std::time::Duration;

use bellperson::groth16;
use blstrs::Bls12;
use proofline_actors::JobState;
use proofline_circuits::Sha256Preimage;
use proofline_client::Client;
use proofline_integration::{api_error, cached_params, start, test_config};
use proofline_jobs::{parse_scalar_hex, scalar_to_hex, JobRequest};

fn req(circuit: &str, input: serde_json::Value) -> JobRequest {
    JobRequest {
        kind: "groth16".into(),
        circuit: Some(circuit.into()),
        input,
        public_inputs: None,
        ..Default::default()
    }
}

#[test]
fn proves_over_http_and_rejects_bad_input_while_serving() {
    let dir = cached_params("sha256-1").unwrap();
    let mut cfg = test_config(&dir).unwrap();
    cfg.server.max_body_bytes = 64 * 1024;
    let daemon = start(&cfg).unwrap();
    let c = Client::new(daemon.url());

    // A real job: 202, status with timings, JSON and raw results, verified by bellperson.
    let pre = Sha256Preimage::demo_preimage(1, 77);
    let accepted = c
        .submit(&req(
            "sha256-1",
            serde_json::json!({ "preimage_hex": hex_of(&pre) }),
        ))
        .unwrap();
    let status = c.wait(&accepted.id, Duration::from_secs(600)).unwrap();
    assert_eq!(status.state, JobState::Succeeded, "{status:?}");
    assert!(status.timings.total_s > 0.0 && status.partition_timings.len() == 1);
    let result = c.result(&accepted.id).unwrap();
    let proof = result.proof().unwrap();
    assert_eq!(
        proof,
        c.proof_bytes(&accepted.id).unwrap(),
        "raw and JSON results agree"
    );
    let params = groth16::Parameters::<Bls12>::read(
        std::fs::File::open(dir.join("proofline-sha256-1.params")).unwrap(),
        false,
    )
    .unwrap();
    let pvk = groth16::prepare_verifying_key(&params.vk);
    let inputs: Vec<_> = result.public_inputs[0]
        .iter()
        .map(|h| parse_scalar_hex("x", h).unwrap())
        .collect();
    assert_eq!(inputs, Sha256Preimage::public_inputs(&pre));
    let p = groth16::Proof::<Bls12>::read(&proof[..]).unwrap();
    assert!(groth16::verify_proof(&pvk, &p, &inputs).unwrap());
    let mut tampered = proof.clone();
    tampered[10] ^= 0x40;
    if let Ok(t) = groth16::Proof::<Bls12>::read(&tampered[..]) {
        assert!(!groth16::verify_proof(&pvk, &t, &inputs).unwrap());
    }

    // Client errors, each a 4xx JSON body naming the problem.
    let (s, code, _) = api_error(c.submit_raw(b"{not json"));
    assert_eq!((s, code.as_str()), (400, "malformed_json"));
    let (s, code, msg) = api_error(
        c.submit_raw(br#"{"kind":"groth16","circuit":"sha256-1","input":{"seed":1},"extra":1}"#),
    );
    assert_eq!((s, code.as_str()), (400, "malformed_json"));
    assert!(msg.contains("extra"), "{msg}");
    let (s, code, msg) = api_error(c.submit(&JobRequest {
        kind: "proof-of-nothing".into(),
        ..req("x", serde_json::json!({}))
    }));
    assert_eq!((s, code.as_str()), (400, "unknown_kind"));
    assert!(
        msg.contains("groth16") && msg.contains("window-post"),
        "{msg}"
    );
    for (body, field) in [
        (
            &br#"{"kind":"groth16","circuit":"sha256-1","deadline":"tomorrow"}"#[..],
            "'deadline'",
        ),
        (
            br#"{"kind":"groth16","circuit":"sha256-1","priority":"urgent"}"#,
            "'priority'",
        ),
    ] {
        let (s, _, msg) = api_error(c.submit_raw(body));
        assert_eq!(s, 400);
        assert!(msg.contains(field), "{msg}");
    }
    let (s, code, _) = api_error(c.submit(&req("sha512-1", serde_json::json!({"seed": 1}))));
    assert_eq!((s, code.as_str()), (400, "unknown_circuit"));
    let (s, code, msg) =
        api_error(c.submit(&req("sha256-1", serde_json::json!({"preimage_hex": "00"}))));
    assert_eq!((s, code.as_str()), (400, "invalid_field"));
    assert!(msg.contains("input.preimage_hex"), "{msg}");
    let good: Vec<String> = inputs.iter().map(scalar_to_hex).collect();
    let mut r = req(
        "sha256-1",
        serde_json::json!({ "preimage_hex": hex_of(&pre) }),
    );
    r.public_inputs = Some(vec![good[0].clone()]);
    let (s, _, msg) = api_error(c.submit(&r));
    assert_eq!(s, 400);
    assert!(msg.contains("has 2 public inputs, got 1"), "{msg}");
    r.public_inputs = Some(vec![good[0].clone(), "abcd".into()]);
    let (s, _, msg) = api_error(c.submit(&r));
    assert_eq!(s, 400);
    assert!(
        msg.contains("public_inputs[1]") && msg.contains("32 bytes"),
        "{msg}"
    );
    let (s, code, msg) = api_error(c.submit(&req("sha256-3", serde_json::json!({"seed": 1}))));
    assert_eq!((s, code.as_str()), (422, "params_missing"));
    assert!(msg.contains("proofline setup --circuit sha256-3"), "{msg}");
    let big = format!(
        r#"{{"kind":"groth16","circuit":"sha256-1","input":{{"preimage_hex":"{}"}}}}"#,
        "00".repeat(40_000)
    );
    let (s, code, _) = api_error(c.submit_raw(big.as_bytes()));
    assert_eq!((s, code.as_str()), (413, "body_too_large"));
    let (s, code, _) = api_error(c.status("0000000000000000", None));
    assert_eq!((s, code.as_str()), (404, "unknown_job"));
    let (s, code, _) = api_error(c.result("nope"));
    assert_eq!((s, code.as_str()), (404, "unknown_job"));
    let (s, code, _) = api_error(c.cancel("nope"));
    assert_eq!((s, code.as_str()), (404, "unknown_job"));

    // Unknown endpoints and methods are JSON errors too.
    let (st, body) = raw_request(&daemon.url(), "GET", "/v2/nothing");
    assert_eq!(st, 404);
    assert!(body.contains("no_such_endpoint"), "{body}");
    let (st, body) = raw_request(&daemon.url(), "PUT", "/v1/jobs");
    assert_eq!(st, 405);
    assert!(body.contains("method_not_allowed"), "{body}");

    // Still serving: health, metrics, and another job.
    let h = c.health().unwrap();
    assert_eq!(h["status"], "ok");
    assert_eq!(h["backend"], "cpu");
    let again = c
        .submit(&req("sha256-1", serde_json::json!({"seed": 5})))
        .unwrap();
    assert_eq!(
        c.wait(&again.id, Duration::from_secs(600)).unwrap().state,
        JobState::Succeeded
    );
    let m = c.metrics().unwrap();
    for name in [
        "proofline_mailbox_depth",
        "proofline_actor_busy_seconds_total",
        "proofline_stage_seconds_bucket",
        "proofline_memory_budget_bytes",
        "proofline_jobs_finished_total",
    ] {
        assert!(
            m.contains(name),
            "metric {name} missing from /metrics:\n{m}"
        );
    }
    for actor in [
        "synthesis",
        "cpu_msm",
        "compute",
        "allocator",
        "coordinator",
        "params_loader",
    ] {
        assert!(
            m.contains(&format!("actor=\"{actor}\"")),
            "actor {actor} not reported"
        );
    }
    assert_eq!(c.list().unwrap().len(), 2);
    daemon.stop();
}

#[test]
fn cancel_over_http() {
    let dir = cached_params("sha256-1").unwrap();
    let mut cfg = test_config(&dir).unwrap();
    cfg.pipeline.max_partitions_in_flight = 1.into();
    let daemon = start(&cfg).unwrap();
    let c = Client::new(daemon.url());
    let first = c
        .submit(&req("sha256-1", serde_json::json!({"seed": 1})))
        .unwrap();
    let second = c
        .submit(&req("sha256-1", serde_json::json!({"seed": 2})))
        .unwrap();
    let s = c.cancel(&second.id).unwrap();
    assert_eq!(s.state, JobState::Cancelled);
    let (st, code, _) = api_error(c.result(&second.id));
    assert_eq!((st, code.as_str()), (409, "job_unsuccessful"));
    assert_eq!(
        c.wait(&first.id, Duration::from_secs(600)).unwrap().state,
        JobState::Succeeded
    );
    // Cancelling a finished job changes nothing.
    assert_eq!(c.cancel(&first.id).unwrap().state, JobState::Succeeded);
    daemon.stop();
}

fn hex_of(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A bare HTTP/1.1 request without a body over a TCP socket: status code and whole answer.
fn raw_request(base: &str, method: &str, path: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let addr = base.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, out)
}
