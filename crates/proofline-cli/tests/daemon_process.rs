//! The real `proofline serve` process with its default durable store: `kill -9` with jobs
//! queued and running then a restart completes every job exactly once; SIGTERM drains (the
//! running job finishes, queued ones stay stored and run after the next start); a
//! non-loopback bind without a token refuses to start.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::{assert_proof_verifies, bin, params_dir, request, DaemonProcess};
use proofline_actors::JobState;
use proofline_client::Client;

const CIRCUIT: &str = "sha256-1";

fn env(state: &std::path::Path) -> Vec<(&'static str, String)> {
    vec![
        ("PROOFLINE_STATE__STORE", "embedded".into()),
        ("PROOFLINE_STATE__DIR", state.display().to_string()),
        // One partition at a time: jobs queue behind each other.
        ("PROOFLINE_PIPELINE__MAX_PARTITIONS_IN_FLIGHT", "1".into()),
        ("PROOFLINE_SERVER__DRAIN_TIMEOUT_S", "120".into()),
    ]
}

/// Waits until some job is running.
fn wait_running(c: &Client, ids: &[String]) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let running = ids
            .iter()
            .any(|id| matches!(c.status(id, None), Ok(s) if s.state == JobState::Running));
        if running {
            return;
        }
        assert!(Instant::now() < deadline, "no job started");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn kill_9_with_jobs_queued_and_running_then_restart_completes_every_job() {
    let params = params_dir(CIRCUIT);
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let mut d = DaemonProcess::start(&params, tmp.path().join("a.log"), &env(&state));
    let c = Client::new(&d.url);
    let ids: Vec<String> = (0..4)
        .map(|i| c.submit(&request(CIRCUIT, i)).unwrap().id)
        .collect();
    wait_running(&c, &ids);
    d.signal("KILL");
    assert_eq!(
        d.wait_exit(Duration::from_secs(30)),
        None,
        "killed by the signal"
    );
    assert!(std::fs::metadata(state.join("jobs.redb")).is_ok());

    let d = DaemonProcess::start(&params, tmp.path().join("b.log"), &env(&state));
    let c = Client::new(&d.url);
    for id in &ids {
        let s = c.wait(id, Duration::from_secs(600)).unwrap();
        assert_eq!(s.state, JobState::Succeeded, "{id}: {s:?}");
        assert_proof_verifies(&c, id, CIRCUIT, &params);
    }
    let log = d.log_text();
    assert!(
        log.contains("re-running a stored job after a restart"),
        "{log}"
    );
    // Exactly once: four jobs listed, each with one outcome.
    let listed = c.list().unwrap();
    assert_eq!(listed.len(), ids.len(), "{listed:?}");
}

#[test]
fn sigterm_finishes_the_running_job_and_keeps_the_queued_ones_for_the_next_start() {
    let params = params_dir(CIRCUIT);
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let mut d = DaemonProcess::start(&params, tmp.path().join("a.log"), &env(&state));
    let c = Client::new(&d.url);
    let ids: Vec<String> = (0..4)
        .map(|i| c.submit(&request(CIRCUIT, 10 + i)).unwrap().id)
        .collect();
    wait_running(&c, &ids);
    d.signal("TERM");
    assert_eq!(d.wait_exit(Duration::from_secs(120)), Some(0));
    let log = d.log_text();
    assert!(log.contains("running jobs finished"), "{log}");
    assert!(log.contains("kept in"), "{log}");

    let d = DaemonProcess::start(&params, tmp.path().join("b.log"), &env(&state));
    let c = Client::new(&d.url);
    // The job that was running when the signal came finished before the stop: its outcome is
    // served from the store, not run again. The queued ones run now.
    let restored = ids
        .iter()
        .filter(|id| c.status(id, None).unwrap().state == JobState::Succeeded)
        .count();
    assert!(restored >= 1, "the running job was drained to completion");
    assert!(
        restored < ids.len(),
        "queued jobs were not started while draining"
    );
    for id in &ids {
        let s = c.wait(id, Duration::from_secs(600)).unwrap();
        assert_eq!(s.state, JobState::Succeeded, "{id}: {s:?}");
        assert_proof_verifies(&c, id, CIRCUIT, &params);
    }
}

#[test]
fn a_non_loopback_bind_without_a_token_refuses_to_start() {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(bin())
        .args(["serve", "--bind", "0.0.0.0:1"])
        .env_remove("PROOFLINE_CONFIG")
        .env("PROOFLINE_STATE__STORE", "memory")
        .env("PROOFLINE_STATE__DIR", tmp.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("server.auth_token_file") && err.contains("allow_unauthenticated"),
        "{err}"
    );
}
