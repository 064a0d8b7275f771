//! The partition driver: one future per admitted partition, run on the coordinator's context.
//! It sends a partition's messages to the stage actors one after another and awaits each reply;
//! the buffers move with the messages (see [`crate::messages`]).
//!
//! ```text
//! LoadParams ─► Synthesize ─► RequestLease ─► ComputeH ‖ PlanMsm ─► RequestLease
//!            ─► ComputeSparseG1 ‖ MsmG2 ─► AssembleVerify
//! ```
//! (`‖`: the two run at once on different actors.)
//!
//! The driver records each stage transition in the partition's [`Progress`], which the
//! coordinator reads for the status page.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use blstrs::{Bls12, Scalar};
use proofline_groth16::{MsmResults, Proof, SharedProvingKey, SynthesizedPartition};
use proofline_jobs::{CircuitThunk, ParamsSpec};
use proofline_wire::PartitionStage;

use crate::allocator::{Lease, VramAllocator};
use crate::job::{now_ms, StageTimings};
use crate::messages::*;
use crate::telemetry::{self, Mailbox, Secs};
use crate::workers::{ComputeActor, CpuMsmActor, ParamsLoader, SynthesisActor};

/// Addresses of the stage actors.
#[derive(Clone)]
pub struct Stages {
    /// Parameter loader.
    pub params: Mailbox<ParamsLoader>,
    /// Synthesis pool.
    pub synthesis: Mailbox<SynthesisActor>,
    /// CPU-MSM pool.
    pub cpu_msm: Mailbox<CpuMsmActor>,
    /// Memory allocator of the compute device.
    pub allocator: Mailbox<VramAllocator>,
    /// Compute actors of the device.
    pub compute: Mailbox<ComputeActor>,
    /// The compute device's label (`host`, `cuda:0`), reported per partition.
    pub device: Arc<str>,
}

/// Where one admitted partition is: its stage and when it entered it, in one atomic word
/// (stage index in the top 8 bits, Unix milliseconds below), so that a reader never sees a
/// stage with another stage's start time. Written by the driver, read by the coordinator.
#[derive(Debug)]
pub(crate) struct Progress(AtomicU64);

const MS_BITS: u32 = 56;

impl Progress {
    /// A partition just admitted: looking up its parameters.
    pub(crate) fn admitted() -> Self {
        let p = Progress(AtomicU64::new(0));
        p.enter(PartitionStage::Params);
        p
    }

    /// Records entering `stage` now.
    pub(crate) fn enter(&self, stage: PartitionStage) {
        let word = ((stage.index() as u64) << MS_BITS) | (now_ms() & ((1 << MS_BITS) - 1));
        self.0.store(word, Ordering::Relaxed);
    }

    /// The stage and the seconds spent in it so far.
    pub(crate) fn read(&self) -> (PartitionStage, f64) {
        let word = self.0.load(Ordering::Relaxed);
        let stage = PartitionStage::ALL
            .get((word >> MS_BITS) as usize)
            .copied()
            .unwrap_or(PartitionStage::Params);
        let since = word & ((1 << MS_BITS) - 1);
        (stage, now_ms().saturating_sub(since) as f64 / 1e3)
    }
}

/// Bytes of device memory the H stage of a partition holds: a, b, c over the domain.
fn h_stage_bytes(constraints: usize) -> u64 {
    let n = constraints.max(1).next_power_of_two() as u64;
    3 * n * std::mem::size_of::<Scalar>() as u64
}

/// Bytes the sparse G1 stage gathers: the tail bases and scalars of A, B and L.
fn sparse_stage_bytes(plan: &proofline_groth16::MsmPlan) -> u64 {
    let tail = (plan.a.tail_index.len() + plan.b.tail_index.len() + plan.l.tail_index.len()) as u64;
    let point = std::mem::size_of::<blstrs::G1Affine>() as u64;
    tail * (point + 32) + 1
}

/// Asks the allocator for a lease, accounting the wait in the partition's timings.
async fn request_lease(
    stages: &Stages,
    bytes: u64,
    owner: String,
    t: &mut StageTimings,
    progress: &Progress,
) -> Result<Lease, StageError> {
    progress.enter(PartitionStage::LeaseWait);
    let s = Instant::now();
    let lease = stages
        .allocator
        .send(RequestLease { bytes, owner })
        .await??;
    t.lease_wait_s += s.secs();
    Ok(lease)
}

