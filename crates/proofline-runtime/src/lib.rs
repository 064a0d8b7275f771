//! From configuration to a running pipeline: logging, the metrics recorder, the adapters of every
//! job kind, the resident parameter store (with a progress bar on loads), and the backend.
//!
//! The daemon, the CLI's in-process `prove`, the integration harness and a sealing worker that
//! embeds proofline all start the pipeline through [`start_pipeline`].

use std::sync::{Arc, OnceLock};

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use proofline_actors::{MemoryDevice, Pipeline, PipelineOptions};
use proofline_config::{BackendKind, Config};
use proofline_gpu::GpuBackend;
use proofline_groth16::ProverBackend;
use proofline_jobs::builtin::{BuiltinAdapter, BuiltinCircuit};
use proofline_jobs::{AdapterRegistry, ParamsStore};

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

/// Installs the Prometheus recorder once and returns its handle.
pub fn metrics_handle() -> Option<PrometheusHandle> {
    static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            const BUCKETS: &[f64] = &[
                0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0,
                300.0,
            ];
            PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Full("proofline_stage_seconds".into()), BUCKETS)
                .ok()?
                .install_recorder()
                .ok()
        })
        .clone()
}

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

/// The adapters of every job kind this build serves.
pub fn registry(cfg: &Config) -> anyhow::Result<AdapterRegistry> {
    let mut reg = AdapterRegistry::new();
    let demo = BuiltinCircuit::parse(&cfg.demo.circuit)
        .with_context(|| format!("configuration key 'demo.circuit' = '{}'", cfg.demo.circuit))?;
    reg.register(Arc::new(BuiltinAdapter::new(cfg.params_dir(), vec![demo])));
    let filecoin = proofline_filecoin::FilecoinConfig {
        params_dir: cfg.filecoin_params_dir(),
        verify_digests: cfg.filecoin.verify_digests,
    };
    use proofline_filecoin::{PoStAdapter, PoStKind, PorepC2Adapter, SnapUpdateAdapter};
    reg.register(Arc::new(PorepC2Adapter::new(filecoin.clone())));
    reg.register(Arc::new(PoStAdapter::new(
        PoStKind::Window,
        filecoin.clone(),
    )));
    reg.register(Arc::new(PoStAdapter::new(
        PoStKind::Winning,
        filecoin.clone(),
    )));
    reg.register(Arc::new(SnapUpdateAdapter::new(filecoin)));
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
    Ok(opts)
}

/// Starts the pipeline described by `cfg`.
pub fn start_pipeline(cfg: &Config) -> anyhow::Result<Pipeline> {
    let store = Arc::new(ParamsStore::new(cfg.params.check_points).with_progress(load_progress()));
    let reg = registry(cfg)?;
    let opts = match cfg.pipeline.backend {
        BackendKind::Cpu => PipelineOptions::cpu(&cfg.pipeline, reg, store),
        BackendKind::Gpu => gpu_options(cfg, reg, store).map_err(|e| {
            anyhow::anyhow!(
                "configuration key 'pipeline.backend' = \"gpu\", but no GPU is usable: {e} \
                 (use \"auto\" to fall back to the CPU)"
            )
        })?,
        BackendKind::Auto => match gpu_options(cfg, reg.clone(), store.clone()) {
            Ok(o) => o,
            Err(e) => {
                tracing::info!(reason = %e, "no usable GPU: running the CPU backend");
                PipelineOptions::cpu(&cfg.pipeline, reg, store)
            }
        },
    }
    .with_journal(cfg.state_dir());
    let p = Pipeline::start(opts).context("starting the actor pipeline")?;
    tracing::info!(backend = p.backend_name(), kinds = ?p.registry().kinds(), "pipeline started");
    Ok(p)
}
