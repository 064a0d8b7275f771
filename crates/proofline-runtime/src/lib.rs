//! From configuration to a running pipeline: logging, the metrics recorder, the adapters of every
//! job kind, the resident parameter store (with a progress bar on loads), and the backend.
//!
//! The daemon, the CLI's in-process `prove`, the integration harness and a sealing worker that
//! embeds proofline all start the pipeline through [`start_pipeline`].

use std::sync::{Arc, OnceLock};

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use proofline_actors::{DeviceSetup, Pipeline, PipelineOptions};
use proofline_config::{BackendKind, Config, Devices, PoolSizes};
use proofline_gpu::DeviceOptions;
use proofline_jobs::builtin::{params_spec_in, BuiltinAdapter, BuiltinCircuit};
use proofline_jobs::{AdapterRegistry, ParamsSpec, ParamsStore};

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

/// The GPUs of a configuration, opened, and the pool sizes for them.
pub struct SelectedGpus {
    /// One per GPU.
    pub devices: Vec<gpu::OpenedGpu>,
    /// Pool sizes, every "auto" resolved for this many GPUs.
    pub sizes: PoolSizes,
}

impl SelectedGpus {
    fn setups(self) -> (Vec<DeviceSetup>, PoolSizes) {
        (
            self.devices.into_iter().map(|d| d.setup).collect(),
            self.sizes,
        )
    }
}

/// The GPUs `cfg` selects (`pipeline.backend`, `pipeline.devices`), opened with their compute
/// slots and budgets, each with its device-op log; or why no GPU is used.
pub fn gpu_devices(cfg: &Config, options: DeviceOptions) -> Result<SelectedGpus, String> {
    let p = &cfg.pipeline;
    if p.backend == BackendKind::Cpu {
        return Err("pipeline.backend = \"cpu\"".into());
    }
    let found = proofline_gpu::probe().map_err(|e| e.to_string())?;
    let indices: Vec<usize> = match &p.devices {
        Devices::All => found.iter().map(|d| d.index).collect(),
        Devices::List(v) => v.clone(),
    };
    if indices.is_empty() {
        return Err("pipeline.devices = [] (no GPU)".into());
    }
    if let Some(i) = indices
        .iter()
        .find(|i| found.iter().all(|d| d.index != **i))
    {
        return Err(format!(
            "configuration key 'pipeline.devices' names GPU {i}, but {} GPU(s) are visible",
            found.len()
        ));
    }
    let sizes = p.pool_sizes(proofline_actors::pipeline::cpu_cores(), indices.len());
    let mut devices = Vec::new();
    for i in indices {
        let d = gpu::gpu_device(i, sizes.compute_slots, options, |free, _total| {
            p.device_memory_budget.or_else(|| free / 100 * 95)
        })
        .map_err(|e| format!("GPU {i}: {e}"))?;
        devices.push(d);
    }
    Ok(SelectedGpus { devices, sizes })
}

/// Pipeline options for `cfg`: the GPUs it selects, or the CPU (with one log line saying why
/// when the backend is "auto").
pub fn pipeline_options(
    cfg: &Config,
    reg: AdapterRegistry,
    store: Arc<ParamsStore>,
) -> anyhow::Result<PipelineOptions> {
    let cpu = |reg, store| PipelineOptions::cpu(&cfg.pipeline, reg, store);
    let opts = match cfg.pipeline.backend {
        BackendKind::Cpu => cpu(reg, store),
        BackendKind::Gpu => {
            let (devices, sizes) = gpu_devices(cfg, DeviceOptions::default())
                .map(SelectedGpus::setups)
                .map_err(|e| {
                    anyhow::anyhow!(
                    "configuration key 'pipeline.backend' = \"gpu\", but no GPU is usable: {e} \
                     (use \"auto\" to fall back to the CPU)"
                )
                })?;
            cpu(reg, store).with_devices(devices, sizes)
        }
        BackendKind::Auto => match gpu_devices(cfg, DeviceOptions::default()) {
            Ok(selected) => {
                let (devices, sizes) = selected.setups();
                cpu(reg, store).with_devices(devices, sizes)
            }
            Err(e) => {
                tracing::info!(reason = %e, "no usable GPU: running the CPU backend");
                cpu(reg, store)
            }
        },
    };
    Ok(opts)
}

/// The parameter specs of `params.preload`: built-in circuit names and Filecoin registered
/// proofs, as `GET /v1/circuits` lists them.
pub fn preload_specs(cfg: &Config) -> anyhow::Result<Vec<ParamsSpec>> {
    cfg.params
        .preload
        .iter()
        .map(|name| {
            if let Ok(c) = BuiltinCircuit::parse(name) {
                return Ok(params_spec_in(&cfg.params_dir(), &c));
            }
            let rp = proofline_filecoin::shapes::parse(name).ok_or_else(|| {
                anyhow::anyhow!(
                    "configuration key 'params.preload': unknown circuit '{name}' (see GET /v1/circuits)"
                )
            })?;
            proofline_filecoin::params::params_spec(
                rp,
                &cfg.filecoin_params_dir(),
                cfg.filecoin.verify_digests,
            )
            .map_err(|e| anyhow::anyhow!("configuration key 'params.preload': {name}: {e}"))
        })
        .collect()
}

/// Starts the pipeline described by `cfg`.
pub fn start_pipeline(cfg: &Config) -> anyhow::Result<Pipeline> {
    let store = Arc::new(ParamsStore::new(cfg.params.check_points).with_progress(load_progress()));
    let reg = registry(cfg)?;
    let preload = preload_specs(cfg)?;
    let opts = pipeline_options(cfg, reg, store)?.with_journal(cfg.state_dir());
    let p = Pipeline::start(opts).context("starting the actor pipeline")?;
    tracing::info!(backend = p.backend_name(), kinds = ?p.registry().kinds(), "pipeline started");
    if !preload.is_empty() {
        // in the background: the daemon serves (and /healthz shows progress) meanwhile
        let preloader = p.preloader();
        std::thread::Builder::new()
            .name("proofline-preload".into())
            .spawn(move || {
                for spec in preload {
                    let id = spec.id.clone();
                    match futures::executor::block_on(preloader.preload(spec)) {
                        Ok(placed) => tracing::info!(params = %id, ?placed, "preload done"),
                        Err(e) => tracing::error!(params = %id, error = %e, "preload failed"),
                    }
                }
            })
            .context("starting the preload thread")?;
    }
    Ok(p)
}
