//! The daemon: the actor pipeline and the HTTP server, started together on background threads
//! and stopped together. `proofline serve`, `proofline demo` and the integration harness all use
//! this.

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;

use anyhow::Context;
use proofline_actors::Pipeline;
use proofline_config::Config;
use proofline_server::{AppState, ServerOptions};

/// A running daemon.
pub struct Daemon {
    addr: SocketAddr,
    handle: actix_web::dev::ServerHandle,
    thread: Option<JoinHandle<std::io::Result<()>>>,
    pipeline: Arc<Pipeline>,
}

impl Daemon {
    /// Starts the pipeline and binds the server to `cfg.server.bind` (port 0: any free port).
    pub fn start(cfg: &Config) -> anyhow::Result<Self> {
        // The recorder first, so that the actors' first metrics are recorded.
        let metrics = proofline_runtime::metrics_handle();
        let pipeline = Arc::new(proofline_runtime::start_pipeline(cfg)?);
        let opts = ServerOptions {
            bind: cfg
                .server
                .bind
                .parse()
                .with_context(|| format!("server.bind = '{}'", cfg.server.bind))?,
            max_body_bytes: cfg.server.max_body_bytes,
            workers: cfg.server.workers,
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
        tracing::info!(%addr, "HTTP API listening");
        Ok(Daemon {
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
        format!("http://{}", self.addr)
    }

    /// The pipeline (for in-process use next to HTTP).
    pub fn pipeline(&self) -> &Arc<Pipeline> {
        &self.pipeline
    }

    /// Stops the server (finishing requests in progress) and then the pipeline.
    pub fn stop(mut self) {
        self.stop_inner();
    }

    fn stop_inner(&mut self) {
        futures::executor::block_on(self.handle.stop(true));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.stop_inner();
        // The pipeline stops when its last handle is dropped.
    }
}
