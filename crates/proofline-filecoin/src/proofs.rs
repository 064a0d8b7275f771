//! Every Filecoin circuit this crate proves, named by its registered proof: PoRep
//! ([`RegisteredSealProof`]), PoSt ([`RegisteredPoStProof`], Window and Winning) and SnapDeals
//! ([`RegisteredUpdateProof`]); their names as filecoin-proofs-api serializes them, their sector
//! sizes, and the names of their parameter files.
//!
//! Parameter file names come from filecoin-proofs' own cache identifiers, never from a table:
//! `PoRepConfig::get_cache_identifier` for PoRep, `PoStConfig::get_cache_identifier` for PoSt,
//! and for SnapDeals the cache identifier of `EmptySectorUpdateCompound` over the update
//! circuit's own public parameters. (`RegisteredUpdateProof::cache_params_path()` in
//! filecoin-proofs-api 19.1 names the PoRep file of the sector size instead, which is not the
//! file the update prover and verifier load.)

use std::fmt::Debug;

use filecoin_proofs::{PoStConfig, PoStType};
use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_core::parameter_cache::{parameter_id, verifying_key_id, CacheableParameters};
use storage_proofs_update::constants::TreeRHasher;
use storage_proofs_update::{EmptySectorUpdateCircuit, EmptySectorUpdateCompound, PublicParams};

use crate::shapes::{self, ParamsFiles};
use crate::{with_tree_shape, FilecoinError};

/// Every registered PoSt proof, in filecoin-proofs-api's order.
pub const ALL_POST: [RegisteredPoStProof; 15] = {
    use RegisteredPoStProof::*;
    [
        StackedDrgWinning2KiBV1,
        StackedDrgWinning8MiBV1,
        StackedDrgWinning512MiBV1,
        StackedDrgWinning32GiBV1,
        StackedDrgWinning64GiBV1,
        StackedDrgWindow2KiBV1,
        StackedDrgWindow8MiBV1,
        StackedDrgWindow512MiBV1,
        StackedDrgWindow32GiBV1,
        StackedDrgWindow64GiBV1,
        StackedDrgWindow2KiBV1_2,
        StackedDrgWindow8MiBV1_2,
        StackedDrgWindow512MiBV1_2,
        StackedDrgWindow32GiBV1_2,
        StackedDrgWindow64GiBV1_2,
    ]
};

/// Every registered SnapDeals update proof.
pub const ALL_UPDATE: [RegisteredUpdateProof; 5] = {
    use RegisteredUpdateProof::*;
    [
        StackedDrg2KiBV1,
        StackedDrg8MiBV1,
        StackedDrg512MiBV1,
        StackedDrg32GiBV1,
        StackedDrg64GiBV1,
    ]
};

/// A registered proof's name as filecoin-proofs-api serializes it (`"StackedDrgWindow2KiBV1_2"`).
pub fn name<T: Debug>(rp: T) -> String {
    format!("{rp:?}")
}

/// Parses a registered proof name among `all`.
pub fn parse<T: Debug + Copy>(all: &[T], text: &str) -> Option<T> {
    all.iter().copied().find(|rp| name(*rp) == text)
}

