//! The partition driver: one future per admitted partition, run on the coordinator's context.
//! It sends a partition's messages to the stage actors one after another and awaits each reply;
//! the buffers move with the messages (see [`crate::messages`]).
//!
//! ```text
//! LoadParams ─► [synthesis permit] Synthesize
//!            ─► [compute permit] (device chosen) ─► AcquireResident [─► MakeResident ─► RegisterResident]
//!            ─► RequestLease ─► ComputeH ‖ PlanMsm
//!            ─► [continue permit] RequestLease ─► ComputeSparseG1 ‖ MsmG2 ─► AssembleVerify
//! ```
//! (`‖`: the two run at once on different actors; `[permit]`: asked of the
//! [`crate::scheduler::StageScheduler`] before the stage and returned after it, so that the
//! highest-ranked partition waiting for a stage goes next; `[continue]`: the compute permit is
//! handed back between H and the G1 MSMs and kept unless a better-ranked partition waits.)
//! `MsmG2` goes to a CPU-MSM actor only where the device places the G2 MSM there
//! ([`G2Placement::CpuMsmActor`], the CPU backend); a GPU computes B in G2 in its sparse stage
//! ([`G2Placement::SparseStage`]), under the same compute permit and lease. Every GPU stage of
//! a partition runs on the device chosen for it, with that device's allocator, slots and
//! resident copy of the parameters; the byte counts of the leases come from the device's
//! [`DeviceSizing`].
//!
//! [`compute_partition`] is the part from the device choice to the MSM results; the stage
//! harness drives it directly with synthetic partitions.
//!
//! The driver records each stage transition, and the device chosen, in the partition's
//! [`Progress`], which the coordinator reads for the status page.
//!
//! [`DeviceSizing`]: crate::compute::DeviceSizing

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use blstrs::{Bls12, G2Projective, Scalar};
use group::Group;
use proofline_groth16::{
    Assignment, BackendError, MsmPlan, MsmResults, Proof, ProverError, SharedProvingKey,
    SynthesizedPartition,
};
use proofline_jobs::{CircuitThunk, ParamsSpec};
use proofline_wire::PartitionStage;

use crate::allocator::Lease;
use crate::compute::{G2Placement, SparseMsms};
use crate::devices::{choose_device, ensure_resident, ensure_tails, pin_tails, DeviceStages};
use crate::job::{now_ms, StageTimings};
use crate::messages::*;
use crate::scheduler::{Rank, StageClass, StagePermit, StageScheduler};
use crate::telemetry::{self, Mailbox, Secs};
use crate::workers::{CpuMsmActor, ParamsLoader, SynthesisActor};

/// Addresses of the stage actors.
#[derive(Clone)]
pub struct Stages {
    /// Parameter loader.
    pub params: Mailbox<ParamsLoader>,
    /// Synthesis pool.
    pub synthesis: Mailbox<SynthesisActor>,
    /// CPU-MSM pool.
    pub cpu_msm: Mailbox<CpuMsmActor>,
    /// The compute devices.
    pub devices: Arc<Vec<DeviceStages>>,
    /// Permits of the heavy stages, in rank order.
    pub scheduler: Mailbox<StageScheduler>,
}

impl Stages {
    /// The label of the only compute device, if there is one device: every partition runs
    /// there, so it is known from admission on.
    pub(crate) fn only_device(&self) -> Option<Arc<str>> {
        match self.devices.as_slice() {
            [d] => Some(d.label.as_str().into()),
            _ => None,
        }
    }
}

/// Where one admitted partition is: its stage and when it entered it, in one atomic word
/// (stage index in the top 8 bits, Unix milliseconds below), so that a reader never sees a
/// stage with another stage's start time; and the device its compute stages run on, once
/// chosen. Written by the driver, read by the coordinator.
#[derive(Debug)]
pub struct Progress {
    word: AtomicU64,
    device: OnceLock<Arc<str>>,
}

const MS_BITS: u32 = 56;

impl Progress {
    /// A partition just admitted: looking up its parameters. `device`: where it will compute,
    /// when that is known already (a single device).
    pub fn admitted(device: Option<Arc<str>>) -> Self {
        let p = Progress {
            word: AtomicU64::new(0),
            device: OnceLock::new(),
        };
        if let Some(d) = device {
            let _ = p.device.set(d);
        }
        p.enter(PartitionStage::Params);
        p
    }

