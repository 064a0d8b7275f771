//! The 2KiB test fixtures: random Groth16 parameters under the published file names, cached
//! outside the repository, and a freshly sealed random 2KiB sector.
//!
//! * Parameters: random Groth16 parameters for filecoin-proofs' own blank circuit of any
//!   [`ProofCircuit`] — the 2KiB PoRep (2,687,921 constraints, 1.1 GB, about 2.5 minutes on 2
//!   busy cores with [`crate::paramgen`]; bellperson's `generate_random_parameters`, kept as
//!   [`Generator::Bellperson`], took 8.6–18 minutes on the same box), the 2KiB WindowPoSt and
//!   WinningPoSt circuits (seconds), the 2KiB SnapDeals update circuit (minutes) — written as
//!   `<cache>/params/v28-<published name>{.params,.vk}`. Each file is written under a
//!   temporary name and renamed into place, so an interrupted run never leaves a truncated
//!   file under a real name; present files are reused. The sectors of the PoSt and SnapDeals
//!   fixtures are in [`crate::sectors`].
//! * Sector: `add_piece`, `seal_pre_commit_phase1`/`2` and `seal_commit_phase1` through
//!   filecoin-proofs-api into a temporary directory, with a random piece, ticket, seed, prover
//!   id and sector id. Takes seconds; done fresh for every fixture.
//!
//! filecoin-proofs reads its parameter directory (and its SDR parent cache directory) from the
//! environment once per process (`SETTINGS`). [`point_filecoin_proofs_at`] sets
//! `FIL_PROOFS_PARAMETER_CACHE` and `FIL_PROOFS_PARENT_CACHE` to the fixture cache and
//! `FIL_PROOFS_VERIFY_PRODUCTION_PARAMS` to false (random parameters cannot match the published
//! digests) before the first filecoin-proofs call, then checks that the settings took effect; if
//! filecoin-proofs was already initialised with another directory it fails instead of touching
//! that directory. The user's real parameter directory is never written.

use std::fs::{self, File};
use std::io::{BufWriter, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use bellperson::groth16;
use blstrs::{Bls12, Scalar};
use filecoin_proofs::parameters::{window_post_public_params, winning_post_public_params};
use filecoin_proofs::{DefaultPieceHasher, PoRepConfig, PoStConfig, PoStType, UnpaddedBytesAmount};
use filecoin_proofs_api::seal::{
    add_piece, seal_commit_phase1, seal_pre_commit_phase1, seal_pre_commit_phase2,
    SealPreCommitPhase2Output,
};
use filecoin_proofs_api::{PieceInfo, RegisteredSealProof, SectorId};
use rand::{Rng, RngCore};
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_core::settings::SETTINGS;
use storage_proofs_porep::stacked::{StackedCompound, StackedDrg};
use storage_proofs_post::fallback::{FallbackPoSt, FallbackPoStCompound};
use storage_proofs_update::constants::TreeRHasher;
use storage_proofs_update::{EmptySectorUpdate, EmptySectorUpdateCompound, PublicParams};

use crate::proofs::ProofCircuit;
use crate::{with_tree_shape, FilecoinError};

/// The registered proof the fixture seals with.
pub const FIXTURE_PROOF: RegisteredSealProof = RegisteredSealProof::StackedDrg2KiBV1_1;

/// Environment variable overriding the fixture cache directory.
pub const CACHE_ENV: &str = "PROOFLINE_TEST_CACHE";

/// `${PROOFLINE_TEST_CACHE:-$HOME/.cache/proofline/test-fixtures}`.
pub fn default_cache_dir() -> PathBuf {
    if let Some(v) = std::env::var_os(CACHE_ENV).filter(|v| !v.is_empty()) {
        return PathBuf::from(v);
    }
    let home = std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    home.join(".cache/proofline/test-fixtures")
}

/// The parameter directory inside a fixture cache.
pub fn params_dir(cache: &Path) -> PathBuf {
    cache.join("params")
}

static POINTED: Mutex<Option<PathBuf>> = Mutex::new(None);

/// Points filecoin-proofs' parameter and parent caches at `cache` (see the module docs).
/// Idempotent for one `cache` per process; an error for a second, different one.
pub fn point_filecoin_proofs_at(cache: &Path) -> Result<PathBuf, FilecoinError> {
    let mut pointed = POINTED.lock().unwrap_or_else(|e| e.into_inner());
    let params = params_dir(cache);
    let parents = cache.join("parents");
    if let Some(p) = pointed.as_ref() {
        if p != &params {
            return Err(FilecoinError::Settings(format!(
                "filecoin-proofs already uses {} in this process, not {}",
                p.display(),
                params.display()
            )));
        }
        return Ok(params);
    }
    for dir in [&params, &parents] {
        fs::create_dir_all(dir).map_err(|e| FilecoinError::io(dir, e))?;
    }
    // SAFETY-free in edition 2021; done under the lock, before filecoin-proofs reads SETTINGS.
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &params);
    std::env::set_var("FIL_PROOFS_PARENT_CACHE", &parents);
    std::env::set_var("FIL_PROOFS_VERIFY_PRODUCTION_PARAMS", "false");
    std::env::set_var("FIL_PROOFS_USE_MULTICORE_SDR", "false");
    let settings = &*SETTINGS;
    if Path::new(&settings.parameter_cache) != params.as_path() {
        return Err(FilecoinError::Settings(format!(
            "filecoin-proofs was initialised with parameter cache {} before the fixture could \
             point it at {}; refusing to use it",
            settings.parameter_cache,
            params.display()
        )));
    }
    if settings.verify_production_params {
        return Err(FilecoinError::Settings(
            "FIL_PROOFS_VERIFY_PRODUCTION_PARAMS is on; random test parameters cannot pass it"
                .into(),
        ));
    }
    *pointed = Some(params.clone());
    Ok(params)
}

