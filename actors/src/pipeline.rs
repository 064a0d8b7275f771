//! The embedding API: start the actor pipeline in-process, submit jobs, await them, shut down.
//!
//! ```no_run
//! use std::sync::Arc;
//! use proofline_actors::{Pipeline, PipelineOptions};
//! use proofline_config::Config;
//! use proofline_jobs::{builtin::BuiltinAdapter, AdapterRegistry, JobRequest, ParamsStore};
//!
//! # async fn run() -> anyhow::Result<()> {
//! let config = Config::embedded_default()?;
//! let mut registry = AdapterRegistry::new();
//! registry.register(Arc::new(BuiltinAdapter::new(config.params_dir(), vec![])));
//! let pipeline = Pipeline::start(PipelineOptions::cpu(&config.pipeline, registry,
//!     Arc::new(ParamsStore::new(false))))?;
//! let request: JobRequest = serde_json::from_str(
//!     r#"{"kind":"groth16","circuit":"sha256-2","input":{"seed":1}}"#)?;
//! let accepted = pipeline.submit(request).await?;
//! let status = pipeline.wait(&accepted.id).await?;
//! let result = pipeline.result(&status.id).await?;
//! println!("{} proof bytes", result.proof.len());
//! pipeline.shutdown();
//! # Ok(()) }
//! ```
//!
//! The pipeline runs on its own thread with its own actix system; every method of [`Pipeline`]
//! is a plain future usable from any executor (tokio, actix, or `futures::executor`).
//!
//! Jobs are kept where [`PipelineOptions::persistence`] says ([`StoreSpec`]): in memory, in an
//! embedded database file, or in a PostgreSQL queue shared with other daemons. A submission is
//! written to the store before it is acknowledged, on a thread of its own, so the coordinator
//! (and every status query) never waits for that write.

use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use actix::prelude::*;
use proofline_config::PipelineConfig;
use proofline_groth16::{CpuBackend, ProverBackend};
use proofline_jobs::{AdapterRegistry, JobError, JobRequest, ParamsStore};
use rand::RngCore;
use tokio::sync::oneshot;

use crate::allocator::{HostMemory, MemoryDevice, VramAllocator};
use crate::coordinator::{JobCoordinator, Limits};
use crate::job::{now_ms, queued_status, JobFailure, JobResult, JobState, JobStatus};
use crate::messages::*;
use crate::partition::Stages;
use crate::store::claimer::{self, ClaimerCommand};
use crate::store::embedded::EmbeddedStore;
use crate::store::shared::SharedQueue;
use crate::store::writer::StoreWriter;
use crate::store::{
    valid_id, Backlog, FinishedRecord, JobStore, MemoryStore, Retention, StoreError, StoreSpec,
};
use crate::telemetry::Mailbox;
use crate::workers::{ComputeActor, CpuMsmActor, ParamsLoader, SynthesisActor};

/// Everything the pipeline is started with.
pub struct PipelineOptions {
    /// Pool sizes and limits.
    pub config: PipelineConfig,
    /// Job kinds.
    pub registry: AdapterRegistry,
    /// Resident parameters.
    pub store: Arc<ParamsStore>,
    /// Backend of the compute actors.
    pub backend: Arc<dyn ProverBackend>,
    /// Backend of the CPU-MSM actors (G2 MSM).
    pub cpu_backend: Arc<dyn ProverBackend>,
    /// The compute device's memory, owned by the allocator actor.
    pub memory: Box<dyn MemoryDevice>,
    /// Allocator budget in bytes.
    pub memory_budget: u64,
    /// Where jobs are kept.
    pub persistence: StoreSpec,
    /// Finished jobs older than this are pruned from the store (`None`: by count only,
    /// `config.retain_finished_jobs`).
    pub retain_finished_for: Option<Duration>,
}

impl PipelineOptions {
    /// The CPU backend with a host-memory budget of `config.memory_budget_bytes` (0: 90% of the
    /// memory available at start).
    pub fn cpu(
        config: &PipelineConfig,
        registry: AdapterRegistry,
        store: Arc<ParamsStore>,
    ) -> Self {
        let memory_budget = match config.memory_budget_bytes {
            0 => host_available_bytes() / 10 * 9,
            b => b,
        };
        PipelineOptions {
            config: config.clone(),
            registry,
            store,
            backend: Arc::new(CpuBackend),
            cpu_backend: Arc::new(CpuBackend),
            memory: Box::new(HostMemory),
            memory_budget,
            persistence: StoreSpec::Memory,
            retain_finished_for: None,
        }
    }

