//! The stage harness: synthetic partitions of a named shape pushed through the real
//! allocators, compute slots and CPU-MSM actors ([`StagePool`]), bounded in count and time.
//! It measures what the GPU side of the pipeline sustains: partitions per minute, each
//! device's kernel-busy fraction (CUDA events), lease waits, the pool's peak against the
//! leases, trims, out-of-memory errors (must be 0), and whether any device-global call
//! overlapped a slot's work (must be none).
//!
//! Shapes (docs/filecoin.md): `2kib` and `8mib` (domain 2^22) and `32gib` (domain 2^27,
//! 130,278,541 aux points), each query (L, A, B) with its share of the aux points and the
//! zero/one/other split measured on a real partition (the 8MiB circuit's for 32 GiB, the
//! deepest measured). Bases are random points tiled from 2^16 unique ones; the evaluations are
//! random; one set of both serves every partition (the parameters are resident once per device,
//! the evaluations are shared, not copied).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use bellperson::groth16::{Parameters, VerifyingKey};
use blstrs::{Bls12, G2Affine, G2Projective, Scalar};
use ff::Field;
use futures::stream::{self, StreamExt};
use group::{Curve, Group};
use proofline_actors::compute::domain_size;
use proofline_actors::messages::{CancelToken, Evaluations};
use proofline_actors::pipeline::{cpu_cores, host_budget, host_device};
use proofline_actors::{ComputeInput, DeviceSetup, G2Stage, PlanSource, StagePool};
use proofline_config::{BackendKind, Config, Count, HeldTails, OnesPairSums, SlotKernels};
use proofline_gpu::layout::scalar_from_raw_montgomery;
use proofline_gpu::oplog::busy_fraction;
use proofline_gpu::testkit::{random_points, random_scalars};
use proofline_gpu::{DeviceLog, Recording};
use proofline_groth16::msm::{MsmPlan, SparseScalars};
use proofline_groth16::{ProvingKey, SharedProvingKey};
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;
use serde::Serialize;

use crate::percentile;

/// A named partition shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Shape {
    /// 2 KiB PoRep partition: domain 2^22.
    #[serde(rename = "2kib")]
    Kib2,
    /// 8 MiB PoRep partition: domain 2^22.
    #[serde(rename = "8mib")]
    Mib8,
    /// 32 GiB PoRep partition: domain 2^27.
    #[serde(rename = "32gib")]
    Gib32,
}

/// One sparse query of a shape: its share of the aux points and its zero / one fractions.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct QueryMix {
    /// L, A or B.
    pub query: &'static str,
    /// Bases, as a fraction of the aux points.
    pub share: f64,
    /// Fraction of zero scalars.
    pub zero: f64,
    /// Fraction of scalars equal to one.
    pub one: f64,
}

/// The sizes of a shape.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct ShapeSpec {
    /// Constraints (the evaluations' length).
    pub constraints: usize,
    /// log2 of the domain.
    pub log_n: u32,
    /// Aux variables (the L query's points).
    pub aux: usize,
    /// L, A, B.
    pub queries: [QueryMix; 3],
}

const MIX_8MIB: [QueryMix; 3] = [
    QueryMix {
        query: "L",
        share: 1.0,
        zero: 0.5066,
        one: 0.4642,
    },
    QueryMix {
        query: "A",
        share: 0.99287,
        zero: 0.5102,
        one: 0.4675,
    },
    QueryMix {
        query: "B",
        share: 0.26319,
        zero: 0.4621,
        one: 0.4579,
    },
];

