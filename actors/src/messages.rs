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
//! | `DeviceLoad`       | driver → VramAllocator      | set key; leased bytes, whether it is there  |
//! | `AcquireResident`  | driver → VramAllocator      | set key, bytes; the set (pinned) or a load  |
//! | `RegisterResident` | driver → VramAllocator      | the filled load (moved); the pinned set     |
//! | `PinResident`      | driver → VramAllocator      | set key; the set pinned, if resident        |
//! | `ResidentAbandoned`, `ResidentUnpinned` | `ResidentLoad` / `ResidentRef` drop → allocator | key |
//! | `Trim`, `ResetHighWater`, `Snapshot` | anyone → allocator | run when the device is idle; state |
//! | `PlanMsm`          | driver → CpuMsmActor        | `Arc<Assignment>`; returns `MsmPlan`        |
//! | `MakeResident`     | driver → ComputeActor       | `Arc<ProvingKey>`; the device's set data    |
//! | `HoldTails`        | driver → ComputeActor       | `Arc<MsmPlan>`, pin; the device's held tails |
//! | `ComputeH`         | driver → ComputeActor       | `Arc<Evaluations>` (moved), lease, pin; H   |
//! | `ComputeSparseG1`  | driver → ComputeActor       | `Arc<MsmPlan>`, lease, pin; L, A, B in G1 (+ G2 on a GPU) |
//! | `MsmG2`            | driver → CpuMsmActor        | `Arc<MsmPlan>`; B in G2 (CPU backend)       |
//! | `AssembleVerify`   | driver → CpuMsmActor        | MSM results, public inputs; the proof       |
//! | `RunFinalCheck`    | coordinator → CpuMsmActor   | the whole proof (moved in and out), check   |
//! | `AcquireStage`     | driver → StageScheduler     | stage class, rank; returns a `StagePermit`  |
//! | `ContinueStage`    | driver → StageScheduler     | the permit (moved), rank; returns a permit  |
//! | `ReleaseStage`     | `StagePermit::drop` → sched.| stage class                                 |
//! | `RecordOutcome`    | coordinator → StoreWriter   | a finished job's status and result          |
//! | coordinator msgs   | `Pipeline` → JobCoordinator | see `coordinator.rs`                        |
//! | `InFlight`         | `Pipeline` → JobCoordinator | returns the jobs in flight for the status page |

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use actix::Message;
use blstrs::{Bls12, G2Projective, Scalar};
use proofline_groth16::{
    Assignment, MsmPlan, MsmResults, ParamsShape, Proof, ProverError, SharedProvingKey,
    SynthesizedPartition,
};
use proofline_jobs::{CircuitThunk, JobError, JobPlan, JobRequest, ParamsSpec};
use proofline_wire::{JobCounts, JobInFlight, JobResult, JobStatus};

use crate::allocator::Lease;
use crate::compute::{HStage, SparseMsms};
use crate::partition::G2Stage;
use crate::resident::{ResidentData, ResidentLoad, ResidentRef};
use crate::scheduler::{Rank, StageClass, StagePermit};
use crate::store::{FinishOutcome, FinishedRecord};

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
    /// The job's deadline has passed or can no longer be met.
    #[error("deadline exceeded: {0}")]
    DeadlineExceeded(String),
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
            StageError::DeadlineExceeded(_) => "deadline_exceeded",
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

/// What a device's stream-ordered memory pool holds, in bytes.
#[derive(Clone, Copy, Debug, Default, serde::Serialize, PartialEq, Eq)]
pub struct PoolUsage {
    /// Handed out to allocations now.
    pub used: u64,
    /// Mapped by the pool now (used + cached).
    pub reserved: u64,
    /// Highest `used` since the last reset.
    pub used_high: u64,
    /// Highest `reserved` since the last reset.
    pub reserved_high: u64,
}

/// Where a partition's MSMs read a parameter set's bases.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Residency {
    /// On the device (uploaded once, shared by the device's slots).
    Resident,
    /// Streamed from host memory: only the NTT tables are on the device.
    Streamed,
}

/// One resident set in a snapshot.
#[derive(Clone, Debug, serde::Serialize, PartialEq, Eq)]
pub struct ResidentInfo {
    /// Parameter set.
    pub params: String,
    /// Bytes its lease covers.
    pub bytes: u64,
    /// Bases on the device, or streamed.
    pub residency: Residency,
    /// Partitions using it now.
    pub users: usize,
}

