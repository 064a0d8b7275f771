//! The GPU stages of one Groth16 partition on a [`GpuSlot`], each run under the bytes of one
//! lease (an [`Arena`]), its kernels in the device's kernel turn (`turn.rs`: the H stage takes
//! it once its evaluations are uploaded, the sparse stage once its splits are), and synchronised
//! before it returns:
//!
//! * [`GpuSlot::upload_resident`]: a parameter set's NTT tables and (when they fit) its bases;
//! * [`GpuSlot::h_stage`]: the evaluations a and b up, C's as their product on the device (the
//!   witness satisfies every constraint), H = (A B - C) / Z, then the H MSM straight from the
//!   device buffer (no host round trip);
//! * [`GpuSlot::sparse_stage`]: the splits of L, A and B up (the CPU's 0/1/tail split: bitmaps
//!   of the ones, tail indices and scalars; B's once, for both groups), then the L, A and B MSMs
//!   in G1 and the B MSM in G2 from those device copies;
//! * [`GpuSlot::hold_tails`]: a partition's G1 tails held for the parameter set's later
//!   partitions (`tails.rs`);
//! * [`GpuSlot::sparse_stage_held`]: the sparse stage with the G1 queries split against held
//!   tails: their held bases through Pippenger over the held points, the rest as above.
//!
//! The inner functions are generic over [`Exec`] so that `bytes.rs` can run them dry.

use std::time::Instant;

use blstrs::{G1Projective, G2Projective, Scalar};
use proofline_groth16::msm::{MsmPlan, SparseScalars};

use crate::abi::FR_WORDS;
use crate::arena::Arena;
use crate::bytes::{h_stage_msm_config, held_tails_granted, ones_sums_granted};
use crate::config::{MsmConfig, NttConfig, SparseTails};
use crate::curve::{G1, G2};
use crate::error::GpuError;
use crate::exec::{DevBuf, Exec};
use crate::layout::scalars_as_u32;
use crate::msm::{self, Bases, HeldOnDevice, HeldTail, MsmStats, SplitOnDevice};
use crate::ntt::{h_poly, CInput, TablePtrs};
use crate::plan::Precomputation;
use crate::resident::{
    upload_resident, DeviceQueries, HostQueries, OnesSums, QueryLens, Residency, ResidentSet,
    StageBases,
};
use crate::slot::{GpuSlot, Lane};
use crate::tails::{hold_tails_device, AgainstHeld, G2Tail, HeldTails, Tails};

/// Where the H stage's time went.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct HStageTimes {
    /// Seconds from the start to H's coefficients on the device (evaluations uploaded, H done),
    /// less the wait for the kernel turn.
    pub h_poly_s: f64,
    /// Seconds the slot waited for the device's kernel turn, its evaluations uploaded.
    pub turn_wait_s: f64,
    /// What the H MSM did.
    pub msm: MsmStats,
}

/// Where the sparse stage's time went.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct SparseStageTimes {
    /// Seconds the slot waited for the device's kernel turn.
    pub turn_wait_s: f64,
    /// What the MSMs did.
    pub msm: MsmStats,
}

/// Results of the sparse stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SparseMsms {
    /// L query.
    pub l: G1Projective,
    /// A query.
    pub a: G1Projective,
    /// B query in G1.
    pub b_g1: G1Projective,
    /// B query in G2 (with [`SparseGroups::G1AndG2`]).
    pub b_g2: Option<G2Projective>,
}

/// The groups the sparse stage computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SparseGroups {
    /// L, A and B in G1 and B in G2: a proof's sparse MSMs.
    G1AndG2,
    /// L, A and B in G1 only (load tests of the G1 side; the set's B query in G2 is not read).
    G1Only,
}

impl GpuSlot {
    /// Uploads a parameter set's resident data on the device's resident stream: the NTT tables
    /// of domain 2^`log_n` and, with [`Residency::Resident`], the five query bases of `queries`.
    /// `lease_bytes` is the long-lived lease the set will hold (`bytes::resident_bytes`). With
    /// `sums` [`OnesSums::Pairs`] or [`OnesSums::Triples`] the L, A, B (G1) and B (G2) queries
    /// also get their ones' subset sums, computed there: those asked for where the lease covers
    /// them, else pairs where it covers those (`bytes::resident_bytes_summed`,
    /// `bytes::resident_lease`); [`ResidentSet::ones_sums`] says which they got. With
    /// [`OnesSums::Absent`] they never do, however large the lease.
    pub fn upload_resident(
        &self,
        lease_bytes: u64,
        log_n: u32,
        queries: &HostQueries<'_>,
        residency: Residency,
        sums: OnesSums,
    ) -> Result<ResidentSet, GpuError> {
        self.upload_set(lease_bytes, log_n, queries, residency, None, sums)
    }

