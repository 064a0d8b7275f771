//! Load harness, two modes. Each prints JSON, then a table.
//!
//! * `--mode http` (default): drives a daemon over HTTP with a bounded number of jobs at a
//!   bounded concurrency, then reports throughput, latency percentiles of every pipeline stage,
//!   and each actor pool's utilisation (from `/metrics` busy-time counters). Without `--server`
//!   it starts its own daemon on a free loopback port over cached parameters. Traffic goes to
//!   loopback only.
//! * `--mode stages`: synthetic partitions of a named shape (`--shape 2kib|8mib|32gib`) through
//!   the real allocators, compute slots and CPU-MSM actors, one run per `--slots` value (and
//!   per `--slot-kernels` value: a GPU's slots taking turns for their kernels or not; and per
//!   `--ones-pair-sums` value: the resident sets with or without the ones' pair sums),
//!   `--partitions` each, bounded by `--timeout-s`: partitions per minute, each GPU's
//!   kernel-busy fraction (CUDA events), lease waits, peak device memory against the leases,
//!   trims, out-of-memory errors (module `proofline_integration::stages`).
//!
//! ```text
//! cargo run --release -p proofline-integration --bin proofline-harness -- --jobs 8 --concurrency 2
//! proofline-harness --mode stages --shape 32gib --slots 1,2,4 --partitions 24 --json out.json
//! ```

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;
use proofline_actors::{JobState, JobStatus};
use proofline_client::Client;
use proofline_integration::{cached_params, percentile, start, test_config};
use proofline_jobs::JobRequest;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Mode {
    Http,
    Stages,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum G2 {
    Run,
    Skip,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum SlotKernelsArg {
    InTurn,
    Concurrent,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum OnesPairSumsArg {
    Off,
    WhereRoom,
    TriplesWhereRoom,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum HeldTailsArg {
    Off,
    WhereRoom,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum BackendArg {
    Auto,
    Gpu,
    Cpu,
}

#[derive(Parser)]
struct Args {
    /// http: jobs over HTTP; stages: synthetic partitions through the compute devices.
    #[arg(long, value_enum, default_value = "http")]
    mode: Mode,
    /// Daemon URL; default: start one in-process.
    #[arg(long)]
    server: Option<String>,
    /// Built-in circuit to prove.
    #[arg(long, default_value = "sha256-1")]
    circuit: String,
    /// Jobs to submit in total (at most 10,000).
    #[arg(long, default_value_t = 8)]
    jobs: usize,
    /// Jobs in flight at once.
    #[arg(long, default_value_t = 2)]
    concurrency: usize,
    /// Give up after this many seconds (stages: stop starting partitions, per run).
    #[arg(long, default_value_t = 1800)]
    timeout_s: u64,
    /// stages: partition shape (2kib, 8mib, 32gib).
    #[arg(long, default_value = "2kib")]
    shape: String,
    /// stages: compute slots per device, one run per value (e.g. 1,2,4).
    #[arg(long, value_delimiter = ',', default_value = "2")]
    slots: Vec<usize>,
    /// stages: how a GPU's slots run their kernels (`pipeline.slot_kernels`), one run per value
    /// and slot count (e.g. in-turn,concurrent).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "in-turn")]
    slot_kernels: Vec<SlotKernelsArg>,
    /// stages: whether a GPU's resident set takes the ones' pair sums where there is room
    /// (`pipeline.ones_pair_sums`), one run per value, slot count and kernels value (e.g.
    /// off,where-room).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "off")]
    ones_pair_sums: Vec<OnesPairSumsArg>,
    /// stages: whether a GPU holds the parameter set's G1 tails where there is room
    /// (`pipeline.held_tails`), one run per value and per value of the options above (e.g.
    /// off,where-room).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "where-room")]
    held_tails: Vec<HeldTailsArg>,
    /// stages: timed partitions per run.
    #[arg(long, default_value_t = 16)]
    partitions: usize,
    /// stages: partitions in flight (0: two per slot).
    #[arg(long, default_value_t = 0)]
    in_flight: usize,
    /// stages: untimed partitions first (default: one per slot).
    #[arg(long)]
    warmup: Option<usize>,
    /// stages: devices.
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendArg,
    /// stages: the G2 MSM where the device places it (in a GPU's sparse stage, on the CPU-MSM
    /// actors beside the CPU backend), or skipped (to measure the G1 side alone).
    #[arg(long, value_enum, default_value = "run")]
    g2: G2,
    /// stages: also write the JSON here.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
}

/// `--mode stages`.
fn stages(args: &Args) -> anyhow::Result<()> {
    use proofline_config::{HeldTails, OnesPairSums, SlotKernels};
    use proofline_integration::stages::{
        build_inputs, held_tails_name, ones_pair_sums_name, run_stages, slot_kernels_name, table,
        Backend, Shape, StageRun,
    };
    let shape = Shape::parse(&args.shape)?;
    let g2 = match args.g2 {
        G2::Run => proofline_actors::G2Stage::Run,
        G2::Skip => proofline_actors::G2Stage::Skip,
    };
    let backend = match args.backend {
        BackendArg::Auto => Backend::Auto,
        BackendArg::Gpu => Backend::Gpu,
        BackendArg::Cpu => Backend::Cpu,
    };
    eprintln!("making the synthetic {} partition ...", shape.name());
    let inputs = build_inputs(shape, g2, 7);
    eprintln!("ready in {:.1} s", inputs.setup_s);
    let mut reports = Vec::new();
    let runs = args.slots.iter().flat_map(|&slots| {
        args.slot_kernels.iter().flat_map(move |&kernels| {
            args.ones_pair_sums.iter().flat_map(move |&pairs| {
                args.held_tails
                    .iter()
                    .map(move |&tails| (slots, kernels, pairs, tails))
            })
        })
    });
    for (slots, kernels, pairs, tails) in runs {
        let slot_kernels = match kernels {
            SlotKernelsArg::InTurn => SlotKernels::InTurn,
            SlotKernelsArg::Concurrent => SlotKernels::Concurrent,
        };
        let ones_pair_sums = match pairs {
            OnesPairSumsArg::Off => OnesPairSums::Off,
            OnesPairSumsArg::WhereRoom => OnesPairSums::WhereRoom,
            OnesPairSumsArg::TriplesWhereRoom => OnesPairSums::TriplesWhereRoom,
        };
        let held_tails = match tails {
            HeldTailsArg::Off => HeldTails::Off,
            HeldTailsArg::WhereRoom => HeldTails::WhereRoom,
        };
        let run = StageRun {
            backend,
            slots,
            slot_kernels,
            ones_pair_sums,
            held_tails,
            partitions: args.partitions,
            warmup: args.warmup,
            in_flight: args.in_flight,
            timeout: Duration::from_secs(args.timeout_s),
            g2,
            trim_every: None,
            cpu_msm_workers: 0,
        };
        let r = run_stages(&run, &inputs)?;
        eprintln!(
            "{} slot(s), kernels {}, pair sums {}, tails {}: {}/{} partitions, {:.1} per minute",
            slots,
            slot_kernels_name(slot_kernels),
            ones_pair_sums_name(ones_pair_sums),
            held_tails_name(held_tails),
            r.succeeded,
            r.partitions,
            r.partitions_per_min
        );
        reports.push(r);
    }
    let doc = serde_json::json!({
        "harness": "stages",
        "shape": shape,
        "spec": shape.spec(),
        "setup_s": inputs.setup_s,
        "runs": reports,
    });
    let text = serde_json::to_string_pretty(&doc)?;
    println!("{text}");
    if let Some(p) = &args.json {
        std::fs::write(p, &text).with_context(|| format!("writing {}", p.display()))?;
    }
    println!();
    print!("{}", table(&reports));
    let oom: usize = reports.iter().map(|r| r.oom_errors).sum();
    let failed: usize = reports.iter().map(|r| r.failed).sum();
    anyhow::ensure!(oom == 0, "{oom} out-of-memory errors");
    anyhow::ensure!(failed == 0, "{failed} partitions failed");
    Ok(())
}

/// `actor -> busy seconds` from a Prometheus text page.
fn busy_seconds(metrics: &str) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for line in metrics.lines() {
        if let Some(rest) = line.strip_prefix("proofline_actor_busy_seconds_total{actor=\"") {
            if let Some((actor, tail)) = rest.split_once('"') {
                if let Some(v) = tail.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok()) {
                    out.insert(actor.to_string(), v);
                }
            }
        }
    }
    out
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if args.mode == Mode::Stages {
        // the pipeline's own logs on stderr, apart from the JSON and the table on stdout:
        // warnings by default, more through RUST_LOG (`info`: which tails a device holds)
        let mut quiet = proofline_config::Config::embedded_default()?;
        quiet.log.level = "warn".into();
        proofline_runtime::init_logging(&quiet);
        return stages(&args);
    }
    anyhow::ensure!(
        args.jobs > 0 && args.jobs <= 10_000,
        "--jobs must be in 1..=10000"
    );
    anyhow::ensure!(args.concurrency > 0, "--concurrency must be at least 1");
    let (daemon, url) = match &args.server {
        Some(u) => (None, u.clone()),
        None => {
            let dir = cached_params(&args.circuit)?;
            let mut cfg = test_config(&dir)?;
            cfg.pipeline.max_partitions_in_flight = args.concurrency.into();
            let d = start(&cfg)?;
            let u = d.url();
            (Some(d), u)
        }
    };
    let client = Client::new(url.clone());
    let before = busy_seconds(&client.metrics().unwrap_or_default());
    let deadline = Instant::now() + Duration::from_secs(args.timeout_s);
    let start_t = Instant::now();
    let mut finished: Vec<JobStatus> = Vec::new();
    let mut in_flight: Vec<String> = Vec::new();
    let mut submitted = 0usize;
    while finished.len() < args.jobs {
        anyhow::ensure!(
            Instant::now() < deadline,
            "timed out after {} s",
            args.timeout_s
        );
        while in_flight.len() < args.concurrency && submitted < args.jobs {
            let req = JobRequest {
                kind: "groth16".into(),
                circuit: Some(args.circuit.clone()),
                input: serde_json::json!({ "seed": submitted as u64 }),
                public_inputs: None,
                ..Default::default()
            };
            let s = client.submit(&req).context("submit")?;
            in_flight.push(s.id);
            submitted += 1;
        }
        // Long-poll the oldest job; then collect every job that has finished.
        let _ = client.status(&in_flight[0], Some(5));
        let mut still = Vec::new();
        for id in in_flight.drain(..) {
            let s = client.status(&id, None)?;
            if s.state.is_terminal() {
                finished.push(s);
            } else {
                still.push(id);
            }
        }
        in_flight = still;
    }
    let wall = start_t.elapsed().as_secs_f64();
    let after = busy_seconds(&client.metrics().unwrap_or_default());
    let ok = finished
        .iter()
        .filter(|s| s.state == JobState::Succeeded)
        .count();
    let stage_samples: Vec<(&str, Vec<f64>)> = vec![
        (
            "queued",
            finished.iter().map(|s| s.timings.queued_s).collect(),
        ),
        (
            "synthesis",
            finished.iter().map(|s| s.timings.synthesis_s).collect(),
        ),
        (
            "lease_wait",
            finished.iter().map(|s| s.timings.lease_wait_s).collect(),
        ),
        ("h", finished.iter().map(|s| s.timings.h_s).collect()),
        (
            "msm_plan",
            finished.iter().map(|s| s.timings.msm_plan_s).collect(),
        ),
        (
            "msm_g1",
            finished.iter().map(|s| s.timings.msm_g1_s).collect(),
        ),
        (
            "msm_g2",
            finished.iter().map(|s| s.timings.msm_g2_s).collect(),
        ),
        (
            "verify",
            finished.iter().map(|s| s.timings.verify_s).collect(),
        ),
        (
            "partition_total",
            finished.iter().map(|s| s.timings.total_s).collect(),
        ),
    ];
    let stages: BTreeMap<&str, serde_json::Value> = stage_samples
        .iter()
        .map(|(n, v)| {
            (*n, serde_json::json!({ "p50_s": percentile(v, 50.0), "p95_s": percentile(v, 95.0), "max_s": percentile(v, 100.0) }))
        })
        .collect();
    let utilisation: BTreeMap<String, f64> = after
        .iter()
        .map(|(a, v)| {
            (
                a.clone(),
                (v - before.get(a).copied().unwrap_or(0.0)) / wall,
            )
        })
        .collect();
    let report = serde_json::json!({
        "harness": "http-load",
        "server": url,
        "circuit": args.circuit,
        "jobs": args.jobs,
        "concurrency": args.concurrency,
        "succeeded": ok,
        "wall_s": wall,
        "jobs_per_minute": args.jobs as f64 / wall * 60.0,
        "stages": stages,
        "busy_threads_per_actor_pool": utilisation,
    });
    println!("{}", serde_json::to_string(&report)?);
    println!();
    println!(
        "{} jobs of {} at concurrency {}: {} succeeded in {:.1} s ({:.1} jobs/min)",
        args.jobs,
        args.circuit,
        args.concurrency,
        ok,
        wall,
        args.jobs as f64 / wall * 60.0
    );
    println!(
        "{:<16} {:>9} {:>9} {:>9}",
        "stage", "p50 s", "p95 s", "max s"
    );
    for (n, v) in &stage_samples {
        println!(
            "{:<16} {:>9.3} {:>9.3} {:>9.3}",
            n,
            percentile(v, 50.0),
            percentile(v, 95.0),
            percentile(v, 100.0)
        );
    }
    println!("{:<16} {:>9}", "actor pool", "busy thr");
    for (a, u) in &utilisation {
        println!("{:<16} {:>9.2}", a, u);
    }
    if let Some(d) = daemon {
        d.stop();
    }
    anyhow::ensure!(
        ok == args.jobs,
        "{} of {} jobs failed",
        args.jobs - ok,
        args.jobs
    );
    Ok(())
}
