//! The job request as clients send it.

use serde::{Deserialize, Deserializer, Serialize};

/// A proof job request (the body of `POST /v1/jobs`, or the input of `proofline prove`).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct JobRequest {
    /// Job kind: `"groth16"` (built-in circuits), `"porep-c2"`, `"window-post"`,
    /// `"winning-post"` or `"snap-update"`.
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
}

/// `priority`: an integer in i32's range, with an error message that names the field.
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
        assert_eq!(r.priority, None);
        assert_eq!(r.deadline, None);
        assert!(r.circuit.is_none() && r.public_inputs.is_none());
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
}