    /// [`GpuSlot::upload_resident`] with the bases on the device and the H bases' copies of
    /// `h_pre` computed there for the fixed-base H MSM (`lease_bytes`:
    /// `bytes::resident_bytes_precomputed`; choose `h_pre` with `Precomputation::plan` from the
    /// memory the device can spare). A one-time cost per parameter set and device.
    pub fn upload_resident_precomputed(
        &self,
        lease_bytes: u64,
        log_n: u32,
        queries: &HostQueries<'_>,
        h_pre: Precomputation,
        sums: OnesSums,
    ) -> Result<ResidentSet, GpuError> {
        self.upload_set(
            lease_bytes,
            log_n,
            queries,
            Residency::Resident,
            Some(h_pre),
            sums,
        )
    }

    fn upload_set(
        &self,
        lease_bytes: u64,
        log_n: u32,
        queries: &HostQueries<'_>,
        residency: Residency,
        h_pre: Option<Precomputation>,
        sums: OnesSums,
    ) -> Result<ResidentSet, GpuError> {
        let arena = Arena::new(lease_bytes, "resident upload");
        let bases = match residency {
            Residency::Resident => Some(queries),
            Residency::Streamed => None,
        };
        let h_pre = bases.and(h_pre);
        let lens = queries.lens();
        let sums = match bases {
            Some(_) => ones_sums_granted(sums, lease_bytes, log_n, &lens, h_pre.as_ref()),
            None => OnesSums::Absent,
        };
        let (tables, uploaded) = self.run(Lane::Resident, &arena, |e| {
            upload_resident(e, log_n, bases, h_pre.as_ref(), sums)
        })?;
        let tables = tables.map(|b| b.into_resident());
        let bases_dev = uploaded.map(|[h, l, a, b_g1, b_g2]| DeviceQueries {
            h: h.into_resident(),
            l: l.into_resident(),
            a: a.into_resident(),
            b_g1: b_g1.into_resident(),
            b_g2: b_g2.into_resident(),
        });
        Ok(ResidentSet {
            device: self.device_index(),
            tables,
            bases: bases_dev,
            h_pre,
            sums,
            lens,
            bytes: lease_bytes,
        })
    }

    /// The H stage: uploads the evaluations of A and B of a satisfied witness (each at most the
    /// domain size; padded with zeros), derives C's (`a∘b`) on the device, computes the
    /// coefficients of H and the H MSM over them, in chunks as large as
    /// `lease_bytes` allows (`bytes::h_stage_msm_config`). `host` are the parameter set's
    /// bases in host memory (read only when `resident` does not hold them). The uploads run
    /// before the slot asks for the device's kernel turn, everything after in it.
    pub fn h_stage(
        &self,
        lease_bytes: u64,
        evals: [&[Scalar]; 2],
        resident: &ResidentSet,
        host: &HostQueries<'_>,
    ) -> Result<(G1Projective, HStageTimes), GpuError> {
        let t = resident.table_ptrs();
        let n = 1usize << resident.log_n();
        if let Some(x) = evals.iter().find(|x| x.len() > n) {
            return Err(GpuError::InvalidInput(format!(
                "{} evaluations over a domain of {n}",
                x.len()
            )));
        }
        if resident.lens().h + 1 < n {
            return Err(GpuError::InvalidInput(format!(
                "an H query of {} points for a domain of {n}",
                resident.lens().h
            )));
        }
        let bases = resident.stage_bases(host)?;
        // the largest Pippenger chunk the lease covers (over precomputed copies, the default's:
        // their lease is sized for it)
        let msm = match resident.h_precomputation() {
            Some(_) => MsmConfig::default(),
            None => h_stage_msm_config(
                resident.log_n(),
                resident.residency(),
                lease_bytes,
                self.sm_count(),
            ),
        };
        let arena = Arena::new(lease_bytes, "h stage");
        let start = Instant::now();
        self.run(Lane::Compute, &arena, |e| {
            let words = n * FR_WORDS as usize;
            let (a, b) = (
                upload_padded(e, evals[0], words)?,
                upload_padded(e, evals[1], words)?,
            );
            // the uploads are done (another slot's kernels ran meanwhile): the kernels' turn
            let ((h, mut times), waited) = self.in_kernel_turn(e, || {
                h_stage_device(e, a, b, &t, bases.h, &NttConfig::default(), &msm, start)
            })?;
            times.turn_wait_s = waited.as_secs_f64();
            times.h_poly_s = (times.h_poly_s - times.turn_wait_s).max(0.0);
            Ok((h, times))
        })
    }