    /// Keeps jobs where `spec` says.
    pub fn with_store(mut self, spec: StoreSpec) -> Self {
        self.persistence = spec;
        self
    }

    /// Prunes finished jobs older than `age` from the store.
    pub fn with_retention_age(mut self, age: Option<Duration>) -> Self {
        self.retain_finished_for = age;
        self
    }
}

/// Host memory available now: `MemAvailable` of /proc/meminfo; where that is missing or zero
/// (some VMs grow their memory on demand), half of `MemTotal`; where both are unknown, 8 GiB.
pub fn host_available_bytes() -> u64 {
    let info = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let field = |key: &str| {
        info.lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<u64>().ok())
            .map(|kb| kb * 1024)
            .filter(|b| *b > 0)
    };
    field("MemAvailable:")
        .or_else(|| field("MemTotal:").map(|t| t / 2))
        .unwrap_or(8 << 30)
}

/// Errors of starting the pipeline.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    /// The actor thread could not start.
    #[error("cannot start the pipeline thread: {0}")]
    Thread(#[from] std::io::Error),
    /// The job store could not be opened or read.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The actor system stopped during start-up.
    #[error("the actor system stopped during start-up")]
    Startup,
}

/// Why a submission was not accepted.
#[derive(Debug, thiserror::Error)]
pub enum SubmitRejected {
    /// The request is invalid or cannot be served (parameters missing): the client's problem.
    #[error(transparent)]
    Invalid(#[from] JobError),
    /// The coordinator refused it (queue full).
    #[error(transparent)]
    Refused(#[from] SubmitError),
    /// The pipeline is shutting down.
    #[error("the pipeline is shutting down")]
    ShuttingDown,
}

/// Why a result is not available.
#[derive(Debug, thiserror::Error)]
pub enum ResultError {
    /// No such job.
    #[error("no job with id '{0}'")]
    NotFound(String),
    /// Not finished yet.
    #[error("job is {:?}, not finished", .0.state)]
    NotReady(Box<JobStatus>),
    /// Failed or cancelled.
    #[error("job {:?}: {}", .0.state, .0.error.as_ref().map(|e| e.message.as_str()).unwrap_or(""))]
    Unsuccessful(Box<JobStatus>),
    /// The pipeline is shutting down.
    #[error("the pipeline is shutting down")]
    ShuttingDown,
}

/// What draining did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DrainReport {
    /// Every running job finished within the timeout.
    pub drained: bool,
    /// Jobs left unfinished (they stay in the store and run after the next start).
    pub unfinished: usize,
}

/// The claimer of a daemon attached to the shared queue.
struct SharedPart {
    queue: Arc<SharedQueue>,
    commands: mpsc::Sender<ClaimerCommand>,
    thread: Option<JoinHandle<()>>,
}

/// Handle to a running pipeline.
pub struct Pipeline {
    coordinator: Mailbox<JobCoordinator>,
    allocator: Mailbox<VramAllocator>,
    registry: Arc<AdapterRegistry>,
    backend_name: String,
    store: Arc<dyn JobStore>,
    shared: Option<SharedPart>,
    retain: usize,
    system: System,
    thread: Option<JoinHandle<()>>,
}

/// Runs a blocking call on a thread of its own; `None` if the thread could not run it.
async fn blocking<T: Send + 'static>(
    name: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    let (tx, rx) = oneshot::channel();
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            let _ = tx.send(f());
        })
        .ok()?;
    rx.await.ok()
}

/// Runs a future to completion on a thread of its own, waiting at most `timeout` for it.
fn wait_at_most<F>(fut: F, timeout: Duration) -> Option<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("proofline-wait".into())
        .spawn(move || {
            let _ = tx.send(futures::executor::block_on(fut));
        })
        .ok()?;
    rx.recv_timeout(timeout).ok()
}

