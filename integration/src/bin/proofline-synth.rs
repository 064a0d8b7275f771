//! `proofline-synth`: synthesis alone, under load. Partitions of a named PoRep shape go through
//! a pool of the pipeline's own synthesis actors (`SynthesisActor`, the daemon's code path) and
//! nothing else; the report gives partitions per minute, per-partition latency and peak memory
//! for each worker count, so that an operator can size `pipeline.synthesis_workers` from a
//! measurement (docs/operations.md). Prints one JSON object, then a table.
//!
//! ```text
//! proofline-synth --shape 2kib|8mib [--workers 1,2,4,8] [--partitions 16]
//!                 [--mode precompiled|plain|both] [--constraints FILE] [--timeout-s 1800]
//! proofline-synth --shape 32gib [--constraints FILE] [--repeat 3]
//! ```
//!
//! * `2kib`, `8mib`: seals a fresh random sector of that size (no Groth16 parameters needed; the
//!   SDR parent cache goes to `--cache`, default the test fixture cache), plans it with the
//!   `porep-c2` adapter's own code, records the shape's constraints from filecoin-proofs' blank
//!   circuit (or reads `--constraints FILE`, writing it there first when missing), profiles one
//!   partition's witness challenge by challenge, then for each mode and worker count sends
//!   `--partitions` partitions to a fresh pool at once and waits for all of them. Each
//!   partition's result is dropped when it arrives, so memory holds what the workers hold.
//! * `32gib`: no sector can be sealed in minutes, so the two halves of a partition's synthesis
//!   are measured separately. The sparse products run on the recorded 32 GiB matrices (recorded
//!   from the blank circuit, or read from `--constraints FILE`) with a random assignment shaped
//!   like a real one (50.7 % zeros, 46.4 % ones, the rest random: the 8 MiB split); the witness
//!   is projected from an 8 MiB partition's per-challenge profile, scaled by aux variables per
//!   challenge, with the challenges spread over this machine's threads. Both halves and the
//!   peak memory are reported.
//!
//! Peak memory is the process's VmHWM, reset before each run (`/proc/self/clear_refs`).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix::prelude::*;
use anyhow::Context;
use blstrs::Scalar;
use clap::{Parser, ValueEnum};
use ff::Field;
use proofline_actors::messages::{CancelToken, Synthesize};
use proofline_actors::workers::SynthesisActor;
use proofline_filecoin::bench::{load_average, process_cpu_secs};
use proofline_filecoin::porep::plan_partitions;
use proofline_filecoin::porep_partition::{profile, WitnessProfile};
use proofline_filecoin::{c1, constraints, fixture, shapes, RegisteredSealProof};
use proofline_groth16::prover::params_shape_of;
use proofline_groth16::synthesis::synthesize_boxed;
use proofline_groth16::{ParamsShape, RecordedSystem, Witness};
use proofline_integration::percentile;
use proofline_jobs::{ConstraintsStore, ParamsSpec, PartitionPlan, SynthesisMode};
use proofline_r1cs::R1csError;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
enum Shape {
    #[value(name = "2kib")]
    #[serde(rename = "2kib")]
    S2kib,
    #[value(name = "8mib")]
    #[serde(rename = "8mib")]
    S8mib,
    #[value(name = "32gib")]
    #[serde(rename = "32gib")]
    S32gib,
}