/// Snapshot of an allocator's state (per device: budget, leased and resident bytes).
#[derive(Clone, Debug, serde::Serialize, PartialEq, Eq)]
pub struct AllocatorSnapshot {
    /// Device label.
    pub device: String,
    /// Total budget, bytes.
    pub budget: u64,
    /// Bytes currently leased (stage leases and resident sets).
    pub leased: u64,
    /// Highest `leased` since the last [`ResetHighWater`].
    pub leased_high: u64,
    /// Leases outstanding.
    pub leases: usize,
    /// Requests waiting.
    pub waiting: usize,
    /// Bytes of the resident sets.
    pub resident_bytes: u64,
    /// The resident sets.
    pub resident: Vec<ResidentInfo>,
    /// Pool trims so far.
    pub trims: u64,
    /// The device pool's usage (None on the host).
    pub pool: Option<PoolUsage>,
}

/// Ask for a snapshot.
#[derive(Message)]
#[rtype(result = "AllocatorSnapshot")]
pub struct Snapshot;

/// Trim the device's memory pool: as soon as nothing is in flight on the device (the allocator
/// grants nothing until then).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Trim;

/// Reset the allocator's and the pool's high-water marks, when nothing is in flight.
#[derive(Message)]
#[rtype(result = "()")]
pub struct ResetHighWater;

/// How loaded a device is, and whether a parameter set is resident there (the driver's choice
/// of device).
#[derive(Message, Debug)]
#[rtype(result = "DeviceLoadInfo")]
pub struct DeviceLoad {
    /// The parameter set.
    pub key: String,
}

/// The answer to [`DeviceLoad`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceLoadInfo {
    /// Stage leases outstanding plus requests waiting.
    pub stages: usize,
    /// Whether the set is resident (or loading) there.
    pub holds: bool,
}

/// A parameter set's resident data on one device, in the three layouts it can take, largest
/// first: the allocator grants the first that fits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResidentSizes {
    /// Bytes with the bases on the device and what the engine adds beside them to speed its
    /// MSMs where the lease covers it (the GPU's ones' pair sums); equal to `bases` where it
    /// adds nothing.
    pub full: u64,
    /// Bytes with the bases on the device alone.
    pub bases: u64,
    /// Bytes with the bases streamed (tables only).
    pub tables: u64,
}

/// Ask for a parameter set's resident data on the device.
#[derive(Message, Debug)]
#[rtype(result = "Result<ResidentGrant, LeaseError>")]
pub struct AcquireResident {
    /// The parameter set.
    pub key: String,
    /// Its bytes in each layout.
    pub sizes: ResidentSizes,
    /// The largest stage lease a partition of this set asks for.
    pub reserve: u64,
    /// Who asks (for logs).
    pub owner: String,
}

/// The answer to [`AcquireResident`].
#[derive(Debug)]
pub enum ResidentGrant {
    /// The set is resident; the reference pins it.
    Ready(ResidentRef),
    /// Upload it under this lease, then send [`RegisterResident`].
    Load(ResidentLoad),
}

/// Pin a parameter set's resident data where the device holds it already (a partition pins
/// its set's held tails this way when it starts, so that they are not evicted between the
/// device's partitions); `None` where it is not resident (or pinning it now would leave the
/// pinned sets' stages short). Never loads nor waits.
#[derive(Message, Debug)]
#[rtype(result = "Option<ResidentRef>")]
pub struct PinResident {
    /// The set's key.
    pub key: String,
}

/// A filled load: the set becomes resident; returns it pinned.
#[derive(Message)]
#[rtype(result = "Result<ResidentRef, LeaseError>")]
pub struct RegisterResident {
    /// The load (its lease moves into the set).
    pub load: ResidentLoad,
    /// The engine's data.
    pub data: ResidentData,
}

/// A load was dropped without being registered (sent by `ResidentLoad::drop`).
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct ResidentAbandoned {
    /// The parameter set.
    pub key: String,
}

/// A partition stopped using a resident set (sent by `ResidentRef::drop`).
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct ResidentUnpinned {
    /// The parameter set.
    pub key: String,
}

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
#[rtype(result = "Result<MsmPlan, StageError>")]
pub struct PlanMsm {
    /// The assignment, shared with nobody else at this point but kept in an `Arc` so the driver
    /// retains it for public inputs.
    pub assignment: Arc<Assignment>,
}

/// The A and B evaluations of a partition, as synthesis wrote them; C's are their pointwise
/// product (synthesis checked every constraint), derived where the H stage needs them. Moved
/// from stage to stage in an `Arc` (unique in the pipeline; a load harness shares one set
/// between partitions).
#[derive(Debug, Default)]
pub struct Evaluations {
    /// A.
    pub a: Vec<Scalar>,
    /// B.
    pub b: Vec<Scalar>,
}

