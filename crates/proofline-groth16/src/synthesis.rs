//! Synthesis: runs a bellpepper-core circuit into our own buffers.
//!
//! [`Synthesizer`] implements bellpepper-core's `ConstraintSystem` with exactly the semantics of
//! bellperson 0.27's private `ProvingAssignment`, so that proofs made from its output verify
//! against parameters that bellperson generated:
//!
//! * input 0 is the constant ONE, allocated before the circuit runs;
//! * each constraint records the evaluations of its A and B linear combinations and checks
//!   that C's equals their product: a partition is only returned for a witness that satisfies
//!   every constraint, so C's evaluations are `a∘b` and the H stage derives them (bellperson
//!   stores them; storing them would cost a third more memory and, on a GPU, upload);
//! * a variable counts towards the density of A (aux only: inputs are dense in A) and of B
//!   (inputs and aux) when it appears there with a non-zero coefficient;
//! * after the circuit, one constraint `input_i * 0 = 0` per public input (ONE included) makes
//!   every input appear in A, which is why the A query is dense over inputs.
//!
//! The result, [`SynthesizedPartition`], is plain vectors that later stages take by move.

use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use blstrs::Scalar;
use ff::Field;
pub use proofline_r1cs::Density;
use proofline_r1cs::{Recorder, WithValues, Witness, WitnessCs};

/// What synthesis produces for one partition: evaluations and assignments, by value. The
/// witness satisfies every constraint, so the evaluations of C are `a[i]·b[i]`.
#[derive(Clone, Debug, Default)]
pub struct SynthesizedPartition {
    /// Evaluations of the A linear combinations, one per constraint.
    pub a: Vec<Scalar>,
    /// Evaluations of the B linear combinations, one per constraint.
    pub b: Vec<Scalar>,
    /// The assignment of the witness.
    pub assignment: Assignment,
}

/// The variable assignment and query densities, shared read-only by the MSM stages.
#[derive(Clone, Debug, Default)]
pub struct Assignment {
    /// Public inputs; index 0 is ONE.
    pub input: Vec<Scalar>,
    /// Auxiliary (private) variables.
    pub aux: Vec<Scalar>,
    /// Which aux variables appear in A.
    pub a_aux_density: Density,
    /// Which inputs appear in B.
    pub b_input_density: Density,
    /// Which aux variables appear in B.
    pub b_aux_density: Density,
}

impl SynthesizedPartition {
    /// Number of constraints, including the one per public input.
    pub fn num_constraints(&self) -> usize {
        self.a.len()
    }
}

/// Our `ConstraintSystem`: writes evaluations and assignments straight into plain vectors.
#[derive(Debug, Default)]
pub struct Synthesizer {
    out: SynthesizedPartition,
    /// The first constraint whose C evaluation is not the product of A's and B's.
    unsatisfied: Option<usize>,
}

impl Synthesizer {
    /// A system with the ONE input already allocated, sized for about `constraints` constraints.
    pub fn with_capacity(constraints: usize, aux: usize) -> Self {
        let mut s = Synthesizer::default();
        s.out.a.reserve(constraints);
        s.out.b.reserve(constraints);
        s.out.assignment.aux.reserve(aux);
        s.push_input(Scalar::ONE);
        s
    }

    fn push_input(&mut self, value: Scalar) -> Variable {
        self.out.assignment.input.push(value);
        self.out.assignment.b_input_density.push(false);
        Variable(Index::Input(self.out.assignment.input.len() - 1))
    }

    /// Adds the `input_i * 0 = 0` constraints and returns the buffers, or
    /// [`SynthesisError::Unsatisfiable`] when a constraint does not hold (logged with its index):
    /// such a witness would only give a proof that fails verification.
    pub fn finish(mut self) -> Result<SynthesizedPartition, SynthesisError> {
        for i in 0..self.out.assignment.input.len() {
            self.enforce(|| "", |lc| lc + Variable(Index::Input(i)), |lc| lc, |lc| lc);
        }
        if let Some(row) = self.unsatisfied {
            tracing::error!(
                row,
                "the witness does not satisfy the circuit's constraints"
            );
            return Err(SynthesisError::Unsatisfiable);
        }
        Ok(self.out)
    }
}

/// Evaluates `lc`, marking the variables it uses with a non-zero coefficient.
#[inline]
fn eval(
    lc: &LinearCombination<Scalar>,
    input_density: Option<&mut Density>,
    aux_density: Option<&mut Density>,
    input: &[Scalar],
    aux: &[Scalar],
) -> Scalar {
    let mut acc = Scalar::ZERO;
    let one = Scalar::ONE;
    let mut input_density = input_density;
    for (&i, coeff) in lc.iter_inputs() {
        if bool::from(coeff.is_zero()) {
            continue;
        }
        let mut tmp = input[i];
        if *coeff != one {
            tmp *= coeff;
        }
        acc += tmp;
        if let Some(d) = input_density.as_deref_mut() {
            d.set(i);
        }
    }
    let mut aux_density = aux_density;
    for (&i, coeff) in lc.iter_aux() {
        if bool::from(coeff.is_zero()) {
            continue;
        }
        let mut tmp = aux[i];
        if *coeff != one {
            tmp *= coeff;
        }
        acc += tmp;
        if let Some(d) = aux_density.as_deref_mut() {
            d.set(i);
        }
    }
    acc
}

