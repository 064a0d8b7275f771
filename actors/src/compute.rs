//! What a compute slot runs, and how a device sizes it: the seam between the actors and a
//! device's code.
//!
//! * [`ComputeEngine`]: one compute slot (on a GPU: one `GpuSlot`, its own stream): makes a
//!   parameter set resident, holds its G1 tails once a partition has split its scalars, runs
//!   the H stage and the sparse stage (L, A, B in G1, and B in G2 where the engine runs it:
//!   [`G2Placement`]), each under the bytes of the lease the partition driver obtained;
//! * [`DeviceSizing`]: the bytes each of those needs on the device, from the shapes (the driver
//!   asks the device's allocator for exactly these);
//! * [`CpuEngine`] and [`CpuSizing`]: the CPU backend (host memory; nothing kept resident beyond
//!   the parameter store).
//!
//! Engines are plain objects owned by the compute actor's thread; the math stays in
//! proofline-groth16 and the device crates, which know nothing of actors.

use std::sync::Arc;
use std::time::Instant;

use blstrs::{G1Projective, G2Projective, Scalar};
use proofline_groth16::msm::MsmPlan;
use proofline_groth16::{prover, CpuBackend, ProverBackend, ProverError, ProvingKey};

use crate::messages::{Evaluations, Residency, ResidentSizes, StageError};
use crate::partition::G2Stage;
use crate::resident::ResidentData;

/// Results of the H stage and where its time went.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HStage {
    /// `sum h_i H_i`.
    pub h: G1Projective,
    /// Seconds of the H polynomial (with the evaluations' upload on a device).
    pub h_poly_s: f64,
    /// Seconds of the H MSM.
    pub msm_h_s: f64,
    /// Seconds the slot waited for its device's kernel turn (`None`: the engine has none).
    pub turn_wait_s: Option<f64>,
}

/// The sparse MSMs of a partition.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SparseMsms {
    /// L query.
    pub l: G1Projective,
    /// A query.
    pub a: G1Projective,
    /// B query in G1.
    pub b_g1: G1Projective,
    /// B query in G2, when the stage was asked for it ([`G2Stage::Run`]).
    pub b_g2: Option<G2Projective>,
    /// Seconds the slot waited for its device's kernel turn (`None`: the engine has none).
    pub turn_wait_s: Option<f64>,
}

/// Where a device's partitions get the B query's G2 MSM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum G2Placement {
    /// On a CPU-MSM actor, while the device's slot runs the sparse G1 MSMs (the CPU backend:
    /// the two overlap on different cores).
    CpuMsmActor,
    /// In the device's sparse stage (a GPU: the B query in G2 is resident with the G1 bases).
    SparseStage,
}

/// One compute slot of a device. `bytes` is always the lease the stage runs under: a device
/// engine allocates within it (more is a bug, reported as an error).
pub trait ComputeEngine: Send + 'static {
    /// "cpu", "cuda:0/1".
    fn label(&self) -> String;

    /// Uploads `pk`'s resident data ([`DeviceSizing::resident`] said how much).
    fn make_resident(
        &mut self,
        pk: &ProvingKey,
        residency: Residency,
        bytes: u64,
    ) -> Result<ResidentData, StageError>;

    /// H = (A B - C) / Z from the evaluations (C's are `a∘b`), then the H MSM.
    fn h_stage(
        &mut self,
        pk: &ProvingKey,
        evals: Arc<Evaluations>,
        resident: Option<&ResidentData>,
        bytes: u64,
    ) -> Result<HStage, StageError>;

    /// Where this engine's device wants the G2 MSM (the driver asks the sparse stage for it,
    /// or sends it to a CPU-MSM actor).
    fn g2_placement(&self) -> G2Placement;

    /// Holds the tails of `plan` on the device for later partitions of the parameter set
    /// `resident` holds: L's, A's and B's in G1, and B's in G2 with [`G2Stage::Run`] (the sparse
    /// stage's B in G2; [`DeviceSizing::held_tails`] said how much `bytes` may be). Asked only
    /// of engines whose sizing holds tails.
    fn hold_tails(
        &mut self,
        plan: &MsmPlan,
        g2: G2Stage,
        resident: &ResidentData,
        bytes: u64,
    ) -> Result<ResidentData, StageError>;

    /// The L, A and B MSMs in G1 of the split scalars, and with [`G2Stage::Run`] the B MSM in
    /// G2 as well; over the held tails `tails` where given.
    fn sparse(
        &mut self,
        pk: &ProvingKey,
        plan: &MsmPlan,
        g2: G2Stage,
        resident: Option<&ResidentData>,
        tails: Option<&ResidentData>,
        bytes: u64,
    ) -> Result<SparseMsms, StageError>;
}

