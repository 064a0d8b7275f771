//! The endpoints. See docs/api.md for request and response bodies.

use std::time::Duration;

use actix_web::http::{header, StatusCode};
use actix_web::{web, HttpRequest, HttpResponse};
use base64::Engine;
use proofline_actors::telemetry;
use proofline_actors::{SubmitOutcome, Submitted};
use proofline_jobs::{JobError, JobRequest};
use serde::Deserialize;
use serde_json::json;

use crate::{ApiError, AppState};

/// Longest long-poll, seconds.
const MAX_WAIT_S: u64 = 600;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/healthz", web::get().to(healthz))
        .route("/metrics", web::get().to(metrics))
        .route("/v1/status", web::get().to(status_page))
        .route("/v1/circuits", web::get().to(circuits))
        .service(
            web::resource("/v1/jobs")
                .route(web::post().to(submit))
                .route(web::get().to(list))
                .default_service(web::to(crate::errors::method_not_allowed)),
        )
        .service(
            // POST names a job kind: a raw document upload (crate::upload).
            web::resource("/v1/jobs/{id}")
                .route(web::get().to(status))
                .route(web::delete().to(cancel))
                .route(web::post().to(crate::upload::upload))
                .default_service(web::to(crate::errors::method_not_allowed)),
        )
        .route("/v1/jobs/{id}/cancel", web::post().to(cancel))
        .route("/v1/jobs/{id}/result", web::get().to(result))
        .route("/v1/jobs/{id}/proof", web::get().to(proof));
}

async fn healthz(state: web::Data<AppState>) -> HttpResponse {
    let p = &state.pipeline;
    HttpResponse::Ok().json(json!({
        "status": "ok",
        "backend": p.backend_name(),
        "kinds": p.registry().kinds(),
        "jobs": p.counts().await,
        "memory": p.memory().await,
    }))
}

/// Prometheus text: the actor families from the pipeline's telemetry, then everything recorded
/// through the metrics facade (sampled figures refreshed first).
async fn metrics(state: web::Data<AppState>) -> HttpResponse {
    state.pipeline.publish_sampled();
    let mut body = String::new();
    telemetry::render_prometheus(&mut body);
    if let Some(h) = &state.metrics {
        body.push_str(&h.render());
    }
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4")
        .body(body)
}

/// The status page: jobs in flight with each partition's stage, devices, parameters, actors.
async fn status_page(state: web::Data<AppState>) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(state.pipeline.status_page().await)
}

async fn circuits(state: web::Data<AppState>) -> HttpResponse {
    HttpResponse::Ok().json(json!({ "circuits": state.pipeline.registry().circuits() }))
}

/// The `Idempotency-Key` header.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";
/// Set on the answer to a submission that repeated an earlier one.
pub const IDEMPOTENT_REPLAYED: &str = "idempotent-replayed";

/// Puts the `Idempotency-Key` header into the request (it must agree with a key in the body).
pub fn take_idempotency_key(req: &HttpRequest, job: &mut JobRequest) -> Result<(), ApiError> {
    let Some(v) = req.headers().get(IDEMPOTENCY_KEY) else {
        return Ok(());
    };
    let key = v
        .to_str()
        .map_err(|_| bad_field("Idempotency-Key", "must be visible ASCII"))?
        .trim()
        .to_string();
    match &job.idempotency_key {
        Some(k) if *k != key => Err(bad_field(
            "idempotency_key",
            "differs from the Idempotency-Key header; give one",
        )),
        _ => {
            job.idempotency_key = Some(key);
            Ok(())
        }
    }
}

/// 400 `invalid_field` naming `field`.
pub fn bad_field(field: &str, message: &str) -> ApiError {
    ApiError::from(proofline_actors::SubmitRejected::from(JobError::field(
        field, message,
    )))
}

/// The answer to a submission: 202 for a new job, 200 (and `Idempotent-Replayed: true`) for a
/// repeat of an earlier one; the job status either way.
pub fn submitted(s: Submitted) -> HttpResponse {
    let mut resp = match s.outcome {
        SubmitOutcome::Accepted => HttpResponse::Accepted(),
        SubmitOutcome::Existing => HttpResponse::Ok(),
    };
    resp.insert_header((header::LOCATION, format!("/v1/jobs/{}", s.status.id)));
    if s.outcome == SubmitOutcome::Existing {
        resp.insert_header((IDEMPOTENT_REPLAYED, "true"));
    }
    resp.json(s.status)
}

async fn submit(
    req: HttpRequest,
    state: web::Data<AppState>,
    body: web::Json<JobRequest>,
) -> Result<HttpResponse, ApiError> {
    let mut job = body.into_inner();
    take_idempotency_key(&req, &mut job)?;
    Ok(submitted(state.pipeline.submit_request(job).await?))
}

async fn list(state: web::Data<AppState>) -> HttpResponse {
    HttpResponse::Ok().json(json!({ "jobs": state.pipeline.list().await }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StatusQuery {
    /// Long-poll: wait up to this many seconds for the job to finish.
    wait_s: Option<u64>,
}

fn unknown(id: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "unknown_job",
        format!("no job with id '{id}'"),
    )
}

async fn status(
    state: web::Data<AppState>,
    id: web::Path<String>,
    q: web::Query<StatusQuery>,
) -> Result<HttpResponse, ApiError> {
    let p = &state.pipeline;
    if let Some(w) = q.wait_s.filter(|w| *w > 0) {
        if w > MAX_WAIT_S {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "bad_query",
                format!("wait_s must be at most {MAX_WAIT_S}"),
            ));
        }
        // Either finishes in time or we fall through to the current status.
        let _ = actix_web::rt::time::timeout(Duration::from_secs(w), p.wait(&id)).await;
    }
    let s = p.status(&id).await.ok_or_else(|| unknown(&id))?;
    Ok(HttpResponse::Ok().json(s))
}

async fn cancel(
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let s = state
        .pipeline
        .cancel(&id)
        .await
        .ok_or_else(|| unknown(&id))?;
    Ok(HttpResponse::Ok().json(s))
}

fn wants_octets(req: &HttpRequest) -> bool {
    req.headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("application/octet-stream"))
}

async fn result(
    req: HttpRequest,
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let r = state.pipeline.result(&id).await?;
    if wants_octets(&req) {
        return Ok(octets(&id, &r.proof));
    }
    Ok(HttpResponse::Ok().json(json!({
        "id": id.as_str(),
        "proof_base64": base64::engine::general_purpose::STANDARD.encode(&r.proof),
        "proof_bytes": r.proof.len(),
        "partitions": r.public_inputs.len(),
        "public_inputs": r.public_inputs,
    })))
}

fn octets(id: &str, bytes: &[u8]) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/octet-stream")
        .insert_header((
            header::CONTENT_DISPOSITION,
            format!("attachment; filename=\"{id}.proof\""),
        ))
        .body(bytes.to_vec())
}

async fn proof(
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let r = state.pipeline.result(&id).await?;
    Ok(octets(&id, &r.proof))
}
