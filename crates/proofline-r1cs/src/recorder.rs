//! Recording a circuit's constraint system: the A, B and C matrices, the densities and the
//! variable counts of its shape.
//!
//! [`Recorder`] implements bellpepper-core's `ConstraintSystem` with the same semantics as the
//! prover's synthesis (`proofline_groth16::Synthesizer`, bellperson 0.27's `ProvingAssignment`):
//!
//! * input 0 is ONE, allocated by [`Recorder::root`];
//! * a term with a zero coefficient contributes nothing and marks no density, so it is not
//!   stored; the terms of a linear combination are stored in bellpepper's order (inputs, then
//!   aux, each by index, duplicates already merged);
//! * A's density covers aux variables only, B's covers inputs and aux, C has none;
//! * [`Recorder::finish`] appends one `input_i · 0 = 0` constraint per input, as the prover does.
//!
//! What it does with variable values is its type parameter: [`Blank`] never calls a value
//! closure (a blank circuit, as parameter generation runs it), [`WithValues`] calls them and keeps
//! the witness (recording from the first real synthesis of a shape, whose a, b, c then come from
//! the matrices like every later one).

use bellpepper_core::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;

use crate::coeffs::CoeffTable;
use crate::csr::Column;
use crate::density::Density;
use crate::system::{Matrices, RecordedSystem, ShapeCounts};
use crate::witness::Witness;
use crate::R1csError;

/// What a [`Recorder`] does with variable values.
pub trait Values: Default + Send {
    /// An aux variable was allocated; `f` computes its value.
    fn aux<F: FnOnce() -> Result<Scalar, SynthesisError>>(
        &mut self,
        f: F,
    ) -> Result<(), SynthesisError>;
    /// An input was allocated; `f` computes its value.
    fn input<F: FnOnce() -> Result<Scalar, SynthesisError>>(
        &mut self,
        f: F,
    ) -> Result<(), SynthesisError>;
    /// Appends a child system's values (its first input, the child's own ONE, skipped).
    fn extend(&mut self, child: &Self);
}

/// Records the shape only; value closures are never called (blank circuits).
#[derive(Clone, Copy, Debug, Default)]
pub struct Blank;

impl Values for Blank {
    fn aux<F: FnOnce() -> Result<Scalar, SynthesisError>>(
        &mut self,
        _: F,
    ) -> Result<(), SynthesisError> {
        Ok(())
    }
    fn input<F: FnOnce() -> Result<Scalar, SynthesisError>>(
        &mut self,
        _: F,
    ) -> Result<(), SynthesisError> {
        Ok(())
    }
    fn extend(&mut self, _: &Self) {}
}

/// Records the shape and keeps the witness.
#[derive(Clone, Debug, Default)]
pub struct WithValues(Witness);

impl Values for WithValues {
    fn aux<F: FnOnce() -> Result<Scalar, SynthesisError>>(
        &mut self,
        f: F,
    ) -> Result<(), SynthesisError> {
        self.0.aux.push(f()?);
        Ok(())
    }
    fn input<F: FnOnce() -> Result<Scalar, SynthesisError>>(
        &mut self,
        f: F,
    ) -> Result<(), SynthesisError> {
        self.0.input.push(f()?);
        Ok(())
    }
    fn extend(&mut self, child: &Self) {
        self.0
            .input
            .extend_from_slice(child.0.input.get(1..).unwrap_or(&[]));
        self.0.aux.extend_from_slice(&child.0.aux);
    }
}

/// What a finished recording holds besides the system: the witness, for [`WithValues`].
pub trait FinishValues: Values {
    /// What [`Recorder::finish`] returns next to the system.
    type Output;
    /// Converts the recorded values.
    fn output(self) -> Self::Output;
}

impl FinishValues for Blank {
    type Output = ();
    fn output(self) {}
}

impl FinishValues for WithValues {
    type Output = Witness;
    fn output(self) -> Witness {
        self.0
    }
}

