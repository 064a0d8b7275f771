//! Registered seal proofs: which ones the `porep-c2` kind serves, their filecoin-proofs
//! configuration, their parameter file names, and the single generic dispatch from a sector size
//! to the Merkle tree shape that every other function of this crate is written against.
//!
//! Every sector size (2KiB, 8MiB, 512MiB, 32GiB, 64GiB) and every API version goes through the
//! same generic functions (`fn f<Tree: MerkleTreeTrait>`); only [`with_tree_shape!`] knows the
//! list of shapes, exactly as filecoin-proofs-api's own `with_shape!` does.

use filecoin_proofs::constants::{
    SECTOR_SIZE_2_KIB, SECTOR_SIZE_32_GIB, SECTOR_SIZE_512_MIB, SECTOR_SIZE_64_GIB,
    SECTOR_SIZE_8_MIB,
};
use filecoin_proofs::PoRepConfig;
use filecoin_proofs_api::RegisteredSealProof;
use storage_proofs_core::api_version::ApiFeature;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_core::parameter_cache::{parameter_id, verifying_key_id};

use crate::FilecoinError;

/// Calls `f::<Tree>(args...)` with the tree shape of a sector size, or `on_unknown(size)`.
#[macro_export]
macro_rules! with_tree_shape {
    ($size:expr, $f:ident ( $($arg:expr),* $(,)? ), $on_unknown:expr) => {{
        use ::filecoin_proofs::constants as fc;
        match $size {
            fc::SECTOR_SIZE_2_KIB => $f::<fc::SectorShape2KiB>($($arg),*),
            fc::SECTOR_SIZE_8_MIB => $f::<fc::SectorShape8MiB>($($arg),*),
            fc::SECTOR_SIZE_512_MIB => $f::<fc::SectorShape512MiB>($($arg),*),
            fc::SECTOR_SIZE_32_GIB => $f::<fc::SectorShape32GiB>($($arg),*),
            fc::SECTOR_SIZE_64_GIB => $f::<fc::SectorShape64GiB>($($arg),*),
            other => $on_unknown(other),
        }
    }};
}

/// Every registered seal proof, in filecoin-proofs-api's order.
pub const ALL: [RegisteredSealProof; 20] = {
    use RegisteredSealProof::*;
    [
        StackedDrg2KiBV1,
        StackedDrg8MiBV1,
        StackedDrg512MiBV1,
        StackedDrg32GiBV1,
        StackedDrg64GiBV1,
        StackedDrg2KiBV1_1,
        StackedDrg8MiBV1_1,
        StackedDrg512MiBV1_1,
        StackedDrg32GiBV1_1,
        StackedDrg64GiBV1_1,
        StackedDrg2KiBV1_1_Feat_SyntheticPoRep,
        StackedDrg8MiBV1_1_Feat_SyntheticPoRep,
        StackedDrg512MiBV1_1_Feat_SyntheticPoRep,
        StackedDrg32GiBV1_1_Feat_SyntheticPoRep,
        StackedDrg64GiBV1_1_Feat_SyntheticPoRep,
        StackedDrg2KiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg8MiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg512MiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg32GiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg64GiBV1_2_Feat_NonInteractivePoRep,
    ]
};

/// The registered proof's name as it appears in the C1 output JSON (`"StackedDrg2KiBV1_1"`).
pub fn name(rp: RegisteredSealProof) -> String {
    format!("{rp:?}")
}

/// Parses a registered proof name.
pub fn parse(name: &str) -> Option<RegisteredSealProof> {
    ALL.iter().copied().find(|rp| format!("{rp:?}") == name)
}

