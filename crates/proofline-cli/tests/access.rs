//! Access control over real HTTP(S): with a token, every endpoint but `/healthz` answers 401
//! to a request without it (or with another), and serves the right one; with a certificate the
//! API is HTTPS only, and a job is proved and fetched over it.

mod common;

use std::time::Duration;

use common::{assert_proof_verifies, params_dir, request};
use proofline::daemon::Daemon;
use proofline_actors::JobState;
use proofline_client::{Client, ClientError};
use proofline_config::{Config, StoreKind};

fn config(params: &std::path::Path) -> Config {
    let mut cfg = Config::embedded_default().unwrap();
    cfg.server.bind = "127.0.0.1:0".into();
    cfg.params.dir = params.display().to_string();
    cfg.state.store = StoreKind::Memory;
    cfg.log.level = "warn".into();
    cfg
}

fn status_of<T: std::fmt::Debug>(r: Result<T, ClientError>) -> (u16, String) {
    match r {
        Err(ClientError::Api { status, code, .. }) => (status, code),
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[test]
fn a_bearer_token_guards_every_endpoint_but_healthz() {
    let params = params_dir("sha256-1");
    let tmp = tempfile::tempdir().unwrap();
    let token_file = tmp.path().join("token");
    std::fs::write(&token_file, "correct-horse-battery\n").unwrap();
    let mut cfg = config(&params);
    cfg.server.auth_token_file = token_file.display().to_string();
    let d = Daemon::start(&cfg).unwrap();

    let anonymous = Client::new(d.url());
    assert_eq!(anonymous.health().unwrap()["status"], "ok");
    for (what, r) in [
        ("list", anonymous.list().map(|_| ())),
        (
            "submit",
            anonymous.submit(&request("sha256-1", 1)).map(|_| ()),
        ),
        ("status", anonymous.status("abc", None).map(|_| ())),
        ("cancel", anonymous.cancel("abc").map(|_| ())),
        ("result", anonymous.result("abc").map(|_| ())),
    ] {
        assert_eq!(status_of(r), (401, "unauthorized".into()), "{what}");
    }
    assert_eq!(
        status_of(anonymous.metrics()),
        (401, "unauthorized".into()),
        "/metrics needs the token too"
    );
    let wrong = Client::new(d.url()).with_token("correct-horse-batter");
    assert_eq!(status_of(wrong.list()), (401, "unauthorized".into()));

    let c = Client::new(d.url()).with_token("correct-horse-battery");
    let job = c.submit(&request("sha256-1", 3)).unwrap();
    let s = c.wait(&job.id, Duration::from_secs(600)).unwrap();
    assert_eq!(s.state, JobState::Succeeded);
    assert_proof_verifies(&c, &job.id, "sha256-1", &params);
    assert!(c
        .metrics()
        .unwrap()
        .contains("proofline_jobs_accepted_total"));
    d.stop();
}

#[test]
fn tls_serves_https_and_a_job_end_to_end() {
    let params = params_dir("sha256-1");
    let tmp = tempfile::tempdir().unwrap();
    let key =
        rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
    let (cert_path, key_path) = (tmp.path().join("cert.pem"), tmp.path().join("key.pem"));
    std::fs::write(&cert_path, key.cert.pem()).unwrap();
    std::fs::write(&key_path, key.key_pair.serialize_pem()).unwrap();
    let mut cfg = config(&params);
    cfg.server.tls_cert = cert_path.display().to_string();
    cfg.server.tls_key = key_path.display().to_string();
    cfg.server.auth_token = "t0ken".into();
    let d = Daemon::start(&cfg).unwrap();
    assert!(d.url().starts_with("https://"), "{}", d.url());

    let c = Client::new(d.url())
        .with_root_cert(&cert_path)
        .unwrap()
        .with_token("t0ken");
    assert_eq!(c.health().unwrap()["status"], "ok");
    let job = c.submit(&request("sha256-1", 4)).unwrap();
    let s = c.wait(&job.id, Duration::from_secs(600)).unwrap();
    assert_eq!(s.state, JobState::Succeeded);
    assert_proof_verifies(&c, &job.id, "sha256-1", &params);

    // Plain HTTP to the TLS port gets no API answer, and a client that does not trust the
    // certificate refuses the connection.
    let plain = Client::new(d.url().replacen("https://", "http://", 1)).with_token("t0ken");
    assert!(plain.list().is_err());
    let untrusting = Client::new(d.url()).with_token("t0ken");
    assert!(matches!(
        untrusting.list(),
        Err(ClientError::Transport { .. })
    ));
    d.stop();
}
