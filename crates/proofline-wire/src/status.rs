//! The status page (`GET /v1/status`): one document that says what the daemon is doing now:
//! every job in flight with each partition's stage and device, the devices' memory, the resident
//! parameter sets, every actor's mailbox depth and busy time, every stage's count and seconds,
//! job counts, uptime and version. `proofline status`, `proofline top` and `/dashboard` all read
//! this page; counters (busy seconds, stage counts) are totals since start, so a reader that polls
//! derives rates from two pages.

use serde::{Deserialize, Serialize};

use crate::{JobId, JobState};

/// The whole page.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StatusPage {
    /// proofline's version.
    pub version: String,
    /// The source commit it was built from ("unknown" when built outside git).
    pub commit: String,
    /// Compute backend (`cpu`, `cuda:0`).
    pub backend: String,
    /// Seconds since the pipeline started.
    pub uptime_s: f64,
    /// When the page was made, Unix milliseconds.
    pub now_ms: u64,
    /// Job counts.
    pub jobs: JobCounts,
    /// Partitions admitted into the pipeline now.
    pub partitions_in_flight: usize,
    /// Partitions admitted at most (`pipeline.max_partitions_in_flight`).
    pub max_partitions_in_flight: usize,
    /// Unfinished jobs, running first, then queued by priority and age.
    pub jobs_in_flight: Vec<JobInFlight>,
    /// Every actor (pool), in pipeline order.
    pub actors: Vec<ActorFigures>,
    /// Every stage that has run, with its count and total seconds.
    pub stages: Vec<StageFigures>,
    /// The compute devices' memory.
    pub devices: Vec<DeviceStatus>,
    /// Resident parameter sets.
    pub params: Vec<ResidentParams>,
}

/// Job counts.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobCounts {
    /// Accepted, no partition started.
    pub queued: usize,
    /// At least one partition started.
    pub running: usize,
    /// Finished jobs still retained for queries.
    pub finished_retained: usize,
    /// Jobs that succeeded since start.
    pub succeeded_total: u64,
    /// Jobs that failed since start.
    pub failed_total: u64,
    /// Jobs cancelled since start.
    pub cancelled_total: u64,
}

/// An unfinished job and where each of its partitions is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobInFlight {
    /// Job id.
    pub id: JobId,
    /// Job kind.
    pub kind: String,
    /// Label from the adapter ("sha256-2").
    pub label: String,
    /// `queued` or `running`.
    pub state: JobState,
    /// Effective priority (higher first): the request's, or the kind's default.
    pub priority: i32,
    /// The request's deadline, Unix milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_ms: Option<u64>,
    /// Partitions proved and verified.
    pub partitions_done: usize,
    /// Seconds since submission.
    pub age_s: f64,
    /// Every partition was proved; the job kind's check of the whole proof is running.
    pub final_check: bool,
    /// Each partition, in partition order.
    pub partitions: Vec<PartitionProgress>,
}

/// Where one partition is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PartitionProgress {
    /// Partition index.
    pub partition: usize,
    /// Its stage.
    pub stage: PartitionStage,
    /// The device its compute stages run on, once admitted (`host`, `cuda:0`).
    pub device: Option<String>,
    /// Seconds in this stage so far (0 for `queued` and `done`).
    pub stage_s: f64,
}

/// The stages a partition goes through, in order. A partition in a stage waits in that stage's
/// mailbox or is being worked on there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PartitionStage {
    /// Not admitted yet (`pipeline.max_partitions_in_flight`).
    Queued,
    /// Parameters being looked up or loaded.
    Params,
    /// Circuit synthesis.
    Synthesis,
    /// Waiting for a memory lease of the allocator.
    LeaseWait,
    /// H polynomial and H MSM on the compute device, MSM preparation alongside.
    H,
    /// Sparse G1 MSMs on the compute device, G2 MSM alongside.
    Msm,
    /// Assembly and verification.
    Verify,
    /// Proved and verified.
    Done,
}

