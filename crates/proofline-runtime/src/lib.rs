//! From configuration to a running pipeline: logging, the metrics recorder ([`observe`]), the
//! adapters of every job kind, the resident parameter store (with a progress bar on loads), the
//! backend, and the GPUs' own readings ([`nvml`]).
//!
//! The daemon, the CLI's in-process `prove`, the integration harness and a sealing worker that
//! embeds proofline all start the pipeline through [`start_pipeline`]. A Rust sealing worker
//! holds a [`Prover`] ([`prover`]): `Prover::start(&config)`, then `prove_porep_c2` with the C1
//! output as a struct, or `submit`/`prove` with any job request. Errors are typed
//! ([`RuntimeError`], [`ProveError`]).
//!
//! * [`error`]: why the runtime could not start, why a proof was not made;
//! * [`prover`]: the embedding handle.

pub mod error;
pub mod prover;

pub mod nvml;
pub mod observe;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use proofline_actors::store::embedded::FILE_NAME;
use proofline_actors::store::shared::SharedSpec;
use proofline_actors::{MemoryDevice, Pipeline, PipelineOptions, StoreSpec};
use proofline_config::{BackendKind, Config, StoreKind};
use proofline_gpu::GpuBackend;
use proofline_groth16::ProverBackend;
use proofline_jobs::builtin::{BuiltinAdapter, BuiltinCircuit};
use proofline_jobs::{AdapterRegistry, ParamsStore};

pub use error::{ProveError, RuntimeError};
pub use proofline_filecoin::SealCommitPhase1Output;
pub use prover::Prover;

/// Installs the tracing subscriber once (later calls are no-ops).
pub fn init_logging(cfg: &Config) {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        let filter = tracing_subscriber::EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(&cfg.log.level));
        let builder = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .with_writer(std::io::stderr);
        let _ = if cfg.log.format == "json" {
            builder.json().try_init()
        } else {
            builder.compact().try_init()
        };
    });
}

pub use observe::{build_info, metrics_handle};