impl Shape {
    /// `2kib`, `8mib` or `32gib`.
    pub fn parse(s: &str) -> anyhow::Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "2kib" => Ok(Shape::Kib2),
            "8mib" => Ok(Shape::Mib8),
            "32gib" => Ok(Shape::Gib32),
            other => anyhow::bail!("unknown shape '{other}' (2kib, 8mib, 32gib)"),
        }
    }

    /// The name.
    pub fn name(&self) -> &'static str {
        match self {
            Shape::Kib2 => "2kib",
            Shape::Mib8 => "8mib",
            Shape::Gib32 => "32gib",
        }
    }

    /// Its sizes and query mixes (docs/filecoin.md).
    pub fn spec(&self) -> ShapeSpec {
        match self {
            Shape::Kib2 => ShapeSpec {
                constraints: 2_687_961,
                log_n: 22,
                aux: 2_685_673,
                queries: [
                    QueryMix {
                        query: "L",
                        share: 1.0,
                        zero: 0.5128,
                        one: 0.4709,
                    },
                    QueryMix {
                        query: "A",
                        share: 0.99601,
                        zero: 0.5148,
                        one: 0.4727,
                    },
                    QueryMix {
                        query: "B",
                        share: 0.25525,
                        zero: 0.4796,
                        one: 0.4740,
                    },
                ],
            },
            Shape::Mib8 => ShapeSpec {
                constraints: 3_844_969,
                log_n: 22,
                aux: 3_842_449,
                queries: MIX_8MIB,
            },
            Shape::Gib32 => ShapeSpec {
                constraints: 130_278_869,
                log_n: 27,
                aux: 130_278_541,
                queries: MIX_8MIB,
            },
        }
    }
}

/// Which compute devices the harness runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// Every visible GPU, else the CPU.
    Auto,
    /// The GPUs; fails without one.
    Gpu,
    /// The CPU.
    Cpu,
}

/// The synthetic partition every run proves: parameters, evaluations, split.
pub struct Inputs {
    /// The shape.
    pub shape: Shape,
    /// Random parameters of the shape.
    pub key: SharedProvingKey,
    /// Random evaluations.
    pub evals: Arc<Evaluations>,
    /// The split of the three queries.
    pub plan: Arc<MsmPlan>,
    /// Seconds it took to make them.
    pub setup_s: f64,
}

const UNIQUE: usize = 1 << 16;

fn tiled<T: Copy + Send + Sync + Default>(unique: &[T], n: usize) -> Vec<T> {
    let mut v = vec![T::default(); n];
    v.par_chunks_mut(unique.len())
        .for_each(|c| c.copy_from_slice(&unique[..c.len()]));
    v
}

/// A split of `n` scalars with the given zero and one fractions (others random), with sorted
/// indices as `MsmPlan::build` makes them.
fn synthetic_split(n: usize, zero: f64, one: f64, seed: u64) -> SparseScalars {
    const CHUNK: usize = 1 << 16;
    let parts: Vec<SparseScalars> = (0..n.div_ceil(CHUNK))
        .into_par_iter()
        .map(|k| {
            let mut rng = ChaCha20Rng::seed_from_u64(seed ^ ((k as u64) << 20));
            let mut s = SparseScalars::default();
            for i in k * CHUNK..((k + 1) * CHUNK).min(n) {
                let u = (rng.next_u32() as f64) / (u32::MAX as f64 + 1.0);
                if u < zero {
                    s.zeros += 1;
                } else if u < zero + one {
                    s.ones.insert((i - k * CHUNK) as u32);
                } else {
                    let mut l = [0u64; 4];
                    for x in l.iter_mut() {
                        *x = rng.next_u64();
                    }
                    l[3] &= 0x3fff_ffff_ffff_ffff;
                    s.tail_index.push(i as u32);
                    s.tail_scalars.push(scalar_from_raw_montgomery(l));
                }
            }
            s
        })
        .collect();
    let mut out = SparseScalars {
        num_bases: n,
        ..Default::default()
    };
    for (k, mut p) in parts.into_iter().enumerate() {
        out.zeros += p.zeros;
        // each part's ones are numbered from its first index
        out.ones.append_shifted(&p.ones, k * CHUNK);
        out.tail_index.append(&mut p.tail_index);
        out.tail_scalars.append(&mut p.tail_scalars);
    }
    out
}

