//! The binary records of the job store (bincode 2, standard configuration).
//!
//! A request is stored as its JSON text with every top-level `input.*_base64` string taken out
//! and kept as raw bytes (a C1 output is ~50 MB of bytes, ~67 MB as base64): the bytes are
//! stored once, binary, and the text stays small. The wire types (`JobRequest`, `JobStatus`)
//! are kept as JSON inside the binary envelope because they evolve with serde attributes
//! (`skip_serializing_if`, defaults) that a non-self-describing format cannot follow; the
//! proof of a finished job is stored as raw bytes.
//!
//! Every record starts with a format number, so that a store written by a later format is
//! reported as such instead of being misread.

use base64::Engine;
use proofline_wire::{JobRequest, JobResult, JobStatus};
use serde::{Deserialize, Serialize};

/// Format of the records this build writes and reads.
pub const RECORD_FORMAT: u16 = 1;

/// Suffix of the input fields stored as raw bytes.
const BLOB_SUFFIX: &str = "_base64";

/// Why a record could not be encoded or decoded.
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    /// Encoding failed (a value the encoder cannot represent).
    #[error("cannot encode record: {0}")]
    Encode(String),
    /// The bytes are not a record of this format.
    #[error("undecodable record: {0}")]
    Decode(String),
    /// The record was written by another format.
    #[error("record format {found}, this build reads format {RECORD_FORMAT}")]
    Format {
        /// The format found.
        found: u16,
    },
}

#[derive(Serialize, Deserialize)]
struct RequestRecord {
    format: u16,
    /// The request as JSON, without the blob fields.
    json: Vec<u8>,
    /// `(input field, decoded bytes)` of every blob field taken out.
    blobs: Vec<(String, Vec<u8>)>,
}

#[derive(Serialize, Deserialize)]
struct FinishedRecordV1 {
    format: u16,
    /// The final status as JSON.
    status: Vec<u8>,
    /// Proof bytes and public inputs of a succeeded job.
    result: Option<(Vec<u8>, Vec<Vec<String>>)>,
}

fn config() -> bincode::config::Configuration {
    bincode::config::standard()
}

fn bin<T: Serialize>(v: &T) -> Result<Vec<u8>, CodecError> {
    bincode::serde::encode_to_vec(v, config()).map_err(|e| CodecError::Encode(e.to_string()))
}

fn unbin<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, CodecError> {
    let (v, used) = bincode::serde::decode_from_slice::<T, _>(bytes, config())
        .map_err(|e| CodecError::Decode(e.to_string()))?;
    if used != bytes.len() {
        return Err(CodecError::Decode(format!(
            "{} trailing bytes after the record",
            bytes.len() - used
        )));
    }
    Ok(v)
}

/// Reads the format number without decoding the rest (bincode's varint of the first field).
fn format_of(bytes: &[u8]) -> Result<u16, CodecError> {
    let (f, _) = bincode::serde::decode_from_slice::<u16, _>(bytes, config())
        .map_err(|e| CodecError::Decode(e.to_string()))?;
    Ok(f)
}

fn check_format(bytes: &[u8]) -> Result<(), CodecError> {
    match format_of(bytes)? {
        RECORD_FORMAT => Ok(()),
        found => Err(CodecError::Format { found }),
    }
}

/// Encodes a request. The blob strings are moved out of `request` while it is serialized and
/// moved back afterwards, so the request is unchanged and its big strings are never copied.
pub fn encode_request(request: &mut JobRequest) -> Result<Vec<u8>, CodecError> {
    let engine = base64::engine::general_purpose::STANDARD;
    let mut taken: Vec<(String, String)> = Vec::new();
    let mut blobs = Vec::new();
    if let Some(obj) = request.input.as_object_mut() {
        let names: Vec<String> = obj
            .iter()
            .filter(|(k, v)| k.ends_with(BLOB_SUFFIX) && v.is_string())
            .map(|(k, _)| k.clone())
            .collect();
        for name in names {
            let Some(serde_json::Value::String(text)) = obj.remove(&name) else {
                continue;
            };
            match engine.decode(text.as_bytes()) {
                Ok(bytes) => {
                    blobs.push((name.clone(), bytes));
                    taken.push((name, text));
                }
                // Not base64 after all: it stays in the JSON text.
                Err(_) => {
                    obj.insert(name, serde_json::Value::String(text));
                }
            }
        }
    }
    let json = serde_json::to_vec(&*request).map_err(|e| CodecError::Encode(e.to_string()));
    if let Some(obj) = request.input.as_object_mut() {
        for (name, text) in taken {
            obj.insert(name, serde_json::Value::String(text));
        }
    }
    bin(&RequestRecord {
        format: RECORD_FORMAT,
        json: json?,
        blobs,
    })
}

/// Decodes a request written by [`encode_request`].
pub fn decode_request(bytes: &[u8]) -> Result<JobRequest, CodecError> {
    check_format(bytes)?;
    let rec: RequestRecord = unbin(bytes)?;
    let mut value: serde_json::Value =
        serde_json::from_slice(&rec.json).map_err(|e| CodecError::Decode(e.to_string()))?;
    if !rec.blobs.is_empty() {
        let engine = base64::engine::general_purpose::STANDARD;
        let input = value
            .get_mut("input")
            .and_then(|i| i.as_object_mut())
            .ok_or_else(|| CodecError::Decode("blob fields but no input object".into()))?;
        for (name, bytes) in rec.blobs {
            input.insert(name, serde_json::Value::String(engine.encode(bytes)));
        }
    }
    serde_json::from_value(value).map_err(|e| CodecError::Decode(e.to_string()))
}

