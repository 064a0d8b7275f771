//! The GPU as the pipeline's compute devices: per GPU, the device handle (owned by the
//! allocator, through [`GpuMemory`]), one [`GpuEngine`] per compute slot (each owns a
//! `GpuSlot`: its own stream; it makes resident sets, holds their tails and runs the stages)
//! and the stage sizes of proofline-gpu's byte formulas ([`GpuSizing`]).

use std::sync::Arc;
use std::time::Instant;

use proofline_actors::compute::{domain_size, G2Placement, HStage, SparseMsms};
use proofline_actors::messages::{Evaluations, PoolUsage, Residency, ResidentSizes, StageError};
use proofline_actors::resident::ResidentData;
use proofline_actors::{ComputeEngine, DeviceSetup, DeviceSizing, G2Stage, MemoryDevice};
use proofline_config::{Count, HeldTails as HeldTailsMode, OnesPairSums};
use proofline_gpu::bytes::{
    h_stage_lease, held_tails_bytes, held_tails_granted, resident_bytes, resident_lease,
    slots_that_fit, sparse_stage_bytes, sparse_stage_bytes_held,
};
use proofline_gpu::{
    DeviceOptions, GpuDevice, GpuError, GpuSlot, HeldTails, HostQueries, QueryLens, ResidentSet,
    SparseGroups, TailLayout, Tails,
};
use proofline_groth16::msm::MsmPlan;
use proofline_groth16::{BackendError, ProverError, ProvingKey};

/// The allocator's view of a GPU: the device handle, whose device-global calls only the
/// allocator makes.
pub struct GpuMemory {
    device: GpuDevice,
}

impl MemoryDevice for GpuMemory {
    fn label(&self) -> String {
        self.device.label()
    }

    /// The allocator sets its budget: with the driver's default threshold (0) every
    /// synchronisation hands freed memory back and each allocation of the next stage is cold
    /// (milliseconds per GiB). Memory goes back to the device only when the allocator trims.
    fn set_release_threshold(&mut self, bytes: u64) -> Result<(), String> {
        self.device
            .set_pool_release_threshold(bytes)
            .map_err(|e| e.to_string())
    }

    fn pool_usage(&mut self) -> Option<PoolUsage> {
        let u = self.device.pool_usage().ok()?;
        Some(PoolUsage {
            used: u.used,
            reserved: u.reserved,
            used_high: u.used_high,
            reserved_high: u.reserved_high,
        })
    }

    fn trim(&mut self) -> Result<(), String> {
        self.device.trim_pool(0).map_err(|e| e.to_string())
    }

    fn reset_high_water(&mut self) -> Result<(), String> {
        self.device
            .reset_pool_high_water()
            .map_err(|e| e.to_string())
    }

    fn synchronize(&mut self) -> Result<(), String> {
        self.device.synchronize_device().map_err(|e| e.to_string())
    }
}

fn stage_error(e: GpuError) -> StageError {
    StageError::Prover(ProverError::Backend(BackendError::Device(e.to_string())))
}

fn residency(r: Residency) -> proofline_gpu::Residency {
    match r {
        Residency::Resident => proofline_gpu::Residency::Resident,
        Residency::Streamed => proofline_gpu::Residency::Streamed,
    }
}

/// The query bases of `pk` as proofline-gpu takes them.
fn host_queries(pk: &ProvingKey) -> HostQueries<'_> {
    let p = pk.params();
    HostQueries {
        h: &p.h,
        l: &p.l,
        a: &p.a,
        b_g1: &p.b_g1,
        b_g2: &p.b_g2,
    }
}

/// log2 of `pk`'s domain (a power of two).
fn log_n(pk: &ProvingKey) -> Result<u32, StageError> {
    let n = domain_size(pk);
    if !n.is_power_of_two() {
        return Err(stage_error(GpuError::InvalidInput(format!(
            "an H query of {} points is not a power-of-two domain minus one",
            n - 1
        ))));
    }
    Ok(n.trailing_zeros())
}