/// Makes the synthetic partition of `shape` (its G2 bases only when the G2 MSM runs).
pub fn build_inputs(shape: Shape, g2: G2Stage, seed: u64) -> Inputs {
    let t = Instant::now();
    let spec = shape.spec();
    let lens: Vec<usize> = spec
        .queries
        .iter()
        .map(|q| ((spec.aux as f64) * q.share).round() as usize)
        .collect();
    let unique = random_points(UNIQUE, seed);
    let h = tiled(&unique, (1usize << spec.log_n) - 1);
    let (l, a, b_g1) = (
        tiled(&unique, lens[0]),
        tiled(&unique, lens[1]),
        tiled(&unique, lens[2]),
    );
    let b_g2 = match g2 {
        G2Stage::Run => {
            let mut rng = ChaCha20Rng::seed_from_u64(seed ^ 0x62);
            let u: Vec<G2Affine> = (0..1024)
                .map(|_| (G2Projective::generator() * Scalar::random(&mut rng)).to_affine())
                .collect();
            tiled(&u, lens[2])
        }
        G2Stage::Skip => Vec::new(),
    };
    let g1 = blstrs::G1Projective::generator().to_affine();
    let g2g = G2Projective::generator().to_affine();
    let vk = VerifyingKey::<Bls12> {
        alpha_g1: g1,
        beta_g1: g1,
        beta_g2: g2g,
        gamma_g2: g2g,
        delta_g1: g1,
        delta_g2: g2g,
        ic: vec![g1],
    };
    let key = Arc::new(ProvingKey::new(Parameters {
        vk,
        h: Arc::new(h),
        l: Arc::new(l),
        a: Arc::new(a),
        b_g1: Arc::new(b_g1),
        b_g2: Arc::new(b_g2),
    }));
    let evals = Arc::new(Evaluations {
        a: random_scalars(spec.constraints, seed ^ 1),
        b: random_scalars(spec.constraints, seed ^ 2),
    });
    let q = |i: usize| {
        synthetic_split(
            lens[i],
            spec.queries[i].zero,
            spec.queries[i].one,
            seed ^ (10 + i as u64),
        )
    };
    let plan = Arc::new(MsmPlan {
        l: q(0),
        a: q(1),
        b: q(2),
    });
    Inputs {
        shape,
        key,
        evals,
        plan,
        setup_s: t.elapsed().as_secs_f64(),
    }
}

/// One run of the harness.
#[derive(Clone, Debug)]
pub struct StageRun {
    /// Devices.
    pub backend: Backend,
    /// Compute slots per device.
    pub slots: usize,
    /// How a GPU's slots run their kernels.
    pub slot_kernels: SlotKernels,
    /// Whether a GPU's resident set takes the ones' pair sums where there is room.
    pub ones_pair_sums: OnesPairSums,
    /// Whether a GPU holds the parameter set's G1 tails where there is room.
    pub held_tails: HeldTails,
    /// Partitions timed (after the warm-up).
    pub partitions: usize,
    /// Partitions run before timing (resident uploads, pools warm); `None`: one per slot.
    pub warmup: Option<usize>,
    /// Partitions in flight at once; 0: two per slot.
    pub in_flight: usize,
    /// Stop starting partitions after this long.
    pub timeout: Duration,
    /// Whether the G2 MSM runs (where the device places it).
    pub g2: G2Stage,
    /// Ask every allocator to trim this often during the timed run (the regression test).
    pub trim_every: Option<Duration>,
    /// CPU-MSM actors; 0: a quarter of the cores.
    pub cpu_msm_workers: usize,
}

/// Percentiles of a sample, seconds.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Spread {
    /// Median.
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
    /// Largest.
    pub max: f64,
}

fn spread(v: &[f64]) -> Spread {
    Spread {
        p50: percentile(v, 50.0),
        p95: percentile(v, 95.0),
        max: percentile(v, 100.0),
    }
}

/// What one device did in the timed run.
#[derive(Clone, Debug, Serialize)]
pub struct DeviceReport {
    /// "cuda:0", "host".
    pub device: String,
    /// Timed partitions it ran.
    pub partitions: usize,
    /// Fraction of the run with kernels of any slot in flight (CUDA events); GPUs only.
    pub busy: Option<f64>,
    /// The same, between the first and the last `in_flight` completions (steady state).
    pub busy_steady: Option<f64>,
    /// Budget, bytes.
    pub budget: u64,
    /// Highest bytes leased at once.
    pub leased_high: u64,
    /// Highest bytes the device pool handed out at once (GPUs only).
    pub pool_used_high: Option<u64>,
    /// Whether the pool's high-water mark stayed within the leases.
    pub within_leases: Option<bool>,
    /// Resident bytes.
    pub resident_bytes: u64,
    /// Pool trims during the run.
    pub trims: u64,
    /// Device-global calls that overlapped a slot's work (must be 0).
    pub overlaps: usize,
    /// Device-global calls made in the run.
    pub device_calls: usize,
}

