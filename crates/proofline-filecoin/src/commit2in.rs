//! The documents a sealing worker holds after commit phase 1, told apart by their shape:
//!
//! * the bare C1 output: filecoin-proofs-api's `SealCommitPhase1Output` as JSON
//!   (`registered_proof`, `vanilla_proofs`, `comm_r`, ...), what filecoin-ffi returns;
//! * Lotus' `Commit2In`, which `lotus-bench prove` reads and Curio hands around:
//!   `{"SectorNum": 42, "Phase1Out": "<base64 of the C1 output JSON>", "SectorSize": 34359738368}`
//!   (Go writes a `[]byte` as standard base64 in JSON).
//!
//! [`parse_document`] reads either in one pass into a typed struct that has the fields of both
//! (no JSON value tree of the whole document), then keeps the one the fields say it is. A
//! `Commit2In`'s `Phase1Out` is base64-decoded once and parsed as a C1 output.

use std::borrow::Cow;

use base64::Engine;
use filecoin_hashers::Hasher;
use filecoin_proofs::DefaultTreeHasher;
use filecoin_proofs_api::seal::{SealCommitPhase1Output, VanillaSealProof};
use filecoin_proofs_api::{Commitment, Ticket};
use proofline_jobs::JobError;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

use crate::c1::{parse_c1_bytes, C1Document};
use crate::shapes;

/// Which document a request carried.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum DocumentFormat {
    /// filecoin-proofs-api's `SealCommitPhase1Output` JSON.
    C1Output,
    /// Lotus' `Commit2In` (`SectorNum`, `Phase1Out`, `SectorSize`).
    Commit2In,
}

/// A parsed document: the C1 output, and what a `Commit2In` says besides it.
#[derive(Debug)]
pub struct Document {
    /// The C1 output.
    pub c1: SealCommitPhase1Output,
    /// Which form it came in.
    pub format: DocumentFormat,
    /// A `Commit2In`'s `SectorNum`.
    pub sector_num: Option<u64>,
    /// The field the C1 output itself came from (`payload`, `payload.Phase1Out`, ...), for
    /// error messages about its contents.
    pub c1_field: String,
}

/// Lotus' `Commit2In`, for tools and tests that write one (`serde_json::to_vec` gives the bytes
/// Lotus writes).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Commit2In {
    /// Sector number.
    #[serde(rename = "SectorNum")]
    pub sector_num: u64,
    /// The C1 output JSON bytes (base64 in JSON).
    #[serde(rename = "Phase1Out", serialize_with = "base64_text")]
    pub phase1_out: Vec<u8>,
    /// Sector size in bytes.
    #[serde(rename = "SectorSize")]
    pub sector_size: u64,
}

fn base64_text<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&base64::display::Base64Display::new(
        bytes,
        &base64::engine::general_purpose::STANDARD,
    ))
}

/// Every top-level field of both documents, each optional; unknown fields are ignored (Lotus
/// forks add their own).
#[derive(Deserialize)]
struct EitherDocument<'a> {
    #[serde(rename = "SectorNum")]
    sector_num: Option<i64>,
    #[serde(
        rename = "Phase1Out",
        default,
        borrow,
        deserialize_with = "borrowed_text"
    )]
    phase1_out: Option<Cow<'a, str>>,
    #[serde(rename = "SectorSize")]
    sector_size: Option<u64>,
    registered_proof: Option<Value>,
    vanilla_proofs: Option<VanillaSealProof>,
    comm_r: Option<Commitment>,
    comm_d: Option<Commitment>,
    replica_id: Option<<DefaultTreeHasher as Hasher>::Domain>,
    seed: Option<Ticket>,
    ticket: Option<Ticket>,
}

/// A string field borrowed from the document when it has no escapes (base64 never has): the
/// `Phase1Out` text of a 200 MB C1 output is not copied before it is decoded. (serde's own
/// `Option<Cow<str>>` always copies.)
fn borrowed_text<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Cow<'de, str>>, D::Error> {
    struct Text;
    impl<'de> serde::de::Visitor<'de> for Text {
        type Value = Option<Cow<'de, str>>;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a base64 string")
        }

        fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
            Ok(Some(Cow::Borrowed(v)))
        }

        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(v.to_string())))
        }

        fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_str(self)
        }
    }
    d.deserialize_option(Text)
}