/// A store refusal as the API reports it.
fn store_refusal(id: &str, e: StoreError) -> SubmitRejected {
    match e {
        StoreError::Duplicate(id) => SubmitError::Duplicate(id).into(),
        other => {
            tracing::error!(job = %id, error = %other, "cannot store the job; refusing it");
            SubmitError::Journal {
                id: id.to_string(),
                message: other.to_string(),
            }
            .into()
        }
    }
}

/// How often a status wait polls the shared queue.
const SHARED_POLL: Duration = Duration::from_millis(250);

/// A fresh job id: 16 random hex digits.
pub fn new_job_id() -> JobId {
    format!("{:016x}", rand::rngs::OsRng.next_u64())
}

impl Pipeline {
    /// Starts the actors on a dedicated thread and restores the store's jobs.
    pub fn start(opts: PipelineOptions) -> Result<Self, PipelineError> {
        let retention = Retention {
            keep: opts.config.retain_finished_jobs,
            max_age: opts.retain_finished_for,
        };
        let (store, queue): (Arc<dyn JobStore>, Option<Arc<SharedQueue>>) =
            match opts.persistence.clone() {
                StoreSpec::Memory => (Arc::new(MemoryStore), None),
                StoreSpec::Embedded { path } => (Arc::new(EmbeddedStore::open(path)?), None),
                StoreSpec::Custom(store) => (store, None),
                StoreSpec::Shared(spec) => {
                    let q = Arc::new(SharedQueue::connect(spec)?);
                    (q.clone(), Some(q))
                }
            };
        let backlog = store.load(&retention)?;
        tracing::info!(
            store = %store.location(),
            pending = backlog.pending.len(),
            finished = backlog.finished.len(),
            "job store opened"
        );
        let writer_store = store.clone();
        let registry = Arc::new(opts.registry);
        let backend_name = opts.backend.name().to_string();
        tracing::info!(
            backend = %backend_name,
            device = %opts.memory.label(),
            budget_bytes = opts.memory_budget,
            "memory budget of the allocator"
        );
        let (tx, rx) = std::sync::mpsc::channel();
        let cfg = opts.config;
        let (params_store, backend, cpu_backend, memory, budget) = (
            opts.store,
            opts.backend,
            opts.cpu_backend,
            opts.memory,
            opts.memory_budget,
        );
        let thread = std::thread::Builder::new()
            .name("proofline-actors".into())
            .spawn(move || {
                let sys = System::new();
                let addrs = sys.block_on(async move {
                    let params = Mailbox::new(SyncArbiter::start(1, move || {
                        ParamsLoader::new(params_store.clone())
                    }));
                    let synthesis = Mailbox::new(SyncArbiter::start(
                        cfg.synthesis_workers,
                        SynthesisActor::default,
                    ));
                    let cpu_msm =
                        Mailbox::new(SyncArbiter::start(cfg.cpu_msm_workers, move || {
                            CpuMsmActor::new(cpu_backend.clone())
                        }));
                    let compute = Mailbox::new(SyncArbiter::start(cfg.compute_slots, move || {
                        ComputeActor::new(backend.clone())
                    }));
                    let allocator = Mailbox::new(VramAllocator::new(memory, budget).start());
                    let stages = Stages {
                        params,
                        synthesis,
                        cpu_msm,
                        allocator: allocator.clone(),
                        compute,
                    };
                    let limits = Limits {
                        max_in_flight: cfg.max_partitions_in_flight,
                        max_queued: cfg.max_queued_jobs,
                        retain_finished: cfg.retain_finished_jobs,
                    };
                    let writer = Mailbox::new(SyncArbiter::start(1, move || {
                        StoreWriter::new(writer_store.clone(), retention)
                    }));
                    let coordinator =
                        Mailbox::new(JobCoordinator::new(stages, limits, writer).start());
                    (System::current(), coordinator, allocator)
                });
                if tx.send(addrs).is_ok() {
                    let _ = sys.run();
                }
            })?;
        let (system, coordinator, allocator) = rx.recv().map_err(|_| PipelineError::Startup)?;
        let shared = match queue {
            Some(queue) => {
                let (tx, rx) = mpsc::channel();
                let (q, c, r) = (queue.clone(), coordinator.clone(), registry.clone());
                let thread = std::thread::Builder::new()
                    .name("proofline-claimer".into())
                    .spawn(move || claimer::run(q, c, r, rx))?;
                Some(SharedPart {
                    queue,
                    commands: tx,
                    thread: Some(thread),
                })
            }
            None => None,
        };
        let pipeline = Pipeline {
            coordinator,
            allocator,
            registry,
            backend_name,
            store,
            shared,
            retain: retention.keep,
            system,
            thread: Some(thread),
        };
        pipeline.restore(backlog);
        Ok(pipeline)
    }

