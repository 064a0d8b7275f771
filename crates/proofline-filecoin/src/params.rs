//! Filecoin's published parameter files: where the file of a circuit (PoRep, PoSt or SnapDeals,
//! see [`ProofCircuit`]) is, and the digest check against filecoin-proofs' embedded
//! `parameters.json`. Every kind goes through the same functions.
//!
//! filecoin-proofs' rule (`storage_proofs_core::parameter_cache::verify_production_entry`): the
//! BLAKE2b-512 digest of the whole file, lower-case hex, first 32 characters, must equal the
//! `digest` field of the file's entry in `parameters.json`.

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use proofline_jobs::{JobError, ParamsCheck, ParamsSpec};
use storage_proofs_core::parameter_cache::PARAMETERS;

use crate::proofs::ProofCircuit;
use crate::shapes;

/// The published digest of a parameter or verifying-key file name (`v28-...params`).
pub fn published_digest(file_name: &str) -> Option<&'static str> {
    let params: &'static storage_proofs_core::parameter_cache::ParameterMap = &PARAMETERS;
    params.get(file_name).map(|d| d.digest.as_str())
}

/// filecoin-proofs' digest of a file: BLAKE2b-512, hex, first 32 characters.
pub fn file_digest(path: &Path) -> io::Result<String> {
    let mut reader = BufReader::with_capacity(1 << 22, File::open(path)?);
    let mut state = blake2b_simd::Params::new().to_state();
    let mut buf = vec![0u8; 1 << 22];
    loop {
        let n = reader.read(&mut buf)?;
        if n == 0 {
            break;
        }
        state.update(&buf[..n]);
    }
    let hex = state.finalize().to_hex();
    Ok(hex[..32].to_string())
}

/// Compares a file's digest with the published one.
#[derive(Clone, Debug)]
pub struct DigestCheck {
    /// The published file name whose `parameters.json` entry is the reference.
    pub file_name: String,
}

impl ParamsCheck for DigestCheck {
    fn check(&self, path: &Path) -> Result<(), String> {
        let expected = published_digest(&self.file_name).ok_or_else(|| {
            format!(
                "{} has no entry in filecoin-proofs' parameters.json, so its digest cannot be checked",
                self.file_name
            )
        })?;
        let found =
            file_digest(path).map_err(|e| format!("cannot read for the digest check: {e}"))?;
        if found != expected {
            return Err(format!(
                "digest mismatch: blake2b digest {found}, parameters.json says {expected} \
                 (truncated, corrupt or not the published file; fetch it again)"
            ));
        }
        Ok(())
    }
}

/// How an operator gets the published files of a sector size (the fetch tools fetch every
/// circuit of a size: PoRep, PoSt and SnapDeals).
pub fn fetch_hint(sector_size: u64, dir: &Path) -> String {
    let size = shapes::sector_size_label(sector_size);
    format!(
        "fetch the published parameters for {size} sectors into {} (e.g. `lotus fetch-params \
         {size}` or `curio fetch-params {size}` with FIL_PROOFS_PARAMETER_CACHE={}), or point the \
         Filecoin params_dir setting at the directory that has them",
        dir.display(),
        dir.display(),
    )
}

/// The parameter spec of a circuit's `.params` file in `dir`.
pub fn params_spec(
    circuit: impl Into<ProofCircuit>,
    dir: &Path,
    verify_digests: bool,
) -> Result<ParamsSpec, JobError> {
    let circuit = circuit.into();
    let files = circuit
        .files()
        .map_err(|e| JobError::Internal(e.to_string()))?;
    let check: Option<Arc<dyn ParamsCheck>> = if verify_digests {
        Some(Arc::new(DigestCheck {
            file_name: files.params.clone(),
        }))
    } else {
        None
    };
    Ok(ParamsSpec {
        id: files.params.clone(),
        path: dir.join(&files.params),
        check,
        hint: fetch_hint(circuit.sector_size(), dir),
    })
}

/// The `.vk` file of a circuit in `dir`.
pub fn vk_path(
    circuit: impl Into<ProofCircuit>,
    dir: &Path,
) -> Result<PathBuf, crate::FilecoinError> {
    Ok(dir.join(circuit.into().files()?.vk))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_is_blake2b_512_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"abc").unwrap();
        // BLAKE2b-512("abc"), RFC 7693 appendix A.
        assert_eq!(file_digest(&p).unwrap(), "ba80a53f981c4d0d6a2797b69f12f6e9");
    }

    #[test]
    fn digest_check_rejects_a_wrong_file_and_unknown_names() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"not parameters").unwrap();
        let name =
            shapes::params_files(filecoin_proofs_api::RegisteredSealProof::StackedDrg2KiBV1_1)
                .unwrap()
                .params;
        let e = DigestCheck { file_name: name }.check(&p).unwrap_err();
        assert!(e.contains("digest mismatch"), "{e}");
        let e = DigestCheck {
            file_name: "v28-nope.params".into(),
        }
        .check(&p)
        .unwrap_err();
        assert!(e.contains("no entry"), "{e}");
        let e = DigestCheck {
            file_name: "v28-nope.params".into(),
        }
        .check(&dir.path().join("missing"));
        assert!(e.is_err());
    }
}
