//! The on-disk form of a [`RecordedSystem`].
//!
//! ```text
//! magic  "PLR1CS\0\0"                       8 bytes
//! header length                             u32, little-endian
//! header                                    bincode 2 (standard configuration) of `Header`
//! payload, every value little-endian:
//!   coefficient table                       32-byte canonical scalars
//!   densities: A aux, B input, B aux        u64 words, bit i % 64 of word i / 64 = variable i
//!   A, B, C, each: offsets (rows + 1)       u32
//!                  columns (terms)          u32
//!                  coefficient indices      u8, u16 or u32 (the header says which)
//! ```
//!
//! The header carries the format version, the shape's key (its parameter file's name), how the
//! system was recorded, the counts, the term counts and index widths, and a BLAKE2b-256 digest.
//! The digest covers the header (with an empty digest field) and every payload array; each array
//! is hashed as 16 MiB blocks in parallel and the block digests hashed again, so that a 32 GiB
//! shape's matrices (several GB) are checked at disk speed. Reading checks the magic, the
//! version, the file's exact length against the header, the key when one is expected, the
//! digest, and then the structure ([`RecordedSystem::new`]): a truncated, corrupt or foreign file
//! is a clear error and never used.
//!
//! Arrays are read in 64 MiB pieces converted in parallel into their typed vectors; the file is
//! written through a temporary file in the same directory and renamed into place, so a reader
//! never sees a partial file under the real name.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;

use blstrs::Scalar;
use ff::PrimeField;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::coeffs::CoeffIndices;
use crate::csr::Csr;
use crate::density::Density;
use crate::system::{Matrices, RecordedSystem, ShapeCounts};
use crate::R1csError;

/// The first bytes of every file.
pub const MAGIC: [u8; 8] = *b"PLR1CS\0\0";

/// The version of the layout this code reads and writes.
pub const FORMAT_VERSION: u32 = 1;

/// Largest header accepted (the header is a few hundred bytes).
const MAX_HEADER: u32 = 1 << 20;

/// Bytes hashed per block of the digest.
const DIGEST_BLOCK: usize = 16 << 20;

/// Bytes read per piece.
const READ_PIECE: usize = 64 << 20;

/// What precedes the arrays.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// [`FORMAT_VERSION`].
    pub format_version: u32,
    /// The shape's key: its parameter file's name.
    pub key: String,
    /// How it was recorded (blank circuit, first synthesis of a job, ...).
    pub origin: String,
    /// Inputs, ONE included.
    pub inputs: u64,
    /// Aux variables.
    pub aux: u64,
    /// Constraints.
    pub constraints: u64,
    /// Entries of the coefficient table.
    pub coefficients: u64,
    /// Terms of A, B, C.
    pub nnz: [u64; 3],
    /// Bytes per coefficient index of A, B, C.
    pub coeff_width: [u8; 3],
    /// BLAKE2b-256 of the header (this field empty) and the payload, hex.
    pub digest: String,
}

impl Header {
    /// Bytes of the payload the header describes.
    fn payload_len(&self) -> Option<u64> {
        let words = |bits: u64| bits.div_ceil(64).checked_mul(8);
        let mut n = self.coefficients.checked_mul(32)?;
        n = n.checked_add(words(self.aux)?)?;
        n = n.checked_add(words(self.inputs)?)?;
        n = n.checked_add(words(self.aux)?)?;
        for (nnz, w) in self.nnz.iter().zip(self.coeff_width) {
            n = n.checked_add(self.constraints.checked_add(1)?.checked_mul(4)?)?;
            n = n.checked_add(nnz.checked_mul(4 + u64::from(w))?)?;
        }
        Some(n)
    }
}

fn bincode_config() -> bincode::config::Configuration {
    bincode::config::standard()
}

/// A value stored little-endian in the payload.
trait Le: Copy + Send + Sync {
    const SIZE: usize;
    fn put(&self, out: &mut [u8]);
    /// `None` for bytes that are not a valid value (a non-canonical scalar).
    fn take(b: &[u8]) -> Option<Self>;
}

macro_rules! le_int {
    ($($t:ty),*) => {$(
        impl Le for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            #[inline]
            fn put(&self, out: &mut [u8]) {
                out.copy_from_slice(&self.to_le_bytes());
            }
            #[inline]
            fn take(b: &[u8]) -> Option<Self> {
                Some(<$t>::from_le_bytes(b.try_into().ok()?))
            }
        }
    )*};
}
le_int!(u8, u16, u32, u64);

