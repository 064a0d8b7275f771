//! The hex encoding of field elements in requests and results, the request's optional expected
//! public inputs, and the digest that tells a repeated request from another one. The request
//! type itself is [`proofline_wire::JobRequest`].

use blstrs::Scalar;
use ff::PrimeField;
use proofline_wire::JobRequest;
use sha2::{Digest, Sha256};

use crate::JobError;

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

/// The expected public inputs a request gives, parsed (`None` when it gives none).
pub fn expected_public_inputs(request: &JobRequest) -> Result<Option<Vec<Scalar>>, JobError> {
    let Some(list) = &request.public_inputs else {
        return Ok(None);
    };
    list.iter()
        .enumerate()
        .map(|(i, t)| parse_scalar_hex(&format!("public_inputs[{i}]"), t))
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// SHA-256 of what a request asks for: kind, circuit, input, payload, public inputs and
/// priority; not the client's job id nor its idempotency key, which name the request rather than
/// being part of it. Two submissions are "the same request" when their digests are equal.
pub fn request_digest(request: &JobRequest) -> [u8; 32] {
    struct HashWriter<'a>(&'a mut Sha256);
    impl std::io::Write for HashWriter<'_> {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.update(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut h = Sha256::new();
    // serde_json writes object keys in sorted order (no `preserve_order`), so equal values give
    // equal bytes; the JSON is streamed into the hash, never held.
    let head = (
        &request.kind,
        &request.circuit,
        &request.input,
        &request.public_inputs,
        request.priority,
        request.deadline,
    );
    if serde_json::to_writer(HashWriter(&mut h), &head).is_err() {
        // Writing into a hash cannot fail and these values always serialize; keep the digest
        // well-defined anyway.
        h.update(b"unserializable");
    }
    match &request.payload {
        Some(p) => {
            h.update(b"\0payload");
            h.update((p.len() as u64).to_le_bytes());
            h.update(p.as_bytes());
        }
        None => h.update(b"\0none"),
    }
    h.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::Field;

    #[test]
    fn digest_tells_requests_apart_but_not_their_names() {
        let mut a = JobRequest::new("groth16");
        a.circuit = Some("sha256-1".into());
        a.input = serde_json::json!({"seed": 1, "b": [1, 2]});
        let mut named = a.clone();
        named.id = Some("job-1".into());
        named.idempotency_key = Some("k".into());
        assert_eq!(request_digest(&a), request_digest(&named));
        // Key order in the input does not matter.
        let mut reordered = a.clone();
        reordered.input = serde_json::from_str(r#"{"b":[1,2],"seed":1}"#).unwrap();
        assert_eq!(request_digest(&a), request_digest(&reordered));
        let changes: [fn(&mut JobRequest); 6] = [
            |r: &mut JobRequest| r.priority = Some(1),
            |r: &mut JobRequest| r.deadline = Some(1),
            |r: &mut JobRequest| r.input["seed"] = 2.into(),
            |r: &mut JobRequest| r.circuit = None,
            |r: &mut JobRequest| r.payload = Some(vec![1, 2, 3].into()),
            |r: &mut JobRequest| r.public_inputs = Some(vec![]),
        ];
        for change in changes {
            let mut b = a.clone();
            change(&mut b);
            assert_ne!(request_digest(&a), request_digest(&b), "{b:?}");
        }
    }

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
}
