//! Miner actor ids (`f01000`, `t01000`) and the prover id filecoin-ffi derives from them.
//!
//! Lotus and Curio name a storage provider by its miner actor's ID address; filecoin-proofs takes
//! a 32-byte prover id. filecoin-ffi's `toProverID` builds the ID address of the actor id and
//! copies the address payload into a zeroed `[32]byte`; the payload of an ID address is the
//! actor id as an unsigned LEB128 varint (go-address `NewIDAddress`). So actor 1000 (`f01000`) is
//! prover id `e807` followed by 30 zero bytes.

/// The largest actor id an ID address can carry (go-address parses it as a 63-bit number).
pub const MAX_ACTOR_ID: u64 = (1 << 63) - 1;

/// Parses a miner actor id: an ID address with its network prefix (`f01000` on mainnet,
/// `t01000` on test networks) or the bare number (`1000`). `Err` says why, for the caller to
/// attach to the field.
pub fn parse_actor_id(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let digits = match text.as_bytes() {
        [b'f' | b't', b'0', ..] => &text[2..],
        [b'f' | b't', p, ..] if p.is_ascii_digit() => {
            return Err(format!(
                "'{text}' is not an ID address (protocol {}); a miner actor is named f0<number> \
                 or t0<number>, e.g. f01000",
                *p as char
            ))
        }
        _ => text,
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "'{text}' is not a miner actor id (f0<number>, t0<number> or a number, e.g. f01000)"
        ));
    }
    digits
        .parse::<u64>()
        .ok()
        .filter(|id| *id <= MAX_ACTOR_ID)
        .ok_or_else(|| format!("'{text}': an actor id is at most {MAX_ACTOR_ID}"))
}

/// The prover id of a miner actor, as filecoin-ffi derives it: the actor id as an unsigned
/// LEB128 varint, zero-padded to 32 bytes.
pub fn prover_id_of_actor(id: u64) -> [u8; 32] {
    let mut out = [0u8; 32];
    let mut v = id;
    let mut i = 0;
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out[i] = byte;
            return out;
        }
        out[i] = byte | 0x80;
        i += 1;
    }
}

/// The actor id a prover id was derived from, when it has the shape of one (a LEB128 varint
/// followed by zeros); `None` for any other 32 bytes.
pub fn actor_of_prover_id(prover_id: &[u8; 32]) -> Option<u64> {
    let mut id = 0u64;
    for (i, b) in prover_id.iter().enumerate().take(10) {
        id |= u64::from(b & 0x7f).checked_shl(7 * i as u32)?;
        if b & 0x80 == 0 {
            return (prover_id_of_actor(id) == *prover_id).then_some(id);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex32(p: &[u8; 32]) -> String {
        hex::encode(p)
    }

    #[test]
    fn known_pairs() {
        // lotus-bench's default miner, t01000: 1000 = 0b111_1101000 -> e8 07.
        assert_eq!(
            hex32(&prover_id_of_actor(parse_actor_id("t01000").unwrap())),
            format!("e807{}", "00".repeat(30))
        );
        assert_eq!(parse_actor_id("f01000").unwrap(), 1000);
        assert_eq!(parse_actor_id("1000").unwrap(), 1000);
        // The LEB128 example of the DWARF specification: 624485 -> e5 8e 26.
        assert_eq!(&prover_id_of_actor(624_485)[..4], &[0xe5, 0x8e, 0x26, 0x00]);
        assert_eq!(prover_id_of_actor(0), [0; 32]);
        assert_eq!(&prover_id_of_actor(127)[..2], &[0x7f, 0]);
        assert_eq!(&prover_id_of_actor(128)[..3], &[0x80, 0x01, 0]);
        let max = prover_id_of_actor(MAX_ACTOR_ID);
        assert_eq!(
            &max[..10],
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0]
        );
    }

    #[test]
    fn round_trip_and_non_actor_ids() {
        for id in [0, 1, 127, 128, 1000, 624_485, 2_000_000, MAX_ACTOR_ID] {
            assert_eq!(actor_of_prover_id(&prover_id_of_actor(id)), Some(id));
        }
        assert_eq!(actor_of_prover_id(&[0xab; 32]), None);
        let mut p = prover_id_of_actor(1000);
        p[31] = 1;
        assert_eq!(actor_of_prover_id(&p), None);
    }

    #[test]
    fn bad_actor_ids_say_why() {
        for (text, needle) in [
            ("f1abcdef", "not an ID address"),
            ("t3xyz", "not an ID address"),
            ("f0", "not a miner actor id"),
            ("f0x12", "not a miner actor id"),
            ("", "not a miner actor id"),
            ("-5", "not a miner actor id"),
            ("f09223372036854775808", "at most"),
        ] {
            let e = parse_actor_id(text).unwrap_err();
            assert!(e.contains(needle), "{text}: {e}");
        }
    }
}
