//! The metrics recorder and what it says about proofline: histogram buckets, the HELP text of
//! every metric the daemon exports (one list, here), and the build information.
//!
//! The actor families (`proofline_mailbox_depth`, `proofline_actor_busy_seconds_total`,
//! `proofline_actor_messages_total`, `proofline_actor_threads`) are rendered with their HELP text
//! by `proofline_actors::telemetry::render_prometheus`; everything else goes through the
//! `metrics` facade into the recorder installed here. docs/operations.md lists every metric and
//! what to do when it moves.

use std::sync::OnceLock;

use metrics::{gauge, Unit};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use proofline_actors::pipeline::BuildInfo;

/// Latency buckets of the stage and job histograms, seconds: a 2KiB partition's stages take
/// milliseconds, a 32 GiB job's minutes, a job waiting behind others up to an hour.
pub const LATENCY_BUCKETS: &[f64] = &[
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
    600.0, 1200.0, 1800.0, 3600.0,
];

/// This build: the workspace version and the commit recorded at build time.
pub fn build_info() -> BuildInfo {
    BuildInfo {
        version: env!("CARGO_PKG_VERSION").to_string(),
        commit: env!("PROOFLINE_COMMIT").to_string(),
    }
}

/// Installs the Prometheus recorder once, describes every metric, and returns its handle
/// (`None` when another recorder was installed first).
pub fn metrics_handle() -> Option<PrometheusHandle> {
    static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let handle = PrometheusBuilder::new()
                .set_buckets_for_metric(
                    Matcher::Full("proofline_stage_seconds".into()),
                    LATENCY_BUCKETS,
                )
                .ok()?
                .set_buckets_for_metric(
                    Matcher::Full("proofline_job_seconds".into()),
                    LATENCY_BUCKETS,
                )
                .ok()?
                .set_buckets_for_metric(
                    Matcher::Full("proofline_lease_wait_seconds".into()),
                    LATENCY_BUCKETS,
                )
                .ok()?
                .install_recorder()
                .ok()?;
            describe();
            Some(handle)
        })
        .clone()
}

/// `proofline_build_info{version,commit,backend} 1`, once per backend started.
pub fn publish_build_info(backend: &str) {
    let b = build_info();
    gauge!(
        "proofline_build_info",
        "version" => b.version,
        "commit" => b.commit,
        "backend" => backend.to_string()
    )
    .set(1.0);
}

/// What kind of metric a name is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricKind {
    /// A counter (`_total`).
    Counter,
    /// A gauge.
    Gauge,
    /// A histogram (`_bucket`, `_sum`, `_count` series).
    Histogram,
}

/// When a daemon exports a metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exported {
    /// Always, once the first job has run.
    Always,
    /// Only when the compute stages report kernel-busy figures (GPU backend).
    GpuBackend,
    /// Only with the GPU backend and NVML available.
    Nvml,
}

/// A metric that goes through the `metrics` facade: name, kind, unit, HELP text, availability.
#[derive(Clone, Copy, Debug)]
pub struct MetricDef {
    /// Name.
    pub name: &'static str,
    /// Kind.
    pub kind: MetricKind,
    /// Unit (for the recorder; the name already ends in it).
    pub unit: Option<Unit>,
    /// HELP text.
    pub help: &'static str,
    /// When it is exported.
    pub exported: Exported,
}

const fn def(
    name: &'static str,
    kind: MetricKind,
    unit: Option<Unit>,
    help: &'static str,
    exported: Exported,
) -> MetricDef {
    MetricDef {
        name,
        kind,
        unit,
        help,
        exported,
    }
}

use Exported::{Always, GpuBackend, Nvml};
use MetricKind::{Counter, Gauge, Histogram};