/// How many bytes a device's stages need.
pub trait DeviceSizing: Send + Sync + 'static {
    /// Bytes of `pk`'s resident data in each layout; `None` when the device keeps nothing
    /// resident.
    fn resident(&self, pk: &ProvingKey) -> Option<ResidentSizes>;
    /// Bytes of the H stage.
    fn h_stage(&self, pk: &ProvingKey, residency: Option<Residency>) -> u64;
    /// Bytes of holding `plan`'s tails (B's in G2 with [`G2Stage::Run`]) beside `pk`'s resident
    /// set, in the layouts of [`ResidentSizes`]: `full` with what speeds the MSMs over them (on
    /// a GPU, precomputed copies), `bases` the tails' bases alone, `tables` nothing held.
    /// `None` where the device holds no tails.
    fn held_tails(&self, pk: &ProvingKey, plan: &MsmPlan, g2: G2Stage) -> Option<ResidentSizes>;
    /// Bytes of the sparse stage (covering B in G2 where the engine computes it), over the
    /// held tails `tails` where given.
    fn sparse_stage(
        &self,
        plan: &MsmPlan,
        residency: Option<Residency>,
        tails: Option<&ResidentData>,
    ) -> u64;
}

/// Domain size of `pk`'s circuit (the H query has one point fewer).
pub fn domain_size(pk: &ProvingKey) -> usize {
    pk.params().h.len() + 1
}

/// A CPU prover backend as a compute slot ([`CpuBackend`] by default).
#[derive(Clone)]
pub struct CpuEngine {
    backend: Arc<dyn ProverBackend>,
}

impl CpuEngine {
    /// A slot computing with `backend` (e.g. a test's instrumented CPU backend).
    pub fn with_backend(backend: Arc<dyn ProverBackend>) -> Self {
        CpuEngine { backend }
    }
}

impl Default for CpuEngine {
    fn default() -> Self {
        CpuEngine::with_backend(Arc::new(CpuBackend))
    }
}

fn take(evals: Arc<Evaluations>) -> Evaluations {
    // Moved when the pipeline passes them on (the usual case); a harness that shares one set of
    // evaluations between partitions pays for a copy here.
    Arc::try_unwrap(evals).unwrap_or_else(|shared| Evaluations {
        a: shared.a.clone(),
        b: shared.b.clone(),
    })
}

impl ComputeEngine for CpuEngine {
    fn label(&self) -> String {
        "cpu".into()
    }

    fn make_resident(
        &mut self,
        _: &ProvingKey,
        _: Residency,
        _: u64,
    ) -> Result<ResidentData, StageError> {
        // parameters stay in the host's parameter store
        Ok(Arc::new(()))
    }

    fn h_stage(
        &mut self,
        pk: &ProvingKey,
        evals: Arc<Evaluations>,
        _: Option<&ResidentData>,
        _: u64,
    ) -> Result<HStage, StageError> {
        let Evaluations { a, b } = take(evals);
        let t = Instant::now();
        let h = prover::compute_h(self.backend.as_ref(), a, b)?;
        let h_poly_s = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let sum = prover::msm_h(self.backend.as_ref(), pk, &h)?;
        Ok(HStage {
            h: sum,
            h_poly_s,
            msm_h_s: t.elapsed().as_secs_f64(),
            turn_wait_s: None,
        })
    }

