//! Job-level types: states, per-stage timings, status and results.

use serde::{Deserialize, Serialize};

/// Identifies a job: letters, digits and '-'.
pub type JobId = String;

/// Lifecycle of a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobState {
    /// Accepted, no partition started.
    Queued,
    /// At least one partition in the pipeline.
    Running,
    /// Every partition proved and verified.
    Succeeded,
    /// A partition failed; the error says why.
    Failed,
    /// Cancelled by a client.
    Cancelled,
}

impl JobState {
    /// Whether the job will not change any more.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            JobState::Succeeded | JobState::Failed | JobState::Cancelled
        )
    }
}

/// Seconds spent in each stage of one partition (wall time seen by the partition, including
/// waiting in mailboxes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StageTimings {
    /// Waiting for admission into the pipeline.
    pub queued_s: f64,
    /// Parameter lookup or load.
    pub params_s: f64,
    /// Circuit construction and synthesis.
    pub synthesis_s: f64,
    /// Waiting for memory leases.
    pub lease_wait_s: f64,
    /// H polynomial and H MSM (overlapped with MSM preparation).
    pub h_s: f64,
    /// 0/1/tail split of the sparse queries.
    pub msm_plan_s: f64,
    /// Sparse G1 MSMs (L, A, B).
    pub msm_g1_s: f64,
    /// G2 MSM (B), overlapped with the G1 MSMs.
    pub msm_g2_s: f64,
    /// Assembly and verification.
    pub verify_s: f64,
    /// Admission to verified proof.
    pub total_s: f64,
}

impl StageTimings {
    /// Adds another partition's timings.
    pub fn add(&mut self, o: &StageTimings) {
        self.queued_s += o.queued_s;
        self.params_s += o.params_s;
        self.synthesis_s += o.synthesis_s;
        self.lease_wait_s += o.lease_wait_s;
        self.h_s += o.h_s;
        self.msm_plan_s += o.msm_plan_s;
        self.msm_g1_s += o.msm_g1_s;
        self.msm_g2_s += o.msm_g2_s;
        self.verify_s += o.verify_s;
        self.total_s += o.total_s;
    }
}

/// Why a job failed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobFailure {
    /// Stable code (`verification_failed`, `params_invalid`, ...).
    pub code: String,
    /// Human-readable message.
    pub message: String,
    /// The partition that failed, if one did.
    pub partition: Option<usize>,
}

/// What a client sees of a job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobStatus {
    /// Job id.
    pub id: JobId,
    /// Job kind.
    pub kind: String,
    /// Label from the adapter ("sha256-2").
    pub label: String,
    /// State.
    pub state: JobState,
    /// Effective priority (higher first): the request's, or the kind's default.
    pub priority: i32,
    /// The request's deadline, Unix milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_ms: Option<u64>,
    /// Partitions in the job.
    pub partitions: usize,
    /// Partitions proved and verified.
    pub partitions_done: usize,
    /// Submission time, Unix milliseconds.
    pub submitted_at_ms: u64,
    /// First partition admitted, Unix milliseconds.
    pub started_at_ms: Option<u64>,
    /// Terminal state reached, Unix milliseconds.
    pub finished_at_ms: Option<u64>,
    /// Stage timings summed over partitions (seconds).
    pub timings: StageTimings,
    /// Per-partition stage timings, in partition order (zero until a partition finishes).
    pub partition_timings: Vec<StageTimings>,
    /// Failure, when failed or cancelled.
    pub error: Option<JobFailure>,
}

/// The output of a successful job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobResult {
    /// The partition proofs, 192 bytes each, concatenated in partition order.
    pub proof: Vec<u8>,
    /// Public inputs of each partition (without ONE), hex of 32-byte little-endian scalars.
    pub public_inputs: Vec<Vec<String>>,
}
