//! The PoSt and SnapDeals comparisons: proofline's staged prover (CPU backend, every partition)
//! against filecoin-proofs-api's own proving calls on the same vanilla proofs and parameter
//! files — `generate_window_post_with_vanilla`, `generate_winning_post_with_vanilla`,
//! `generate_empty_sector_update_proof_with_vanilla`.
//!
//! Our side is timed stage by stage, parameters loaded once before timing (the daemon keeps them
//! resident; the load is reported separately). filecoin-proofs keeps the parameters of a circuit
//! in memory after its first call, so its call is made twice: the first time (parameter load
//! included) is reported, the second one is the comparison. Both proofs must pass
//! filecoin-proofs' own verifier.

use std::time::Instant;

use filecoin_proofs_api::post::{
    generate_window_post_with_vanilla, generate_winning_post_with_vanilla,
};
use filecoin_proofs_api::update::generate_empty_sector_update_proof_with_vanilla;
use filecoin_proofs_api::PartitionProofBytes;
use proofline_groth16::ProvingKey;
use proofline_jobs::{JobAdapter, JobPlan, JobRequest};
use serde::Serialize;

use crate::bench::{load_average, process_cpu_secs, prove_plan_timed, time, StageSecs};
use crate::post::{self, PoStAdapter, PoStKind};
use crate::sectors::{PoStCase, UpdateCase};
use crate::stats::PartitionStats;
use crate::update::{self, SnapUpdateAdapter};
use crate::{shapes, verify, FilecoinConfig, FilecoinError};

/// One benchmarked job.
#[derive(Clone, Debug)]
pub enum Case {
    /// A WindowPoSt or WinningPoSt.
    PoSt(PoStCase),
    /// A SnapDeals update.
    Update(UpdateCase),
}

/// The comparison of one job.
#[derive(Clone, Debug, Serialize)]
pub struct KindReport {
    /// `"window-post 2KiB, 3 sectors"`.
    pub bench: String,
    /// Registered proof.
    pub registered_proof: String,
    /// Partitions.
    pub partitions: usize,
    /// Logical CPUs.
    pub cpus: usize,
    /// Loading our parameters (once, resident afterwards).
    pub proofline_params_load_secs: f64,
    /// Our prove time (plan + every partition), parameters resident.
    pub proofline_secs: f64,
    /// CPU seconds (all threads) of the same.
    pub proofline_cpu_secs: f64,
    /// Per stage.
    pub proofline_stages: StageSecs,
    /// filecoin-proofs' first call (its parameter load included).
    pub filecoin_proofs_first_secs: Option<f64>,
    /// filecoin-proofs' second call, parameters in its memory cache.
    pub filecoin_proofs_secs: Option<f64>,
    /// CPU seconds (all threads) of the second call.
    pub filecoin_proofs_cpu_secs: Option<f64>,
    /// `filecoin_proofs_secs / proofline_secs`.
    pub speedup: Option<f64>,
    /// `filecoin_proofs_cpu_secs / proofline_cpu_secs`.
    pub speedup_cpu: Option<f64>,
    /// 1-minute load average at the start and at the end.
    pub load_average: (f64, f64),
    /// Every proof accepted by filecoin-proofs' verifier, and ours as long as theirs.
    pub verified: bool,
    /// Shape and scalar split of partition 0.
    pub scalars: PartitionStats,
}

fn other(e: &dyn std::fmt::Display) -> FilecoinError {
    FilecoinError::Other(e.to_string())
}

/// Runs filecoin-proofs' proving call of `case` once, returning its proof bytes.
fn reference(case: &Case) -> Result<Vec<u8>, FilecoinError> {
    match case {
        Case::PoSt(c) => {
            let id = &c.identity;
            let generate = match c.kind {
                PoStKind::Window => generate_window_post_with_vanilla,
                PoStKind::Winning => generate_winning_post_with_vanilla,
            };
            let mut out = generate(
                id.registered_proof,
                &id.randomness,
                id.prover_id,
                &c.vanilla_proofs,
            )?;
            match out.pop() {
                Some((rp, proof)) if out.is_empty() && rp == id.registered_proof => Ok(proof),
                _ => Err(FilecoinError::Other(
                    "filecoin-proofs returned other than one proof of the registered proof".into(),
                )),
            }
        }
        Case::Update(c) => {
            let id = &c.identity;
            let vanilla = c
                .vanilla_proofs
                .iter()
                .cloned()
                .map(PartitionProofBytes)
                .collect();
            Ok(generate_empty_sector_update_proof_with_vanilla(
                id.registered_proof,
                vanilla,
                id.comm_r_old,
                id.comm_r_new,
                id.comm_d_new,
            )?
            .0)
        }
    }
}

/// filecoin-proofs' verifier of `case`.
fn accepted(case: &Case, proof: &[u8]) -> Result<bool, FilecoinError> {
    match case {
        Case::PoSt(c) if c.kind == PoStKind::Window => {
            verify::verify_window_post(proof, &c.identity)
        }
        Case::PoSt(c) => verify::verify_winning_post(proof, &c.identity),
        Case::Update(c) => verify::verify_update(proof, &c.identity),
    }
}

