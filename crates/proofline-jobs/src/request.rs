//! The hex encoding of field elements in requests and results, and the request's optional
//! expected public inputs. The request type itself is [`proofline_wire::JobRequest`].

use blstrs::Scalar;
use ff::PrimeField;
use proofline_wire::JobRequest;

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
}
