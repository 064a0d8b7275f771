//! JSON error bodies (with `Retry-After` on every 503) and the extractor configurations that
//! produce them.

use actix_web::error::{JsonPayloadError, PathError, QueryPayloadError};
use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse, ResponseError};
use proofline_actors::{ResultError, SubmitError, SubmitRejected};
use proofline_jobs::ErrorKind;
use serde_json::json;

/// An API error: status, stable code, message.
#[derive(Debug)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// Stable machine-readable code.
    pub code: &'static str,
    /// Human-readable message.
    pub message: String,
    /// Extra fields for the body (e.g. the job status).
    pub extra: Option<serde_json::Value>,
    /// Seconds for the `Retry-After` header (every 503 has one).
    pub retry_after_s: Option<u64>,
}

/// `Retry-After` of a refusal that is not about the queue (the journal could not be written,
/// the daemon is stopping): a supervisor restarts a stopped daemon within seconds, and a full
/// disk is not freed faster than this by retrying.
pub const RETRY_AFTER_UNAVAILABLE_S: u64 = 10;

impl ApiError {
    /// A new error.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            extra: None,
            retry_after_s: (status == StatusCode::SERVICE_UNAVAILABLE)
                .then_some(RETRY_AFTER_UNAVAILABLE_S),
        }
    }

    /// The same error with `Retry-After: secs`.
    pub fn retry_after(mut self, secs: u64) -> Self {
        self.retry_after_s = Some(secs);
        self
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.status
    }

    fn error_response(&self) -> HttpResponse {
        let mut body = json!({ "error": { "code": self.code, "message": self.message } });
        if let (Some(extra), Some(obj)) = (&self.extra, body.as_object_mut()) {
            obj.insert("job".into(), extra.clone());
        }
        let mut resp = HttpResponse::build(self.status);
        if let Some(secs) = self.retry_after_s {
            resp.insert_header((actix_web::http::header::RETRY_AFTER, secs.to_string()));
        }
        resp.json(body)
    }
}

impl From<SubmitRejected> for ApiError {
    fn from(e: SubmitRejected) -> Self {
        match e {
            SubmitRejected::Invalid(err) => {
                let status = match err.kind() {
                    ErrorKind::InvalidRequest => StatusCode::BAD_REQUEST,
                    ErrorKind::Unavailable => StatusCode::UNPROCESSABLE_ENTITY,
                    ErrorKind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
                };
                ApiError::new(status, err.code(), err.to_string())
            }
            SubmitRejected::Refused(
                r @ SubmitError::QueueFull {
                    retry_after_s: secs,
                    ..
                },
            ) => ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "queue_full", r.to_string())
                .retry_after(secs),
            SubmitRejected::Refused(r @ SubmitError::Conflict { .. }) => {
                ApiError::new(StatusCode::CONFLICT, "idempotency_conflict", r.to_string())
            }
            SubmitRejected::Refused(r @ SubmitError::BeingAccepted(_)) => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "being_accepted",
                r.to_string(),
            )
            .retry_after(1),
            SubmitRejected::Refused(r @ SubmitError::Journal { .. }) => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "journal_unavailable",
                r.to_string(),
            ),
            SubmitRejected::Refused(r @ SubmitError::Draining) => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "shutting_down",
                r.to_string(),
            ),
            SubmitRejected::ShuttingDown => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "shutting_down",
                "the pipeline is shutting down",
            ),
        }
    }
}

impl From<ResultError> for ApiError {
    fn from(e: ResultError) -> Self {
        let msg = e.to_string();
        match e {
            ResultError::NotFound(_) => ApiError::new(StatusCode::NOT_FOUND, "unknown_job", msg),
            ResultError::NotReady(s) => ApiError {
                extra: serde_json::to_value(&*s).ok(),
                ..ApiError::new(StatusCode::CONFLICT, "not_ready", msg)
            },
            ResultError::Unsuccessful(s) => ApiError {
                extra: serde_json::to_value(&*s).ok(),
                ..ApiError::new(StatusCode::CONFLICT, "job_unsuccessful", msg)
            },
            ResultError::ShuttingDown => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "shutting_down", msg)
            }
        }
    }
}

/// JSON bodies: size limit (413), any content type, JSON errors for malformed input.
pub fn json_config(limit: usize) -> web::JsonConfig {
    web::JsonConfig::default()
        .limit(limit)
        .content_type_required(false)
        .error_handler(move |err, _req| {
            let api = match &err {
                JsonPayloadError::Overflow { .. }
                | JsonPayloadError::OverflowKnownLength { .. } => too_large(limit),
                JsonPayloadError::Deserialize(e) => ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "malformed_json",
                    format!("request body is not a valid job request: {e}"),
                ),
                other => ApiError::new(StatusCode::BAD_REQUEST, "bad_body", other.to_string()),
            };
            api.into()
        })
}

/// 413 for a body over `server.max_body_bytes`.
pub fn too_large(limit: usize) -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "body_too_large",
        format!("request body exceeds server.max_body_bytes = {limit} bytes"),
    )
}

/// Path parameter errors as JSON.
pub fn path_config() -> web::PathConfig {
    web::PathConfig::default().error_handler(|err: PathError, _| {
        ApiError::new(StatusCode::BAD_REQUEST, "bad_path", err.to_string()).into()
    })
}

/// Query string errors as JSON.
pub fn query_config() -> web::QueryConfig {
    web::QueryConfig::default().error_handler(|err: QueryPayloadError, _| {
        ApiError::new(StatusCode::BAD_REQUEST, "bad_query", err.to_string()).into()
    })
}

/// Unknown routes.
pub async fn not_found(req: HttpRequest) -> HttpResponse {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "no_such_endpoint",
        format!(
            "no endpoint {} {} (see docs/api.md)",
            req.method(),
            req.path()
        ),
    )
    .error_response()
}

/// A known path with a method it does not serve.
pub async fn method_not_allowed(req: HttpRequest) -> HttpResponse {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!(
            "{} is not allowed on {} (see docs/api.md)",
            req.method(),
            req.path()
        ),
    )
    .error_response()
}
