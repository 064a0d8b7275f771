//! Fresh sectors for the PoSt and SnapDeals fixtures, and the vanilla proofs a worker holds
//! when it asks for their SNARKs, made with filecoin-proofs-api's own calls:
//!
//! * WindowPoSt: sectors sealed to pre-commit phase 2, `generate_fallback_sector_challenges`,
//!   then `generate_single_vanilla_proof` per sector;
//! * WinningPoSt: the same, for the one sector `generate_winning_post_sector_challenge` picks
//!   out of the sealed set;
//! * SnapDeals: a sealed sector key, new random data encoded into it with
//!   `empty_sector_update_encode_into`, then `generate_partition_proofs`.
//!
//! Everything lives in a temporary directory that is gone when the function returns; 2KiB
//! sectors seal in well under a second each. Call [`crate::fixture::point_filecoin_proofs_at`]
//! first.

use std::fs::{self, File, OpenOptions};
use std::io::{Seek, Write};
use std::path::Path;
use std::time::Instant;

use filecoin_proofs::{PoStType, UnpaddedBytesAmount};
use filecoin_proofs_api::post::{
    generate_fallback_sector_challenges, generate_single_vanilla_proof,
    generate_winning_post_sector_challenge,
};
use filecoin_proofs_api::seal::add_piece;
use filecoin_proofs_api::update::{empty_sector_update_encode_into, generate_partition_proofs};
use filecoin_proofs_api::{
    PrivateReplicaInfo, RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof, SectorId,
};
use rand::Rng;

use crate::fixture::{random_fr32, seal_pre_committed, PreCommitted};
use crate::post::{PoStIdentity, PoStKind};
use crate::proofs;
use crate::update::UpdateIdentity;
use crate::FilecoinError;

/// A PoSt job's input as a worker holds it, and what the verifier needs.
#[derive(Clone, Debug)]
pub struct PoStCase {
    /// Window or Winning.
    pub kind: PoStKind,
    /// Registered proof, randomness, prover id, sectors (ascending).
    pub identity: PoStIdentity,
    /// `generate_single_vanilla_proof`'s bytes, one per proved sector, ascending by sector.
    pub vanilla_proofs: Vec<Vec<u8>>,
    /// Seconds spent sealing and generating vanilla proofs.
    pub secs: f64,
}

/// A SnapDeals update job's input as a worker holds it, and what the verifier needs.
#[derive(Clone, Debug)]
pub struct UpdateCase {
    /// Registered update proof and the three commitments.
    pub identity: UpdateIdentity,
    /// `generate_partition_proofs`' bytes, one per partition.
    pub vanilla_proofs: Vec<Vec<u8>>,
    /// Seconds spent sealing, encoding and generating vanilla proofs.
    pub secs: f64,
}

fn post_proof(
    typ: PoStType,
    rp: RegisteredSealProof,
) -> Result<RegisteredPoStProof, FilecoinError> {
    let size = u64::from(rp.sector_size());
    proofs::post_proof_for(typ, size).ok_or(FilecoinError::SectorSize(size))
}

fn io(p: &Path) -> impl FnOnce(std::io::Error) -> FilecoinError {
    let p = p.to_path_buf();
    move |e| FilecoinError::io(p, e)
}

/// Seals `count` sectors with distinct random numbers, each in its own subdirectory of `dir`.
fn seal_set(
    rp: RegisteredSealProof,
    dir: &Path,
    prover_id: [u8; 32],
    count: usize,
    rng: &mut impl Rng,
) -> Result<Vec<PreCommitted>, FilecoinError> {
    let mut ids = std::collections::BTreeSet::new();
    while ids.len() < count {
        ids.insert(rng.gen_range(1..1_000_000u64));
    }
    ids.into_iter()
        .map(|id| {
            let d = dir.join(id.to_string());
            fs::create_dir_all(&d).map_err(io(&d))?;
            seal_pre_committed(rp, &d, prover_id, id, rng)
        })
        .collect()
}

fn vanilla_proofs(
    post: RegisteredPoStProof,
    randomness: &[u8; 32],
    prover_id: [u8; 32],
    sectors: &[&PreCommitted],
) -> Result<Vec<Vec<u8>>, FilecoinError> {
    let ids: Vec<SectorId> = sectors
        .iter()
        .map(|s| SectorId::from(s.sector_id))
        .collect();
    let challenges = generate_fallback_sector_challenges(post, randomness, &ids, prover_id)?;
    sectors
        .iter()
        .map(|s| {
            let id = SectorId::from(s.sector_id);
            let replica =
                PrivateReplicaInfo::new(post, s.comm_r, s.cache.clone(), s.replica.clone());
            let c = challenges.get(&id).ok_or_else(|| {
                FilecoinError::Other(format!("no challenges for sector {}", s.sector_id))
            })?;
            Ok(generate_single_vanilla_proof(post, id, &replica, c)?)
        })
        .collect()
}