/// The result of a run.
#[derive(Clone, Debug, Serialize)]
pub struct StageReport {
    /// Shape.
    pub shape: Shape,
    /// Compute slots per device.
    pub slots: usize,
    /// How a GPU's slots ran their kernels.
    pub slot_kernels: SlotKernels,
    /// Whether a GPU's resident set could take the ones' pair sums.
    pub ones_pair_sums: OnesPairSums,
    /// Whether a GPU could hold the G1 tails.
    pub held_tails: HeldTails,
    /// In flight at once.
    pub in_flight: usize,
    /// Whether the G2 MSM ran.
    pub g2: bool,
    /// Timed partitions started.
    pub partitions: usize,
    /// Of which succeeded.
    pub succeeded: usize,
    /// Of which failed.
    pub failed: usize,
    /// Failures that were device out-of-memory errors (must be 0).
    pub oom_errors: usize,
    /// The first few errors.
    pub errors: Vec<String>,
    /// Seconds of the timed run.
    pub wall_s: f64,
    /// Succeeded partitions per minute.
    pub partitions_per_min: f64,
    /// Time each partition waited for leases.
    pub lease_wait_s: Spread,
    /// H stage.
    pub h_s: Spread,
    /// Sparse stage (with B in G2 on a GPU).
    pub msm_g1_s: Spread,
    /// G2 MSM on the CPU-MSM actors (0 where the device's sparse stage computes it).
    pub msm_g2_s: Spread,
    /// Whole partition.
    pub partition_s: Spread,
    /// Whether the time bound stopped the run early.
    pub timed_out: bool,
    /// Per device.
    pub devices: Vec<DeviceReport>,
}

/// The devices of a run, and each one's device-op log (GPUs only).
type Opened = (Vec<DeviceSetup>, Vec<Option<Arc<DeviceLog>>>);

/// Opens the devices of `run.backend` with `run.slots` slots each, running their kernels as
/// `run.slot_kernels` says, their resident sets with the pair sums `run.ones_pair_sums` allows
/// and their tails held as `run.held_tails` says (GPU logs recording); their logs.
fn open_devices(run: &StageRun) -> anyhow::Result<Opened> {
    let (backend, slots) = (run.backend, run.slots);
    let mut cfg = Config::embedded_default()?;
    cfg.pipeline.compute_slots = Count::Fixed(slots);
    cfg.pipeline.slot_kernels = run.slot_kernels;
    cfg.pipeline.ones_pair_sums = run.ones_pair_sums;
    cfg.pipeline.held_tails = run.held_tails;
    let cpu = |cfg: &Config| {
        (
            vec![host_device(slots, host_budget(&cfg.pipeline))],
            vec![None],
        )
    };
    if backend == Backend::Cpu {
        return Ok(cpu(&cfg));
    }
    cfg.pipeline.backend = BackendKind::Gpu;
    match proofline_runtime::gpu_devices(&cfg, Recording::On) {
        Ok(sel) => Ok(sel
            .devices
            .into_iter()
            .map(|d| (d.setup, Some(d.log)))
            .unzip()),
        Err(e) if backend == Backend::Auto => {
            eprintln!("no usable GPU ({e}): the CPU backend");
            Ok(cpu(&cfg))
        }
        Err(e) => anyhow::bail!("no usable GPU: {e}"),
    }
}