/// Writes `path` through a temporary file in the same directory and renames it into place.
pub fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<()>,
) -> Result<(), FilecoinError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = tempfile::Builder::new()
        .prefix(".partial-")
        .tempfile_in(dir)
        .map_err(|e| FilecoinError::io(dir, e))?;
    let (file, tmp_path) = tmp.into_parts();
    let mut w = BufWriter::with_capacity(1 << 22, file);
    write(&mut w).map_err(|e| FilecoinError::io(&tmp_path, e))?;
    let file = w
        .into_inner()
        .map_err(|e| FilecoinError::io(&tmp_path, e.into_error()))?;
    file.sync_all()
        .map_err(|e| FilecoinError::io(&tmp_path, e))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&tmp_path, fs::Permissions::from_mode(0o644))
            .map_err(|e| FilecoinError::io(&tmp_path, e))?;
    }
    tmp_path
        .persist(path)
        .map_err(|e| FilecoinError::io(path, e.error))?;
    Ok(())
}

/// What [`ensure_params`] did.
#[derive(Clone, Debug)]
pub struct ParamsReport {
    /// The `.params` file.
    pub params: PathBuf,
    /// The `.vk` file.
    pub vk: PathBuf,
    /// Whether they were generated now (false: reused).
    pub generated: bool,
    /// Seconds spent generating (0 when reused).
    pub secs: f64,
}

/// How the fixture's random parameters are made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Generator {
    /// [`crate::paramgen`]: comb-based, a few times faster.
    #[default]
    Fast,
    /// bellperson's `generate_random_parameters` (the reference; 8.6–18 min on 2 cores for 2KiB).
    Bellperson,
}

/// Random parameters for the circuit `blank` builds, by `generator`.
fn generate_with<C, F>(
    blank: F,
    mut rng: &mut dyn RngCore,
    generator: Generator,
) -> Result<groth16::Parameters<Bls12>, FilecoinError>
where
    C: bellpepper_core::Circuit<Scalar>,
    F: Fn() -> C,
{
    let out = match generator {
        Generator::Fast => crate::paramgen::generate_random_parameters(blank, rng),
        Generator::Bellperson => {
            groth16::generate_random_parameters::<Bls12, _, _>(blank(), &mut rng)
        }
    };
    out.map_err(|e| FilecoinError::Other(format!("parameter generation failed: {e}")))
}

