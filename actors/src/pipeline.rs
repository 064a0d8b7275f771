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
use std::time::{Duration, Instant};

use actix::prelude::*;
use proofline_config::{PipelineConfig, PoolSizes};
use proofline_groth16::{CpuBackend, ProverBackend};
use proofline_jobs::{
    request_digest, AdapterRegistry, ConstraintsStore, JobError, JobPlan, JobRequest, ParamsSpec,
    ParamsStore, SynthesisMode,
};
use proofline_wire::{DeviceStatus, GpuFigures, ResidentParams, StatusPage};
use rand::RngCore;
use tokio::sync::oneshot;

use crate::allocator::{HostMemory, MemoryDevice};
use crate::compute::{ComputeEngine, CpuEngine, CpuSizing};
use crate::coordinator::{JobCoordinator, Limits};
use crate::devices::{ensure_resident, start_devices, DeviceSetup};
use crate::idempotency::valid_key;
use crate::job::{now_ms, queued_status, JobFailure, JobResult, JobState, JobStatus, StageTimings};
use crate::messages::*;
use crate::partition::Stages;
use crate::scheduler::StageScheduler;
use crate::store::claimer::{self, ClaimerCommand};
use crate::store::embedded::EmbeddedStore;
use crate::store::shared::SharedQueue;
use crate::store::writer::StoreWriter;
use crate::store::{
    valid_id, Backlog, FinishedRecord, JobStore, MemoryStore, Retention, StoreError, StoreSpec,
};
use crate::telemetry::{self, actor, ActorStats, GpuProbe, Mailbox, Secs};
use crate::workers::{CpuMsmActor, ParamsLoader, SynthesisActor};

/// Everything the pipeline is started with.
pub struct PipelineOptions {
    /// Queue limits.
    pub config: PipelineConfig,
    /// Pool sizes, every "auto" resolved.
    pub sizes: PoolSizes,
    /// Host memory for the partitions in flight, bytes.
    pub host_budget: u64,
    /// Job kinds.
    pub registry: AdapterRegistry,
    /// Resident parameters.
    pub store: Arc<ParamsStore>,
    /// Recorded constraint systems of the synthesis actors.
    pub constraints: Arc<ConstraintsStore>,
    /// Backend of the CPU-MSM actors (G2 MSM).
    pub cpu_backend: Arc<dyn ProverBackend>,
    /// The compute devices: each with its allocator's memory and budget and one engine per
    /// compute slot.
    pub devices: Vec<DeviceSetup>,
    /// Where jobs are kept.
    pub persistence: StoreSpec,
    /// Finished jobs older than this are pruned from the store (`None`: by count only,
    /// `config.retain_finished_jobs`).
    pub retain_finished_for: Option<Duration>,
    /// What the status page says about this build.
    pub build: BuildInfo,
    /// The GPUs' own readings (NVML) for the status page and `/metrics`, where available.
    pub gpu_probe: Option<Arc<dyn GpuProbe>>,
}

/// Version and source commit, as the status page reports them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildInfo {
    /// Version.
    pub version: String,
    /// Source commit, "unknown" when not known.
    pub commit: String,
}

impl Default for BuildInfo {
    /// This crate's version; the commit is filled in by whoever knows it (proofline-runtime).
    fn default() -> Self {
        BuildInfo {
            version: env!("CARGO_PKG_VERSION").to_string(),
            commit: "unknown".to_string(),
        }
    }
}

impl PipelineOptions {
    /// The CPU backend: one "host" device with the configured compute slots (CPU engines) and
    /// the host memory budget (`"auto"`: 90% of the memory available at start), and synthesis
    /// as `config.synthesis_mode` says.
    pub fn cpu(
        config: &PipelineConfig,
        registry: AdapterRegistry,
        store: Arc<ParamsStore>,
    ) -> Self {
        let sizes = config.pool_sizes(cpu_cores(), &[]);
        let host_budget = host_budget(config);
        let mode = match config.synthesis_mode {
            proofline_config::SynthesisMode::Precompiled => SynthesisMode::Precompiled,
            proofline_config::SynthesisMode::Plain => SynthesisMode::Plain,
        };
        let constraints_dir = (!config.constraints_dir.is_empty())
            .then(|| proofline_config::expand_home(&config.constraints_dir));
        PipelineOptions {
            config: config.clone(),
            sizes,
            host_budget,
            registry,
            store,
            constraints: Arc::new(ConstraintsStore::new(mode, constraints_dir)),
            cpu_backend: Arc::new(CpuBackend),
            devices: vec![host_device(sizes.compute_slots, host_budget)],
            persistence: StoreSpec::Memory,
            retain_finished_for: None,
            build: BuildInfo::default(),
            gpu_probe: None,
        }
    }

