//! A small blocking client of the proofline HTTP API (docs/api.md). With
//! [`Client::with_token`] every request carries `Authorization: Bearer <token>`; with
//! [`Client::with_root_cert`] an `https://` daemon is trusted by that certificate.
//!
//! Every call retries what is worth retrying ([`retry`]): transport errors and HTTP 503, with
//! bounded exponential backoff and jitter, or after the daemon's `Retry-After`. Every
//! submission carries an idempotency key, the same on each attempt, so a retried submission
//! never starts a second job.

pub mod retry;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use proofline_wire::{ErrorBody, JobRequest, JobStatus, StatusPage};
use serde::de::DeserializeOwned;
use serde::Deserialize;

pub use retry::{new_idempotency_key, RetryPolicy};

/// Client errors.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The daemon could not be reached or the connection failed.
    #[error("cannot reach the daemon at {url}: {message}")]
    Transport {
        /// URL tried.
        url: String,
        /// What failed.
        message: String,
    },
    /// The daemon answered with an error body.
    #[error("HTTP {status} {code}: {message}")]
    Api {
        /// HTTP status.
        status: u16,
        /// Error code from the body.
        code: String,
        /// Message from the body.
        message: String,
        /// The `Retry-After` header, seconds (503 answers carry one).
        retry_after_s: Option<u64>,
    },
    /// The answer could not be decoded.
    #[error("unexpected answer from {url}: {message}")]
    Decode {
        /// URL.
        url: String,
        /// What failed.
        message: String,
    },
    /// Waiting timed out.
    #[error("job {0} did not finish within the timeout")]
    Timeout(String),
}

/// The JSON result of a job.
#[derive(Clone, Debug, Deserialize)]
pub struct ResultBody {
    /// Job id.
    pub id: String,
    /// Proof bytes, base64.
    pub proof_base64: String,
    /// Number of proof bytes.
    pub proof_bytes: usize,
    /// Partitions.
    pub partitions: usize,
    /// Public inputs per partition (hex scalars).
    pub public_inputs: Vec<Vec<String>>,
}

impl ResultBody {
    /// The decoded proof bytes.
    pub fn proof(&self) -> Result<Vec<u8>, ClientError> {
        base64::engine::general_purpose::STANDARD
            .decode(&self.proof_base64)
            .map_err(|e| ClientError::Decode {
                url: format!("result of {}", self.id),
                message: e.to_string(),
            })
    }
}

impl ClientError {
    /// Whether trying again may succeed: transport errors and 503.
    pub fn is_retryable(&self) -> bool {
        match self {
            ClientError::Transport { .. } => true,
            ClientError::Api { status, .. } => *status == 503,
            _ => false,
        }
    }

    fn retry_after(&self) -> Option<Duration> {
        match self {
            ClientError::Api {
                retry_after_s: Some(s),
                ..
            } => Some(Duration::from_secs(*s)),
            _ => None,
        }
    }
}

/// A submission's answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Submission {
    /// The job's status.
    pub status: JobStatus,
    /// Whether the daemon answered with a job it had already accepted for the same key (HTTP
    /// 200 and `Idempotent-Replayed`) rather than a new one (202).
    pub replayed: bool,
}

/// Client of one daemon.
#[derive(Clone)]
pub struct Client {
    base: String,
    agent: ureq::Agent,
    retry: RetryPolicy,
    token: Option<String>,
}

fn agent(tls: Option<ureq::tls::TlsConfig>) -> ureq::Agent {
    let mut b = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(900)));
    if let Some(tls) = tls {
        b = b.tls_config(tls);
    }
    b.build().new_agent()
}

/// An answer: status, headers that matter, body.
struct Answer {
    status: u16,
    retry_after_s: Option<u64>,
    replayed: bool,
    body: Vec<u8>,
}

impl Client {
    /// A client of the daemon at `base` (e.g. `http://127.0.0.1:9797`), with the default
    /// [`RetryPolicy`].
    pub fn new(base: impl Into<String>) -> Self {
        Client {
            base: base.into().trim_end_matches('/').to_string(),
            agent: agent(None),
            retry: RetryPolicy::default(),
            token: None,
        }
    }

    /// Sends `Authorization: Bearer <token>` with every request.
    pub fn with_token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// Trusts the daemon's TLS certificate (PEM; a self-signed one or its CA's) instead of the
    /// system's roots.
    pub fn with_root_cert(mut self, pem_file: &Path) -> Result<Self, ClientError> {
        let fail = |message: String| ClientError::Transport {
            url: pem_file.display().to_string(),
            message,
        };
        let pem = std::fs::read(pem_file).map_err(|e| fail(e.to_string()))?;
        let cert = ureq::tls::Certificate::from_pem(&pem).map_err(|e| fail(e.to_string()))?;
        let tls = ureq::tls::TlsConfig::builder()
            .root_certs(ureq::tls::RootCerts::Specific(Arc::new(vec![cert])))
            .build();
        self.agent = agent(Some(tls));
        Ok(self)
    }

