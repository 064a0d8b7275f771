//! A staged Groth16 prover over BLS12-381, interoperable with bellperson 0.27.
//!
//! The crate is the math only: it knows nothing of actors, jobs or HTTP. Each stage of a proof
//! is a separate function over plain buffers ([`prover`]), and the heavy steps go through the
//! [`backend::ProverBackend`] trait so that a GPU backend can replace any single one of them.
//!
//! * [`synthesis`]: our `ConstraintSystem`, writing a, b, c and the assignment into vectors;
//! * [`precompiled`]: the same result from a witness and the shape's recorded matrices
//!   (`proofline-r1cs`), and the recording of those matrices;
//! * [`ntt`]: transforms over Fr and the H polynomial on the CPU;
//! * [`msm`]: the 0/1/tail split of sparse queries and the CPU MSMs (blst); [`bitmap`]: the
//!   bitmap the split keeps the ones in;
//! * [`params`]: bellperson parameter files, resident and shared;
//! * [`prover`]: the stages, proof assembly and verification.

pub mod backend;
pub mod bitmap;
pub mod msm;
pub mod ntt;
pub mod params;
pub mod precompiled;
pub mod prover;
pub mod synthesis;

pub use backend::{BackendError, CpuBackend, ProverBackend};
pub use bellperson::groth16::Proof;
pub use bitmap::IndexBitmap;
pub use blstrs::{Bls12, Scalar};
pub use msm::{MsmPlan, SparseScalars};
pub use ntt::NttKind;
pub use params::{ParamsShape, ProvingKey, SharedProvingKey};
pub use proofline_r1cs::{RecordedSystem, Witness};
pub use prover::{MsmResults, ProverError};
pub use synthesis::{Assignment, PartitionCircuit, SynthesizedPartition, Synthesizer};

/// Size of one serialized proof (compressed A, B, C), in bytes.
pub const PROOF_BYTES: usize = 192;

/// Serializes a proof in bellperson's 192-byte layout.
pub fn proof_to_bytes(proof: &Proof<Bls12>) -> Vec<u8> {
    let mut out = Vec::with_capacity(PROOF_BYTES);
    // Writing into a Vec cannot fail.
    let _ = proof.write(&mut out);
    out
}
