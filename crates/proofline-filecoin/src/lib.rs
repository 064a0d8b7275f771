//! Filecoin job kinds for proofline.
//!
//! This crate owns everything Filecoin-specific: turning what a sealing worker holds after
//! commit phase 1 (filecoin-proofs-api's `SealCommitPhase1Output` as JSON, bare or inside Lotus'
//! `Commit2In`, the prover id or miner actor id, and the sector id) into partition circuits and public inputs for the generic pipeline, the naming and
//! digest checking of Filecoin's published parameter files, verification of the final proof with
//! filecoin-proofs' own `verify_seal`, and the test fixture (a freshly sealed 2KiB sector with
//! random parameters under the published file names).
//!
//! * [`config`]: where parameters live, whether digests are checked;
//! * [`shapes`]: registered seal proofs, their sector shapes and parameter file names, and the
//!   one generic dispatch from a sector size to a Merkle tree shape;
//! * [`paramgen`]: fast random Groth16 parameters for the fixture;
//! * [`params`]: the digest check against filecoin-proofs' `parameters.json`;
//! * [`c1`]: parsing and validating the request input (the document, prover or miner id, sector
//!   id);
//! * [`commit2in`]: the documents a worker holds after commit phase 1 (a bare C1 output or
//!   Lotus' `Commit2In`), told apart by their fields;
//! * [`miner`]: miner actor ids (`f01000`) and the prover id filecoin-ffi derives from them;
//! * [`porep`]: [`PorepC2Adapter`], the `porep-c2` job kind;
//! * [`verify`]: [`verify_c2`], filecoin-proofs' `verify_seal` on a finished proof;
//! * [`fixture`]: the sealed 2KiB test sector and random parameters, cached outside the repo;
//! * [`stats`]: 0/1/other proportions of the MSM scalars of a synthesized partition;
//! * [`bench`]: the 2KiB C2 comparison with filecoin-proofs' own `seal_commit_phase2`.

pub mod bench;
pub mod c1;
pub mod commit2in;
pub mod config;
pub mod error;
pub mod fixture;
pub mod miner;
pub mod paramgen;
pub mod params;
pub mod porep;
pub mod shapes;
pub mod stats;
pub mod verify;

pub use c1::{parse_input, C2Input};
pub use commit2in::{Commit2In, DocumentFormat};
pub use config::FilecoinConfig;
pub use error::FilecoinError;
pub use porep::{PorepC2Adapter, SealIdentity};
pub use verify::{verify_c2, verify_c2_with_vk};

/// Re-exported so that callers can name the C1 output and proof types without depending on
/// filecoin-proofs-api themselves.
pub use filecoin_proofs_api::seal::SealCommitPhase1Output;
pub use filecoin_proofs_api::RegisteredSealProof;
