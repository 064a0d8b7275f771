//! The client's retries against a scripted HTTP server on loopback: 503 answers are retried
//! after their `Retry-After`, with the same idempotency key on every attempt; client errors are
//! not retried; an unreachable daemon is given up on after the policy's attempts.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use proofline_client::{Client, ClientError, RetryPolicy};
use proofline_wire::{JobRequest, JobState, JobStatus, StageTimings};

fn status_json() -> String {
    serde_json::to_string(&JobStatus {
        id: "0123456789abcdef".into(),
        kind: "groth16".into(),
        label: "sha256-1".into(),
        state: JobState::Queued,
        priority: 0,
        deadline_ms: None,
        partitions: 1,
        partitions_done: 0,
        submitted_at_ms: 1,
        started_at_ms: None,
        finished_at_ms: None,
        timings: StageTimings::default(),
        partition_timings: vec![StageTimings::default()],
        error: None,
    })
    .unwrap()
}

/// Serves one scripted answer per connection; records each request's headers.
fn serve(answers: Vec<String>) -> (String, Arc<Mutex<Vec<Vec<String>>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for answer in answers {
            let Ok((stream, _)) = listener.accept() else {
                return;
            };
            let mut reader = BufReader::new(stream);
            let mut headers = Vec::new();
            let mut len = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                let lower = line.trim().to_ascii_lowercase();
                if let Some(v) = lower.strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap_or(0);
                }
                headers.push(lower);
            }
            let mut body = vec![0; len];
            let _ = reader.read_exact(&mut body);
            log.lock().unwrap().push(headers);
            let mut stream = reader.into_inner();
            let _ = stream.write_all(answer.as_bytes());
        }
    });
    (url, seen)
}

fn answer(status: &str, extra: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\n{extra}content-length: {}\r\n\
         connection: close\r\n\r\n{body}",
        body.len()
    )
}

const FULL: &str = r#"{"error":{"code":"queue_full","message":"queue full"}}"#;

#[test]
fn a_503_is_retried_with_the_same_idempotency_key() {
    let (url, seen) = serve(vec![
        answer("503 Service Unavailable", "retry-after: 0\r\n", FULL),
        answer("503 Service Unavailable", "retry-after: 1\r\n", FULL),
        answer("202 Accepted", "", &status_json()),
    ]);
    let c = Client::new(url);
    let t = std::time::Instant::now();
    let s = c.submit(&JobRequest::new("groth16")).unwrap();
    assert_eq!(s.id, "0123456789abcdef");
    assert!(
        t.elapsed() >= Duration::from_secs(1),
        "Retry-After: 1 was not honoured"
    );
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 3);
    let keys: Vec<&String> = seen
        .iter()
        .map(|h| {
            h.iter()
                .find(|l| l.starts_with("idempotency-key:"))
                .unwrap()
        })
        .collect();
    assert!(keys.windows(2).all(|w| w[0] == w[1]), "{keys:?}");
}

#[test]
fn client_errors_are_not_retried_and_503s_are_bounded() {
    let bad = r#"{"error":{"code":"invalid_field","message":"invalid field 'x'"}}"#;
    let (url, seen) = serve(vec![answer("400 Bad Request", "", bad)]);
    match Client::new(url).submit(&JobRequest::new("groth16")) {
        Err(ClientError::Api {
            status: 400, code, ..
        }) => assert_eq!(code, "invalid_field"),
        other => panic!("{other:?}"),
    }
    assert_eq!(seen.lock().unwrap().len(), 1);

    let full = answer("503 Service Unavailable", "retry-after: 0\r\n", FULL);
    let (url, seen) = serve(vec![full.clone(), full.clone(), full]);
    let policy = RetryPolicy {
        attempts: 3,
        ..RetryPolicy::default()
    };
    match Client::new(url).with_retry(policy).list() {
        Err(ClientError::Api {
            status: 503,
            retry_after_s: Some(0),
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
    assert_eq!(seen.lock().unwrap().len(), 3);
}

#[test]
fn an_unreachable_daemon_is_given_up_on() {
    // A port nobody listens on: bind one, then drop it.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let policy = RetryPolicy {
        attempts: 3,
        base: Duration::from_millis(10),
        ..RetryPolicy::default()
    };
    let c = Client::new(format!("http://127.0.0.1:{port}")).with_retry(policy);
    match c.health() {
        Err(e @ ClientError::Transport { .. }) => {
            assert!(e.to_string().contains("after 3 attempts"), "{e}")
        }
        other => panic!("{other:?}"),
    }
}