/// Plans `case` with its adapter over `config`.
fn plan(case: &Case, config: &FilecoinConfig) -> Result<(JobPlan, String), FilecoinError> {
    match case {
        Case::PoSt(c) => {
            let body = post::request_body(
                c.kind,
                c.identity.registered_proof,
                &c.identity.randomness,
                &c.identity.prover_id,
                &c.vanilla_proofs,
            );
            let req: JobRequest = serde_json::from_value(body).map_err(|e| other(&e))?;
            let adapter = PoStAdapter::new(c.kind, config.clone());
            let plan = adapter.plan(&req).map_err(|e| other(&e))?;
            let size = u64::from(c.identity.registered_proof.sector_size());
            let label = format!(
                "{} {}, {} sector(s)",
                c.kind.name(),
                shapes::sector_size_label(size),
                c.identity.sectors.len()
            );
            Ok((plan, label))
        }
        Case::Update(c) => {
            let body = update::request_body(&c.identity, &c.vanilla_proofs);
            let req: JobRequest = serde_json::from_value(body).map_err(|e| other(&e))?;
            let plan = SnapUpdateAdapter::new(config.clone())
                .plan(&req)
                .map_err(|e| other(&e))?;
            let size = u64::from(c.identity.registered_proof.sector_size());
            Ok((
                plan,
                format!("snap-update {}", shapes::sector_size_label(size)),
            ))
        }
    }
}

/// Proves `case` both ways, with parameters from `config.params_dir` (filecoin-proofs reads the
/// same files through its own settings). `run_filecoin_proofs = false` skips the reference.
pub fn run(
    case: &Case,
    config: &FilecoinConfig,
    run_filecoin_proofs: bool,
) -> Result<KindReport, FilecoinError> {
    let registered_proof = match case {
        Case::PoSt(c) => crate::proofs::name(c.identity.registered_proof),
        Case::Update(c) => crate::proofs::name(c.identity.registered_proof),
    };
    // Parameters first (resident in the daemon), then timing.
    let (probe, _) = plan(case, config)?;
    let t = Instant::now();
    let pk = ProvingKey::read_file(&probe.params.path, false, |_| {})
        .map_err(|e| FilecoinError::io(&probe.params.path, e))?;
    let load = t.elapsed().as_secs_f64();
    drop(probe);

    let mut st = StageSecs::default();
    let load_start = load_average();
    let t_all = Instant::now();
    let cpu_all = process_cpu_secs();
    let (job, label) = time(&mut st.plan, || plan(case, config))?;
    let partitions = job.partitions.len();
    let (proof, scalars) = prove_plan_timed(job, &pk, &mut st)?;
    let ours = t_all.elapsed().as_secs_f64();
    let ours_cpu = process_cpu_secs() - cpu_all;
    let mut verified = accepted(case, &proof)?;

    let (mut first, mut theirs, mut theirs_cpu) = (None, None, None);
    if run_filecoin_proofs {
        let t = Instant::now();
        let warm = reference(case)?;
        first = Some(t.elapsed().as_secs_f64());
        let t = Instant::now();
        let cpu = process_cpu_secs();
        let out = reference(case)?;
        theirs = Some(t.elapsed().as_secs_f64());
        theirs_cpu = Some(process_cpu_secs() - cpu);
        verified &= out.len() == proof.len() && accepted(case, &out)? && accepted(case, &warm)?;
    }
    Ok(KindReport {
        bench: label,
        registered_proof,
        partitions,
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        proofline_params_load_secs: load,
        proofline_secs: ours,
        proofline_cpu_secs: ours_cpu,
        proofline_stages: st,
        filecoin_proofs_first_secs: first,
        filecoin_proofs_secs: theirs,
        filecoin_proofs_cpu_secs: theirs_cpu,
        speedup: theirs.map(|t| t / ours),
        speedup_cpu: theirs_cpu.map(|t| t / ours_cpu.max(1e-9)),
        load_average: (load_start, load_average()),
        verified,
        scalars,
    })
}

/// A short table of reports, one row per job.
pub fn table(reports: &[KindReport]) -> String {
    let mut out = format!(
        "{:<30} {:>5} {:>11} {:>10} {:>9} {:>10} {:>9} {:>8} {:>8} {:>9}\n",
        "job",
        "parts",
        "constraints",
        "proofline",
        "CPU",
        "f-proofs",
        "CPU",
        "speedup",
        "CPU x",
        "verified"
    );
    let opt = |v: Option<f64>, unit: &str| v.map_or("-".to_string(), |v| format!("{v:.2}{unit}"));
    for r in reports {
        out.push_str(&format!(
            "{:<30} {:>5} {:>11} {:>10} {:>9} {:>10} {:>9} {:>8} {:>8} {:>9}\n",
            r.bench,
            r.partitions,
            r.scalars.constraints,
            format!("{:.2} s", r.proofline_secs),
            format!("{:.1} s", r.proofline_cpu_secs),
            opt(r.filecoin_proofs_secs, " s"),
            opt(r.filecoin_proofs_cpu_secs, " s"),
            opt(r.speedup, "x"),
            opt(r.speedup_cpu, "x"),
            r.verified
        ));
    }
    out
}