/// `Err(reason)` when `porep-c2` cannot produce what `seal_commit_phase2` returns for `rp`.
///
/// Non-interactive PoRep's `seal_commit_phase2` returns a SnarkPack aggregate of its partition
/// proofs, not the partition proofs themselves; the pipeline's output is the concatenation of
/// partition proofs, so those proofs are refused until an aggregation step exists.
pub fn check_supported(rp: RegisteredSealProof) -> Result<(), String> {
    if rp.feature_enabled(ApiFeature::NonInteractivePoRep) {
        return Err(format!(
            "{} is non-interactive PoRep, whose C2 output is a SnarkPack aggregate; porep-c2 \
             returns plain partition proofs (interactive and synthetic PoRep)",
            name(rp)
        ));
    }
    Ok(())
}

/// The registered proofs `porep-c2` serves.
pub fn supported() -> impl Iterator<Item = RegisteredSealProof> {
    ALL.into_iter().filter(|rp| check_supported(*rp).is_ok())
}

/// filecoin-proofs' configuration of a registered proof (sector size, partitions, porep id,
/// API version and features).
pub fn porep_config(rp: RegisteredSealProof) -> PoRepConfig {
    rp.as_v1_config()
}

/// A human-readable sector size (`"2KiB"`, `"32GiB"`).
pub fn sector_size_label(bytes: u64) -> String {
    match bytes {
        SECTOR_SIZE_2_KIB => "2KiB".into(),
        SECTOR_SIZE_8_MIB => "8MiB".into(),
        SECTOR_SIZE_512_MIB => "512MiB".into(),
        SECTOR_SIZE_32_GIB => "32GiB".into(),
        SECTOR_SIZE_64_GIB => "64GiB".into(),
        other => format!("{other}B"),
    }
}

/// Names of a registered proof's parameter files, exactly as filecoin-proofs derives them
/// (`v28-` + `<cache prefix>-<sha256 of the public parameters' identifier>`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamsFiles {
    /// filecoin-proofs' cache identifier.
    pub cache_id: String,
    /// `v28-<cache_id>.params`.
    pub params: String,
    /// `v28-<cache_id>.vk`.
    pub vk: String,
}

fn cache_id_of<Tree: 'static + MerkleTreeTrait>(config: &PoRepConfig) -> anyhow::Result<String> {
    config.get_cache_identifier::<Tree>()
}

/// The parameter file names of `rp`.
pub fn params_files(rp: RegisteredSealProof) -> Result<ParamsFiles, FilecoinError> {
    let config = porep_config(rp);
    let size = u64::from(config.sector_size);
    let cache_id = with_tree_shape!(size, cache_id_of(&config), |s| Err(anyhow::Error::new(
        FilecoinError::SectorSize(s)
    )))?;
    Ok(ParamsFiles {
        params: parameter_id(&cache_id),
        vk: verifying_key_id(&cache_id),
        cache_id,
    })
}

fn challenges_of<Tree: 'static + MerkleTreeTrait>(config: &PoRepConfig) -> anyhow::Result<usize> {
    let pp = filecoin_proofs::parameters::public_params::<Tree>(config)?;
    Ok(pp.challenges.num_challenges_per_partition())
}

/// PoRep challenges per partition of `rp` (each is one independent sub-circuit).
pub fn challenges_per_partition(rp: RegisteredSealProof) -> Result<usize, FilecoinError> {
    let config = porep_config(rp);
    let size = u64::from(config.sector_size);
    Ok(with_tree_shape!(size, challenges_of(&config), |s| Err(
        anyhow::Error::new(FilecoinError::SectorSize(s))
    ))?)
}

