//! Verification of finished Filecoin proofs, by filecoin-proofs' own logic.
//!
//! * [`verify_c2`], [`verify_window_post`], [`verify_winning_post`] and [`verify_update`] call
//!   filecoin-proofs-api's own `verify_seal`, `verify_window_post`, `verify_winning_post` and
//!   `verify_empty_sector_update_proof` (the checks a chain node makes). They read the `.vk`
//!   from filecoin-proofs' parameter directory (`FIL_PROOFS_PARAMETER_CACHE` as it was when
//!   filecoin-proofs first read its settings in this process).
//! * [`verify_c2_with_vk`], [`verify_post_with_vk`] and [`verify_update_with_vk`] make the same
//!   checks with a verifying key the caller already holds (the daemon's resident parameters),
//!   with no global settings involved: the same public parameters, public inputs and compound
//!   verification as those functions, only the key lookup differs.

use std::collections::BTreeMap;

use bellperson::groth16::{self, PreparedVerifyingKey, Proof, VerifyingKey};
use blstrs::{Bls12, Scalar};
use filecoin_hashers::Hasher;
use filecoin_proofs::parameters::{window_post_setup_params, winning_post_setup_params};
use filecoin_proofs::{
    as_safe_commitment, get_num_partition_for_fallback_post, PoRepConfig, PoStType,
    SectorUpdateConfig,
};
use filecoin_proofs_api::{PublicReplicaInfo, SectorId};
use proofline_groth16::PROOF_BYTES;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_core::multi_proof::MultiProof;
use storage_proofs_post::fallback::{self, FallbackPoStCompound, PublicSector};
use storage_proofs_update::constants::TreeRHasher;
use storage_proofs_update::EmptySectorUpdateCompound;

use crate::porep::SealIdentity;
use crate::post::PoStIdentity;
use crate::update::{compound_params, public_inputs_of_update, UpdateIdentity};
use crate::{shapes, with_tree_shape, FilecoinError};

/// `verify_seal` on a proof in `seal_commit_phase2`'s layout. `Ok(false)` or an error both mean
/// "not accepted" (a corrupted point fails to decode, which filecoin-proofs reports as an error).
pub fn verify_c2(proof: &[u8], id: &SealIdentity) -> Result<bool, FilecoinError> {
    Ok(filecoin_proofs_api::seal::verify_seal(
        id.registered_proof,
        id.comm_r,
        id.comm_d,
        id.prover_id,
        SectorId::from(id.sector_id),
        id.ticket,
        id.seed,
        proof,
    )?)
}

fn seal_inputs<Tree: 'static + MerkleTreeTrait>(
    config: &PoRepConfig,
    id: &SealIdentity,
) -> anyhow::Result<Vec<Vec<Scalar>>> {
    filecoin_proofs::get_seal_inputs::<Tree>(
        config,
        id.comm_r,
        id.comm_d,
        id.prover_id,
        SectorId::from(id.sector_id),
        id.ticket,
        id.seed,
    )
}

/// The public inputs of every partition of a sealed sector, as `verify_seal` derives them.
pub fn seal_public_inputs(id: &SealIdentity) -> Result<Vec<Vec<Scalar>>, FilecoinError> {
    let config = shapes::porep_config(id.registered_proof);
    let size = u64::from(config.sector_size);
    Ok(with_tree_shape!(size, seal_inputs(&config, id), |s| Err(
        anyhow::Error::new(FilecoinError::SectorSize(s))
    ))?)
}

/// The same check as [`verify_c2`] with the caller's verifying key.
pub fn verify_c2_with_vk(
    proof: &[u8],
    id: &SealIdentity,
    vk: &VerifyingKey<Bls12>,
) -> Result<bool, FilecoinError> {
    shapes::check_supported(id.registered_proof).map_err(FilecoinError::Other)?;
    let partitions = usize::from(shapes::porep_config(id.registered_proof).partitions);
    if proof.len() != partitions * PROOF_BYTES {
        return Err(FilecoinError::Other(format!(
            "a {:?} proof is {partitions} × {PROOF_BYTES} bytes, got {}",
            id.registered_proof,
            proof.len()
        )));
    }
    let proofs = proof
        .chunks_exact(PROOF_BYTES)
        .map(Proof::<Bls12>::read)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| FilecoinError::Other(format!("proof does not decode: {e}")))?;
    let inputs = seal_public_inputs(id)?;
    let pvk = groth16::prepare_verifying_key(vk);
    let refs: Vec<&Proof<Bls12>> = proofs.iter().collect();
    groth16::verify_proofs_batch(&pvk, &mut rand::rngs::OsRng, &refs, &inputs)
        .map_err(|e| FilecoinError::Other(format!("verification failed to run: {e}")))
}

fn replicas(id: &PoStIdentity) -> BTreeMap<SectorId, PublicReplicaInfo> {
    id.sectors
        .iter()
        .map(|(sector, comm_r)| {
            (
                SectorId::from(*sector),
                PublicReplicaInfo::new(id.registered_proof, *comm_r),
            )
        })
        .collect()
}