    /// Serves the stored outcomes again and re-runs the stored jobs that never finished.
    fn restore(&self, backlog: Backlog) {
        for rec in backlog.finished {
            self.coordinator.do_send(RestoreFinished(rec));
        }
        for (id, request) in backlog.pending {
            match self.registry.plan(&request) {
                Ok(plan) => {
                    tracing::info!(job = %id, "re-running a stored job after a restart");
                    self.coordinator.do_send(SubmitPlanned {
                        id,
                        request,
                        plan,
                        admission: Admission::Restored,
                    });
                }
                Err(e) => {
                    // Visible, not dropped: the job fails with the planning error.
                    tracing::error!(job = %id, error = %e, "a stored job can no longer be planned; it fails");
                    let mut status = queued_status(
                        &id,
                        &request.kind,
                        request.circuit.as_deref().unwrap_or(&request.kind),
                        request.priority,
                        0,
                    );
                    status.state = JobState::Failed;
                    status.finished_at_ms = Some(now_ms());
                    status.error = Some(JobFailure {
                        code: e.code().to_string(),
                        message: format!("after a restart: {e}"),
                        partition: None,
                    });
                    let record = FinishedRecord {
                        status,
                        result: None,
                    };
                    if let Err(e) = self.store.finish(&id, &record) {
                        tracing::error!(job = %id, error = %e, "cannot record the failure");
                    }
                    self.coordinator.do_send(RestoreFinished(record));
                }
            }
        }
    }

    /// Where jobs are kept (a file, a database, or "memory").
    pub fn store_location(&self) -> String {
        self.store.location()
    }

    /// The shared queue, when this pipeline takes its jobs from one.
    pub fn shared_queue(&self) -> Option<&Arc<SharedQueue>> {
        self.shared.as_ref().map(|s| &s.queue)
    }

    /// The compute backend's name.
    pub fn backend_name(&self) -> &str {
        &self.backend_name
    }

    /// The job kinds and circuits this pipeline serves.
    pub fn registry(&self) -> &AdapterRegistry {
        &self.registry
    }

    /// Validates and plans `request` (on a worker thread: parsing a C1 output takes a while),
    /// then hands it to the coordinator. Returns the accepted job's status.
    pub async fn submit(&self, request: JobRequest) -> Result<JobStatus, SubmitRejected> {
        self.submit_with_id(new_job_id(), request).await
    }