    /// The sparse stage: the L, A and B MSMs in G1 and, with [`SparseGroups::G1AndG2`], the B
    /// MSM in G2 of the split scalars (`lease_bytes`: `bytes::sparse_stage_bytes`, which covers
    /// both groups). The splits of L, A and B (bitmaps of the ones, tail indices and scalars;
    /// B's once) go up before the slot asks for the device's kernel turn, so that they overlap
    /// another slot's kernels; the MSMs run in the turn from the device copies (streamed bases
    /// are still copied chunk by chunk in it).
    pub fn sparse_stage(
        &self,
        lease_bytes: u64,
        plan: &MsmPlan,
        resident: &ResidentSet,
        host: &HostQueries<'_>,
        groups: SparseGroups,
    ) -> Result<(SparseMsms, SparseStageTimes), GpuError> {
        check_bases(plan, &resident.lens(), groups)?;
        let bases = resident.stage_bases(host)?;
        let arena = Arena::new(lease_bytes, "sparse stage");
        self.run(Lane::Compute, &arena, |e| {
            let mut msm = MsmStats::default();
            let inputs = upload_sparse_inputs(e, plan, &mut msm)?;
            // the splits are up (another slot's kernels ran meanwhile): the kernels' turn
            let cfg = MsmConfig::default();
            let (msms, waited) = self.in_kernel_turn(e, || {
                let r = sparse_stage_uploaded(e, plan, &inputs, &bases, groups, &cfg, &mut msm);
                drop(inputs);
                r
            })?;
            let turn_wait_s = waited.as_secs_f64();
            Ok((msms, SparseStageTimes { turn_wait_s, msm }))
        })
    }

    /// Holds the tails of `plan` for later partitions of `resident`'s parameter set: L's, A's and
    /// B's in G1, and with [`SparseGroups::G1AndG2`] B's in G2, their bases gathered from the
    /// resident bases on the device's resident stream, with their precomputed copies where
    /// `lease_bytes` covers them (`bytes::held_tails_granted`). A one-time cost per parameter set
    /// and device.
    pub fn hold_tails(
        &self,
        lease_bytes: u64,
        resident: &ResidentSet,
        plan: &MsmPlan,
        groups: SparseGroups,
    ) -> Result<HeldTails, GpuError> {
        let Some(q) = &resident.bases else {
            return Err(GpuError::InvalidInput(
                "tails are held from resident bases, and this set streams them".into(),
            ));
        };
        check_bases(plan, &resident.lens(), groups)?;
        let tails = Tails::of(plan, groups);
        let layout = held_tails_granted(&tails, lease_bytes).ok_or_else(|| {
            GpuError::InvalidInput(format!(
                "a lease of {lease_bytes} bytes holds no tails of {tails:?} points"
            ))
        })?;
        let arena = Arena::new(lease_bytes, "held tails");
        let held = self.run(Lane::Resident, &arena, |e| {
            let bases = Tails {
                g1: [q.l.ptr(), q.a.ptr(), q.b_g1.ptr()],
                b_g2: Some(q.b_g2.ptr()),
            };
            hold_tails_device(e, bases, plan, layout.precomputations(&tails))
        })?;
        Ok(HeldTails {
            device: self.device_index(),
            queries: held.map(|h| h.map_points(|b| b.into_resident())),
            layout,
            bytes: lease_bytes,
        })
    }