/// filecoin-proofs-api's `verify_window_post` on a WindowPoSt proof (the `SnarkProof` bytes of
/// the single `(RegisteredPoStProof, SnarkProof)` entry `generate_window_post_with_vanilla`
/// returns). `Ok(false)` or an error both mean "not accepted".
pub fn verify_window_post(proof: &[u8], id: &PoStIdentity) -> Result<bool, FilecoinError> {
    Ok(filecoin_proofs_api::post::verify_window_post(
        &id.randomness,
        &[(id.registered_proof, proof)],
        &replicas(id),
        id.prover_id,
    )?)
}

/// filecoin-proofs-api's `verify_winning_post` on a WinningPoSt proof.
pub fn verify_winning_post(proof: &[u8], id: &PoStIdentity) -> Result<bool, FilecoinError> {
    Ok(filecoin_proofs_api::post::verify_winning_post(
        &id.randomness,
        proof,
        &replicas(id),
        id.prover_id,
    )?)
}

fn post_check<Tree: 'static + MerkleTreeTrait>(
    proof: &[u8],
    id: &PoStIdentity,
    pvk: &PreparedVerifyingKey<Bls12>,
) -> anyhow::Result<bool> {
    let config = id.registered_proof.as_v1_config();
    let randomness: <Tree::Hasher as Hasher>::Domain =
        as_safe_commitment(&id.randomness, "randomness")?;
    let prover_id: <Tree::Hasher as Hasher>::Domain =
        as_safe_commitment(&id.prover_id, "prover_id")?;
    let mut sectors = Vec::with_capacity(id.sectors.len());
    for (sector, comm_r) in &id.sectors {
        sectors.push(PublicSector {
            id: SectorId::from(*sector),
            comm_r: as_safe_commitment(comm_r, "comm_r")?,
        });
    }
    let (vanilla_params, partitions, sectors) = match config.typ {
        PoStType::Window => {
            let n = get_num_partition_for_fallback_post(&config, sectors.len());
            (
                window_post_setup_params(&config),
                (n > 1).then_some(n),
                sectors,
            )
        }
        PoStType::Winning => {
            anyhow::ensure!(
                sectors.len() == config.sector_count,
                "a WinningPoSt proves {} sector, got {}",
                config.sector_count,
                sectors.len()
            );
            let setup = winning_post_setup_params(&config)?;
            // As verify_winning_post: every replica once per circuit sector.
            let repeated = (0..setup.sector_count)
                .flat_map(|_| sectors.iter().cloned())
                .collect();
            (setup, None, repeated)
        }
    };
    let pub_params = FallbackPoStCompound::<Tree>::setup(&compound_proof::SetupParams {
        vanilla_params,
        partitions,
        priority: false,
    })?;
    let pub_inputs = fallback::PublicInputs {
        randomness,
        prover_id,
        sectors,
        k: None,
    };
    let multi_proof = MultiProof::new_from_bytes(partitions, proof, pvk)?;
    FallbackPoStCompound::verify(
        &pub_params,
        &pub_inputs,
        &multi_proof,
        &fallback::ChallengeRequirements {
            minimum_challenge_count: config.challenge_count * config.sector_count,
        },
    )
}

/// The check of [`verify_window_post`] or [`verify_winning_post`] (by the identity's registered
/// proof) with the caller's verifying key.
pub fn verify_post_with_vk(
    proof: &[u8],
    id: &PoStIdentity,
    vk: &VerifyingKey<Bls12>,
) -> Result<bool, FilecoinError> {
    let pvk = groth16::prepare_verifying_key(vk);
    let size = u64::from(id.registered_proof.sector_size());
    Ok(with_tree_shape!(size, post_check(proof, id, &pvk), |s| {
        Err(anyhow::Error::new(FilecoinError::SectorSize(s)))
    })?)
}

/// filecoin-proofs-api's `verify_empty_sector_update_proof` on a SnapDeals update proof.
pub fn verify_update(proof: &[u8], id: &UpdateIdentity) -> Result<bool, FilecoinError> {
    Ok(
        filecoin_proofs_api::update::verify_empty_sector_update_proof(
            id.registered_proof,
            proof,
            id.comm_r_old,
            id.comm_r_new,
            id.comm_d_new,
        )?,
    )
}

fn update_check<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    proof: &[u8],
    id: &UpdateIdentity,
    pvk: &PreparedVerifyingKey<Bls12>,
) -> anyhow::Result<bool> {
    let config = SectorUpdateConfig::from_porep_config(&id.registered_proof.as_v1_config());
    let pub_params = compound_params::<Tree>(&config)?;
    let pub_inputs = public_inputs_of_update(id, &config)?;
    let partitions = usize::from(config.update_partitions);
    let multi_proof = MultiProof::new_from_bytes(Some(partitions), proof, pvk)?;
    EmptySectorUpdateCompound::verify(&pub_params, &pub_inputs, &multi_proof, &())
}

/// The check of [`verify_update`] with the caller's verifying key.
pub fn verify_update_with_vk(
    proof: &[u8],
    id: &UpdateIdentity,
    vk: &VerifyingKey<Bls12>,
) -> Result<bool, FilecoinError> {
    let pvk = groth16::prepare_verifying_key(vk);
    let size = u64::from(id.registered_proof.sector_size());
    Ok(with_tree_shape!(
        size,
        update_check(proof, id, &pvk),
        |s| Err(anyhow::Error::new(FilecoinError::SectorSize(s)))
    )?)
}
