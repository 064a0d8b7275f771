//! The PostgreSQL shared queue, against a real server (`PROOFLINE_TEST_POSTGRES_URL`, set by
//! .ci/run; locally `eval "$(scripts/test-postgres.sh start)"`). Each test works in a fresh
//! database of its own.
//!
//! * claims, lease expiry and take-over at the queue level: a holder whose claim expired and
//!   was taken cannot complete the job; the new holder does, once;
//! * claims in the coordinator's rank order (effective priority, earliest deadline, age), with
//!   each request's own `priority` and `deadline` kept; a table made before deadlines gains
//!   the column;
//! * two `proofline serve` processes share one queue; `kill -9` of the one running a job, and
//!   the other finishes it; every job completes exactly once and its proof verifies, read from
//!   the surviving daemon.

mod common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use common::{assert_proof_verifies, params_dir, request, DaemonProcess};
use proofline_actors::job::queued_status;
use proofline_actors::store::shared::{SharedQueue, SharedSpec};
use proofline_actors::store::{FinishOutcome, FinishedRecord, JobStore};
use proofline_actors::{JobResult, JobState};
use proofline_client::Client;

/// The server's URL, or `None` (loudly) when it is not set outside CI.
fn server_url() -> Option<String> {
    match std::env::var("PROOFLINE_TEST_POSTGRES_URL") {
        Ok(u) if !u.is_empty() => Some(u),
        _ if std::env::var_os("CI").is_some() => {
            panic!("PROOFLINE_TEST_POSTGRES_URL is not set: .ci/run must start PostgreSQL")
        }
        _ => {
            eprintln!(
                "SKIPPED: PROOFLINE_TEST_POSTGRES_URL is not set; run \
                 `eval \"$(scripts/test-postgres.sh start)\"` to run the shared-queue tests"
            );
            None
        }
    }
}

/// A fresh database on the server, dropped at the end.
struct TestDb {
    admin: String,
    name: String,
    url: String,
}

impl TestDb {
    fn create(admin: &str, tag: &str) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let name = format!("proofline_{tag}_{}_{nanos}", std::process::id());
        let mut c = postgres::Client::connect(admin, postgres::NoTls).unwrap();
        c.batch_execute(&format!("CREATE DATABASE {name}")).unwrap();
        let base = admin.rsplit_once('/').map(|(b, _)| b).unwrap_or(admin);
        TestDb {
            admin: admin.to_string(),
            url: format!("{base}/{name}"),
            name,
        }
    }

    fn client(&self) -> postgres::Client {
        postgres::Client::connect(&self.url, postgres::NoTls).unwrap()
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        if let Ok(mut c) = postgres::Client::connect(&self.admin, postgres::NoTls) {
            let _ = c.batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ));
        }
    }
}

fn spec(url: &str, holder: &str, lease: Duration) -> SharedSpec {
    SharedSpec {
        url: url.into(),
        lease,
        holder: holder.into(),
        max_claimed: 1,
        poll: Duration::from_millis(50),
    }
}

#[test]
fn an_expired_claim_is_taken_over_and_only_the_new_holder_completes() {
    let Some(admin) = server_url() else { return };
    let db = TestDb::create(&admin, "claims");
    let lease = Duration::from_millis(300);
    let x = SharedQueue::connect(spec(&db.url, "x", lease)).unwrap();
    let y = SharedQueue::connect(spec(&db.url, "y", lease)).unwrap();

    let mut req = request("sha256-1", 1);
    let status = queued_status("job-1", "groth16", "sha256-1", 0, None, 1);
    x.accept("job-1", &mut req, &status).unwrap();
    assert!(matches!(
        y.accept("job-1", &mut req, &status),
        Err(proofline_actors::StoreError::Duplicate(_))
    ));
    let (id, claimed) = x.claim().unwrap().expect("x claims the queued job");
    assert_eq!((id.as_str(), &claimed), ("job-1", &req));
    assert!(y.claim().unwrap().is_none(), "a live claim is not taken");
    assert_eq!(y.status("job-1").unwrap().unwrap().state, JobState::Running);

    // x stops renewing; once the lease expires y takes the job over.
    std::thread::sleep(lease + Duration::from_millis(200));
    let (id, _) = y.claim().unwrap().expect("y takes over the expired claim");
    let mut done = status.clone();
    done.state = JobState::Succeeded;
    done.finished_at_ms = Some(1);
    let rec = FinishedRecord {
        status: done,
        result: Some(JobResult {
            proof: vec![5; 192],
            public_inputs: vec![vec!["00".into()]],
        }),
    };
    assert_eq!(
        x.finish(&id, &rec).unwrap(),
        FinishOutcome::ClaimLost,
        "the old holder cannot complete the job"
    );
    assert_eq!(y.finish(&id, &rec).unwrap(), FinishOutcome::Recorded);
    assert_eq!(y.finish(&id, &rec).unwrap(), FinishOutcome::ClaimLost);
    assert_eq!(
        y.counters(&id).unwrap(),
        Some((2, 1)),
        "claimed twice, completed once"
    );
    // Read from the other holder.
    let (s, r) = x.result(&id).unwrap().unwrap();
    assert_eq!(s.state, JobState::Succeeded);
    assert_eq!(r.unwrap().proof, vec![5; 192]);
    assert!(x.renew(&HashMap::new()).unwrap().is_empty());

    // A job cancelled from any daemon is never claimed.
    let mut req2 = request("sha256-1", 2);
    y.accept(
        "job-2",
        &mut req2,
        &queued_status("job-2", "groth16", "sha256-1", 0, None, 1),
    )
    .unwrap();
    assert_eq!(
        x.cancel("job-2").unwrap().unwrap().state,
        JobState::Cancelled
    );
    assert!(y.claim().unwrap().is_none());
    assert_eq!(y.list(10).unwrap().len(), 2);
}

