//! From configuration to a running pipeline: logging, the metrics recorder ([`observe`]), the
//! adapters of every job kind, the resident parameter store (with a progress bar on loads), the
//! compute devices (every GPU of `pipeline.devices`, else the host), parameters preloaded at start
//! (`params.preload`), and the GPUs' own readings ([`nvml`]).
//!
//! The daemon, the CLI's in-process `prove`, the integration harness and a sealing worker that
//! embeds proofline all start the pipeline through [`start_pipeline`]. A Rust sealing worker
//! holds a [`Prover`] ([`prover`]): `Prover::start(&config)`, then `prove_porep_c2` with the C1
//! output as a struct, or `submit`/`prove` with any job request. Errors are typed
//! ([`RuntimeError`], [`ProveError`]).
//!
//! * [`error`]: why the runtime could not start, why a proof was not made;
//! * [`prover`]: the embedding handle;
//! * [`gpu`]: the GPUs as compute devices (each slot's engine, the allocator's device handle,
//!   the byte sizing of every stage).

pub mod error;
pub mod prover;

pub mod nvml;
pub mod observe;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use proofline_actors::store::embedded::FILE_NAME;
use proofline_actors::store::shared::SharedSpec;
use proofline_actors::{DeviceSetup, Pipeline, PipelineError, PipelineOptions, StoreSpec};
use proofline_config::{BackendKind, Config, Devices, PoolSizes, SlotKernels, StoreKind};
use proofline_gpu::{DeviceOptions, Recording};
use proofline_jobs::builtin::{params_spec_in, BuiltinAdapter, BuiltinCircuit};
use proofline_jobs::{AdapterRegistry, ParamsSpec, ParamsStore};

pub mod gpu;

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

/// The Filecoin adapters' configuration of `cfg` (`[filecoin]`).
fn filecoin_config(cfg: &Config) -> proofline_filecoin::FilecoinConfig {
    proofline_filecoin::FilecoinConfig {
        params_dir: cfg.filecoin_params_dir(),
        verify_digests: cfg.filecoin.verify_digests,
    }
}

/// The `porep-c2` adapter of `cfg` (`[filecoin]`).
pub fn porep_adapter(cfg: &Config) -> proofline_filecoin::PorepC2Adapter {
    proofline_filecoin::PorepC2Adapter::new(filecoin_config(cfg))
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
    let filecoin = filecoin_config(cfg);
    use proofline_filecoin::{PoStAdapter, PoStKind, SnapUpdateAdapter};
    reg.register(Arc::new(porep_adapter(cfg)));
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
/// slots (`pipeline.compute_slots`, `pipeline.slot_kernels`) and budgets, each with its
/// device-op log (`recording`); or why no GPU is used.
pub fn gpu_devices(cfg: &Config, recording: Recording) -> Result<SelectedGpus, String> {
    let p = &cfg.pipeline;
    let options = DeviceOptions {
        recording,
        slot_kernels: match p.slot_kernels {
            SlotKernels::InTurn => proofline_gpu::SlotKernels::InTurn,
            SlotKernels::Concurrent => proofline_gpu::SlotKernels::Concurrent,
        },
    };
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
    let mut devices = Vec::new();
    for i in indices {
        let extras = (p.ones_pair_sums, p.held_tails);
        let d = gpu::gpu_device(i, p.compute_slots, options, extras, |free, _total| {
            p.device_memory_budget.or_else(|| free / 100 * 95)
        })
        .map_err(|e| format!("GPU {i}: {e}"))?;
        devices.push(d);
    }
    let slots: Vec<usize> = devices.iter().map(|d| d.setup.engines.len()).collect();
    let sizes = p.pool_sizes(proofline_actors::pipeline::cpu_cores(), &slots);
    Ok(SelectedGpus { devices, sizes })
}

/// Pipeline options for `cfg`: the GPUs it selects, or the CPU (with one log line saying why
/// when the backend is "auto").
pub fn pipeline_options(
    cfg: &Config,
    reg: AdapterRegistry,
    store: Arc<ParamsStore>,
) -> Result<PipelineOptions, RuntimeError> {
    let cpu = |reg, store| PipelineOptions::cpu(&cfg.pipeline, reg, store);
    let opts = match cfg.pipeline.backend {
        BackendKind::Cpu => cpu(reg, store),
        BackendKind::Gpu => {
            let (devices, sizes) = gpu_devices(cfg, Recording::Off)
                .map(SelectedGpus::setups)
                .map_err(RuntimeError::GpuUnavailable)?;
            with_nvml(cpu(reg, store).with_devices(devices, sizes))
        }
        BackendKind::Auto => match gpu_devices(cfg, Recording::Off) {
            Ok(selected) => {
                let (devices, sizes) = selected.setups();
                with_nvml(cpu(reg, store).with_devices(devices, sizes))
            }
            Err(e) => {
                tracing::info!(reason = %e, "no usable GPU: running the CPU backend");
                cpu(reg, store)
            }
        },
    };
    Ok(opts)
}

/// Adds the GPUs' own readings (NVML) for the status page and `/metrics`, where available.
fn with_nvml(mut opts: PipelineOptions) -> PipelineOptions {
    match nvml::NvmlProbe::open() {
        Ok(probe) => opts.gpu_probe = Some(Arc::new(probe)),
        Err(e) => {
            tracing::info!(reason = %e, "NVML not available: no GPU utilisation, memory or temperature figures")
        }
    }
    opts
}

/// The parameter specs of `params.preload`: built-in circuit names and Filecoin registered
/// proofs, as `GET /v1/circuits` lists them.
pub fn preload_specs(cfg: &Config) -> Result<Vec<ParamsSpec>, RuntimeError> {
    cfg.params
        .preload
        .iter()
        .map(|name| {
            if let Ok(c) = BuiltinCircuit::parse(name) {
                return Ok(params_spec_in(&cfg.params_dir(), &c));
            }
            let rp =
                proofline_filecoin::shapes::parse(name).ok_or_else(|| RuntimeError::Preload {
                    name: name.clone(),
                    reason: "unknown circuit (see GET /v1/circuits)".into(),
                })?;
            proofline_filecoin::params::params_spec(
                rp,
                &cfg.filecoin_params_dir(),
                cfg.filecoin.verify_digests,
            )
            .map_err(|e| RuntimeError::Preload {
                name: name.clone(),
                reason: e.to_string(),
            })
        })
        .collect()
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
    let preload = preload_specs(cfg)?;
    let opts = pipeline_options(cfg, reg, store)?
        .with_store(store_spec(cfg))
        .with_retention_age(
            (cfg.state.retain_finished_s > 0)
                .then(|| Duration::from_secs(cfg.state.retain_finished_s)),
        );
    let opts = PipelineOptions {
        build: build_info(),
        ..opts
    };
    let p = Pipeline::start(opts)?;
    observe::publish_build_info(p.backend_name());
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
            .map_err(|e| RuntimeError::Pipeline(PipelineError::Thread(e)))?;
    }
    Ok(p)
}