/// Constraints of one partition circuit (without the prover's one constraint per public input),
/// for memory budgeting. Counted from filecoin-proofs' blank circuits by the ignored test
/// `constraint_counts`; the API versions of one sector size share the circuit.
pub fn constraints_hint(rp: RegisteredSealProof) -> usize {
    match u64::from(rp.sector_size()) {
        SECTOR_SIZE_2_KIB => 2_687_921,
        SECTOR_SIZE_8_MIB => 3_844_929,
        SECTOR_SIZE_512_MIB => 4_423_433,
        SECTOR_SIZE_32_GIB => 130_278_541,
        SECTOR_SIZE_64_GIB => 131_185_849,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_non_interactive_is_refused() {
        for rp in ALL {
            assert_eq!(parse(&name(rp)), Some(rp));
        }
        assert_eq!(parse("StackedDrg4KiBV1"), None);
        assert_eq!(supported().count(), 15);
        let e = check_supported(RegisteredSealProof::StackedDrg32GiBV1_2_Feat_NonInteractivePoRep)
            .unwrap_err();
        assert!(e.contains("aggregate"), "{e}");
    }

    fn blank_shape<Tree: 'static + MerkleTreeTrait>(
        rp: RegisteredSealProof,
    ) -> anyhow::Result<crate::paramgen::CircuitShape> {
        use filecoin_proofs::DefaultPieceHasher;
        use storage_proofs_core::compound_proof::CompoundProof;
        use storage_proofs_porep::stacked::{StackedCompound, StackedDrg};
        let pp = filecoin_proofs::parameters::public_params::<Tree>(&porep_config(rp))?;
        let blank = <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
            StackedDrg<'_, Tree, DefaultPieceHasher>,
            _,
        >>::blank_circuit(&pp);
        Ok(crate::paramgen::circuit_shape(blank)?)
    }

    /// Counts every sector size's partition circuit (64GiB takes minutes): `cargo test
    /// --release -p proofline-filecoin -- --ignored --nocapture constraint_counts`.
    #[test]
    #[ignore]
    fn constraint_counts() {
        use RegisteredSealProof::*;
        let mut found = Vec::new();
        for rp in [
            StackedDrg2KiBV1_1,
            StackedDrg8MiBV1_1,
            StackedDrg512MiBV1_1,
            StackedDrg32GiBV1_1,
            StackedDrg64GiBV1_1,
        ] {
            let size = u64::from(rp.sector_size());
            let shape =
                with_tree_shape!(size, blank_shape(rp), |s| Err(anyhow::anyhow!("{s}"))).unwrap();
            println!("{rp:?}: {shape:?}");
            found.push((rp, shape.constraints));
        }
        for (rp, constraints) in found {
            assert_eq!(constraints_hint(rp), constraints, "{rp:?}");
        }
    }

    #[test]
    fn parameter_names_match_the_published_list() {
        // Every supported proof's files are in filecoin-proofs' parameters.json, and the API
        // versions of one sector size share one parameter set (the circuit is the same).
        for rp in supported() {
            let f = params_files(rp).unwrap();
            assert!(
                f.params.starts_with("v28-stacked-proof-of-replication-"),
                "{f:?}"
            );
            assert!(
                crate::params::published_digest(&f.params).is_some(),
                "{f:?}"
            );
            assert!(crate::params::published_digest(&f.vk).is_some(), "{f:?}");
        }
        let v1 = params_files(RegisteredSealProof::StackedDrg2KiBV1).unwrap();
        let v11 = params_files(RegisteredSealProof::StackedDrg2KiBV1_1).unwrap();
        assert_eq!(v1, v11);
        let synth =
            params_files(RegisteredSealProof::StackedDrg2KiBV1_1_Feat_SyntheticPoRep).unwrap();
        assert_eq!(v1, synth);
        let big = params_files(RegisteredSealProof::StackedDrg32GiBV1_1).unwrap();
        assert_ne!(v1.params, big.params);
        // filecoin-proofs' challenge counts: 2 per partition for the test sizes, 176 over 10
        // partitions (18 each, rounded up) for 32 GiB.
        assert_eq!(
            challenges_per_partition(RegisteredSealProof::StackedDrg2KiBV1_1).unwrap(),
            2
        );
        assert_eq!(
            challenges_per_partition(RegisteredSealProof::StackedDrg32GiBV1_1).unwrap(),
            18
        );
    }
}