/// Make a parameter set resident on the compute actor's device (under the load's lease).
#[derive(Message)]
#[rtype(result = "Result<ResidentData, StageError>")]
pub struct MakeResident {
    /// Parameters.
    pub pk: SharedProvingKey,
    /// Bases on the device or streamed.
    pub residency: Residency,
    /// Bytes the load's lease covers.
    pub bytes: u64,
}

/// Hold a parameter set's G1 tails on the compute actor's device (under the load's lease).
#[derive(Message)]
#[rtype(result = "Result<ResidentData, StageError>")]
pub struct HoldTails {
    /// The split whose tails are held.
    pub plan: Arc<MsmPlan>,
    /// Whether the sparse stage runs B in G2 (its tail in G2 is then held too).
    pub g2: G2Stage,
    /// The device's resident data of the parameter set, pinned while the tails are gathered.
    pub resident: ResidentRef,
    /// Bytes the load's lease covers.
    pub bytes: u64,
}

/// H polynomial then the H MSM, on the compute actor.
#[derive(Message)]
#[rtype(result = "Result<HStage, StageError>")]
pub struct ComputeH {
    /// Parameters.
    pub pk: SharedProvingKey,
    /// The evaluations (moved in; freed in the handler).
    pub evals: Arc<Evaluations>,
    /// The device's resident data of `pk`, pinned for the stage (none on the host).
    pub resident: Option<ResidentRef>,
    /// Memory lease covering the stage's buffers; released when the handler drops it.
    pub lease: Lease,
    /// Cancellation.
    pub cancel: CancelToken,
}

/// The sparse MSMs (L, A, B in G1; B in G2 with `g2: Run`) on the compute actor.
#[derive(Message)]
#[rtype(result = "Result<SparseMsms, StageError>")]
pub struct ComputeSparseG1 {
    /// Parameters.
    pub pk: SharedProvingKey,
    /// The split scalars.
    pub plan: Arc<MsmPlan>,
    /// Whether the stage computes B in G2 as well (where the device places it there).
    pub g2: G2Stage,
    /// The device's resident data of `pk`, pinned for the stage (none on the host).
    pub resident: Option<ResidentRef>,
    /// The device's held tails of `pk`, pinned for the stage (none where it holds none).
    pub tails: Option<ResidentRef>,
    /// Memory lease covering the stage's buffers.
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

/// Ask for a permit of a heavy stage; resolves when granted (`None`: the scheduler stopped).
#[derive(Message, Debug)]
#[rtype(result = "Option<StagePermit>")]
pub struct AcquireStage {
    /// Which stage.
    pub class: StageClass,
    /// The job's rank: the best waiting rank gets the next free permit.
    pub rank: Rank,
}

/// At the boundary between two stages of one class: hand the permit back; it comes back (at
/// once, or after the better-ranked waiters' turns) for the next stage.
#[derive(Message, Debug)]
#[rtype(result = "Option<StagePermit>")]
pub struct ContinueStage {
    /// The permit of the stage just finished (moved in).
    pub permit: StagePermit,
    /// The job's rank.
    pub rank: Rank,
}

/// Give a stage permit back (sent by `StagePermit::drop`).
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct ReleaseStage {
    /// Which stage.
    pub class: StageClass,
}

/// Ask the scheduler for the state of one stage class.
#[derive(Message, Debug)]
#[rtype(result = "StageSnapshot")]
pub struct StageSnapshotRequest(pub StageClass);

/// Permits of one stage class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StageSnapshot {
    /// Permits granted and not returned.
    pub held: usize,
    /// Requests waiting.
    pub waiting: usize,
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
    #[error("queue full: {unfinished} unfinished jobs (pipeline.max_queued_jobs); retry in about {retry_after_s} s")]
    QueueFull {
        /// Unfinished jobs.
        unfinished: usize,
        /// Seconds until a slot is expected to free (from recent run times).
        retry_after_s: u64,
    },
    /// The submission's job id or idempotency key belongs to a job of another request.
    #[error("job {id}: {reason}")]
    Conflict {
        /// The job holding the id or key.
        id: JobId,
        /// Why the submission is not the same request.
        reason: String,
    },
    /// The same request under the same name is being accepted right now (its record is being
    /// written); a retry in a moment gets the job.
    #[error("job {0}: the same request is being accepted under this name; retry shortly")]
    BeingAccepted(JobId),
    /// The job could not be written to the store, so it would not survive a restart.
    #[error("cannot journal job {id}: {message}")]
    Journal {
        /// Job id.
        id: String,
        /// The store's error.
        message: String,
    },
    /// The daemon is draining before a stop: it takes no new job.
    #[error("the daemon is draining before a stop and takes no new job")]
    Draining,
}

