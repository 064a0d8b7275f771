//! The job request as clients send it.

use serde::{Deserialize, Serialize};

/// A proof job request (the body of `POST /v1/jobs`, or the input of `proofline prove`).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct JobRequest {
    /// Job kind: `"groth16"` (built-in circuits) or `"porep-c2"`.
    pub kind: String,
    /// Circuit name, for kinds that offer several (`"sha256-2"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub circuit: Option<String>,
    /// Kind-specific input (witness material).
    #[serde(default)]
    pub input: serde_json::Value,
    /// Expected public inputs (without ONE), each the hex of a 32-byte little-endian scalar;
    /// optional.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_inputs: Option<Vec<String>>,
    /// Larger runs first among queued jobs; default 0.
    #[serde(default)]
    pub priority: i32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_fields_are_rejected() {
        let e = serde_json::from_str::<JobRequest>(r#"{"kind":"groth16","bogus":1}"#).unwrap_err();
        assert!(e.to_string().contains("bogus"));
    }

    #[test]
    fn defaults_apply() {
        let r: JobRequest = serde_json::from_str(r#"{"kind":"groth16"}"#).unwrap();
        assert_eq!(r.priority, 0);
        assert!(r.circuit.is_none() && r.public_inputs.is_none());
        assert!(r.input.is_null());
    }
}
