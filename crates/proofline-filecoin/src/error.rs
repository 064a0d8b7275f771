//! Errors of the Filecoin helpers that are not job-planning errors (those are
//! [`proofline_jobs::JobError`]): verification, fixtures, parameter files.

use std::path::PathBuf;

/// What went wrong outside job planning.
#[derive(Debug, thiserror::Error)]
pub enum FilecoinError {
    /// filecoin-proofs (or storage-proofs) returned an error.
    #[error("filecoin-proofs: {0:#}")]
    Proofs(#[from] anyhow::Error),
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The sector size of a registered proof has no tree shape (cannot happen for registered
    /// proofs; kept as an error rather than a panic).
    #[error("unsupported sector size {0} bytes")]
    SectorSize(u64),
    /// filecoin-proofs' global settings point somewhere else than requested.
    #[error("filecoin-proofs settings conflict: {0}")]
    Settings(String),
    /// Anything else.
    #[error("{0}")]
    Other(String),
}

impl FilecoinError {
    /// Wraps an I/O error with its path.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        FilecoinError::Io {
            path: path.into(),
            source,
        }
    }
}
