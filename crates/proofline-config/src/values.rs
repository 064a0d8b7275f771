//! Value types of the keys that accept `"auto"` or a human-readable form: counts
//! ([`Count`]: `"auto"` or a positive integer), memory sizes ([`MemorySize`]: `"auto"`, bytes,
//! or `"64GiB"`-style strings) and the GPU selection ([`Devices`]: `"all"`, a list of indices,
//! or none). Each reads from TOML and from environment strings, and writes back the same form.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// A count that is either picked at start-up from the machine or given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Count {
    /// Sized from the cores and devices at start-up.
    Auto,
    /// Exactly this many.
    Fixed(usize),
}

impl Count {
    /// The given value, or `auto` when automatic.
    pub fn or(self, auto: usize) -> usize {
        match self {
            Count::Auto => auto,
            Count::Fixed(n) => n,
        }
    }
}

impl From<usize> for Count {
    fn from(n: usize) -> Self {
        Count::Fixed(n)
    }
}

impl Serialize for Count {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Count::Auto => s.serialize_str("auto"),
            Count::Fixed(n) => s.serialize_u64(*n as u64),
        }
    }
}

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Count;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("\"auto\" or a positive integer")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Count, E> {
                Ok(Count::Fixed(v as usize))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Count, E> {
                usize::try_from(v)
                    .map(Count::Fixed)
                    .map_err(|_| E::custom(format!("{v} is negative")))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Count, E> {
                let t = v.trim();
                if t.eq_ignore_ascii_case("auto") {
                    return Ok(Count::Auto);
                }
                t.parse::<usize>().map(Count::Fixed).map_err(|_| {
                    E::custom(format!("'{v}' is neither \"auto\" nor a positive integer"))
                })
            }
        }
        d.deserialize_any(V)
    }
}

/// A memory budget: picked at start-up from what the machine has, or given in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemorySize {
    /// Sized at start-up (see the key's documentation).
    Auto,
    /// Exactly this many bytes.
    Bytes(u64),
}

impl MemorySize {
    /// The given bytes, or `auto()` when automatic.
    pub fn or_else(self, auto: impl FnOnce() -> u64) -> u64 {
        match self {
            MemorySize::Auto => auto(),
            MemorySize::Bytes(b) => b,
        }
    }
}

/// Parses "64GiB", "512 MiB", "1.5GB", "4096", "auto" (case-insensitive; KiB/MiB/GiB/TiB are
/// powers of 1024, KB/MB/GB/TB of 1000).
pub fn parse_size(s: &str) -> Result<MemorySize, String> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("auto") {
        return Ok(MemorySize::Auto);
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a size like \"64GiB\" or \"auto\""))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        "tib" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        other => {
            return Err(format!(
                "'{s}': unknown unit '{other}' (B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)"
            ))
        }
    };
    let bytes = value * mult as f64;
    if !(bytes.is_finite() && bytes >= 1.0 && bytes < u64::MAX as f64) {
        return Err(format!("'{s}' is not a positive size"));
    }
    Ok(MemorySize::Bytes(bytes as u64))
}

impl Serialize for MemorySize {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            MemorySize::Auto => s.serialize_str("auto"),
            MemorySize::Bytes(b) => s.serialize_u64(*b),
        }
    }
}

impl<'de> Deserialize<'de> for MemorySize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = MemorySize;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("\"auto\", a number of bytes, or a size like \"64GiB\"")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<MemorySize, E> {
                Ok(MemorySize::Bytes(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<MemorySize, E> {
                u64::try_from(v)
                    .map(MemorySize::Bytes)
                    .map_err(|_| E::custom(format!("{v} is negative")))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<MemorySize, E> {
                parse_size(v).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

/// Which GPUs the pipeline uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Devices {
    /// Every visible GPU.
    All,
    /// These device indices (empty: none, the CPU backend).
    List(Vec<usize>),
}

impl Serialize for Devices {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Devices::All => s.serialize_str("all"),
            Devices::List(v) => v.serialize(s),
        }
    }
}

fn parse_devices(v: &str) -> Result<Devices, String> {
    let t = v.trim();
    if t.eq_ignore_ascii_case("all") {
        return Ok(Devices::All);
    }
    if t.is_empty() || t.eq_ignore_ascii_case("none") || t == "[]" {
        return Ok(Devices::List(Vec::new()));
    }
    t.trim_matches(|c| c == '[' || c == ']')
        .split(',')
        .map(|x| {
            x.trim()
                .parse::<usize>()
                .map_err(|_| format!("'{v}' is not \"all\" or a list of device indices"))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Devices::List)
}

impl<'de> Deserialize<'de> for Devices {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Devices;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("\"all\" or a list of GPU indices such as [0, 1]")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Devices, E> {
                parse_devices(v).map_err(E::custom)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Devices, E> {
                Ok(Devices::List(vec![v as usize]))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Devices, E> {
                usize::try_from(v)
                    .map(|i| Devices::List(vec![i]))
                    .map_err(|_| E::custom(format!("{v} is negative")))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Devices, A::Error> {
                let mut v = Vec::new();
                while let Some(i) = seq.next_element::<u64>()? {
                    v.push(i as usize);
                }
                Ok(Devices::List(v))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_units_and_refuse_nonsense() {
        assert_eq!(parse_size("auto"), Ok(MemorySize::Auto));
        assert_eq!(parse_size("64GiB"), Ok(MemorySize::Bytes(64 << 30)));
        assert_eq!(parse_size("512 mib"), Ok(MemorySize::Bytes(512 << 20)));
        assert_eq!(parse_size("1.5GB"), Ok(MemorySize::Bytes(1_500_000_000)));
        assert_eq!(parse_size("4096"), Ok(MemorySize::Bytes(4096)));
        for bad in ["", "GiB", "-1GiB", "12 parsecs", "0", "1e9"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn device_lists_parse_from_strings() {
        assert_eq!(parse_devices("all"), Ok(Devices::All));
        assert_eq!(parse_devices("[]"), Ok(Devices::List(vec![])));
        assert_eq!(parse_devices("none"), Ok(Devices::List(vec![])));
        assert_eq!(parse_devices("0, 2"), Ok(Devices::List(vec![0, 2])));
        assert!(parse_devices("gpu0").is_err());
    }
}