impl Le for Scalar {
    const SIZE: usize = 32;
    fn put(&self, out: &mut [u8]) {
        out.copy_from_slice(self.to_repr().as_ref());
    }
    fn take(b: &[u8]) -> Option<Self> {
        let mut repr = <Scalar as PrimeField>::Repr::default();
        repr.as_mut().copy_from_slice(b);
        Option::from(Scalar::from_repr(repr))
    }
}

fn to_bytes<T: Le>(v: &[T]) -> Vec<u8> {
    let mut out = vec![0u8; v.len() * T::SIZE];
    out.par_chunks_mut(T::SIZE * 4096)
        .zip(v.par_chunks(4096))
        .for_each(|(o, x)| {
            for (dst, val) in o.chunks_exact_mut(T::SIZE).zip(x) {
                val.put(dst);
            }
        });
    out
}

fn blake2b256() -> blake2b_simd::Params {
    let mut p = blake2b_simd::Params::new();
    p.hash_length(32);
    p
}

/// Digest of one array: BLAKE2b-256 of its length and of the BLAKE2b-256 of each 16 MiB block of
/// its little-endian bytes (blocks hashed in parallel).
fn digest_array<T: Le>(v: &[T]) -> [u8; 32] {
    let per_block = (DIGEST_BLOCK / T::SIZE).max(1);
    let blocks: Vec<blake2b_simd::Hash> = v
        .par_chunks(per_block)
        .map(|chunk| {
            let mut buf = vec![0u8; chunk.len() * T::SIZE];
            for (dst, val) in buf.chunks_exact_mut(T::SIZE).zip(chunk) {
                val.put(dst);
            }
            blake2b256().hash(&buf)
        })
        .collect();
    let mut st = blake2b256().to_state();
    st.update(&(v.len() as u64).to_le_bytes());
    for b in &blocks {
        st.update(b.as_bytes());
    }
    let mut out = [0u8; 32];
    out.copy_from_slice(st.finalize().as_bytes());
    out
}

fn coeff_digest(k: &CoeffIndices) -> [u8; 32] {
    match k {
        CoeffIndices::U8(v) => digest_array(v),
        CoeffIndices::U16(v) => digest_array(v),
        CoeffIndices::U32(v) => digest_array(v),
    }
}

/// The digest of a system's parts with its header (digest field empty), hex.
fn digest(
    header: &Header,
    table: &[Scalar],
    densities: [&[u64]; 3],
    mats: [&Csr; 3],
) -> Result<String, R1csError> {
    let mut blank = header.clone();
    blank.digest.clear();
    let head = bincode::serde::encode_to_vec(&blank, bincode_config())
        .map_err(|e| R1csError::Malformed(format!("encoding the header: {e}")))?;
    let mut parts: Vec<[u8; 32]> = vec![digest_array(table)];
    parts.extend(densities.iter().map(|d| digest_array(d)));
    for x in mats {
        parts.push(digest_array(&x.row_ptr));
        parts.push(digest_array(&x.cols));
        parts.push(coeff_digest(&x.coeffs));
    }
    let mut st = blake2b256().to_state();
    st.update(b"proofline-r1cs");
    st.update(&head);
    for p in &parts {
        st.update(p);
    }
    Ok(st.finalize().to_hex().to_string())
}

fn digest_of(header: &Header, sys: &RecordedSystem) -> Result<String, R1csError> {
    digest(
        header,
        sys.table(),
        [
            sys.a_aux_density().words(),
            sys.b_input_density().words(),
            sys.b_aux_density().words(),
        ],
        sys.matrices().iter(),
    )
}

fn header_of(sys: &RecordedSystem) -> Header {
    let c = sys.counts();
    let m = sys.matrices();
    Header {
        format_version: FORMAT_VERSION,
        key: sys.key().to_string(),
        origin: sys.origin().to_string(),
        inputs: c.inputs as u64,
        aux: c.aux as u64,
        constraints: c.constraints as u64,
        coefficients: sys.table().len() as u64,
        nnz: [m.a.nnz() as u64, m.b.nnz() as u64, m.c.nnz() as u64],
        coeff_width: [m.a.coeffs.width(), m.b.coeffs.width(), m.c.coeffs.width()],
        digest: String::new(),
    }
}

fn write_array<T: Le>(w: &mut impl Write, v: &[T]) -> std::io::Result<()> {
    for chunk in v.chunks((READ_PIECE / T::SIZE).max(1)) {
        w.write_all(&to_bytes(chunk))?;
    }
    Ok(())
}

fn write_coeffs(w: &mut impl Write, k: &CoeffIndices) -> std::io::Result<()> {
    match k {
        CoeffIndices::U8(v) => w.write_all(v),
        CoeffIndices::U16(v) => write_array(w, v),
        CoeffIndices::U32(v) => write_array(w, v),
    }
}

