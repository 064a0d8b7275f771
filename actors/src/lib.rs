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
//! * [`devices`]: per device an allocator and a pool of compute slots; the choice of device;
//! * [`compute`]: what a compute slot runs ([`ComputeEngine`]) and how a device sizes it;
//! * [`workers`]: the synthesis, CPU-MSM, compute and parameter-loader actors;
//! * [`allocator`]: the memory budget and the device-global operations of one device;
//! * [`resident`]: parameter sets resident on a device, pinned by the partitions using them;
//! * [`scheduler`]: permits for the heavy stages, granted in job rank order;
//! * [`deadline`]: measured partition times per circuit and the deadline verdict;
//! * [`store`]: accepted and finished jobs, durable (a redb file by default, or a PostgreSQL
//!   queue shared by several daemons);
//! * [`stage_pool`]: the devices and CPU-MSM actors alone, for stage-level load tests;
//! * [`telemetry`]: mailbox depth, busy time and stage latency metrics.

pub mod allocator;
pub mod backpressure;
pub mod compute;
pub mod coordinator;
pub mod deadline;
pub mod devices;
pub mod idempotency;
pub mod job;
pub mod messages;
pub mod partition;
pub mod pipeline;
pub mod resident;
pub mod scheduler;
pub mod stage_pool;
pub mod store;
pub mod telemetry;
pub mod workers;

pub use allocator::{HostMemory, Lease, LeaseKind, MemoryDevice};
pub use compute::{ComputeEngine, CpuEngine, CpuSizing, DeviceSizing, HStage, SparseG1};
pub use devices::{DeviceSetup, DeviceStages};
pub use job::{JobFailure, JobResult, JobState, JobStatus, StageTimings};
pub use messages::JobId;
pub use messages::{AllocatorSnapshot, PipelineCounts, SubmitError, SubmitOutcome, Submitted};
pub use partition::{ComputeInput, G2Stage, PlanSource, Progress};
pub use pipeline::{
    DrainReport, Pipeline, PipelineError, PipelineOptions, Preloader, ResultError, SubmitRejected,
};
pub use stage_pool::StagePool;
pub use store::{StoreError, StoreSpec};
