//! Priorities and deadlines over HTTP, with real Filecoin jobs on the CPU backend:
//!
//! * a WindowPoSt submitted behind three 2KiB C2 jobs finishes before every one of them: it is
//!   admitted at once (the priority reserve), and it takes each stage at the next stage
//!   boundary ahead of the C2 partitions already in the pipeline;
//! * a job whose deadline has passed fails with `deadline_exceeded`, and so does one whose
//!   deadline is closer than the measured time of its circuit's partitions, at once rather
//!   than after proving; both are counted in `proofline_deadline_exceeded_total{kind}`.
//!
//! Uses the fixture cache of `proofline-filecoin` (the 2KiB PoRep and WindowPoSt parameters).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use proofline_actors::{JobState, JobStatus};
use proofline_client::Client;
use proofline_filecoin::fixture::{self, FIXTURE_PROOF};
use proofline_filecoin::post::{self, PoStKind};
use proofline_filecoin::{c1, sectors, verify_c2, verify_window_post, SealIdentity};
use proofline_integration::{start, test_config};
use proofline_jobs::{priority, JobRequest};

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

fn wait(c: &Client, id: &str) -> JobStatus {
    c.wait(id, Duration::from_secs(3600)).unwrap()
}

#[test]
fn window_post_behind_c2_jobs_finishes_first_and_late_jobs_fail_early() {
    let fx = fixture::ensure_fixture(&fixture::default_cache_dir()).unwrap();
    let window_rp = proofline_filecoin::RegisteredPoStProof::StackedDrgWindow2KiBV1_2;
    fixture::ensure_circuit(&fx.cache, window_rp).unwrap();
    // Two sectors: one WindowPoSt partition at 2KiB.
    let window = sectors::window_post_case(FIXTURE_PROOF, 2, &mut rand::rngs::OsRng).unwrap();

    let builtin = tempfile::tempdir().unwrap();
    let mut cfg = test_config(builtin.path()).unwrap();
    cfg.filecoin.params_dir = fx.params_dir.display().to_string();
    cfg.filecoin.verify_digests = false;
    cfg.pipeline.max_partitions_in_flight = 2.into();
    cfg.pipeline.priority_reserve_partitions = 1;
    cfg.pipeline.synthesis_workers = 1.into();
    cfg.pipeline.compute_slots = 1.into();
    let daemon = start(&cfg).unwrap();
    let c = Client::new(daemon.url());

    let c2_body = c1::request_body(
        &fx.sector.c1_output,
        &fx.sector.prover_id,
        fx.sector.sector_id,
    );
    let c2_req: JobRequest = serde_json::from_value(c2_body).unwrap();
    let seal_id = SealIdentity::of(&c1::parse_input(&c2_req.input, None).unwrap());
    let c2: Vec<String> = (0..3).map(|_| c.submit(&c2_req).unwrap().id).collect();
    let id = &window.identity;
    let window_req: JobRequest = serde_json::from_value(post::request_body(
        PoStKind::Window,
        id.registered_proof,
        &id.randomness,
        &id.prover_id,
        &window.vanilla_proofs,
    ))
    .unwrap();
    let w = c.submit(&window_req).unwrap();
    assert_eq!(w.priority, priority::WINDOW_POST);
    assert_eq!(
        w.state,
        JobState::Running,
        "admitted at once, beyond max_partitions_in_flight: {w:?}"
    );

    let w = wait(&c, &w.id);
    assert_eq!(w.state, JobState::Succeeded, "{w:?}");
    assert!(verify_window_post(&c.proof_bytes(&w.id).unwrap(), id).unwrap());
    for job in &c2 {
        let s = wait(&c, job);
        assert_eq!(s.state, JobState::Succeeded, "{s:?}");
        assert_eq!(s.priority, priority::DEFAULT);
        assert!(
            w.finished_at_ms < s.finished_at_ms,
            "the WindowPoSt finished at {:?}, C2 job {job} (submitted before it) at {:?}\n\
             WindowPoSt: {w:?}\nC2: {s:?}",
            w.finished_at_ms,
            s.finished_at_ms
        );
        assert!(verify_c2(&c.proof_bytes(job).unwrap(), &seal_id).unwrap());
    }

    // A deadline that has passed: failed at once, never proved.
    let mut late = window_req.clone();
    late.deadline = Some(now_ms() - 1_000);
    let s = c.submit(&late).unwrap();
    let s = wait(&c, &s.id);
    assert_eq!(s.state, JobState::Failed);
    let e = s.error.as_ref().unwrap();
    assert_eq!(e.code, "deadline_exceeded", "{e:?}");
    assert!(e.message.contains("passed"), "{e:?}");
    assert_eq!(s.partitions_done, 0);

    // A deadline 2 s away for a C2 job, whose partitions were measured at several seconds:
    // failed early, without waiting for the deadline or for a proof.
    let mut tight = c2_req.clone();
    tight.deadline = Some(now_ms() + 2_000);
    let t = std::time::Instant::now();
    let s = c.submit(&tight).unwrap();
    let s = wait(&c, &s.id);
    assert_eq!(s.state, JobState::Failed, "{s:?}");
    let e = s.error.as_ref().unwrap();
    assert_eq!(e.code, "deadline_exceeded", "{e:?}");
    assert!(e.message.contains("measured"), "{e:?}");
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "failed early, not at the deadline"
    );
    // A generous deadline is met.
    let mut ok = window_req.clone();
    ok.deadline = Some(now_ms() + 3_600_000);
    let s = c.submit(&ok).unwrap();
    assert_eq!(wait(&c, &s.id).state, JobState::Succeeded);

    let metrics = c.metrics().unwrap();
    for kind in ["window-post", "porep-c2"] {
        let line = format!("proofline_deadline_exceeded_total{{kind=\"{kind}\"}} 1");
        assert!(metrics.contains(&line), "no '{line}' in:\n{metrics}");
    }
}
