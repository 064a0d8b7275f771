//! The `proofline` command's exit codes, and which error gets which: scripts tell "fix your
//! arguments" from "the daemon said no", "the job failed" and "no daemon there".

use proofline_actors::{ResultError, SubmitRejected};
use proofline_client::ClientError;
use proofline_wire::{JobState, JobStatus};

/// Exit codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum ExitCode {
    /// Success.
    Ok = 0,
    /// Any other error (configuration, files, timeouts).
    Error = 1,
    /// Bad command-line usage.
    Usage = 2,
    /// The daemon (or the in-process pipeline) refused the request: invalid input, missing
    /// parameters, unknown job, queue still full after retries, conflict.
    Refused = 3,
    /// The job ran and failed or was cancelled.
    JobFailed = 4,
    /// The daemon could not be reached (after retries).
    Unreachable = 5,
}

/// The table `proofline --help` prints.
pub const HELP: &str = "Exit codes: 0 success; 1 other error; 2 usage; 3 refused by the daemon \
(invalid request, missing parameters, unknown job, queue full after retries); 4 the job failed \
or was cancelled; 5 daemon unreachable (after retries).\n\nEnvironment: PROOFLINE_URL is the \
daemon URL of the client commands (default http:// + server.bind); PROOFLINE_CONFIG a \
configuration file; PROOFLINE_<SECTION>__<KEY> overrides a configuration key.";

/// A command-line usage error found after parsing (e.g. a missing combination of flags).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// A job that ended without a proof.
#[derive(Debug, thiserror::Error)]
#[error("job {} ended {:?}{}", .0.id, .0.state, .0.error.as_ref().map(|e| format!(": {} ({})", e.message, e.code)).unwrap_or_default())]
pub struct JobEnded(pub Box<JobStatus>);

impl JobEnded {
    /// `Err(JobEnded)` unless the job succeeded.
    pub fn check(status: &JobStatus) -> Result<(), JobEnded> {
        if status.state == JobState::Succeeded {
            Ok(())
        } else {
            Err(JobEnded(Box::new(status.clone())))
        }
    }
}

/// The exit code of an error.
pub fn code_of(e: &anyhow::Error) -> ExitCode {
    for cause in e.chain() {
        if cause.is::<UsageError>() {
            return ExitCode::Usage;
        }
        if cause.is::<JobEnded>() {
            return ExitCode::JobFailed;
        }
        if let Some(c) = cause.downcast_ref::<ClientError>() {
            return match c {
                ClientError::Transport { .. } => ExitCode::Unreachable,
                // The result of a job that failed.
                ClientError::Api { code, .. } if code == "job_unsuccessful" => ExitCode::JobFailed,
                ClientError::Api { .. } => ExitCode::Refused,
                ClientError::Decode { .. } | ClientError::Timeout(_) => ExitCode::Error,
            };
        }
        if let Some(r) = cause.downcast_ref::<SubmitRejected>() {
            return match r {
                SubmitRejected::ShuttingDown => ExitCode::Error,
                _ => ExitCode::Refused,
            };
        }
        if let Some(r) = cause.downcast_ref::<ResultError>() {
            return match r {
                ResultError::Unsuccessful(_) => ExitCode::JobFailed,
                ResultError::NotFound(_) | ResultError::NotReady(_) => ExitCode::Refused,
                ResultError::ShuttingDown => ExitCode::Error,
            };
        }
        if let Some(p) = cause.downcast_ref::<proofline_runtime::ProveError>() {
            return match p {
                proofline_runtime::ProveError::Rejected(_) => ExitCode::Refused,
                proofline_runtime::ProveError::Result(ResultError::Unsuccessful(_)) => {
                    ExitCode::JobFailed
                }
                _ => ExitCode::Error,
            };
        }
    }
    ExitCode::Error
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_map_to_their_codes() {
        let transport = ClientError::Transport {
            url: "u".into(),
            message: "refused".into(),
        };
        assert_eq!(
            code_of(&anyhow::Error::new(transport)),
            ExitCode::Unreachable
        );
        let api = ClientError::Api {
            status: 400,
            code: "invalid_field".into(),
            message: "m".into(),
            retry_after_s: None,
        };
        assert_eq!(
            code_of(&anyhow::Error::new(api).context("submitting")),
            ExitCode::Refused
        );
        assert_eq!(
            code_of(&anyhow::Error::new(UsageError("x".into()))),
            ExitCode::Usage
        );
        assert_eq!(code_of(&anyhow::anyhow!("disk full")), ExitCode::Error);
        let invalid = SubmitRejected::Invalid(proofline_jobs::JobError::field("f", "m"));
        assert_eq!(code_of(&anyhow::Error::new(invalid)), ExitCode::Refused);
    }
}