    /// [`GpuSlot::sparse_stage`] over the tails `held` (made by [`GpuSlot::hold_tails`] on this
    /// device from `resident`): each query is split against its held list (on the host, unless
    /// the list is its own tail), its held bases go through Pippenger over the held points, the
    /// rest as in the sparse stage; B in G2 likewise where its tail is held, else as there
    /// (`lease_bytes`: `bytes::sparse_stage_bytes_held`).
    pub fn sparse_stage_held(
        &self,
        lease_bytes: u64,
        plan: &MsmPlan,
        resident: &ResidentSet,
        held: &HeldTails,
        groups: SparseGroups,
    ) -> Result<(SparseMsms, SparseStageTimes), GpuError> {
        if held.device != self.device_index() || resident.device != self.device_index() {
            return Err(GpuError::InvalidInput(format!(
                "held tails of device {} and a resident set of device {} on device {}",
                held.device,
                resident.device,
                self.device_index()
            )));
        }
        if resident.residency() != Residency::Resident {
            return Err(GpuError::InvalidInput(
                "held tails over streamed bases".into(),
            ));
        }
        check_bases(plan, &resident.lens(), groups)?;
        let against = held.split(plan)?;
        let bases = resident.resident_bases()?;
        let arena = Arena::new(lease_bytes, "sparse stage (held tails)");
        self.run(Lane::Compute, &arena, |e| {
            let mut msm = MsmStats::default();
            let g2 = G2Tail::of(&held.queries);
            let inputs = upload_held_inputs(e, plan, &against, groups, g2, &mut msm)?;
            let cfg = MsmConfig::default();
            let (msms, waited) = self.in_kernel_turn(e, || {
                let r = sparse_stage_held_uploaded(
                    e,
                    plan,
                    &held.queries,
                    &against,
                    &inputs,
                    &bases,
                    groups,
                    &cfg,
                    &mut msm,
                );
                drop(inputs);
                r
            })?;
            let turn_wait_s = waited.as_secs_f64();
            Ok((msms, SparseStageTimes { turn_wait_s, msm }))
        })
    }
}

/// Whether a parameter set of query lengths `lens` has the bases `plan`'s queries of `groups`
/// need.
fn check_bases(plan: &MsmPlan, lens: &QueryLens, groups: SparseGroups) -> Result<(), GpuError> {
    let b_g2 = match groups {
        SparseGroups::G1AndG2 => plan.b.num_bases,
        SparseGroups::G1Only => 0,
    };
    for (q, needed, have) in [
        ("L", plan.l.num_bases, lens.l),
        ("A", plan.a.num_bases, lens.a),
        ("B_G1", plan.b.num_bases, lens.b_g1),
        ("B_G2", b_g2, lens.b_g2),
    ] {
        if needed > have {
            return Err(GpuError::InvalidInput(format!(
                "the {q} query needs {needed} bases, the parameters hold {have}"
            )));
        }
    }
    Ok(())
}

/// `x` in a new device buffer of `words` words, zero beyond it: evaluations padded to the domain.
pub(crate) fn upload_padded<E: Exec>(
    e: &E,
    x: &[Scalar],
    words: usize,
) -> Result<E::Buf, GpuError> {
    let mut d = e.zeros(words)?;
    e.upload_at(&mut d, 0, scalars_as_u32(x))?;
    Ok(d)
}

/// H from the uploaded evaluations of A and B (C's are their product, computed into a buffer of
/// their size), then the H MSM over its n - 1 coefficients (`start`: when the stage began, for
/// its times).
#[allow(clippy::too_many_arguments)]
pub(crate) fn h_stage_device<E: Exec>(
    e: &E,
    mut a: E::Buf,
    mut b: E::Buf,
    t: &TablePtrs,
    h_bases: Bases<'_>,
    ntt: &NttConfig,
    cfg: &MsmConfig,
    start: Instant,
) -> Result<(G1Projective, HStageTimes), GpuError> {
    let mut c = e.alloc(a.words())?;
    h_poly(e, &mut a, &mut b, &mut c, t, ntt, CInput::Product)?;
    drop((b, c));
    e.sync()?;
    let mut times = HStageTimes {
        h_poly_s: start.elapsed().as_secs_f64(),
        ..Default::default()
    };
    let n = a.words() / FR_WORDS as usize;
    let h = msm::dense::<E, G1>(
        e,
        h_bases,
        a.ptr(),
        n.saturating_sub(1),
        cfg,
        &mut times.msm,
    )?;
    Ok((h, times))
}

/// The splits of a plan's sparse queries on the device: L's, A's and B's (B's serves its G1 and
/// G2 MSMs).
#[derive(Debug)]
pub(crate) struct SparseInputs<B> {
    l: SplitOnDevice<B>,
    a: SplitOnDevice<B>,
    b: SplitOnDevice<B>,
}

