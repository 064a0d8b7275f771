//! Verification of a finished `porep-c2` proof.
//!
//! * [`verify_c2`] calls filecoin-proofs' own `verify_seal` (the check a chain node makes). It
//!   reads the `.vk` from filecoin-proofs' parameter directory (`FIL_PROOFS_PARAMETER_CACHE` as
//!   it was when filecoin-proofs first read its settings in this process).
//! * [`verify_c2_with_vk`] makes the same check with a verifying key the caller already holds
//!   (the daemon's resident parameters), with no global settings involved: the public inputs
//!   come from filecoin-proofs' `get_seal_inputs`, the check is bellperson's batch verifier, as
//!   in `verify_seal`.

use bellperson::groth16::{self, Proof, VerifyingKey};
use blstrs::{Bls12, Scalar};
use filecoin_proofs::PoRepConfig;
use filecoin_proofs_api::SectorId;
use proofline_groth16::PROOF_BYTES;
use storage_proofs_core::merkle::MerkleTreeTrait;

use crate::porep::SealIdentity;
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
