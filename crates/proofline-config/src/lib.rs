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

/// `[pipeline]`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PipelineConfig {
    /// Compute backend.
    pub backend: BackendKind,
    /// Synthesis actor threads.
    pub synthesis_workers: usize,
    /// Synthesis through recorded constraint systems, or plain.
    pub synthesis_mode: SynthesisMode,
    /// Directory of recorded constraint systems (`<params stem>.r1cs`); empty: beside each
    /// parameter file.
    pub constraints_dir: String,
    /// CPU-MSM actor threads.
    pub cpu_msm_workers: usize,
    /// Compute actors per device.
    pub compute_slots: usize,
    /// Partitions admitted at once.
    pub max_partitions_in_flight: usize,
    /// Allocator budget, bytes (0 on GPU: free memory at start minus a reserve).
    pub memory_budget_bytes: u64,
    /// Unfinished jobs accepted at most.
    pub max_queued_jobs: usize,
    /// Finished jobs kept for queries.
    pub retain_finished_jobs: usize,
}

/// `[params]`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ParamsConfig {
    /// Parameter directory of the built-in circuits.
    pub dir: String,
    /// Verify points on load.
    pub check_points: bool,
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
        let positive = [
            (
                "pipeline.synthesis_workers",
                self.pipeline.synthesis_workers,
            ),
            ("pipeline.cpu_msm_workers", self.pipeline.cpu_msm_workers),
            ("pipeline.compute_slots", self.pipeline.compute_slots),
            (
                "pipeline.max_partitions_in_flight",
                self.pipeline.max_partitions_in_flight,
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
        assert_eq!(c.pipeline.backend, BackendKind::Cpu);
        assert_eq!(c.pipeline.synthesis_mode, SynthesisMode::Precompiled);
        assert_eq!(c.constraints_dir(), None);
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
        assert_eq!(c.pipeline.synthesis_workers, 5);
        assert_eq!(c.pipeline.cpu_msm_workers, 1);
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
