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

use actix::prelude::*;
use proofline_config::{PipelineConfig, PoolSizes};
use proofline_groth16::{CpuBackend, ProverBackend};
use proofline_jobs::{AdapterRegistry, JobError, JobRequest, ParamsSpec, ParamsStore};
use rand::RngCore;
use tokio::sync::oneshot;

use crate::allocator::HostMemory;
use crate::compute::{ComputeEngine, CpuEngine, CpuSizing};
use crate::coordinator::{JobCoordinator, Limits};
use crate::devices::{ensure_resident, start_devices, DeviceSetup};
use crate::job::{JobResult, JobState, JobStatus, StageTimings};
use crate::journal::{Backlog, Journal};
use crate::messages::*;
use crate::partition::Stages;
use crate::telemetry::Mailbox;
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
    /// Backend of the CPU-MSM actors (G2 MSM).
    pub cpu_backend: Arc<dyn ProverBackend>,
    /// The compute devices: each with its allocator's memory and budget and one engine per
    /// compute slot.
    pub devices: Vec<DeviceSetup>,
    /// Journal directory, if any.
    pub journal_dir: Option<PathBuf>,
}

impl PipelineOptions {
    /// The CPU backend: one "host" device with the configured compute slots (CPU engines) and
    /// the host memory budget (`"auto"`: 90% of the memory available at start).
    pub fn cpu(
        config: &PipelineConfig,
        registry: AdapterRegistry,
        store: Arc<ParamsStore>,
    ) -> Self {
        let sizes = config.pool_sizes(cpu_cores(), 0);
        let host_budget = host_budget(config);
        PipelineOptions {
            config: config.clone(),
            sizes,
            host_budget,
            registry,
            store,
            cpu_backend: Arc::new(CpuBackend),
            devices: vec![host_device(sizes.compute_slots, host_budget)],
            journal_dir: None,
        }
    }

    /// Computes on `devices` (GPUs) instead, with pool sizes `sizes`.
    pub fn with_devices(mut self, devices: Vec<DeviceSetup>, sizes: PoolSizes) -> Self {
        self.devices = devices;
        self.sizes = sizes;
        self
    }

    /// Adds a journal directory.
    pub fn with_journal(mut self, dir: Option<PathBuf>) -> Self {
        self.journal_dir = dir;
        self
    }
}

/// The host as a compute device: `slots` CPU engines over host memory.
pub fn host_device(slots: usize, budget: u64) -> DeviceSetup {
    DeviceSetup {
        memory: Box::new(HostMemory),
        budget,
        engines: (0..slots.max(1))
            .map(|_| Box::new(CpuEngine) as Box<dyn ComputeEngine>)
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
    stages: Stages,
    registry: Arc<AdapterRegistry>,
    backend_name: String,
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
        let backend_name = opts
            .devices
            .iter()
            .map(|d| d.label())
            .map(|l| if l == "host" { "cpu".to_string() } else { l })
            .collect::<Vec<_>>()
            .join(",");
        let (tx, rx) = std::sync::mpsc::channel();
        let (cfg, sizes, host_budget) = (opts.config, opts.sizes, opts.host_budget);
        let (store, cpu_backend, devices) = (opts.store, opts.cpu_backend, opts.devices);
        tracing::info!(?sizes, host_budget_bytes = host_budget, backend = %backend_name, "pipeline pools");
        let thread = std::thread::Builder::new()
            .name("proofline-actors".into())
            .spawn(move || {
                let sys = System::new();
                let addrs = sys.block_on(async move {
                    let params = Mailbox::new(SyncArbiter::start(1, move || {
                        ParamsLoader::new(store.clone())
                    }));
                    let synthesis = Mailbox::new(SyncArbiter::start(
                        sizes.synthesis_workers,
                        SynthesisActor::default,
                    ));
                    let cpu_msm =
                        Mailbox::new(SyncArbiter::start(sizes.cpu_msm_workers, move || {
                            CpuMsmActor::new(cpu_backend.clone())
                        }));
                    let stages = Stages {
                        params,
                        synthesis,
                        cpu_msm,
                        devices: Arc::new(start_devices(devices)),
                    };
                    let limits = Limits {
                        max_in_flight: sizes.max_partitions_in_flight,
                        host_budget,
                        max_queued: cfg.max_queued_jobs,
                        retain_finished: cfg.retain_finished_jobs,
                    };
                    let coordinator =
                        Mailbox::new(JobCoordinator::new(stages.clone(), limits, journal).start());
                    (System::current(), coordinator, stages)
                });
                if tx.send(addrs).is_ok() {
                    let _ = sys.run();
                }
            })?;
        let (system, coordinator, stages) = rx.recv().map_err(|_| PipelineError::Startup)?;
        let pipeline = Pipeline {
            coordinator,
            stages,
            registry,
            backend_name,
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
                    self.coordinator.do_send(SubmitPlanned {
                        id,
                        request,
                        plan,
                        journal: false,
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
        if !crate::journal::valid_id(&id) {
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
        self.coordinator
            .send(SubmitPlanned {
                id,
                request,
                plan,
                journal: true,
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