impl ConstraintSystem<Scalar> for Synthesizer {
    type Root = Self;

    /// An empty system, as bellperson's: a child system used with `extend` allocates its own
    /// temporary ONE input first, which `extend` then skips.
    fn new() -> Self {
        Synthesizer::default()
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let value = f()?;
        let asg = &mut self.out.assignment;
        asg.aux.push(value);
        asg.a_aux_density.push(false);
        asg.b_aux_density.push(false);
        Ok(Variable(Index::Aux(asg.aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let value = f()?;
        Ok(self.push_input(value))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        let a = a(LinearCombination::zero());
        let b = b(LinearCombination::zero());
        let c = c(LinearCombination::zero());
        let asg = &mut self.out.assignment;
        let a_res = eval(&a, None, Some(&mut asg.a_aux_density), &asg.input, &asg.aux);
        let b_res = eval(
            &b,
            Some(&mut asg.b_input_density),
            Some(&mut asg.b_aux_density),
            &asg.input,
            &asg.aux,
        );
        let c_res = eval(&c, None, None, &asg.input, &asg.aux);
        if self.unsatisfied.is_none() && a_res * b_res != c_res {
            self.unsatisfied = Some(self.out.a.len());
        }
        self.out.a.push(a_res);
        self.out.b.push(b_res);
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
        if self.unsatisfied.is_none() {
            self.unsatisfied = other.unsatisfied.map(|row| self.out.a.len() + row);
        }
        let (me, ot) = (&mut self.out, &other.out);
        me.assignment
            .a_aux_density
            .extend_from(&ot.assignment.a_aux_density, 0);
        me.assignment
            .b_input_density
            .extend_child_inputs(&ot.assignment.b_input_density);
        me.assignment
            .b_aux_density
            .extend_from(&ot.assignment.b_aux_density, 0);
        me.a.extend_from_slice(&ot.a);
        me.b.extend_from_slice(&ot.b);
        // A child system starts with its own ONE input: skip it.
        me.assignment
            .input
            .extend_from_slice(ot.assignment.input.get(1..).unwrap_or(&[]));
        me.assignment.aux.extend_from_slice(&ot.assignment.aux);
    }
}

/// Runs `circuit` into a fresh [`Synthesizer`] and returns the finished buffers.
pub fn synthesize<C: Circuit<Scalar>>(circuit: C) -> Result<SynthesizedPartition, SynthesisError> {
    let mut cs = Synthesizer::with_capacity(0, 0);
    circuit.synthesize(&mut cs)?;
    cs.finish()
}

/// A partition's circuit, boxed so that different circuit types travel in one message.
///
/// Every `bellpepper_core::Circuit` is one (sequential witness generation). A circuit made of
/// independent parts implements it by hand to generate its witness in parallel (Filecoin's PoRep
/// runs its challenges at once); it must produce the same variables in the same order as
/// [`PartitionCircuit::synthesize_into`].
pub trait PartitionCircuit: Send {
    /// Synthesizes the circuit into `cs` (every constraint evaluated).
    fn synthesize_into(self: Box<Self>, cs: &mut Synthesizer) -> Result<(), SynthesisError>;

    /// Runs the circuit into a recorder that keeps its matrices and its values.
    fn record_into(self: Box<Self>, cs: &mut Recorder<WithValues>) -> Result<(), SynthesisError>;

    /// The circuit's variable values only, ONE first (no constraint is built).
    fn witness(self: Box<Self>) -> Result<Witness, SynthesisError>;
}

impl<C: Circuit<Scalar> + Send> PartitionCircuit for C {
    fn synthesize_into(self: Box<Self>, cs: &mut Synthesizer) -> Result<(), SynthesisError> {
        (*self).synthesize(cs)
    }

    fn record_into(self: Box<Self>, cs: &mut Recorder<WithValues>) -> Result<(), SynthesisError> {
        (*self).synthesize(cs)
    }

    fn witness(self: Box<Self>) -> Result<Witness, SynthesisError> {
        let mut cs = WitnessCs::root();
        (*self).synthesize(&mut cs)?;
        Ok(cs.finish())
    }
}

/// Runs a boxed partition circuit into fresh buffers.
pub fn synthesize_boxed(
    circuit: Box<dyn PartitionCircuit>,
) -> Result<SynthesizedPartition, SynthesisError> {
    let mut cs = Synthesizer::with_capacity(0, 0);
    circuit.synthesize_into(&mut cs)?;
    cs.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// x * y = z with x public, y and z private; checks evaluations and densities by hand.
    struct Mul;
    impl Circuit<Scalar> for Mul {
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> Result<(), SynthesisError> {
            let x = cs.alloc_input(|| "x", || Ok(Scalar::from(3u64)))?;
            let y = cs.alloc(|| "y", || Ok(Scalar::from(5u64)))?;
            let z = cs.alloc(|| "z", || Ok(Scalar::from(15u64)))?;
            let unused = cs.alloc(|| "unused", || Ok(Scalar::from(9u64)))?;
            cs.enforce(|| "mul", |lc| lc + x, |lc| lc + y, |lc| lc + z);
            // A zero coefficient does not count towards density.
            cs.enforce(
                || "zero coeff",
                |lc| lc + (Scalar::ZERO, unused),
                |lc| lc + CS::one(),
                |lc| lc,
            );
            Ok(())
        }
    }

    #[test]
    fn evaluations_and_densities_follow_bellperson() {
        let p = synthesize(Mul).unwrap();
        // 2 circuit constraints + 2 input constraints (ONE and x).
        assert_eq!(p.num_constraints(), 4);
        assert_eq!(p.a[0], Scalar::from(3u64));
        assert_eq!(p.b[0], Scalar::from(5u64));
        assert_eq!(p.a[1], Scalar::ZERO);
        assert_eq!(p.b[1], Scalar::ONE);
        // input constraints: a = input_i, b = c = 0
        assert_eq!(p.a[2], Scalar::ONE);
        assert_eq!(p.a[3], Scalar::from(3u64));
        assert_eq!(p.b[3], Scalar::ZERO);
        let asg = &p.assignment;
        assert_eq!(asg.input, vec![Scalar::ONE, Scalar::from(3u64)]);
        assert_eq!(asg.aux.len(), 3);
        assert_eq!(asg.a_aux_density.count_ones(), 0);
        assert!(asg.b_aux_density.get(0) && !asg.b_aux_density.get(1));
        assert!(asg.b_input_density.get(0) && !asg.b_input_density.get(1));
        assert!(
            !asg.a_aux_density.get(2),
            "zero coefficient must not mark density"
        );
    }

    /// x · (y + 1) = 3y + x, synthesized directly or, where the system is extensible, in a
    /// child system with its own temporary ONE (as WindowPoSt's circuit does); ONE is used only
    /// in B.
    struct Chunked {
        in_child: bool,
    }
    impl Chunked {
        fn body<CS: ConstraintSystem<Scalar>>(cs: &mut CS) -> Result<(), SynthesisError> {
            let x = cs.alloc_input(|| "x", || Ok(Scalar::from(3u64)))?;
            let y = cs.alloc(|| "y", || Ok(Scalar::from(5u64)))?;
            cs.enforce(
                || "x * (y + 1)",
                |lc| lc + x,
                |lc| lc + y + CS::one(),
                |lc| lc + (Scalar::from(3u64), y) + x,
            );
            Ok(())
        }
    }
    impl Circuit<Scalar> for Chunked {
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> Result<(), SynthesisError> {
            if self.in_child && CS::is_extensible() {
                let mut child = CS::new();
                child.alloc_input(|| "temp ONE", || Ok(Scalar::ONE))?;
                Chunked::body(&mut child)?;
                cs.extend(&child);
                Ok(())
            } else {
                Chunked::body(cs)
            }
        }
    }

    #[test]
    fn child_systems_give_the_same_partition() {
        let direct = synthesize(Chunked { in_child: false }).unwrap();
        let merged = synthesize(Chunked { in_child: true }).unwrap();
        assert!(merged.assignment.b_input_density.get(0), "ONE is used in B");
        assert_eq!(
            merged.assignment.b_input_density,
            direct.assignment.b_input_density
        );
        assert_eq!(
            merged.assignment.b_aux_density,
            direct.assignment.b_aux_density
        );
        assert_eq!(
            merged.assignment.a_aux_density,
            direct.assignment.a_aux_density
        );
        assert_eq!(merged.assignment.input, direct.assignment.input);
        assert_eq!(merged.assignment.aux, direct.assignment.aux);
        assert_eq!((merged.a, merged.b), (direct.a, direct.b));
    }

    /// x · y = z with a wrong z, after a satisfied constraint: refused, in a child system too.
    struct Wrong {
        in_child: bool,
    }
    impl Circuit<Scalar> for Wrong {
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> Result<(), SynthesisError> {
            Mul.synthesize(cs)?;
            let body = |cs: &mut CS| -> Result<(), SynthesisError> {
                let x = cs.alloc(|| "x", || Ok(Scalar::from(3u64)))?;
                let z = cs.alloc(|| "z", || Ok(Scalar::from(16u64)))?;
                cs.enforce(
                    || "x * 5 = z",
                    |lc| lc + x,
                    |lc| lc + (Scalar::from(5u64), CS::one()),
                    |lc| lc + z,
                );
                Ok(())
            };
            if self.in_child && CS::is_extensible() {
                let mut child = CS::new();
                child.alloc_input(|| "temp ONE", || Ok(Scalar::ONE))?;
                body(&mut child)?;
                cs.extend(&child);
                Ok(())
            } else {
                body(cs)
            }
        }
    }

    #[test]
    fn a_witness_that_fails_a_constraint_is_refused() {
        for in_child in [false, true] {
            let e = synthesize(Wrong { in_child }).unwrap_err();
            assert!(matches!(e, SynthesisError::Unsatisfiable), "{e}");
        }
        assert!(synthesize(Mul).is_ok());
    }
}
