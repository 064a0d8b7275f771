//! Filecoin job kinds for proofline.
//!
//! This crate owns everything Filecoin-specific: turning what a storage provider's worker holds
//! (after commit phase 1, filecoin-proofs-api's `SealCommitPhase1Output` as JSON, bare or inside
//! Lotus' `Commit2In`, with the prover id or miner actor id and the sector id; the vanilla proofs
//! of a WindowPoSt or WinningPoSt; the vanilla partition proofs of a SnapDeals update) into
//! partition circuits and public inputs for the generic pipeline, the naming and digest checking
//! of Filecoin's published parameter files, verification of the final proof with filecoin-proofs'
//! own logic, and the test fixtures (freshly sealed and updated 2KiB sectors with random
//! parameters under the published file names).
//!
//! * [`config`]: where parameters live, whether digests are checked;
//! * [`shapes`]: registered seal proofs, their sector shapes and parameter file names, and the
//!   one generic dispatch from a sector size to a Merkle tree shape;
//! * [`proofs`]: every circuit by registered proof (PoRep, PoSt, SnapDeals) and its file names;
//! * [`paramgen`]: fast random Groth16 parameters for the fixtures;
//! * [`params`]: parameter specs and the digest check against filecoin-proofs' `parameters.json`;
//! * [`c1`]: parsing and validating the `porep-c2` input (the document, prover or miner id,
//!   sector id);
//! * [`commit2in`]: the documents a worker holds after commit phase 1 (a bare C1 output or
//!   Lotus' `Commit2In`), told apart by their fields;
//! * [`miner`]: miner actor ids (`f01000`) and the prover id filecoin-ffi derives from them;
//! * [`fields`]: the request field parsers shared by the PoSt and SnapDeals kinds;
//! * [`porep`]: [`PorepC2Adapter`], the `porep-c2` job kind;
//! * [`post`]: [`PoStAdapter`], the `window-post` and `winning-post` job kinds;
//! * [`update`]: [`SnapUpdateAdapter`], the `snap-update` job kind;
//! * [`verify`]: filecoin-proofs' verifiers on finished proofs, with their keys or ours;
//! * [`fixture`]: random parameters and the sealed 2KiB C2 sector, cached outside the repo;
//! * [`sectors`]: fresh 2KiB sectors with the vanilla proofs of a WindowPoSt, a WinningPoSt and
//!   a SnapDeals update;
//! * [`stats`]: 0/1/other proportions of the MSM scalars of a synthesized partition;
//! * [`bench`], [`bench_post`]: proofline next to filecoin-proofs' own proving calls.

pub mod bench;
pub mod bench_post;
pub mod c1;
pub mod commit2in;
pub mod config;
pub mod error;
pub mod fields;
pub mod fixture;
pub mod miner;
pub mod paramgen;
pub mod params;
pub mod porep;
pub mod post;
pub mod proofs;
pub mod sectors;
pub mod shapes;
pub mod stats;
pub mod update;
pub mod verify;

pub use c1::{parse_input, C2Input};
pub use commit2in::{Commit2In, DocumentFormat};
pub use config::FilecoinConfig;
pub use error::FilecoinError;
pub use porep::{PorepC2Adapter, SealIdentity};
pub use post::{PoStAdapter, PoStIdentity, PoStKind};
pub use proofs::ProofCircuit;
pub use update::{SnapUpdateAdapter, UpdateIdentity};
pub use verify::{
    verify_c2, verify_c2_with_vk, verify_post_with_vk, verify_update, verify_update_with_vk,
    verify_window_post, verify_winning_post,
};

/// Re-exported so that callers can name the C1 output and proof types without depending on
/// filecoin-proofs-api themselves.
pub use filecoin_proofs_api::seal::SealCommitPhase1Output;
pub use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};