    /// Records entering `stage` now.
    pub fn enter(&self, stage: PartitionStage) {
        let word = ((stage.index() as u64) << MS_BITS) | (now_ms() & ((1 << MS_BITS) - 1));
        self.word.store(word, Ordering::Relaxed);
    }

    /// Records the device the partition's compute stages run on (the first call counts).
    pub fn on_device(&self, label: &str) {
        let _ = self.device.get_or_init(|| label.into());
    }

    /// The stage and the seconds spent in it so far.
    pub fn read(&self) -> (PartitionStage, f64) {
        let word = self.word.load(Ordering::Relaxed);
        let stage = PartitionStage::ALL
            .get((word >> MS_BITS) as usize)
            .copied()
            .unwrap_or(PartitionStage::Params);
        let since = word & ((1 << MS_BITS) - 1);
        (stage, now_ms().saturating_sub(since) as f64 / 1e3)
    }

    /// The device the partition computes on, once known.
    pub fn device(&self) -> Option<String> {
        self.device.get().map(|d| d.to_string())
    }
}

/// Where the sparse queries' 0/1/tail split comes from.
pub enum PlanSource {
    /// Built from the assignment on a CPU-MSM actor, while the H stage runs.
    Assignment(Arc<Assignment>),
    /// Already built (a harness's synthetic partition).
    Ready(Arc<MsmPlan>),
}

/// Whether the G2 MSM runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum G2Stage {
    /// Where the device places it ([`G2Placement`]): in its sparse stage on a GPU, on a
    /// CPU-MSM actor beside the sparse G1 MSMs on the CPU backend.
    Run,
    /// Not at all (stage-level load tests of the G1 side; the results make no proof).
    Skip,
}

/// A partition's compute stages: what [`compute_partition`] needs.
pub struct ComputeInput {
    /// "job/partition", for logs.
    pub owner: String,
    /// The parameter set's key (resident sets are per key and device).
    pub params_key: String,
    /// The parameters.
    pub pk: SharedProvingKey,
    /// The evaluations (moved into the H stage).
    pub evals: Arc<Evaluations>,
    /// The split, or what to build it from.
    pub plan: PlanSource,
    /// Whether the G2 MSM runs.
    pub g2: G2Stage,
    /// Cancellation.
    pub cancel: CancelToken,
}

/// Asks an allocator for a lease, accounting the wait in the partition's timings.
async fn request_lease(
    dev: &DeviceStages,
    bytes: u64,
    owner: String,
    t: &mut StageTimings,
    progress: &Progress,
) -> Result<Lease, StageError> {
    progress.enter(PartitionStage::LeaseWait);
    let s = Instant::now();
    let lease = dev.allocator.send(RequestLease { bytes, owner }).await??;
    t.lease_wait_s += s.secs();
    Ok(lease)
}

/// Waits for a permit of `class`; the wait counts as part of the stage that follows.
async fn permit(stages: &Stages, class: StageClass, rank: Rank) -> Result<StagePermit, StageError> {
    stages
        .scheduler
        .send(AcquireStage { class, rank })
        .await?
        .ok_or_else(|| StageError::Mailbox("stage scheduler stopped".into()))
}

/// Whether a partition's compute stages wait for permits of the stage scheduler.
pub enum ComputeGate<'a> {
    /// Through the scheduler, in rank order: a permit before the device is chosen, handed back
    /// between H and the sparse MSMs (kept unless a better-ranked partition waits).
    Ranked {
        /// The pipeline's stage scheduler.
        scheduler: &'a Mailbox<StageScheduler>,
        /// The partition's job rank.
        rank: Rank,
    },
    /// Straight to the device (the stage harness, which drives the devices alone).
    Open,
}

