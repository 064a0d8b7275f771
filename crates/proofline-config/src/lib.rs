//! Configuration: the embedded default (`config/default.toml`), an optional file, and
//! `PROOFLINE_<SECTION>__<KEY>` environment variables, in that order of precedence (last wins).
//!
//! Only names of that shape (a double underscore after the prefix) are configuration; an
//! unknown section or key among them is an error that names it. Other `PROOFLINE_*` variables
//! (`PROOFLINE_TEST_CACHE`, `PROOFLINE_NVCC`, `PROOFLINE_URL`, ...) belong to the build, the
//! tests or the command-line client and are not read here ([`is_config_var`]).
//!
//! Every key is documented in `config/default.toml` and `config/README.md`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

mod values;
pub use values::{parse_size, Count, Devices, MemorySize};

/// The default configuration, compiled in.
pub const DEFAULT_TOML: &str = include_str!("../../../config/default.toml");

/// Prefix of environment overrides.
pub const ENV_PREFIX: &str = "PROOFLINE";

/// Whether an environment variable is a configuration override: `PROOFLINE_<SECTION>__<KEY>`.
pub fn is_config_var(name: &str) -> bool {
    name.strip_prefix(ENV_PREFIX)
        .and_then(|rest| rest.strip_prefix('_'))
        .is_some_and(|rest| rest.contains("__"))
}

/// Errors while loading configuration.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A layer could not be read or parsed, or a key has the wrong type.
    #[error("configuration: {0}")]
    Load(#[from] config::ConfigError),
    /// A value is out of range.
    #[error("configuration key '{key}': {message}")]
    Invalid {
        /// Dotted key.
        key: &'static str,
        /// What is wrong.
        message: String,
    },
}

/// The whole configuration.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// HTTP server.
    pub server: ServerConfig,
    /// Actor pipeline.
    pub pipeline: PipelineConfig,
    /// Built-in circuits' parameters.
    pub params: ParamsConfig,
    /// Filecoin proofs.
    pub filecoin: FilecoinConfig,
    /// The demo job.
    pub demo: DemoConfig,
    /// Where accepted jobs are kept.
    pub state: StateConfig,
    /// The queue shared by several daemons.
    pub queue: QueueConfig,
    /// Logging.
    pub log: LogConfig,
}

/// `[server]`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// Listen address.
    pub bind: String,
    /// Largest request body, bytes.
    pub max_body_bytes: usize,
    /// HTTP worker threads.
    pub workers: usize,
    /// Bearer token every endpoint but `/healthz` requires; empty: none.
    pub auth_token: String,
    /// File holding the bearer token (read at start, surrounding whitespace trimmed).
    pub auth_token_file: String,
    /// Serve a non-loopback address without a token (refused otherwise).
    pub allow_unauthenticated: bool,
    /// PEM certificate chain for TLS; with `tls_key`, the API is served over HTTPS.
    pub tls_cert: String,
    /// PEM private key for TLS.
    pub tls_key: String,
    /// On SIGTERM/SIGINT: seconds to let running jobs finish before stopping.
    pub drain_timeout_s: u64,
}

/// Where accepted jobs are kept (`state.store`).
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum StoreKind {
    /// A database file in `state.dir`: jobs survive restarts and crashes.
    Embedded,
    /// Nothing persisted (tests, throwaway runs).
    Memory,
}

/// Which compute backend to use.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// CPU only.
    Cpu,
    /// GPU required.
    Gpu,
    /// GPU when usable, else CPU.
    Auto,
}

/// How partitions are synthesized.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum SynthesisMode {
    /// Witness generation plus the shape's recorded A, B, C matrices (recorded by the first
    /// partition of a shape whose file is missing).
    Precompiled,
    /// Every constraint of every partition evaluated (nothing recorded).
    Plain,
}

/// How the compute slots of one GPU run their stages' kernels.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SlotKernels {
    /// One slot's kernels at a time, in the order the slots asked; the other slots' uploads
    /// overlap them.
    InTurn,
    /// Every slot launches when it is ready; several slots' kernels share the GPU.
    Concurrent,
}