/// Awaits `f`, returning its output and the seconds it took.
async fn timed<F: std::future::Future>(f: F) -> (F::Output, f64) {
    let s = Instant::now();
    let r = f.await;
    (r, s.secs())
}

/// Drives one partition through the stages, recording each in `progress`. Returns the verified
/// proof and the stage timings.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn drive_partition(
    stages: Stages,
    job: JobId,
    k: usize,
    params: ParamsSpec,
    circuit: CircuitThunk,
    expected: Vec<Scalar>,
    cancel: CancelToken,
    progress: Arc<Progress>,
) -> (
    Result<(Proof<Bls12>, SharedProvingKey), StageError>,
    StageTimings,
) {
    let mut t = StageTimings::default();
    let start = Instant::now();
    let res = drive_stages(
        &stages, &job, k, params, circuit, expected, cancel, &mut t, &progress,
    )
    .await;
    t.total_s = start.secs();
    telemetry::stage("partition_total", t.total_s);
    (res, t)
}

#[allow(clippy::too_many_arguments)]
async fn drive_stages(
    stages: &Stages,
    job: &JobId,
    k: usize,
    params: ParamsSpec,
    circuit: CircuitThunk,
    expected: Vec<Scalar>,
    cancel: CancelToken,
    t: &mut StageTimings,
    progress: &Progress,
) -> Result<(Proof<Bls12>, SharedProvingKey), StageError> {
    progress.enter(PartitionStage::Params);
    let s = Instant::now();
    let pk = stages
        .params
        .send(LoadParams {
            spec: params.clone(),
        })
        .await??;
    t.params_s = s.secs();

    progress.enter(PartitionStage::Synthesis);
    let s = Instant::now();
    let synth = stages
        .synthesis
        .send(Synthesize {
            job: job.clone(),
            partition: k,
            circuit,
            expected_inputs: expected.clone(),
            params,
            shape: pk.shape(),
            cancel: cancel.clone(),
        })
        .await??;
    t.synthesis_s = s.secs();
    cancel.check()?;

    let SynthesizedPartition {
        a,
        b,
        c,
        assignment,
    } = synth;
    let assignment = Arc::new(assignment);
    let lease = request_lease(
        stages,
        h_stage_bytes(a.len()),
        format!("{job}/{k}/h"),
        t,
        progress,
    )
    .await?;

    // H on the compute actor while the CPU-MSM actor splits the sparse scalars.
    let h_fut = stages.compute.send(ComputeH {
        pk: pk.clone(),
        a,
        b,
        c,
        lease,
        cancel: cancel.clone(),
    });
    progress.enter(PartitionStage::H);
    let plan_fut = stages.cpu_msm.send(PlanMsm {
        assignment: assignment.clone(),
    });
    let ((h, h_s), (plan, plan_s)) = tokio::join!(timed(h_fut), timed(plan_fut));
    t.h_s = h_s;
    t.msm_plan_s = plan_s;
    let h = h??;
    let plan = Arc::new(plan??);
    drop(assignment);
    cancel.check()?;

    let lease = request_lease(
        stages,
        sparse_stage_bytes(&plan),
        format!("{job}/{k}/msm"),
        t,
        progress,
    )
    .await?;

    // Sparse G1 MSMs on the compute actor while the G2 MSM runs on a CPU-MSM actor.
    let g1_fut = stages.compute.send(ComputeSparseG1 {
        pk: pk.clone(),
        plan: plan.clone(),
        lease,
        cancel: cancel.clone(),
    });
    progress.enter(PartitionStage::Msm);
    let g2_fut = stages.cpu_msm.send(MsmG2 {
        pk: pk.clone(),
        plan: plan.clone(),
        cancel: cancel.clone(),
    });
    let ((g1, g1_s), (g2, g2_s)) = tokio::join!(timed(g1_fut), timed(g2_fut));
    t.msm_g1_s = g1_s;
    t.msm_g2_s = g2_s;
    let (l, a, b_g1) = g1??;
    let b_g2 = g2??;
    drop(plan);

    progress.enter(PartitionStage::Verify);
    let s = Instant::now();
    let proof = stages
        .cpu_msm
        .send(AssembleVerify {
            pk: pk.clone(),
            results: MsmResults {
                h,
                l,
                a,
                b_g1,
                b_g2,
            },
            public_inputs: expected,
        })
        .await??;
    t.verify_s = s.secs();
    Ok((proof, pk))
}
