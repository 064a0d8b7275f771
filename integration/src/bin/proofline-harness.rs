//! Load harness: drives a daemon over HTTP with a bounded number of jobs at a bounded
//! concurrency, then reports throughput, latency percentiles of every pipeline stage, and each
//! actor pool's utilisation (from `/metrics` busy-time counters). Prints JSON, then a table.
//!
//! Without `--server` it starts its own daemon on a free loopback port over cached parameters.
//! Traffic goes to loopback only.
//!
//! `cargo run --release -p proofline-integration --bin proofline-harness -- --jobs 8 --concurrency 2`

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;
use proofline_actors::{JobState, JobStatus};
use proofline_client::Client;
use proofline_integration::{cached_params, percentile, start, test_config};
use proofline_jobs::JobRequest;

#[derive(Parser)]
struct Args {
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
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 1800)]
    timeout_s: u64,
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
            cfg.pipeline.max_partitions_in_flight = args.concurrency;
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
                priority: 0,
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
