//! The worker actors, each on its own OS threads (`SyncArbiter`):
//!
//! * [`ParamsLoader`]: reads parameter files once (blocking I/O, seconds to minutes);
//! * [`SynthesisActor`]: runs circuits into a, b, c and the assignment;
//! * [`CpuMsmActor`]: MSM preparation (0/1/tail split), the G2 MSM, assembly and verification;
//! * [`ComputeActor`]: the H polynomial and the G1 MSMs through a [`ProverBackend`] — the CPU
//!   backend now; on a GPU, one actor per device slot owning its context and streams.
//!
//! Handlers do the work synchronously on their thread; the messages carry buffers by move.

use std::sync::Arc;
use std::time::Instant;

use actix::prelude::*;
use blstrs::{Bls12, G1Projective, G2Projective};
use proofline_groth16::prover;
use proofline_groth16::synthesis::Synthesizer;
use proofline_groth16::{
    MsmPlan, Proof, ProverBackend, ProverError, SharedProvingKey, SynthesizedPartition,
};
use proofline_jobs::{JobError, ParamsStore};
use tracing::info_span;

use crate::messages::*;
use crate::telemetry::{self, actor, Busy, Secs};

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

impl Handler<LoadParams> for ParamsLoader {
    type Result = Result<SharedProvingKey, JobError>;

    fn handle(&mut self, msg: LoadParams, _: &mut SyncContext<Self>) -> Self::Result {
        let _busy = Busy::start(actor::PARAMS);
        let _span = info_span!("load_params", params = %msg.spec.id).entered();
        self.store.get(&msg.spec)
    }
}

/// Synthesizes partitions.
#[derive(Default)]
pub struct SynthesisActor;

impl Actor for SynthesisActor {
    type Context = SyncContext<Self>;
}

impl Handler<Synthesize> for SynthesisActor {
    type Result = Result<SynthesizedPartition, StageError>;

    fn handle(&mut self, msg: Synthesize, _: &mut SyncContext<Self>) -> Self::Result {
        let _busy = Busy::start(actor::SYNTHESIS);
        let _span = info_span!("synthesize", job = %msg.job, partition = msg.partition).entered();
        msg.cancel.check()?;
        let t = Instant::now();
        let circuit = (msg.circuit)()?;
        let shape = msg.pk.shape();
        let mut cs = Synthesizer::with_capacity(shape.h + 1, shape.l);
        circuit
            .synthesize_into(&mut cs)
            .map_err(ProverError::from)?;
        let synth = cs.finish();
        prover::check_shape(&msg.pk, &synth)?;
        if prover::public_inputs(&synth.assignment) != msg.expected_inputs.as_slice() {
            return Err(StageError::PublicInputsMismatch {
                partition: msg.partition,
            });
        }
        telemetry::stage("synthesis", t.secs());
        tracing::debug!(
            constraints = synth.num_constraints(),
            aux = synth.assignment.aux.len(),
            secs = t.secs(),
            "synthesized"
        );
        Ok(synth)
    }
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

impl Handler<PlanMsm> for CpuMsmActor {
    type Result = MessageResult<PlanMsm>;

    fn handle(&mut self, msg: PlanMsm, _: &mut SyncContext<Self>) -> Self::Result {
        let _busy = Busy::start(actor::CPU_MSM);
        let t = Instant::now();
        let plan = MsmPlan::build(&msg.assignment);
        telemetry::stage("msm_plan", t.secs());
        MessageResult(plan)
    }
}

impl Handler<MsmG2> for CpuMsmActor {
    type Result = Result<G2Projective, StageError>;

    fn handle(&mut self, msg: MsmG2, _: &mut SyncContext<Self>) -> Self::Result {
        let _busy = Busy::start(actor::CPU_MSM);
        msg.cancel.check()?;
        let t = Instant::now();
        let r = prover::msm_b_g2(self.backend.as_ref(), &msg.pk, &msg.plan)?;
        telemetry::stage("msm_g2", t.secs());
        Ok(r)
    }
}

impl Handler<AssembleVerify> for CpuMsmActor {
    type Result = Result<Proof<Bls12>, StageError>;

    fn handle(&mut self, msg: AssembleVerify, _: &mut SyncContext<Self>) -> Self::Result {
        let _busy = Busy::start(actor::CPU_MSM);
        let t = Instant::now();
        let (r, s) = prover::random_r_s(&mut rand::rngs::OsRng);
        let proof = prover::assemble(&msg.pk, &msg.results, r, s);
        if !prover::verify(&msg.pk, &proof, &msg.public_inputs)? {
            return Err(ProverError::VerificationFailed.into());
        }
        telemetry::stage("assemble_verify", t.secs());
        Ok(proof)
    }
}

/// Runs the compute stages on one device slot.
pub struct ComputeActor {
    backend: Arc<dyn ProverBackend>,
}

impl ComputeActor {
    /// A compute actor over `backend`.
    pub fn new(backend: Arc<dyn ProverBackend>) -> Self {
        ComputeActor { backend }
    }
}

impl Actor for ComputeActor {
    type Context = SyncContext<Self>;
}

impl Handler<ComputeH> for ComputeActor {
    type Result = Result<G1Projective, StageError>;

    fn handle(&mut self, msg: ComputeH, _: &mut SyncContext<Self>) -> Self::Result {
        let _busy = Busy::start(actor::COMPUTE);
        msg.cancel.check()?;
        let ComputeH {
            pk, a, b, c, lease, ..
        } = msg;
        let t = Instant::now();
        let h = prover::compute_h(self.backend.as_ref(), a, b, c)?;
        telemetry::stage("h_poly", t.secs());
        let t = Instant::now();
        let sum = prover::msm_h(self.backend.as_ref(), &pk, &h)?;
        telemetry::stage("msm_h", t.secs());
        drop(h);
        drop(lease);
        Ok(sum)
    }
}

impl Handler<ComputeSparseG1> for ComputeActor {
    type Result = Result<(G1Projective, G1Projective, G1Projective), StageError>;

    fn handle(&mut self, msg: ComputeSparseG1, _: &mut SyncContext<Self>) -> Self::Result {
        let _busy = Busy::start(actor::COMPUTE);
        msg.cancel.check()?;
        let t = Instant::now();
        let r = prover::msm_sparse_g1(self.backend.as_ref(), &msg.pk, &msg.plan)?;
        telemetry::stage("msm_g1_sparse", t.secs());
        drop(msg.lease);
        Ok(r)
    }
}
