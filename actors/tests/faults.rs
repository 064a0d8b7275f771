//! Faults, each injected through a test backend that implements the prover's backend trait
//! (nothing test-only in the production context): a stage that panics, a compute error, a job
//! cancelled while its compute stage holds a memory lease, and a store that refuses writes.
//! In every case the job ends with a clear code, nothing hangs, and the next job succeeds.

use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use bellperson::groth16;
use blstrs::{Bls12, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use proofline_actors::pipeline::host_device_with;
use proofline_actors::store::{
    Backlog, FinishOutcome, FinishedRecord, JobStore, Retention, StoreError,
};
use proofline_actors::{CpuEngine, JobState, JobStatus, Pipeline, PipelineOptions, StoreSpec};
use proofline_config::Config;
use proofline_groth16::{BackendError, CpuBackend, NttKind, ProverBackend, SparseScalars};
use proofline_jobs::builtin::{BuiltinAdapter, BuiltinCircuit};
use proofline_jobs::{AdapterRegistry, JobRequest, ParamsStore};
use rand::SeedableRng;

fn write_params(dir: &Path) {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(11);
    let c = BuiltinCircuit::Sha256 { blocks: 1 };
    let p =
        groth16::generate_random_parameters::<Bls12, _, _>(c.blank().unwrap(), &mut rng).unwrap();
    let f = std::fs::File::create(dir.join(c.params_file())).unwrap();
    p.write(std::io::BufWriter::new(f)).unwrap();
}

/// Which backend step misbehaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// The H polynomial (compute actor, H stage).
    HPoly,
    /// The sparse G1 MSMs (compute actor, second stage).
    SparseG1,
    /// The G2 MSM (CPU-MSM actor).
    SparseG2,
}

/// How it misbehaves, once.
enum Fault {
    Panic,
    Error,
    /// Signals that the step was entered, then waits for the go-ahead.
    Block(mpsc::Sender<()>, mpsc::Receiver<()>),
}

/// The CPU backend, with one fault armed at a time.
#[derive(Default)]
struct FaultyBackend {
    armed: Mutex<Option<(Step, Fault)>>,
    tripped: AtomicU32,
}

impl FaultyBackend {
    fn arm(&self, step: Step, fault: Fault) {
        *self.armed.lock().unwrap() = Some((step, fault));
    }

    fn trip(&self, step: Step) -> Result<(), BackendError> {
        let fault = {
            let mut armed = self.armed.lock().unwrap();
            match armed.as_ref() {
                Some((s, _)) if *s == step => armed.take().map(|(_, f)| f),
                _ => None,
            }
        };
        let Some(fault) = fault else { return Ok(()) };
        self.tripped.fetch_add(1, Ordering::SeqCst);
        match fault {
            Fault::Panic => panic!("injected panic in {step:?}"),
            Fault::Error => Err(BackendError::Device(format!(
                "injected failure in {step:?}"
            ))),
            Fault::Block(entered, go) => {
                let _ = entered.send(());
                let _ = go.recv_timeout(Duration::from_secs(60));
                Ok(())
            }
        }
    }
}

impl ProverBackend for FaultyBackend {
    fn name(&self) -> &str {
        "faulty-cpu"
    }
    fn ntt(&self, data: &mut [Scalar], kind: NttKind) -> Result<(), BackendError> {
        CpuBackend.ntt(data, kind)
    }
    fn h_poly(
        &self,
        a: &mut [Scalar],
        b: &mut [Scalar],
        c: &mut [Scalar],
    ) -> Result<(), BackendError> {
        self.trip(Step::HPoly)?;
        CpuBackend.h_poly(a, b, c)
    }
    fn msm_g1_dense(
        &self,
        bases: &[G1Affine],
        scalars: &[Scalar],
    ) -> Result<G1Projective, BackendError> {
        CpuBackend.msm_g1_dense(bases, scalars)
    }
    fn msm_g1_sparse(
        &self,
        bases: &[G1Affine],
        split: &SparseScalars,
        query: &'static str,
    ) -> Result<G1Projective, BackendError> {
        self.trip(Step::SparseG1)?;
        CpuBackend.msm_g1_sparse(bases, split, query)
    }
    fn msm_g2_sparse(
        &self,
        bases: &[G2Affine],
        split: &SparseScalars,
        query: &'static str,
    ) -> Result<G2Projective, BackendError> {
        self.trip(Step::SparseG2)?;
        CpuBackend.msm_g2_sparse(bases, split, query)
    }
}

