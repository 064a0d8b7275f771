//! The JSON body of every API error: `{"error": {"code": "...", "message": "..."}}`.

use serde::{Deserialize, Serialize};

/// An API error body.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// The error.
    pub error: ErrorDetail,
}

/// What went wrong: a stable machine-readable code and a message for people.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorDetail {
    /// Stable code (`invalid_field`, `queue_full`, `unknown_job`, ...).
    pub code: String,
    /// Human-readable message; names the offending field where there is one.
    pub message: String,
}