/// The ones' subset sums a resident set asks for under `pipeline.ones_pair_sums`.
fn ones_sums(p: OnesPairSums) -> proofline_gpu::OnesSums {
    match p {
        OnesPairSums::Off => proofline_gpu::OnesSums::Absent,
        OnesPairSums::WhereRoom => proofline_gpu::OnesSums::Pairs,
        OnesPairSums::TriplesWhereRoom => proofline_gpu::OnesSums::Triples,
    }
}

fn resident_set(data: Option<&ResidentData>) -> Result<&ResidentSet, StageError> {
    data.and_then(|d| d.downcast_ref::<ResidentSet>())
        .ok_or_else(|| {
            stage_error(GpuError::InvalidInput(
                "a GPU stage without the parameters' resident set".into(),
            ))
        })
}

/// The tails a device holds, where `data` holds any (an empty holding is registered where none
/// fit).
fn held_tails(data: Option<&ResidentData>) -> Option<&HeldTails> {
    data.and_then(|d| d.downcast_ref::<HeldTails>())
}

/// The groups of a sparse stage that runs B in G2 or not.
fn sparse_groups(g2: G2Stage) -> SparseGroups {
    match g2 {
        G2Stage::Run => SparseGroups::G1AndG2,
        G2Stage::Skip => SparseGroups::G1Only,
    }
}

/// One compute slot on a GPU.
pub struct GpuEngine {
    slot: GpuSlot,
    pair_sums: OnesPairSums,
}

impl GpuEngine {
    /// An engine over `slot` whose resident sets take the ones' subset sums `pair_sums` asks
    /// for (with `where_room` or `triples_where_room`, where the lease the sizing gave covers
    /// them).
    pub fn new(slot: GpuSlot, pair_sums: OnesPairSums) -> Self {
        GpuEngine { slot, pair_sums }
    }
}

impl ComputeEngine for GpuEngine {
    fn label(&self) -> String {
        self.slot.label()
    }

    fn make_resident(
        &mut self,
        pk: &ProvingKey,
        r: Residency,
        bytes: u64,
    ) -> Result<ResidentData, StageError> {
        let set = self
            .slot
            .upload_resident(
                bytes,
                log_n(pk)?,
                &host_queries(pk),
                residency(r),
                ones_sums(self.pair_sums),
            )
            .map_err(stage_error)?;
        tracing::info!(
            device = %self.slot.label(),
            residency = ?set.residency(),
            ones_sums = ?set.ones_sums(),
            bytes,
            "parameters resident"
        );
        Ok(Arc::new(set))
    }

    fn h_stage(
        &mut self,
        pk: &ProvingKey,
        evals: Arc<Evaluations>,
        resident: Option<&ResidentData>,
        bytes: u64,
    ) -> Result<HStage, StageError> {
        let set = resident_set(resident)?;
        let t = Instant::now();
        let (h, times) = self
            .slot
            .h_stage(bytes, [&evals.a, &evals.b], set, &host_queries(pk))
            .map_err(stage_error)?;
        // the host buffers are freed here, not after the next partition's upload
        drop(evals);
        let total = t.elapsed().as_secs_f64();
        Ok(HStage {
            h,
            h_poly_s: times.h_poly_s,
            msm_h_s: (total - times.h_poly_s - times.turn_wait_s).max(0.0),
            turn_wait_s: Some(times.turn_wait_s),
        })
    }

    /// B in G2 on the GPU, in the sparse stage: its bases are resident with the G1 ones.
    fn g2_placement(&self) -> G2Placement {
        G2Placement::SparseStage
    }