/// Every metric that goes through the facade, with its HELP text: the one list. The actor
/// families rendered by telemetry are in `proofline_actors::telemetry::ACTOR_FAMILIES`.
pub const METRICS: &[MetricDef] = &[
    def("proofline_build_info", Gauge, None,
        "Always 1; the labels say which version and commit run on which backend.", Always),
    def("proofline_uptime_seconds", Gauge, Some(Unit::Seconds),
        "Seconds since the pipeline started; a drop means the daemon restarted.", Always),
    def("proofline_stage_seconds", Histogram, Some(Unit::Seconds),
        "Latency of one pipeline stage of one partition (synthesis, h_poly, msm_h, msm_plan, msm_g1_sparse, msm_g2, assemble_verify, final_check, partition_total).", Always),
    def("proofline_job_seconds", Histogram, Some(Unit::Seconds),
        "End-to-end latency of a succeeded job, from acceptance to its verified proof, by job kind.", Always),
    def("proofline_partitions_in_flight", Gauge, None,
        "Partitions admitted into the pipeline (at most pipeline.max_partitions_in_flight).", Always),
    def("proofline_jobs", Gauge, None,
        "Unfinished jobs by state (queued: no partition admitted yet; running).", Always),
    def("proofline_jobs_accepted_total", Counter, None, "Jobs accepted.", Always),
    def("proofline_jobs_finished_total", Counter, None,
        "Jobs ended, by outcome (succeeded, failed, cancelled).", Always),
    def("proofline_verification_failures_total", Counter, None,
        "Proofs that failed verification or the job kind's final check; never expected: alert on any.", Always),
    def("proofline_deadline_exceeded_total", Counter, None,
        "Jobs failed early with deadline_exceeded (the deadline passed, or the measured time of their remaining partitions no longer fit), by job kind; alert on window-post and winning-post.", Always),
    def("proofline_stage_permits_held", Gauge, None,
        "Stage permits granted and not returned, by stage class (synthesis, compute): partitions running that stage, at most the pool's size.", Always),
    def("proofline_stage_permits_waiting", Gauge, None,
        "Partitions waiting for a stage permit, by stage class; served by rank (priority, deadline, age).", Always),
    def("proofline_memory_budget_bytes", Gauge, Some(Unit::Bytes),
        "The allocator's memory budget of the device (host memory on the CPU backend).", Always),
    def("proofline_memory_leased_bytes", Gauge, Some(Unit::Bytes),
        "Bytes of the device's budget leased to stages now.", Always),
    def("proofline_memory_waiting_requests", Gauge, None,
        "Lease requests waiting for room in the device's budget.", Always),
    def("proofline_params_resident_bytes", Gauge, Some(Unit::Bytes),
        "Bytes of a resident parameter set, by location (host memory or device memory).", Always),
    def("proofline_memory_resident_bytes", Gauge, Some(Unit::Bytes),
        "Bytes of the parameter sets resident on the device (on a GPU: bases and NTT tables in device memory).", Always),
    def("proofline_resident_sets", Gauge, None,
        "Parameter sets resident on the device.", Always),
    def("proofline_lease_wait_seconds", Histogram, Some(Unit::Seconds),
        "Time from a lease request to its grant, by device and kind (transient: a stage's buffers; resident: a parameter set).", Always),
    def("proofline_allocator_trims_total", Counter, None,
        "Trims of the device's memory pool, each run with nothing in flight on the device.", GpuBackend),
    def("proofline_device_pool_used_bytes", Gauge, Some(Unit::Bytes),
        "Memory of the GPU's stream-ordered pool handed out to the pipeline now.", GpuBackend),
    def("proofline_device_pool_reserved_bytes", Gauge, Some(Unit::Bytes),
        "Memory the GPU's stream-ordered pool holds from the device now.", GpuBackend),
    def("proofline_device_pool_used_high_bytes", Gauge, Some(Unit::Bytes),
        "High-water mark of the pool memory handed out (never above the budget: allocations happen only inside leases).", GpuBackend),
    def("proofline_staging_queue_depth", Gauge, None,
        "Chunks of streamed bases copied into pinned host memory and waiting for the compute slot.", GpuBackend),
    def("proofline_staged_chunks_total", Counter, None,
        "Chunks of bases streamed from host memory to the compute slot (parameter sets that do not fit the device).", GpuBackend),
    def("proofline_params_load_seconds", Gauge, Some(Unit::Seconds),
        "Seconds the load of a resident parameter set took (digest check included).", Always),
    def("proofline_gpu_busy_ratio", Gauge, None,
        "Share of the last measurement window in which the pipeline's kernels ran on the device (CUDA events of the compute stages).", GpuBackend),
    def("proofline_gpu_utilization_ratio", Gauge, None,
        "Share of the driver's last sample period in which any kernel ran on the GPU (NVML).", Nvml),
    def("proofline_gpu_memory_used_bytes", Gauge, Some(Unit::Bytes),
        "Device memory in use by every process (NVML).", Nvml),
    def("proofline_gpu_memory_total_bytes", Gauge, Some(Unit::Bytes),
        "Device memory installed (NVML).", Nvml),
    def("proofline_gpu_temperature_celsius", Gauge, None,
        "GPU core temperature in degrees Celsius (NVML).", Nvml),
];

/// Gives the recorder the HELP text (and unit) of every metric in [`METRICS`].
fn describe() {
    for m in METRICS {
        match (m.kind, m.unit) {
            (Counter, Some(u)) => metrics::describe_counter!(m.name, u, m.help),
            (Counter, None) => metrics::describe_counter!(m.name, m.help),
            (Gauge, Some(u)) => metrics::describe_gauge!(m.name, u, m.help),
            (Gauge, None) => metrics::describe_gauge!(m.name, m.help),
            (Histogram, Some(u)) => metrics::describe_histogram!(m.name, u, m.help),
            (Histogram, None) => metrics::describe_histogram!(m.name, m.help),
        }
    }
}
