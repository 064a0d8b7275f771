//! Shared helpers of the integration tests, the load harness and the benchmarks: a daemon on a
//! free loopback port over a temporary parameter directory, cached parameter generation, a bare
//! HTTP GET, small statistics, a headless browser for the dashboard test ([`webdriver`]), and
//! [`stages`], the stage harness (synthetic partitions through the compute devices).

pub mod stages;
pub mod webdriver;

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
            ..
        }) => (status, code, message),
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// An HTTP answer: status code, headers (lower-case names), body as text.
#[derive(Clone, Debug)]
pub struct HttpReply {
    /// Status code.
    pub status: u16,
    /// Headers, names in lower case.
    pub headers: Vec<(String, String)>,
    /// Body.
    pub body: String,
}

impl HttpReply {
    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A bare HTTP/1.1 GET over a TCP socket (loopback), for endpoints the client crate has no call
/// for (the dashboard's files).
pub fn http_get(base: &str, path: &str) -> std::io::Result<HttpReply> {
    use std::io::{Read, Write};
    let addr = base.trim_start_matches("http://").trim_end_matches('/');
    let mut s = std::net::TcpStream::connect(addr)?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Ok(HttpReply {
        status,
        headers,
        body: body.to_string(),
    })
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
