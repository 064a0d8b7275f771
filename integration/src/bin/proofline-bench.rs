//! Prover benchmark: the demo circuit at ~2^16 and ~2^18 constraints, proved through the actor
//! pipeline (CPU backend) and, in the same run, by bellperson's `create_random_proof` on the
//! same circuit and parameters. Prints JSON (one object) and then a table.
//!
//! `cargo run --release -p proofline-integration --bin proofline-bench -- [--circuits sha256-2,sha256-9] [--runs 3]`

use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use bellperson::groth16;
use blstrs::Bls12;
use clap::Parser;
use proofline_actors::{JobState, Pipeline, PipelineOptions, StageTimings};
use proofline_circuits::Sha256Preimage;
use proofline_config::Config;
use proofline_integration::{cache_dir, cached_params};
use proofline_jobs::builtin::{BuiltinAdapter, BuiltinCircuit};
use proofline_jobs::{AdapterRegistry, JobRequest, ParamsStore};
use serde::Serialize;

#[derive(Parser)]
struct Args {
    /// Circuits to prove (sha256-N).
    #[arg(long, value_delimiter = ',', default_value = "sha256-2,sha256-9")]
    circuits: Vec<String>,
    /// Timed runs per prover (the median is reported).
    #[arg(long, default_value_t = 3)]
    runs: usize,
}

#[derive(Serialize)]
struct Row {
    circuit: String,
    constraints: usize,
    domain_log2: u32,
    proofline_median_s: f64,
    proofline_runs_s: Vec<f64>,
    proofline_stages: StageTimings,
    bellperson_median_s: f64,
    bellperson_runs_s: Vec<f64>,
    speedup: f64,
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    s[s.len() / 2]
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    anyhow::ensure!(args.runs > 0, "--runs must be at least 1");
    let mut rows = Vec::new();
    for name in &args.circuits {
        let c = BuiltinCircuit::parse(name)?;
        let BuiltinCircuit::Sha256 { blocks } = c;
        let dir = cached_params(name)?;
        let params_path = dir.join(c.params_file());
        let params = groth16::Parameters::<Bls12>::read(
            std::io::BufReader::new(std::fs::File::open(&params_path)?),
            false,
        )
        .context("reading parameters")?;
        let constraints = proofline_groth16::synthesis::synthesize(Sha256Preimage::new(
            blocks,
            Sha256Preimage::demo_preimage(blocks, 0),
        )?)?
        .num_constraints();

        // proofline: the actor pipeline, parameters resident after a warm-up job.
        let mut cfg = Config::embedded_default()?;
        cfg.params.dir = dir.display().to_string();
        let mut reg = AdapterRegistry::new();
        reg.register(Arc::new(BuiltinAdapter::new(&dir, vec![])));
        let pipeline = Pipeline::start(PipelineOptions::cpu(
            &cfg.pipeline,
            reg,
            Arc::new(ParamsStore::new(false)),
        ))?;
        let job = |seed: u64| JobRequest {
            kind: "groth16".into(),
            circuit: Some(name.clone()),
            input: serde_json::json!({ "seed": seed }),
            public_inputs: None,
            ..Default::default()
        };
        let mut ours = Vec::new();
        let mut stages = Vec::new();
        futures::executor::block_on(async {
            let warm = pipeline.submit(job(0)).await?;
            anyhow::ensure!(pipeline.wait(&warm.id).await?.state == JobState::Succeeded);
            for r in 0..args.runs {
                let t = Instant::now();
                let a = pipeline.submit(job(r as u64 + 1)).await?;
                let s = pipeline.wait(&a.id).await?;
                ours.push(t.elapsed().as_secs_f64());
                anyhow::ensure!(s.state == JobState::Succeeded, "job failed: {:?}", s.error);
                stages.push(s.timings);
            }
            anyhow::Ok(())
        })?;
        pipeline.shutdown();

        // bellperson on the same circuit and parameters.
        let mut theirs = Vec::new();
        let mut rng = rand::rngs::OsRng;
        for r in 0..args.runs {
            let circuit =
                Sha256Preimage::new(blocks, Sha256Preimage::demo_preimage(blocks, r as u64 + 1))?;
            let t = Instant::now();
            let proof = groth16::create_random_proof(circuit, &params, &mut rng)?;
            theirs.push(t.elapsed().as_secs_f64());
            let pvk = groth16::prepare_verifying_key(&params.vk);
            let inputs =
                Sha256Preimage::public_inputs(&Sha256Preimage::demo_preimage(blocks, r as u64 + 1));
            anyhow::ensure!(
                groth16::verify_proof(&pvk, &proof, &inputs)?,
                "bellperson proof invalid"
            );
        }
        let (om, tm) = (median(&ours), median(&theirs));
        let mid = stages
            .iter()
            .zip(&ours)
            .min_by(|a, b| (a.1 - om).abs().total_cmp(&(b.1 - om).abs()))
            .map(|(s, _)| *s)
            .unwrap_or_default();
        rows.push(Row {
            circuit: name.clone(),
            constraints,
            domain_log2: constraints.next_power_of_two().trailing_zeros(),
            proofline_median_s: om,
            proofline_runs_s: ours,
            proofline_stages: mid,
            bellperson_median_s: tm,
            bellperson_runs_s: theirs,
            speedup: tm / om,
        });
    }
    let report = serde_json::json!({
        "benchmark": "prover-cpu",
        "threads": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        "params_cache": cache_dir(),
        "rows": rows,
    });
    println!("{}", serde_json::to_string(&report)?);
    println!();
    println!("{:<10} {:>11} {:>6} {:>12} {:>14} {:>8}  proofline stages (s): synth / H / G1 / G2 / verify", "circuit", "constraints", "domain", "proofline s", "bellperson s", "speedup");
    for r in &rows {
        let s = &r.proofline_stages;
        println!(
            "{:<10} {:>11} {:>6} {:>12.3} {:>14.3} {:>7.2}x  {:.3} / {:.3} / {:.3} / {:.3} / {:.3}",
            r.circuit,
            r.constraints,
            format!("2^{}", r.domain_log2),
            r.proofline_median_s,
            r.bellperson_median_s,
            r.speedup,
            s.synthesis_s,
            s.h_s,
            s.msm_g1_s,
            s.msm_g2_s,
            s.verify_s
        );
    }
    Ok(())
}