/// Which ones' subset sums a GPU's resident parameter sets take for their sparse queries.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum OnesPairSums {
    /// The bases alone.
    Off,
    /// The L, A, B (G1) and B (G2) bases each followed by their pair sums (half as many points
    /// again) where the device budget holds them beside every compute slot's H stage at the
    /// lease it would have without them; the bases alone elsewhere.
    WhereRoom,
    /// As `WhereRoom`, with the subset sums of aligned triples of bases (two or three of each
    /// triple: four thirds as many points again) where the budget holds those, else the pair
    /// sums where it holds those, else the bases alone.
    TriplesWhereRoom,
}

/// Whether a GPU holds the sparse G1 queries' tails of a parameter set once a partition has
/// split its scalars.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum HeldTails {
    /// Every partition gathers its tails' bases.
    Off,
    /// The first partition's L, A and B (G1) tails are held on the device, with precomputed
    /// copies where the budget holds them beside the resident set and every compute slot's
    /// stages, else gathered alone where those fit; later partitions run their tails over them.
    WhereRoom,
}

/// `[pipeline]`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PipelineConfig {
    /// Compute backend.
    pub backend: BackendKind,
    /// GPUs to use.
    pub devices: Devices,
    /// Synthesis actor threads.
    pub synthesis_workers: Count,
    /// Synthesis through recorded constraint systems, or plain.
    pub synthesis_mode: SynthesisMode,
    /// Directory of recorded constraint systems (`<params stem>.r1cs`); empty: beside each
    /// parameter file.
    pub constraints_dir: String,
    /// CPU-MSM actor threads.
    pub cpu_msm_workers: Count,
    /// Compute actors per device.
    pub compute_slots: Count,
    /// How a GPU's compute slots run their kernels.
    pub slot_kernels: SlotKernels,
    /// Which ones' subset sums resident sets take for their sparse queries.
    pub ones_pair_sums: OnesPairSums,
    /// Whether GPUs hold the sparse G1 queries' tails.
    pub held_tails: HeldTails,
    /// Partitions admitted at once.
    pub max_partitions_in_flight: Count,
    /// Extra partitions admitted for a job that outranks every partition in flight.
    pub priority_reserve_partitions: usize,
    /// Host memory budget (CPU backend stages; partitions admitted).
    pub host_memory_budget: MemorySize,
    /// Device memory budget of each GPU's allocator.
    pub device_memory_budget: MemorySize,
    /// Unfinished jobs accepted at most.
    pub max_queued_jobs: usize,
    /// Finished jobs kept for queries.
    pub retain_finished_jobs: usize,
}

/// The pool sizes of a pipeline, with every "auto" resolved for a machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct PoolSizes {
    /// Synthesis actor threads.
    pub synthesis_workers: usize,
    /// CPU-MSM actor threads.
    pub cpu_msm_workers: usize,
    /// Compute slots per device (with GPUs, the most any one GPU has).
    pub compute_slots: usize,
    /// Partitions admitted at once.
    pub max_partitions_in_flight: usize,
}

impl PipelineConfig {
    /// Resolves the "auto" counts for a machine with `cores` CPU cores and, with GPUs, the
    /// compute slots each GPU in use was opened with (`gpu_slots`; empty: the CPU backend).
    ///
    /// A GPU's slots are `compute_slots`, or with "auto" as many H stages of a 32 GiB partition
    /// as its memory runs at once, one or two (proofline-gpu's `bytes::slots_that_fit`: one
    /// slot's uploads and host work overlap the other's kernels where both fit). With GPUs: half
    /// the cores synthesizing (synthesis is the CPU side's longest stage; a pre-compiled partition
    /// also spreads its witness and products over rayon's threads, so measure with
    /// `proofline-synth` to size it), a quarter on CPU-MSM work (the split and the G2 MSM), and
    /// as many partitions in flight as synthesis workers plus every GPU's slots. On the CPU: 1
    /// of each, 2 in flight (the compute stages already use every core).
    pub fn pool_sizes(&self, cores: usize, gpu_slots: &[usize]) -> PoolSizes {
        let cores = cores.max(1);
        let gpus = !gpu_slots.is_empty();
        let (synthesis, cpu_msm) = if gpus {
            ((cores / 2).max(1), (cores / 4).max(1))
        } else {
            (1, 1)
        };
        let compute_slots = match gpu_slots.iter().max() {
            Some(&most) => most,
            None => self.compute_slots.or(1),
        };
        let synthesis_workers = self.synthesis_workers.or(synthesis);
        let in_flight = if gpus {
            synthesis_workers + gpu_slots.iter().sum::<usize>()
        } else {
            2
        };
        PoolSizes {
            synthesis_workers,
            cpu_msm_workers: self.cpu_msm_workers.or(cpu_msm),
            compute_slots,
            max_partitions_in_flight: self.max_partitions_in_flight.or(in_flight),
        }
    }
}

