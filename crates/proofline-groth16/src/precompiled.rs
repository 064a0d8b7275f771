//! Synthesis through a recorded constraint system (`proofline-r1cs`).
//!
//! With the circuit's A, B, C matrices recorded once per shape, a partition's synthesis is its
//! witness (variable values only, [`PartitionCircuit::witness`]) followed by `a = A·w`,
//! `b = B·w` and the check `C·w = a∘b` on rayon; the densities are the shape's, recorded with
//! the matrices. The result is the [`SynthesizedPartition`] the full synthesis
//! ([`crate::Synthesizer`]) produces, bit for bit (tests: `tests/precompiled.rs`).
//!
//! [`synthesize_recording`] is the first synthesis of a shape whose matrices are not recorded
//! yet: it records them from the real circuit while keeping its witness, and returns both the
//! partition (evaluated from the new matrices, like every later one) and the system.

use bellpepper_core::{Circuit, SynthesisError};
use blstrs::Scalar;
use proofline_r1cs::{Blank, R1csError, RecordedSystem, Recorder, WithValues, Witness};

use crate::prover::ProverError;
use crate::synthesis::{Assignment, PartitionCircuit, SynthesizedPartition};

/// A partition from a witness and its shape's recorded system. The densities are copied from the
/// system (one bit per variable: 1/256 of the assignment's size); the witness moves in.
///
/// Every constraint is checked (`C·w = a∘b`, see `RecordedSystem::evaluate`): a witness that
/// does not satisfy the circuit is refused here, with the first failing constraint in the log,
/// rather than turned into a proof that fails verification.
pub fn partition_from(
    sys: &RecordedSystem,
    w: Witness,
) -> Result<SynthesizedPartition, ProverError> {
    let e = match sys.evaluate(&w) {
        Err(R1csError::Unsatisfied { key, row }) => {
            tracing::error!(
                constraints = key,
                row,
                "the witness does not satisfy the recorded constraints"
            );
            return Err(ProverError::Synthesis(SynthesisError::Unsatisfiable));
        }
        e => e?,
    };
    let Witness { input, aux } = w;
    Ok(SynthesizedPartition {
        a: e.a,
        b: e.b,
        assignment: Assignment {
            input,
            aux,
            a_aux_density: sys.a_aux_density().clone(),
            b_input_density: sys.b_input_density().clone(),
            b_aux_density: sys.b_aux_density().clone(),
        },
    })
}

/// Witness generation, then the sparse products of `sys`.
pub fn synthesize_precompiled(
    circuit: Box<dyn PartitionCircuit>,
    sys: &RecordedSystem,
) -> Result<SynthesizedPartition, ProverError> {
    let w = circuit.witness()?;
    partition_from(sys, w)
}

/// Records the circuit's system (named `key`, recorded as described by `origin`) and
/// synthesizes the partition from it.
pub fn synthesize_recording(
    circuit: Box<dyn PartitionCircuit>,
    key: &str,
    origin: &str,
) -> Result<(SynthesizedPartition, RecordedSystem), ProverError> {
    let mut cs = Recorder::<WithValues>::root();
    circuit.record_into(&mut cs)?;
    let (sys, w) = cs.finish(key, origin)?;
    let p = partition_from(&sys, w)?;
    Ok((p, sys))
}

/// Records the system of a blank circuit (no values; parameter generation's input).
pub fn record_blank<C: Circuit<Scalar>>(
    circuit: C,
    key: &str,
    origin: &str,
) -> Result<RecordedSystem, ProverError> {
    let mut cs = Recorder::<Blank>::root();
    circuit.synthesize(&mut cs)?;
    let (sys, ()) = cs.finish(key, origin)?;
    Ok(sys)
}