    fn hold_tails(
        &mut self,
        plan: &MsmPlan,
        g2: G2Stage,
        resident: &ResidentData,
        bytes: u64,
    ) -> Result<ResidentData, StageError> {
        let set = resident_set(Some(resident))?;
        let tails = self
            .slot
            .hold_tails(bytes, set, plan, sparse_groups(g2))
            .map_err(stage_error)?;
        tracing::info!(
            device = %self.slot.label(),
            layout = ?tails.layout(),
            points = ?tails.lens(),
            bytes,
            "tails held"
        );
        Ok(Arc::new(tails))
    }

    fn sparse(
        &mut self,
        pk: &ProvingKey,
        plan: &MsmPlan,
        g2: G2Stage,
        resident: Option<&ResidentData>,
        tails: Option<&ResidentData>,
        bytes: u64,
    ) -> Result<SparseMsms, StageError> {
        let set = resident_set(resident)?;
        let groups = sparse_groups(g2);
        let (s, times) = match held_tails(tails) {
            Some(held) => self.slot.sparse_stage_held(bytes, plan, set, held, groups),
            None => self
                .slot
                .sparse_stage(bytes, plan, set, &host_queries(pk), groups),
        }
        .map_err(stage_error)?;
        Ok(SparseMsms {
            l: s.l,
            a: s.a,
            b_g1: s.b_g1,
            b_g2: s.b_g2,
            turn_wait_s: Some(times.turn_wait_s),
        })
    }
}

/// proofline-gpu's byte formulas for one GPU: its multiprocessors size the kernels' scratch, its
/// budget and compute slots the H stage's chunks.
pub struct GpuSizing {
    sm_count: u32,
    budget: u64,
    slots: usize,
    pair_sums: OnesPairSums,
    held_tails: HeldTailsMode,
}

impl DeviceSizing for GpuSizing {
    fn resident(&self, pk: &ProvingKey) -> Option<ResidentSizes> {
        let lg = log_n(pk).ok()?;
        let p = pk.params();
        let lens = QueryLens {
            h: p.h.len(),
            l: p.l.len(),
            a: p.a.len(),
            b_g1: p.b_g1.len(),
            b_g2: p.b_g2.len(),
        };
        // the bases, with `where_room` or `triples_where_room` and the ones' subset sums where
        // the budget holds them beside the slots' H stages (the set computes them when its
        // lease covers them: the allocator grants the bases alone where the sums do not fit
        // beside the sets in use)
        let bases = resident_bytes(lg, &lens, proofline_gpu::Residency::Resident);
        let wanted = ones_sums(self.pair_sums);
        let full = resident_lease(lg, &lens, wanted, self.slots, self.budget, self.sm_count);
        Some(ResidentSizes {
            full,
            bases,
            tables: resident_bytes(lg, &lens, proofline_gpu::Residency::Streamed),
        })
    }

    fn h_stage(&self, pk: &ProvingKey, r: Option<Residency>) -> u64 {
        let lg = domain_size(pk).next_power_of_two().trailing_zeros();
        let r = r.unwrap_or(Residency::Streamed);
        let resident = self.resident(pk).map_or(0, |s| match r {
            Residency::Resident => s.full,
            Residency::Streamed => s.tables,
        });
        h_stage_lease(
            lg,
            residency(r),
            resident,
            self.slots,
            self.budget,
            self.sm_count,
        )
    }

    /// With `pipeline.held_tails = "where_room"`, the bases resident and a tail to hold: the
    /// tails with as many of their copies as fit beside the set and every slot's largest stage
    /// (`bytes::held_tails_granted`), else their bases alone (the G1 tails' where all of them do
    /// not fit), else nothing held.
    fn held_tails(&self, pk: &ProvingKey, plan: &MsmPlan, g2: G2Stage) -> Option<ResidentSizes> {
        let lens = Tails::of(plan, sparse_groups(g2));
        if self.held_tails == HeldTailsMode::Off || lens.is_empty() {
            return None;
        }
        let set = self.resident(pk)?.full;
        let stage = self
            .h_stage(pk, Some(Residency::Resident))
            .max(self.sparse_stage(plan, Some(Residency::Resident), None));
        let stages = (self.slots as u64).saturating_mul(stage);
        let room = self.budget.saturating_sub(set.saturating_add(stages));
        let bytes = |layout| held_tails_bytes(&lens, layout);
        let largest = held_tails_granted(&lens, room)?;
        let gathered = held_tails_granted(&lens, bytes(TailLayout::GATHERED).min(room))?;
        Some(ResidentSizes {
            full: bytes(largest),
            bases: bytes(gathered),
            tables: 0,
        })
    }

