//! Pre-compiled rank-1 constraint systems.
//!
//! A circuit's A, B and C matrices depend only on its shape (for Filecoin: the sector size and
//! proof version), not on the sector it proves. This crate records them once per shape, keeps
//! them on disk beside the parameters and resident in memory, and lets a partition's synthesis
//! be witness generation (variable values only) followed by three sparse matrix-vector products,
//! instead of building and evaluating every linear combination of the circuit again.
//!
//! * [`density`]: the per-variable density bits of the A and B queries;
//! * [`witness`]: [`WitnessCs`], the values-only constraint system, and [`Witness`];
//! * [`coeffs`]: the deduplicated coefficient table and per-term indices;
//! * [`csr`]: one matrix in compressed sparse row form;
//! * [`recorder`]: [`Recorder`], the constraint system that records matrices and densities;
//! * [`system`]: [`RecordedSystem`], the recorded shape, checked;
//! * [`eval`]: a, b, c as parallel sparse products;
//! * [`file`]: the on-disk form, with a digest.
//!
//! The recorded form reproduces the prover's synthesis exactly (same a, b, c, densities and
//! `input_i · 0 = 0` constraints); `proofline-groth16`'s tests compare the two bit for bit.

pub mod coeffs;
pub mod csr;
pub mod density;
pub mod eval;
pub mod file;
pub mod recorder;
pub mod system;
pub mod witness;

use std::path::{Path, PathBuf};

pub use density::Density;
pub use eval::Evaluations;
pub use recorder::{Blank, Recorder, WithValues};
pub use system::{RecordedSystem, ShapeCounts};
pub use witness::{Witness, WitnessCs};

#[cfg(not(target_endian = "little"))]
compile_error!("the constraint file format is read and written on little-endian hosts only");

/// Errors of recording, reading and evaluating constraint systems.
#[derive(Debug, thiserror::Error)]
pub enum R1csError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A file is truncated, corrupt, or not a constraint file.
    #[error("{path}: {reason}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A file holds another shape's constraints.
    #[error("{path} holds the constraints of {found}, not {expected}")]
    WrongShape {
        /// The file.
        path: PathBuf,
        /// Its key.
        found: String,
        /// The key asked for.
        expected: String,
    },
    /// The parts of a system do not fit together.
    #[error("malformed constraint system: {0}")]
    Malformed(String),
    /// A limit of the format was exceeded.
    #[error("the circuit exceeds the constraint format's limit on the {0}")]
    TooLarge(&'static str),
    /// A witness does not have the system's variables.
    #[error(
        "the witness does not fit the recorded constraints of {key}: inputs {} recorded, {} \
         computed; aux {} recorded, {} computed",
        inputs.0, inputs.1, aux.0, aux.1
    )]
    WitnessShape {
        /// The system's key.
        key: String,
        /// (recorded, computed) inputs.
        inputs: (usize, usize),
        /// (recorded, computed) aux variables.
        aux: (usize, usize),
    },
    /// A witness of the right shape that does not satisfy a constraint.
    #[error("the witness does not satisfy constraint {row} of the recorded constraints of {key}")]
    Unsatisfied {
        /// The system's key.
        key: String,
        /// The first constraint it fails.
        row: usize,
    },
}

impl R1csError {
    /// Wraps an I/O error with its path.
    pub fn io(path: impl AsRef<Path>, source: std::io::Error) -> Self {
        R1csError::Io {
            path: path.as_ref().to_path_buf(),
            source,
        }
    }
}