/// `[params]`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ParamsConfig {
    /// Parameter directory of the built-in circuits.
    pub dir: String,
    /// Verify points on load.
    pub check_points: bool,
    /// Circuits whose parameters are loaded (and made resident on the GPUs) at start.
    pub preload: Vec<String>,
}

/// `[filecoin]`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FilecoinConfig {
    /// Filecoin parameter directory; empty for the usual default.
    pub params_dir: String,
    /// Check published digests before first use.
    pub verify_digests: bool,
}

/// `[demo]`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DemoConfig {
    /// Circuit name.
    pub circuit: String,
    /// Preimage seed.
    pub seed: u64,
}

/// `[state]`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct StateConfig {
    /// `embedded` or `memory`.
    pub store: StoreKind,
    /// State directory; empty: `$XDG_STATE_HOME/proofline`, else `~/.local/state/proofline`.
    pub dir: String,
    /// Finished jobs older than this many seconds are pruned (0: by count only).
    pub retain_finished_s: u64,
}

/// `[queue]`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct QueueConfig {
    /// PostgreSQL URL of the shared queue; empty: this daemon keeps its own jobs.
    pub postgres_url: String,
    /// Seconds a claim lasts without renewal.
    pub lease_s: u64,
    /// Name of this daemon in claims; empty: host name and process id.
    pub holder: String,
    /// Jobs this daemon holds claims on at once.
    pub max_claimed_jobs: usize,
    /// Milliseconds between looks for claimable jobs when idle.
    pub poll_ms: u64,
}

/// `[log]`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LogConfig {
    /// EnvFilter directive.
    pub level: String,
    /// "text" or "json".
    pub format: String,
}

impl Config {
    /// Loads the layers: default, then `file` (if given), then the environment.
    pub fn load(file: Option<&Path>) -> Result<Self, ConfigError> {
        Self::load_with_env(file, std::env::vars())
    }

    /// As [`Config::load`], with the environment given explicitly (tests).
    pub fn load_with_env(
        file: Option<&Path>,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, ConfigError> {
        let mut b = config::Config::builder().add_source(config::File::from_str(
            DEFAULT_TOML,
            config::FileFormat::Toml,
        ));
        if let Some(f) = file {
            b = b.add_source(
                config::File::from(f)
                    .format(config::FileFormat::Toml)
                    .required(true),
            );
        }
        let env_map: config::Map<String, String> =
            env.into_iter().filter(|(k, _)| is_config_var(k)).collect();
        b = b.add_source(
            config::Environment::with_prefix(ENV_PREFIX)
                .prefix_separator("_")
                .separator("__")
                .try_parsing(true)
                .list_separator(",")
                .with_list_parse_key("params.preload")
                .source(Some(env_map)),
        );
        let cfg: Config = b.build()?.try_deserialize()?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// The embedded default.
    pub fn embedded_default() -> Result<Self, ConfigError> {
        Self::load_with_env(None, std::iter::empty())
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let p = &self.pipeline;
        let positive = [
            ("pipeline.synthesis_workers", p.synthesis_workers.or(1)),
            ("pipeline.cpu_msm_workers", p.cpu_msm_workers.or(1)),
            ("pipeline.compute_slots", p.compute_slots.or(1)),
            (
                "pipeline.max_partitions_in_flight",
                p.max_partitions_in_flight.or(1),
            ),
            ("pipeline.max_queued_jobs", self.pipeline.max_queued_jobs),
            ("server.workers", self.server.workers),
            ("queue.max_claimed_jobs", self.queue.max_claimed_jobs),
            ("server.max_body_bytes", self.server.max_body_bytes),
        ];
        for (key, v) in positive {
            if v == 0 {
                return Err(ConfigError::Invalid {
                    key,
                    message: "must be at least 1".into(),
                });
            }
        }
        if self.server.bind.parse::<std::net::SocketAddr>().is_err() {
            return Err(ConfigError::Invalid {
                key: "server.bind",
                message: format!(
                    "'{}' is not an address like 127.0.0.1:9797",
                    self.server.bind
                ),
            });
        }
        if self.queue.lease_s < 2 {
            return Err(ConfigError::Invalid {
                key: "queue.lease_s",
                message: "must be at least 2 (claims are renewed every third of it)".into(),
            });
        }
        if self.server.tls_cert.is_empty() != self.server.tls_key.is_empty() {
            return Err(ConfigError::Invalid {
                key: "server.tls_cert",
                message: "server.tls_cert and server.tls_key are set together or not at all".into(),
            });
        }
        if !self.server.auth_token.is_empty() && !self.server.auth_token_file.is_empty() {
            return Err(ConfigError::Invalid {
                key: "server.auth_token",
                message: "set server.auth_token or server.auth_token_file, not both".into(),
            });
        }
        if !matches!(self.log.format.as_str(), "text" | "json") {
            return Err(ConfigError::Invalid {
                key: "log.format",
                message: format!("'{}' is neither \"text\" nor \"json\"", self.log.format),
            });
        }
        Ok(())
    }

    /// The effective configuration as TOML.
    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).unwrap_or_else(|e| format!("# cannot render: {e}\n"))
    }

