//! A state directory whose disk fills up under a running daemon (a small tmpfs filled to the
//! last byte; mounting needs root, skipped loudly otherwise): new submissions get 503
//! `journal_unavailable`, the daemon keeps serving, jobs accepted before are not lost, and once
//! there is room again the store reopens itself. (A read-only remount is refused by the kernel
//! while the store file is open for writing, so a full disk is the fault a running daemon
//! meets.)

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{params_dir, request};
use proofline::daemon::Daemon;
use proofline_actors::JobState;
use proofline_client::{Client, ClientError, RetryPolicy};
use proofline_config::{Config, StoreKind};

/// A tmpfs mounted for the test, unmounted on drop.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: &Path) -> Option<Self> {
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=64m", "tmpfs"])
            .arg(at)
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        ok.then(|| Tmpfs(at.to_path_buf()))
    }

    /// Fills the file system to the last byte; returns the filler file.
    fn fill(&self) -> PathBuf {
        let path = self.0.join("filler");
        let mut f = std::fs::File::create(&path).unwrap();
        for chunk in [1 << 20, 4096, 1] {
            let buf = vec![0u8; chunk];
            while f.write_all(&buf).and_then(|_| f.flush()).is_ok() {}
        }
        path
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

fn config(params: &Path, state: &Path) -> Config {
    let mut cfg = Config::embedded_default().unwrap();
    cfg.server.bind = "127.0.0.1:0".into();
    cfg.params.dir = params.display().to_string();
    cfg.state.store = StoreKind::Embedded;
    cfg.state.dir = state.display().to_string();
    cfg.log.level = "warn".into();
    cfg
}

#[test]
fn a_full_state_disk_refuses_new_jobs_with_503_and_loses_none() {
    let params = params_dir("sha256-1");
    let tmp = tempfile::tempdir().unwrap();
    let Some(fs) = Tmpfs::mount(tmp.path()) else {
        eprintln!("SKIPPED: cannot mount a tmpfs here (needs root)");
        return;
    };
    let state = tmp.path().join("state");
    let d = Daemon::start(&config(&params, &state)).unwrap();
    // No retries: the refusal itself is what this test looks at.
    let c = Client::new(d.url()).with_retry(RetryPolicy::none());
    let a = c.submit(&request("sha256-1", 1)).unwrap();

    let filler = fs.fill();
    match c.submit(&request("sha256-1", 2)) {
        Err(ClientError::Api {
            status,
            code,
            message,
            retry_after_s,
        }) => {
            assert!(retry_after_s.is_some(), "every 503 says when to retry");
            assert_eq!(
                (status, code.as_str()),
                (503, "journal_unavailable"),
                "{message}"
            );
            assert!(message.contains("jobs.redb"), "{message}");
        }
        other => panic!("expected 503 journal_unavailable, got {other:?}"),
    }
    assert_eq!(c.health().unwrap()["status"], "ok", "still serving");
    // The job accepted before still finishes (its outcome may not be writable now: then it
    // runs again after the restart below).
    assert_eq!(
        c.wait(&a.id, Duration::from_secs(600)).unwrap().state,
        JobState::Succeeded
    );

    // Room again: the store reopens itself and takes jobs.
    std::fs::remove_file(filler).unwrap();
    let b = c.submit(&request("sha256-1", 3)).unwrap();
    assert_eq!(
        c.wait(&b.id, Duration::from_secs(600)).unwrap().state,
        JobState::Succeeded
    );
    d.stop();

    // A restart on the same directory: both accepted jobs are there; the refused one is not.
    let d = Daemon::start(&config(&params, &state)).unwrap();
    let c = Client::new(d.url());
    for id in [&a.id, &b.id] {
        let s = c.wait(id, Duration::from_secs(600)).unwrap();
        assert_eq!(s.state, JobState::Succeeded, "{id}");
    }
    assert_eq!(c.list().unwrap().len(), 2);
    d.stop();
}
