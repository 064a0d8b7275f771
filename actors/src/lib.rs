//! proofline's actor pipeline.
//!
//! ```text
//! Pipeline (embedding API) ─► JobCoordinator ─► SynthesisActor×N ─► CpuMsmActor×M ─┐
//!                                   ▲                                               ▼
//!                                   │          VramAllocator (per device) ◄─► ComputeActor×slots
//!                                   └──────────── partition results ◄───────────────┘
//! ```
//!
//! The actors know nothing of HTTP; the daemon is a thin layer over [`Pipeline`].
//!
//! * [`messages`]: every message between actors, with who owns which buffer;
//! * [`coordinator`]: jobs, admission by priority, cancellation, results;
//! * [`idempotency`]: which submissions repeat an earlier one (client job ids, idempotency keys);
//! * [`backpressure`]: the `Retry-After` of a full queue, from recent run times;
//! * [`partition`]: the partition driver, one partition's messages from parameters to proof;
//! * [`workers`]: the synthesis, CPU-MSM, compute and parameter-loader actors;
//! * [`allocator`]: the memory budget and the device-global operations of one device;
//! * [`store`]: accepted and finished jobs, durable (a redb file by default, or a PostgreSQL
//!   queue shared by several daemons);
//! * [`telemetry`]: mailbox depth, busy time and stage latency metrics.

pub mod allocator;
pub mod backpressure;
pub mod coordinator;
pub mod idempotency;
pub mod job;
pub mod messages;
pub mod partition;
pub mod pipeline;
pub mod store;
pub mod telemetry;
pub mod workers;

pub use allocator::{HostMemory, MemoryDevice};
pub use job::{JobFailure, JobResult, JobState, JobStatus, StageTimings};
pub use messages::JobId;
pub use messages::{AllocatorSnapshot, PipelineCounts, SubmitError, SubmitOutcome, Submitted};
pub use pipeline::{
    DrainReport, Pipeline, PipelineError, PipelineOptions, ResultError, SubmitRejected,
};
pub use store::{StoreError, StoreSpec};