    /// As [`Pipeline::submit`] with a caller-chosen id (letters, digits, '-').
    pub async fn submit_with_id(
        &self,
        id: JobId,
        request: JobRequest,
    ) -> Result<JobStatus, SubmitRejected> {
        if !valid_id(&id) {
            return Err(JobError::field("id", "letters, digits and '-' only").into());
        }
        let registry = self.registry.clone();
        let (tx, rx) = oneshot::channel();
        std::thread::Builder::new()
            .name("proofline-plan".into())
            .spawn(move || {
                let r = registry.plan(&request).map(|plan| (request, plan));
                let _ = tx.send(r);
            })
            .map_err(|e| JobError::Internal(format!("cannot start planning thread: {e}")))?;
        let (request, plan) = rx.await.map_err(|_| SubmitRejected::ShuttingDown)??;
        let status = queued_status(
            &id,
            &request.kind,
            &plan.label,
            request.priority,
            plan.partitions.len(),
        );
        if let Some(shared) = &self.shared {
            // Into the shared queue; whichever daemon claims it plans and runs it.
            drop(plan);
            let (queue, sid, st) = (shared.queue.clone(), id.clone(), status.clone());
            blocking("proofline-store", move || {
                let mut request = request;
                queue.accept(&sid, &mut request, &st)
            })
            .await
            .ok_or(SubmitRejected::ShuttingDown)?
            .map_err(|e| store_refusal(&id, e))?;
            tracing::info!(job = %id, "job queued in the shared queue");
            return Ok(status);
        }
        self.coordinator
            .send(Reserve(id.clone()))
            .await
            .map_err(|_| SubmitRejected::ShuttingDown)??;
        // The write (tens of MB for a C1 output, then an fsync) on a thread of its own.
        let (store, sid) = (self.store.clone(), id.clone());
        let stored = blocking("proofline-store", move || {
            let mut request = request;
            let r = store.accept(&sid, &mut request, &status);
            (request, r)
        })
        .await;
        let request = match stored {
            Some((request, Ok(()))) => request,
            Some((_, Err(e))) => {
                self.coordinator.do_send(Unreserve(id.clone()));
                return Err(store_refusal(&id, e));
            }
            None => {
                self.coordinator.do_send(Unreserve(id.clone()));
                return Err(SubmitRejected::ShuttingDown);
            }
        };
        let r = self
            .coordinator
            .send(SubmitPlanned {
                id: id.clone(),
                request,
                plan,
                admission: Admission::Reserved,
            })
            .await;
        match r {
            Ok(r) => r.map_err(SubmitRejected::from),
            Err(_) => {
                // Refused after all: keep the promise that a refused job is not kept.
                let _ = self.store.forget(&id);
                Err(SubmitRejected::ShuttingDown)
            }
        }
    }

    /// The local coordinator's view of a job that is still unfinished here.
    async fn local_live(&self, id: &str) -> Option<JobStatus> {
        self.ask(GetStatus(id.to_string()))
            .await
            .flatten()
            .filter(|s| !s.state.is_terminal())
    }

    async fn ask<M>(&self, msg: M) -> Option<M::Result>
    where
        M: Message + Send + 'static,
        M::Result: Send,
        JobCoordinator: Handler<M>,
    {
        self.coordinator.send(msg).await.ok()
    }

