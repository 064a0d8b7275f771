//! `POST /v1/jobs/{kind}`: a job whose document is the request body itself, as a sealing worker
//! holds it (for `porep-c2`: the C1 output or a `Commit2In` file), with no base64 and no JSON
//! wrapping.
//!
//! The body is either the document (any content type but multipart: `application/octet-stream`,
//! `application/json`, ...) or a `multipart/form-data` form with one file part (the document)
//! and text fields. The other request fields come from the query string, from `X-Proofline-*`
//! headers (`X-Proofline-Sector-Id: 42` is `sector_id`) or from form fields: `priority`,
//! `deadline`, `id` (also `job_id`), `circuit` set those request fields; any other name is an `input` field, as a
//! string (`sector_id`, `miner_id`, `prover_id` for `porep-c2`); the same name given twice with
//! different values is refused. `Idempotency-Key` works as on `POST /v1/jobs`.
//!
//! Memory: the body is read once into one buffer, bounded by `server.max_body_bytes`; a multipart
//! form's file part is cut out of that buffer in place. That buffer becomes the request's
//! payload, which the adapter parses once while planning.

use std::collections::BTreeMap;

use actix_web::http::{header, StatusCode};
use actix_web::{web, HttpRequest, HttpResponse};
use futures::StreamExt;
use proofline_jobs::{JobRequest, Payload};
use serde_json::Value;

use crate::errors::too_large;
use crate::routes::{bad_field, submitted, take_idempotency_key};
use crate::{multipart, ApiError, AppState};

/// The body limit (`server.max_body_bytes`), as app data.
#[derive(Clone, Copy, Debug)]
pub struct BodyLimit(pub usize);

/// Prefix of metadata headers.
const HEADER_PREFIX: &str = "x-proofline-";

/// Where a metadata value came from (for conflict messages).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    Query,
    Header,
    Form,
}

impl Source {
    fn name(self) -> &'static str {
        match self {
            Source::Query => "query string",
            Source::Header => "X-Proofline-* header",
            Source::Form => "form field",
        }
    }
}

/// Metadata fields by name.
#[derive(Default)]
struct Fields(BTreeMap<String, (String, Source)>);

impl Fields {
    fn add(&mut self, name: &str, value: &str, source: Source) -> Result<(), ApiError> {
        let name = match name.to_ascii_lowercase().replace('-', "_") {
            n if n == "job_id" => "id".to_string(),
            n => n,
        };
        let value = value.trim().to_string();
        if let Some((old, old_source)) = self.0.get(&name) {
            if *old != value {
                return Err(bad_field(
                    &name,
                    &format!(
                        "given twice with different values: '{old}' ({}) and '{value}' ({})",
                        old_source.name(),
                        source.name()
                    ),
                ));
            }
            return Ok(());
        }
        self.0.insert(name, (value, source));
        Ok(())
    }

    /// The request: reserved names set its fields, the others go into `input` as strings.
    fn into_request(self, kind: &str, document: Vec<u8>) -> Result<JobRequest, ApiError> {
        let mut job = JobRequest::new(kind);
        let mut input = serde_json::Map::new();
        for (name, (value, _)) in self.0 {
            match name.as_str() {
                "priority" => {
                    job.priority = Some(
                        value
                            .parse()
                            .map_err(|_| bad_field("priority", "must be an integer"))?,
                    )
                }
                "deadline" => {
                    job.deadline = Some(value.parse().map_err(|_| {
                        bad_field("deadline", "must be an absolute time in Unix milliseconds")
                    })?)
                }
                "id" => job.id = Some(value),
                "circuit" => job.circuit = Some(value),
                _ => {
                    input.insert(name, Value::String(value));
                }
            }
        }
        job.input = Value::Object(input);
        job.payload = Some(Payload::new(document));
        Ok(job)
    }
}

/// Reads the whole body, refusing more than `limit` bytes (413).
async fn read_body(
    req: &HttpRequest,
    mut body: web::Payload,
    limit: usize,
) -> Result<Vec<u8>, ApiError> {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > limit) {
        return Err(too_large(limit));
    }
    let mut buf = Vec::with_capacity(declared.unwrap_or(0));
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "bad_body",
                format!("reading the body: {e}"),
            )
        })?;
        if buf.len() + chunk.len() > limit {
            return Err(too_large(limit));
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(buf)
}

/// The document and the form fields of a multipart body; the document is cut out of `body` in
/// place.
fn split_form(mut body: Vec<u8>, boundary: &str, fields: &mut Fields) -> Result<Vec<u8>, ApiError> {
    let parts = multipart::parse(&body, boundary).map_err(|m| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_body",
            format!("multipart: {m}"),
        )
    })?;
    let mut files = parts.iter().filter(|p| p.filename.is_some());
    let file = match (files.next(), files.next()) {
        (Some(f), None) => f.range.clone(),
        (None, _) => {
            return Err(bad_field(
                "payload",
                "the form has no file part (the document, e.g. -F file=@c1.json)",
            ))
        }
        (Some(_), Some(_)) => {
            return Err(bad_field("payload", "the form has more than one file part"))
        }
    };
    for p in parts.iter().filter(|p| p.filename.is_none()) {
        let value = std::str::from_utf8(&body[p.range.clone()])
            .map_err(|_| bad_field(&p.name, "form field is not UTF-8 text"))?;
        fields.add(&p.name, value, Source::Form)?;
    }
    body.truncate(file.end);
    body.drain(..file.start);
    Ok(body)
}

/// `POST /v1/jobs/{kind}`.
pub async fn upload(
    req: HttpRequest,
    state: web::Data<AppState>,
    kind: web::Path<String>,
    limit: web::Data<BodyLimit>,
    body: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let kinds = state.pipeline.registry().kinds();
    if !kinds.contains(&kind.as_str()) {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "no_such_endpoint",
            format!(
                "POST /v1/jobs/{kind}: not a job kind (known: {}); submit JSON to POST /v1/jobs",
                kinds.join(", ")
            ),
        ));
    }
    let mut fields = Fields::default();
    let query = web::Query::<Vec<(String, String)>>::from_query(req.query_string())
        .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "bad_query", e.to_string()))?;
    for (name, value) in query.iter() {
        fields.add(name, value, Source::Query)?;
    }
    for (name, value) in req.headers() {
        if let Some(field) = name.as_str().strip_prefix(HEADER_PREFIX) {
            let value = value
                .to_str()
                .map_err(|_| bad_field(field, "header value is not visible ASCII"))?;
            fields.add(field, value, Source::Header)?;
        }
    }
    let body = read_body(&req, body, limit.0).await?;
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let document = match multipart::boundary(content_type) {
        Some(b) => split_form(body, &b, &mut fields)?,
        None => body,
    };
    if document.is_empty() {
        return Err(bad_field("payload", "the body is empty: send the document"));
    }
    let mut job = fields.into_request(&kind, document)?;
    take_idempotency_key(&req, &mut job)?;
    Ok(submitted(state.pipeline.submit_request(job).await?))
}
