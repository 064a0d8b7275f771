//! The actor pipeline end to end on the CPU backend: proofs verify with bellperson, a job with
//! bad parameters fails loudly, cancellation and priorities behave, the store re-runs jobs.

use std::path::Path;
use std::sync::Arc;

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use bellperson::groth16;
use blstrs::Bls12;
use blstrs::Scalar;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use proofline_actors::{JobState, Pipeline, PipelineOptions, ResultError, StoreSpec};
use proofline_circuits::Sha256Preimage;
use proofline_config::{Config, SynthesisMode};
use proofline_groth16::PartitionCircuit;
use proofline_jobs::builtin::{params_spec_in, BuiltinAdapter, BuiltinCircuit};
use proofline_jobs::{
    parse_scalar_hex, AdapterRegistry, CircuitInfo, JobAdapter, JobError, JobPlan, JobRequest,
    ParamsSpec, ParamsStore, PartitionPlan,
};
use proofline_wire::{PartitionStage, StatusPage};
use rand::SeedableRng;

fn write_params(dir: &Path, blocks: usize, seed: u64) {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    let c = BuiltinCircuit::Sha256 { blocks };
    let p =
        groth16::generate_random_parameters::<Bls12, _, _>(c.blank().unwrap(), &mut rng).unwrap();
    let f = std::fs::File::create(dir.join(c.params_file())).unwrap();
    p.write(std::io::BufWriter::new(f)).unwrap();
}

/// A job kind whose circuit panics during synthesis (a stand-in for a buggy circuit).
struct PanicAdapter {
    params: ParamsSpec,
}

struct PanickingCircuit;

impl Circuit<Scalar> for PanickingCircuit {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, _: &mut CS) -> Result<(), SynthesisError> {
        panic!("circuit assertion failed");
    }
}

impl JobAdapter for PanicAdapter {
    fn kind(&self) -> &'static str {
        "panic"
    }
    fn plan(&self, _: &JobRequest) -> Result<JobPlan, JobError> {
        Ok(JobPlan {
            label: "panic".into(),
            params: self.params.clone(),
            partitions: vec![PartitionPlan {
                public_inputs: vec![],
                circuit: Box::new(|| Ok(Box::new(PanickingCircuit) as Box<dyn PartitionCircuit>)),
                constraints_hint: 0,
            }],
            final_check: None,
        })
    }
    fn circuits(&self) -> Vec<CircuitInfo> {
        vec![]
    }
}

/// The built-in kind with a final check of the whole proof: kind "checked-ok" re-verifies the
/// proof with the job's key; kind "checked-reject" always rejects.
struct CheckedAdapter {
    inner: BuiltinAdapter,
    accept: bool,
}

impl JobAdapter for CheckedAdapter {
    fn kind(&self) -> &'static str {
        if self.accept {
            "checked-ok"
        } else {
            "checked-reject"
        }
    }
    fn plan(&self, req: &JobRequest) -> Result<JobPlan, JobError> {
        let mut plan = self.inner.plan(req)?;
        let inputs = plan.partitions[0].public_inputs.clone();
        let accept = self.accept;
        plan.final_check = Some(Box::new(move |proof, pk| {
            let p = groth16::Proof::<Bls12>::read(proof).map_err(|e| e.to_string())?;
            let ok = groth16::verify_proof(pk.pvk(), &p, &inputs).map_err(|e| e.to_string())?;
            if accept && ok {
                Ok(())
            } else {
                Err(format!("rejected (proof valid: {ok})"))
            }
        }));
        Ok(plan)
    }
    fn circuits(&self) -> Vec<CircuitInfo> {
        vec![]
    }
}

/// A gate that circuits of kind "gated" wait at, during synthesis, until it opens.
#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    cv: Condvar,
}

impl Gate {
    fn wait(&self) {
        let mut open = self.open.lock().unwrap();
        while !*open {
            open = self.cv.wait(open).unwrap();
        }
    }
    fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.cv.notify_all();
    }
}

/// The built-in kind whose circuits wait at a gate before they are built.
struct GatedAdapter {
    inner: BuiltinAdapter,
    gate: Arc<Gate>,
}