    fn g2_placement(&self) -> G2Placement {
        G2Placement::CpuMsmActor
    }

    /// Never asked: [`CpuSizing`] holds no tails (the parameters stay in the host's store).
    fn hold_tails(
        &mut self,
        _: &MsmPlan,
        _: G2Stage,
        _: &ResidentData,
        _: u64,
    ) -> Result<ResidentData, StageError> {
        Err(StageError::Prover(ProverError::Backend(
            proofline_groth16::BackendError::Device("the CPU backend holds no tails".into()),
        )))
    }

    fn sparse(
        &mut self,
        pk: &ProvingKey,
        plan: &MsmPlan,
        g2: G2Stage,
        _: Option<&ResidentData>,
        _: Option<&ResidentData>,
        _: u64,
    ) -> Result<SparseMsms, StageError> {
        let backend = self.backend.as_ref();
        let (l, a, b_g1) = prover::msm_sparse_g1(backend, pk, plan)?;
        let b_g2 = match g2 {
            G2Stage::Run => Some(prover::msm_b_g2(backend, pk, plan)?),
            G2Stage::Skip => None,
        };
        Ok(SparseMsms {
            l,
            a,
            b_g1,
            b_g2,
            turn_wait_s: None,
        })
    }
}

/// Host bytes of the CPU backend's stages.
#[derive(Debug, Default)]
pub struct CpuSizing;

impl DeviceSizing for CpuSizing {
    fn resident(&self, _: &ProvingKey) -> Option<ResidentSizes> {
        None
    }

    /// Three vectors over the domain: C's evaluations, which the stage derives from a and b,
    /// and copies of a and b where it cannot take them (a harness shares one set).
    fn h_stage(&self, pk: &ProvingKey, _: Option<Residency>) -> u64 {
        3 * domain_size(pk) as u64 * std::mem::size_of::<Scalar>() as u64
    }

    fn held_tails(&self, _: &ProvingKey, _: &MsmPlan, _: G2Stage) -> Option<ResidentSizes> {
        None
    }

    /// The tail bases and scalars the CPU gathers for Pippenger.
    fn sparse_stage(&self, plan: &MsmPlan, _: Option<Residency>, _: Option<&ResidentData>) -> u64 {
        let tail =
            (plan.a.tail_index.len() + plan.b.tail_index.len() + plan.l.tail_index.len()) as u64;
        let point = std::mem::size_of::<blstrs::G1Affine>() as u64;
        tail * (point + 32) + 1
    }
}

/// A compute slot without an engine: fails every stage (never used when the pipeline is started
/// with as many engines as slots).
#[derive(Debug, Default)]
pub(crate) struct NoEngine;

impl NoEngine {
    fn fail<T>(&self) -> Result<T, StageError> {
        Err(StageError::Prover(ProverError::Backend(
            proofline_groth16::BackendError::Device("this compute slot has no engine".into()),
        )))
    }
}

impl ComputeEngine for NoEngine {
    fn label(&self) -> String {
        "none".into()
    }
    fn make_resident(
        &mut self,
        _: &ProvingKey,
        _: Residency,
        _: u64,
    ) -> Result<ResidentData, StageError> {
        self.fail()
    }
    fn h_stage(
        &mut self,
        _: &ProvingKey,
        _: Arc<Evaluations>,
        _: Option<&ResidentData>,
        _: u64,
    ) -> Result<HStage, StageError> {
        self.fail()
    }
    fn g2_placement(&self) -> G2Placement {
        G2Placement::CpuMsmActor
    }
    fn hold_tails(
        &mut self,
        _: &MsmPlan,
        _: G2Stage,
        _: &ResidentData,
        _: u64,
    ) -> Result<ResidentData, StageError> {
        self.fail()
    }
    fn sparse(
        &mut self,
        _: &ProvingKey,
        _: &MsmPlan,
        _: G2Stage,
        _: Option<&ResidentData>,
        _: Option<&ResidentData>,
        _: u64,
    ) -> Result<SparseMsms, StageError> {
        self.fail()
    }
}