/// A `ConstraintSystem` that records matrices, densities and counts (see the module docs).
#[derive(Debug, Default)]
pub struct Recorder<V: Values> {
    values: V,
    table: CoeffTable,
    m: Matrices,
    inputs: usize,
    aux: usize,
    a_aux_density: Density,
    b_input_density: Density,
    b_aux_density: Density,
    /// The first error seen (`enforce` cannot return one); reported by `finish`.
    error: Option<R1csError>,
    scratch: Vec<(u32, u32)>,
}

impl<V: Values> Recorder<V> {
    /// A root system with the ONE input allocated.
    pub fn root() -> Self {
        let mut r = Recorder::<V>::default();
        // ONE's value cannot fail.
        let _ = r.values.input(|| Ok(Scalar::ONE));
        r.push_input();
        r
    }

    fn push_input(&mut self) -> Variable {
        self.inputs += 1;
        self.b_input_density.push(false);
        Variable(Index::Input(self.inputs - 1))
    }

    /// Constraints recorded so far.
    pub fn num_constraints(&self) -> usize {
        self.m.a.rows()
    }

    /// Inputs allocated so far (ONE included for a root system).
    pub fn num_inputs(&self) -> usize {
        self.inputs
    }

    /// Aux variables allocated so far.
    pub fn num_aux(&self) -> usize {
        self.aux
    }

    fn fail(&mut self, e: R1csError) {
        if self.error.is_none() {
            self.error = Some(e);
        }
    }

    /// Encodes `lc` into the scratch row, marking densities as the prover's synthesis does.
    fn encode(
        &mut self,
        lc: &LinearCombination<Scalar>,
        mark_inputs: bool,
        mark_aux: Option<Which>,
    ) -> Result<(), R1csError> {
        self.scratch.clear();
        for (&i, coeff) in lc.iter_inputs() {
            if *coeff == Scalar::ZERO {
                continue;
            }
            let c = Column::Input(i)
                .encode()
                .ok_or(R1csError::TooLarge("input index"))?;
            let k = self
                .table
                .intern(coeff)
                .ok_or(R1csError::TooLarge("coefficient table"))?;
            self.scratch.push((c, k));
            if mark_inputs {
                mark(&mut self.b_input_density, i)?;
            }
        }
        for (&j, coeff) in lc.iter_aux() {
            if *coeff == Scalar::ZERO {
                continue;
            }
            let c = Column::Aux(j)
                .encode()
                .ok_or(R1csError::TooLarge("aux index"))?;
            let k = self
                .table
                .intern(coeff)
                .ok_or(R1csError::TooLarge("coefficient table"))?;
            self.scratch.push((c, k));
            match mark_aux {
                Some(Which::A) => mark(&mut self.a_aux_density, j)?,
                Some(Which::B) => mark(&mut self.b_aux_density, j)?,
                None => {}
            }
        }
        Ok(())
    }

    fn record(
        &mut self,
        a: &LinearCombination<Scalar>,
        b: &LinearCombination<Scalar>,
        c: &LinearCombination<Scalar>,
    ) -> Result<(), R1csError> {
        self.encode(a, false, Some(Which::A))?;
        self.m
            .a
            .push_row(&self.scratch)
            .map_err(|_| R1csError::TooLarge("A terms"))?;
        self.encode(b, true, Some(Which::B))?;
        self.m
            .b
            .push_row(&self.scratch)
            .map_err(|_| R1csError::TooLarge("B terms"))?;
        self.encode(c, false, None)?;
        self.m
            .c
            .push_row(&self.scratch)
            .map_err(|_| R1csError::TooLarge("C terms"))?;
        Ok(())
    }
}

