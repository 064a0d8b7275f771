//! Job-level types the pipeline reports (defined in proofline-wire, shared with clients), and
//! the clock the pipeline stamps them with.

pub use proofline_wire::{JobFailure, JobResult, JobState, JobStatus, StageTimings};

/// Unix time in milliseconds.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// The status of a job just accepted: queued, nothing run yet.
pub fn queued_status(
    id: &str,
    kind: &str,
    label: &str,
    priority: i32,
    deadline_ms: Option<u64>,
    partitions: usize,
) -> JobStatus {
    JobStatus {
        id: id.to_string(),
        kind: kind.to_string(),
        label: label.to_string(),
        state: JobState::Queued,
        priority,
        deadline_ms,
        partitions,
        partitions_done: 0,
        submitted_at_ms: now_ms(),
        started_at_ms: None,
        finished_at_ms: None,
        timings: StageTimings::default(),
        partition_timings: vec![StageTimings::default(); partitions],
        error: None,
    }
}
