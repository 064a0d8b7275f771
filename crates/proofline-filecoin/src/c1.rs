//! The `porep-c2` request input: parsing and validating what a sealing worker sends.
//!
//! ```json
//! {"kind": "porep-c2",
//!  "input": {"c1_output_base64": "<base64 of a C1 output or Commit2In document>",
//!            "miner_id": "f01000" | "prover_id": "<64 hex digits>" | [32 numbers],
//!            "sector_id": 42}}
//! ```
//!
//! The document comes from exactly one of: the request's payload (raw bytes: the raw-upload
//! route, `proofline --c1 FILE`), `input.c1_output_base64`, or `input.c1_output` (the JSON
//! document itself). It is a bare C1 output or a Lotus `Commit2In`, recognised by its fields
//! ([`crate::commit2in`]). The sector number comes from `input.sector_id`, or from a
//! `Commit2In`'s `SectorNum` (both given and different: an error naming `input.sector_id`). The
//! prover is `input.prover_id` or `input.miner_id` (an actor id, turned into the prover id as
//! filecoin-ffi does, [`crate::miner`]), not both. The document is deserialized exactly once,
//! into filecoin-proofs-api's `SealCommitPhase1Output`; the vanilla proofs are moved, never
//! copied.

use base64::Engine;
use filecoin_hashers::Hasher;
use filecoin_proofs::DefaultTreeHasher;
use filecoin_proofs_api::seal::{SealCommitPhase1Output, VanillaSealProof};
use filecoin_proofs_api::{Commitment, RegisteredSealProof, Ticket};
use proofline_jobs::JobError;
use serde::Deserialize;
use serde_json::Value;

use crate::commit2in::{parse_document, parse_document_value, Document, DocumentFormat};
use crate::{miner, shapes};

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
    pub c1_field: String,
    /// The request field the prover id came from (`input.prover_id` or `input.miner_id`).
    pub prover_field: &'static str,
}

impl C2Input {
    /// An input from parts a caller already holds (the typed embedding API).
    pub fn new(c1: SealCommitPhase1Output, prover_id: [u8; 32], sector_id: u64) -> Self {
        C2Input {
            c1,
            prover_id,
            sector_id,
            c1_field: "c1".into(),
            prover_field: "prover_id",
        }
    }
}

/// Field names.
pub const F_B64: &str = "input.c1_output_base64";
/// Field names.
pub const F_JSON: &str = "input.c1_output";
/// Field names.
pub const F_PROVER: &str = "input.prover_id";
/// Field names.
pub const F_MINER: &str = "input.miner_id";
/// Field names.
pub const F_SECTOR: &str = "input.sector_id";
/// Field names: the request's document bytes.
pub const F_PAYLOAD: &str = "payload";

/// The fields `input` may have.
const INPUT_FIELDS: [&str; 5] = [
    "c1_output_base64",
    "c1_output",
    "prover_id",
    "miner_id",
    "sector_id",
];

/// `SealCommitPhase1Output` with the registered proof kept as text, so that an unknown proof
/// name is reported as such instead of as a generic deserialization error.
#[derive(Deserialize)]
pub(crate) struct C1Document {
    pub(crate) registered_proof: Value,
    pub(crate) vanilla_proofs: VanillaSealProof,
    pub(crate) comm_r: Commitment,
    pub(crate) comm_d: Commitment,
    pub(crate) replica_id: <DefaultTreeHasher as Hasher>::Domain,
    pub(crate) seed: Ticket,
    pub(crate) ticket: Ticket,
}

fn known_proofs() -> String {
    shapes::ALL
        .iter()
        .map(|rp| shapes::name(*rp))
        .collect::<Vec<_>>()
        .join(", ")
}