/// Copies the splits of L, A and B to the device (each synchronised; their time in
/// `stats.upload_ms`).
pub(crate) fn upload_sparse_inputs<E: Exec>(
    e: &E,
    plan: &MsmPlan,
    stats: &mut MsmStats,
) -> Result<SparseInputs<E::Buf>, GpuError> {
    Ok(SparseInputs {
        l: msm::upload_split(e, &plan.l, stats)?,
        a: msm::upload_split(e, &plan.a, stats)?,
        b: msm::upload_split(e, &plan.b, stats)?,
    })
}

/// The sparse MSMs of `groups` from the splits `inputs` on the device ([`upload_sparse_inputs`]
/// of `plan`): L, A and B in G1 (their tails through Pippenger one after the other, or
/// together, as `cfg.sparse_tails` says), then B in G2; uploads nothing of the splits.
pub(crate) fn sparse_stage_uploaded<E: Exec>(
    e: &E,
    plan: &MsmPlan,
    inputs: &SparseInputs<E::Buf>,
    bases: &StageBases<'_>,
    groups: SparseGroups,
    cfg: &MsmConfig,
    stats: &mut MsmStats,
) -> Result<SparseMsms, GpuError> {
    let g1 = [
        (bases.l, &plan.l, &inputs.l),
        (bases.a, &plan.a, &inputs.a),
        (bases.b_g1, &plan.b, &inputs.b),
    ];
    let [l, a, b_g1] = match cfg.sparse_tails {
        SparseTails::Apart => {
            let mut one = |(b, s, d): (Bases<'_>, &SparseScalars, &SplitOnDevice<E::Buf>)| {
                msm::sparse_uploaded::<E, G1>(e, b, s, d, cfg, stats)
            };
            [one(g1[0])?, one(g1[1])?, one(g1[2])?]
        }
        SparseTails::Together => msm::sparse_together::<E, G1, 3>(e, &g1, cfg, stats)?,
    };
    let b_g2 = match groups {
        SparseGroups::G1AndG2 => Some(msm::sparse_uploaded::<E, G2>(
            e, bases.b_g2, &plan.b, &inputs.b, cfg, stats,
        )?),
        SparseGroups::G1Only => None,
    };
    Ok(SparseMsms { l, a, b_g1, b_g2 })
}

/// A query's split against its held tail on the device: its own split where the held list is
/// its tail, else the rest's split and the held scalars.
#[derive(Debug)]
pub(crate) enum HeldInput<B> {
    OwnTail(SplitOnDevice<B>),
    Built(HeldOnDevice<B>),
}

/// The splits of a plan's sparse queries against held tails on the device: L's, A's and B's
/// (B's serving G2 too), and B's whole split for G2 where B's tail in G2 is not held and B's
/// input is not already that.
#[derive(Debug)]
pub(crate) struct HeldInputs<B> {
    g1: [HeldInput<B>; 3],
    b_g2: Option<SplitOnDevice<B>>,
}

/// Copies the splits against held tails `against` (L, A, B) to the device, and with
/// [`SparseGroups::G1AndG2`] B's whole split where `g2_held` is [`G2Tail::NotHeld`] and B's
/// input is not that (each synchronised; their time in `stats.upload_ms`).
pub(crate) fn upload_held_inputs<E: Exec>(
    e: &E,
    plan: &MsmPlan,
    against: &[AgainstHeld<'_>; 3],
    groups: SparseGroups,
    g2_held: G2Tail,
    stats: &mut MsmStats,
) -> Result<HeldInputs<E::Buf>, GpuError> {
    let mut up = |a: &AgainstHeld<'_>| -> Result<HeldInput<E::Buf>, GpuError> {
        Ok(match a {
            AgainstHeld::OwnTail(s) => HeldInput::OwnTail(msm::upload_split(e, s, stats)?),
            AgainstHeld::Built(h) => HeldInput::Built(msm::upload_held(e, h, stats)?),
        })
    };
    let g1 = [up(&against[0])?, up(&against[1])?, up(&against[2])?];
    let b_g2 = match (groups, g2_held, &against[2]) {
        (SparseGroups::G1AndG2, G2Tail::NotHeld, AgainstHeld::Built(_)) => {
            Some(msm::upload_split(e, &plan.b, stats)?)
        }
        _ => None,
    };
    Ok(HeldInputs { g1, b_g2 })
}