fn generate_seal<Tree: 'static + MerkleTreeTrait>(
    config: &PoRepConfig,
    rng: &mut dyn RngCore,
    generator: Generator,
) -> Result<groth16::Parameters<Bls12>, FilecoinError> {
    let public_params = filecoin_proofs::parameters::public_params::<Tree>(config)?;
    let blank = || {
        <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
            StackedDrg<'_, Tree, DefaultPieceHasher>,
            _,
        >>::blank_circuit(&public_params)
    };
    generate_with(blank, rng, generator)
}

fn generate_post<Tree: 'static + MerkleTreeTrait>(
    config: &PoStConfig,
    rng: &mut dyn RngCore,
    generator: Generator,
) -> Result<groth16::Parameters<Bls12>, FilecoinError> {
    let public_params = match config.typ {
        PoStType::Window => window_post_public_params::<Tree>(config)?,
        PoStType::Winning => winning_post_public_params::<Tree>(config)?,
    };
    let blank = || {
        <FallbackPoStCompound<Tree> as CompoundProof<FallbackPoSt<'_, Tree>, _>>::blank_circuit(
            &public_params,
        )
    };
    generate_with(blank, rng, generator)
}

fn generate_update<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    sector_size: u64,
    rng: &mut dyn RngCore,
    generator: Generator,
) -> Result<groth16::Parameters<Bls12>, FilecoinError> {
    let public_params = PublicParams::from_sector_size(sector_size);
    let blank = || {
        <EmptySectorUpdateCompound<Tree> as CompoundProof<EmptySectorUpdate<Tree>, _>>::blank_circuit(
            &public_params,
        )
    };
    generate_with(blank, rng, generator)
}

/// Random parameters for filecoin-proofs' blank circuit of `circuit`.
fn generate_for(
    circuit: ProofCircuit,
    rng: &mut dyn RngCore,
    generator: Generator,
) -> Result<groth16::Parameters<Bls12>, FilecoinError> {
    let size = circuit.sector_size();
    let unknown = |s| Err(FilecoinError::SectorSize(s));
    match circuit {
        ProofCircuit::Seal(rp) => {
            let config = rp.as_v1_config();
            with_tree_shape!(size, generate_seal(&config, rng, generator), unknown)
        }
        ProofCircuit::PoSt(rp) => {
            let config = rp.as_v1_config();
            with_tree_shape!(size, generate_post(&config, rng, generator), unknown)
        }
        ProofCircuit::Update(_) => {
            with_tree_shape!(size, generate_update(size, rng, generator), unknown)
        }
    }
}

/// The verifying key at the head of a parameter file, serialized.
fn vk_bytes_of(params: &Path) -> Result<Vec<u8>, FilecoinError> {
    let f = File::open(params).map_err(|e| FilecoinError::io(params, e))?;
    let key = groth16::VerifyingKey::<Bls12>::read(std::io::BufReader::new(f))
        .map_err(|e| FilecoinError::io(params, e))?;
    let mut out = Vec::new();
    key.write(&mut out)
        .map_err(|e| FilecoinError::io(params, e))?;
    Ok(out)
}

/// Random parameters for `circuit` under the published names in `dir`, generated unless
/// present.
///
/// Concurrent callers (two test processes) are serialised by an exclusive lock on
/// `<dir>/.fixture.lock`, so one generates and the others reuse. The `.vk` is always checked
/// against (and if needed rewritten from) the head of the `.params` file in place, so the pair
/// is consistent even after an interrupted run.
pub fn ensure_params(
    circuit: impl Into<ProofCircuit>,
    dir: &Path,
    rng: &mut dyn RngCore,
    generator: Generator,
) -> Result<ParamsReport, FilecoinError> {
    use fs2::FileExt;
    let circuit = circuit.into();
    let files = circuit.files()?;
    let params = dir.join(&files.params);
    let vk = dir.join(&files.vk);
    fs::create_dir_all(dir).map_err(|e| FilecoinError::io(dir, e))?;
    let lock_path = dir.join(".fixture.lock");
    let lock = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| FilecoinError::io(&lock_path, e))?;
    lock.lock_exclusive()
        .map_err(|e| FilecoinError::io(&lock_path, e))?;

    let t = Instant::now();
    let generated = !params.is_file();
    if generated {
        tracing::info!(file = %params.display(), circuit = %circuit.name(), "generating random test parameters");
        let p = generate_for(circuit, rng, generator)?;
        write_atomically(&params, |w| p.write(w))?;
    }
    let secs = if generated {
        t.elapsed().as_secs_f64()
    } else {
        0.0
    };
    let head = vk_bytes_of(&params)?;
    if fs::read(&vk).ok().as_deref() != Some(head.as_slice()) {
        write_atomically(&vk, |w| w.write_all(&head))?;
    }
    // Dropping the file releases the lock.
    drop(lock);
    Ok(ParamsReport {
        params,
        vk,
        generated,
        secs,
    })
}