/// Writes `sys` to `path` (through a temporary file in the same directory, renamed into place).
/// Returns the file's digest.
pub fn write(sys: &RecordedSystem, path: &Path) -> Result<String, R1csError> {
    let io = |e: std::io::Error| R1csError::io(path, e);
    let mut header = header_of(sys);
    header.digest = digest_of(&header, sys)?;
    let head = bincode::serde::encode_to_vec(&header, bincode_config())
        .map_err(|e| R1csError::Malformed(format!("encoding the header: {e}")))?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let tmp = tempfile::Builder::new()
        .prefix(".partial-")
        .tempfile_in(dir)
        .map_err(|e| R1csError::io(dir, e))?;
    let (file, tmp_path) = tmp.into_parts();
    let mut w = BufWriter::with_capacity(8 << 20, file);
    (|| -> std::io::Result<()> {
        w.write_all(&MAGIC)?;
        let len = u32::try_from(head.len()).map_err(std::io::Error::other)?;
        w.write_all(&len.to_le_bytes())?;
        w.write_all(&head)?;
        write_array(&mut w, sys.table())?;
        write_array(&mut w, sys.a_aux_density().words())?;
        write_array(&mut w, sys.b_input_density().words())?;
        write_array(&mut w, sys.b_aux_density().words())?;
        for x in sys.matrices().iter() {
            write_array(&mut w, &x.row_ptr)?;
            write_array(&mut w, &x.cols)?;
            write_coeffs(&mut w, &x.coeffs)?;
        }
        Ok(())
    })()
    .map_err(|e| R1csError::io(&tmp_path, e))?;
    let file = w
        .into_inner()
        .map_err(|e| R1csError::io(&tmp_path, e.into_error()))?;
    file.sync_all().map_err(|e| R1csError::io(&tmp_path, e))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tmp_path, std::fs::Permissions::from_mode(0o644))
            .map_err(|e| R1csError::io(&tmp_path, e))?;
    }
    tmp_path.persist(path).map_err(|e| io(e.error))?;
    Ok(header.digest)
}

fn read_array<T: Le>(r: &mut impl Read, len: usize, what: &str) -> Result<Vec<T>, String> {
    let mut out = Vec::with_capacity(len);
    let per_piece = (READ_PIECE / T::SIZE).max(1);
    let mut buf = Vec::new();
    let mut left = len;
    while left > 0 {
        let n = left.min(per_piece);
        buf.resize(n * T::SIZE, 0);
        r.read_exact(&mut buf)
            .map_err(|e| format!("reading {what}: {e}"))?;
        let part: Option<Vec<T>> = buf.par_chunks_exact(T::SIZE).map(T::take).collect();
        out.extend(part.ok_or_else(|| format!("{what} holds an invalid value"))?);
        left -= n;
    }
    Ok(out)
}

fn read_coeffs(
    r: &mut impl Read,
    width: u8,
    len: usize,
    what: &str,
) -> Result<CoeffIndices, String> {
    Ok(match width {
        1 => CoeffIndices::U8(read_array(r, len, what)?),
        2 => CoeffIndices::U16(read_array(r, len, what)?),
        4 => CoeffIndices::U32(read_array(r, len, what)?),
        w => return Err(format!("{what}: unknown index width {w}")),
    })
}

/// Reads only the header of a file (cheap: for listings and tools).
pub fn read_header(path: &Path) -> Result<Header, R1csError> {
    let f = File::open(path).map_err(|e| R1csError::io(path, e))?;
    let mut r = BufReader::new(f);
    read_header_from(&mut r, path).map(|(h, _)| h)
}

/// The header and its encoded length.
fn read_header_from(r: &mut impl Read, path: &Path) -> Result<(Header, u64), R1csError> {
    let corrupt = |reason: String| R1csError::Corrupt {
        path: path.to_path_buf(),
        reason,
    };
    let mut magic = [0u8; 8];
    r.read_exact(&mut magic)
        .map_err(|e| corrupt(format!("reading the magic bytes: {e}")))?;
    if magic != MAGIC {
        return Err(corrupt(
            "not a proofline constraint file (wrong magic bytes)".into(),
        ));
    }
    let mut len = [0u8; 4];
    r.read_exact(&mut len)
        .map_err(|e| corrupt(format!("reading the header length: {e}")))?;
    let len = u32::from_le_bytes(len);
    if len > MAX_HEADER {
        return Err(corrupt(format!("header length {len} is implausible")));
    }
    let mut head = vec![0u8; len as usize];
    r.read_exact(&mut head)
        .map_err(|e| corrupt(format!("reading the header: {e}")))?;
    let (header, used): (Header, usize) =
        bincode::serde::decode_from_slice(&head, bincode_config())
            .map_err(|e| corrupt(format!("decoding the header: {e}")))?;
    if used != head.len() {
        return Err(corrupt("the header has trailing bytes".into()));
    }
    if header.format_version != FORMAT_VERSION {
        return Err(corrupt(format!(
            "format version {} (this build reads version {FORMAT_VERSION}); record the shape again",
            header.format_version
        )));
    }
    Ok((header, u64::from(len)))
}