impl JobAdapter for GatedAdapter {
    fn kind(&self) -> &'static str {
        "gated"
    }
    fn plan(&self, req: &JobRequest) -> Result<JobPlan, JobError> {
        let mut r = req.clone();
        r.kind = "groth16".into();
        let mut plan = self.inner.plan(&r)?;
        for p in &mut plan.partitions {
            let inner = std::mem::replace(
                &mut p.circuit,
                Box::new(|| Err(JobError::Internal("replaced".into()))),
            );
            let gate = self.gate.clone();
            p.circuit = Box::new(move || {
                gate.wait();
                inner()
            });
        }
        Ok(plan)
    }
    fn circuits(&self) -> Vec<CircuitInfo> {
        vec![]
    }
}

fn start(dir: &Path, journal: Option<&Path>, tweak: impl FnOnce(&mut Config)) -> Pipeline {
    let mut cfg = Config::embedded_default().unwrap();
    tweak(&mut cfg);
    let mut reg = AdapterRegistry::new();
    reg.register(Arc::new(BuiltinAdapter::new(dir, vec![])));
    for accept in [true, false] {
        reg.register(Arc::new(CheckedAdapter {
            inner: BuiltinAdapter::new(dir, vec![]),
            accept,
        }));
    }
    reg.register(Arc::new(PanicAdapter {
        params: params_spec_in(dir, &BuiltinCircuit::Sha256 { blocks: 1 }),
    }));
    let opts = PipelineOptions::cpu(&cfg.pipeline, reg, Arc::new(ParamsStore::new(false)))
        .with_store(match journal {
            Some(dir) => StoreSpec::Embedded {
                path: dir.join("jobs.redb"),
            },
            None => StoreSpec::Memory,
        });
    Pipeline::start(opts).unwrap()
}

fn request(circuit: &str, seed: u64, priority: i32) -> JobRequest {
    JobRequest {
        kind: "groth16".into(),
        circuit: Some(circuit.into()),
        input: serde_json::json!({ "seed": seed }),
        public_inputs: None,
        priority: Some(priority),
        ..Default::default()
    }
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    futures::executor::block_on(f)
}

#[test]
fn proofs_verify_and_bad_parameters_fail_loudly() {
    let dir = tempfile::tempdir().unwrap();
    write_params(dir.path(), 1, 1);
    let p = start(dir.path(), None, |_| {});
    block_on(async {
        let accepted = p.submit(request("sha256-1", 5, 0)).await.unwrap();
        let status = p.wait(&accepted.id).await.unwrap();
        assert_eq!(status.state, JobState::Succeeded, "{status:?}");
        assert!(status.timings.synthesis_s > 0.0 && status.timings.h_s > 0.0);
        let result = p.result(&accepted.id).await.unwrap();
        assert_eq!(result.proof.len(), 192);
        // bellperson verifies the returned bytes against the parameter file's key.
        let params = groth16::Parameters::<Bls12>::read(
            std::fs::File::open(dir.path().join("proofline-sha256-1.params")).unwrap(),
            false,
        )
        .unwrap();
        let pvk = groth16::prepare_verifying_key(&params.vk);
        let proof = groth16::Proof::<Bls12>::read(&result.proof[..]).unwrap();
        let inputs: Vec<_> = result.public_inputs[0]
            .iter()
            .map(|h| parse_scalar_hex("x", h).unwrap())
            .collect();
        assert_eq!(
            inputs,
            Sha256Preimage::public_inputs(&Sha256Preimage::demo_preimage(1, 5))
        );
        assert!(groth16::verify_proof(&pvk, &proof, &inputs).unwrap());

        // Replace the parameters with another circuit's: the job fails with a clear code and
        // no proof is returned.
        write_params(dir.path(), 2, 2);
        std::fs::rename(
            dir.path().join("proofline-sha256-2.params"),
            dir.path().join("proofline-sha256-1.params"),
        )
        .unwrap();
        let fresh = start(dir.path(), None, |_| {});
        let accepted = fresh.submit(request("sha256-1", 6, 0)).await.unwrap();
        let status = fresh.wait(&accepted.id).await.unwrap();
        assert_eq!(status.state, JobState::Failed);
        assert_eq!(
            status.error.as_ref().unwrap().code,
            "params_mismatch",
            "{status:?}"
        );
        assert!(matches!(
            fresh.result(&accepted.id).await,
            Err(ResultError::Unsuccessful(_))
        ));
        fresh.shutdown();
        assert!(matches!(
            p.result("nope").await,
            Err(ResultError::NotFound(_))
        ));
    });
    p.shutdown();
}