/// One thread per pool, so a pool that lost its thread could not serve the next job.
fn start(params: &Path, backend: Arc<FaultyBackend>, store: StoreSpec) -> Pipeline {
    let mut cfg = Config::embedded_default().unwrap();
    cfg.pipeline.compute_slots = 1.into();
    cfg.pipeline.cpu_msm_workers = 1.into();
    cfg.pipeline.synthesis_workers = 1.into();
    cfg.pipeline.max_partitions_in_flight = 1.into();
    let mut reg = AdapterRegistry::new();
    reg.register(Arc::new(BuiltinAdapter::new(params, vec![])));
    let mut opts = PipelineOptions::cpu(&cfg.pipeline, reg, Arc::new(ParamsStore::new(false)))
        .with_store(store);
    let budget = opts.host_budget;
    opts.devices = vec![host_device_with(
        CpuEngine::with_backend(backend.clone()),
        1,
        budget,
    )];
    opts.cpu_backend = backend;
    Pipeline::start(opts).unwrap()
}

fn request(seed: u64) -> JobRequest {
    JobRequest {
        kind: "groth16".into(),
        circuit: Some("sha256-1".into()),
        input: serde_json::json!({ "seed": seed }),
        public_inputs: None,
        ..Default::default()
    }
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    futures::executor::block_on(f)
}

/// Waits for the allocator to have no lease outstanding; returns the last snapshot.
fn leases_returned(p: &Pipeline) -> proofline_actors::AllocatorSnapshot {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let s = block_on(p.memory()).remove(0);
        if (s.leased == 0 && s.leases == 0) || Instant::now() > deadline {
            return s;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_panic_in_any_stage_fails_that_job_and_the_pool_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    write_params(dir.path());
    let backend = Arc::new(FaultyBackend::default());
    let p = start(dir.path(), backend.clone(), StoreSpec::Memory);
    block_on(async {
        for (i, step) in [Step::HPoly, Step::SparseG1, Step::SparseG2]
            .into_iter()
            .enumerate()
        {
            backend.arm(step, Fault::Panic);
            let bad = p.submit(request(i as u64)).await.unwrap();
            let st = p.wait(&bad.id).await.unwrap();
            assert_eq!(st.state, JobState::Failed, "{step:?}");
            let err = st.error.unwrap();
            assert_eq!(err.code, "internal_error", "{step:?}: {err:?}");
            assert!(err.message.contains("injected panic"), "{}", err.message);
            assert_eq!(err.partition, Some(0));
            // The single thread of the pool that panicked serves the next job.
            let good = p.submit(request(100 + i as u64)).await.unwrap();
            assert_eq!(
                p.wait(&good.id).await.unwrap().state,
                JobState::Succeeded,
                "after a panic in {step:?}"
            );
        }
    });
    assert_eq!(backend.tripped.load(Ordering::SeqCst), 3);
    assert_eq!(leases_returned(&p).leased, 0);
    p.shutdown();
}

#[test]
fn an_injected_compute_error_fails_that_job_with_a_clear_code_and_the_next_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    write_params(dir.path());
    let backend = Arc::new(FaultyBackend::default());
    let p = start(dir.path(), backend.clone(), StoreSpec::Memory);
    block_on(async {
        backend.arm(Step::HPoly, Fault::Error);
        let bad = p.submit(request(1)).await.unwrap();
        let st = p.wait(&bad.id).await.unwrap();
        assert_eq!(st.state, JobState::Failed);
        let err = st.error.unwrap();
        assert_eq!(err.code, "backend_failed", "{err:?}");
        assert!(
            err.message.contains("injected failure in HPoly"),
            "{}",
            err.message
        );
        let good = p.submit(request(2)).await.unwrap();
        assert_eq!(p.wait(&good.id).await.unwrap().state, JobState::Succeeded);
        assert!(p.result(&good.id).await.is_ok());
    });
    p.shutdown();
}

#[test]
fn a_job_cancelled_in_its_compute_stage_gives_back_its_memory_lease() {
    let dir = tempfile::tempdir().unwrap();
    write_params(dir.path());
    let backend = Arc::new(FaultyBackend::default());
    let p = start(dir.path(), backend.clone(), StoreSpec::Memory);
    let (entered_tx, entered) = mpsc::channel();
    let (go, go_rx) = mpsc::channel();
    backend.arm(Step::HPoly, Fault::Block(entered_tx, go_rx));
    let job = block_on(p.submit(request(1))).unwrap();
    entered
        .recv_timeout(Duration::from_secs(120))
        .expect("the H stage started");
    // The H stage holds its lease while it computes.
    let during = block_on(p.memory()).remove(0);
    assert!(during.leased > 0 && during.leases == 1, "{during:?}");
    let st = block_on(p.cancel(&job.id)).unwrap();
    assert_eq!(st.state, JobState::Cancelled);
    go.send(()).unwrap();
    let after = leases_returned(&p);
    assert_eq!(
        (after.leased, after.leases, after.waiting),
        (0, 0, 0),
        "{after:?}"
    );
    // Nothing hangs: the next job runs through the same compute thread.
    let good = block_on(p.submit(request(2))).unwrap();
    assert_eq!(
        block_on(p.wait(&good.id)).unwrap().state,
        JobState::Succeeded
    );
    p.shutdown();
}