    fn authed<B>(&self, rb: ureq::RequestBuilder<B>) -> ureq::RequestBuilder<B> {
        match &self.token {
            Some(t) => rb.header("authorization", format!("Bearer {t}")),
            None => rb,
        }
    }

    /// The same client with another retry policy.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// The daemon's base URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// Sends a request (built anew by `send` for each attempt), retrying per the policy.
    fn call(
        &self,
        url: &str,
        send: impl Fn() -> Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    ) -> Result<Answer, ClientError> {
        let mut attempt = 1;
        loop {
            let r = Self::read(url, send());
            let err = match r {
                Ok(a) if a.status == 503 => Self::api_error(&a),
                Ok(a) => return Ok(a),
                Err(e) => e,
            };
            match self
                .retry
                .delay(attempt, err.retry_after(), retry::random_unit())
                .filter(|_| err.is_retryable())
            {
                Some(wait) => std::thread::sleep(wait),
                None if attempt > 1 && matches!(err, ClientError::Transport { .. }) => {
                    return Err(ClientError::Transport {
                        url: url.to_string(),
                        message: format!("{err} (after {attempt} attempts)"),
                    })
                }
                None => return Err(err),
            }
            attempt += 1;
        }
    }

    fn read(
        url: &str,
        r: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    ) -> Result<Answer, ClientError> {
        let mut resp = r.map_err(|e| ClientError::Transport {
            url: url.to_string(),
            message: e.to_string(),
        })?;
        let header = |name: &str| {
            resp.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let retry_after_s = header("retry-after").and_then(|v| v.trim().parse().ok());
        let replayed = header("idempotent-replayed").is_some_and(|v| v == "true");
        let status = resp.status().as_u16();
        let body = resp
            .body_mut()
            .with_config()
            .limit(1 << 30)
            .read_to_vec()
            .map_err(|e| ClientError::Transport {
                url: url.to_string(),
                message: e.to_string(),
            })?;
        Ok(Answer {
            status,
            retry_after_s,
            replayed,
            body,
        })
    }

    fn api_error(a: &Answer) -> ClientError {
        match serde_json::from_slice::<ErrorBody>(&a.body) {
            Ok(b) => ClientError::Api {
                status: a.status,
                code: b.error.code,
                message: b.error.message,
                retry_after_s: a.retry_after_s,
            },
            Err(_) => ClientError::Api {
                status: a.status,
                code: "http_error".into(),
                message: String::from_utf8_lossy(&a.body).into_owned(),
                retry_after_s: a.retry_after_s,
            },
        }
    }

    fn decode<T: DeserializeOwned>(url: &str, a: &Answer) -> Result<T, ClientError> {
        if a.status >= 400 {
            return Err(Self::api_error(a));
        }
        serde_json::from_slice(&a.body).map_err(|e| ClientError::Decode {
            url: url.to_string(),
            message: e.to_string(),
        })
    }

    fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, ClientError> {
        let url = self.url(path);
        let a = self.call(&url, || self.authed(self.agent.get(&url)).call())?;
        Self::decode(&url, &a)
    }

    fn submission(url: &str, a: &Answer) -> Result<Submission, ClientError> {
        Ok(Submission {
            status: Self::decode(url, a)?,
            replayed: a.replayed,
        })
    }

    /// Submits a job; returns its status (state "queued" or "running"). Retried safely: the
    /// submission carries the request's idempotency key, or a fresh one.
    pub fn submit(&self, req: &JobRequest) -> Result<JobStatus, ClientError> {
        let key = req
            .idempotency_key
            .clone()
            .unwrap_or_else(new_idempotency_key);
        self.submit_keyed(req, &key).map(|s| s.status)
    }

    /// Submits a job under idempotency key `key`: submitting the same request under the same
    /// key again returns the same job (`replayed`).
    pub fn submit_keyed(&self, req: &JobRequest, key: &str) -> Result<Submission, ClientError> {
        let url = self.url("/v1/jobs");
        let body = serde_json::to_vec(req).map_err(|e| ClientError::Decode {
            url: url.clone(),
            message: format!("encoding the request: {e}"),
        })?;
        let a = self.call(&url, || {
            self.authed(self.agent.post(&url))
                .header("content-type", "application/json")
                .header("idempotency-key", key)
                .send(&body[..])
        })?;
        Self::submission(&url, &a)
    }

    /// Submits a job whose document is sent as the raw body (`POST /v1/jobs/{kind}`, no
    /// base64): for `porep-c2` a C1 output or `Commit2In` file. `fields` are the other request
    /// fields (`sector_id`, `miner_id` or `prover_id`, `priority`, `id`), sent in the query
    /// string.
    pub fn submit_document(
        &self,
        kind: &str,
        document: &[u8],
        fields: &[(&str, String)],
        key: &str,
    ) -> Result<Submission, ClientError> {
        let query: Vec<String> = fields
            .iter()
            .map(|(k, v)| format!("{}={}", percent_encode(k), percent_encode(v)))
            .collect();
        let mut url = self.url(&format!("/v1/jobs/{}", percent_encode(kind)));
        if !query.is_empty() {
            url = format!("{url}?{}", query.join("&"));
        }
        let a = self.call(&url, || {
            self.authed(self.agent.post(&url))
                .header("content-type", "application/octet-stream")
                .header("idempotency-key", key)
                .send(document)
        })?;
        Self::submission(&url, &a)
    }

    /// Submits a raw JSON body (the integration harness sends malformed ones on purpose).
    pub fn submit_raw(&self, body: &[u8]) -> Result<JobStatus, ClientError> {
        let url = self.url("/v1/jobs");
        let a = self.call(&url, || {
            self.authed(self.agent.post(&url))
                .header("content-type", "application/json")
                .send(body)
        })?;
        Self::decode(&url, &a)
    }

    /// The status of a job; with `wait_s`, waits up to that long for it to finish.
    pub fn status(&self, id: &str, wait_s: Option<u64>) -> Result<JobStatus, ClientError> {
        match wait_s {
            Some(w) => self.get(&format!("/v1/jobs/{id}?wait_s={w}")),
            None => self.get(&format!("/v1/jobs/{id}")),
        }
    }

    /// Waits for a job to finish (long-polling), at most `timeout`.
    pub fn wait(&self, id: &str, timeout: Duration) -> Result<JobStatus, ClientError> {
        let start = Instant::now();
        loop {
            let left = timeout
                .saturating_sub(start.elapsed())
                .as_secs()
                .clamp(1, 60);
            let s = self.status(id, Some(left))?;
            if s.state.is_terminal() {
                return Ok(s);
            }
            if start.elapsed() >= timeout {
                return Err(ClientError::Timeout(id.to_string()));
            }
        }
    }

    /// The JSON result of a succeeded job.
    pub fn result(&self, id: &str) -> Result<ResultBody, ClientError> {
        self.get(&format!("/v1/jobs/{id}/result"))
    }

    /// The raw proof bytes of a succeeded job.
    pub fn proof_bytes(&self, id: &str) -> Result<Vec<u8>, ClientError> {
        let url = self.url(&format!("/v1/jobs/{id}/proof"));
        let a = self.call(&url, || {
            self.authed(self.agent.get(&url))
                .header("accept", "application/octet-stream")
                .call()
        })?;
        if a.status >= 400 {
            return Err(Self::api_error(&a));
        }
        Ok(a.body)
    }

    /// Cancels a job.
    pub fn cancel(&self, id: &str) -> Result<JobStatus, ClientError> {
        let url = self.url(&format!("/v1/jobs/{id}"));
        let a = self.call(&url, || self.authed(self.agent.delete(&url)).call())?;
        Self::decode(&url, &a)
    }

    /// All retained jobs.
    pub fn list(&self) -> Result<Vec<JobStatus>, ClientError> {
        #[derive(Deserialize)]
        struct L {
            jobs: Vec<JobStatus>,
        }
        Ok(self.get::<L>("/v1/jobs")?.jobs)
    }

    /// The daemon's status page (`GET /v1/status`).
    pub fn status_page(&self) -> Result<StatusPage, ClientError> {
        self.get("/v1/status")
    }

    /// `/healthz`.
    pub fn health(&self) -> Result<serde_json::Value, ClientError> {
        self.get("/healthz")
    }

    /// `/metrics` (Prometheus text).
    pub fn metrics(&self) -> Result<String, ClientError> {
        let url = self.url("/metrics");
        let a = self.call(&url, || self.authed(self.agent.get(&url)).call())?;
        if a.status >= 400 {
            return Err(Self::api_error(&a));
        }
        String::from_utf8(a.body).map_err(|e| ClientError::Decode {
            url,
            message: e.to_string(),
        })
    }
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
