//! Every message the actors exchange, in one place.
//!
//! Big buffers travel by move (`Vec`s of a, b, c) or by `Arc` when several stages read them at
//! once (the assignment, the MSM plan, the parameters); nothing here is cloned on the way.
//!
//! | message            | from → to                   | carries (ownership)                         |
//! |--------------------|-----------------------------|---------------------------------------------|
//! | `LoadParams`       | partition driver → loader   | spec; returns the shared resident key       |
//! | `Synthesize`       | driver → SynthesisActor     | circuit thunk (moved); returns a, b, c, asg |
//! | `RequestLease`     | driver → VramAllocator      | bytes; returns a `Lease` (released on drop) |
//! | `ReleaseLease`     | `Lease::drop` → allocator   | lease id                                    |
//! | `PlanMsm`          | driver → CpuMsmActor        | `Arc<Assignment>`; returns `MsmPlan`        |
//! | `ComputeH`         | driver → ComputeActor       | a, b, c (moved), lease (moved); H MSM       |
//! | `ComputeSparseG1`  | driver → ComputeActor       | `Arc<MsmPlan>`, lease; L, A, B in G1        |
//! | `MsmG2`            | driver → CpuMsmActor        | `Arc<MsmPlan>`; B in G2                     |
//! | `AssembleVerify`   | driver → CpuMsmActor        | MSM results, public inputs; the proof       |
//! | `RunFinalCheck`    | coordinator → CpuMsmActor   | the whole proof (moved in and out), check   |
//! | coordinator msgs   | `Pipeline` → JobCoordinator | see `coordinator.rs`                        |

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use actix::Message;
use blstrs::{Bls12, G1Projective, G2Projective, Scalar};
use proofline_groth16::{
    Assignment, MsmPlan, MsmResults, ParamsShape, Proof, ProverError, SharedProvingKey,
    SynthesizedPartition,
};
use proofline_jobs::{CircuitThunk, JobError, JobPlan, JobRequest, ParamsSpec};
use proofline_wire::{JobResult, JobStatus};

use crate::allocator::Lease;
use crate::journal::FinishedRecord;

pub use proofline_wire::JobId;

/// Shared cancellation flag of a job: stages skip work for cancelled jobs.
#[derive(Clone, Debug, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    /// Marks the job cancelled.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Release);
    }

    /// Whether the job was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    /// `Err(Cancelled)` when cancelled.
    pub fn check(&self) -> Result<(), StageError> {
        if self.is_cancelled() {
            Err(StageError::Cancelled)
        } else {
            Ok(())
        }
    }
}