    /// Runs a shared-queue query on a thread of its own.
    async fn queue_query<T: Send + 'static>(
        &self,
        f: impl FnOnce(&SharedQueue) -> Result<T, StoreError> + Send + 'static,
    ) -> Option<T> {
        let queue = self.shared.as_ref()?.queue.clone();
        match blocking("proofline-query", move || f(&queue)).await? {
            Ok(v) => Some(v),
            Err(e) => {
                tracing::warn!(error = %e, "shared queue query failed");
                None
            }
        }
    }

    /// Status of a job (on a shared queue: from whichever daemon runs it).
    pub async fn status(&self, id: &str) -> Option<JobStatus> {
        if self.shared.is_some() {
            if let Some(s) = self.local_live(id).await {
                return Some(s);
            }
            let sid = id.to_string();
            return self.queue_query(move |q| q.status(&sid)).await.flatten();
        }
        self.ask(GetStatus(id.to_string())).await.flatten()
    }

    /// All retained jobs, newest first.
    pub async fn list(&self) -> Vec<JobStatus> {
        let local = self.ask(ListJobs).await.unwrap_or_default();
        if self.shared.is_none() {
            return local;
        }
        let retain = self.retain;
        let mut all = self
            .queue_query(move |q| q.list(retain))
            .await
            .unwrap_or_default();
        // Live progress of the jobs running here.
        for s in local.into_iter().filter(|s| !s.state.is_terminal()) {
            if let Some(e) = all.iter_mut().find(|e| e.id == s.id) {
                *e = s;
            }
        }
        all
    }

    /// Cancels a job; returns its status (unchanged when already finished).
    pub async fn cancel(&self, id: &str) -> Option<JobStatus> {
        if self.shared.is_some() && self.local_live(id).await.is_none() {
            let sid = id.to_string();
            return self.queue_query(move |q| q.cancel(&sid)).await.flatten();
        }
        self.ask(CancelJob(id.to_string())).await.flatten()
    }

    /// Waits until the job is finished and returns its final status.
    pub async fn wait(&self, id: &str) -> Result<JobStatus, ResultError> {
        if self.shared.is_none() {
            return match self.ask(AwaitJob(id.to_string())).await {
                None => Err(ResultError::ShuttingDown),
                Some(None) => Err(ResultError::NotFound(id.to_string())),
                Some(Some(s)) => Ok(s),
            };
        }
        loop {
            if self.local_live(id).await.is_some() {
                // Running here: the coordinator says when (unless the claim is lost).
                if let Some(Some(s)) = self.ask(AwaitJob(id.to_string())).await {
                    return Ok(s);
                }
            }
            let sid = id.to_string();
            let s = self
                .queue_query(move |q| {
                    let s = q.status(&sid)?;
                    if s.as_ref().is_some_and(|s| !s.state.is_terminal()) {
                        std::thread::sleep(SHARED_POLL);
                    }
                    Ok(s)
                })
                .await
                .ok_or(ResultError::ShuttingDown)?;
            match s {
                None => return Err(ResultError::NotFound(id.to_string())),
                Some(s) if s.state.is_terminal() => return Ok(s),
                Some(_) => {}
            }
        }
    }

    /// The result of a succeeded job.
    pub async fn result(&self, id: &str) -> Result<Arc<JobResult>, ResultError> {
        let found = if self.shared.is_some() {
            let sid = id.to_string();
            self.queue_query(move |q| q.result(&sid))
                .await
                .map(|r| r.map(|(s, r)| (s, r.map(Arc::new))))
        } else {
            self.ask(GetResult(id.to_string())).await
        };
        match found {
            None => Err(ResultError::ShuttingDown),
            Some(None) => Err(ResultError::NotFound(id.to_string())),
            Some(Some((status, result))) => match (status.state, result) {
                (JobState::Succeeded, Some(r)) => Ok(r),
                (s, _) if s.is_terminal() => Err(ResultError::Unsuccessful(Box::new(status))),
                _ => Err(ResultError::NotReady(Box::new(status))),
            },
        }
    }

    /// Job counts.
    pub async fn counts(&self) -> PipelineCounts {
        self.ask(Counts).await.unwrap_or_default()
    }

    /// The allocator's state.
    pub async fn memory(&self) -> Option<AllocatorSnapshot> {
        self.allocator.send(Snapshot).await.ok()
    }

    /// Takes no new job, finishes the running ones within `timeout`, and leaves the rest in
    /// the store for the next start (on a shared queue: gives their claims back, so another
    /// daemon takes them at once). Call [`Pipeline::shutdown`] afterwards.
    pub fn drain(&self, timeout: Duration) -> DrainReport {
        if let Some(s) = &self.shared {
            let _ = s.commands.send(ClaimerCommand::StopClaiming);
        }
        let outcome = wait_at_most(self.coordinator.send(Drain), timeout).and_then(Result::ok);
        if let Some(s) = &self.shared {
            if let Err(e) = s.queue.release_all() {
                tracing::warn!(error = %e, "cannot give claims back; they expire");
            }
        }
        let report = match outcome {
            Some(unfinished) => DrainReport {
                drained: true,
                unfinished,
            },
            None => {
                let c = futures::executor::block_on(self.counts());
                DrainReport {
                    drained: false,
                    unfinished: c.queued + c.running,
                }
            }
        };
        tracing::info!(
            drained = report.drained,
            unfinished = report.unfinished,
            store = %self.store.location(),
            "drained: unfinished jobs stay in the store for the next start"
        );
        report
    }

    /// Stops the actors and joins the pipeline thread. Unfinished jobs stay in the store.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        // Outcomes already sent to the store writer are written before the actors stop.
        if wait_at_most(
            self.coordinator.send(FlushOutcomes),
            Duration::from_secs(30),
        )
        .is_none()
        {
            tracing::warn!("outcomes still being written at the stop; their jobs run again after the next start");
        }
        if let Some(s) = &mut self.shared {
            let _ = s.commands.send(ClaimerCommand::Stop);
            if let Some(t) = s.thread.take() {
                let _ = t.join();
            }
        }
        self.system.stop();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        // The store writer's thread ends once the coordinator is gone; wait (briefly) until it
        // let go of the store, so that the store file can be opened again at once.
        let own = 1 + usize::from(self.shared.is_some());
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while Arc::strong_count(&self.store) > own && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Pipeline {
    fn drop(&mut self) {
        self.stop();
    }
}
