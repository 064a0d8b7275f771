//! `proofline`: the daemon, its client, and the tools around it (parameter setup, verifying
//! keys, one-shot proving, the demo). Run `proofline --help`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use bellperson::groth16;
use blstrs::Bls12;
use clap::{Args, Parser, Subcommand};
use proofline::daemon::Daemon;
use proofline::exit::{self, ExitCode, JobEnded, UsageError};
use proofline::{setup, status, top};
use proofline_actors::{JobState, JobStatus};
use proofline_client::{new_idempotency_key, Client};
use proofline_config::{expand_home, Config, StoreKind};
use proofline_jobs::builtin::BuiltinCircuit;
use proofline_jobs::{parse_scalar_hex, JobRequest};
use proofline_runtime as runtime;

#[derive(Parser)]
#[command(
    name = "proofline",
    version,
    about = "Groth16 proving daemon for Filecoin sealing",
    after_help = exit::HELP
)]
struct Cli {
    /// Configuration file layered over the embedded default (PROOFLINE_<SECTION>__<KEY> variables
    /// override both).
    #[arg(long, global = true, env = "PROOFLINE_CONFIG")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the daemon: actor pipeline + HTTP API, until SIGINT/SIGTERM.
    Serve {
        /// Listen address, overriding server.bind.
        #[arg(long)]
        bind: Option<String>,
    },
    /// Start the daemon on a free local port, generate the demo parameters if missing, prove the
    /// demo job over HTTP, print the verified proof and stage timings, stop.
    Demo,
    /// Generate parameters of a built-in circuit (one-party setup, for demos and tests).
    Setup {
        /// Circuit name, e.g. sha256-2.
        #[arg(long)]
        circuit: String,
        /// Parameter directory (default: params.dir of the configuration).
        #[arg(long)]
        params_dir: Option<PathBuf>,
        /// Regenerate even if the file exists.
        #[arg(long)]
        force: bool,
    },
    /// Print a circuit's verifying key (bellperson bytes) as hex, or write it to a file.
    Vk {
        /// Circuit name.
        #[arg(long)]
        circuit: String,
        /// Parameter directory (default: params.dir).
        #[arg(long)]
        params_dir: Option<PathBuf>,
        /// Write the raw bytes here instead of printing hex.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Prove one job in this process (same pipeline as the daemon, no HTTP).
    Prove {
        #[command(flatten)]
        job: JobArgs,
        /// Write the proof bytes here.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Submit a job to a running daemon.
    Submit {
        #[command(flatten)]
        job: JobArgs,
        #[command(flatten)]
        server: ServerArg,
        /// Wait for the job and print its result.
        #[arg(long)]
        wait: bool,
        /// With --wait: write the proof bytes here.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Print the job status as JSON (with --wait: the final status).
        #[arg(long)]
        json: bool,
    },
    /// Without a job id: the daemon's status page (jobs in flight with each partition's stage,
    /// devices, resident parameters, mailbox depths, uptime, version). With one: that job's
    /// status (optionally waiting up to SECS for it to finish).
    Status {
        /// Job id; without it, the daemon's status page.
        id: Option<String>,
        #[command(flatten)]
        server: ServerArg,
        /// With a job id: long-poll for up to this many seconds.
        #[arg(long, requires = "id")]
        wait: Option<u64>,
        /// Print the status page as JSON (as `GET /v1/status` returns it).
        #[arg(long, conflicts_with = "id")]
        json: bool,
    },
    /// A live terminal view of the daemon: mailbox depth and busy threads per actor, jobs in
    /// flight with each partition's stage, memory per device. `q` quits.
    Top {
        #[command(flatten)]
        server: ServerArg,
        /// Refresh interval in milliseconds.
        #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(100..=60_000))]
        interval_ms: u64,
    },
    /// Fetch a finished job's proof.
    Result {
        /// Job id.
        id: String,
        #[command(flatten)]
        server: ServerArg,
        /// Write the proof bytes here (default: print base64 and public inputs).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Cancel a job.
    Cancel {
        /// Job id.
        id: String,
        #[command(flatten)]
        server: ServerArg,
    },
    /// List the daemon's jobs.
    List {
        #[command(flatten)]
        server: ServerArg,
        /// Print `{"jobs": [status...]}` as JSON, as the API returns it.
        #[arg(long)]
        json: bool,
    },
    /// Print the effective configuration.
    Config,
}

#[derive(Args)]
struct ServerArg {
    /// Daemon URL (default: http:// + server.bind of the configuration).
    #[arg(long, env = "PROOFLINE_URL")]
    server: Option<String>,
}

#[derive(Args)]
struct JobArgs {
    /// A JSON job request file (see docs/api.md); '-' reads standard input.
    #[arg(long, conflicts_with_all = ["circuit", "seed", "preimage_hex", "c1"])]
    request: Option<PathBuf>,
    /// A Filecoin porep-c2 document: the C1 output (SealCommitPhase1Output JSON, as the sealing
    /// worker wrote it) or a Lotus/Curio Commit2In file (lotus-bench prove's input), recognised
    /// by its content. Needs --miner or --prover-id; --sector-id unless the file is a Commit2In.
    #[arg(long, conflicts_with_all = ["circuit", "seed", "preimage_hex"])]
    c1: Option<PathBuf>,
    /// With --c1: the miner actor id (f01000, t01000 or 1000); the prover id is derived from it
    /// as filecoin-ffi does.
    #[arg(long, conflicts_with = "prover_id")]
    miner: Option<String>,
    /// With --c1: the prover id, 32 bytes as 64 hex digits.
    #[arg(long)]
    prover_id: Option<String>,
    /// With --c1: the sector number (taken from a Commit2In file's SectorNum when left out).
    #[arg(long)]
    sector_id: Option<u64>,
    /// Built-in circuit (kind groth16), e.g. sha256-2.
    #[arg(long)]
    circuit: Option<String>,
    /// Demo preimage seed (with --circuit).
    #[arg(long)]
    seed: Option<u64>,
    /// Preimage as hex (with --circuit).
    #[arg(long, conflicts_with = "seed")]
    preimage_hex: Option<String>,
    /// Priority (higher first; default: the job kind's).
    #[arg(long)]
    priority: Option<i32>,
    /// Deadline, Unix time in milliseconds: the job fails early when it cannot finish by then.
    #[arg(long)]
    deadline: Option<u64>,
    /// Job id to use (letters, digits, '-'); submitting the same job again under it returns the
    /// existing job.
    #[arg(long)]
    id: Option<String>,
}

/// A `--c1` document and the fields that go with it.
struct C1Job {
    document: Vec<u8>,
    fields: Vec<(&'static str, String)>,
}

impl JobArgs {
    fn c1_job(&self) -> anyhow::Result<Option<C1Job>> {
        let Some(path) = &self.c1 else {
            return Ok(None);
        };
        let mut fields = Vec::new();
        match (&self.miner, &self.prover_id) {
            (Some(m), _) => fields.push(("miner_id", m.clone())),
            (None, Some(p)) => fields.push(("prover_id", p.clone())),
            (None, None) => {
                return Err(UsageError(
                    "--c1 needs the prover: --miner f01000 or --prover-id <64 hex digits>".into(),
                )
                .into())
            }
        }
        if let Some(s) = self.sector_id {
            fields.push(("sector_id", s.to_string()));
        }
        let document = std::fs::read(path).with_context(|| format!("--c1 {}", path.display()))?;
        Ok(Some(C1Job { document, fields }))
    }

    fn request(&self, cfg: &Config) -> anyhow::Result<JobRequest> {
        let mut req = self.request_body(cfg)?;
        if self.id.is_some() {
            req.id = self.id.clone();
        }
        Ok(req)
    }

    fn request_body(&self, cfg: &Config) -> anyhow::Result<JobRequest> {
        if let Some(path) = &self.request {
            let bytes = if path.as_os_str() == "-" {
                let mut v = Vec::new();
                std::io::Read::read_to_end(&mut std::io::stdin(), &mut v)?;
                v
            } else {
                std::fs::read(path).with_context(|| format!("--request {}", path.display()))?
            };
            return serde_json::from_slice(&bytes)
                .with_context(|| "--request: not a valid job request (see docs/api.md)");
        }
        if let Some(job) = self.c1_job()? {
            // The document travels as the request's payload: parsed once, no base64 in process.
            let input: serde_json::Map<String, serde_json::Value> = job
                .fields
                .into_iter()
                .map(|(k, v)| (k.to_string(), serde_json::Value::String(v)))
                .collect();
            return Ok(JobRequest {
                input: input.into(),
                payload: Some(job.document.into()),
                priority: self.priority,
                deadline: self.deadline,
                ..JobRequest::new("porep-c2")
            });
        }
        if self.miner.is_some() || self.prover_id.is_some() || self.sector_id.is_some() {
            return Err(
                UsageError("--miner, --prover-id and --sector-id go with --c1".into()).into(),
            );
        }
        let circuit = self
            .circuit
            .clone()
            .unwrap_or_else(|| cfg.demo.circuit.clone());
        let input = match (&self.preimage_hex, self.seed) {
            (Some(h), _) => serde_json::json!({ "preimage_hex": h }),
            (None, Some(s)) => serde_json::json!({ "seed": s }),
            (None, None) => serde_json::json!({ "seed": cfg.demo.seed }),
        };
        Ok(JobRequest {
            circuit: Some(circuit),
            input,
            priority: self.priority,
            deadline: self.deadline,
            ..JobRequest::new("groth16")
        })
    }

    /// Submits the job to a daemon: a `--c1` document as the raw body of `POST
    /// /v1/jobs/porep-c2`, anything else as JSON. One idempotency key for all retries.
    fn submit(&self, cfg: &Config, c: &Client) -> anyhow::Result<JobStatus> {
        let key = new_idempotency_key();
        if let Some(mut job) = self.c1_job()? {
            if let Some(p) = self.priority {
                job.fields.push(("priority", p.to_string()));
            }
            if let Some(d) = self.deadline {
                job.fields.push(("deadline", d.to_string()));
            }
            if let Some(id) = &self.id {
                job.fields.push(("id", id.clone()));
            }
            let s = c.submit_document("porep-c2", &job.document, &job.fields, &key)?;
            return Ok(s.status);
        }
        Ok(c.submit_keyed(&self.request(cfg)?, &key)?.status)
    }
}

/// A client of the configured daemon, with its token and, when it serves TLS, its certificate.
fn client(cfg: &Config, s: &ServerArg) -> anyhow::Result<Client> {
    let tls = !cfg.server.tls_cert.is_empty();
    let scheme = if tls { "https" } else { "http" };
    let mut c = Client::new(
        s.server
            .clone()
            .unwrap_or_else(|| format!("{scheme}://{}", cfg.server.bind)),
    );
    if let Some(t) = cfg.auth_token()? {
        c = c.with_token(t);
    }
    if tls {
        c = c.with_root_cert(&expand_home(&cfg.server.tls_cert))?;
    }
    Ok(c)
}

fn print_status(s: &JobStatus) {
    println!(
        "job {}  kind {}  {}  state {:?}  partitions {}/{}",
        s.id, s.kind, s.label, s.state, s.partitions_done, s.partitions
    );
    if let Some(e) = &s.error {
        println!("error: {} ({})", e.message, e.code);
    }
}

fn print_timings(s: &JobStatus) {
    let t = &s.timings;
    println!(
        "stage timings (seconds, summed over {} partition(s)):",
        s.partitions
    );
    let rows = [
        ("queued", t.queued_s),
        ("params", t.params_s),
        ("synthesis", t.synthesis_s),
        ("lease wait", t.lease_wait_s),
        ("H (NTTs + H MSM)", t.h_s),
        ("MSM plan (0/1/tail)", t.msm_plan_s),
        ("G1 MSMs (L, A, B)", t.msm_g1_s),
        ("G2 MSM (B)", t.msm_g2_s),
        ("assemble + verify", t.verify_s),
        ("partition total", t.total_s),
    ];
    for (name, v) in rows {
        println!("  {name:<22} {v:>9.3}");
    }
}

fn write_or_print_proof(
    proof: &[u8],
    inputs: &[Vec<String>],
    out: Option<&PathBuf>,
) -> anyhow::Result<()> {
    match out {
        Some(p) => {
            std::fs::write(p, proof).with_context(|| format!("writing {}", p.display()))?;
            println!("proof: {} bytes written to {}", proof.len(), p.display());
        }
        None => println!("proof ({} bytes): {}", proof.len(), hex::encode(proof)),
    }
    for (k, v) in inputs.iter().enumerate() {
        println!("public inputs of partition {k}: {}", v.join(" "));
    }
    Ok(())
}

fn demo(cfg: &Config) -> anyhow::Result<()> {
    let circuit = BuiltinCircuit::parse(&cfg.demo.circuit)?;
    let dir = cfg.params_dir();
    let t = Instant::now();
    let outcome = setup::setup(&circuit, &dir, false)?;
    if outcome.generated {
        println!(
            "generated parameters {} in {:.1} s",
            outcome.path.display(),
            outcome.secs
        );
    } else {
        println!("using parameters {}", outcome.path.display());
    }
    let mut local = cfg.clone();
    local.server.bind = "127.0.0.1:0".into();
    // A throwaway run: no store (and no lock on the state file of a daemon running here).
    local.state.store = StoreKind::Memory;
    local.queue.postgres_url.clear();
    let daemon = Daemon::start(&local)?;
    println!(
        "daemon listening on {} (backend {})",
        daemon.url(),
        daemon.pipeline().backend_name()
    );
    let c = Client::new(daemon.url());
    let req = JobRequest {
        circuit: Some(circuit.name()),
        input: serde_json::json!({ "seed": cfg.demo.seed }),
        ..JobRequest::new("groth16")
    };
    let accepted = c.submit(&req)?;
    println!("submitted job {} over HTTP", accepted.id);
    let status = c.wait(&accepted.id, Duration::from_secs(1800))?;
    print_status(&status);
    if status.state != JobState::Succeeded {
        daemon.stop();
        bail!("the demo job did not succeed");
    }
    let result = c.result(&accepted.id)?;
    let proof = result.proof()?;
    write_or_print_proof(&proof, &result.public_inputs, None)?;
    // An independent check, outside the daemon: bellperson's verifier with the key on disk.
    let vk = setup::read_vk(&circuit, &dir)?;
    let pvk = groth16::prepare_verifying_key(&vk);
    let p = groth16::Proof::<Bls12>::read(&proof[..])?;
    let inputs = result.public_inputs[0]
        .iter()
        .enumerate()
        .map(|(i, h)| parse_scalar_hex(&format!("public_inputs[{i}]"), h))
        .collect::<Result<Vec<_>, _>>()?;
    let ok = groth16::verify_proof(&pvk, &p, &inputs)?;
    println!(
        "bellperson verify_proof with {}: {}",
        outcome.path.with_extension("vk").display(),
        if ok { "VALID" } else { "INVALID" }
    );
    print_timings(&status);
    println!("demo finished in {:.1} s", t.elapsed().as_secs_f64());
    daemon.stop();
    if !ok {
        bail!("the returned proof did not verify");
    }
    Ok(())
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use actix_web::rt::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio_select(actix_web::rt::signal::ctrl_c(), async move {
                    term.recv().await;
                })
                .await;
            }
            Err(_) => {
                let _ = actix_web::rt::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = actix_web::rt::signal::ctrl_c().await;
    }
}

/// Resolves when either future does.
async fn tokio_select<A: std::future::Future, B: std::future::Future>(a: A, b: B) {
    use futures::future::{select, Either};
    let (a, b) = (Box::pin(a), Box::pin(b));
    match select(a, b).await {
        Either::Left(_) | Either::Right(_) => {}
    }
}

/// Where the configured daemon keeps its jobs, for messages.
fn store_location(cfg: &Config) -> String {
    match runtime::store_spec(cfg) {
        proofline_actors::StoreSpec::Memory => "memory (state.store = \"memory\": not kept)".into(),
        proofline_actors::StoreSpec::Embedded { path } => path.display().to_string(),
        proofline_actors::StoreSpec::Shared(_) => "the shared queue".into(),
        proofline_actors::StoreSpec::Custom(s) => s.location(),
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    let cfg = Config::load(cli.config.as_deref())?;
    runtime::init_logging(&cfg);
    match cli.command {
        Command::Config => print!("{}", cfg.to_toml()),
        Command::Serve { bind } => {
            let mut cfg = cfg;
            if let Some(b) = bind {
                cfg.server.bind = b;
            }
            let daemon = Daemon::start(&cfg)?;
            println!("proofline listening on {}", daemon.url());
            actix_web::rt::System::new().block_on(wait_for_signal());
            let timeout = Duration::from_secs(cfg.server.drain_timeout_s);
            tracing::info!(
                timeout_s = timeout.as_secs(),
                "signal received: draining (running jobs finish, new ones are refused)"
            );
            let report = daemon.drain_and_stop(timeout);
            println!(
                "proofline stopped: {} ({} unfinished job(s) kept in {} for the next start)",
                if report.drained {
                    "running jobs finished"
                } else {
                    "drain timeout reached"
                },
                report.unfinished,
                store_location(&cfg)
            );
        }
        Command::Demo => demo(&cfg)?,
        Command::Setup {
            circuit,
            params_dir,
            force,
        } => {
            let c = BuiltinCircuit::parse(&circuit)?;
            let dir = params_dir.unwrap_or_else(|| cfg.params_dir());
            let o = setup::setup(&c, &dir, force)?;
            if o.generated {
                println!("wrote {} in {:.1} s", o.path.display(), o.secs);
            } else {
                println!("{} exists (use --force to regenerate)", o.path.display());
            }
        }
        Command::Vk {
            circuit,
            params_dir,
            out,
        } => {
            let c = BuiltinCircuit::parse(&circuit)?;
            let vk = setup::read_vk(&c, &params_dir.unwrap_or_else(|| cfg.params_dir()))?;
            let bytes = setup::vk_bytes(&vk);
            match out {
                Some(p) => {
                    std::fs::write(&p, &bytes)?;
                    println!(
                        "verifying key of {circuit}: {} bytes written to {}",
                        bytes.len(),
                        p.display()
                    );
                }
                None => println!("{}", hex::encode(bytes)),
            }
        }
        Command::Prove { job, out } => {
            let req = job.request(&cfg)?;
            // One job in this process: nothing to keep, and no lock on a daemon's state file.
            let mut cfg = cfg;
            cfg.state.store = StoreKind::Memory;
            cfg.queue.postgres_url.clear();
            let pipeline = runtime::start_pipeline(&cfg)?;
            let r = futures::executor::block_on(async {
                let accepted = pipeline.submit(req).await?;
                let status = pipeline.wait(&accepted.id).await?;
                let result = pipeline.result(&accepted.id).await;
                anyhow::Ok((status, result))
            });
            pipeline.shutdown();
            let (status, result) = r?;
            print_status(&status);
            JobEnded::check(&status)?;
            let result = result?;
            write_or_print_proof(&result.proof, &result.public_inputs, out.as_ref())?;
            print_timings(&status);
        }
        Command::Submit {
            job,
            server,
            wait,
            out,
            json,
        } => {
            let c = client(&cfg, &server)?;
            let s = job.submit(&cfg, &c)?;
            if !wait {
                match json {
                    true => println!("{}", serde_json::to_string_pretty(&s)?),
                    false => println!("{}", s.id),
                }
                return Ok(());
            }
            if !json {
                println!("{}", s.id);
            }
            let s = c.wait(&s.id, Duration::from_secs(24 * 3600))?;
            if json {
                println!("{}", serde_json::to_string_pretty(&s)?);
            } else {
                print_status(&s);
            }
            JobEnded::check(&s)?;
            let r = c.result(&s.id)?;
            if json {
                if let Some(p) = &out {
                    std::fs::write(p, r.proof()?)
                        .with_context(|| format!("writing {}", p.display()))?;
                }
            } else {
                write_or_print_proof(&r.proof()?, &r.public_inputs, out.as_ref())?;
                print_timings(&s);
            }
        }
        Command::Status {
            id: Some(id),
            server,
            wait,
            ..
        } => {
            let s = client(&cfg, &server)?.status(&id, wait)?;
            println!("{}", serde_json::to_string_pretty(&s)?);
        }
        Command::Status {
            id: None,
            server,
            json,
            ..
        } => {
            let page = client(&cfg, &server)?.status_page()?;
            if json {
                println!("{}", serde_json::to_string_pretty(&page)?);
            } else {
                print!("{}", status::render(&page));
            }
        }
        Command::Top {
            server,
            interval_ms,
        } => top::run(&client(&cfg, &server)?, Duration::from_millis(interval_ms))?,
        Command::Result { id, server, out } => {
            let r = client(&cfg, &server)?.result(&id)?;
            write_or_print_proof(&r.proof()?, &r.public_inputs, out.as_ref())?;
        }
        Command::Cancel { id, server } => {
            let s = client(&cfg, &server)?.cancel(&id)?;
            print_status(&s);
        }
        Command::List { server, json } => {
            let jobs = client(&cfg, &server)?.list()?;
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&serde_json::json!({ "jobs": jobs }))?
                );
            } else {
                for s in jobs {
                    print_status(&s);
                }
            }
        }
    }
    Ok(())
}

fn main() {
    // clap exits with 2 (ExitCode::Usage) on bad arguments.
    let cli = Cli::parse();
    if let Err(e) = run(cli) {
        eprintln!("error: {e:#}");
        std::process::exit(exit::code_of(&e) as i32);
    }
    std::process::exit(ExitCode::Ok as i32);
}