    /// The built-in parameter directory, with `~/` expanded.
    pub fn params_dir(&self) -> PathBuf {
        expand_home(&self.params.dir)
    }

    /// The Filecoin parameter directory: the key, else `FIL_PROOFS_PARAMETER_CACHE`, else
    /// `/var/tmp/filecoin-proof-parameters`.
    pub fn filecoin_params_dir(&self) -> PathBuf {
        if !self.filecoin.params_dir.is_empty() {
            return expand_home(&self.filecoin.params_dir);
        }
        match std::env::var_os("FIL_PROOFS_PARAMETER_CACHE") {
            Some(v) if !v.is_empty() => PathBuf::from(v),
            _ => PathBuf::from("/var/tmp/filecoin-proof-parameters"),
        }
    }

    /// The directory of recorded constraint systems, if one is set (else they live beside the
    /// parameter files).
    pub fn constraints_dir(&self) -> Option<PathBuf> {
        (!self.pipeline.constraints_dir.is_empty())
            .then(|| expand_home(&self.pipeline.constraints_dir))
    }

    /// The state directory: the key, else `$XDG_STATE_HOME/proofline`, else
    /// `~/.local/state/proofline`.
    pub fn state_dir(&self) -> PathBuf {
        if !self.state.dir.is_empty() {
            return expand_home(&self.state.dir);
        }
        match std::env::var_os("XDG_STATE_HOME") {
            Some(v) if !v.is_empty() => PathBuf::from(v).join("proofline"),
            _ => expand_home("~/.local/state/proofline"),
        }
    }

    /// The bearer token: `server.auth_token`, else the contents of `server.auth_token_file`
    /// (trimmed); `None` when neither is set.
    pub fn auth_token(&self) -> Result<Option<String>, ConfigError> {
        if !self.server.auth_token.is_empty() {
            return Ok(Some(self.server.auth_token.clone()));
        }
        if self.server.auth_token_file.is_empty() {
            return Ok(None);
        }
        let path = expand_home(&self.server.auth_token_file);
        let text = std::fs::read_to_string(&path).map_err(|e| ConfigError::Invalid {
            key: "server.auth_token_file",
            message: format!("cannot read {}: {e}", path.display()),
        })?;
        let token = text.trim().to_string();
        if token.is_empty() {
            return Err(ConfigError::Invalid {
                key: "server.auth_token_file",
                message: format!("{} is empty", path.display()),
            });
        }
        Ok(Some(token))
    }
}