const NEITHER: &str = "neither a C1 output (filecoin-proofs-api SealCommitPhase1Output JSON) \
                       nor a Commit2In document (SectorNum, Phase1Out, SectorSize)";

impl EitherDocument<'_> {
    fn has_c1_fields(&self) -> bool {
        self.registered_proof.is_some()
            || self.vanilla_proofs.is_some()
            || self.comm_r.is_some()
            || self.comm_d.is_some()
            || self.replica_id.is_some()
            || self.seed.is_some()
            || self.ticket.is_some()
    }

    fn into_document(self, field: &str) -> Result<Document, JobError> {
        match self.phase1_out {
            Some(_) if self.has_c1_fields() => Err(JobError::field(
                field,
                "has both Commit2In fields (Phase1Out) and C1 output fields (vanilla_proofs, \
                 ...); send one document",
            )),
            Some(text) => commit2in(text, self.sector_num, self.sector_size, field),
            None if self.has_c1_fields() => {
                if self.sector_num.is_some() || self.sector_size.is_some() {
                    return Err(JobError::field(
                        field,
                        "has Commit2In fields (SectorNum, SectorSize) but no Phase1Out",
                    ));
                }
                let missing = |name: &str| {
                    JobError::field(
                        field,
                        format!(
                            "not a C1 output (SealCommitPhase1Output JSON): missing field `{name}`"
                        ),
                    )
                };
                let doc = C1Document {
                    registered_proof: self
                        .registered_proof
                        .ok_or_else(|| missing("registered_proof"))?,
                    vanilla_proofs: self
                        .vanilla_proofs
                        .ok_or_else(|| missing("vanilla_proofs"))?,
                    comm_r: self.comm_r.ok_or_else(|| missing("comm_r"))?,
                    comm_d: self.comm_d.ok_or_else(|| missing("comm_d"))?,
                    replica_id: self.replica_id.ok_or_else(|| missing("replica_id"))?,
                    seed: self.seed.ok_or_else(|| missing("seed"))?,
                    ticket: self.ticket.ok_or_else(|| missing("ticket"))?,
                };
                Ok(Document {
                    c1: doc.into_output(field)?,
                    format: DocumentFormat::C1Output,
                    sector_num: None,
                    c1_field: field.to_string(),
                })
            }
            None if self.sector_num.is_some() || self.sector_size.is_some() => {
                Err(JobError::field(
                    format!("{field}.Phase1Out"),
                    "required in a Commit2In document",
                ))
            }
            None => Err(JobError::field(field, NEITHER)),
        }
    }
}

fn commit2in(
    phase1_out: Cow<'_, str>,
    sector_num: Option<i64>,
    sector_size: Option<u64>,
    field: &str,
) -> Result<Document, JobError> {
    let num_field = format!("{field}.SectorNum");
    let sector_num = sector_num
        .ok_or_else(|| JobError::field(&num_field, "required in a Commit2In document"))?;
    let sector_num = u64::try_from(sector_num).map_err(|_| {
        JobError::field(
            &num_field,
            format!("must not be negative, got {sector_num}"),
        )
    })?;
    let c1_field = format!("{field}.Phase1Out");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(phase1_out.trim())
        .map_err(|e| JobError::field(&c1_field, format!("not base64: {e}")))?;
    drop(phase1_out);
    let c1 = parse_c1_bytes(&bytes, &c1_field)?;
    drop(bytes);
    if let Some(size) = sector_size {
        let expected = u64::from(c1.registered_proof.sector_size());
        if size != expected {
            return Err(JobError::field(
                format!("{field}.SectorSize"),
                format!(
                    "{size} bytes, but the C1 output in Phase1Out is a {} sector ({})",
                    shapes::sector_size_label(expected),
                    shapes::name(c1.registered_proof)
                ),
            ));
        }
    }
    Ok(Document {
        c1,
        format: DocumentFormat::Commit2In,
        sector_num: Some(sector_num),
        c1_field,
    })
}

