//! The job request as clients send it, and its binary document ([`Payload`]).

use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::JobId;

/// A proof job request (the body of `POST /v1/jobs`, the input of `proofline prove`, and the unit
/// the daemon journals).
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct JobRequest {
    /// Job kind: `"groth16"` (built-in circuits), `"porep-c2"`, `"window-post"`,
    /// `"winning-post"` or `"snap-update"`.
    pub kind: String,
    /// Circuit name, for kinds that offer several (`"sha256-2"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub circuit: Option<String>,
    /// Kind-specific input (witness material, identifiers).
    #[serde(default)]
    pub input: serde_json::Value,
    /// Kind-specific document bytes (for `porep-c2`: the C1 output or a `Commit2In` document),
    /// raw in memory and in binary encodings; base64 in JSON (`payload_base64`). The raw-upload
    /// route fills it from the request body.
    #[serde(
        default,
        rename = "payload_base64",
        skip_serializing_if = "Option::is_none"
    )]
    pub payload: Option<Payload>,
    /// Expected public inputs (without ONE), each the hex of a 32-byte little-endian scalar;
    /// optional.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_inputs: Option<Vec<String>>,
    /// Larger is admitted and scheduled first. When absent, the kind's default applies
    /// (`winning-post` > `window-post` > `snap-update` > `porep-c2` = `groth16`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "priority_field"
    )]
    pub priority: Option<i32>,
    /// Absolute deadline, Unix time in milliseconds. A job that can no longer finish by then
    /// fails early with `deadline_exceeded`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "deadline_field"
    )]
    pub deadline: Option<u64>,
    /// A job id chosen by the client (letters, digits and '-', at most 64). Submitting the same
    /// request again under the same id returns the existing job; another request under an id in
    /// use is refused (`idempotency_conflict`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<JobId>,
    /// The client's idempotency key (the `Idempotency-Key` header over HTTP): the same key with
    /// the same request returns the existing job, with another request it is refused
    /// (`idempotency_conflict`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

impl JobRequest {
    /// A request of `kind` with every other field empty.
    pub fn new(kind: impl Into<String>) -> Self {
        JobRequest {
            kind: kind.into(),
            ..Default::default()
        }
    }
}

/// Document bytes carried by a request. Shared, so that cloning a request never copies a C1
/// output. Serialized as base64 text in human-readable formats (JSON) and as plain bytes in
/// binary ones.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Payload(Arc<Vec<u8>>);

impl Payload {
    /// Wraps bytes (no copy).
    pub fn new(bytes: Vec<u8>) -> Self {
        Payload(Arc::new(bytes))
    }

    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// Number of bytes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are no bytes.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl From<Vec<u8>> for Payload {
    fn from(bytes: Vec<u8>) -> Self {
        Payload::new(bytes)
    }
}

impl Serialize for Payload {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            // Streams the base64 text into the output: no intermediate string.
            s.collect_str(&base64::display::Base64Display::new(
                &self.0,
                &base64::engine::general_purpose::STANDARD,
            ))
        } else {
            s.serialize_bytes(&self.0)
        }
    }
}

impl<'de> Deserialize<'de> for Payload {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Payload;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("base64 text (standard alphabet) or bytes")
            }

            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Payload, E> {
                use base64::Engine;
                base64::engine::general_purpose::STANDARD
                    .decode(text.trim())
                    .map(Payload::new)
                    .map_err(|e| E::custom(format!("payload_base64 is not base64: {e}")))
            }

            fn visit_bytes<E: serde::de::Error>(self, bytes: &[u8]) -> Result<Payload, E> {
                Ok(Payload::new(bytes.to_vec()))
            }

            fn visit_byte_buf<E: serde::de::Error>(self, bytes: Vec<u8>) -> Result<Payload, E> {
                Ok(Payload::new(bytes))
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Payload, A::Error> {
                let mut v = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some(b) = seq.next_element::<u8>()? {
                    v.push(b);
                }
                Ok(Payload::new(v))
            }
        }
        if d.is_human_readable() {
            d.deserialize_str(Visitor)
        } else {
            d.deserialize_byte_buf(Visitor)
        }
    }
}

/// `priority`: an integer in i32's range, with an error message that names the field. Requests
/// are JSON wherever they are encoded (over HTTP and in the job store), so the value is read as
/// JSON.
fn priority_field<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i32>, D::Error> {
    let v = Option::<serde_json::Value>::deserialize(d)?;
    match v {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(v) => v
            .as_i64()
            .and_then(|n| i32::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| {
                serde::de::Error::custom(format!(
                    "invalid field 'priority': must be an integer from -2147483648 to \
                     2147483647, got {v}"
                ))
            }),
    }
}

/// `deadline`: Unix milliseconds as a non-negative integer, with an error message that names
/// the field.
fn deadline_field<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let v = Option::<serde_json::Value>::deserialize(d)?;
    match v {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(v) => v.as_u64().map(Some).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "invalid field 'deadline': must be an absolute time in Unix milliseconds (a \
                 non-negative integer such as 1796000000000), got {v}"
            ))
        }),
    }
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
        assert_eq!(r, JobRequest::new("groth16"));
        assert_eq!(r.priority, None);
        assert_eq!(r.deadline, None);
        assert!(r.circuit.is_none() && r.public_inputs.is_none() && r.payload.is_none());
        assert!(r.id.is_none() && r.idempotency_key.is_none());
        assert!(r.input.is_null());
        // Absent fields stay absent when written back (journal round trip).
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"kind":"groth16","input":null}"#
        );
    }

    #[test]
    fn priority_and_deadline_are_checked_and_named() {
        let r: JobRequest =
            serde_json::from_str(r#"{"kind":"k","priority":-3,"deadline":1796000000000}"#).unwrap();
        assert_eq!(
            (r.priority, r.deadline),
            (Some(-3), Some(1_796_000_000_000))
        );
        let r: JobRequest = serde_json::from_str(r#"{"kind":"k","priority":0}"#).unwrap();
        assert_eq!(r.priority, Some(0), "an explicit 0 is kept, not defaulted");
        for (body, field) in [
            (r#"{"kind":"k","priority":"high"}"#, "'priority'"),
            (r#"{"kind":"k","priority":1.5}"#, "'priority'"),
            (r#"{"kind":"k","priority":4294967296}"#, "'priority'"),
            (
                r#"{"kind":"k","deadline":"2026-01-01T00:00:00Z"}"#,
                "'deadline'",
            ),
            (r#"{"kind":"k","deadline":-1}"#, "'deadline'"),
        ] {
            let e = serde_json::from_str::<JobRequest>(body).unwrap_err();
            assert!(e.to_string().contains(field), "{body}: {e}");
        }
    }

    #[test]
    fn payload_is_base64_in_json_and_round_trips() {
        let mut r = JobRequest::new("porep-c2");
        r.payload = Some(Payload::new(b"{\"a\":1}\xff".to_vec()));
        let text = serde_json::to_string(&r).unwrap();
        assert!(
            text.contains(r#""payload_base64":"eyJhIjoxff8=""#),
            "{text}"
        );
        let back: JobRequest = serde_json::from_str(&text).unwrap();
        assert_eq!(back, r);
        let e = serde_json::from_str::<JobRequest>(r#"{"kind":"x","payload_base64":"%%"}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("payload_base64 is not base64"), "{e}");
    }

    #[test]
    fn cloning_shares_the_payload() {
        let p = Payload::new(vec![1; 1024]);
        let q = p.clone();
        assert!(std::ptr::eq(p.as_bytes(), q.as_bytes()));
    }
}