/// Expands a leading `~/` to `$HOME`.
pub fn expand_home(p: &str) -> PathBuf {
    match (p.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => PathBuf::from(p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn embedded_default_loads() {
        let c = Config::embedded_default().unwrap();
        assert_eq!(c.server.bind, "127.0.0.1:9797");
        assert_eq!(c.pipeline.backend, BackendKind::Auto);
        assert_eq!(c.pipeline.synthesis_mode, SynthesisMode::Precompiled);
        assert_eq!(c.constraints_dir(), None);
        assert_eq!(c.pipeline.devices, Devices::All);
        assert_eq!(c.pipeline.host_memory_budget, MemorySize::Auto);
        assert_eq!(c.pipeline.device_memory_budget, MemorySize::Auto);
        assert_eq!(c.pipeline.synthesis_workers, Count::Auto);
        assert!(c.params.preload.is_empty());
        assert!(c.to_toml().contains("[pipeline]"));
    }

    #[test]
    fn file_then_environment_override() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("p.toml");
        std::fs::write(
            &f,
            "[server]\nbind = \"127.0.0.1:1234\"\n[pipeline]\nsynthesis_workers = 3\n",
        )
        .unwrap();
        let c = Config::load_with_env(
            Some(&f),
            env(&[
                ("PROOFLINE_PIPELINE__SYNTHESIS_WORKERS", "5"),
                ("PROOFLINE_TEST_CACHE", "/tmp/x"),
                ("OTHER", "x"),
            ]),
        )
        .unwrap();
        assert_eq!(c.server.bind, "127.0.0.1:1234");
        assert_eq!(c.pipeline.synthesis_workers, Count::Fixed(5));
        assert_eq!(c.pipeline.cpu_msm_workers, Count::Auto);
    }

    #[test]
    fn budgets_devices_and_counts_take_auto_sizes_and_lists() {
        let c = Config::load_with_env(
            None,
            env(&[
                ("PROOFLINE_PIPELINE__DEVICE_MEMORY_BUDGET", "64GiB"),
                ("PROOFLINE_PIPELINE__HOST_MEMORY_BUDGET", "1073741824"),
                ("PROOFLINE_PIPELINE__DEVICES", "0,1"),
                ("PROOFLINE_PIPELINE__COMPUTE_SLOTS", "3"),
                ("PROOFLINE_PIPELINE__SLOT_KERNELS", "concurrent"),
                ("PROOFLINE_PARAMS__PRELOAD", "sha256-2"),
            ]),
        )
        .unwrap();
        assert_eq!(c.pipeline.slot_kernels, SlotKernels::Concurrent);
        assert_eq!(
            Config::embedded_default().unwrap().pipeline.slot_kernels,
            SlotKernels::InTurn
        );
        assert_eq!(c.pipeline.device_memory_budget, MemorySize::Bytes(64 << 30));
        assert_eq!(c.pipeline.host_memory_budget, MemorySize::Bytes(1 << 30));
        assert_eq!(c.pipeline.devices, Devices::List(vec![0, 1]));
        assert_eq!(c.pipeline.compute_slots, Count::Fixed(3));
        // a file can say it in TOML
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("p.toml");
        std::fs::write(
            &f,
            "[pipeline]\ndevices = []\nsynthesis_workers = \"auto\"\n[params]\npreload = [\"a\", \"b\"]\n",
        )
        .unwrap();
        let c = Config::load_with_env(Some(&f), env(&[])).unwrap();
        assert_eq!(c.pipeline.devices, Devices::List(vec![]));
        assert_eq!(c.params.preload, vec!["a", "b"]);
        // the effective configuration reads back the same
        let back: Config = toml::from_str(&c.to_toml()).unwrap();
        assert_eq!(back, c);
        // auto pool sizes: the H200 box of the benchmarks (16 cores, one GPU of two slots)
        let sizes = c.pipeline.pool_sizes(16, &[2]);
        assert_eq!(
            (
                sizes.synthesis_workers,
                sizes.cpu_msm_workers,
                sizes.compute_slots,
                sizes.max_partitions_in_flight
            ),
            (8, 4, 2, 10)
        );
        assert_eq!(c.pipeline.pool_sizes(2, &[]).compute_slots, 1);
        // two GPUs of two and one slots (an H200 and an H100 with "auto")
        let mixed = c.pipeline.pool_sizes(1, &[2, 1]);
        assert_eq!(
            (mixed.compute_slots, mixed.max_partitions_in_flight),
            (2, 4)
        );
    }

    #[test]
    fn build_and_test_variables_are_not_configuration() {
        let c = Config::load_with_env(
            None,
            env(&[
                ("PROOFLINE_TEST_CACHE", "/tmp/cache"),
                ("PROOFLINE_NVCC", "/opt/cuda/bin/nvcc"),
                ("PROOFLINE_CUDA_ARCHS", "90"),
                ("PROOFLINE_REQUIRE_KERNELS", "1"),
                ("PROOFLINE_GPU_DEVICE", "0"),
                ("PROOFLINE_URL", "http://127.0.0.1:9797"),
                ("PROOFLINE_CONFIG", "/etc/proofline.toml"),
                ("PROOFLINE_LOG__LEVEL", "debug"),
            ]),
        )
        .unwrap();
        assert_eq!(c.log.level, "debug");
        assert!(is_config_var("PROOFLINE_SERVER__BIND"));
        assert!(!is_config_var("PROOFLINE_SERVER"));
        assert!(!is_config_var("PROOFLINEX__A"));
        // A name of the configuration's shape is checked: a typo is an error naming it.
        let e =
            Config::load_with_env(None, env(&[("PROOFLINE_PIPELNE__BACKEND", "cpu")])).unwrap_err();
        assert!(e.to_string().contains("pipelne"), "{e}");
        let e = Config::load_with_env(None, env(&[("PROOFLINE_SERVER__BINDD", "x")])).unwrap_err();
        assert!(e.to_string().contains("bindd"), "{e}");
    }

    #[test]
    fn bad_values_name_the_key() {
        let e = Config::load_with_env(None, env(&[("PROOFLINE_PIPELINE__COMPUTE_SLOTS", "0")]))
            .unwrap_err();
        assert!(e.to_string().contains("pipeline.compute_slots"), "{e}");
        let e =
            Config::load_with_env(None, env(&[("PROOFLINE_SERVER__BIND", "nowhere")])).unwrap_err();
        assert!(e.to_string().contains("server.bind"), "{e}");
        let e = Config::load_with_env(
            None,
            env(&[("PROOFLINE_PIPELINE__SYNTHESIS_MODE", "magic")]),
        )
        .unwrap_err();
        assert!(e.to_string().contains("magic"), "{e}");
        let e = Config::load_with_env(
            None,
            env(&[("PROOFLINE_PIPELINE__SLOT_KERNELS", "interleaved")]),
        )
        .unwrap_err();
        assert!(e.to_string().contains("interleaved"), "{e}");
        for (key, bad) in [
            ("PROOFLINE_PIPELINE__DEVICE_MEMORY_BUDGET", "lots"),
            ("PROOFLINE_PIPELINE__DEVICES", "gpu0"),
            ("PROOFLINE_PIPELINE__SYNTHESIS_WORKERS", "many"),
        ] {
            let e = Config::load_with_env(None, env(&[(key, bad)])).unwrap_err();
            let field = key.rsplit("__").next().unwrap().to_ascii_lowercase();
            assert!(
                e.to_string().contains(&field) || e.to_string().contains(bad),
                "{e}"
            );
        }
        let e = Config::load_with_env(None, env(&[("PROOFLINE_PIPELINE__BACKEND", "fpga")]))
            .unwrap_err();
        assert!(
            e.to_string().contains("fpga") || e.to_string().contains("backend"),
            "{e}"
        );
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("p.toml");
        std::fs::write(&f, "[server]\nbindd = \"x\"\n").unwrap();
        let e = Config::load_with_env(Some(&f), env(&[])).unwrap_err();
        assert!(e.to_string().contains("bindd"), "{e}");
        let e = Config::load_with_env(None, env(&[("PROOFLINE_SERVER__TLS_CERT", "/c.pem")]))
            .unwrap_err();
        assert!(e.to_string().contains("server.tls_cert"), "{e}");
        let e =
            Config::load_with_env(None, env(&[("PROOFLINE_STATE__STORE", "floppy")])).unwrap_err();
        assert!(e.to_string().contains("floppy"), "{e}");
    }

    #[test]
    fn state_and_token_defaults() {
        let c = Config::embedded_default().unwrap();
        assert_eq!(c.state.store, StoreKind::Embedded, "durable by default");
        assert!(c.state_dir().ends_with("proofline"));
        assert_eq!(c.auth_token().unwrap(), None);
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("token");
        std::fs::write(&f, "  s3cret\n").unwrap();
        let c = Config::load_with_env(
            None,
            env(&[("PROOFLINE_SERVER__AUTH_TOKEN_FILE", f.to_str().unwrap())]),
        )
        .unwrap();
        assert_eq!(c.auth_token().unwrap().as_deref(), Some("s3cret"));
        std::fs::write(&f, "\n").unwrap();
        assert!(c
            .auth_token()
            .unwrap_err()
            .to_string()
            .contains("server.auth_token_file"));
    }
}
