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

use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use actix::prelude::*;
use proofline_config::PipelineConfig;
use proofline_groth16::{CpuBackend, ProverBackend};
use proofline_jobs::{request_digest, AdapterRegistry, JobError, JobPlan, JobRequest, ParamsStore};
use proofline_wire::{DeviceStatus, GpuFigures, ResidentParams, StatusPage};
use rand::RngCore;
use tokio::sync::oneshot;

use crate::allocator::{HostMemory, MemoryDevice, VramAllocator};
use crate::coordinator::{JobCoordinator, Limits};
use crate::idempotency::valid_key;
use crate::job::{now_ms, JobResult, JobState, JobStatus};
use crate::journal::{Backlog, Journal};
use crate::messages::*;
use crate::partition::Stages;
use crate::telemetry::{self, actor, ActorStats, GpuProbe, Mailbox, Secs};
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
    /// Journal directory, if any.
    pub journal_dir: Option<PathBuf>,
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
            journal_dir: None,
            build: BuildInfo::default(),
            gpu_probe: None,
        }
    }

    /// Adds a journal directory.
    pub fn with_journal(mut self, dir: Option<PathBuf>) -> Self {
        self.journal_dir = dir;
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
    /// The journal could not be opened or read.
    #[error("job journal: {0}")]
    Journal(std::io::Error),
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

/// Handle to a running pipeline.
pub struct Pipeline {
    coordinator: Mailbox<JobCoordinator>,
    allocator: Mailbox<VramAllocator>,
    registry: Arc<AdapterRegistry>,
    backend_name: String,
    store: Arc<ParamsStore>,
    build: BuildInfo,
    gpu_probe: Option<Arc<dyn GpuProbe>>,
    started: Instant,
    journaled: bool,
    system: System,
    thread: Option<JoinHandle<()>>,
}

/// Longest client-chosen job id.
pub const MAX_ID_LEN: usize = 64;

/// Whether a request is named by the client (job id or idempotency key), so that a repeat of it
/// is recognised.
fn named(request: &JobRequest) -> bool {
    request.id.is_some() || request.idempotency_key.is_some()
}

/// Runs `f` on a fresh thread (request-path work too heavy for the caller's executor: hashing
/// or parsing a large document).
async fn on_worker<T: Send + 'static>(
    name: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, SubmitRejected> {
    let (tx, rx) = oneshot::channel();
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            let _ = tx.send(f());
        })
        .map_err(|e| JobError::Internal(format!("cannot start a worker thread: {e}")))?;
    rx.await.map_err(|_| SubmitRejected::ShuttingDown)
}

/// A fresh job id: 16 random hex digits.
pub fn new_job_id() -> JobId {
    format!("{:016x}", rand::rngs::OsRng.next_u64())
}