/// Runs `run` on `inputs`. Partitions of one set of inputs share one resident parameter set
/// per device.
pub fn run_stages(run: &StageRun, inputs: &Inputs) -> anyhow::Result<StageReport> {
    anyhow::ensure!(run.slots > 0, "slots must be at least 1");
    anyhow::ensure!(
        domain_size(&inputs.key) == 1 << inputs.shape.spec().log_n,
        "inputs of another shape"
    );
    let (setups, logs) = open_devices(run)?;
    let total_slots = run.slots * setups.len();
    let in_flight = if run.in_flight == 0 {
        2 * total_slots
    } else {
        run.in_flight
    };
    let warmup = run.warmup.unwrap_or(total_slots);
    let cpu_msm = if run.cpu_msm_workers == 0 {
        (cpu_cores() / 4).max(1)
    } else {
        run.cpu_msm_workers
    };
    let pool = StagePool::start(setups, cpu_msm).context("starting the stage pool")?;
    let labels = pool.device_labels();
    let input = |k: usize| ComputeInput {
        owner: format!("harness/{k}"),
        params_key: format!("synthetic-{}", inputs.shape.name()),
        pk: inputs.key.clone(),
        evals: inputs.evals.clone(),
        plan: PlanSource::Ready(inputs.plan.clone()),
        g2: run.g2,
        cancel: CancelToken::default(),
    };
    let go = |from: usize, count: usize, deadline: Instant| {
        let pool = &pool;
        futures::executor::block_on(
            stream::iter(from..from + count)
                .take_while(move |_| futures::future::ready(Instant::now() < deadline))
                .map(|k| async move {
                    let (r, t) = pool.run(input(k)).await;
                    (r, t, Instant::now())
                })
                .buffer_unordered(in_flight)
                .collect::<Vec<_>>(),
        )
    };
    // warm-up: parameters resident, pools warm; then the high-water marks from zero
    let warm = go(0, warmup, Instant::now() + run.timeout);
    if let Some(e) = warm.iter().find_map(|(r, _, _)| r.as_ref().err()) {
        anyhow::bail!("warm-up partition failed: {e}");
    }
    pool.reset_high_water();
    let before = futures::executor::block_on(pool.memory());
    let log_t0: Vec<f64> = logs
        .iter()
        .map(|l| l.as_ref().map_or(0.0, |l| l.now()))
        .collect();
    let ops_before: Vec<usize> = logs
        .iter()
        .map(|l| l.as_ref().map_or(0, |l| l.ops().len()))
        .collect();
    let start = Instant::now();
    let deadline = start + run.timeout;
    let stop = std::sync::atomic::AtomicBool::new(false);
    let results = std::thread::scope(|s| {
        if let Some(every) = run.trim_every {
            let (pool, stop) = (&pool, &stop);
            s.spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Acquire) {
                    std::thread::sleep(every);
                    pool.trim_all();
                }
            });
        }
        let r = go(warmup, run.partitions, deadline);
        stop.store(true, std::sync::atomic::Ordering::Release);
        r
    });
    let wall_s = start.elapsed().as_secs_f64();
    let log_t1: Vec<f64> = logs
        .iter()
        .map(|l| l.as_ref().map_or(0.0, |l| l.now()))
        .collect();
    // the trims asked for last run when the device is idle: let them
    std::thread::sleep(Duration::from_millis(200));
    let after = futures::executor::block_on(pool.memory());
    pool.shutdown();

    let mut errors = Vec::new();
    let mut oom = 0;
    let mut per_device = vec![0usize; labels.len()];
    let mut done_at = Vec::new();
    let mut lease_wait = Vec::new();
    let (mut h, mut g1, mut g2, mut total) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (r, t, at) in &results {
        match r {
            Ok((_, dev)) => {
                if let Some(i) = labels.iter().position(|l| l == dev) {
                    per_device[i] += 1;
                }
                done_at.push((*at - start).as_secs_f64());
                lease_wait.push(t.lease_wait_s);
                h.push(t.h_s);
                g1.push(t.msm_g1_s);
                g2.push(t.msm_g2_s);
                total.push(t.total_s);
            }
            Err(e) => {
                let m = e.to_string();
                if m.contains("out of memory") {
                    oom += 1;
                }
                if errors.len() < 5 {
                    errors.push(m);
                }
            }
        }
    }
    done_at.sort_by(|a, b| a.total_cmp(b));
    let steady = (done_at.len() > 2 * in_flight)
        .then(|| (done_at[in_flight - 1], done_at[done_at.len() - in_flight]));
    let devices = labels
        .iter()
        .enumerate()
        .map(|(i, label)| {
            let snap = after.iter().find(|s| &s.device == label);
            let trims_before = before
                .iter()
                .find(|s| &s.device == label)
                .map_or(0, |s| s.trims);
            let log = logs.get(i).and_then(|l| l.as_ref());
            let spans = log.map(|l| l.kernel_spans()).unwrap_or_default();
            let busy = log.map(|_| busy_fraction(&spans, log_t0[i] * 1e3, log_t1[i] * 1e3));
            let busy_steady = log.and_then(|_| {
                steady.map(|(a, b)| {
                    let off = log_t0[i];
                    busy_fraction(&spans, (off + a) * 1e3, (off + b) * 1e3)
                })
            });
            let pool_used_high = snap.and_then(|s| s.pool.map(|p| p.used_high));
            let leased_high = snap.map_or(0, |s| s.leased_high);
            DeviceReport {
                device: label.clone(),
                partitions: per_device[i],
                busy,
                busy_steady,
                budget: snap.map_or(0, |s| s.budget),
                leased_high,
                pool_used_high,
                within_leases: pool_used_high.map(|u| u <= leased_high),
                resident_bytes: snap.map_or(0, |s| s.resident_bytes),
                trims: snap.map_or(0, |s| s.trims).saturating_sub(trims_before),
                overlaps: log.map_or(0, |l| l.overlaps().len()),
                device_calls: log.map_or(0, |l| l.ops().len().saturating_sub(ops_before[i])),
            }
        })
        .collect();
    let succeeded = done_at.len();
    Ok(StageReport {
        shape: inputs.shape,
        slots: run.slots,
        slot_kernels: run.slot_kernels,
        ones_pair_sums: run.ones_pair_sums,
        held_tails: run.held_tails,
        in_flight,
        g2: run.g2 == G2Stage::Run,
        partitions: results.len(),
        succeeded,
        failed: results.len() - succeeded,
        oom_errors: oom,
        errors,
        wall_s,
        partitions_per_min: succeeded as f64 / wall_s * 60.0,
        lease_wait_s: spread(&lease_wait),
        h_s: spread(&h),
        msm_g1_s: spread(&g1),
        msm_g2_s: spread(&g2),
        partition_s: spread(&total),
        timed_out: results.len() < run.partitions,
        devices,
    })
}

