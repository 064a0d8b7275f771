//! Parsers of the request fields shared by the PoSt and SnapDeals kinds, each error naming its
//! field: the `input` object and its allowed keys, registered proof names, 32-byte values
//! (commitments, randomness, prover ids) as hex or as Lotus' arrays of 32 numbers, and lists of
//! base64 byte strings (vanilla proofs as filecoin-proofs-api serializes them).

use base64::Engine;
use blstrs::Scalar;
use proofline_jobs::{JobError, JobRequest, PartitionPlan};
use serde_json::{Map, Value};
use std::fmt::Debug;

use crate::proofs;

/// The `input` object, with no keys but `allowed`.
pub fn input_object<'a>(
    input: &'a Value,
    allowed: &[&str],
) -> Result<&'a Map<String, Value>, JobError> {
    let obj = input.as_object().ok_or_else(|| {
        JobError::field(
            "input",
            format!("an object with {} is required", allowed.join(", ")),
        )
    })?;
    if let Some(k) = obj.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(JobError::field(
            format!("input.{k}"),
            format!("unknown field (known: {})", allowed.join(", ")),
        ));
    }
    Ok(obj)
}

/// A required field of `obj`.
pub fn required<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
    what: &str,
) -> Result<&'a Value, JobError> {
    obj.get(key)
        .ok_or_else(|| JobError::field(format!("input.{key}"), format!("required: {what}")))
}

/// A registered proof among `all`, by the name filecoin-proofs-api serializes it with.
pub fn registered_proof<T: Debug + Copy>(
    value: &Value,
    field: &str,
    all: &[T],
) -> Result<T, JobError> {
    let text = value.as_str().ok_or_else(|| {
        JobError::field(
            field,
            format!("must be a string, one of {}", proofs::names(all)),
        )
    })?;
    proofs::parse(all, text).ok_or_else(|| {
        JobError::field(
            field,
            format!(
                "unknown registered proof '{text}' (known: {})",
                proofs::names(all)
            ),
        )
    })
}

/// 32 bytes: 64 hex digits (optional `0x`) or an array of 32 numbers 0..=255.
pub fn bytes32(value: &Value, field: &str) -> Result<[u8; 32], JobError> {
    let bytes: Vec<u8> = match value {
        Value::String(s) => {
            let s = s.strip_prefix("0x").unwrap_or(s);
            hex::decode(s).map_err(|e| JobError::field(field, format!("not hex: {e}")))?
        }
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.as_u64()
                    .and_then(|n| u8::try_from(n).ok())
                    .ok_or_else(|| {
                        JobError::field(
                            format!("{field}[{i}]"),
                            format!("must be a number 0..=255, got {v}"),
                        )
                    })
            })
            .collect::<Result<_, _>>()?,
        other => {
            return Err(JobError::field(
                field,
                format!("must be 64 hex digits or an array of 32 numbers, got {other}"),
            ))
        }
    };
    bytes.as_slice().try_into().map_err(|_| {
        JobError::field(
            field,
            format!("must be 32 bytes, got {} bytes", bytes.len()),
        )
    })
}

/// 32 bytes that are the little-endian encoding of a BLS12-381 scalar (filecoin-proofs'
/// `as_safe_commitment`): commitments, PoSt randomness, prover ids.
pub fn field_element(value: &Value, field: &str) -> Result<[u8; 32], JobError> {
    let bytes = bytes32(value, field)?;
    fr32_of(&bytes, field)?;
    Ok(bytes)
}

/// The scalar of 32 little-endian bytes, or an error naming `field`.
pub fn fr32_of(bytes: &[u8; 32], field: &str) -> Result<Scalar, JobError> {
    filecoin_proofs_api::fr32::bytes_into_fr(bytes).map_err(|e| {
        JobError::field(
            field,
            format!("not a BLS12-381 field element (little-endian, below the modulus): {e}"),
        )
    })
}

