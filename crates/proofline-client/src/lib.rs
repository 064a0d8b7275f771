//! A small blocking client of the proofline HTTP API (docs/api.md). With
//! [`Client::with_token`] every request carries `Authorization: Bearer <token>`; with
//! [`Client::with_root_cert`] an `https://` daemon is trusted by that certificate.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use proofline_wire::{ErrorBody, JobRequest, JobStatus};
use serde::de::DeserializeOwned;
use serde::Deserialize;

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

/// Client of one daemon.
#[derive(Clone)]
pub struct Client {
    base: String,
    agent: ureq::Agent,
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

impl Client {
    /// A client of the daemon at `base` (e.g. `http://127.0.0.1:9797`).
    pub fn new(base: impl Into<String>) -> Self {
        Client {
            base: base.into().trim_end_matches('/').to_string(),
            agent: agent(None),
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

    fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    fn handle<T: DeserializeOwned>(
        url: &str,
        r: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    ) -> Result<T, ClientError> {
        let mut resp = r.map_err(|e| ClientError::Transport {
            url: url.to_string(),
            message: e.to_string(),
        })?;
        let status = resp.status().as_u16();
        let bytes = resp
            .body_mut()
            .with_config()
            .limit(1 << 30)
            .read_to_vec()
            .map_err(|e| ClientError::Transport {
                url: url.to_string(),
                message: e.to_string(),
            })?;
        if status >= 400 {
            return Err(match serde_json::from_slice::<ErrorBody>(&bytes) {
                Ok(b) => ClientError::Api {
                    status,
                    code: b.error.code,
                    message: b.error.message,
                },
                Err(_) => ClientError::Api {
                    status,
                    code: "http_error".into(),
                    message: String::from_utf8_lossy(&bytes).into_owned(),
                },
            });
        }
        serde_json::from_slice(&bytes).map_err(|e| ClientError::Decode {
            url: url.to_string(),
            message: e.to_string(),
        })
    }

    fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, ClientError> {
        let url = self.url(path);
        Self::handle(&url, self.authed(self.agent.get(&url)).call())
    }

    /// Submits a job; returns its status (state "queued" or "running").
    pub fn submit(&self, req: &JobRequest) -> Result<JobStatus, ClientError> {
        let url = self.url("/v1/jobs");
        Self::handle(&url, self.authed(self.agent.post(&url)).send_json(req))
    }

    /// Submits a raw JSON body (the integration harness sends malformed ones on purpose).
    pub fn submit_raw(&self, body: &[u8]) -> Result<JobStatus, ClientError> {
        let url = self.url("/v1/jobs");
        Self::handle(
            &url,
            self.authed(self.agent.post(&url))
                .header("content-type", "application/json")
                .send(body),
        )
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
        let mut resp = self
            .authed(self.agent.get(&url))
            .header("accept", "application/octet-stream")
            .call()
            .map_err(|e| ClientError::Transport {
                url: url.clone(),
                message: e.to_string(),
            })?;
        if resp.status().as_u16() >= 400 {
            return Self::handle::<Vec<u8>>(&url, Ok(resp));
        }
        resp.body_mut()
            .read_to_vec()
            .map_err(|e| ClientError::Transport {
                url,
                message: e.to_string(),
            })
    }

    /// Cancels a job.
    pub fn cancel(&self, id: &str) -> Result<JobStatus, ClientError> {
        let url = self.url(&format!("/v1/jobs/{id}"));
        Self::handle(&url, self.authed(self.agent.delete(&url)).call())
    }

    /// All retained jobs.
    pub fn list(&self) -> Result<Vec<JobStatus>, ClientError> {
        #[derive(Deserialize)]
        struct L {
            jobs: Vec<JobStatus>,
        }
        Ok(self.get::<L>("/v1/jobs")?.jobs)
    }

    /// `/healthz`.
    pub fn health(&self) -> Result<serde_json::Value, ClientError> {
        self.get("/healthz")
    }

    /// `/metrics` (Prometheus text).
    pub fn metrics(&self) -> Result<String, ClientError> {
        let url = self.url("/metrics");
        let mut resp =
            self.authed(self.agent.get(&url))
                .call()
                .map_err(|e| ClientError::Transport {
                    url: url.clone(),
                    message: e.to_string(),
                })?;
        resp.body_mut()
            .read_to_string()
            .map_err(|e| ClientError::Transport {
                url,
                message: e.to_string(),
            })
    }
}