/// The names of `all`, comma-separated (for error messages).
pub fn names<T: Debug + Copy>(all: &[T]) -> String {
    all.iter()
        .map(|rp| name(*rp))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The current registered PoSt proof of `typ` for sectors of `sector_size` bytes (WindowPoSt:
/// the V1_2 proofs, which replaced V1).
pub fn post_proof_for(typ: PoStType, sector_size: u64) -> Option<RegisteredPoStProof> {
    ALL_POST
        .into_iter()
        .rev()
        .find(|rp| rp.typ() == typ && u64::from(rp.sector_size()) == sector_size)
}

/// A Filecoin circuit, named by its registered proof.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProofCircuit {
    /// PoRep commit phase 2.
    Seal(RegisteredSealProof),
    /// WindowPoSt or WinningPoSt.
    PoSt(RegisteredPoStProof),
    /// SnapDeals empty-sector update.
    Update(RegisteredUpdateProof),
}

impl From<RegisteredSealProof> for ProofCircuit {
    fn from(rp: RegisteredSealProof) -> Self {
        ProofCircuit::Seal(rp)
    }
}

impl From<RegisteredPoStProof> for ProofCircuit {
    fn from(rp: RegisteredPoStProof) -> Self {
        ProofCircuit::PoSt(rp)
    }
}

impl From<RegisteredUpdateProof> for ProofCircuit {
    fn from(rp: RegisteredUpdateProof) -> Self {
        ProofCircuit::Update(rp)
    }
}

impl ProofCircuit {
    /// The registered proof's name.
    pub fn name(self) -> String {
        match self {
            ProofCircuit::Seal(rp) => name(rp),
            ProofCircuit::PoSt(rp) => name(rp),
            ProofCircuit::Update(rp) => name(rp),
        }
    }

    /// Sector size in bytes.
    pub fn sector_size(self) -> u64 {
        u64::from(match self {
            ProofCircuit::Seal(rp) => rp.sector_size(),
            ProofCircuit::PoSt(rp) => rp.sector_size(),
            ProofCircuit::Update(rp) => rp.sector_size(),
        })
    }

    /// The names of the circuit's `.params` and `.vk` files, as filecoin-proofs derives them.
    pub fn files(self) -> Result<ParamsFiles, FilecoinError> {
        let size = self.sector_size();
        let unknown = |s| Err(anyhow::Error::new(FilecoinError::SectorSize(s)));
        let cache_id = match self {
            ProofCircuit::Seal(rp) => return shapes::params_files(rp),
            ProofCircuit::PoSt(rp) => {
                let config = rp.as_v1_config();
                with_tree_shape!(size, post_cache_id(&config), unknown)?
            }
            ProofCircuit::Update(_) => with_tree_shape!(size, update_cache_id(size), unknown)?,
        };
        Ok(ParamsFiles {
            params: parameter_id(&cache_id),
            vk: verifying_key_id(&cache_id),
            cache_id,
        })
    }
}

const WINDOW_2KIB: usize = 21_866;
const WINNING_2KIB: usize = 90_750;
const UPDATE_2KIB: usize = 1_705_039;

/// Constraints of one partition circuit (without the prover's one constraint per public input),
/// for memory budgeting; 0 where not measured. Counted from filecoin-proofs' blank circuits by
/// the ignored test `post_and_update_constraint_counts`; the PoRep counts are
/// [`shapes::constraints_hint`].
pub fn constraints_hint(circuit: ProofCircuit) -> usize {
    use filecoin_proofs::constants::SECTOR_SIZE_2_KIB;
    match (circuit, circuit.sector_size()) {
        (ProofCircuit::Seal(rp), _) => shapes::constraints_hint(rp),
        (ProofCircuit::PoSt(rp), SECTOR_SIZE_2_KIB) => match rp.typ() {
            PoStType::Window => WINDOW_2KIB,
            PoStType::Winning => WINNING_2KIB,
        },
        (ProofCircuit::Update(_), SECTOR_SIZE_2_KIB) => UPDATE_2KIB,
        _ => 0,
    }
}

fn post_cache_id<Tree: 'static + MerkleTreeTrait>(config: &PoStConfig) -> anyhow::Result<String> {
    config.get_cache_identifier::<Tree>()
}