/// Parses document bytes (the request's payload, or decoded base64) as a C1 output or a
/// `Commit2In`; `field` names where the bytes came from.
pub fn parse_document(bytes: &[u8], field: &str) -> Result<Document, JobError> {
    let doc: EitherDocument<'_> = serde_json::from_slice(bytes)
        .map_err(|e| JobError::field(field, format!("{NEITHER}: {e}")))?;
    doc.into_document(field)
}

/// As [`parse_document`], for a document embedded in the request's JSON.
pub fn parse_document_value(value: &Value, field: &str) -> Result<Document, JobError> {
    let doc = EitherDocument::deserialize(value)
        .map_err(|e| JobError::field(field, format!("{NEITHER}: {e}")))?;
    doc.into_document(field)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn phase1_out_is_borrowed_from_the_document() {
        let text = br#"{"Phase1Out":"e30=","SectorNum":1}"#;
        let doc: EitherDocument<'_> = serde_json::from_slice(text).unwrap();
        assert!(matches!(doc.phase1_out, Some(Cow::Borrowed("e30="))));
        let doc: EitherDocument<'_> = serde_json::from_slice(br#"{"Phase1Out":null}"#).unwrap();
        assert!(doc.phase1_out.is_none());
        let doc: EitherDocument<'_> = serde_json::from_slice(b"{}").unwrap();
        assert!(doc.phase1_out.is_none());
    }

    #[test]
    fn commit2in_serializes_as_lotus_writes_it() {
        let c = Commit2In {
            sector_num: 7,
            phase1_out: b"{}".to_vec(),
            sector_size: 2048,
        };
        assert_eq!(
            serde_json::to_string(&c).unwrap(),
            r#"{"SectorNum":7,"Phase1Out":"e30=","SectorSize":2048}"#
        );
    }

    fn err(bytes: &[u8]) -> String {
        parse_document(bytes, "payload").unwrap_err().to_string()
    }

    #[test]
    fn shape_errors_name_the_field() {
        assert!(
            err(b"not json").contains("neither a C1 output"),
            "{}",
            err(b"not json")
        );
        assert!(err(b"{}").contains("neither a C1 output"));
        assert!(err(b"[1,2]").contains("payload"));
        let e = err(br#"{"SectorNum":1,"SectorSize":2048}"#);
        assert!(
            e.contains("payload.Phase1Out") && e.contains("required"),
            "{e}"
        );
        let e = err(br#"{"Phase1Out":"e30=","SectorSize":2048}"#);
        assert!(e.contains("payload.SectorNum"), "{e}");
        let e = err(br#"{"SectorNum":-3,"Phase1Out":"e30=","SectorSize":2048}"#);
        assert!(
            e.contains("payload.SectorNum") && e.contains("negative"),
            "{e}"
        );
        let e = err(br#"{"SectorNum":3,"Phase1Out":"%%%","SectorSize":2048}"#);
        assert!(
            e.contains("payload.Phase1Out") && e.contains("not base64"),
            "{e}"
        );
        let e = err(br#"{"SectorNum":3,"Phase1Out":"e30=","SectorSize":2048}"#);
        assert!(
            e.contains("payload.Phase1Out") && e.contains("registered_proof"),
            "{e}"
        );
        let both = format!(
            r#"{{"SectorNum":3,"Phase1Out":"e30=","comm_r":{:?}}}"#,
            [0u8; 32]
        );
        let e = err(both.as_bytes());
        assert!(e.contains("both"), "{e}");
        let e =
            err(br#"{"comm_d":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]}"#);
        assert!(e.contains("missing field `registered_proof`"), "{e}");
        let e = parse_document_value(&json!({"SectorNum": 1}), "input.c1_output")
            .unwrap_err()
            .to_string();
        assert!(e.contains("input.c1_output.Phase1Out"), "{e}");
    }
}
