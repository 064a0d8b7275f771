//! The worker actors, each on its own OS threads (`SyncArbiter`):
//!
//! * [`ParamsLoader`]: reads parameter files once (blocking I/O, seconds to minutes);
//! * [`SynthesisActor`]: runs circuits into a, b, c and the assignment (witness plus the
//!   shape's recorded matrices, or every constraint);
//! * [`CpuMsmActor`]: MSM preparation (0/1/tail split), the G2 MSM (where the device places it
//!   on the CPU), assembly and verification;
//! * [`ComputeActor`]: one compute slot of a device, running its [`ComputeEngine`] (on a GPU,
//!   the slot's own stream; on the CPU, the CPU backend): resident uploads, the H stage and the
//!   sparse MSMs (B in G2 among them on a GPU), each under the lease the message carries.
//!
//! Handlers do the work synchronously on their thread; the messages carry buffers by move.
//! Every handler runs its work inside [`guarded`]: a panic (a circuit's assertion, a backend
//! bug) fails that job with `internal_error`, and the pool's thread lives on. A `SyncArbiter`
//! thread that unwinds out of a handler would be gone for good, leaving the pool short.

use std::sync::Arc;
use std::time::Instant;

use actix::prelude::*;
use blstrs::{Bls12, G2Projective};
use proofline_groth16::synthesis::Synthesizer;
use proofline_groth16::{precompiled, prover};
use proofline_groth16::{
    MsmPlan, Proof, ProverBackend, ProverError, SharedProvingKey, SynthesizedPartition,
};
use proofline_jobs::{ConstraintsStore, JobError, ParamsStore, Precompiled};
use proofline_r1cs::R1csError;
use tracing::info_span;

use crate::compute::{ComputeEngine, HStage, SparseMsms};
use crate::messages::*;
use crate::resident::ResidentData;
use crate::telemetry::{self, actor, Named, Secs};

/// Runs a stage, turning a panic (a circuit's assertion, a backend bug) into a stage error, so
/// that one bad job fails alone and the actor's thread keeps serving.
fn guarded<T>(stage: &str, f: impl FnOnce() -> Result<T, StageError>) -> Result<T, StageError> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => {
            let what = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            tracing::error!(stage, panic = %what, "stage panicked; the job fails, the actor continues");
            Err(StageError::Panicked {
                stage: stage.to_string(),
                message: what,
            })
        }
    }
}

/// Loads parameter files into the shared store.
pub struct ParamsLoader {
    store: Arc<ParamsStore>,
}

impl ParamsLoader {
    /// A loader over `store`.
    pub fn new(store: Arc<ParamsStore>) -> Self {
        ParamsLoader { store }
    }
}

impl Actor for ParamsLoader {
    type Context = SyncContext<Self>;
}

impl Named for ParamsLoader {
    const NAME: &'static str = actor::PARAMS;
}

crate::counted_handlers!(ParamsLoader);

impl Handler<LoadParams> for ParamsLoader {
    type Result = Result<SharedProvingKey, JobError>;

    fn handle(&mut self, msg: LoadParams, _: &mut SyncContext<Self>) -> Self::Result {
        let _span = info_span!("load_params", params = %msg.spec.id).entered();
        let store = &self.store;
        guarded("load_params", || Ok(store.get(&msg.spec)))
            .unwrap_or_else(|e| Err(JobError::Internal(e.to_string())))
    }
}

/// Synthesizes partitions, through the shape's recorded constraint system when there is one.
pub struct SynthesisActor {
    constraints: Arc<ConstraintsStore>,
}

impl SynthesisActor {
    /// A synthesis actor reading recorded systems from `constraints`.
    pub fn new(constraints: Arc<ConstraintsStore>) -> Self {
        SynthesisActor { constraints }
    }
}

impl Actor for SynthesisActor {
    type Context = SyncContext<Self>;
}

impl Named for SynthesisActor {
    const NAME: &'static str = actor::SYNTHESIS;
}

crate::counted_handlers!(SynthesisActor);

impl Handler<Synthesize> for SynthesisActor {
    type Result = Result<SynthesizedPartition, StageError>;

    fn handle(&mut self, msg: Synthesize, _: &mut SyncContext<Self>) -> Self::Result {
        let _span = info_span!("synthesize", job = %msg.job, partition = msg.partition).entered();
        msg.cancel.check()?;
        let store = &self.constraints;
        guarded("synthesis", || synthesize(msg, store))
    }
}