/// Reads and checks a file (see the module docs). With `expected_key`, a file recorded for
/// another shape is refused.
pub fn read(path: &Path, expected_key: Option<&str>) -> Result<RecordedSystem, R1csError> {
    let corrupt = |reason: String| R1csError::Corrupt {
        path: path.to_path_buf(),
        reason,
    };
    let f = File::open(path).map_err(|e| R1csError::io(path, e))?;
    let file_len = f.metadata().map_err(|e| R1csError::io(path, e))?.len();
    let mut r = BufReader::with_capacity(8 << 20, f);
    let (header, head_len) = read_header_from(&mut r, path)?;
    if let Some(k) = expected_key {
        if header.key != k {
            return Err(R1csError::WrongShape {
                path: path.to_path_buf(),
                found: header.key,
                expected: k.to_string(),
            });
        }
    }
    let expected_len = header
        .payload_len()
        .and_then(|p| p.checked_add(12 + head_len))
        .ok_or_else(|| corrupt("the header's sizes overflow".into()))?;
    if file_len != expected_len {
        return Err(corrupt(format!(
            "{file_len} bytes, the header describes {expected_len} (truncated or corrupt)"
        )));
    }
    let size = |v: u64, what: &str| {
        usize::try_from(v).map_err(|_| corrupt(format!("{what} {v} does not fit in memory")))
    };
    let counts = ShapeCounts {
        inputs: size(header.inputs, "inputs")?,
        aux: size(header.aux, "aux variables")?,
        constraints: size(header.constraints, "constraints")?,
    };
    let words = |bits: usize| bits.div_ceil(64);
    let body = (|| -> Result<_, String> {
        let table: Vec<Scalar> = read_array(
            &mut r,
            size(header.coefficients, "coefficients").map_err(|e| e.to_string())?,
            "coefficient table",
        )?;
        let mut densities = Vec::with_capacity(3);
        for (what, bits) in [
            ("A aux density", counts.aux),
            ("B input density", counts.inputs),
            ("B aux density", counts.aux),
        ] {
            let w: Vec<u64> = read_array(&mut r, words(bits), what)?;
            densities.push(
                Density::from_words(w, bits)
                    .ok_or_else(|| format!("{what}: bits beyond its length"))?,
            );
        }
        let mut mats = Vec::with_capacity(3);
        for (i, name) in ["A", "B", "C"].into_iter().enumerate() {
            let nnz =
                usize::try_from(header.nnz[i]).map_err(|_| format!("matrix {name} too large"))?;
            let row_ptr = read_array(&mut r, counts.constraints + 1, &format!("{name} offsets"))?;
            let cols = read_array(&mut r, nnz, &format!("{name} columns"))?;
            let coeffs = read_coeffs(
                &mut r,
                header.coeff_width[i],
                nnz,
                &format!("{name} coefficients"),
            )?;
            mats.push(Csr {
                row_ptr,
                cols,
                coeffs,
            });
        }
        Ok((table, densities, mats))
    })()
    .map_err(corrupt)?;
    let (table, densities, mats) = body;
    let mut mats = mats.into_iter();
    let mut dens = densities.into_iter();
    let (Some(a), Some(b), Some(c)) = (mats.next(), mats.next(), mats.next()) else {
        return Err(corrupt("missing matrices".into()));
    };
    let (Some(da), Some(dbi), Some(dba)) = (dens.next(), dens.next(), dens.next()) else {
        return Err(corrupt("missing densities".into()));
    };
    let found = digest(
        &header,
        &table,
        [da.words(), dbi.words(), dba.words()],
        [&a, &b, &c],
    )?;
    if found != header.digest {
        return Err(corrupt(format!(
            "digest mismatch: contents hash to {found}, the header says {}",
            header.digest
        )));
    }
    let sys = RecordedSystem::new(
        header.key,
        header.origin,
        counts,
        table,
        Matrices { a, b, c },
        [da, dbi, dba],
    )
    .map_err(|e| corrupt(e.to_string()))?;
    Ok(sys)
}