/// Points filecoin-proofs at `cache` and makes sure random parameters for `circuit` are in its
/// parameter directory; returns that directory and what was done.
pub fn ensure_circuit(
    cache: &Path,
    circuit: impl Into<ProofCircuit>,
) -> Result<(PathBuf, ParamsReport), FilecoinError> {
    let params_dir = point_filecoin_proofs_at(cache)?;
    let report = ensure_params(
        circuit,
        &params_dir,
        &mut rand::rngs::OsRng,
        Generator::Fast,
    )?;
    Ok((params_dir, report))
}

/// A sealed sector's C1 output and identity.
#[derive(Clone, Debug)]
pub struct SealedSector {
    /// filecoin-proofs-api's `SealCommitPhase1Output` serialized as JSON: the worker's bytes.
    pub c1_output: Vec<u8>,
    /// Prover id used for sealing.
    pub prover_id: [u8; 32],
    /// Sector number used for sealing.
    pub sector_id: u64,
    /// Registered proof.
    pub registered_proof: RegisteredSealProof,
    /// Seconds taken by add_piece + PC1 + PC2 + C1.
    pub seal_secs: f64,
}

/// A sector sealed up to pre-commit phase 2 in a directory: its replica, its cache (trees,
/// `p_aux`, `t_aux`), and what sealing it took.
#[derive(Clone, Debug)]
pub struct PreCommitted {
    /// Registered proof.
    pub registered_proof: RegisteredSealProof,
    /// The sealed replica file.
    pub replica: PathBuf,
    /// The sector's cache directory.
    pub cache: PathBuf,
    /// The pieces of its data.
    pub pieces: Vec<PieceInfo>,
    /// Prover id used for sealing.
    pub prover_id: [u8; 32],
    /// Sector number.
    pub sector_id: u64,
    /// Ticket.
    pub ticket: [u8; 32],
    /// Replica commitment.
    pub comm_r: [u8; 32],
    /// Data commitment.
    pub comm_d: [u8; 32],
}

/// Seals a random piece of `rp`'s size with `prover_id` and `sector_id` up to pre-commit
/// phase 2, in `dir` (which must exist). Call [`point_filecoin_proofs_at`] first.
pub fn seal_pre_committed(
    rp: RegisteredSealProof,
    dir: &Path,
    prover_id: [u8; 32],
    sector_id: u64,
    rng: &mut impl Rng,
) -> Result<PreCommitted, FilecoinError> {
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |e| FilecoinError::io(p, e)
    };
    let cache = dir.join("cache");
    let staged = dir.join("staged");
    let sealed = dir.join("sealed");
    fs::create_dir_all(&cache).map_err(io(&cache))?;
    let piece_len =
        UnpaddedBytesAmount::from(filecoin_proofs::PaddedBytesAmount::from(rp.sector_size()));
    let piece: Vec<u8> = (0..u64::from(piece_len)).map(|_| rng.gen()).collect();
    let mut staged_file = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&staged)
        .map_err(io(&staged))?;
    let (piece_info, _) = add_piece(rp, &piece[..], &mut staged_file, piece_len, &[])?;
    staged_file.flush().map_err(io(&staged))?;
    staged_file.rewind().map_err(io(&staged))?;
    drop(staged_file);
    File::create(&sealed).map_err(io(&sealed))?;

    let ticket: [u8; 32] = random_fr32(rng);
    let pieces = vec![piece_info];
    let pc1 = seal_pre_commit_phase1(
        rp,
        &cache,
        &staged,
        &sealed,
        prover_id,
        SectorId::from(sector_id),
        ticket,
        &pieces,
    )?;
    let SealPreCommitPhase2Output {
        comm_r,
        comm_d,
        registered_proof: _,
    } = seal_pre_commit_phase2(pc1, &cache, &sealed)?;
    Ok(PreCommitted {
        registered_proof: rp,
        replica: sealed,
        cache,
        pieces,
        prover_id,
        sector_id,
        ticket,
        comm_r,
        comm_d,
    })
}