impl<V: FinishValues> Recorder<V> {
    /// Adds the `input_i · 0 = 0` constraints and returns the recorded system, named `key`
    /// (normally its parameter file's name) and described by `origin` (how it was recorded), with
    /// the witness for [`WithValues`].
    pub fn finish(
        mut self,
        key: &str,
        origin: &str,
    ) -> Result<(RecordedSystem, V::Output), R1csError> {
        for i in 0..self.inputs {
            self.enforce(|| "", |lc| lc + Variable(Index::Input(i)), |lc| lc, |lc| lc);
        }
        if let Some(e) = self.error {
            return Err(e);
        }
        let mut m = self.m;
        for x in [&mut m.a, &mut m.b, &mut m.c] {
            x.shrink_to_fit();
        }
        let counts = ShapeCounts {
            inputs: self.inputs,
            aux: self.aux,
            constraints: m.a.rows(),
        };
        let system = RecordedSystem::new(
            key.to_string(),
            origin.to_string(),
            counts,
            self.table.values().to_vec(),
            m,
            [self.a_aux_density, self.b_input_density, self.b_aux_density],
        )?;
        Ok((system, self.values.output()))
    }
}

#[derive(Clone, Copy)]
enum Which {
    A,
    B,
}

#[inline]
fn mark(d: &mut Density, i: usize) -> Result<(), R1csError> {
    if i >= d.len() {
        return Err(R1csError::Malformed(format!(
            "a constraint uses variable {i}, which is not allocated"
        )));
    }
    d.set(i);
    Ok(())
}

impl<V: Values> ConstraintSystem<Scalar> for Recorder<V> {
    type Root = Self;

    /// An empty child system: the circuit allocates its own ONE first, which `extend` skips.
    fn new() -> Self {
        Recorder::default()
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.values.aux(f)?;
        self.aux += 1;
        self.a_aux_density.push(false);
        self.b_aux_density.push(false);
        Ok(Variable(Index::Aux(self.aux - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.values.input(f)?;
        Ok(self.push_input())
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
        if self.error.is_some() {
            return;
        }
        if let Err(e) = self.record(&a, &b, &c) {
            self.fail(e);
        }
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

    /// Appends a child system: its constraints with its variables renumbered after this
    /// system's (its input 0, its own ONE, becomes this system's ONE), its coefficients
    /// re-interned, and its densities as the prover's synthesis appends them.
    fn extend(&mut self, other: &Self) {
        if self.error.is_some() {
            return;
        }
        if let Some(e) = &other.error {
            let e = R1csError::Malformed(format!("a child system failed to record: {e}"));
            self.fail(e);
            return;
        }
        let (input_base, aux_base) = (self.inputs, self.aux);
        let remap_coeff: Result<Vec<u32>, R1csError> = other
            .table
            .values()
            .iter()
            .map(|v| {
                self.table
                    .intern(v)
                    .ok_or(R1csError::TooLarge("coefficient table"))
            })
            .collect();
        let remap_coeff = match remap_coeff {
            Ok(r) => r,
            Err(e) => return self.fail(e),
        };
        let remap_col = |c: u32| -> Option<u32> {
            match Column::decode(c) {
                Column::Input(0) => Column::Input(0).encode(),
                Column::Input(i) => Column::Input(input_base + i - 1).encode(),
                Column::Aux(j) => Column::Aux(aux_base + j).encode(),
            }
        };
        let mut row = Vec::new();
        for (src, dst) in [
            (&other.m.a, &mut self.m.a),
            (&other.m.b, &mut self.m.b),
            (&other.m.c, &mut self.m.c),
        ] {
            for r in 0..src.rows() {
                row.clear();
                for (c, k) in src.row(r) {
                    match remap_col(c) {
                        Some(c) => row.push((c, remap_coeff[k as usize])),
                        None => {
                            self.error = Some(R1csError::TooLarge("variable index"));
                            return;
                        }
                    }
                }
                if dst.push_row(&row).is_err() {
                    self.error = Some(R1csError::TooLarge("matrix terms"));
                    return;
                }
            }
        }
        self.a_aux_density.extend_from(&other.a_aux_density, 0);
        self.b_input_density
            .extend_child_inputs(&other.b_input_density);
        self.b_aux_density.extend_from(&other.b_aux_density, 0);
        self.inputs += other.inputs.saturating_sub(1);
        self.aux += other.aux;
        self.values.extend(&other.values);
    }
}