/// A WindowPoSt over `count` freshly sealed sectors of `rp` (2KiB: 2 sectors per partition, so
/// 3 sectors make 2 partitions, the second one padded).
pub fn window_post_case(
    rp: RegisteredSealProof,
    count: usize,
    rng: &mut impl Rng,
) -> Result<PoStCase, FilecoinError> {
    let t = Instant::now();
    let work = tempfile::tempdir().map_err(io(&std::env::temp_dir()))?;
    let post = post_proof(PoStType::Window, rp)?;
    let prover_id = random_fr32(rng);
    let sealed = seal_set(rp, work.path(), prover_id, count, rng)?;
    let randomness = random_fr32(rng);
    let all: Vec<&PreCommitted> = sealed.iter().collect();
    let vanilla = vanilla_proofs(post, &randomness, prover_id, &all)?;
    Ok(PoStCase {
        kind: PoStKind::Window,
        identity: PoStIdentity {
            registered_proof: post,
            randomness,
            prover_id,
            sectors: sealed.iter().map(|s| (s.sector_id, s.comm_r)).collect(),
        },
        vanilla_proofs: vanilla,
        secs: t.elapsed().as_secs_f64(),
    })
}

/// A WinningPoSt: `count` sectors of `rp` are sealed, the election's randomness challenges one
/// of them, and its vanilla proof is generated.
pub fn winning_post_case(
    rp: RegisteredSealProof,
    count: usize,
    rng: &mut impl Rng,
) -> Result<PoStCase, FilecoinError> {
    let t = Instant::now();
    let work = tempfile::tempdir().map_err(io(&std::env::temp_dir()))?;
    let post = post_proof(PoStType::Winning, rp)?;
    let prover_id = random_fr32(rng);
    let sealed = seal_set(rp, work.path(), prover_id, count, rng)?;
    let randomness = random_fr32(rng);
    let picked =
        generate_winning_post_sector_challenge(post, &randomness, count as u64, prover_id)?;
    let challenged: Vec<&PreCommitted> = picked
        .iter()
        .map(|i| {
            usize::try_from(*i)
                .ok()
                .and_then(|i| sealed.get(i))
                .ok_or_else(|| FilecoinError::Other(format!("challenge index {i} out of range")))
        })
        .collect::<Result<_, _>>()?;
    let vanilla = vanilla_proofs(post, &randomness, prover_id, &challenged)?;
    Ok(PoStCase {
        kind: PoStKind::Winning,
        identity: PoStIdentity {
            registered_proof: post,
            randomness,
            prover_id,
            sectors: challenged.iter().map(|s| (s.sector_id, s.comm_r)).collect(),
        },
        vanilla_proofs: vanilla,
        secs: t.elapsed().as_secs_f64(),
    })
}

/// The update proof of a sealed sector's size.
pub fn update_proof_for(rp: RegisteredSealProof) -> Result<RegisteredUpdateProof, FilecoinError> {
    proofs::ALL_UPDATE
        .into_iter()
        .find(|u| u.sector_size() == rp.sector_size())
        .ok_or_else(|| FilecoinError::SectorSize(u64::from(rp.sector_size())))
}

/// A SnapDeals update: a sector of `rp` is sealed (the sector key), new random data is encoded
/// into it, and the vanilla partition proofs of the update are generated.
pub fn update_case(
    rp: RegisteredSealProof,
    rng: &mut impl Rng,
) -> Result<UpdateCase, FilecoinError> {
    let t = Instant::now();
    let work = tempfile::tempdir().map_err(io(&std::env::temp_dir()))?;
    let update = update_proof_for(rp)?;
    let key_dir = work.path().join("key");
    fs::create_dir_all(&key_dir).map_err(io(&key_dir))?;
    let key = seal_pre_committed(
        rp,
        &key_dir,
        random_fr32(rng),
        rng.gen_range(1..1_000_000),
        rng,
    )?;

    // The new data, padded into a staged file as add_piece leaves it.
    let staged = work.path().join("new-staged");
    let piece_len =
        UnpaddedBytesAmount::from(filecoin_proofs::PaddedBytesAmount::from(rp.sector_size()));
    let data: Vec<u8> = (0..u64::from(piece_len)).map(|_| rng.gen()).collect();
    let mut staged_file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&staged)
        .map_err(io(&staged))?;
    let (piece, _) = add_piece(rp, &data[..], &mut staged_file, piece_len, &[])?;
    staged_file.flush().map_err(io(&staged))?;
    staged_file.rewind().map_err(io(&staged))?;
    drop(staged_file);

    // The new replica has the sector key's size before encoding (filecoin-proofs maps it).
    let replica = work.path().join("new-sealed");
    let replica_cache = work.path().join("new-cache");
    fs::create_dir_all(&replica_cache).map_err(io(&replica_cache))?;
    let len = fs::metadata(&key.replica).map_err(io(&key.replica))?.len();
    File::create(&replica)
        .and_then(|f| f.set_len(len))
        .map_err(io(&replica))?;
    let encoded = empty_sector_update_encode_into(
        update,
        &replica,
        &replica_cache,
        &key.replica,
        &key.cache,
        &staged,
        &[piece],
    )?;
    let proofs = generate_partition_proofs(
        update,
        key.comm_r,
        encoded.comm_r_new,
        encoded.comm_d_new,
        &key.replica,
        &key.cache,
        &replica,
        &replica_cache,
    )?;
    Ok(UpdateCase {
        identity: UpdateIdentity {
            registered_proof: update,
            comm_r_old: key.comm_r,
            comm_r_new: encoded.comm_r_new,
            comm_d_new: encoded.comm_d_new,
        },
        vanilla_proofs: proofs.into_iter().map(|p| p.0).collect(),
        secs: t.elapsed().as_secs_f64(),
    })
}
