//! Crash under load: runs the real `proofline serve` with its durable store, keeps the pipeline
//! full with a bounded number of jobs over loopback, `kill -9`s the daemon when half of them
//! are done, restarts it on the same state directory, and checks that every accepted job
//! completed exactly once with a proof that verifies, and that no job the client had seen
//! finished ran again. Samples the daemon's resident memory
//! throughout. Prints JSON, then a table.
//!
//! `cargo build --release -p proofline && cargo run --release -p proofline-integration --bin proofline-crash-load -- --jobs 40 --concurrency 2`

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context};
use bellperson::groth16;
use blstrs::Bls12;
use clap::Parser;
use proofline_actors::JobState;
use proofline_client::Client;
use proofline_integration::cached_params;
use proofline_jobs::builtin::BuiltinCircuit;
use proofline_jobs::{parse_scalar_hex, JobRequest};

#[derive(Parser)]
struct Args {
    /// The `proofline` binary (default: next to this program).
    #[arg(long)]
    bin: Option<PathBuf>,
    /// Built-in circuit to prove.
    #[arg(long, default_value = "sha256-1")]
    circuit: String,
    /// Jobs in total (at most 2,000).
    #[arg(long, default_value_t = 40)]
    jobs: usize,
    /// Partitions in the pipeline at once (`pipeline.max_partitions_in_flight`); the harness
    /// keeps twice as many jobs submitted and unfinished.
    #[arg(long, default_value_t = 2)]
    concurrency: usize,
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 1800)]
    timeout_s: u64,
}

struct Daemon {
    child: Child,
    url: String,
    log: PathBuf,
}

