//! The `porep-c2` request input: parsing and validating what a sealing worker sends.
//!
//! ```json
//! {"kind": "porep-c2",
//!  "input": {"c1_output_base64": "<base64 of the C1 output JSON bytes>",
//!            "prover_id": "<64 hex digits>" | [32 numbers],
//!            "sector_id": 42}}
//! ```
//!
//! `input.c1_output` may carry the C1 output JSON document itself instead of
//! `input.c1_output_base64`. The document is deserialized exactly once, into
//! filecoin-proofs-api's `SealCommitPhase1Output`; the vanilla proofs are moved, never copied.

use base64::Engine;
use filecoin_hashers::Hasher;
use filecoin_proofs::DefaultTreeHasher;
use filecoin_proofs_api::seal::{SealCommitPhase1Output, VanillaSealProof};
use filecoin_proofs_api::{Commitment, RegisteredSealProof, Ticket};
use proofline_jobs::JobError;
use serde::Deserialize;
use serde_json::Value;

use crate::shapes;

/// A validated `porep-c2` input.
#[derive(Debug)]
pub struct C2Input {
    /// The parsed C1 output.
    pub c1: SealCommitPhase1Output,
    /// The prover id.
    pub prover_id: [u8; 32],
    /// The sector number.
    pub sector_id: u64,
    /// The request field the C1 output came from (for error messages).
    pub c1_field: &'static str,
}

/// Field names.
pub const F_B64: &str = "input.c1_output_base64";
/// Field names.
pub const F_JSON: &str = "input.c1_output";
/// Field names.
pub const F_PROVER: &str = "input.prover_id";
/// Field names.
pub const F_SECTOR: &str = "input.sector_id";

/// `SealCommitPhase1Output` with the registered proof kept as text, so that an unknown proof
/// name is reported as such instead of as a generic deserialization error.
#[derive(Deserialize)]
struct C1Document {
    registered_proof: Value,
    vanilla_proofs: VanillaSealProof,
    comm_r: Commitment,
    comm_d: Commitment,
    replica_id: <DefaultTreeHasher as Hasher>::Domain,
    seed: Ticket,
    ticket: Ticket,
}

fn known_proofs() -> String {
    shapes::ALL
        .iter()
        .map(|rp| shapes::name(*rp))
        .collect::<Vec<_>>()
        .join(", ")
}

impl C1Document {
    fn into_output(self, field: &str) -> Result<SealCommitPhase1Output, JobError> {
        let rp_field = format!("{field}.registered_proof");
        let name = self.registered_proof.as_str().ok_or_else(|| {
            JobError::field(
                &rp_field,
                "must be a string such as \"StackedDrg32GiBV1_1\"",
            )
        })?;
        let registered_proof: RegisteredSealProof = shapes::parse(name).ok_or_else(|| {
            JobError::field(
                &rp_field,
                format!(
                    "unknown registered proof '{name}' (known: {})",
                    known_proofs()
                ),
            )
        })?;
        Ok(SealCommitPhase1Output {
            registered_proof,
            vanilla_proofs: self.vanilla_proofs,
            comm_r: self.comm_r,
            comm_d: self.comm_d,
            replica_id: self.replica_id,
            seed: self.seed,
            ticket: self.ticket,
        })
    }
}

/// Parses the C1 output from JSON bytes (what the worker holds).
pub fn parse_c1_bytes(bytes: &[u8], field: &str) -> Result<SealCommitPhase1Output, JobError> {
    let doc: C1Document = serde_json::from_slice(bytes).map_err(|e| {
        JobError::field(
            field,
            format!("not a C1 output (filecoin-proofs-api SealCommitPhase1Output JSON): {e}"),
        )
    })?;
    doc.into_output(field)
}

/// Parses the C1 output from an already parsed JSON value.
pub fn parse_c1_value(value: &Value, field: &str) -> Result<SealCommitPhase1Output, JobError> {
    let doc = C1Document::deserialize(value).map_err(|e| {
        JobError::field(
            field,
            format!("not a C1 output (filecoin-proofs-api SealCommitPhase1Output JSON): {e}"),
        )
    })?;
    doc.into_output(field)
}