/// Proves a sha256-1 job and checks the proof with bellperson against the parameter file's key.
async fn prove_and_verify(p: &Pipeline, dir: &Path, seed: u64) {
    let accepted = p.submit(request("sha256-1", seed, 0)).await.unwrap();
    let status = p.wait(&accepted.id).await.unwrap();
    assert_eq!(status.state, JobState::Succeeded, "{status:?}");
    let result = p.result(&accepted.id).await.unwrap();
    let params = groth16::Parameters::<Bls12>::read(
        std::fs::File::open(dir.join("proofline-sha256-1.params")).unwrap(),
        false,
    )
    .unwrap();
    let pvk = groth16::prepare_verifying_key(&params.vk);
    let proof = groth16::Proof::<Bls12>::read(&result.proof[..]).unwrap();
    let inputs = Sha256Preimage::public_inputs(&Sha256Preimage::demo_preimage(1, seed));
    assert!(groth16::verify_proof(&pvk, &proof, &inputs).unwrap());
}

#[test]
fn constraints_are_recorded_by_the_first_job_and_used_by_the_next() {
    let dir = tempfile::tempdir().unwrap();
    write_params(dir.path(), 1, 4);
    let file = dir.path().join("proofline-sha256-1.r1cs");
    let wait_for_file = || {
        for _ in 0..400 {
            if file.is_file() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("{} was not written", file.display());
    };
    block_on(async {
        // Plain synthesis records nothing.
        let p = start(dir.path(), None, |c| {
            c.pipeline.synthesis_mode = SynthesisMode::Plain
        });
        prove_and_verify(&p, dir.path(), 1).await;
        p.shutdown();
        assert!(!file.exists());

        // The first job records the shape beside the parameters...
        let p = start(dir.path(), None, |_| {});
        prove_and_verify(&p, dir.path(), 2).await;
        wait_for_file();
        // ...and the next uses it, resident.
        prove_and_verify(&p, dir.path(), 3).await;
        p.shutdown();

        // A new process reads the file.
        let p = start(dir.path(), None, |_| {});
        prove_and_verify(&p, dir.path(), 4).await;
        p.shutdown();

        // A damaged file is recorded again, and the job still succeeds.
        let bytes = std::fs::read(&file).unwrap();
        std::fs::write(&file, &bytes[..bytes.len() - 100]).unwrap();
        let p = start(dir.path(), None, |_| {});
        prove_and_verify(&p, dir.path(), 5).await;
        p.shutdown();
        for _ in 0..400 {
            if std::fs::metadata(&file).unwrap().len() == bytes.len() as u64 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        assert_eq!(
            std::fs::read(&file).unwrap(),
            bytes,
            "re-recorded identically"
        );
    });
}

#[test]
fn cancellation_priorities_and_store_replay() {
    let dir = tempfile::tempdir().unwrap();
    let journal = tempfile::tempdir().unwrap();
    write_params(dir.path(), 1, 3);
    // One partition at a time, so jobs queue behind each other.
    let p = start(dir.path(), Some(journal.path()), |c| {
        c.pipeline.max_partitions_in_flight = 1.into()
    });
    let (first, low, high, cancelled) = block_on(async {
        let first = p.submit(request("sha256-1", 1, 0)).await.unwrap();
        let low = p.submit(request("sha256-1", 2, 0)).await.unwrap();
        let high = p.submit(request("sha256-1", 3, 10)).await.unwrap();
        let cancelled = p.submit(request("sha256-1", 4, 0)).await.unwrap();
        let st = p.cancel(&cancelled.id).await.unwrap();
        assert_eq!(st.state, JobState::Cancelled);
        for id in [&first.id, &low.id, &high.id] {
            assert_eq!(p.wait(id).await.unwrap().state, JobState::Succeeded);
        }
        let (l, h) = (
            p.status(&low.id).await.unwrap(),
            p.status(&high.id).await.unwrap(),
        );
        assert!(
            h.started_at_ms.unwrap() <= l.started_at_ms.unwrap(),
            "the high-priority job is admitted before the earlier low-priority one"
        );
        assert_eq!(
            p.wait(&cancelled.id).await.unwrap().state,
            JobState::Cancelled
        );
        (first.id, low.id, high.id, cancelled.id)
    });
    // A job accepted just before shutdown is re-run after a restart; finished ones are served.
    let pending = block_on(p.submit(request("sha256-1", 9, 0))).unwrap();
    p.shutdown();
    let p = start(dir.path(), Some(journal.path()), |_| {});
    block_on(async {
        for id in [&first, &low, &high] {
            assert_eq!(p.result(id).await.unwrap().proof.len(), 192);
        }
        assert_eq!(
            p.status(&cancelled).await.unwrap().state,
            JobState::Cancelled
        );
        let st = p.wait(&pending.id).await.unwrap();
        assert_eq!(st.state, JobState::Succeeded, "stored job re-ran: {st:?}");
    });
    p.shutdown();
}

#[test]
fn a_panicking_circuit_fails_its_job_and_the_pipeline_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    write_params(dir.path(), 1, 4);
    let p = start(dir.path(), None, |c| {
        c.pipeline.synthesis_workers = 1.into()
    });
    block_on(async {
        let mut r = request("sha256-1", 1, 0);
        r.kind = "panic".into();
        let bad = p.submit(r).await.unwrap();
        let st = p.wait(&bad.id).await.unwrap();
        assert_eq!(st.state, JobState::Failed);
        let err = st.error.unwrap();
        assert_eq!(err.code, "internal_error");
        assert!(
            err.message.contains("circuit assertion failed"),
            "{}",
            err.message
        );
        // The single synthesis thread survived the panic.
        let good = p.submit(request("sha256-1", 2, 0)).await.unwrap();
        assert_eq!(p.wait(&good.id).await.unwrap().state, JobState::Succeeded);
    });
    p.shutdown();
}

#[test]
fn the_final_check_gates_the_result() {
    let dir = tempfile::tempdir().unwrap();
    write_params(dir.path(), 1, 5);
    let p = start(dir.path(), None, |_| {});
    block_on(async {
        let mut ok = request("sha256-1", 1, 0);
        ok.kind = "checked-ok".into();
        let a = p.submit(ok).await.unwrap();
        assert_eq!(p.wait(&a.id).await.unwrap().state, JobState::Succeeded);
        assert_eq!(p.result(&a.id).await.unwrap().proof.len(), 192);

        let mut bad = request("sha256-1", 2, 0);
        bad.kind = "checked-reject".into();
        let b = p.submit(bad).await.unwrap();
        let st = p.wait(&b.id).await.unwrap();
        assert_eq!(st.state, JobState::Failed);
        let err = st.error.unwrap();
        assert_eq!(err.code, "final_check_failed");
        assert!(err.message.contains("proof valid: true"), "{}", err.message);
        assert!(matches!(
            p.result(&b.id).await,
            Err(ResultError::Unsuccessful(_))
        ));
    });
    p.shutdown();
}

#[test]
fn invalid_requests_are_rejected_before_acceptance() {
    let dir = tempfile::tempdir().unwrap();
    let p = start(dir.path(), None, |_| {});
    block_on(async {
        let e = p.submit(request("sha256-1", 1, 0)).await.unwrap_err();
        assert!(
            e.to_string().contains("proofline setup --circuit sha256-1"),
            "{e}"
        );
        let mut r = request("sha256-1", 1, 0);
        r.kind = "nope".into();
        assert!(p
            .submit(r)
            .await
            .unwrap_err()
            .to_string()
            .contains("unknown job kind"));
        assert!(p.list().await.is_empty());
    });
    p.shutdown();
}

/// Polls the status page until `pred` holds (at most 60 s).
fn page_until(p: &Pipeline, what: &str, pred: impl Fn(&StatusPage) -> bool) -> StatusPage {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let page = block_on(p.status_page());
        if pred(&page) {
            return page;
        }
        assert!(Instant::now() < deadline, "never saw {what}: {page:#?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_status_page_shows_where_each_partition_is() {
    let dir = tempfile::tempdir().unwrap();
    write_params(dir.path(), 1, 8);
    let mut cfg = Config::embedded_default().unwrap();
    cfg.pipeline.max_partitions_in_flight = 2.into();
    cfg.pipeline.synthesis_workers = 1.into();
    let gate = Arc::new(Gate::default());
    let mut reg = AdapterRegistry::new();
    reg.register(Arc::new(BuiltinAdapter::new(dir.path(), vec![])));
    reg.register(Arc::new(GatedAdapter {
        inner: BuiltinAdapter::new(dir.path(), vec![]),
        gate: gate.clone(),
    }));
    let p = Pipeline::start(PipelineOptions::cpu(
        &cfg.pipeline,
        reg,
        Arc::new(ParamsStore::new(false)),
    ))
    .unwrap();
    let gated = |seed| {
        let mut r = request("sha256-1", seed, 0);
        r.kind = "gated".into();
        r
    };
    // Both admitted jobs wait at the gate: whichever partition reaches the only synthesis
    // thread first holds it, the other waits for it (their parameters load in parallel, so
    // either may be first); the third job is not admitted (two partitions in flight at most).
    let a = block_on(p.submit(gated(1))).unwrap();
    let b = block_on(p.submit(gated(2))).unwrap();
    let c = block_on(p.submit(request("sha256-1", 3, 0))).unwrap();
    let page = page_until(&p, "both admitted partitions in synthesis", |page| {
        page.jobs_in_flight.len() == 3
            && page.jobs_in_flight[..2]
                .iter()
                .all(|j| j.partitions[0].stage == PartitionStage::Synthesis)
    });
    let ids: Vec<_> = page.jobs_in_flight.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(ids, [&a.id, &b.id, &c.id], "running first, oldest first");
    let queued = &page.jobs_in_flight[2];
    assert_eq!(queued.state, JobState::Queued);
    assert_eq!(queued.partitions[0].stage, PartitionStage::Queued);
    assert_eq!(queued.partitions[0].device, None);
    for j in &page.jobs_in_flight[..2] {
        assert_eq!(j.state, JobState::Running);
        assert_eq!(j.partitions[0].device.as_deref(), Some("host"));
    }
    assert_eq!((page.jobs.running, page.jobs.queued), (2, 1));
    assert_eq!(
        (page.partitions_in_flight, page.max_partitions_in_flight),
        (2, 2)
    );
    let synthesis = page.actors.iter().find(|a| a.actor == "synthesis").unwrap();
    // One synthesis worker, two partitions at the synthesis stage: one runs, the other waits
    // (for its synthesis permit at the stage scheduler, or in the synthesis mailbox).
    assert!(
        synthesis.running <= 1 && synthesis.threads == 1,
        "one partition synthesises at a time: {synthesis:?}"
    );
    assert_eq!(page.backend, "cpu");
    assert_eq!(page.devices.len(), 1);
    let dev = &page.devices[0];
    assert_eq!(dev.device, "host");
    assert!(dev.budget_bytes > 0);
    let params = &page.params;
    assert_eq!(params.len(), 1, "{params:?}");
    assert!(params[0].host_bytes > 0 && params[0].load_s.is_some_and(|s| s > 0.0));
    assert_eq!(dev.resident_bytes, params[0].host_bytes);
    // Time in the stage grows while the gate is shut.
    std::thread::sleep(Duration::from_millis(300));
    let later = block_on(p.status_page());
    assert!(later.jobs_in_flight[0].partitions[0].stage_s >= 0.3);

    gate.open();
    for id in [&a.id, &b.id, &c.id] {
        assert_eq!(block_on(p.wait(id)).unwrap().state, JobState::Succeeded);
    }
    let page = block_on(p.status_page());
    assert!(page.jobs_in_flight.is_empty());
    assert_eq!(page.jobs.succeeded_total, 3);
    assert_eq!(page.partitions_in_flight, 0);
    let synth = page.stages.iter().find(|s| s.stage == "synthesis").unwrap();
    assert!(synth.count >= 3 && synth.seconds_total > 0.0, "{synth:?}");
    assert!(page.uptime_s > 0.3);
    p.shutdown();
}