#[test]
fn jobs_survive_a_restart_of_the_pipeline_on_the_embedded_store() {
    let dir = tempfile::tempdir().unwrap();
    write_params(dir.path());
    let state = tempfile::tempdir().unwrap();
    let store = StoreSpec::Embedded {
        path: state.path().join("jobs.redb"),
    };
    let backend = Arc::new(FaultyBackend::default());
    // The first job blocks in H; a second waits behind it; then the pipeline stops.
    let (entered_tx, entered) = mpsc::channel();
    let (go, go_rx) = mpsc::channel::<()>();
    backend.arm(Step::HPoly, Fault::Block(entered_tx, go_rx));
    let p = start(dir.path(), backend.clone(), store.clone());
    let a = block_on(p.submit(request(1))).unwrap();
    let b = block_on(p.submit(request(2))).unwrap();
    entered.recv_timeout(Duration::from_secs(120)).unwrap();
    drop(go);
    p.shutdown();
    // A new pipeline over the same file runs both again under the same ids.
    let p = start(
        dir.path(),
        Arc::new(FaultyBackend::default()),
        store.clone(),
    );
    for id in [&a.id, &b.id] {
        assert_eq!(block_on(p.wait(id)).unwrap().state, JobState::Succeeded);
    }
    p.shutdown();
    // And a third start serves both results from the store without running anything.
    let p = start(dir.path(), Arc::new(FaultyBackend::default()), store);
    for id in [&a.id, &b.id] {
        assert_eq!(block_on(p.result(id)).unwrap().proof.len(), 192);
    }
    assert_eq!(
        block_on(p.counts()).running + block_on(p.counts()).queued,
        0
    );
    p.shutdown();
}

/// A store whose writes of submissions wait for a go-ahead (a 50 MB C1 output and its fsync,
/// stretched out).
struct SlowStore {
    entered: Mutex<mpsc::Sender<()>>,
    go: Mutex<mpsc::Receiver<()>>,
}

impl JobStore for SlowStore {
    fn location(&self) -> String {
        "slow".into()
    }
    fn accept(&self, _: &str, _: &mut JobRequest, _: &JobStatus) -> Result<(), StoreError> {
        let _ = self.entered.lock().unwrap().send(());
        let _ = self
            .go
            .lock()
            .unwrap()
            .recv_timeout(Duration::from_secs(60));
        Ok(())
    }
    fn finish(&self, _: &str, _: &FinishedRecord) -> Result<FinishOutcome, StoreError> {
        Ok(FinishOutcome::Recorded)
    }
    fn forget(&self, _: &str) -> Result<(), StoreError> {
        Ok(())
    }
    fn load(&self, _: &Retention) -> Result<Backlog, StoreError> {
        Ok(Backlog::default())
    }
    fn prune(&self, _: &Retention) -> Result<usize, StoreError> {
        Ok(0)
    }
}

#[test]
fn status_queries_do_not_wait_behind_a_slow_store_write() {
    let dir = tempfile::tempdir().unwrap();
    write_params(dir.path());
    let (entered_tx, entered) = mpsc::channel();
    let (go, go_rx) = mpsc::channel();
    let store = Arc::new(SlowStore {
        entered: Mutex::new(entered_tx),
        go: Mutex::new(go_rx),
    });
    let p = Arc::new(start(
        dir.path(),
        Arc::new(FaultyBackend::default()),
        StoreSpec::Custom(store),
    ));
    let submitter = {
        let p = p.clone();
        std::thread::spawn(move || block_on(p.submit(request(1))))
    };
    entered.recv_timeout(Duration::from_secs(60)).unwrap();
    // The write is in progress and held: the coordinator answers anyway.
    let (tx, rx) = mpsc::channel();
    {
        let p = p.clone();
        std::thread::spawn(move || {
            let r =
                block_on(async { (p.list().await.len(), p.counts().await, p.status("x").await) });
            let _ = tx.send(r);
        });
    }
    let (listed, counts, unknown) = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("queries answered while the write waits");
    assert_eq!((listed, counts.queued, unknown), (0, 0, None));
    go.send(()).unwrap();
    let accepted = submitter.join().unwrap().unwrap();
    assert_eq!(
        block_on(p.wait(&accepted.id)).unwrap().state,
        JobState::Succeeded
    );
}
