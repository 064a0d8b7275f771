//! The HTTP API (actix-web), a thin layer over [`proofline_actors::Pipeline`], and the dashboard
//! that shows it live. Every endpoint is documented in docs/api.md. Errors are JSON:
//! `{"error": {"code", "message"}}` with a 4xx status for the client's mistakes, and a
//! `Retry-After` header on every 503; the daemon keeps serving whatever the input. With a token
//! configured every endpoint but `/healthz` needs it ([`auth`]); with a certificate the API is
//! served over TLS ([`tls`]).
//!
//! * `routes`: the API (`/v1/...`), `/healthz`, `/metrics`, and submission answers (202 new, 200
//!   repeated);
//! * `upload`: `POST /v1/jobs/{kind}`, a job whose document is the raw body;
//! * `multipart`: `multipart/form-data` bodies;
//! * `dashboard`: `/dashboard` and its embedded files;
//! * `errors`: the error bodies and status codes.

pub mod auth;
mod dashboard;
mod errors;
mod multipart;
mod routes;
pub mod tls;
mod upload;

use std::net::SocketAddr;
use std::sync::Arc;

use actix_web::middleware::from_fn;
use actix_web::{web, App, HttpServer};
use metrics_exporter_prometheus::PrometheusHandle;
use proofline_actors::Pipeline;

pub use auth::BearerToken;
pub use errors::ApiError;
pub use tls::TlsFiles;

/// Server settings.
#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// Listen address (port 0 picks a free port).
    pub bind: SocketAddr,
    /// Largest request body, bytes.
    pub max_body_bytes: usize,
    /// HTTP worker threads.
    pub workers: usize,
    /// Token every endpoint but `/healthz` requires.
    pub token: Option<BearerToken>,
    /// Serve HTTPS with these files.
    pub tls: Option<TlsFiles>,
}

/// Shared state of the handlers.
pub struct AppState {
    /// The pipeline.
    pub pipeline: Arc<Pipeline>,
    /// Renders the facade's part of `/metrics` (the actor families are rendered from the
    /// pipeline's telemetry); `None` when no Prometheus recorder is installed.
    pub metrics: Option<PrometheusHandle>,
}

/// Binds the server; returns it (run it by awaiting) and the bound address.
pub fn bind(
    state: AppState,
    opts: &ServerOptions,
) -> std::io::Result<(actix_web::dev::Server, SocketAddr)> {
    let data = web::Data::new(state);
    let token = web::Data::new(opts.token.clone());
    let limit = opts.max_body_bytes;
    let server = HttpServer::new(move || {
        App::new()
            .wrap(from_fn(auth::require_token))
            .app_data(data.clone())
            .app_data(token.clone())
            .app_data(errors::json_config(limit))
            .app_data(web::Data::new(upload::BodyLimit(limit)))
            .app_data(errors::path_config())
            .app_data(errors::query_config())
            .configure(routes::configure)
            .configure(dashboard::configure)
            .default_service(web::to(errors::not_found))
    })
    .workers(opts.workers)
    .disable_signals();
    let server = match &opts.tls {
        Some(files) => server.bind_rustls_0_23(opts.bind, tls::server_config(files)?)?,
        None => server.bind(opts.bind)?,
    };
    let addr = server
        .addrs()
        .first()
        .copied()
        .ok_or_else(|| std::io::Error::other("server bound no address"))?;
    Ok((server.run(), addr))
}