/// Why a stage failed.
#[derive(Debug, thiserror::Error)]
pub enum StageError {
    /// The prover failed (synthesis, shape, backend, verification).
    #[error(transparent)]
    Prover(#[from] ProverError),
    /// The job could not be built (circuit construction, parameters).
    #[error(transparent)]
    Job(#[from] JobError),
    /// The allocator refused the lease.
    #[error(transparent)]
    Lease(#[from] LeaseError),
    /// Synthesis produced other public inputs than the job promised.
    #[error("partition {partition}: synthesized public inputs differ from the job's")]
    PublicInputsMismatch {
        /// Which partition.
        partition: usize,
    },
    /// The job was cancelled.
    #[error("cancelled")]
    Cancelled,
    /// The adapter's check of the whole proof failed.
    #[error("final check of the whole proof failed: {0}")]
    FinalCheck(String),
    /// A stage panicked (a bug or a circuit assertion); the job fails, the actor continues.
    #[error("{stage} stage panicked: {message}")]
    Panicked {
        /// Which stage.
        stage: String,
        /// The panic message.
        message: String,
    },
    /// An actor is gone (the pipeline is shutting down).
    #[error("pipeline actor unavailable: {0}")]
    Mailbox(String),
}

impl StageError {
    /// A stable code for API error bodies.
    pub fn code(&self) -> &'static str {
        match self {
            StageError::Prover(ProverError::VerificationFailed) => "verification_failed",
            StageError::Prover(ProverError::ShapeMismatch { .. }) => "params_mismatch",
            StageError::Prover(ProverError::Synthesis(_)) => "synthesis_failed",
            StageError::Prover(ProverError::Backend(_)) => "backend_failed",
            StageError::Prover(ProverError::Constraints(_)) => "constraints_invalid",
            StageError::Job(e) => e.code(),
            StageError::Lease(_) => "memory_budget",
            StageError::PublicInputsMismatch { .. } => "public_inputs_mismatch",
            StageError::Cancelled => "cancelled",
            StageError::Panicked { .. } => "internal_error",
            StageError::FinalCheck(_) => "final_check_failed",
            StageError::Mailbox(_) => "shutting_down",
        }
    }
}

impl From<actix::MailboxError> for StageError {
    fn from(e: actix::MailboxError) -> Self {
        StageError::Mailbox(e.to_string())
    }
}

/// Allocator refusals. A lease that fits the budget is never refused: it waits.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum LeaseError {
    /// The request exceeds the whole budget and could never be granted.
    #[error("lease of {requested} bytes exceeds the memory budget of {budget} bytes on {device}")]
    ExceedsBudget {
        /// Bytes asked for.
        requested: u64,
        /// Total budget.
        budget: u64,
        /// Device label.
        device: String,
    },
    /// The allocator stopped before granting.
    #[error("allocator stopped")]
    AllocatorGone,
}

/// Snapshot of an allocator's state.
#[derive(Clone, Debug, serde::Serialize, PartialEq, Eq)]
pub struct AllocatorSnapshot {
    /// Device label.
    pub device: String,
    /// Total budget, bytes.
    pub budget: u64,
    /// Bytes currently leased.
    pub leased: u64,
    /// Leases outstanding.
    pub leases: usize,
    /// Requests waiting.
    pub waiting: usize,
}

/// Ask for a snapshot.
#[derive(Message)]
#[rtype(result = "AllocatorSnapshot")]
pub struct Snapshot;

/// Ask the allocator to trim the device's memory pool as soon as no lease is outstanding.
#[derive(Message)]
#[rtype(result = "()")]
pub struct TrimWhenIdle;

/// Load (once) and return the resident parameters of a job.
#[derive(Message)]
#[rtype(result = "Result<SharedProvingKey, JobError>")]
pub struct LoadParams {
    /// Which parameter set.
    pub spec: ParamsSpec,
}

/// Build and synthesize one partition's circuit.
#[derive(Message)]
#[rtype(result = "Result<SynthesizedPartition, StageError>")]
pub struct Synthesize {
    /// Job.
    pub job: JobId,
    /// Partition index.
    pub partition: usize,
    /// Builds the circuit (moved in, consumed).
    pub circuit: CircuitThunk,
    /// The public inputs the job promised (checked against synthesis).
    pub expected_inputs: Vec<Scalar>,
    /// The parameter set: it names the shape's recorded constraint system.
    pub params: ParamsSpec,
    /// The parameters' query lengths, for the shape check before any heavy stage.
    pub shape: ParamsShape,
    /// Cancellation.
    pub cancel: CancelToken,
}

/// Ask for `bytes` of the device's memory budget.
#[derive(Message, Debug)]
#[rtype(result = "Result<Lease, LeaseError>")]
pub struct RequestLease {
    /// Bytes.
    pub bytes: u64,
    /// Who asks (for logs): "job/partition/stage".
    pub owner: String,
}

/// Give a lease back (sent by `Lease::drop`).
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct ReleaseLease {
    /// Lease id.
    pub id: u64,
}

/// Split the assignment into the 0/1/tail scalars of the A, B and L queries.
#[derive(Message)]
#[rtype(result = "MsmPlan")]
pub struct PlanMsm {
    /// The assignment, shared with nobody else at this point but kept in an `Arc` so the driver
    /// retains it for public inputs.
    pub assignment: Arc<Assignment>,
}

/// H polynomial then the H MSM, on the compute actor.
#[derive(Message)]
#[rtype(result = "Result<G1Projective, StageError>")]
pub struct ComputeH {
    /// Parameters.
    pub pk: SharedProvingKey,
    /// A evaluations (moved).
    pub a: Vec<Scalar>,
    /// B evaluations (moved).
    pub b: Vec<Scalar>,
    /// C evaluations (moved).
    pub c: Vec<Scalar>,
    /// Memory lease covering the buffers; released when the handler drops it.
    pub lease: Lease,
    /// Cancellation.
    pub cancel: CancelToken,
}

/// The sparse G1 MSMs (L, A, B) on the compute actor.
#[derive(Message)]
#[rtype(result = "Result<(G1Projective, G1Projective, G1Projective), StageError>")]
pub struct ComputeSparseG1 {
    /// Parameters.
    pub pk: SharedProvingKey,
    /// The split scalars.
    pub plan: Arc<MsmPlan>,
    /// Memory lease for gathered tail bases.
    pub lease: Lease,
    /// Cancellation.
    pub cancel: CancelToken,
}

/// The G2 MSM (B) on a CPU-MSM actor.
#[derive(Message)]
#[rtype(result = "Result<G2Projective, StageError>")]
pub struct MsmG2 {
    /// Parameters.
    pub pk: SharedProvingKey,
    /// The split scalars.
    pub plan: Arc<MsmPlan>,
    /// Cancellation.
    pub cancel: CancelToken,
}

/// Run a job's final check on its whole proof; the proof bytes come back with the verdict.
#[derive(Message)]
#[rtype(result = "(Vec<u8>, Result<(), String>)")]
pub struct RunFinalCheck {
    /// The adapter's check.
    pub check: proofline_jobs::FinalCheck,
    /// The job's parameters.
    pub pk: SharedProvingKey,
    /// All partition proofs, concatenated (moved in and back out).
    pub proof: Vec<u8>,
}

/// Assemble the proof with fresh randomness and verify it.
#[derive(Message)]
#[rtype(result = "Result<Proof<Bls12>, StageError>")]
pub struct AssembleVerify {
    /// Parameters.
    pub pk: SharedProvingKey,
    /// The five MSM results.
    pub results: MsmResults,
    /// Public inputs without ONE.
    pub public_inputs: Vec<Scalar>,
}

// ---- the coordinator's messages (from `Pipeline`) -------------------------------------------

/// Why a submission was refused.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum SubmitError {
    /// Too many unfinished jobs.
    #[error("queue full: {0} unfinished jobs (pipeline.max_queued_jobs)")]
    QueueFull(usize),
    /// A job with this id exists.
    #[error("job id {0} already exists")]
    Duplicate(String),
    /// The job could not be written to the journal, so it would not survive a restart.
    #[error("cannot journal job {id}: {message}")]
    Journal {
        /// Job id.
        id: String,
        /// The I/O error.
        message: String,
    },
}