/// A finished job as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct FinishedRecord {
    /// Final status.
    pub status: JobStatus,
    /// Result of a successful job.
    pub result: Option<JobResult>,
}

/// Encodes a finished job.
pub fn encode_finished(rec: &FinishedRecord) -> Result<Vec<u8>, CodecError> {
    bin(&FinishedRecordV1 {
        format: RECORD_FORMAT,
        status: encode_status(&rec.status)?,
        result: rec
            .result
            .as_ref()
            .map(|r| (r.proof.clone(), r.public_inputs.clone())),
    })
}

/// Decodes a finished job written by [`encode_finished`].
pub fn decode_finished(bytes: &[u8]) -> Result<FinishedRecord, CodecError> {
    check_format(bytes)?;
    let rec: FinishedRecordV1 = unbin(bytes)?;
    Ok(FinishedRecord {
        status: decode_status(&rec.status)?,
        result: rec.result.map(|(proof, public_inputs)| JobResult {
            proof,
            public_inputs,
        }),
    })
}

/// A status snapshot as stored (JSON: it is small and evolves with the wire types).
pub fn encode_status(status: &JobStatus) -> Result<Vec<u8>, CodecError> {
    serde_json::to_vec(status).map_err(|e| CodecError::Encode(e.to_string()))
}

/// Decodes [`encode_status`].
pub fn decode_status(bytes: &[u8]) -> Result<JobStatus, CodecError> {
    serde_json::from_slice(bytes).map_err(|e| CodecError::Decode(e.to_string()))
}

/// A result as stored in the shared queue.
pub fn encode_result(result: &JobResult) -> Result<Vec<u8>, CodecError> {
    bin(&(RECORD_FORMAT, &result.proof, &result.public_inputs))
}

/// Decodes [`encode_result`].
pub fn decode_result(bytes: &[u8]) -> Result<JobResult, CodecError> {
    check_format(bytes)?;
    let (_, proof, public_inputs): (u16, Vec<u8>, Vec<Vec<String>>) = unbin(bytes)?;
    Ok(JobResult {
        proof,
        public_inputs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proofline_wire::{JobState, StageTimings};

    fn c1_request(c1: &[u8]) -> JobRequest {
        JobRequest {
            kind: "porep-c2".into(),
            circuit: None,
            input: serde_json::json!({
                "c1_output_base64": base64::engine::general_purpose::STANDARD.encode(c1),
                "prover_id": "00".repeat(32),
                "sector_id": 7,
            }),
            public_inputs: None,
            priority: Some(2),
            deadline: Some(1_796_000_000_000),
            ..Default::default()
        }
    }

    #[test]
    fn a_request_round_trips_and_its_blob_is_stored_as_bytes() {
        let c1: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut req = c1_request(&c1);
        let before = req.clone();
        let bytes = encode_request(&mut req).unwrap();
        assert_eq!(req, before, "the request is given back unchanged");
        // Raw bytes plus a little JSON: far below the base64 text's 400,000 characters.
        assert!(bytes.len() < c1.len() + 1_000, "{} bytes", bytes.len());
        assert_eq!(decode_request(&bytes).unwrap(), before);
    }

    #[test]
    fn an_absent_priority_stays_absent_so_the_kind_default_applies_after_a_restart() {
        let mut req = JobRequest::new("window-post");
        req.deadline = Some(1_796_000_000_000);
        let back = decode_request(&encode_request(&mut req.clone()).unwrap()).unwrap();
        assert_eq!(
            (back.priority, back.deadline),
            (None, Some(1_796_000_000_000))
        );
        req.priority = Some(0);
        let back = decode_request(&encode_request(&mut req.clone()).unwrap()).unwrap();
        assert_eq!(
            back.priority,
            Some(0),
            "an explicit 0 is not the kind default"
        );
    }

    #[test]
    fn a_field_that_is_not_base64_stays_text() {
        let mut req = c1_request(b"x");
        req.input["odd_base64"] = serde_json::json!("not base64!");
        let bytes = encode_request(&mut req.clone()).unwrap();
        assert_eq!(decode_request(&bytes).unwrap(), req);
    }

    #[test]
    fn finished_records_round_trip_and_damage_is_detected() {
        let rec = FinishedRecord {
            status: JobStatus {
                id: "abc".into(),
                kind: "groth16".into(),
                label: "sha256-1".into(),
                state: JobState::Succeeded,
                priority: 3,
                deadline_ms: None,
                partitions: 1,
                partitions_done: 1,
                submitted_at_ms: 1,
                started_at_ms: Some(2),
                finished_at_ms: Some(3),
                timings: StageTimings::default(),
                partition_timings: vec![StageTimings::default()],
                error: None,
            },
            result: Some(JobResult {
                proof: vec![7; 192],
                public_inputs: vec![vec!["00".into()]],
            }),
        };
        let bytes = encode_finished(&rec).unwrap();
        assert_eq!(decode_finished(&bytes).unwrap(), rec);
        assert!(decode_finished(&bytes[..bytes.len() - 10]).is_err());
        let mut later = bytes.clone();
        later[0] = 9;
        assert!(matches!(
            decode_finished(&later),
            Err(CodecError::Format { found: 9 })
        ));
        let r = rec.result.unwrap();
        assert_eq!(decode_result(&encode_result(&r).unwrap()).unwrap(), r);
    }
}