/// Builds and synthesizes one partition (see [`ConstraintsStore::lookup`] for the three ways),
/// then checks it against the parameters and the public inputs the job promised.
fn synthesize(
    msg: Synthesize,
    store: &ConstraintsStore,
) -> Result<SynthesizedPartition, StageError> {
    let t = Instant::now();
    let circuit = (msg.circuit)()?;
    let shape = msg.shape;
    let (synth, how) = match store.lookup(&msg.params, &shape) {
        Precompiled::Ready(sys) => {
            let w = circuit.witness().map_err(ProverError::from)?;
            telemetry::stage("synthesis_witness", t.secs());
            let s = Instant::now();
            let synth = precompiled::partition_from(&sys, w).inspect_err(|e| {
                if let ProverError::Constraints(R1csError::WitnessShape { .. }) = e {
                    store.disable(&msg.params, &e.to_string());
                }
            })?;
            telemetry::stage("synthesis_products", s.secs());
            (synth, "precompiled")
        }
        Precompiled::Record(ticket) => {
            let origin = format!("first synthesis of a {} partition", msg.params.id);
            let (synth, sys) = precompiled::synthesize_recording(circuit, ticket.key(), &origin)?;
            // A recording that does not fit the parameters is not kept (the ticket drops).
            prover::check_shape_against(&shape, &synth)?;
            ticket.complete(sys);
            (synth, "recorded")
        }
        Precompiled::Plain(_) => {
            let mut cs = Synthesizer::with_capacity(shape.h + 1, shape.l);
            circuit
                .synthesize_into(&mut cs)
                .map_err(ProverError::from)?;
            (cs.finish().map_err(ProverError::from)?, "plain")
        }
    };
    prover::check_shape_against(&shape, &synth)?;
    if prover::public_inputs(&synth.assignment) != msg.expected_inputs.as_slice() {
        return Err(StageError::PublicInputsMismatch {
            partition: msg.partition,
        });
    }
    telemetry::stage("synthesis", t.secs());
    tracing::debug!(
        how,
        constraints = synth.num_constraints(),
        aux = synth.assignment.aux.len(),
        secs = t.secs(),
        "synthesized"
    );
    Ok(synth)
}

/// CPU-side MSM work.
pub struct CpuMsmActor {
    backend: Arc<dyn ProverBackend>,
}

impl CpuMsmActor {
    /// MSMs that stay on the CPU use `backend` (normally the CPU backend).
    pub fn new(backend: Arc<dyn ProverBackend>) -> Self {
        CpuMsmActor { backend }
    }
}

impl Actor for CpuMsmActor {
    type Context = SyncContext<Self>;
}

impl Named for CpuMsmActor {
    const NAME: &'static str = actor::CPU_MSM;
}

crate::counted_handlers!(CpuMsmActor);

impl Handler<PlanMsm> for CpuMsmActor {
    type Result = Result<MsmPlan, StageError>;

    fn handle(&mut self, msg: PlanMsm, _: &mut SyncContext<Self>) -> Self::Result {
        let t = Instant::now();
        let plan = guarded("msm_plan", || Ok(MsmPlan::build(&msg.assignment)))?;
        telemetry::stage("msm_plan", t.secs());
        Ok(plan)
    }
}

impl Handler<MsmG2> for CpuMsmActor {
    type Result = Result<G2Projective, StageError>;

    fn handle(&mut self, msg: MsmG2, _: &mut SyncContext<Self>) -> Self::Result {
        msg.cancel.check()?;
        let t = Instant::now();
        let r = guarded("msm_g2", || {
            Ok(prover::msm_b_g2(self.backend.as_ref(), &msg.pk, &msg.plan)?)
        })?;
        telemetry::stage("msm_g2", t.secs());
        Ok(r)
    }
}

impl Handler<AssembleVerify> for CpuMsmActor {
    type Result = Result<Proof<Bls12>, StageError>;

    fn handle(&mut self, msg: AssembleVerify, _: &mut SyncContext<Self>) -> Self::Result {
        let t = Instant::now();
        let proof = guarded("assemble_verify", || {
            let (r, s) = prover::random_r_s(&mut rand::rngs::OsRng);
            let proof = prover::assemble(&msg.pk, &msg.results, r, s);
            if !prover::verify(&msg.pk, &proof, &msg.public_inputs)? {
                return Err(ProverError::VerificationFailed.into());
            }
            Ok(proof)
        })?;
        telemetry::stage("assemble_verify", t.secs());
        Ok(proof)
    }
}

impl Handler<RunFinalCheck> for CpuMsmActor {
    type Result = MessageResult<RunFinalCheck>;