/// The configuration's name of `k`.
pub fn slot_kernels_name(k: SlotKernels) -> &'static str {
    match k {
        SlotKernels::InTurn => "in_turn",
        SlotKernels::Concurrent => "concurrent",
    }
}

/// The configuration's name of `p`.
pub fn ones_pair_sums_name(p: OnesPairSums) -> &'static str {
    match p {
        OnesPairSums::Off => "off",
        OnesPairSums::WhereRoom => "where_room",
        OnesPairSums::TriplesWhereRoom => "triples_where_room",
    }
}

/// The configuration's name of `t`.
pub fn held_tails_name(t: HeldTails) -> &'static str {
    match t {
        HeldTails::Off => "off",
        HeldTails::WhereRoom => "where_room",
    }
}

fn pct(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{:.1} %", v * 100.0))
}

fn gb(x: Option<u64>) -> String {
    x.map_or("-".into(), |v| format!("{:.2}", v as f64 / 1e9))
}

/// The reports as a table.
pub fn table(reports: &[StageReport]) -> String {
    let mut out = format!(
        "{:<6} {:>5} {:>10} {:>10} {:>10} {:>6} {:>9} {:>8} {:>5} {:>9} {:>9} {:>8} {:>8} {:>8} {:>6} {:>5}\n",
        "shape",
        "slots",
        "kernels",
        "pair sums",
        "tails",
        "done",
        "part/min",
        "device",
        "parts",
        "busy",
        "steady",
        "peak GB",
        "lease GB",
        "wait p95",
        "trims",
        "OOM"
    );
    for r in reports {
        for d in &r.devices {
            out.push_str(&format!(
                "{:<6} {:>5} {:>10} {:>10} {:>10} {:>6} {:>9.1} {:>8} {:>5} {:>9} {:>9} {:>8} {:>8} {:>8.3} {:>6} {:>5}\n",
                r.shape.name(),
                r.slots,
                slot_kernels_name(r.slot_kernels),
                ones_pair_sums_name(r.ones_pair_sums),
                held_tails_name(r.held_tails),
                format!("{}/{}", r.succeeded, r.partitions),
                r.partitions_per_min,
                d.device,
                d.partitions,
                pct(d.busy),
                pct(d.busy_steady),
                gb(d.pool_used_high),
                gb(Some(d.leased_high)),
                r.lease_wait_s.p95,
                d.trims,
                r.oom_errors
            ));
        }
    }
    out
}