fn start_daemon(
    bin: &Path,
    params: &Path,
    state: &Path,
    log: PathBuf,
    concurrency: usize,
) -> anyhow::Result<(Daemon, f64)> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let out = std::fs::File::create(&log)?;
    let t = Instant::now();
    let child = Command::new(bin)
        .arg("serve")
        .env_remove("PROOFLINE_CONFIG")
        .env("PROOFLINE_SERVER__BIND", format!("127.0.0.1:{port}"))
        .env("PROOFLINE_PARAMS__DIR", params)
        .env("PROOFLINE_STATE__STORE", "embedded")
        .env("PROOFLINE_STATE__DIR", state)
        .env(
            "PROOFLINE_PIPELINE__MAX_PARTITIONS_IN_FLIGHT",
            concurrency.to_string(),
        )
        .env("PROOFLINE_PIPELINE__MAX_QUEUED_JOBS", "4096")
        .env("PROOFLINE_PIPELINE__RETAIN_FINISHED_JOBS", "4096")
        .stdout(Stdio::from(out.try_clone()?))
        .stderr(Stdio::from(out))
        .spawn()
        .with_context(|| format!("starting {}", bin.display()))?;
    let url = format!("http://127.0.0.1:{port}");
    let c = Client::new(&url);
    while c.health().is_err() {
        ensure!(
            t.elapsed() < Duration::from_secs(120),
            "daemon did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok((Daemon { child, url, log }, t.elapsed().as_secs_f64()))
}

/// Samples the resident memory of `pid` every 100 ms into `max_kib` until `stop`.
fn sample_rss(pid: u32, max_kib: Arc<AtomicU64>, stop: Arc<AtomicBool>) {
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
            if let Some(kib) = status
                .lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<u64>().ok())
            {
                max_kib.fetch_max(kib, Ordering::Relaxed);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    });
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    ensure!(
        args.jobs > 0 && args.jobs <= 2000,
        "--jobs must be in 1..=2000"
    );
    ensure!(args.concurrency > 0, "--concurrency must be at least 1");
    let bin = match &args.bin {
        Some(b) => b.clone(),
        None => std::env::current_exe()?
            .parent()
            .context("no directory")?
            .join("proofline"),
    };
    let params = cached_params(&args.circuit)?;
    let tmp = std::env::temp_dir().join(format!("proofline-crash-load-{}", std::process::id()));
    let state = tmp.join("state");
    std::fs::create_dir_all(&state)?;
    let deadline = Instant::now() + Duration::from_secs(args.timeout_s);
    let window = 2 * args.concurrency;

    let (mut d, first_start_s) = start_daemon(
        &bin,
        &params,
        &state,
        tmp.join("before.log"),
        args.concurrency,
    )?;
    let rss_before = Arc::new(AtomicU64::new(0));
    let stop_before = Arc::new(AtomicBool::new(false));
    sample_rss(d.child.id(), rss_before.clone(), stop_before.clone());

    let t0 = Instant::now();
    let mut accepted: Vec<String> = Vec::new();
    let mut done: BTreeSet<String> = BTreeSet::new();
    let mut killed_at_s = 0.0;
    let mut unfinished_at_kill = 0usize;
    let mut restart_s = 0.0;
    let mut killed = false;
    let rss_after = Arc::new(AtomicU64::new(0));
    let stop_after = Arc::new(AtomicBool::new(false));
    while done.len() < args.jobs {
        ensure!(
            Instant::now() < deadline,
            "timed out after {} s",
            args.timeout_s
        );
        let c = Client::new(&d.url);
        while accepted.len() < args.jobs && accepted.len() - done.len() < window {
            let req = JobRequest {
                kind: "groth16".into(),
                circuit: Some(args.circuit.clone()),
                input: serde_json::json!({ "seed": accepted.len() as u64 }),
                public_inputs: None,
                ..Default::default()
            };
            accepted.push(c.submit(&req).context("submit")?.id);
        }
        let open: Vec<&String> = accepted.iter().filter(|id| !done.contains(*id)).collect();
        if let Some(first) = open.first() {
            let _ = c.status(first, Some(2));
        }
        for id in open {
            let s = c.status(id, None)?;
            if s.state.is_terminal() {
                ensure!(
                    s.state == JobState::Succeeded,
                    "job {id} ended {:?}",
                    s.state
                );
                done.insert(id.clone());
            }
        }
        if !killed && done.len() * 2 >= args.jobs {
            // kill -9 with jobs queued and running, then restart on the same store.
            killed = true;
            killed_at_s = t0.elapsed().as_secs_f64();
            unfinished_at_kill = accepted.len() - done.len();
            Command::new("kill")
                .args(["-KILL", &d.child.id().to_string()])
                .status()?;
            d.child.wait()?;
            stop_before.store(true, Ordering::Relaxed);
            let (d2, s) = start_daemon(
                &bin,
                &params,
                &state,
                tmp.join("after.log"),
                args.concurrency,
            )?;
            restart_s = s;
            d = d2;
            sample_rss(d.child.id(), rss_after.clone(), stop_after.clone());
        }
    }
    let wall = t0.elapsed().as_secs_f64();

    // Exactly once: every accepted id has one outcome, listed once, and no outcome was written
    // twice; every proof verifies.
    let c = Client::new(&d.url);
    let listed = c.list()?;
    let mut per_id: BTreeMap<&str, usize> = BTreeMap::new();
    for s in &listed {
        *per_id.entry(s.id.as_str()).or_default() += 1;
    }
    let ids: BTreeSet<&str> = accepted.iter().map(String::as_str).collect();
    ensure!(ids.len() == accepted.len(), "duplicate ids accepted");
    for id in &ids {
        ensure!(
            per_id.get(id) == Some(&1),
            "job {id} listed {:?} times",
            per_id.get(id)
        );
    }
    let vk = proofline::setup::read_vk(&BuiltinCircuit::parse(&args.circuit)?, &params)?;
    let pvk = groth16::prepare_verifying_key(&vk);
    for id in &accepted {
        let r = c.result(id)?;
        let proof = groth16::Proof::<Bls12>::read(&r.proof()?[..])?;
        let inputs = r.public_inputs[0]
            .iter()
            .map(|h| parse_scalar_hex("public_inputs", h))
            .collect::<Result<Vec<_>, _>>()?;
        ensure!(
            groth16::verify_proof(&pvk, &proof, &inputs)?,
            "proof of {id} does not verify"
        );
    }
    let log = std::fs::read_to_string(&d.log)?;
    let twice = log.matches("already had an outcome").count();
    let rerun = log
        .matches("re-running a stored job after a restart")
        .count();
    ensure!(twice == 0, "{twice} outcomes written twice");
    // A job is shown finished only once its outcome is stored: none that this client saw
    // finished before the kill may run again after it.
    ensure!(
        rerun <= unfinished_at_kill,
        "{rerun} jobs re-ran after the restart, but only {unfinished_at_kill} were unfinished \
         as seen by the client: a job reported finished was not durable"
    );
    stop_after.store(true, Ordering::Relaxed);
    let _ = Command::new("kill")
        .args(["-TERM", &d.child.id().to_string()])
        .status();
    let _ = d.child.wait();
    let store_bytes = std::fs::metadata(state.join("jobs.redb"))
        .map(|m| m.len())
        .unwrap_or(0);
    let _ = std::fs::remove_dir_all(&tmp);

    let rss_b = rss_before.load(Ordering::Relaxed) as f64 / 1024.0;
    let rss_a = rss_after.load(Ordering::Relaxed) as f64 / 1024.0;
    let report = serde_json::json!({
        "harness": "crash-load",
        "circuit": args.circuit,
        "jobs": args.jobs,
        "concurrency": args.concurrency,
        "accepted": accepted.len(),
        "succeeded_and_verified": accepted.len(),
        "completed_twice": twice,
        "killed_at_s": killed_at_s,
        "unfinished_at_kill": unfinished_at_kill,
        "rerun_after_restart": rerun,
        "first_start_s": first_start_s,
        "restart_to_healthy_s": restart_s,
        "wall_s": wall,
        "jobs_per_minute": args.jobs as f64 / wall * 60.0,
        "max_rss_mib_before_kill": rss_b,
        "max_rss_mib_after_restart": rss_a,
        "store_file_bytes": store_bytes,
    });
    println!("{}", serde_json::to_string(&report)?);
    println!();
    println!(
        "{} jobs of {} at concurrency {}: all accepted jobs succeeded once and verified",
        args.jobs, args.circuit, args.concurrency
    );
    println!(
        "{:<28} {:>10}",
        "kill -9 at (s)",
        format!("{killed_at_s:.1}")
    );
    println!(
        "{:<28} {:>10}",
        "unfinished at the kill", unfinished_at_kill
    );
    println!("{:<28} {:>10}", "re-run after restart", rerun);
    println!(
        "{:<28} {:>10}",
        "restart to healthy (s)",
        format!("{restart_s:.2}")
    );
    println!("{:<28} {:>10}", "wall (s)", format!("{wall:.1}"));
    println!(
        "{:<28} {:>10}",
        "jobs/min",
        format!("{:.1}", args.jobs as f64 / wall * 60.0)
    );
    println!(
        "{:<28} {:>10}",
        "max RSS before kill (MiB)",
        format!("{rss_b:.0}")
    );
    println!(
        "{:<28} {:>10}",
        "max RSS after restart (MiB)",
        format!("{rss_a:.0}")
    );
    println!("{:<28} {:>10}", "store file (bytes)", store_bytes);
    Ok(())
}
