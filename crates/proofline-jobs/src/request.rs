//! The job request as clients send it, and the hex encoding of field elements.

use blstrs::Scalar;
use ff::PrimeField;
use serde::{Deserialize, Serialize};

use crate::JobError;

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
    /// Expected public inputs (without ONE), each as [`scalar_to_hex`]; optional.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_inputs: Option<Vec<String>>,
    /// Larger runs first among queued jobs; default 0.
    #[serde(default)]
    pub priority: i32,
}

/// Hex of the canonical 32-byte little-endian encoding of a field element.
pub fn scalar_to_hex(s: &Scalar) -> String {
    hex::encode(s.to_repr())
}

/// Parses [`scalar_to_hex`] output; `field` names the request field in the error.
pub fn parse_scalar_hex(field: &str, text: &str) -> Result<Scalar, JobError> {
    let text = text.strip_prefix("0x").unwrap_or(text);
    let bytes = hex::decode(text).map_err(|e| JobError::field(field, format!("not hex: {e}")))?;
    let arr: [u8; 32] = bytes.as_slice().try_into().map_err(|_| {
        JobError::field(
            field,
            format!(
                "a field element is 32 bytes (64 hex digits), got {} bytes",
                bytes.len()
            ),
        )
    })?;
    Option::from(Scalar::from_repr(arr)).ok_or_else(|| {
        JobError::field(
            field,
            "not a canonical BLS12-381 scalar (value ≥ field modulus)",
        )
    })
}

impl JobRequest {
    /// The expected public inputs, parsed, if the request gives them.
    pub fn expected_public_inputs(&self) -> Result<Option<Vec<Scalar>>, JobError> {
        let Some(list) = &self.public_inputs else {
            return Ok(None);
        };
        list.iter()
            .enumerate()
            .map(|(i, t)| parse_scalar_hex(&format!("public_inputs[{i}]"), t))
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::Field;

    #[test]
    fn scalar_hex_round_trip_and_errors() {
        let s = Scalar::from(123456789u64) - Scalar::ONE.double();
        assert_eq!(parse_scalar_hex("x", &scalar_to_hex(&s)).unwrap(), s);
        assert!(parse_scalar_hex("x", "zz")
            .unwrap_err()
            .to_string()
            .contains("not hex"));
        assert!(parse_scalar_hex("x", "00")
            .unwrap_err()
            .to_string()
            .contains("32 bytes"));
        let too_big = "ff".repeat(32);
        assert!(parse_scalar_hex("x", &too_big)
            .unwrap_err()
            .to_string()
            .contains("canonical"));
    }

    #[test]
    fn unknown_fields_are_rejected() {
        let e = serde_json::from_str::<JobRequest>(r#"{"kind":"groth16","bogus":1}"#).unwrap_err();
        assert!(e.to_string().contains("bogus"));
    }
}
