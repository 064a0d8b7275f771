//! Witness generation: a `ConstraintSystem` that keeps only the values of the variables.
//!
//! [`WitnessCs`] runs a circuit's value closures and stores the results; its `enforce` drops the
//! three linear-combination closures unevaluated. Building and evaluating those linear
//! combinations is most of what a full synthesis costs; with the circuit's matrices recorded once
//! per shape ([`crate::RecordedSystem`]), a, b and c are then sparse matrix-vector products.
//!
//! The order of variables is the order of allocation, exactly as in a full synthesis: input 0 is
//! ONE (allocated by [`WitnessCs::root`]), then the circuit's inputs and aux variables as it
//! allocates them.
//!
//! `is_witness_generator()` stays `false`. bellpepper-core lets a gadget take a separate code
//! path when it is true (neptune's Poseidon then writes its aux values in bulk and enforces
//! nothing); the recorded matrices come from the ordinary path, and keeping that one path is what
//! guarantees the variable layout is the recorded one.
//!
//! The system is extensible like bellperson's: a child system (`ConstraintSystem::new`) starts
//! empty, allocates its own ONE input first, and [`ConstraintSystem::extend`] appends its inputs
//! after that ONE and all its aux variables. Independent sub-circuits can so be run in parallel
//! (see `proofline-filecoin`'s PoRep witness) and joined in their sequential order.

use bellpepper_core::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;

/// The assignment of a circuit: public inputs (index 0 is ONE) and aux variables.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Witness {
    /// Public inputs; index 0 is ONE.
    pub input: Vec<Scalar>,
    /// Auxiliary (private) variables.
    pub aux: Vec<Scalar>,
}

/// A `ConstraintSystem` that records only variable values (see the module docs).
#[derive(Debug, Default)]
pub struct WitnessCs {
    w: Witness,
}

impl WitnessCs {
    /// A root system with the ONE input allocated.
    pub fn root() -> Self {
        Self::with_capacity(1, 0)
    }

    /// A root system with the ONE input allocated and room for `inputs` and `aux` variables.
    pub fn with_capacity(inputs: usize, aux: usize) -> Self {
        let mut input = Vec::with_capacity(inputs.max(1));
        input.push(Scalar::ONE);
        WitnessCs {
            w: Witness {
                input,
                aux: Vec::with_capacity(aux),
            },
        }
    }

    /// Inputs allocated so far (ONE included for a root system).
    pub fn num_inputs(&self) -> usize {
        self.w.input.len()
    }

    /// Aux variables allocated so far.
    pub fn num_aux(&self) -> usize {
        self.w.aux.len()
    }

    /// The values recorded.
    pub fn finish(self) -> Witness {
        self.w
    }
}

impl ConstraintSystem<Scalar> for WitnessCs {
    type Root = Self;

    /// An empty child system: the circuit allocates its own ONE first, which `extend` skips.
    fn new() -> Self {
        WitnessCs::default()
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.w.aux.push(f()?);
        Ok(Variable(Index::Aux(self.w.aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.w.input.push(f()?);
        Ok(Variable(Index::Input(self.w.input.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }

    fn is_extensible() -> bool {
        true
    }

    fn extend(&mut self, other: &Self) {
        // A child system starts with its own ONE input: skip it.
        self.w
            .input
            .extend_from_slice(other.w.input.get(1..).unwrap_or(&[]));
        self.w.aux.extend_from_slice(&other.w.aux);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_values_in_allocation_order_and_ignores_constraints() {
        let mut cs = WitnessCs::root();
        let x = cs.alloc_input(|| "x", || Ok(Scalar::from(3u64))).unwrap();
        let y = cs.alloc(|| "y", || Ok(Scalar::from(5u64))).unwrap();
        cs.enforce(
            || "never evaluated",
            |_| unreachable!("a witness system must not build linear combinations"),
            |lc| lc + x,
            |lc| lc + y,
        );
        let mut child = WitnessCs::new();
        child.alloc_input(|| "ONE", || Ok(Scalar::ONE)).unwrap();
        child
            .alloc_input(|| "z", || Ok(Scalar::from(7u64)))
            .unwrap();
        child.alloc(|| "t", || Ok(Scalar::from(9u64))).unwrap();
        cs.extend(&child);
        let w = cs.finish();
        assert_eq!(
            w.input,
            vec![Scalar::ONE, Scalar::from(3u64), Scalar::from(7u64)]
        );
        assert_eq!(w.aux, vec![Scalar::from(5u64), Scalar::from(9u64)]);
    }

    #[test]
    fn a_missing_value_is_an_error() {
        let mut cs = WitnessCs::root();
        let e = cs
            .alloc(|| "x", || Err(SynthesisError::AssignmentMissing))
            .unwrap_err();
        assert!(matches!(e, SynthesisError::AssignmentMissing));
    }
}