impl ComputeGate<'_> {
    /// Waits for a compute permit (none when open).
    async fn enter(&self) -> Result<Option<StagePermit>, StageError> {
        match self {
            ComputeGate::Ranked { scheduler, rank } => scheduler
                .send(AcquireStage {
                    class: StageClass::Compute,
                    rank: *rank,
                })
                .await?
                .map(Some)
                .ok_or_else(|| StageError::Mailbox("stage scheduler stopped".into())),
            ComputeGate::Open => Ok(None),
        }
    }

    /// Hands the permit back at the boundary between H and the sparse MSMs; it comes back at
    /// once unless a better-ranked partition waits for the compute stage.
    async fn boundary(&self, held: Option<StagePermit>) -> Result<Option<StagePermit>, StageError> {
        match (self, held) {
            (ComputeGate::Ranked { scheduler, rank }, Some(permit)) => scheduler
                .send(ContinueStage {
                    permit,
                    rank: *rank,
                })
                .await?
                .map(Some)
                .ok_or_else(|| StageError::Mailbox("stage scheduler stopped".into())),
            (_, held) => Ok(held),
        }
    }
}

/// Awaits `f`, returning its output and the seconds it took.
async fn timed<F: std::future::Future>(f: F) -> (F::Output, f64) {
    let s = Instant::now();
    let r = f.await;
    (r, s.secs())
}

/// From the evaluations and the split to the five MSM results: picks a device, gets the
/// parameters resident there, runs the H stage (with the split built alongside), has the
/// device hold the set's tails if it holds none yet (from this split), and runs the sparse G1
/// stage (with the G2 MSM alongside), each under a lease of the bytes the device's sizing
/// gives, recording each stage and the device in `progress`. Returns the results and the
/// label of the device.
pub async fn compute_partition(
    devices: &[DeviceStages],
    cpu_msm: &Mailbox<CpuMsmActor>,
    gate: ComputeGate<'_>,
    input: ComputeInput,
    t: &mut StageTimings,
    progress: &Progress,
) -> Result<(MsmResults, String), StageError> {
    let ComputeInput {
        owner,
        params_key,
        pk,
        evals,
        plan,
        g2,
        cancel,
    } = input;
    // Permit waits show as (and are timed with) the stage they lead to.
    progress.enter(PartitionStage::H);
    let s = Instant::now();
    let permit = gate.enter().await?;
    let mut permit_wait_s = s.secs();
    let dev = choose_device(devices, &params_key).await?;
    progress.on_device(&dev.label);
    progress.enter(PartitionStage::Params);
    let resident = ensure_resident(dev, &params_key, &owner, &pk, t).await?;
    let residency = resident.as_ref().map(|r| r.residency());
    // the set's held tails, pinned with it where the device has them already
    let held = match &resident {
        Some(_) => pin_tails(dev, &params_key).await?,
        None => None,
    };
    cancel.check()?;

    // H on a compute slot while a CPU-MSM actor splits the sparse scalars.
    let bytes = dev.sizing.h_stage(&pk, residency);
    let lease = request_lease(dev, bytes, format!("{owner}/h"), t, progress).await?;
    let h_fut = dev.compute.send(ComputeH {
        pk: pk.clone(),
        evals,
        resident: resident.clone(),
        lease,
        cancel: cancel.clone(),
    });
    progress.enter(PartitionStage::H);
    let (h, plan) = match plan {
        PlanSource::Ready(p) => {
            let (h, h_s) = timed(h_fut).await;
            t.h_s = permit_wait_s + h_s;
            (h??, p)
        }
        PlanSource::Assignment(assignment) => {
            let plan_fut = cpu_msm.send(PlanMsm { assignment });
            let ((h, h_s), (plan, plan_s)) = tokio::join!(timed(h_fut), timed(plan_fut));
            t.h_s = permit_wait_s + h_s;
            t.msm_plan_s = plan_s;
            (h??, Arc::new(plan??))
        }
    };
    cancel.check()?;
    progress.enter(PartitionStage::Msm);
    let s = Instant::now();
    let permit = gate.boundary(permit).await?;
    permit_wait_s = s.secs();

    // Sparse G1 MSMs on a compute slot; the G2 MSM in the same stage (a GPU) or on a CPU-MSM
    // actor meanwhile (the CPU backend).
    let (in_stage, on_cpu) = match (g2, dev.g2) {
        (G2Stage::Run, G2Placement::SparseStage) => (G2Stage::Run, G2Stage::Skip),
        (G2Stage::Run, G2Placement::CpuMsmActor) => (G2Stage::Skip, G2Stage::Run),
        (G2Stage::Skip, _) => (G2Stage::Skip, G2Stage::Skip),
    };
    // the device's held tails of the set: held now from this split where it has none yet
    let tails = match (held, &resident) {
        (Some(held), _) => (held.residency() == Residency::Resident).then_some(held),
        (None, Some(r)) => {
            progress.enter(PartitionStage::Params);
            let tails = ensure_tails(dev, &params_key, &owner, &pk, &plan, in_stage, r, t).await?;
            progress.enter(PartitionStage::Msm);
            tails
        }
        (None, None) => None,
    };
    let bytes = dev
        .sizing
        .sparse_stage(&plan, residency, tails.as_ref().map(|r| r.data()));
    let lease = request_lease(dev, bytes, format!("{owner}/msm"), t, progress).await?;
    let g1_fut = dev.compute.send(ComputeSparseG1 {
        pk: pk.clone(),
        plan: plan.clone(),
        g2: in_stage,
        resident,
        tails,
        lease,
        cancel: cancel.clone(),
    });
    progress.enter(PartitionStage::Msm);
    let (g1, b_g2) = match on_cpu {
        G2Stage::Run => {
            let g2_fut = cpu_msm.send(MsmG2 {
                pk: pk.clone(),
                plan: plan.clone(),
                cancel: cancel.clone(),
            });
            let ((g1, g1_s), (g2, g2_s)) = tokio::join!(timed(g1_fut), timed(g2_fut));
            t.msm_g1_s = permit_wait_s + g1_s;
            t.msm_g2_s = g2_s;
            (g1??, g2??)
        }
        G2Stage::Skip => {
            let (g1, g1_s) = timed(g1_fut).await;
            t.msm_g1_s = permit_wait_s + g1_s;
            let g1: SparseMsms = g1??;
            let b_g2 = match (in_stage, g1.b_g2) {
                (G2Stage::Run, Some(b_g2)) => b_g2,
                (G2Stage::Run, None) => {
                    return Err(StageError::Prover(ProverError::Backend(
                        BackendError::Device("the sparse stage returned no B in G2".into()),
                    )))
                }
                (G2Stage::Skip, _) => G2Projective::identity(),
            };
            (g1, b_g2)
        }
    };
    drop(permit);
    Ok((
        MsmResults {
            h: h.h,
            l: g1.l,
            a: g1.a,
            b_g1: g1.b_g1,
            b_g2,
        },
        dev.label.clone(),
    ))
}