/// Accept a planned job.
#[derive(Message)]
#[rtype(result = "Result<JobStatus, SubmitError>")]
pub struct SubmitPlanned {
    /// Id (fresh, or the journaled one after a restart).
    pub id: JobId,
    /// The request, journaled so the job survives a restart.
    pub request: JobRequest,
    /// The adapter's plan.
    pub plan: JobPlan,
    /// Whether to journal the request (false when it is being replayed from the journal).
    pub journal: bool,
}

/// Restore a finished job from the journal.
#[derive(Message)]
#[rtype(result = "()")]
pub struct RestoreFinished(pub FinishedRecord);

/// Status of one job.
#[derive(Message)]
#[rtype(result = "Option<JobStatus>")]
pub struct GetStatus(pub JobId);

/// Status and, when succeeded, result of one job.
#[derive(Message)]
#[rtype(result = "Option<(JobStatus, Option<Arc<JobResult>>)>")]
pub struct GetResult(pub JobId);

/// All known jobs, newest first.
#[derive(Message)]
#[rtype(result = "Vec<JobStatus>")]
pub struct ListJobs;

/// Cancel a job (no effect on a finished one).
#[derive(Message)]
#[rtype(result = "Option<JobStatus>")]
pub struct CancelJob(pub JobId);

/// Resolves when the job reaches a terminal state (None: unknown job or shutdown).
#[derive(Message)]
#[rtype(result = "Option<JobStatus>")]
pub struct AwaitJob(pub JobId);

/// Counts for health checks.
#[derive(Message)]
#[rtype(result = "PipelineCounts")]
pub struct Counts;

/// Job counts by state and partitions in flight.
#[derive(Clone, Debug, Default, serde::Serialize, PartialEq, Eq)]
pub struct PipelineCounts {
    /// Jobs queued.
    pub queued: usize,
    /// Jobs running.
    pub running: usize,
    /// Finished jobs retained.
    pub finished: usize,
    /// Partitions in the pipeline.
    pub partitions_in_flight: usize,
}