/// A progress bar for parameter loads, on stderr.
fn load_progress() -> proofline_jobs::params_store::ProgressFactory {
    Arc::new(|label: &str, total: u64| {
        let bar = ProgressBar::new(total);
        bar.set_style(
            ProgressStyle::with_template(
                "loading {msg} [{bar:30}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta})",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        bar.set_message(label.to_string());
        Box::new(move |done: u64| {
            bar.set_position(done);
            if done >= total {
                bar.finish_and_clear();
            }
        })
    })
}

/// The `porep-c2` adapter of `cfg` (`[filecoin]`).
pub fn porep_adapter(cfg: &Config) -> proofline_filecoin::PorepC2Adapter {
    proofline_filecoin::PorepC2Adapter::new(proofline_filecoin::FilecoinConfig {
        params_dir: cfg.filecoin_params_dir(),
        verify_digests: cfg.filecoin.verify_digests,
    })
}

/// The adapters of every job kind this build serves.
pub fn registry(cfg: &Config) -> Result<AdapterRegistry, RuntimeError> {
    let mut reg = AdapterRegistry::new();
    let demo = BuiltinCircuit::parse(&cfg.demo.circuit).map_err(|source| RuntimeError::Config {
        key: "demo.circuit",
        value: cfg.demo.circuit.clone(),
        source,
    })?;
    reg.register(Arc::new(BuiltinAdapter::new(cfg.params_dir(), vec![demo])));
    reg.register(Arc::new(porep_adapter(cfg)));
    Ok(reg)
}

/// The allocator's view of a GPU: trims the device's stream-ordered pool when the allocator
/// has no lease outstanding (the only place a device-global call is made).
struct GpuMemory {
    backend: Arc<GpuBackend>,
}

impl GpuMemory {
    /// Takes the device for the allocator. The pool keeps up to `budget` bytes of freed memory
    /// cached across synchronisations: with the driver's default threshold (0) every
    /// synchronisation hands freed memory back and each allocation of the next stage is cold
    /// (milliseconds per GiB). Memory goes back to the device only when the allocator trims.
    fn new(backend: Arc<GpuBackend>, budget: u64) -> Result<Self, String> {
        backend
            .context()
            .set_pool_release_threshold(budget)
            .map_err(|e| format!("setting the memory pool's release threshold: {e}"))?;
        Ok(GpuMemory { backend })
    }
}

impl MemoryDevice for GpuMemory {
    fn label(&self) -> String {
        self.backend.name().to_string()
    }

    fn trim(&mut self) {
        if let Err(e) = self.backend.context().trim_pool(0) {
            tracing::warn!(device = %self.label(), error = %e, "pool trim failed");
        }
    }
}

/// Pipeline options for the GPU backend on device 0, or why it is not usable.
fn gpu_options(
    cfg: &Config,
    reg: AdapterRegistry,
    store: Arc<ParamsStore>,
) -> Result<PipelineOptions, String> {
    let devices = proofline_gpu::probe().map_err(|e| e.to_string())?;
    let first = devices.first().ok_or("no CUDA device found")?;
    tracing::info!(device = ?first, count = devices.len(), "GPU found; using device 0");
    let backend = Arc::new(GpuBackend::new(0).map_err(|e| e.to_string())?);
    let budget = match cfg.pipeline.memory_budget_bytes {
        0 => {
            let (free, _total) = backend.context().memory_info().map_err(|e| e.to_string())?;
            (free as u64) / 100 * 95
        }
        b => b,
    };
    let mut opts = PipelineOptions::cpu(&cfg.pipeline, reg, store);
    opts.memory = Box::new(GpuMemory::new(backend.clone(), budget)?);
    opts.memory_budget = budget;
    opts.backend = backend;
    match nvml::NvmlProbe::open() {
        Ok(probe) => opts.gpu_probe = Some(Arc::new(probe)),
        Err(e) => {
            tracing::info!(reason = %e, "NVML not available: no GPU utilisation, memory or temperature figures")
        }
    }
    Ok(opts)
}

/// This host's name (for claim holders); "host" when unknown.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "host".into())
}

/// Where the pipeline keeps its jobs: the shared queue when `queue.postgres_url` is set, else
/// `state.store`.
pub fn store_spec(cfg: &Config) -> StoreSpec {
    if !cfg.queue.postgres_url.is_empty() {
        let holder = if cfg.queue.holder.is_empty() {
            format!("{}-{}", host_name(), std::process::id())
        } else {
            cfg.queue.holder.clone()
        };
        return StoreSpec::Shared(SharedSpec {
            url: cfg.queue.postgres_url.clone(),
            lease: Duration::from_secs(cfg.queue.lease_s),
            holder,
            max_claimed: cfg.queue.max_claimed_jobs,
            poll: Duration::from_millis(cfg.queue.poll_ms.max(10)),
        });
    }
    match cfg.state.store {
        StoreKind::Embedded => StoreSpec::Embedded {
            path: cfg.state_dir().join(FILE_NAME),
        },
        StoreKind::Memory => StoreSpec::Memory,
    }
}

/// Starts the pipeline described by `cfg`.
pub fn start_pipeline(cfg: &Config) -> Result<Pipeline, RuntimeError> {
    let store = Arc::new(ParamsStore::new(cfg.params.check_points).with_progress(load_progress()));
    let reg = registry(cfg)?;
    let opts = match cfg.pipeline.backend {
        BackendKind::Cpu => PipelineOptions::cpu(&cfg.pipeline, reg, store),
        BackendKind::Gpu => gpu_options(cfg, reg, store).map_err(RuntimeError::GpuUnavailable)?,
        BackendKind::Auto => match gpu_options(cfg, reg.clone(), store.clone()) {
            Ok(o) => o,
            Err(e) => {
                tracing::info!(reason = %e, "no usable GPU: running the CPU backend");
                PipelineOptions::cpu(&cfg.pipeline, reg, store)
            }
        },
    }
    .with_store(store_spec(cfg))
    .with_retention_age(
        (cfg.state.retain_finished_s > 0).then(|| Duration::from_secs(cfg.state.retain_finished_s)),
    );
    let opts = PipelineOptions {
        build: build_info(),
        ..opts
    };
    let p = Pipeline::start(opts)?;
    observe::publish_build_info(p.backend_name());
    tracing::info!(backend = p.backend_name(), kinds = ?p.registry().kinds(), "pipeline started");
    Ok(p)
}