fn update_cache_id<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    sector_size: u64,
) -> anyhow::Result<String> {
    let public_params = PublicParams::from_sector_size(sector_size);
    Ok(<EmptySectorUpdateCompound<Tree> as CacheableParameters<
        EmptySectorUpdateCircuit<Tree>,
        PublicParams,
    >>::cache_identifier(&public_params))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::published_digest;
    use filecoin_proofs::parameters::{window_post_public_params, winning_post_public_params};
    use storage_proofs_core::compound_proof::CompoundProof;
    use storage_proofs_post::fallback::{FallbackPoSt, FallbackPoStCompound};
    use storage_proofs_update::EmptySectorUpdate;

    fn post_shape<Tree: 'static + MerkleTreeTrait>(
        rp: RegisteredPoStProof,
    ) -> anyhow::Result<crate::paramgen::CircuitShape> {
        let config = rp.as_v1_config();
        let pp = match config.typ {
            PoStType::Window => window_post_public_params::<Tree>(&config)?,
            PoStType::Winning => winning_post_public_params::<Tree>(&config)?,
        };
        let blank =
            <FallbackPoStCompound<Tree> as CompoundProof<FallbackPoSt<'_, Tree>, _>>::blank_circuit(
                &pp,
            );
        Ok(crate::paramgen::circuit_shape(blank)?)
    }

    fn update_shape<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
        size: u64,
    ) -> anyhow::Result<crate::paramgen::CircuitShape> {
        let pp = PublicParams::from_sector_size(size);
        let blank = <EmptySectorUpdateCompound<Tree> as CompoundProof<
            EmptySectorUpdate<Tree>,
            _,
        >>::blank_circuit(&pp);
        Ok(crate::paramgen::circuit_shape(blank)?)
    }

    /// Counts the PoSt and update partition circuits of `PROOFLINE_COUNT_SIZES` (default
    /// 2KiB; e.g. `2KiB,8MiB,512MiB,32GiB`): `cargo test --release -p proofline-filecoin --
    /// --ignored --nocapture post_and_update_constraint_counts`.
    #[test]
    #[ignore]
    fn post_and_update_constraint_counts() {
        let sizes = std::env::var("PROOFLINE_COUNT_SIZES").unwrap_or_else(|_| "2KiB".into());
        for label in sizes.split(',') {
            let size = [
                filecoin_proofs::constants::SECTOR_SIZE_2_KIB,
                filecoin_proofs::constants::SECTOR_SIZE_8_MIB,
                filecoin_proofs::constants::SECTOR_SIZE_512_MIB,
                filecoin_proofs::constants::SECTOR_SIZE_32_GIB,
                filecoin_proofs::constants::SECTOR_SIZE_64_GIB,
            ]
            .into_iter()
            .find(|s| shapes::sector_size_label(*s) == label)
            .unwrap_or_else(|| panic!("unknown size {label}"));
            for rp in ALL_POST
                .into_iter()
                .filter(|rp| u64::from(rp.sector_size()) == size)
            {
                let shape = with_tree_shape!(size, post_shape(rp), |s| Err(anyhow::anyhow!("{s}")))
                    .unwrap();
                println!("{rp:?}: {shape:?}");
                let hint = constraints_hint(ProofCircuit::PoSt(rp));
                assert!(hint == 0 || hint == shape.constraints, "{rp:?}");
            }
            let shape = with_tree_shape!(size, update_shape(size), |s| Err(anyhow::anyhow!("{s}")))
                .unwrap();
            println!("update {label}: {shape:?}");
            let rp = ALL_UPDATE
                .into_iter()
                .find(|u| u64::from(u.sector_size()) == size)
                .unwrap();
            let hint = constraints_hint(ProofCircuit::Update(rp));
            assert!(hint == 0 || hint == shape.constraints, "{rp:?}");
        }
    }

    #[test]
    fn current_post_proofs() {
        use filecoin_proofs::constants::SECTOR_SIZE_32_GIB;
        assert_eq!(
            post_proof_for(PoStType::Window, SECTOR_SIZE_32_GIB),
            Some(RegisteredPoStProof::StackedDrgWindow32GiBV1_2)
        );
        assert_eq!(
            post_proof_for(PoStType::Winning, SECTOR_SIZE_32_GIB),
            Some(RegisteredPoStProof::StackedDrgWinning32GiBV1)
        );
        assert_eq!(post_proof_for(PoStType::Winning, 4096), None);
    }

    #[test]
    fn names_round_trip() {
        for rp in ALL_POST {
            assert_eq!(parse(&ALL_POST, &name(rp)), Some(rp));
        }
        for rp in ALL_UPDATE {
            assert_eq!(parse(&ALL_UPDATE, &name(rp)), Some(rp));
        }
        assert_eq!(parse(&ALL_POST, "StackedDrg2KiBV1"), None);
        assert!(names(&ALL_UPDATE).starts_with("StackedDrg2KiBV1, StackedDrg8MiBV1"));
    }

    #[test]
    fn every_post_and_update_file_is_in_the_published_list() {
        for c in ALL_POST
            .into_iter()
            .map(ProofCircuit::from)
            .chain(ALL_UPDATE.into_iter().map(ProofCircuit::from))
        {
            let f = c.files().unwrap();
            assert!(published_digest(&f.params).is_some(), "{c:?}: {f:?}");
            assert!(published_digest(&f.vk).is_some(), "{c:?}: {f:?}");
        }
        let window = ProofCircuit::from(RegisteredPoStProof::StackedDrgWindow2KiBV1_2)
            .files()
            .unwrap();
        assert!(
            window
                .params
                .starts_with("v28-proof-of-spacetime-fallback-merkletree-poseidon_hasher-8-0-0-"),
            "{window:?}"
        );
        // V1 and V1_2 WindowPoSt share the circuit; Window and Winning do not.
        let v1 = ProofCircuit::from(RegisteredPoStProof::StackedDrgWindow2KiBV1)
            .files()
            .unwrap();
        assert_eq!(v1, window);
        let winning = ProofCircuit::from(RegisteredPoStProof::StackedDrgWinning2KiBV1)
            .files()
            .unwrap();
        assert_ne!(winning.params, window.params);
        // The update circuit has its own file, not the PoRep one that
        // RegisteredUpdateProof::cache_params_path() names (from circuit_identifier(), which
        // does not read filecoin-proofs' settings).
        let update = ProofCircuit::from(RegisteredUpdateProof::StackedDrg2KiBV1)
            .files()
            .unwrap();
        assert!(
            update
                .params
                .starts_with("v28-empty-sector-update-merkletree-poseidon_hasher-8-0-0-"),
            "{update:?}"
        );
        let api_id = RegisteredUpdateProof::StackedDrg2KiBV1
            .circuit_identifier()
            .unwrap();
        assert!(
            api_id.starts_with("stacked-proof-of-replication") && api_id != update.cache_id,
            "{api_id}: if filecoin-proofs-api fixed the name, this crate can use it"
        );
    }
}
