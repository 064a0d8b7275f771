//! The types on the wire between proofline and its clients: the job request, the job status with
//! its per-stage timings, the result of a successful job, the daemon's status page, and the JSON
//! error body.
//!
//! This crate is a leaf: serde, and base64 for the JSON form of document bytes. The daemon
//! (server, actors) and every client share these definitions, so a client never depends on the
//! prover, actix or bellperson.

mod error;
mod job;
mod request;
mod status;

pub use error::{ErrorBody, ErrorDetail};
pub use job::{JobFailure, JobId, JobResult, JobState, JobStatus, StageTimings};
pub use request::{JobRequest, Payload};
pub use status::{
    ActorFigures, DeviceStatus, GpuFigures, JobCounts, JobInFlight, PartitionProgress,
    PartitionStage, ResidentParams, StageFigures, StatusPage,
};