impl PartitionStage {
    /// Every stage, in pipeline order.
    pub const ALL: [PartitionStage; 8] = [
        PartitionStage::Queued,
        PartitionStage::Params,
        PartitionStage::Synthesis,
        PartitionStage::LeaseWait,
        PartitionStage::H,
        PartitionStage::Msm,
        PartitionStage::Verify,
        PartitionStage::Done,
    ];

    /// The name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            PartitionStage::Queued => "queued",
            PartitionStage::Params => "params",
            PartitionStage::Synthesis => "synthesis",
            PartitionStage::LeaseWait => "lease_wait",
            PartitionStage::H => "h",
            PartitionStage::Msm => "msm",
            PartitionStage::Verify => "verify",
            PartitionStage::Done => "done",
        }
    }

    /// Position in [`PartitionStage::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// One actor (pool).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ActorFigures {
    /// Actor name (`synthesis`, `compute`, ...).
    pub actor: String,
    /// Messages sent to it and not yet started.
    pub mailbox_depth: u64,
    /// Partitions waiting for a stage permit to send work to this pool (synthesis and compute;
    /// 0 for the others). The stage scheduler keeps a pool's mailbox no deeper than its
    /// threads, so this is where a pool's backlog shows.
    #[serde(default)]
    pub permit_waiting: u64,
    /// Threads of the pool.
    pub threads: usize,
    /// Handlers running now (threads busy this instant).
    pub running: u64,
    /// Seconds spent in handlers since start, running handlers included.
    pub busy_seconds_total: f64,
    /// Messages handled since start.
    pub messages_total: u64,
}

impl ActorFigures {
    /// Work waiting for this actor: messages in its mailbox and partitions waiting for a
    /// permit to send it work. What dashboards call its queue.
    pub fn backlog(&self) -> u64 {
        self.mailbox_depth + self.permit_waiting
    }
}

/// One stage's totals since start.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StageFigures {
    /// Stage name (`synthesis`, `h_poly`, `msm_h`, ..., `partition_total`).
    pub stage: String,
    /// Times it ran.
    pub count: u64,
    /// Seconds it took, summed.
    pub seconds_total: f64,
}

/// One compute device's memory, as its allocator sees it, with the GPU's own readings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeviceStatus {
    /// Device label (`host`, `cuda:0`).
    pub device: String,
    /// The allocator's budget, bytes.
    pub budget_bytes: u64,
    /// Bytes leased to stages now.
    pub leased_bytes: u64,
    /// Leases outstanding.
    pub leases: usize,
    /// Lease requests waiting for room.
    pub waiting_requests: usize,
    /// Parameter bytes resident in this device's memory.
    pub resident_bytes: u64,
    /// Share of the last measurement window the device ran the pipeline's kernels (GPU only).
    pub kernel_busy_ratio: Option<f64>,
    /// The GPU's own readings (NVML), when available.
    pub gpu: Option<GpuFigures>,
}

/// A GPU's readings from the driver's management library (NVML).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GpuFigures {
    /// Device label (`cuda:N`, N the device's index in PCI order).
    pub device: String,
    /// Marketing name.
    pub name: String,
    /// PCI bus id.
    pub pci_bus_id: String,
    /// Share of the last sample period in which a kernel was running.
    pub utilization_ratio: Option<f64>,
    /// Device memory in use (by every process), bytes.
    pub memory_used_bytes: Option<u64>,
    /// Device memory, bytes.
    pub memory_total_bytes: Option<u64>,
    /// Core temperature, °C.
    pub temperature_celsius: Option<f64>,
}

/// A resident parameter set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResidentParams {
    /// Parameter set id (its file name).
    pub id: String,
    /// Bytes held in host memory.
    pub host_bytes: u64,
    /// Seconds its load took (absent for sets put in the store directly).
    pub load_s: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_are_in_order_and_named_as_on_the_wire() {
        for (i, s) in PartitionStage::ALL.iter().enumerate() {
            assert_eq!(s.index(), i);
            assert_eq!(
                serde_json::to_string(s).unwrap(),
                format!("\"{}\"", s.as_str())
            );
        }
    }
}
