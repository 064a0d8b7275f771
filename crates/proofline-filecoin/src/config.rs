//! Configuration of the Filecoin job kinds: the parameter directory and digest checking.

use std::path::PathBuf;

/// Environment variable filecoin-proofs reads for its parameter directory.
pub const PARAMETER_CACHE_ENV: &str = "FIL_PROOFS_PARAMETER_CACHE";

/// filecoin-proofs' default parameter directory.
pub const DEFAULT_PARAMETER_DIR: &str = "/var/tmp/filecoin-proof-parameters";

/// Where Filecoin parameters are and how much to trust them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilecoinConfig {
    /// Directory holding `v28-*.params` / `v28-*.vk` files (as `paramfetch` / `lotus
    /// fetch-params` leave them).
    pub params_dir: PathBuf,
    /// Check each `.params` file's digest against filecoin-proofs' `parameters.json` before its
    /// first use (about 1 s per GB read; random test parameters fail it).
    pub verify_digests: bool,
}

impl FilecoinConfig {
    /// `FIL_PROOFS_PARAMETER_CACHE` if set and non-empty, else
    /// `/var/tmp/filecoin-proof-parameters`, with digest checking as given.
    pub fn from_env(verify_digests: bool) -> Self {
        FilecoinConfig {
            params_dir: default_params_dir(),
            verify_digests,
        }
    }
}

impl Default for FilecoinConfig {
    fn default() -> Self {
        Self::from_env(false)
    }
}

/// The parameter directory filecoin-proofs itself would use.
pub fn default_params_dir() -> PathBuf {
    match std::env::var_os(PARAMETER_CACHE_ENV) {
        Some(v) if !v.is_empty() => PathBuf::from(v),
        _ => PathBuf::from(DEFAULT_PARAMETER_DIR),
    }
}