impl Pipeline {
    /// Starts the actors on a dedicated thread and replays the journal.
    pub fn start(opts: PipelineOptions) -> Result<Self, PipelineError> {
        let journal = match &opts.journal_dir {
            Some(d) => Some(Journal::open(d).map_err(PipelineError::Journal)?),
            None => None,
        };
        let backlog = match &journal {
            Some(j) => j.load().map_err(PipelineError::Journal)?,
            None => Backlog::default(),
        };
        let registry = Arc::new(opts.registry);
        let backend_name = opts.backend.name().to_string();
        let device: Arc<str> = opts.memory.label().into();
        // The status page and /metrics list actors in the order they were first seen: pipeline
        // order.
        for name in [
            actor::COORDINATOR,
            actor::PARAMS,
            actor::SYNTHESIS,
            actor::ALLOCATOR,
            actor::COMPUTE,
            actor::CPU_MSM,
        ] {
            ActorStats::of(name);
        }
        let (build, gpu_probe, page_store) = (opts.build, opts.gpu_probe, opts.store.clone());
        let journaled = journal.is_some();
        tracing::info!(
            backend = %backend_name,
            device = %opts.memory.label(),
            budget_bytes = opts.memory_budget,
            "memory budget of the allocator"
        );
        let (tx, rx) = std::sync::mpsc::channel();
        let cfg = opts.config;
        let (store, backend, cpu_backend, memory, budget) = (
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
                    let params = Mailbox::pool(
                        SyncArbiter::start(1, move || ParamsLoader::new(store.clone())),
                        1,
                    );
                    let synthesis = Mailbox::pool(
                        SyncArbiter::start(cfg.synthesis_workers, SynthesisActor::default),
                        cfg.synthesis_workers,
                    );
                    let cpu_msm = Mailbox::pool(
                        SyncArbiter::start(cfg.cpu_msm_workers, move || {
                            CpuMsmActor::new(cpu_backend.clone())
                        }),
                        cfg.cpu_msm_workers,
                    );
                    let compute = Mailbox::pool(
                        SyncArbiter::start(cfg.compute_slots, move || {
                            ComputeActor::new(backend.clone())
                        }),
                        cfg.compute_slots,
                    );
                    let allocator = Mailbox::new(VramAllocator::new(memory, budget).start());
                    let stages = Stages {
                        params,
                        synthesis,
                        cpu_msm,
                        allocator: allocator.clone(),
                        compute,
                        device,
                    };
                    let limits = Limits {
                        max_in_flight: cfg.max_partitions_in_flight,
                        max_queued: cfg.max_queued_jobs,
                        retain_finished: cfg.retain_finished_jobs,
                    };
                    let coordinator =
                        Mailbox::new(JobCoordinator::new(stages, limits, journal).start());
                    (System::current(), coordinator, allocator)
                });
                if tx.send(addrs).is_ok() {
                    let _ = sys.run();
                }
            })?;
        let (system, coordinator, allocator) = rx.recv().map_err(|_| PipelineError::Startup)?;
        let pipeline = Pipeline {
            coordinator,
            allocator,
            registry,
            backend_name,
            store: page_store,
            build,
            gpu_probe,
            started: Instant::now(),
            journaled,
            system,
            thread: Some(thread),
        };
        pipeline.replay(backlog);
        Ok(pipeline)
    }

    fn replay(&self, backlog: Backlog) {
        for rec in backlog.finished {
            self.coordinator.do_send(RestoreFinished(rec));
        }
        for (id, request) in backlog.pending {
            match self.registry.plan(&request) {
                Ok(plan) => {
                    tracing::info!(job = %id, "re-running a journaled job after restart");
                    // Its client id and idempotency key are journaled with it: a client retrying
                    // after the restart gets this job back.
                    let digest = named(&request).then(|| request_digest(&request));
                    self.coordinator.do_send(SubmitPlanned {
                        id,
                        request,
                        plan,
                        journal: false,
                        digest,
                    });
                }
                Err(e) => {
                    tracing::error!(job = %id, error = %e, "a journaled job can no longer be planned; it stays in the journal");
                }
            }
        }
    }

    /// The compute backend's name.
    pub fn backend_name(&self) -> &str {
        &self.backend_name
    }

    /// The job kinds and circuits this pipeline serves.
    pub fn registry(&self) -> &AdapterRegistry {
        &self.registry
    }

    /// Whether accepted jobs are journaled (`state.dir`), i.e. survive a restart.
    pub fn journals(&self) -> bool {
        self.journaled
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
    /// passes the request only as the record to journal. The planner runs on a worker thread.
    pub async fn submit_planned<F>(
        &self,
        request: JobRequest,
        planner: F,
    ) -> Result<Submitted, SubmitRejected>
    where
        F: FnOnce(&JobRequest) -> Result<JobPlan, JobError> + Send + 'static,
    {
        if let Some(id) = &request.id {
            if !(crate::journal::valid_id(id) && id.len() <= MAX_ID_LEN) {
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
                return found
                    .map(|status| Submitted {
                        status,
                        outcome: SubmitOutcome::Existing,
                    })
                    .map_err(SubmitRejected::from);
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
        self.coordinator
            .send(SubmitPlanned {
                id,
                request,
                plan,
                journal: true,
                digest,
            })
            .await
            .map_err(|_| SubmitRejected::ShuttingDown)?
            .map_err(SubmitRejected::from)
    }

    async fn ask<M>(&self, msg: M) -> Option<M::Result>
    where
        M: Message + Send + 'static,
        M::Result: Send,
        JobCoordinator: Handler<M>,
    {
        self.coordinator.send(msg).await.ok()
    }

    /// Status of a job.
    pub async fn status(&self, id: &str) -> Option<JobStatus> {
        self.ask(GetStatus(id.to_string())).await.flatten()
    }

    /// All retained jobs, newest first.
    pub async fn list(&self) -> Vec<JobStatus> {
        self.ask(ListJobs).await.unwrap_or_default()
    }

    /// Cancels a job; returns its status (unchanged when already finished).
    pub async fn cancel(&self, id: &str) -> Option<JobStatus> {
        self.ask(CancelJob(id.to_string())).await.flatten()
    }

    /// Waits until the job is finished and returns its final status.
    pub async fn wait(&self, id: &str) -> Result<JobStatus, ResultError> {
        match self.ask(AwaitJob(id.to_string())).await {
            None => Err(ResultError::ShuttingDown),
            Some(None) => Err(ResultError::NotFound(id.to_string())),
            Some(Some(s)) => Ok(s),
        }
    }

    /// The result of a succeeded job.
    pub async fn result(&self, id: &str) -> Result<Arc<JobResult>, ResultError> {
        match self.ask(GetResult(id.to_string())).await {
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

    /// Seconds since the pipeline started.
    pub fn uptime_s(&self) -> f64 {
        self.started.secs()
    }

    fn resident_params(&self) -> Vec<ResidentParams> {
        self.store
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
                // Parameters are held in host memory; none are resident in device memory yet.
                let resident_bytes = if m.device == host_label {
                    params.iter().map(|p| p.host_bytes).sum()
                } else {
                    0
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

    /// Stops the actors and joins the pipeline thread. Unfinished jobs stay in the journal.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.system.stop();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Pipeline {
    fn drop(&mut self) {
        self.stop();
    }
}