/// Holds a place for a job in the coordinator (queue capacity, id, names) while its request is
/// written to the store; followed by [`SubmitPlanned`] or [`Unreserve`]. A named submission
/// that repeats a retained job gets that job instead of a place.
#[derive(Message)]
#[rtype(result = "Result<Reservation, SubmitError>")]
pub struct Reserve {
    /// The job id the place is for.
    pub id: JobId,
    /// The client's own job id, when it named the job.
    pub client_id: Option<JobId>,
    /// The idempotency key, if any.
    pub key: Option<String>,
    /// The request's digest, for named submissions.
    pub digest: Option<crate::idempotency::Digest>,
}

/// What [`Reserve`] gave.
#[derive(Clone, Debug, PartialEq)]
pub enum Reservation {
    /// A place: write the request, then send [`SubmitPlanned`].
    Reserved,
    /// The submission repeats this retained job.
    Existing(Box<JobStatus>),
}

/// Gives back a place taken by [`Reserve`] (the store refused the job).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Unreserve(pub JobId);

/// How a planned job came to the coordinator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// A client's submission, stored and holding a place taken by [`Reserve`].
    Reserved,
    /// Re-run from the store after a restart (never refused for capacity).
    Restored,
    /// Claimed from the shared queue (the claim bounds how many run here).
    Claimed,
}

/// Forget a job without recording an outcome: its claim in the shared queue was lost to
/// another daemon, which now runs it. Running partitions are cancelled.
#[derive(Message)]
#[rtype(result = "()")]
pub struct ForgetJob(pub JobId);

/// Stop admitting queued jobs; resolves when no job is running any more (the ones already
/// running are finished), with the number of unfinished jobs left for the next start.
#[derive(Message)]
#[rtype(result = "usize")]
pub struct Drain;

/// Resolves once every outcome sent to the store writer so far is written (before a stop).
#[derive(Message)]
#[rtype(result = "()")]
pub struct FlushOutcomes;

/// The store writer finished writing a job's outcome (sent by the coordinator to itself).
#[derive(Message)]
#[rtype(result = "()")]
pub struct OutcomeWritten {
    /// Job id.
    pub id: JobId,
    /// The shared queue's claim was lost: another daemon runs the job now.
    pub claim_lost: bool,
}

/// Record a finished job in the store (on the writer's thread) and prune old outcomes.
#[derive(Message)]
#[rtype(result = "Result<FinishOutcome, String>")]
pub struct RecordOutcome {
    /// Job id.
    pub id: JobId,
    /// Final status and result.
    pub record: FinishedRecord,
}

/// How a submission was answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubmitOutcome {
    /// A new job was accepted.
    Accepted,
    /// The submission repeats an earlier one (same job id or idempotency key, same request):
    /// the existing job, whatever its state.
    Existing,
}

/// An accepted (or repeated) submission.
#[derive(Clone, Debug, PartialEq)]
pub struct Submitted {
    /// The job's status.
    pub status: JobStatus,
    /// New or existing.
    pub outcome: SubmitOutcome,
}

/// Accept a planned job.
#[derive(Message)]
#[rtype(result = "Result<Submitted, SubmitError>")]
pub struct SubmitPlanned {
    /// Id (fresh, the client's, or the stored one after a restart or a claim).
    pub id: JobId,
    /// The request (already in the store).
    pub request: JobRequest,
    /// The adapter's plan.
    pub plan: JobPlan,
    /// Effective priority: the request's, else the kind's default.
    pub priority: i32,
    /// How the job came here.
    pub admission: Admission,
    /// The request's digest, for submissions named by a client id or an idempotency key.
    pub digest: Option<crate::idempotency::Digest>,
}

/// Before planning a named submission: is it a repeat? `None`: no job under its names.
#[derive(Message)]
#[rtype(result = "Option<Result<JobStatus, SubmitError>>")]
pub struct FindRepeat {
    /// The client's job id.
    pub id: Option<JobId>,
    /// The idempotency key.
    pub key: Option<String>,
    /// The request's digest.
    pub digest: crate::idempotency::Digest,
}

/// Restore a finished job from the store.
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

/// The coordinator's part of the status page: unfinished jobs with each partition's stage.
#[derive(Message)]
#[rtype(result = "InFlightView")]
pub struct InFlight;

/// Unfinished jobs, job counts and admission figures.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InFlightView {
    /// Unfinished jobs, running first, then queued; by priority, then age.
    pub jobs: Vec<JobInFlight>,
    /// Job counts.
    pub counts: JobCounts,
    /// Partitions admitted now.
    pub partitions_in_flight: usize,
    /// Partitions admitted at most.
    pub max_partitions_in_flight: usize,
}