impl Shape {
    fn registered_proof(self) -> RegisteredSealProof {
        match self {
            Shape::S2kib => RegisteredSealProof::StackedDrg2KiBV1_1,
            Shape::S8mib => RegisteredSealProof::StackedDrg8MiBV1_1,
            Shape::S32gib => RegisteredSealProof::StackedDrg32GiBV1_1,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ModeArg {
    Precompiled,
    Plain,
    Both,
}

#[derive(Parser)]
#[command(about = "Synthesis alone: partitions per minute against the synthesis worker count")]
struct Args {
    /// PoRep shape.
    #[arg(long, value_enum)]
    shape: Shape,
    /// Worker counts to measure, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
    workers: Vec<usize>,
    /// Partitions per run (one run per mode and worker count; at most 1000).
    #[arg(long, default_value_t = 8)]
    partitions: usize,
    /// Synthesis mode(s).
    #[arg(long, value_enum, default_value = "both")]
    mode: ModeArg,
    /// Recorded constraint file of the shape: read when present, else recorded and written here.
    #[arg(long)]
    constraints: Option<PathBuf>,
    /// SDR parent cache directory for sealing (default: the test fixture cache).
    #[arg(long)]
    cache: Option<PathBuf>,
    /// 32gib: repetitions of the sparse products.
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Give up on a run after this many seconds.
    #[arg(long, default_value_t = 1800)]
    timeout_s: u64,
    /// Also write the JSON object here.
    #[arg(long)]
    json: Option<PathBuf>,
}

/// `VmHWM` (peak) and `VmRSS` of this process, bytes.
fn memory() -> (u64, u64) {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |k: &str| {
        s.lines()
            .find(|l| l.starts_with(k))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024)
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// Resets the peak (`VmHWM`) to the current resident size.
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn gib(b: u64) -> f64 {
    b as f64 / (1u64 << 30) as f64
}

/// Sum and count of a `proofline_stage_seconds` histogram in a Prometheus page.
fn stage_sum(page: &str, stage: &str) -> (f64, f64) {
    let get = |suffix: &str| {
        let prefix = format!("proofline_stage_seconds_{suffix}{{stage=\"{stage}\"}} ");
        page.lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (get("sum"), get("count"))
}

fn metrics_page() -> String {
    proofline_runtime::metrics_handle()
        .map(|h| h.render())
        .unwrap_or_default()
}

/// One run: a mode and a worker count.
#[derive(Serialize)]
struct Run {
    mode: &'static str,
    workers: usize,
    partitions: usize,
    succeeded: usize,
    wall_s: f64,
    partitions_per_minute: f64,
    /// Time in the actor per partition (circuit built to result), p50/p95/max.
    service_p50_s: f64,
    service_p95_s: f64,
    service_max_s: f64,
    /// Mean seconds of the witness and of the sparse products (pre-compiled runs).
    witness_mean_s: Option<f64>,
    products_mean_s: Option<f64>,
    /// CPU seconds of the process (all threads) over the run, per partition: steadier than
    /// wall time on a shared machine.
    cpu_per_partition_s: f64,
    /// 1-minute load average at the end of the run.
    load_average: f64,
    peak_rss_bytes: u64,
    /// (peak − resident before the run) / min(workers, partitions).
    peak_per_partition_bytes: u64,
}

struct Sector {
    sector: fixture::SealedSector,
}

impl Sector {
    fn plan(&self) -> anyhow::Result<Vec<PartitionPlan>> {
        let s = &self.sector;
        let body = c1::request_body(&s.c1_output, &s.prover_id, s.sector_id);
        let input = c1::parse_input(&body["input"], None)?;
        Ok(plan_partitions(input)?)
    }

    fn profile(&self) -> anyhow::Result<WitnessProfile> {
        let s = &self.sector;
        let body = c1::request_body(&s.c1_output, &s.prover_id, s.sector_id);
        let input = c1::parse_input(&body["input"], None)?;
        Ok(profile(input, 0)?)
    }
}

fn seal(shape: Shape, cache: &Path) -> anyhow::Result<Sector> {
    fixture::point_filecoin_proofs_at(cache)?;
    let rp = shape.registered_proof();
    eprintln!("sealing a random {} sector", shapes::name(rp));
    let sector = fixture::seal_random_sector(rp, &mut rand::rngs::OsRng)?;
    eprintln!("sealed in {:.1} s", sector.seal_secs);
    Ok(Sector { sector })
}

/// The shape's recorded system: read from `file` when present, else recorded from the blank
/// circuit (and written to `file` when given). Returns it with (record or load) seconds.
fn recorded(
    rp: RegisteredSealProof,
    file: Option<&Path>,
) -> anyhow::Result<(RecordedSystem, &'static str, f64)> {
    let key = constraints::key(rp)?;
    let t = Instant::now();
    if let Some(f) = file.filter(|f| f.is_file()) {
        eprintln!("reading {}", f.display());
        let sys = proofline_r1cs::file::read(f, Some(&key))?;
        return Ok((sys, "loaded", t.elapsed().as_secs_f64()));
    }
    eprintln!("recording the {} constraint system", shapes::name(rp));
    let sys = constraints::record(rp)?;
    let secs = t.elapsed().as_secs_f64();
    if let Some(f) = file {
        proofline_r1cs::file::write(&sys, f).with_context(|| format!("writing {}", f.display()))?;
    }
    Ok((sys, "recorded", secs))
}

/// Sends `plans` to a fresh pool of `workers` synthesis actors at once and waits for all.
fn run_pool(
    mode: SynthesisMode,
    workers: usize,
    plans: Vec<PartitionPlan>,
    spec: &ParamsSpec,
    shape: ParamsShape,
    sys: &Arc<RecordedSystem>,
    timeout: Duration,
) -> anyhow::Result<Run> {
    let store = Arc::new(ConstraintsStore::new(mode, None));
    if mode == SynthesisMode::Precompiled {
        store.insert(&spec.id, sys.clone());
    }
    let partitions = plans.len();
    let before = metrics_page();
    let (_, rss_before) = memory();
    reset_peak();
    let cpu_before = process_cpu_secs();
    let system = System::new();
    let spec = spec.clone();
    let results = system.block_on(async move {
        let pool = SyncArbiter::start(workers, move || SynthesisActor::new(store.clone()));
        let t0 = Instant::now();
        let sends = plans.into_iter().enumerate().map(|(i, plan)| {
            let started: Arc<Mutex<Option<Instant>>> = Arc::default();
            let mark = started.clone();
            let build = plan.circuit;
            let msg = Synthesize {
                job: format!("synth-{i}"),
                partition: 0,
                circuit: Box::new(move || {
                    *mark.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
                    build()
                }),
                expected_inputs: plan.public_inputs,
                params: spec.clone(),
                shape,
                cancel: CancelToken::default(),
            };
            let pool = pool.clone();
            async move {
                let reply = pool.send(msg).await;
                let done = Instant::now();
                // The partition is dropped here: memory holds only what the workers hold.
                let ok = matches!(reply, Ok(Ok(_)));
                if let Ok(Err(e)) = &reply {
                    eprintln!("partition {i} failed: {e}");
                }
                let start = *started.lock().unwrap_or_else(|e| e.into_inner());
                (ok, start.map(|s| (done - s).as_secs_f64()))
            }
        });
        let all = futures::future::join_all(sends);
        let r = actix::clock::timeout(timeout, all).await;
        (r, t0.elapsed().as_secs_f64())
    });
    let (results, wall) = results;
    let results = results.map_err(|_| anyhow::anyhow!("run timed out after {timeout:?}"))?;
    let (peak, _) = memory();
    let cpu = process_cpu_secs() - cpu_before;
    let after = metrics_page();
    let succeeded = results.iter().filter(|(ok, _)| *ok).count();
    let service: Vec<f64> = results.iter().filter_map(|(_, s)| *s).collect();
    let mean = |stage: &str| {
        let (s0, c0) = stage_sum(&before, stage);
        let (s1, c1) = stage_sum(&after, stage);
        (c1 > c0).then(|| (s1 - s0) / (c1 - c0))
    };
    let label = match mode {
        SynthesisMode::Precompiled => "precompiled",
        SynthesisMode::Plain => "plain",
    };
    Ok(Run {
        mode: label,
        workers,
        partitions,
        succeeded,
        wall_s: wall,
        partitions_per_minute: partitions as f64 / wall * 60.0,
        service_p50_s: percentile(&service, 50.0),
        service_p95_s: percentile(&service, 95.0),
        service_max_s: percentile(&service, 100.0),
        witness_mean_s: mean("synthesis_witness"),
        products_mean_s: mean("synthesis_products"),
        cpu_per_partition_s: cpu / partitions.max(1) as f64,
        load_average: load_average(),
        peak_rss_bytes: peak,
        peak_per_partition_bytes: peak.saturating_sub(rss_before)
            / workers.min(partitions).max(1) as u64,
    })
}

/// A random assignment with a real partition's split: 50.66 % zeros, 46.42 % ones, the rest
/// uniformly random (the aux values of an 8 MiB partition, docs/filecoin.md).
fn random_witness(inputs: usize, aux: usize) -> Witness {
    let value = |rng: &mut rand_chacha::ChaCha8Rng| {
        let u: f64 = rng.gen();
        if u < 0.5066 {
            Scalar::ZERO
        } else if u < 0.5066 + 0.4642 {
            Scalar::ONE
        } else {
            Scalar::random(&mut *rng)
        }
    };
    let chunk = 1 << 16;
    let aux_values: Vec<Scalar> = (0..aux.div_ceil(chunk))
        .into_par_iter()
        .flat_map_iter(|c| {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(c as u64);
            let n = chunk.min(aux - c * chunk);
            (0..n).map(move |_| value(&mut rng)).collect::<Vec<_>>()
        })
        .collect();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(u64::MAX);
    let mut input: Vec<Scalar> = (0..inputs).map(|_| Scalar::random(&mut rng)).collect();
    if let Some(first) = input.first_mut() {
        *first = Scalar::ONE;
    }
    Witness {
        input,
        aux: aux_values,
    }
}

/// Bytes per second of one large copy (the join of the challenges' witnesses is one).
fn copy_bandwidth() -> f64 {
    let src = vec![7u8; 1 << 30];
    let t = Instant::now();
    let dst = src.clone();
    let secs = t.elapsed().as_secs_f64();
    std::hint::black_box(&dst);
    (1u64 << 30) as f64 / secs.max(1e-9)
}

fn sealed_shape(args: &Args, cache: &Path) -> anyhow::Result<serde_json::Value> {
    anyhow::ensure!(
        args.partitions > 0 && args.partitions <= 1000,
        "--partitions must be in 1..=1000"
    );
    anyhow::ensure!(
        !args.workers.is_empty() && args.workers.iter().all(|&w| w > 0 && w <= 256),
        "--workers must list counts in 1..=256"
    );
    let rp = args.shape.registered_proof();
    let sector = seal(args.shape, cache)?;
    let (sys, how, sys_secs) = recorded(rp, args.constraints.as_deref())?;
    let sys = Arc::new(sys);

    // One plain synthesis gives the parameters' shape the actors check against.
    let t = Instant::now();
    let first = sector.plan()?.remove(0);
    let plain = synthesize_boxed((first.circuit)()?)?;
    let plain_single_secs = t.elapsed().as_secs_f64();
    let shape = params_shape_of(&plain);
    drop(plain);
    let profile = sector.profile()?;

    let spec = ParamsSpec {
        id: constraints::key(rp)?,
        path: PathBuf::from(constraints::key(rp)?),
        check: None,
        hint: String::new(),
    };
    let modes: Vec<SynthesisMode> = match args.mode {
        ModeArg::Precompiled => vec![SynthesisMode::Precompiled],
        ModeArg::Plain => vec![SynthesisMode::Plain],
        ModeArg::Both => vec![SynthesisMode::Plain, SynthesisMode::Precompiled],
    };
    let mut runs = Vec::new();
    for &mode in &modes {
        for &w in &args.workers {
            let plans = (0..args.partitions)
                .map(|_| sector.plan().map(|mut p| p.remove(0)))
                .collect::<anyhow::Result<Vec<_>>>()?;
            eprintln!("{mode:?}: {} partitions on {w} worker(s)", plans.len());
            let run = run_pool(
                mode,
                w,
                plans,
                &spec,
                shape,
                &sys,
                Duration::from_secs(args.timeout_s),
            )?;
            runs.push(run);
        }
    }
    Ok(serde_json::json!({
        "harness": "synthesis",
        "shape": args.shape,
        "registered_proof": shapes::name(rp),
        "cpus": std::thread::available_parallelism().map_or(1, |n| n.get()),
        "rayon_threads": rayon::current_num_threads(),
        "seal_secs": sector.sector.seal_secs,
        "constraints": {
            "how": how,
            "secs": sys_secs,
            "constraints": sys.counts().constraints,
            "aux": sys.counts().aux,
            "terms": sys.nnz(),
            "resident_bytes": sys.resident_bytes(),
        },
        "plain_single_partition_secs": plain_single_secs,
        "witness_profile": profile,
        "runs": runs,
    }))
}

fn big_shape(args: &Args, cache: &Path) -> anyhow::Result<serde_json::Value> {
    let rp = args.shape.registered_proof();
    reset_peak();
    let (sys, how, sys_secs) = recorded(rp, args.constraints.as_deref())?;
    let (record_peak, _) = memory();
    let c = sys.counts();
    eprintln!(
        "{}: {} constraints, {} aux, terms {:?}, {:.2} GiB resident",
        shapes::name(rp),
        c.constraints,
        c.aux,
        sys.nnz(),
        gib(sys.resident_bytes() as u64)
    );

    // The sparse products on a random assignment, which satisfies no constraint: evaluation
    // computes a and b and checks every row of C against their product (the check does not stop
    // at the first failure), then names the first row it fails.
    let t = Instant::now();
    let w = random_witness(c.inputs, c.aux);
    let witness_gen_secs = t.elapsed().as_secs_f64();
    reset_peak();
    let mut products = Vec::new();
    for i in 0..args.repeat.max(1) {
        let t = Instant::now();
        match sys.evaluate(&w) {
            Ok(_) | Err(R1csError::Unsatisfied { .. }) => {}
            Err(e) => return Err(e.into()),
        }
        products.push(t.elapsed().as_secs_f64());
        eprintln!("products {i}: {:.2} s", products[i]);
    }
    let (spmv_peak, _) = memory();
    let products_best = products.iter().copied().fold(f64::MAX, f64::min);
    let products_median = percentile(&products, 50.0);
    drop(w);

    // The witness, projected from an 8 MiB partition's per-challenge profile.
    let sector = seal(Shape::S8mib, cache)?;
    let profile = sector.profile()?;
    let challenges_8: f64 = profile.challenges.len() as f64;
    let challenge_secs: f64 = profile.challenges.iter().map(|p| p.secs).sum();
    let challenge_aux: f64 = profile.challenges.iter().map(|p| p.aux as f64).sum();
    let secs_per_aux = challenge_secs / challenge_aux;
    let challenges = shapes::challenges_per_partition(rp)?;
    let aux_per_challenge = (c.aux - profile.shared.aux) as f64 / challenges as f64;
    let per_challenge = secs_per_aux * aux_per_challenge;
    let threads = rayon::current_num_threads();
    let rounds = challenges.div_ceil(threads);
    let aux_bytes = (c.aux * 32) as f64;
    let join_secs = aux_bytes / copy_bandwidth();
    let witness_one_thread = profile.shared.secs + challenges as f64 * per_challenge;
    // The shared values once, then the challenges in rounds of one per thread, then the join.
    let witness_parallel = profile.shared.secs + rounds as f64 * per_challenge + join_secs;
    let total = witness_parallel + products_median;
    Ok(serde_json::json!({
        "harness": "synthesis",
        "shape": args.shape,
        "registered_proof": shapes::name(rp),
        "cpus": std::thread::available_parallelism().map_or(1, |n| n.get()),
        "rayon_threads": threads,
        "constraints": {
            "how": how,
            "secs": sys_secs,
            "constraints": c.constraints,
            "inputs": c.inputs,
            "aux": c.aux,
            "terms": sys.nnz(),
            "coefficients": sys.table().len(),
            "resident_bytes": sys.resident_bytes(),
            "peak_rss_bytes": record_peak,
        },
        "products": {
            "runs_s": products,
            "best_s": products_best,
            "median_s": products_median,
            "random_assignment_secs": witness_gen_secs,
            "peak_rss_bytes": spmv_peak,
        },
        "witness_projection": {
            "from": "StackedDrg8MiBV1_1 partition 0, challenges one at a time on one thread",
            "seal_8mib_secs": sector.sector.seal_secs,
            "challenges_8mib": challenges_8,
            "secs_per_aux_variable": secs_per_aux,
            "shared_secs": profile.shared.secs,
            "challenges": challenges,
            "aux_per_challenge": aux_per_challenge,
            "per_challenge_secs": per_challenge,
            "rounds_on_threads": rounds,
            "join_secs": join_secs,
            "one_thread_secs": witness_one_thread,
            "parallel_secs": witness_parallel,
            "profile_8mib": profile,
        },
        "projected_partition_secs": total,
        "projected_peak_rss_bytes": spmv_peak + aux_bytes as u64,
    }))
}

fn table(r: &serde_json::Value) -> String {
    let mut out = String::new();
    let f = |v: &serde_json::Value| v.as_f64().unwrap_or(0.0);
    out.push_str(&format!(
        "{} ({}), {} CPUs, {} rayon threads\n",
        r["shape"].as_str().unwrap_or(""),
        r["registered_proof"].as_str().unwrap_or(""),
        r["cpus"],
        r["rayon_threads"]
    ));
    let cs = &r["constraints"];
    out.push_str(&format!(
        "constraints {} ({} in {:.1} s), terms {}, resident {:.2} GiB\n",
        cs["constraints"],
        cs["how"].as_str().unwrap_or(""),
        f(&cs["secs"]),
        cs["terms"],
        f(&cs["resident_bytes"]) / (1u64 << 30) as f64
    ));
    if let Some(runs) = r["runs"].as_array() {
        out.push_str(&format!(
            "plain synthesis of one partition, alone: {:.2} s; witness alone: {:.2} s\n",
            f(&r["plain_single_partition_secs"]),
            f(&r["witness_profile"]["parallel_secs"])
        ));
        out.push_str(&format!(
            "{:<12} {:>7} {:>6} {:>8} {:>10} {:>8} {:>8} {:>9} {:>9} {:>8} {:>9} {:>5}\n",
            "mode",
            "workers",
            "parts",
            "wall s",
            "parts/min",
            "p50 s",
            "p95 s",
            "witness",
            "products",
            "CPU s/p",
            "peak GiB",
            "load"
        ));
        for run in runs {
            let opt = |v: &serde_json::Value| {
                v.as_f64()
                    .map_or_else(|| "-".to_string(), |x| format!("{x:.3}"))
            };
            out.push_str(&format!(
                "{:<12} {:>7} {:>6} {:>8.2} {:>10.1} {:>8.3} {:>8.3} {:>9} {:>9} {:>8.2} {:>9.2} {:>5.1}\n",
                run["mode"].as_str().unwrap_or(""),
                run["workers"],
                run["partitions"],
                f(&run["wall_s"]),
                f(&run["partitions_per_minute"]),
                f(&run["service_p50_s"]),
                f(&run["service_p95_s"]),
                opt(&run["witness_mean_s"]),
                opt(&run["products_mean_s"]),
                f(&run["cpu_per_partition_s"]),
                f(&run["peak_rss_bytes"]) / (1u64 << 30) as f64,
                f(&run["load_average"])
            ));
        }
    } else {
        let p = &r["products"];
        let w = &r["witness_projection"];
        out.push_str(&format!(
            "products (A·w, B·w, C·w) on the recorded matrices: best {:.2} s, median {:.2} s, peak {:.2} GiB\n",
            f(&p["best_s"]),
            f(&p["median_s"]),
            f(&p["peak_rss_bytes"]) / (1u64 << 30) as f64
        ));
        out.push_str(&format!(
            "witness, projected from 8 MiB: {} challenges x {:.2} s ({:.0} aux each), {} round(s) on {} threads, join {:.2} s: {:.2} s (one thread: {:.1} s)\n",
            w["challenges"],
            f(&w["per_challenge_secs"]),
            f(&w["aux_per_challenge"]),
            w["rounds_on_threads"],
            r["rayon_threads"],
            f(&w["join_secs"]),
            f(&w["parallel_secs"]),
            f(&w["one_thread_secs"])
        ));
        out.push_str(&format!(
            "projected synthesis per partition: {:.2} s, peak {:.2} GiB\n",
            f(&r["projected_partition_secs"]),
            f(&r["projected_peak_rss_bytes"]) / (1u64 << 30) as f64
        ));
    }
    out
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if let Some(path) = &args.json {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        anyhow::ensure!(dir.is_dir(), "--json {}: no such directory", path.display());
    }
    let cache = args
        .cache
        .clone()
        .unwrap_or_else(fixture::default_cache_dir);
    let report = match args.shape {
        Shape::S2kib | Shape::S8mib => sealed_shape(&args, &cache)?,
        Shape::S32gib => big_shape(&args, &cache)?,
    };
    let json = serde_json::to_string(&report)?;
    println!("{json}");
    println!();
    print!("{}", table(&report));
    if let Some(path) = &args.json {
        std::fs::write(path, format!("{json}\n"))
            .with_context(|| format!("--json {}", path.display()))?;
    }
    let failed: u64 = report["runs"]
        .as_array()
        .map(|runs| {
            runs.iter()
                .map(|r| {
                    r["partitions"].as_u64().unwrap_or(0) - r["succeeded"].as_u64().unwrap_or(0)
                })
                .sum()
        })
        .unwrap_or(0);
    anyhow::ensure!(failed == 0, "{failed} partition(s) failed");
    Ok(())
}