    fn handle(&mut self, msg: RunFinalCheck, _: &mut SyncContext<Self>) -> Self::Result {
        let t = Instant::now();
        let RunFinalCheck { check, pk, proof } = msg;
        let verdict = guarded("final_check", || {
            check(&proof, &pk).map_err(StageError::FinalCheck)
        })
        .map_err(|e| match e {
            StageError::FinalCheck(m) => m,
            other => other.to_string(),
        });
        telemetry::stage("final_check", t.secs());
        MessageResult((proof, verdict))
    }
}

/// Runs the compute stages on one device slot.
pub struct ComputeActor {
    engine: Box<dyn ComputeEngine>,
}

impl ComputeActor {
    /// A compute actor over its slot's engine.
    pub fn new(engine: Box<dyn ComputeEngine>) -> Self {
        ComputeActor { engine }
    }
}

impl Actor for ComputeActor {
    type Context = SyncContext<Self>;
}

impl Named for ComputeActor {
    const NAME: &'static str = actor::COMPUTE;
}

impl Handler<MakeResident> for ComputeActor {
    type Result = Result<ResidentData, StageError>;

    fn handle(&mut self, msg: MakeResident, _: &mut SyncContext<Self>) -> Self::Result {
        let _span = info_span!("make_resident", slot = %self.engine.label()).entered();
        let t = Instant::now();
        let engine = &mut self.engine;
        let r = guarded("make_resident", || {
            engine.make_resident(&msg.pk, msg.residency, msg.bytes)
        })?;
        telemetry::stage("make_resident", t.secs());
        Ok(r)
    }
}
impl Handler<HoldTails> for ComputeActor {
    type Result = Result<ResidentData, StageError>;

    fn handle(&mut self, msg: HoldTails, _: &mut SyncContext<Self>) -> Self::Result {
        let _span = info_span!("hold_tails", slot = %self.engine.label()).entered();
        let t = Instant::now();
        let engine = &mut self.engine;
        let r = guarded("hold_tails", || {
            engine.hold_tails(&msg.plan, msg.g2, msg.resident.data(), msg.bytes)
        })?;
        telemetry::stage("hold_tails", t.secs());
        Ok(r)
    }
}

crate::counted_handlers!(ComputeActor);

impl Handler<ComputeH> for ComputeActor {
    type Result = Result<HStage, StageError>;

    fn handle(&mut self, msg: ComputeH, _: &mut SyncContext<Self>) -> Self::Result {
        let _span = info_span!("h_stage", slot = %self.engine.label()).entered();
        msg.cancel.check()?;
        let ComputeH {
            pk,
            evals,
            resident,
            lease,
            ..
        } = msg;
        let bytes = lease.bytes();
        let engine = &mut self.engine;
        let r = guarded("h", || {
            engine.h_stage(&pk, evals, resident.as_ref().map(|r| r.data()), bytes)
        });
        // the stage returned: nothing of it is in flight, its memory is back in the pool
        drop(resident);
        drop(lease);
        let r = r?;
        telemetry::stage("h_poly", r.h_poly_s);
        telemetry::stage("msm_h", r.msm_h_s);
        if let Some(w) = r.turn_wait_s {
            telemetry::stage("kernel_turn", w);
        }
        Ok(r)
    }
}

impl Handler<ComputeSparseG1> for ComputeActor {
    type Result = Result<SparseMsms, StageError>;

    fn handle(&mut self, msg: ComputeSparseG1, _: &mut SyncContext<Self>) -> Self::Result {
        let _span = info_span!("msm_g1_sparse", slot = %self.engine.label()).entered();
        msg.cancel.check()?;
        let t = Instant::now();
        let ComputeSparseG1 {
            pk,
            plan,
            g2,
            resident,
            tails,
            lease,
            ..
        } = msg;
        let bytes = lease.bytes();
        let engine = &mut self.engine;
        let r = guarded("msm_g1_sparse", || {
            engine.sparse(
                &pk,
                &plan,
                g2,
                resident.as_ref().map(|r| r.data()),
                tails.as_ref().map(|r| r.data()),
                bytes,
            )
        });
        drop(resident);
        drop(tails);
        drop(lease);
        let r = r?;
        let waited = r.turn_wait_s.unwrap_or(0.0);
        if r.turn_wait_s.is_some() {
            telemetry::stage("kernel_turn", waited);
        }
        telemetry::stage("msm_g1_sparse", (t.secs() - waited).max(0.0));
        Ok(r)
    }
}