/// The sparse MSMs of `groups` over the tails `held` from the splits `inputs` on the device
/// ([`upload_held_inputs`] of `against`, `plan`'s split against `held`): L, A and B in G1, each
/// its ones summed and its held points through Pippenger (and the rest of a built split as a
/// sparse query), then B in G2 the same way over its held tail, or from B's whole split where
/// that is not held; uploads nothing.
#[allow(clippy::too_many_arguments)]
pub(crate) fn sparse_stage_held_uploaded<E: Exec, H: DevBuf>(
    e: &E,
    plan: &MsmPlan,
    held: &Tails<HeldTail<H>>,
    against: &[AgainstHeld<'_>; 3],
    inputs: &HeldInputs<E::Buf>,
    bases: &StageBases<'_>,
    groups: SparseGroups,
    cfg: &MsmConfig,
    stats: &mut MsmStats,
) -> Result<SparseMsms, GpuError> {
    let g1 = [bases.l, bases.a, bases.b_g1];
    let mismatch = || GpuError::InvalidInput("a held split and its device copy differ".into());
    let mut one = |k: usize| match (&against[k], &inputs.g1[k]) {
        (AgainstHeld::OwnTail(s), HeldInput::OwnTail(d)) => {
            msm::sparse_over_own_tail::<E, G1, H>(e, g1[k], &held.g1[k], s, d, cfg, stats)
        }
        (AgainstHeld::Built(h), HeldInput::Built(d)) => {
            msm::sparse_held::<E, G1, H>(e, g1[k], &held.g1[k], h, d, cfg, stats)
        }
        _ => Err(mismatch()),
    };
    let [l, a, b_g1] = [one(0)?, one(1)?, one(2)?];
    let b_g2 = match groups {
        SparseGroups::G1AndG2 => Some(match (&held.b_g2, &against[2], &inputs.g1[2]) {
            (Some(t), AgainstHeld::OwnTail(s), HeldInput::OwnTail(d)) => {
                msm::sparse_over_own_tail::<E, G2, H>(e, bases.b_g2, t, s, d, cfg, stats)?
            }
            (Some(t), AgainstHeld::Built(h), HeldInput::Built(d)) => {
                msm::sparse_held::<E, G2, H>(e, bases.b_g2, t, h, d, cfg, stats)?
            }
            (Some(_), _, _) => return Err(mismatch()),
            (None, _, input) => {
                let b = match (&inputs.b_g2, input) {
                    (Some(b), _) | (None, HeldInput::OwnTail(b)) => b,
                    (None, HeldInput::Built(_)) => {
                        return Err(GpuError::InvalidInput(
                            "B in G2 asked for without B's split on the device".into(),
                        ))
                    }
                };
                msm::sparse_uploaded::<E, G2>(e, bases.b_g2, &plan.b, b, cfg, stats)?
            }
        }),
        SparseGroups::G1Only => None,
    };
    Ok(SparseMsms { l, a, b_g1, b_g2 })
}

/// [`upload_held_inputs`] then [`sparse_stage_held_uploaded`]; the splits are freed (and the
/// lane synchronised) before it returns.
#[cfg(test)]
pub(crate) fn sparse_stage_held_device<E: Exec, H: DevBuf>(
    e: &E,
    plan: &MsmPlan,
    held: &Tails<HeldTail<H>>,
    bases: &StageBases<'_>,
    groups: SparseGroups,
    cfg: &MsmConfig,
) -> Result<SparseMsms, GpuError> {
    let against = crate::tails::split_against(plan, held)?;
    let mut stats = MsmStats::default();
    let inputs = upload_held_inputs(e, plan, &against, groups, G2Tail::of(held), &mut stats)?;
    let r = sparse_stage_held_uploaded(
        e, plan, held, &against, &inputs, bases, groups, cfg, &mut stats,
    );
    drop(inputs);
    let synced = e.sync();
    let msms = r?;
    synced?;
    Ok(msms)
}

/// The splits up ([`upload_sparse_inputs`]), then the sparse MSMs of `groups`
/// ([`sparse_stage_uploaded`]); the splits are freed (and the lane synchronised) before it
/// returns.
#[cfg(test)]
pub(crate) fn sparse_stage_device<E: Exec>(
    e: &E,
    plan: &MsmPlan,
    bases: &StageBases<'_>,
    groups: SparseGroups,
    cfg: &MsmConfig,
) -> Result<(SparseMsms, MsmStats), GpuError> {
    let mut stats = MsmStats::default();
    let inputs = upload_sparse_inputs(e, plan, &mut stats)?;
    let r = sparse_stage_uploaded(e, plan, &inputs, bases, groups, cfg, &mut stats);
    drop(inputs);
    let synced = e.sync();
    let msms = r?;
    synced?;
    Ok((msms, stats))
}