/// Parses a prover id: 64 hex digits (optionally `0x`), or an array of 32 numbers 0..=255 (as
/// Lotus' JSON writes a `[32]byte`).
pub fn parse_prover_id(value: Option<&Value>) -> Result<[u8; 32], JobError> {
    let value = value.ok_or_else(|| {
        JobError::field(
            F_PROVER,
            "required: 32 bytes as 64 hex digits or an array of 32 numbers",
        )
    })?;
    let bytes: Vec<u8> = match value {
        Value::String(s) => {
            let s = s.strip_prefix("0x").unwrap_or(s);
            hex::decode(s).map_err(|e| JobError::field(F_PROVER, format!("not hex: {e}")))?
        }
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.as_u64()
                    .and_then(|n| u8::try_from(n).ok())
                    .ok_or_else(|| {
                        JobError::field(
                            format!("{F_PROVER}[{i}]"),
                            format!("must be a number 0..=255, got {v}"),
                        )
                    })
            })
            .collect::<Result<_, _>>()?,
        other => {
            return Err(JobError::field(
                F_PROVER,
                format!("must be a hex string or an array of 32 numbers, got {other}"),
            ))
        }
    };
    bytes.as_slice().try_into().map_err(|_| {
        JobError::field(
            F_PROVER,
            format!("a prover id is 32 bytes, got {} bytes", bytes.len()),
        )
    })
}

/// Parses the sector number.
pub fn parse_sector_id(value: Option<&Value>) -> Result<u64, JobError> {
    let value = value.ok_or_else(|| JobError::field(F_SECTOR, "required: the sector number"))?;
    value.as_u64().ok_or_else(|| {
        JobError::field(
            F_SECTOR,
            format!("must be an unsigned 64-bit integer, got {value}"),
        )
    })
}

/// Parses and validates the `input` object of a `porep-c2` request (syntax only; consistency
/// with the registered proof is checked by the adapter).
pub fn parse_input(input: &Value) -> Result<C2Input, JobError> {
    let obj = input.as_object().ok_or_else(|| {
        JobError::field(
            "input",
            "an object with c1_output_base64 (or c1_output), prover_id and sector_id is required",
        )
    })?;
    // Cheap fields first, so that a bad id is reported before a 50 MB document is parsed.
    let prover_id = parse_prover_id(obj.get("prover_id"))?;
    let sector_id = parse_sector_id(obj.get("sector_id"))?;
    let (c1, c1_field) =
        match (obj.get("c1_output_base64"), obj.get("c1_output")) {
            (Some(_), Some(_)) => {
                return Err(JobError::field(
                    "input",
                    "give either c1_output_base64 or c1_output, not both",
                ))
            }
            (Some(b64), None) => {
                let text = b64
                    .as_str()
                    .ok_or_else(|| JobError::field(F_B64, "must be a base64 string"))?;
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(text.trim())
                    .map_err(|e| JobError::field(F_B64, format!("not base64: {e}")))?;
                (parse_c1_bytes(&bytes, F_B64)?, F_B64)
            }
            (None, Some(doc)) => {
                if doc.is_string() {
                    return Err(JobError::field(
                        F_JSON,
                        "must be the C1 output JSON object; send base64 text as c1_output_base64",
                    ));
                }
                (parse_c1_value(doc, F_JSON)?, F_JSON)
            }
            (None, None) => return Err(JobError::field(
                F_B64,
                "required: the C1 output (SealCommitPhase1Output JSON bytes) as base64, or the \
                 document itself in input.c1_output",
            )),
        };
    Ok(C2Input {
        c1,
        prover_id,
        sector_id,
        c1_field,
    })
}

/// A `porep-c2` request body for C1 output bytes (used by tools and tests).
pub fn request_body(c1_output: &[u8], prover_id: &[u8; 32], sector_id: u64) -> Value {
    serde_json::json!({
        "kind": "porep-c2",
        "input": {
            "c1_output_base64": base64::engine::general_purpose::STANDARD.encode(c1_output),
            "prover_id": hex::encode(prover_id),
            "sector_id": sector_id,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn prover_id_forms() {
        let hexed = "ab".repeat(32);
        assert_eq!(parse_prover_id(Some(&json!(hexed))).unwrap(), [0xab; 32]);
        assert_eq!(
            parse_prover_id(Some(&json!(format!("0x{hexed}")))).unwrap(),
            [0xab; 32]
        );
        assert_eq!(
            parse_prover_id(Some(&json!(vec![7u8; 32]))).unwrap(),
            [7; 32]
        );
        let e = parse_prover_id(Some(&json!("abcd")))
            .unwrap_err()
            .to_string();
        assert!(e.contains(F_PROVER) && e.contains("got 2 bytes"), "{e}");
        let e = parse_prover_id(Some(&json!([1, 2, 300])))
            .unwrap_err()
            .to_string();
        assert!(e.contains("input.prover_id[2]"), "{e}");
        let e = parse_prover_id(Some(&json!("zz"))).unwrap_err().to_string();
        assert!(e.contains("not hex"), "{e}");
        assert!(parse_prover_id(None)
            .unwrap_err()
            .to_string()
            .contains(F_PROVER));
        let e = parse_sector_id(Some(&json!(-1))).unwrap_err().to_string();
        assert!(e.contains(F_SECTOR), "{e}");
    }
}
