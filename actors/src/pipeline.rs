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
use proofline_config::PipelineConfig;
use proofline_groth16::{CpuBackend, ProverBackend};
use proofline_jobs::{
    AdapterRegistry, ConstraintsStore, JobError, JobRequest, ParamsStore, SynthesisMode,
};
use rand::RngCore;
use tokio::sync::oneshot;

use crate::allocator::{HostMemory, MemoryDevice, VramAllocator};
use crate::coordinator::{JobCoordinator, Limits};
use crate::job::{JobResult, JobState, JobStatus};
use crate::journal::{Backlog, Journal};
use crate::messages::*;
use crate::partition::Stages;
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
    /// Recorded constraint systems of the synthesis actors.
    pub constraints: Arc<ConstraintsStore>,
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
}

impl PipelineOptions {
    /// The CPU backend with a host-memory budget of `config.memory_budget_bytes` (0: 90% of the
    /// memory available at start), and synthesis as `config.synthesis_mode` says.
    pub fn cpu(
        config: &PipelineConfig,
        registry: AdapterRegistry,
        store: Arc<ParamsStore>,
    ) -> Self {
        let memory_budget = match config.memory_budget_bytes {
            0 => host_available_bytes() / 10 * 9,
            b => b,
        };
        let mode = match config.synthesis_mode {
            proofline_config::SynthesisMode::Precompiled => SynthesisMode::Precompiled,
            proofline_config::SynthesisMode::Plain => SynthesisMode::Plain,
        };
        let constraints_dir = (!config.constraints_dir.is_empty())
            .then(|| proofline_config::expand_home(&config.constraints_dir));
        PipelineOptions {
            config: config.clone(),
            registry,
            store,
            constraints: Arc::new(ConstraintsStore::new(mode, constraints_dir)),
            backend: Arc::new(CpuBackend),
            cpu_backend: Arc::new(CpuBackend),
            memory: Box::new(HostMemory),
            memory_budget,
            journal_dir: None,
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
    system: System,
    thread: Option<JoinHandle<()>>,
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
        tracing::info!(
            backend = %backend_name,
            device = %opts.memory.label(),
            budget_bytes = opts.memory_budget,
            "memory budget of the allocator"
        );
        let (tx, rx) = std::sync::mpsc::channel();
        let cfg = opts.config;
        let constraints = opts.constraints;
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
                    let params = Mailbox::new(SyncArbiter::start(1, move || {
                        ParamsLoader::new(store.clone())
                    }));
                    let synthesis =
                        Mailbox::new(SyncArbiter::start(cfg.synthesis_workers, move || {
                            SynthesisActor::new(constraints.clone())
                        }));
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

    /// The allocator's state.
    pub async fn memory(&self) -> Option<AllocatorSnapshot> {
        self.allocator.send(Snapshot).await.ok()
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
