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
