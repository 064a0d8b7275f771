//! Errors of job planning, each with a stable code and a kind that the HTTP layer maps to a
//! status.

use std::path::PathBuf;

/// Broad classes of job errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The request is malformed or names something that does not exist (4xx).
    InvalidRequest,
    /// The request is valid but the daemon lacks what it needs, e.g. parameters (4xx at
    /// submission, a failed job later).
    Unavailable,
    /// Proving failed after acceptance.
    Internal,
}

/// Why a job could not be planned or run.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// No adapter for the requested kind.
    #[error("unknown job kind '{kind}' (known: {known})")]
    UnknownKind {
        /// Requested kind.
        kind: String,
        /// Registered kinds.
        known: String,
    },
    /// The circuit name is not known to the adapter.
    #[error("unknown circuit '{name}' (known: {known})")]
    UnknownCircuit {
        /// Requested circuit.
        name: String,
        /// What is available.
        known: String,
    },
    /// A field of the request is missing or invalid.
    #[error("invalid field '{field}': {message}")]
    InvalidField {
        /// Dotted path of the field, e.g. `input.preimage_hex`.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// The parameter file is missing.
    #[error("parameters for {what} are missing: {path} does not exist ({hint})")]
    ParamsMissing {
        /// Which circuit.
        what: String,
        /// Expected location.
        path: PathBuf,
        /// How to get them.
        hint: String,
    },
    /// The parameter file is present but unusable (truncated, wrong digest, unreadable).
    #[error("parameters at {path} are unusable: {message}")]
    ParamsInvalid {
        /// File.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// Anything else that went wrong while building circuits.
    #[error("{0}")]
    Internal(String),
}

impl JobError {
    /// Shorthand for [`JobError::InvalidField`].
    pub fn field(field: impl Into<String>, message: impl Into<String>) -> Self {
        JobError::InvalidField {
            field: field.into(),
            message: message.into(),
        }
    }

    /// A stable machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            JobError::UnknownKind { .. } => "unknown_kind",
            JobError::UnknownCircuit { .. } => "unknown_circuit",
            JobError::InvalidField { .. } => "invalid_field",
            JobError::ParamsMissing { .. } => "params_missing",
            JobError::ParamsInvalid { .. } => "params_invalid",
            JobError::Internal(_) => "internal",
        }
    }

    /// The class of the error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            JobError::UnknownKind { .. }
            | JobError::UnknownCircuit { .. }
            | JobError::InvalidField { .. } => ErrorKind::InvalidRequest,
            JobError::ParamsMissing { .. } | JobError::ParamsInvalid { .. } => {
                ErrorKind::Unavailable
            }
            JobError::Internal(_) => ErrorKind::Internal,
        }
    }
}
