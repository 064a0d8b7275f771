//! Recorded constraint systems of registered seal proofs.
//!
//! A registered proof's partition circuit depends only on its sector shape (V1, V1_1 and
//! synthetic PoRep share it, as they share the parameter file), so its A, B, C matrices are
//! recorded once from filecoin-proofs' blank circuit (`StackedCompound::blank_circuit`, the
//! circuit the parameters were generated from) and stored beside the parameters as
//! `<params stem>.r1cs`, keyed by the parameter file's name — where the daemon's
//! `ConstraintsStore` looks for them. `fil-r1cs record` does this ahead of time; without it the
//! daemon records a shape from its first partition.

use std::path::{Path, PathBuf};

use filecoin_proofs::DefaultPieceHasher;
use filecoin_proofs_api::RegisteredSealProof;
use proofline_groth16::precompiled::record_blank;
use proofline_jobs::constraints_store::constraints_file_name;
use proofline_r1cs::RecordedSystem;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_porep::stacked::{StackedCompound, StackedDrg};

use crate::{shapes, with_tree_shape, FilecoinError};

/// The key of `rp`'s recorded system: its parameter file's name.
pub fn key(rp: RegisteredSealProof) -> Result<String, FilecoinError> {
    Ok(shapes::params_files(rp)?.params)
}

/// Where `rp`'s recorded system lives in `dir` (a parameter directory).
pub fn path_in(rp: RegisteredSealProof, dir: &Path) -> Result<PathBuf, FilecoinError> {
    Ok(dir.join(constraints_file_name(Path::new(&key(rp)?))))
}

fn record_shape<Tree: 'static + MerkleTreeTrait>(
    rp: RegisteredSealProof,
) -> Result<RecordedSystem, FilecoinError> {
    let config = shapes::porep_config(rp);
    let public_params = filecoin_proofs::parameters::public_params::<Tree>(&config)?;
    let blank = <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
        StackedDrg<'_, Tree, DefaultPieceHasher>,
        _,
    >>::blank_circuit(&public_params);
    let origin = format!("blank circuit of {}", shapes::name(rp));
    record_blank(blank, &key(rp)?, &origin)
        .map_err(|e| FilecoinError::Other(format!("recording {}: {e}", shapes::name(rp))))
}

/// Records `rp`'s partition circuit from filecoin-proofs' blank circuit (no sector needed;
/// minutes and several GB of memory at 32 GiB).
pub fn record(rp: RegisteredSealProof) -> Result<RecordedSystem, FilecoinError> {
    let size = u64::from(rp.sector_size());
    with_tree_shape!(size, record_shape(rp), |s| Err(FilecoinError::SectorSize(
        s
    )))
}
