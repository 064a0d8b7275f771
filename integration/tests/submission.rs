//! Retry-safe submission over HTTP: a repeated submission under the same idempotency key (or
//! client job id) returns the existing job, even when the queue is full; another request under
//! the same key is a 409; a full queue is a 503 with `Retry-After`; the raw-upload route's
//! metadata errors name their field.

use std::time::Duration;

use proofline_actors::JobState;
use proofline_client::{Client, ClientError, RetryPolicy};
use proofline_integration::{api_error, cached_params, start, test_config};
use proofline_jobs::JobRequest;

fn job(seed: u64) -> JobRequest {
    JobRequest {
        circuit: Some("sha256-2".into()),
        input: serde_json::json!({ "seed": seed }),
        ..JobRequest::new("groth16")
    }
}

#[test]
fn repeats_return_the_job_conflicts_are_409_and_a_full_queue_says_when_to_retry() {
    let dir = cached_params("sha256-2").unwrap();
    let mut cfg = test_config(&dir).unwrap();
    cfg.pipeline.max_queued_jobs = 1;
    cfg.pipeline.max_partitions_in_flight = 1.into();
    let daemon = start(&cfg).unwrap();
    // No retries here: the test looks at each answer.
    let c = Client::new(daemon.url()).with_retry(RetryPolicy::none());

    let first = c.submit_keyed(&job(1), "curio-request-1").unwrap();
    assert!(!first.replayed);
    // The same request under the same key: the same job, 200 and Idempotent-Replayed, although
    // the queue (one unfinished job at most) is full.
    let again = c.submit_keyed(&job(1), "curio-request-1").unwrap();
    assert!(again.replayed);
    assert_eq!(again.status.id, first.status.id);
    // Another request under that key: 409.
    match c.submit_keyed(&job(2), "curio-request-1") {
        Err(ClientError::Api { status, code, .. }) => {
            assert_eq!((status, code.as_str()), (409, "idempotency_conflict"))
        }
        other => panic!("expected 409, got {other:?}"),
    }
    // A new request while the queue is full: 503 with Retry-After.
    match c.submit_keyed(&job(3), "other") {
        Err(ClientError::Api {
            status,
            code,
            retry_after_s,
            ..
        }) => {
            assert_eq!((status, code.as_str()), (503, "queue_full"));
            let secs = retry_after_s.expect("a 503 without Retry-After");
            assert!((1..=600).contains(&secs), "{secs}");
        }
        other => panic!("expected 503, got {other:?}"),
    }
    let done = c.wait(&first.status.id, Duration::from_secs(600)).unwrap();
    assert_eq!(done.state, JobState::Succeeded);
    // After the job ended, its key still names it (it is retained).
    let later = c.submit_keyed(&job(1), "curio-request-1").unwrap();
    assert!(later.replayed);
    assert_eq!(later.status.state, JobState::Succeeded);

    // A client-chosen job id works the same way.
    let mut named = job(4);
    named.id = Some("sector-1000-42".into());
    let a = c.submit_keyed(&named, "k-a").unwrap();
    assert_eq!(a.status.id, "sector-1000-42");
    c.wait("sector-1000-42", Duration::from_secs(600)).unwrap();
    // The same request under its id and a fresh key (a script run again): the same job.
    let b = c.submit_keyed(&named, "k-b").unwrap();
    assert!(b.replayed);
    assert_eq!(b.status.id, "sector-1000-42");
    let mut other = job(5);
    other.id = Some("sector-1000-42".into());
    let (s, code, msg) = api_error(c.submit_keyed(&other, "k-a"));
    assert_eq!((s, code.as_str()), (409, "idempotency_conflict"), "{msg}");
    let (s, code, msg) = api_error(c.submit_keyed(&job(6), "has space"));
    assert_eq!((s, code.as_str()), (400, "invalid_field"), "{msg}");
    assert!(msg.contains("idempotency_key"), "{msg}");

    // The raw-upload route: kind in the path, metadata errors name the field.
    let (s, code, _) = api_error(c.submit_document("no-such-kind", b"{}", &[], "k1"));
    assert_eq!((s, code.as_str()), (404, "no_such_endpoint"));
    let (s, code, msg) =
        api_error(c.submit_document("porep-c2", b"{}", &[("miner_id", "f1abc".into())], "k2"));
    assert_eq!((s, code.as_str()), (400, "invalid_field"), "{msg}");
    assert!(msg.contains("input.miner_id"), "{msg}");
    let (s, code, msg) = api_error(c.submit_document(
        "porep-c2",
        b"not json",
        &[("miner_id", "f01000".into()), ("sector_id", "1".into())],
        "k3",
    ));
    assert_eq!((s, code.as_str()), (400, "invalid_field"), "{msg}");
    assert!(msg.contains("payload") && msg.contains("neither"), "{msg}");
    let (s, code, msg) =
        api_error(c.submit_document("porep-c2", b"{}", &[("priority", "high".into())], "k4"));
    assert_eq!((s, code.as_str()), (400, "invalid_field"), "{msg}");
    assert!(msg.contains("priority"), "{msg}");
    daemon.stop();
}