/// Drives one partition through the stages, recording each in `progress`. Returns the verified
/// proof and the stage timings.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn drive_partition(
    stages: Stages,
    job: JobId,
    k: usize,
    rank: Rank,
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
        &stages, &job, k, rank, params, circuit, expected, cancel, &mut t, &progress,
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
    rank: Rank,
    params: ParamsSpec,
    circuit: CircuitThunk,
    expected: Vec<Scalar>,
    cancel: CancelToken,
    t: &mut StageTimings,
    progress: &Progress,
) -> Result<(Proof<Bls12>, SharedProvingKey), StageError> {
    progress.enter(PartitionStage::Params);
    let s = Instant::now();
    let params_key = params.id.clone();
    let pk = stages
        .params
        .send(LoadParams {
            spec: params.clone(),
        })
        .await??;
    t.params_s = s.secs();

    progress.enter(PartitionStage::Synthesis);
    let s = Instant::now();
    let synthesis_permit = permit(stages, StageClass::Synthesis, rank).await?;
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
    drop(synthesis_permit);
    cancel.check()?;

    let SynthesizedPartition { a, b, assignment } = synth;
    let input = ComputeInput {
        owner: format!("{job}/{k}"),
        params_key,
        pk: pk.clone(),
        evals: Arc::new(Evaluations { a, b }),
        plan: PlanSource::Assignment(Arc::new(assignment)),
        g2: G2Stage::Run,
        cancel,
    };
    let gate = ComputeGate::Ranked {
        scheduler: &stages.scheduler,
        rank,
    };
    let (results, device) =
        compute_partition(&stages.devices, &stages.cpu_msm, gate, input, t, progress).await?;
    tracing::debug!(%device, "partition computed");

    progress.enter(PartitionStage::Verify);
    let s = Instant::now();
    let proof = stages
        .cpu_msm
        .send(AssembleVerify {
            pk: pk.clone(),
            results,
            public_inputs: expected,
        })
        .await??;
    t.verify_s = s.secs();
    Ok((proof, pk))
}