impl C1Document {
    pub(crate) fn into_output(self, field: &str) -> Result<SealCommitPhase1Output, JobError> {
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

/// Parses a prover id: 64 hex digits (optionally `0x`), or an array of 32 numbers 0..=255 (as
/// Lotus' JSON writes a `[32]byte`).
pub fn parse_prover_id(value: &Value) -> Result<[u8; 32], JobError> {
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

/// Parses a miner actor id (`"f01000"`, `"t01000"`, `"1000"` or `1000`) into its prover id.
pub fn parse_miner_id(value: &Value) -> Result<[u8; 32], JobError> {
    let id = match value {
        Value::String(s) => miner::parse_actor_id(s),
        Value::Number(n) => n
            .as_u64()
            .filter(|id| *id <= miner::MAX_ACTOR_ID)
            .ok_or_else(|| format!("{n} is not an actor id (0..={})", miner::MAX_ACTOR_ID)),
        other => Err(format!(
            "must be a miner actor id such as \"f01000\", got {other}"
        )),
    }
    .map_err(|m| JobError::field(F_MINER, m))?;
    Ok(miner::prover_id_of_actor(id))
}

/// The prover id of an `input` object: `prover_id` or `miner_id`, exactly one; and the field it
/// came from.
fn parse_prover(
    obj: &serde_json::Map<String, Value>,
) -> Result<([u8; 32], &'static str), JobError> {
    match (obj.get("prover_id"), obj.get("miner_id")) {
        (Some(_), Some(_)) => Err(JobError::field(
            F_MINER,
            "give input.miner_id or input.prover_id, not both",
        )),
        (Some(p), None) => Ok((parse_prover_id(p)?, F_PROVER)),
        (None, Some(m)) => Ok((parse_miner_id(m)?, F_MINER)),
        (None, None) => Err(JobError::field(
            F_PROVER,
            "required: the prover id (32 bytes as 64 hex digits or an array of 32 numbers), \
             or the miner as input.miner_id (\"f01000\")",
        )),
    }
}

/// Parses a sector number: an unsigned integer, or its decimal digits as a string (metadata
/// given in a query string or a header arrives as text).
pub fn parse_sector_id(value: &Value) -> Result<u64, JobError> {
    match value {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse::<u64>().ok(),
        _ => None,
    }
    .ok_or_else(|| {
        JobError::field(
            F_SECTOR,
            format!("must be an unsigned 64-bit integer, got {value}"),
        )
    })
}

/// Parses and validates a `porep-c2` request's `input` object and document (`payload`: the
/// request's document bytes, if any). Syntax only; consistency with the registered proof is
/// checked by the adapter.
pub fn parse_input(input: &Value, payload: Option<&[u8]>) -> Result<C2Input, JobError> {
    let obj = input.as_object().ok_or_else(|| {
        JobError::field(
            "input",
            "an object with prover_id (or miner_id), sector_id and, unless the document is the \
             request's payload, c1_output_base64 or c1_output is required",
        )
    })?;
    if let Some(unknown) = obj.keys().find(|k| !INPUT_FIELDS.contains(&k.as_str())) {
        return Err(JobError::field(
            format!("input.{unknown}"),
            format!("unknown field (known: {})", INPUT_FIELDS.join(", ")),
        ));
    }
    // Cheap fields first, so that a bad id is reported before a 50 MB document is parsed.
    let (prover_id, prover_field) = parse_prover(obj)?;
    let sector_id = obj.get("sector_id").map(parse_sector_id).transpose()?;
    let doc = match (payload, obj.get("c1_output_base64"), obj.get("c1_output")) {
        (Some(bytes), None, None) => parse_document(bytes, F_PAYLOAD)?,
        (None, Some(b64), None) => {
            let text = b64
                .as_str()
                .ok_or_else(|| JobError::field(F_B64, "must be a base64 string"))?;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(text.trim())
                .map_err(|e| JobError::field(F_B64, format!("not base64: {e}")))?;
            parse_document(&bytes, F_B64)?
        }
        (None, None, Some(doc)) => {
            if doc.is_string() {
                return Err(JobError::field(
                    F_JSON,
                    "must be the document as a JSON object; send base64 text as \
                     c1_output_base64",
                ));
            }
            parse_document_value(doc, F_JSON)?
        }
        (None, None, None) => {
            return Err(JobError::field(
                F_B64,
                "required: the C1 output or Commit2In document, as the request's payload (raw \
                 upload), as base64 in input.c1_output_base64, or as JSON in input.c1_output",
            ))
        }
        _ => {
            return Err(JobError::field(
                "input",
                "give the document once: as the payload, c1_output_base64 or c1_output",
            ))
        }
    };
    let Document {
        c1,
        format,
        sector_num,
        c1_field,
    } = doc;
    let sector_id = match (sector_id, sector_num) {
        (Some(given), Some(num)) if given != num => {
            return Err(JobError::field(
                F_SECTOR,
                format!(
                    "is {given}, but the Commit2In document's SectorNum is {num}; leave \
                     sector_id out or make them agree"
                ),
            ))
        }
        (Some(id), _) | (None, Some(id)) => id,
        (None, None) => {
            return Err(JobError::field(
                F_SECTOR,
                match format {
                    DocumentFormat::C1Output => {
                        "required: the sector number (a bare C1 output does not carry it)"
                    }
                    DocumentFormat::Commit2In => "required: the sector number",
                },
            ))
        }
    };
    Ok(C2Input {
        c1,
        prover_id,
        sector_id,
        c1_field,
        prover_field,
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
        assert_eq!(parse_prover_id(&json!(hexed)).unwrap(), [0xab; 32]);
        assert_eq!(
            parse_prover_id(&json!(format!("0x{hexed}"))).unwrap(),
            [0xab; 32]
        );
        assert_eq!(parse_prover_id(&json!(vec![7u8; 32])).unwrap(), [7; 32]);
        let e = parse_prover_id(&json!("abcd")).unwrap_err().to_string();
        assert!(e.contains(F_PROVER) && e.contains("got 2 bytes"), "{e}");
        let e = parse_prover_id(&json!([1, 2, 300]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("input.prover_id[2]"), "{e}");
        let e = parse_prover_id(&json!("zz")).unwrap_err().to_string();
        assert!(e.contains("not hex"), "{e}");
        let e = parse_sector_id(&json!(-1)).unwrap_err().to_string();
        assert!(e.contains(F_SECTOR), "{e}");
        assert_eq!(parse_sector_id(&json!("42")).unwrap(), 42);
        assert!(parse_sector_id(&json!("4x")).is_err());
    }

    #[test]
    fn miner_id_forms() {
        let t01000 = miner::prover_id_of_actor(1000);
        for v in [json!("f01000"), json!("t01000"), json!("1000"), json!(1000)] {
            assert_eq!(parse_miner_id(&v).unwrap(), t01000, "{v}");
        }
        let e = parse_miner_id(&json!("f1abc")).unwrap_err().to_string();
        assert!(e.contains(F_MINER) && e.contains("ID address"), "{e}");
        let e = parse_miner_id(&json!(-4)).unwrap_err().to_string();
        assert!(e.contains(F_MINER), "{e}");
    }

    fn input_err(input: Value, payload: Option<&[u8]>) -> String {
        parse_input(&input, payload).unwrap_err().to_string()
    }

    #[test]
    fn input_errors_name_the_field() {
        let p = "ab".repeat(32);
        let e = input_err(
            json!({"prover_id": p, "miner_id": "f01000", "sector_id": 1}),
            None,
        );
        assert!(e.contains(F_MINER) && e.contains("not both"), "{e}");
        let e = input_err(json!({"sector_id": 1, "c1_output_base64": ""}), None);
        assert!(e.contains(F_PROVER) && e.contains("miner_id"), "{e}");
        let e = input_err(json!({"prover_id": p, "sector": 1}), None);
        assert!(
            e.contains("input.sector") && e.contains("unknown field"),
            "{e}"
        );
        let e = input_err(json!({"prover_id": p, "sector_id": 1}), None);
        assert!(e.contains(F_B64) && e.contains("required"), "{e}");
        let e = input_err(
            json!({"prover_id": p, "sector_id": 1, "c1_output_base64": "e30="}),
            Some(b"{}"),
        );
        assert!(e.contains("once"), "{e}");
        let e = input_err(json!({"prover_id": p, "sector_id": 1}), Some(b"{}"));
        assert!(e.contains(F_PAYLOAD) && e.contains("neither"), "{e}");
        let e = input_err(
            json!({"prover_id": p, "sector_id": 1, "c1_output": "e30="}),
            None,
        );
        assert!(e.contains(F_JSON), "{e}");
    }
}