/// Seals a fresh random sector of `rp` in a temporary directory and returns its C1 output.
/// Call [`point_filecoin_proofs_at`] first.
pub fn seal_random_sector(
    rp: RegisteredSealProof,
    rng: &mut impl Rng,
) -> Result<SealedSector, FilecoinError> {
    let t = Instant::now();
    let work = tempfile::tempdir().map_err(|e| FilecoinError::io(std::env::temp_dir(), e))?;
    let prover_id: [u8; 32] = rng.gen();
    let sector_id: u64 = rng.gen_range(1..1_000_000);
    let s = seal_pre_committed(rp, work.path(), prover_id, sector_id, rng)?;
    let seed: [u8; 32] = random_fr32(rng);
    let pc2 = SealPreCommitPhase2Output {
        comm_r: s.comm_r,
        comm_d: s.comm_d,
        registered_proof: rp,
    };
    let c1 = seal_commit_phase1(
        &s.cache,
        &s.replica,
        prover_id,
        SectorId::from(sector_id),
        s.ticket,
        seed,
        pc2,
        &s.pieces,
    )?;
    let c1_output = serde_json::to_vec(&c1)
        .map_err(|e| FilecoinError::Other(format!("serializing the C1 output: {e}")))?;
    Ok(SealedSector {
        c1_output,
        prover_id,
        sector_id,
        registered_proof: rp,
        seal_secs: t.elapsed().as_secs_f64(),
    })
}

/// 32 random bytes with the top two bits clear (how Lotus' tickets, seeds and randomness look
/// as Fr).
pub fn random_fr32(rng: &mut impl Rng) -> [u8; 32] {
    let mut b: [u8; 32] = rng.gen();
    b[31] &= 0x3f;
    b
}

/// Everything a test needs: parameters in place, filecoin-proofs pointed at them, and a fresh
/// sealed sector.
#[derive(Clone, Debug)]
pub struct Fixture {
    /// The cache directory.
    pub cache: PathBuf,
    /// The parameter directory (published names, random contents).
    pub params_dir: PathBuf,
    /// Parameter generation report.
    pub params: ParamsReport,
    /// The sealed sector.
    pub sector: SealedSector,
}

/// Prepares the fixture in `cache` (see the module docs).
pub fn ensure_fixture(cache: &Path) -> Result<Fixture, FilecoinError> {
    let params_dir = point_filecoin_proofs_at(cache)?;
    let mut rng = rand::rngs::OsRng;
    let params = ensure_params(FIXTURE_PROOF, &params_dir, &mut rng, Generator::Fast)?;
    let sector = seal_random_sector(FIXTURE_PROOF, &mut rng)?;
    Ok(Fixture {
        cache: cache.to_path_buf(),
        params_dir,
        params,
        sector,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interrupted_writes_leave_no_file_under_the_real_name() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("v28-x.params");
        let err = write_atomically(&target, |w| {
            w.write_all(&[1u8; 1000])?;
            Err(std::io::Error::other("interrupted"))
        });
        assert!(err.is_err());
        assert!(!target.exists());
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            0,
            "temporary file removed"
        );
        write_atomically(&target, |w| w.write_all(b"done")).unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"done");
    }

    #[test]
    fn cache_dir_follows_the_environment_variable_rule() {
        // Only reads the environment: PROOFLINE_TEST_CACHE wins when set and non-empty.
        let d = default_cache_dir();
        match std::env::var_os(CACHE_ENV).filter(|v| !v.is_empty()) {
            Some(v) => assert_eq!(d, PathBuf::from(v)),
            None => assert!(
                d.ends_with(".cache/proofline/test-fixtures"),
                "{}",
                d.display()
            ),
        }
        assert_eq!(params_dir(Path::new("/c")), PathBuf::from("/c/params"));
    }
}