#[test]
fn claims_follow_priority_then_deadline_then_age_and_requests_keep_their_fields() {
    let Some(admin) = server_url() else { return };
    let db = TestDb::create(&admin, "rank");
    // A table as made before jobs had deadlines, with one job waiting in it.
    db.client()
        .batch_execute(
            "CREATE TABLE proofline_jobs (
                 id text PRIMARY KEY, request bytea, priority integer NOT NULL,
                 submitted_at_ms bigint NOT NULL, state text NOT NULL, holder text,
                 lease_until timestamptz, epoch bigint NOT NULL DEFAULT 0,
                 claims integer NOT NULL DEFAULT 0, completions integer NOT NULL DEFAULT 0,
                 status bytea NOT NULL, result bytea, finished_at_ms bigint);
             CREATE INDEX proofline_jobs_open ON proofline_jobs (priority DESC, submitted_at_ms)
                 WHERE state IN ('queued', 'running');",
        )
        .unwrap();
    let q = SharedQueue::connect(spec(&db.url, "x", Duration::from_secs(60))).unwrap();

    // (id, effective priority, request's priority, deadline), submitted in this order.
    let jobs: [(&str, i32, Option<i32>, Option<u64>); 5] = [
        ("old-c2", 0, None, None),
        ("c2-late-deadline", 0, Some(0), Some(2_000)),
        ("window-post", 200, None, Some(9_000)),
        ("c2-early-deadline", 0, None, Some(1_000)),
        ("urgent-c2", 250, Some(250), None),
    ];
    let mut sent = HashMap::new();
    for (k, (id, effective, priority, deadline)) in jobs.into_iter().enumerate() {
        let mut req = request("sha256-1", k as u64);
        req.priority = priority;
        req.deadline = deadline;
        let mut status = queued_status(id, "groth16", "sha256-1", effective, deadline, 1);
        status.submitted_at_ms = 1_000 + k as u64;
        q.accept(id, &mut req, &status).unwrap();
        sent.insert(id, req);
    }
    let mut order = Vec::new();
    while let Some((id, req)) = q.claim().unwrap() {
        assert_eq!(&req, &sent[id.as_str()], "the stored request of {id}");
        order.push(id);
    }
    assert_eq!(
        order,
        [
            "urgent-c2",
            "window-post",
            "c2-early-deadline",
            "c2-late-deadline",
            "old-c2"
        ]
    );
}

#[test]
fn two_daemons_share_one_queue_and_a_killed_daemons_job_is_finished_by_the_other() {
    let Some(admin) = server_url() else { return };
    let db = TestDb::create(&admin, "daemons");
    let params = params_dir("sha256-1");
    let tmp = tempfile::tempdir().unwrap();
    let env = |holder: &str| {
        vec![
            ("PROOFLINE_QUEUE__POSTGRES_URL", db.url.clone()),
            ("PROOFLINE_QUEUE__LEASE_S", "3".to_string()),
            ("PROOFLINE_QUEUE__HOLDER", holder.to_string()),
            ("PROOFLINE_QUEUE__MAX_CLAIMED_JOBS", "1".to_string()),
            ("PROOFLINE_QUEUE__POLL_MS", "50".to_string()),
            ("PROOFLINE_STATE__STORE", "memory".to_string()),
        ]
    };
    let mut a = DaemonProcess::start(&params, tmp.path().join("a.log"), &env("daemon-a"));
    let b = DaemonProcess::start(&params, tmp.path().join("b.log"), &env("daemon-b"));
    let ca = Client::new(&a.url);
    let cb = Client::new(&b.url);
    let ids: Vec<String> = (0..6)
        .map(|i| ca.submit(&request("sha256-1", 40 + i)).unwrap().id)
        .collect();

    // Kill daemon A the moment the queue shows it running a job.
    let mut pg = db.client();
    let deadline = Instant::now() + Duration::from_secs(120);
    let victim: String = loop {
        let rows = pg
            .query(
                "SELECT id FROM proofline_jobs WHERE holder = 'daemon-a' AND state = 'running'",
                &[],
            )
            .unwrap();
        if let Some(r) = rows.first() {
            a.signal("KILL");
            break r.get(0);
        }
        assert!(Instant::now() < deadline, "daemon A never ran a job");
        std::thread::sleep(Duration::from_millis(5));
    };
    assert_eq!(a.wait_exit(Duration::from_secs(30)), None);

    // Daemon B serves every job, including those submitted to A and the one A was running.
    for id in &ids {
        let s = cb.wait(id, Duration::from_secs(600)).unwrap();
        assert_eq!(s.state, JobState::Succeeded, "{id}: {s:?}");
        assert_proof_verifies(&cb, id, "sha256-1", &params);
    }
    let rows = pg
        .query(
            "SELECT id, claims, completions, holder FROM proofline_jobs ORDER BY id",
            &[],
        )
        .unwrap();
    assert_eq!(rows.len(), ids.len());
    for r in &rows {
        let (id, claims, completions): (String, i32, i32) = (r.get(0), r.get(1), r.get(2));
        assert_eq!(completions, 1, "job {id} completed exactly once");
        assert!(
            r.get::<_, Option<String>>(3).is_none(),
            "no claim left on {id}"
        );
        if id == victim {
            assert!(
                claims >= 2,
                "the killed daemon's job was taken over ({claims} claims)"
            );
        }
    }
    let log = b.log_text();
    assert!(log.contains("took over a job"), "{log}");
}
