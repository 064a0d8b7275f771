//! The runtime's errors: why the pipeline could not start ([`RuntimeError`]) and why an embedded
//! proof was not made ([`ProveError`]).

use proofline_actors::{PipelineError, ResultError, SubmitRejected};
use proofline_jobs::JobError;

/// Why the pipeline described by a configuration could not start.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// A configuration value names something that does not exist.
    #[error("configuration key '{key}' = '{value}': {source}")]
    Config {
        /// Dotted key.
        key: &'static str,
        /// Its value.
        value: String,
        /// What is wrong with it.
        #[source]
        source: JobError,
    },
    /// A name in `params.preload` is not a circuit this build serves, or its parameters cannot
    /// be found.
    #[error("configuration key 'params.preload': '{name}': {reason}")]
    Preload {
        /// The name.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// `pipeline.backend = "gpu"` and no GPU is usable.
    #[error(
        "configuration key 'pipeline.backend' = \"gpu\", but no GPU is usable: {0} (use \"auto\" \
         to fall back to the CPU)"
    )]
    GpuUnavailable(String),
    /// The actor pipeline did not start (thread, journal).
    #[error("starting the actor pipeline: {0}")]
    Pipeline(#[from] PipelineError),
}

/// Why a job submitted through [`crate::Prover`] gave no proof.
#[derive(Debug, thiserror::Error)]
pub enum ProveError {
    /// The request was refused (invalid input, missing parameters, queue full, conflict).
    #[error(transparent)]
    Rejected(#[from] SubmitRejected),
    /// The job failed or was cancelled (the status says why), or the pipeline stopped.
    #[error(transparent)]
    Result(#[from] ResultError),
    /// The input could not be encoded for the job journal.
    #[error("encoding the input for the journal: {0}")]
    Encode(String),
}

impl From<JobError> for ProveError {
    fn from(e: JobError) -> Self {
        ProveError::Rejected(SubmitRejected::Invalid(e))
    }
}
