//! From configuration to a running pipeline: logging, the metrics recorder, the adapters of every
//! job kind, the resident parameter store (with a progress bar on loads), and the backend.
//!
//! The daemon, the CLI's in-process `prove`, the integration harness and a sealing worker that
//! embeds proofline all start the pipeline through [`start_pipeline`].

use std::sync::{Arc, OnceLock};

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use proofline_actors::{Pipeline, PipelineOptions};
use proofline_config::{BackendKind, Config};
use proofline_gpu::DeviceOptions;
use proofline_jobs::builtin::{BuiltinAdapter, BuiltinCircuit};
use proofline_jobs::{AdapterRegistry, ParamsStore};

pub mod gpu;

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
    reg.register(Arc::new(proofline_filecoin::PorepC2Adapter::new(
        proofline_filecoin::FilecoinConfig {
            params_dir: cfg.filecoin_params_dir(),
            verify_digests: cfg.filecoin.verify_digests,
        },
    )));
    Ok(reg)
}

/// Pipeline options for the GPU backend on every visible GPU, or why it is not usable.
fn gpu_options(
    cfg: &Config,
    reg: AdapterRegistry,
    store: Arc<ParamsStore>,
) -> Result<PipelineOptions, String> {
    let found = proofline_gpu::probe().map_err(|e| e.to_string())?;
    let mut devices = Vec::new();
    for info in &found {
        let (setup, _log) = gpu::gpu_device(
            info.index,
            cfg.pipeline.compute_slots,
            DeviceOptions::default(),
            |free, _total| match cfg.pipeline.memory_budget_bytes {
                0 => free / 100 * 95,
                b => b,
            },
        )
        .map_err(|e| format!("device {}: {e}", info.index))?;
        devices.push(setup);
    }
    let mut opts = PipelineOptions::cpu(&cfg.pipeline, reg, store);
    opts.devices = devices;
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