    /// Computes on `devices` (GPUs) instead, with pool sizes `sizes`.
    pub fn with_devices(mut self, devices: Vec<DeviceSetup>, sizes: PoolSizes) -> Self {
        self.devices = devices;
        self.sizes = sizes;
        self
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

/// The host as a compute device: `slots` CPU engines over host memory.
pub fn host_device(slots: usize, budget: u64) -> DeviceSetup {
    host_device_with(CpuEngine::default(), slots, budget)
}

/// The host as a compute device whose `slots` compute with `engine`'s backend.
pub fn host_device_with(engine: CpuEngine, slots: usize, budget: u64) -> DeviceSetup {
    DeviceSetup {
        memory: Box::new(HostMemory),
        budget,
        engines: (0..slots.max(1))
            .map(|_| Box::new(engine.clone()) as Box<dyn ComputeEngine>)
            .collect(),
        sizing: Arc::new(CpuSizing),
    }
}

/// CPU cores available to the process.
pub fn cpu_cores() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// The configured host memory budget (`"auto"`: 90% of the memory available now).
pub fn host_budget(config: &PipelineConfig) -> u64 {
    config
        .host_memory_budget
        .or_else(|| host_available_bytes() / 10 * 9)
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
    stages: Stages,
    registry: Arc<AdapterRegistry>,
    backend_name: String,
    params: Arc<ParamsStore>,
    build: BuildInfo,
    gpu_probe: Option<Arc<dyn GpuProbe>>,
    started: Instant,
    store: Arc<dyn JobStore>,
    shared: Option<SharedPart>,
    retain: usize,
    system: System,
    thread: Option<JoinHandle<()>>,
}

/// Preloads parameter sets into a running pipeline (cloneable, usable from any thread).
#[derive(Clone)]
pub struct Preloader {
    params: Mailbox<ParamsLoader>,
    devices: Arc<Vec<crate::devices::DeviceStages>>,
}

impl Preloader {
    /// Loads a parameter set and makes it resident on every device, its bases in device memory
    /// where they fit the budget next to the sets in use, else streamed. Returns where it is:
    /// `(device, residency)`; the host keeps parameters in the parameter store, not on a
    /// device, and is not listed.
    pub async fn preload(&self, spec: ParamsSpec) -> Result<Vec<(String, Residency)>, StageError> {
        let key = spec.id.clone();
        let pk = self.params.send(LoadParams { spec }).await??;
        let mut out = Vec::new();
        for d in self.devices.iter() {
            let mut t = StageTimings::default();
            if let Some(r) = ensure_resident(d, &key, "preload", &pk, &mut t).await? {
                tracing::info!(params = %key, device = %d.label, residency = ?r.residency(), secs = t.params_s, "preloaded");
                out.push((d.label.clone(), r.residency()));
            }
        }
        Ok(out)
    }
}

/// Longest client-chosen job id.
pub const MAX_ID_LEN: usize = 64;

/// Whether a request is named by the client (job id or idempotency key), so that a repeat of it
/// is recognised.
fn named(request: &JobRequest) -> bool {
    request.id.is_some() || request.idempotency_key.is_some()
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

/// Runs request-path work too heavy for the caller's executor (hashing or parsing a large
/// document) on a thread of its own.
async fn on_worker<T: Send + 'static>(
    name: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, SubmitRejected> {
    blocking(name, f).await.ok_or(SubmitRejected::ShuttingDown)
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
        StoreError::Duplicate(id) => SubmitError::Conflict {
            id,
            reason: "the job id is in use".into(),
        }
        .into(),
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

/// The answer to a submission that repeats a retained job.
fn existing(status: JobStatus) -> Submitted {
    Submitted {
        status,
        outcome: SubmitOutcome::Existing,
    }
}

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
        let backend_name = opts
            .devices
            .iter()
            .map(|d| d.label())
            .map(|l| if l == "host" { "cpu".to_string() } else { l })
            .collect::<Vec<_>>()
            .join(",");
        // The status page and /metrics list actors in the order they were first seen: pipeline
        // order.
        for name in [
            actor::COORDINATOR,
            actor::PARAMS,
            actor::SYNTHESIS,
            actor::ALLOCATOR,
            actor::COMPUTE,
            actor::CPU_MSM,
            actor::SCHEDULER,
            actor::STORE,
        ] {
            ActorStats::of(name);
        }
        let (build, gpu_probe, page_store) = (opts.build, opts.gpu_probe, opts.store.clone());
        let (tx, rx) = std::sync::mpsc::channel();
        let (cfg, sizes, host_budget) = (opts.config, opts.sizes, opts.host_budget);
        let (params_store, cpu_backend, devices) = (opts.store, opts.cpu_backend, opts.devices);
        let constraints = opts.constraints;
        tracing::info!(?sizes, host_budget_bytes = host_budget, backend = %backend_name, "pipeline pools");
        let thread = std::thread::Builder::new()
            .name("proofline-actors".into())
            .spawn(move || {
                let sys = System::new();
                let addrs = sys.block_on(async move {
                    // One loader thread per partition that can be in flight: a partition whose
                    // parameters are resident, or small (a WinningPoSt's), never waits behind
                    // another file's first load (a 32 GiB C2's takes minutes); partitions of one
                    // file wait for its single load in the store.
                    let loaders =
                        (sizes.max_partitions_in_flight + cfg.priority_reserve_partitions).max(1);
                    let params = Mailbox::pool(
                        SyncArbiter::start(loaders, move || {
                            ParamsLoader::new(params_store.clone())
                        }),
                        loaders,
                    );
                    let synthesis = Mailbox::pool(
                        SyncArbiter::start(sizes.synthesis_workers, move || {
                            SynthesisActor::new(constraints.clone())
                        }),
                        sizes.synthesis_workers,
                    );
                    let cpu_msm = Mailbox::pool(
                        SyncArbiter::start(sizes.cpu_msm_workers, move || {
                            CpuMsmActor::new(cpu_backend.clone())
                        }),
                        sizes.cpu_msm_workers,
                    );
                    // Compute permits: one per compute slot of every device.
                    let all_slots: usize = devices.iter().map(|d| d.engines.len().max(1)).sum();
                    let scheduler = Mailbox::new(
                        StageScheduler::new(sizes.synthesis_workers, all_slots).start(),
                    );
                    let stages = Stages {
                        params,
                        synthesis,
                        cpu_msm,
                        devices: Arc::new(start_devices(devices)),
                        scheduler,
                    };
                    let limits = Limits {
                        max_in_flight: sizes.max_partitions_in_flight,
                        host_budget,
                        priority_reserve: cfg.priority_reserve_partitions,
                        max_queued: cfg.max_queued_jobs,
                        retain_finished: cfg.retain_finished_jobs,
                    };
                    let writer = Mailbox::new(SyncArbiter::start(1, move || {
                        StoreWriter::new(writer_store.clone(), retention)
                    }));
                    let coordinator =
                        Mailbox::new(JobCoordinator::new(stages.clone(), limits, writer).start());
                    (System::current(), coordinator, stages)
                });
                if tx.send(addrs).is_ok() {
                    let _ = sys.run();
                }
            })?;
        let (system, coordinator, stages) = rx.recv().map_err(|_| PipelineError::Startup)?;
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
            stages,
            registry,
            backend_name,
            params: page_store,
            build,
            gpu_probe,
            started: Instant::now(),
            store,
            shared,
            retain: retention.keep,
            system,
            thread: Some(thread),
        };
        // Missed deadlines are alerted on per kind: every kind's series exists from the start.
        for kind in pipeline.registry.kinds() {
            metrics::counter!("proofline_deadline_exceeded_total", "kind" => kind).increment(0);
        }
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
                    // Its client id and idempotency key are stored with it: a client retrying
                    // after the restart gets this job back.
                    let digest = named(&request).then(|| request_digest(&request));
                    let priority = self.registry.priority_of(&request);
                    self.coordinator.do_send(SubmitPlanned {
                        id,
                        request,
                        plan,
                        admission: Admission::Restored,
                        digest,
                        priority,
                    });
                }
                Err(e) => {
                    // Visible, not dropped: the job fails with the planning error.
                    tracing::error!(job = %id, error = %e, "a stored job can no longer be planned; it fails");
                    let mut status = queued_status(
                        &id,
                        &request.kind,
                        request.circuit.as_deref().unwrap_or(&request.kind),
                        self.registry.priority_of(&request),
                        request.deadline,
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

    /// Whether accepted jobs are stored durably, i.e. survive a restart (`state.store`).
    pub fn persists(&self) -> bool {
        self.store.durable()
    }

    /// Validates and plans `request` (on a worker thread: parsing a C1 output takes a while),
    /// then hands it to the coordinator. Returns the job's status: a new job's, or, when the
    /// request repeats an earlier one under the same client id or idempotency key, the existing
    /// job's ([`Pipeline::submit_request`] says which).
    pub async fn submit(&self, request: JobRequest) -> Result<JobStatus, SubmitRejected> {
        self.submit_request(request).await.map(|s| s.status)
    }

    /// As [`Pipeline::submit`] with a caller-chosen id (letters, digits, '-').
    pub async fn submit_with_id(
        &self,
        id: JobId,
        mut request: JobRequest,
    ) -> Result<JobStatus, SubmitRejected> {
        request.id = Some(id);
        self.submit(request).await
    }

    /// Submits `request`, saying whether a new job was accepted or the request repeats an
    /// earlier one. A request named by a client id (`request.id`) or an idempotency key
    /// (`request.idempotency_key`) that matches a retained job with the same request (same
    /// [`request_digest`]) gets that job back, even when the queue is full; the same name with
    /// another request is refused with [`SubmitError::Conflict`].
    pub async fn submit_request(&self, request: JobRequest) -> Result<Submitted, SubmitRejected> {
        let registry = self.registry.clone();
        self.submit_planned(request, move |r| registry.plan(r))
            .await
    }

    /// Submits `request` planned by `planner` instead of the registry's adapter for its kind: an
    /// embedder that holds the parsed input (e.g. a C1 output as a struct) plans it directly and
    /// passes the request only as the record to store. The planner runs on a worker thread.
    ///
    /// The request is written to the store (on a thread of its own: tens of MB and an fsync for
    /// a C1 output) before the job is acknowledged; with a shared queue it goes into the queue
    /// and whichever daemon claims it runs it.
    pub async fn submit_planned<F>(
        &self,
        request: JobRequest,
        planner: F,
    ) -> Result<Submitted, SubmitRejected>
    where
        F: FnOnce(&JobRequest) -> Result<JobPlan, JobError> + Send + 'static,
    {
        if let Some(id) = &request.id {
            if !(valid_id(id) && id.len() <= MAX_ID_LEN) {
                return Err(JobError::field(
                    "id",
                    format!("letters, digits and '-' only, at most {MAX_ID_LEN} characters"),
                )
                .into());
            }
        }
        if let Some(key) = &request.idempotency_key {
            if !valid_key(key) {
                return Err(JobError::field(
                    "idempotency_key",
                    "1 to 255 visible ASCII characters (no spaces)",
                )
                .into());
            }
        }
        // A named submission: compare it with the jobs under its names before planning, so
        // that a retry of a 50 MB C1 output is answered without parsing it again.
        let (request, digest) = if named(&request) {
            let (request, digest) = on_worker("proofline-digest", move || {
                let d = request_digest(&request);
                (request, d)
            })
            .await?;
            let found = self
                .coordinator
                .send(FindRepeat {
                    id: request.id.clone(),
                    key: request.idempotency_key.clone(),
                    digest,
                })
                .await
                .map_err(|_| SubmitRejected::ShuttingDown)?;
            if let Some(found) = found {
                return found.map(existing).map_err(SubmitRejected::from);
            }
            (request, Some(digest))
        } else {
            (request, None)
        };
        let (request, plan) = on_worker("proofline-plan", move || {
            let plan = planner(&request);
            plan.map(|p| (request, p))
        })
        .await??;
        let id = request.id.clone().unwrap_or_else(new_job_id);
        // The request's priority, else its kind's default: what admission, the stage scheduler
        // and the shared queue's claim order use.
        let priority = self.registry.priority_of(&request);
        let status = queued_status(
            &id,
            &request.kind,
            &plan.label,
            priority,
            request.deadline,
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
            return Ok(Submitted {
                status,
                outcome: SubmitOutcome::Accepted,
            });
        }
        let reservation = self
            .coordinator
            .send(Reserve {
                id: id.clone(),
                client_id: request.id.clone(),
                key: request.idempotency_key.clone(),
                digest,
            })
            .await
            .map_err(|_| SubmitRejected::ShuttingDown)??;
        if let Reservation::Existing(status) = reservation {
            // A retry that raced the first attempt's planning.
            return Ok(existing(*status));
        }
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
                priority,
                admission: Admission::Reserved,
                digest,
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

    /// Each device's allocator: budget, leased and resident bytes, resident sets, trims.
    pub async fn memory(&self) -> Vec<AllocatorSnapshot> {
        let mut out = Vec::new();
        for d in self.stages.devices.iter() {
            if let Ok(s) = d.allocator.send(Snapshot).await {
                out.push(s);
            }
        }
        out
    }

    /// Loads a parameter set and makes it resident on every device (see [`Preloader`]).
    pub async fn preload(&self, spec: ParamsSpec) -> Result<Vec<(String, Residency)>, StageError> {
        self.preloader().preload(spec).await
    }

    /// A handle that preloads parameter sets from any thread.
    pub fn preloader(&self) -> Preloader {
        Preloader {
            params: self.stages.params.clone(),
            devices: self.stages.devices.clone(),
        }
    }

    /// Seconds since the pipeline started.
    pub fn uptime_s(&self) -> f64 {
        self.started.secs()
    }

    fn resident_params(&self) -> Vec<ResidentParams> {
        self.params
            .resident()
            .into_iter()
            .map(|r| ResidentParams {
                id: r.id,
                host_bytes: r.bytes as u64,
                load_s: r.load_s,
            })
            .collect()
    }

    fn gpu_figures(&self) -> Vec<GpuFigures> {
        self.gpu_probe
            .as_ref()
            .map(|p| p.sample())
            .unwrap_or_default()
    }

    /// The status page: jobs in flight with each partition's stage and device, the devices'
    /// memory, resident parameters, every actor's mailbox depth and busy time, every stage's
    /// totals, uptime and version.
    pub async fn status_page(&self) -> StatusPage {
        let view = self.ask(InFlight).await.unwrap_or_default();
        let memory = self.memory().await;
        let params = self.resident_params();
        let mut gpus = self.gpu_figures();
        let host_label = HostMemory.label();
        let devices = memory
            .into_iter()
            .map(|m| {
                // The host holds the parameter store's sets; a GPU its resident sets (bases and
                // NTT tables in device memory).
                let resident_bytes = if m.device == host_label {
                    params.iter().map(|p| p.host_bytes).sum()
                } else {
                    m.resident_bytes
                };
                let gpu = gpus
                    .iter()
                    .position(|g| g.device == m.device)
                    .map(|i| gpus.swap_remove(i));
                DeviceStatus {
                    kernel_busy_ratio: telemetry::gpu_busy_ratio(&m.device),
                    device: m.device,
                    budget_bytes: m.budget,
                    leased_bytes: m.leased,
                    leases: m.leases,
                    waiting_requests: m.waiting,
                    resident_bytes,
                    gpu,
                }
            })
            .collect();
        StatusPage {
            version: self.build.version.clone(),
            commit: self.build.commit.clone(),
            backend: self.backend_name.clone(),
            uptime_s: self.uptime_s(),
            now_ms: now_ms(),
            jobs: view.counts,
            partitions_in_flight: view.partitions_in_flight,
            max_partitions_in_flight: view.max_partitions_in_flight,
            jobs_in_flight: view.jobs,
            actors: telemetry::actors(),
            stages: telemetry::stages(),
            devices,
            params,
        }
    }

    /// Publishes the sampled figures (uptime, resident parameters, GPU readings) to the metrics
    /// facade; call before rendering `/metrics`.
    pub fn publish_sampled(&self) {
        telemetry::publish_sampled(
            self.uptime_s(),
            &self.resident_params(),
            &self.gpu_figures(),
        );
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