    fn sparse_stage(
        &self,
        plan: &MsmPlan,
        r: Option<Residency>,
        tails: Option<&ResidentData>,
    ) -> u64 {
        if let Some(held) = held_tails(tails) {
            return sparse_stage_bytes_held(&held.shapes(plan), &(&plan.b).into(), self.sm_count);
        }
        let shapes = [(&plan.l).into(), (&plan.a).into(), (&plan.b).into()];
        sparse_stage_bytes(
            &shapes,
            residency(r.unwrap_or(Residency::Streamed)),
            self.sm_count,
        )
    }
}

/// An opened GPU: what the pipeline starts it with, and its device-op log.
pub struct OpenedGpu {
    /// Allocator memory, budget, engines, sizing.
    pub setup: DeviceSetup,
    /// The device-op log (records only when opened with recording on).
    pub log: Arc<proofline_gpu::DeviceLog>,
}

/// The most compute slots "auto" gives a GPU: a second slot overlaps one slot's uploads and host
/// work with the other's kernels; four measured no faster than two on an H200, and past two the
/// H stages' leases fall back to the smaller H MSM chunk (docs/operations.md).
const AUTO_SLOTS_MOST: usize = 2;

/// Opens GPU `index` with `slots` compute slots (with "auto", as many H stages of a 32 GiB
/// partition as its budget runs at once, up to [`AUTO_SLOTS_MOST`]: `bytes::slots_that_fit`),
/// its resident sets with the ones' pair sums as `pair_sums` says and the sets' tails held as
/// `held_tails` says; `budget` picks the allocator's budget from the device's (free, total)
/// memory.
pub fn gpu_device(
    index: usize,
    slots: Count,
    options: DeviceOptions,
    (pair_sums, held_tails): (OnesPairSums, HeldTailsMode),
    budget: impl Fn(u64, u64) -> u64,
) -> Result<OpenedGpu, GpuError> {
    let mut device = GpuDevice::open(index, options)?;
    // Memory an earlier user of this device in the process freed is still cached by the
    // device's pool (the allocator keeps a release threshold): hand it back before reading what
    // is free, or the budget would shrink with every reopening.
    device.synchronize_device()?;
    device.trim_pool(0)?;
    let (free, total) = device.memory_info()?;
    let budget = budget(free as u64, total as u64);
    let sm_count = device.info().multiprocessors.max(1) as u32;
    let slots = match slots {
        Count::Fixed(n) => n.max(1),
        Count::Auto => slots_that_fit(budget, sm_count, AUTO_SLOTS_MOST),
    };
    let mut engines: Vec<Box<dyn ComputeEngine>> = Vec::new();
    for _ in 0..slots {
        engines.push(Box::new(GpuEngine::new(device.new_slot()?, pair_sums)));
    }
    tracing::info!(
        device = %device.label(),
        name = %device.info().name,
        images = %device.kernel_images(),
        free_bytes = free,
        budget_bytes = budget,
        slots,
        "GPU opened"
    );
    let log = device.log();
    Ok(OpenedGpu {
        setup: DeviceSetup {
            memory: Box::new(GpuMemory { device }),
            budget,
            engines,
            sizing: Arc::new(GpuSizing {
                sm_count,
                budget,
                slots,
                pair_sums,
                held_tails,
            }),
        },
        log,
    })
}
