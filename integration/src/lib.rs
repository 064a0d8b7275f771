//! Shared helpers of the integration tests, the load harness and the benchmarks: a daemon on a
//! free loopback port over a temporary parameter directory, cached parameter generation, and
//! small statistics.

use std::path::{Path, PathBuf};

use proofline::daemon::Daemon;
use proofline_config::Config;
use proofline_jobs::builtin::BuiltinCircuit;

/// Where generated test and benchmark parameters are cached (outside the clone):
/// `$PROOFLINE_TEST_CACHE`, else `~/.cache/proofline/test-params`.
pub fn cache_dir() -> PathBuf {
    match std::env::var_os("PROOFLINE_TEST_CACHE") {
        Some(d) if !d.is_empty() => PathBuf::from(d).join("params"),
        _ => proofline_config::expand_home("~/.cache/proofline/test-params"),
    }
}

/// Parameters of `circuit` in the cache, generated when missing.
pub fn cached_params(circuit: &str) -> anyhow::Result<PathBuf> {
    let c = BuiltinCircuit::parse(circuit)?;
    let dir = cache_dir();
    let o = proofline::setup::setup(&c, &dir, false)?;
    if o.generated {
        eprintln!("generated {} in {:.1} s", o.path.display(), o.secs);
    }
    Ok(dir)
}

/// The embedded configuration pointed at `params_dir`, on a free loopback port.
pub fn test_config(params_dir: &Path) -> anyhow::Result<Config> {
    let mut cfg = Config::embedded_default()?;
    cfg.server.bind = "127.0.0.1:0".into();
    cfg.params.dir = params_dir.display().to_string();
    cfg.log.level = "warn".into();
    // Tests that need a durable store choose their own directory.
    cfg.state.store = proofline_config::StoreKind::Memory;
    Ok(cfg)
}

/// Starts a daemon with `cfg`.
pub fn start(cfg: &Config) -> anyhow::Result<Daemon> {
    proofline_runtime::init_logging(cfg);
    Daemon::start(cfg)
}

/// The `(status, code, message)` of an API error; panics on anything else (tests).
pub fn api_error<T: std::fmt::Debug>(
    r: Result<T, proofline_client::ClientError>,
) -> (u16, String, String) {
    match r {
        Err(proofline_client::ClientError::Api {
            status,
            code,
            message,
        }) => (status, code, message),
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// Percentile (0..=100) of unsorted samples, nearest-rank; 0 for none.
pub fn percentile(samples: &[f64], p: f64) -> f64 {
    if samples.is_empty() {
        return 0.0;
    }
    let mut v = samples.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let rank = ((p / 100.0) * v.len() as f64).ceil().max(1.0) as usize;
    v[rank.min(v.len()) - 1]
}

#[cfg(test)]
mod tests {
    #[test]
    fn percentile_nearest_rank() {
        let v = [5.0, 1.0, 3.0, 2.0, 4.0];
        assert_eq!(super::percentile(&v, 50.0), 3.0);
        assert_eq!(super::percentile(&v, 100.0), 5.0);
        assert_eq!(super::percentile(&v, 1.0), 1.0);
        assert_eq!(super::percentile(&[], 50.0), 0.0);
    }
}