/// A non-empty list of base64 (standard alphabet) strings, decoded.
pub fn base64_list(value: &Value, field: &str) -> Result<Vec<Vec<u8>>, JobError> {
    let items = value.as_array().ok_or_else(|| {
        JobError::field(
            field,
            "must be an array of base64 strings (each a vanilla proof's bytes)",
        )
    })?;
    if items.is_empty() {
        return Err(JobError::field(field, "must not be empty"));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let f = format!("{field}[{i}]");
            let text = v
                .as_str()
                .ok_or_else(|| JobError::field(&f, "must be a base64 string"))?;
            base64::engine::general_purpose::STANDARD
                .decode(text.trim())
                .map_err(|e| JobError::field(&f, format!("not base64: {e}")))
        })
        .collect()
}

/// Checks the request's optional `circuit` (must be the registered proof's name) and
/// `public_inputs` (must equal every partition's public inputs, concatenated).
pub fn check_circuit_and_inputs(
    req: &JobRequest,
    registered_proof: &str,
    partitions: &[PartitionPlan],
) -> Result<(), JobError> {
    if let Some(name) = req.circuit.as_deref() {
        if name != registered_proof {
            return Err(JobError::field(
                "circuit",
                format!(
                    "the input is for {registered_proof}, not {name} (leave circuit out for {})",
                    req.kind
                ),
            ));
        }
    }
    if let Some(expected) = proofline_jobs::expected_public_inputs(req)? {
        let all: Vec<Scalar> = partitions
            .iter()
            .flat_map(|p| p.public_inputs.iter().copied())
            .collect();
        if expected != all {
            return Err(JobError::field(
                "public_inputs",
                format!(
                    "do not match the public inputs derived from the input ({} values, all \
                     partitions concatenated); leave public_inputs out for {}",
                    all.len(),
                    req.kind
                ),
            ));
        }
    }
    Ok(())
}

/// Runs a filecoin-proofs call on request data that might panic on malformed input (its
/// vanilla proof code indexes and asserts freely); a panic becomes an error naming `field`.
pub fn guarded<T>(field: &str, f: impl FnOnce() -> Result<T, JobError>) -> Result<T, JobError> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => {
            let what = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "malformed data".into());
            Err(JobError::field(
                field,
                format!("malformed (filecoin-proofs could not process it: {what})"),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_and_their_errors() {
        assert_eq!(bytes32(&json!("ab".repeat(32)), "f").unwrap(), [0xab; 32]);
        assert_eq!(bytes32(&json!(vec![7u8; 32]), "f").unwrap(), [7; 32]);
        let e = bytes32(&json!("abcd"), "input.x").unwrap_err().to_string();
        assert!(e.contains("input.x") && e.contains("2 bytes"), "{e}");
        let e = bytes32(&json!([1, 2, 256]), "input.x")
            .unwrap_err()
            .to_string();
        assert!(e.contains("input.x[2]"), "{e}");
        let e = field_element(&json!("ff".repeat(32)), "input.r")
            .unwrap_err()
            .to_string();
        assert!(e.contains("input.r") && e.contains("field element"), "{e}");
        assert!(field_element(&json!("00".repeat(32)), "input.r").is_ok());

        assert_eq!(
            base64_list(&json!(["AAE=", "Ag=="]), "l").unwrap(),
            vec![vec![0, 1], vec![2]]
        );
        let e = base64_list(&json!(["AAE=", "%%"]), "input.v")
            .unwrap_err()
            .to_string();
        assert!(e.contains("input.v[1]") && e.contains("base64"), "{e}");
        assert!(base64_list(&json!([]), "l").is_err());
        assert!(base64_list(&json!("AAE="), "l").is_err());

        let obj = json!({"a": 1, "b": 2});
        assert!(input_object(&obj, &["a", "b"]).is_ok());
        let e = input_object(&obj, &["a"]).unwrap_err().to_string();
        assert!(e.contains("input.b") && e.contains("unknown"), "{e}");
        assert!(input_object(&json!([1]), &["a"]).is_err());

        let e = registered_proof(&json!("Nope"), "input.rp", &proofs::ALL_UPDATE)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("input.rp") && e.contains("StackedDrg2KiBV1"),
            "{e}"
        );

        let e = guarded::<()>("input.v", || panic!("index out of bounds"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("input.v") && e.contains("index out of bounds"),
            "{e}"
        );
    }
}
