//! The daemon: the actor pipeline and the HTTP server, started together on background threads
//! and stopped together. `proofline serve`, `proofline demo` and the integration harness all use
//! this.
//!
//! Start-up refuses to expose the API by accident: a bind address other than loopback needs a
//! bearer token (`server.auth_token[_file]`) or an explicit `server.allow_unauthenticated`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::Context;
use proofline_actors::{DrainReport, Pipeline};
use proofline_config::{expand_home, Config};
use proofline_server::{AppState, BearerToken, ServerOptions, TlsFiles};

/// Whether serving `bind` is allowed: loopback always; another address only with a token or
/// with `allow_unauthenticated`.
pub fn check_exposure(
    bind: SocketAddr,
    has_token: bool,
    allow_unauthenticated: bool,
) -> anyhow::Result<()> {
    if bind.ip().is_loopback() || has_token || allow_unauthenticated {
        return Ok(());
    }
    anyhow::bail!(
        "refusing to serve server.bind = {bind} without a token: anyone who can reach that          address could submit and cancel jobs. Set server.auth_token_file (or          server.auth_token), or set server.allow_unauthenticated = true to serve it open on          purpose"
    )
}

/// A running daemon.
pub struct Daemon {
    scheme: &'static str,
    addr: SocketAddr,
    handle: actix_web::dev::ServerHandle,
    thread: Option<JoinHandle<std::io::Result<()>>>,
    pipeline: Arc<Pipeline>,
}

impl Daemon {
    /// Starts the pipeline and binds the server to `cfg.server.bind` (port 0: any free port).
    pub fn start(cfg: &Config) -> anyhow::Result<Self> {
        let bind: SocketAddr = cfg
            .server
            .bind
            .parse()
            .with_context(|| format!("server.bind = '{}'", cfg.server.bind))?;
        let token = cfg.auth_token()?;
        check_exposure(bind, token.is_some(), cfg.server.allow_unauthenticated)?;
        let tls = (!cfg.server.tls_cert.is_empty()).then(|| TlsFiles {
            cert: expand_home(&cfg.server.tls_cert),
            key: expand_home(&cfg.server.tls_key),
        });
        if !bind.ip().is_loopback() && tls.is_none() {
            tracing::warn!(%bind, "serving a non-loopback address without TLS: the token and the jobs travel in clear (set server.tls_cert and server.tls_key)");
        }
        // The recorder first, so that the actors' first metrics are recorded.
        let metrics = proofline_runtime::metrics_handle();
        let pipeline = Arc::new(proofline_runtime::start_pipeline(cfg)?);
        let scheme = if tls.is_some() { "https" } else { "http" };
        let opts = ServerOptions {
            bind,
            max_body_bytes: cfg.server.max_body_bytes,
            workers: cfg.server.workers,
            token: token.map(BearerToken::new),
            tls,
        };
        let state_pipeline = pipeline.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("proofline-http".into())
            .spawn(move || {
                actix_web::rt::System::new().block_on(async move {
                    let state = AppState {
                        pipeline: state_pipeline,
                        metrics,
                    };
                    match proofline_server::bind(state, &opts) {
                        Ok((server, addr)) => {
                            let _ = tx.send(Ok((server.handle(), addr)));
                            server.await
                        }
                        Err(e) => {
                            let msg = format!("cannot listen on {}: {e}", opts.bind);
                            let _ = tx.send(Err(msg));
                            Err(e)
                        }
                    }
                })
            })?;
        let (handle, addr) = rx
            .recv()
            .context("the HTTP server thread stopped during start-up")?
            .map_err(anyhow::Error::msg)?;
        tracing::info!(%addr, scheme, "HTTP API listening");
        Ok(Daemon {
            scheme,
            addr,
            handle,
            thread: Some(thread),
            pipeline,
        })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Base URL of the API.
    pub fn url(&self) -> String {
        format!("{}://{}", self.scheme, self.addr)
    }

    /// The pipeline (for in-process use next to HTTP).
    pub fn pipeline(&self) -> &Arc<Pipeline> {
        &self.pipeline
    }

    /// Stops the server (finishing requests in progress) and then the pipeline.
    pub fn stop(mut self) {
        self.stop_inner();
    }

    /// A graceful stop (SIGTERM): new submissions get 503 `shutting_down` while the running
    /// jobs finish (up to `timeout`; status queries keep working), then the server and the
    /// pipeline stop. Jobs not finished stay in the store for the next start.
    pub fn drain_and_stop(mut self, timeout: Duration) -> DrainReport {
        let report = self.pipeline.drain(timeout);
        self.stop_inner();
        report
    }

    fn stop_inner(&mut self) {
        futures::executor::block_on(self.handle.stop(true));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        // The server's workers let go of their pipeline handles as they wind down; wait for
        // that, so the pipeline (and its store file) is released when this daemon is dropped.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while Arc::strong_count(&self.pipeline) > 1 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.stop_inner();
        // The pipeline stops when its last handle is dropped.
    }
}
