//! The 2KiB C2 comparison: proofline's staged prover (CPU backend, every partition) against
//! filecoin-proofs' own `seal_commit_phase2`, on the same machine, sector and parameters.
//!
//! Our side is timed stage by stage (circuit construction and synthesis, H, the MSMs, assembly
//! and verification) so that a slow run says where the time went. Parameters are loaded once
//! before timing (the daemon keeps them resident); the load is reported separately.
//! filecoin-proofs' call is timed as a whole, as a worker would run it (it maps the same file).

use std::time::Instant;

use proofline_groth16::prover::{
    assemble, check_shape, compute_h, msm_b_g2, msm_h, msm_sparse_g1, public_inputs, random_r_s,
    verify, MsmResults,
};
use proofline_groth16::synthesis::synthesize_boxed;
use proofline_groth16::{proof_to_bytes, CpuBackend, MsmPlan, ProvingKey, SynthesizedPartition};
use proofline_jobs::{JobPlan, JobRequest};
use serde::Serialize;

use crate::fixture::Fixture;
use crate::porep::{PorepC2Adapter, SealIdentity};
use crate::stats::{partition_stats, PartitionStats};
use crate::{verify_c2, FilecoinConfig, FilecoinError};

/// Seconds per stage of our prover, summed over partitions.
#[derive(Clone, Debug, Default, Serialize)]
pub struct StageSecs {
    /// `plan()`: parsing the C1 output, public inputs.
    pub plan: f64,
    /// Building the circuits and synthesizing them.
    pub synthesis: f64,
    /// The 0/1/other split of A, B, L.
    pub msm_plan: f64,
    /// H polynomial (NTTs).
    pub h_poly: f64,
    /// H MSM.
    pub msm_h: f64,
    /// L, A, B in G1.
    pub msm_g1_sparse: f64,
    /// B in G2.
    pub msm_b_g2: f64,
    /// Assembly and verification against the vk.
    pub assemble_verify: f64,
}

/// The benchmark's result.
#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    /// `porep-c2 2KiB`.
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
    /// filecoin-proofs' `seal_commit_phase2`.
    pub filecoin_proofs_secs: Option<f64>,
    /// CPU seconds (all threads) of the same.
    pub filecoin_proofs_cpu_secs: Option<f64>,
    /// `filecoin_proofs_secs / proofline_secs` (wall time).
    pub speedup: Option<f64>,
    /// `filecoin_proofs_cpu_secs / proofline_cpu_secs` (CPU time; robust to other load).
    pub speedup_cpu: Option<f64>,
    /// 1-minute load average at the start and at the end (other load distorts wall times).
    pub load_average: (f64, f64),
    /// Both proofs accepted by `verify_seal`.
    pub verify_seal_ok: bool,
    /// Scalar split of partition 0.
    pub scalars: PartitionStats,
}

/// CPU seconds (user + system, all threads) this process has used, from `/proc/self/stat`;
/// 0 where unavailable. Less sensitive than wall time to other load on a shared machine.
pub fn process_cpu_secs() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
        return 0.0;
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // Linux reports in USER_HZ, 100 on every mainstream configuration.
    (ticks(11) + ticks(12)) / 100.0
}

/// The 1-minute load average, for the record (0 where unavailable).
pub fn load_average() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse().ok()))
        .unwrap_or(0.0)
}

/// Runs `f`, adding its wall time to `acc`.
pub fn time<T>(acc: &mut f64, f: impl FnOnce() -> T) -> T {
    let t = Instant::now();
    let out = f();
    *acc += t.elapsed().as_secs_f64();
    out
}

/// Proves every partition of `plan` with the CPU backend, stage by stage into `st`, checks each
/// proof against the vk and the planned public inputs, and returns the partition proofs
/// concatenated and the scalar split of partition 0.
pub fn prove_plan_timed(
    plan: JobPlan,
    pk: &ProvingKey,
    st: &mut StageSecs,
) -> Result<(Vec<u8>, PartitionStats), FilecoinError> {
    let other = |e: &dyn std::fmt::Display| FilecoinError::Other(e.to_string());
    let backend = CpuBackend;
    let mut rng = rand::rngs::OsRng;
    let partitions = plan.partitions.len();
    let mut proof = Vec::with_capacity(partitions * proofline_groth16::PROOF_BYTES);
    let mut scalars = None;
    for (k, part) in plan.partitions.into_iter().enumerate() {
        let synth: SynthesizedPartition = time(&mut st.synthesis, || {
            let circuit = (part.circuit)().map_err(|e| other(&e))?;
            synthesize_boxed(circuit).map_err(|e| other(&e))
        })?;
        check_shape(pk, &synth).map_err(|e| other(&e))?;
        if k == 0 {
            scalars = Some(partition_stats(&synth));
        }
        let SynthesizedPartition { a, b, assignment } = synth;
        let msm_plan = time(&mut st.msm_plan, || MsmPlan::build(&assignment));
        let h = time(&mut st.h_poly, || compute_h(&backend, a, b)).map_err(|e| other(&e))?;
        let h_sum = time(&mut st.msm_h, || msm_h(&backend, pk, &h)).map_err(|e| other(&e))?;
        drop(h);
        let (l, a_sum, b_g1) = time(&mut st.msm_g1_sparse, || {
            msm_sparse_g1(&backend, pk, &msm_plan)
        })
        .map_err(|e| other(&e))?;
        let b_g2 =
            time(&mut st.msm_b_g2, || msm_b_g2(&backend, pk, &msm_plan)).map_err(|e| other(&e))?;
        let ok = time(&mut st.assemble_verify, || {
            let (r, s) = random_r_s(&mut rng);
            let results = MsmResults {
                h: h_sum,
                l,
                a: a_sum,
                b_g1,
                b_g2,
            };
            let p = assemble(pk, &results, r, s);
            let inputs = public_inputs(&assignment);
            let ok =
                inputs == part.public_inputs.as_slice() && verify(pk, &p, inputs).unwrap_or(false);
            proof.extend_from_slice(&proof_to_bytes(&p));
            ok
        });
        if !ok {
            return Err(FilecoinError::Other(format!(
                "partition {k} did not verify against the vk and the planned public inputs"
            )));
        }
    }
    let scalars = scalars.ok_or_else(|| FilecoinError::Other("no partitions".into()))?;
    Ok((proof, scalars))
}

/// Proves the fixture's sector both ways. `run_filecoin_proofs = false` skips the reference.
pub fn run(fixture: &Fixture, run_filecoin_proofs: bool) -> Result<BenchReport, FilecoinError> {
    let sector = &fixture.sector;
    let other = |e: &dyn std::fmt::Display| FilecoinError::Other(e.to_string());
    let adapter = PorepC2Adapter::new(FilecoinConfig {
        params_dir: fixture.params_dir.clone(),
        verify_digests: false,
    });
    let body = crate::c1::request_body(&sector.c1_output, &sector.prover_id, sector.sector_id);
    let req: JobRequest = serde_json::from_value(body).map_err(|e| other(&e))?;

    let t = Instant::now();
    let spec = adapter
        .params_spec(sector.registered_proof)
        .map_err(|e| other(&e))?;
    let pk = ProvingKey::read_file(&spec.path, false, |_| {})
        .map_err(|e| FilecoinError::io(&spec.path, e))?;
    let load = t.elapsed().as_secs_f64();

    let mut st = StageSecs::default();
    let load_start = load_average();
    let t_all = Instant::now();
    let cpu_all = process_cpu_secs();
    let (plan, identity): (_, SealIdentity) =
        time(&mut st.plan, || adapter.plan_with_identity(&req)).map_err(|e| other(&e))?;
    let partitions = plan.partitions.len();
    let (proof, scalars) = prove_plan_timed(plan, &pk, &mut st)?;
    let ours = t_all.elapsed().as_secs_f64();
    let ours_cpu = process_cpu_secs() - cpu_all;
    let mut verify_ok = verify_c2(&proof, &identity)?;

    let mut theirs = None;
    let mut theirs_cpu = None;
    if run_filecoin_proofs {
        let c1: filecoin_proofs_api::seal::SealCommitPhase1Output =
            serde_json::from_slice(&sector.c1_output).map_err(|e| other(&e))?;
        let t = Instant::now();
        let cpu = process_cpu_secs();
        let out = filecoin_proofs_api::seal::seal_commit_phase2(
            c1,
            sector.prover_id,
            filecoin_proofs_api::SectorId::from(sector.sector_id),
        )?;
        theirs = Some(t.elapsed().as_secs_f64());
        theirs_cpu = Some(process_cpu_secs() - cpu);
        verify_ok &= out.proof.len() == proof.len() && verify_c2(&out.proof, &identity)?;
    }
    Ok(BenchReport {
        bench: "porep-c2 2KiB".into(),
        registered_proof: crate::shapes::name(identity.registered_proof),
        partitions,
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        proofline_params_load_secs: load,
        proofline_secs: ours,
        proofline_stages: st,
        proofline_cpu_secs: ours_cpu,
        filecoin_proofs_secs: theirs,
        filecoin_proofs_cpu_secs: theirs_cpu,
        speedup: theirs.map(|t| t / ours),
        speedup_cpu: theirs_cpu.map(|t| t / ours_cpu.max(1e-9)),
        load_average: (load_start, load_average()),
        verify_seal_ok: verify_ok,
        scalars,
    })
}

/// A short table of a report.
pub fn table(r: &BenchReport) -> String {
    let s = &r.proofline_stages;
    let mut out = format!(
        "{} ({}, {} partition(s), {} CPUs)\n",
        r.bench, r.registered_proof, r.partitions, r.cpus
    );
    let rows: [(&str, f64); 8] = [
        ("plan (parse C1, public inputs)", s.plan),
        ("circuit + synthesis", s.synthesis),
        ("0/1/other split", s.msm_plan),
        ("H (NTTs)", s.h_poly),
        ("MSM H", s.msm_h),
        ("MSM L, A, B (G1)", s.msm_g1_sparse),
        ("MSM B (G2)", s.msm_b_g2),
        ("assemble + verify", s.assemble_verify),
    ];
    for (name, secs) in rows {
        out.push_str(&format!("  {name:<32} {secs:>8.2} s\n"));
    }
    out.push_str(&format!(
        "  {:<32} {:>8.2} s   CPU {:.1} s (parameter load, once: {:.2} s)\n",
        "proofline total", r.proofline_secs, r.proofline_cpu_secs, r.proofline_params_load_secs
    ));
    if let (Some(t), Some(c), Some(x), Some(xc)) = (
        r.filecoin_proofs_secs,
        r.filecoin_proofs_cpu_secs,
        r.speedup,
        r.speedup_cpu,
    ) {
        out.push_str(&format!(
            "  {:<32} {:>8.2} s   CPU {:.1} s\n  {:<32} {:>8.2}×  (CPU time: {:.2}×)\n",
            "filecoin-proofs seal_commit_phase2", t, c, "speedup, wall", x, xc
        ));
    }
    out.push_str(&format!(
        "  load average at start / end: {:.2} / {:.2}\n",
        r.load_average.0, r.load_average.1
    ));
    out.push_str(&format!("  verify_seal accepts: {}\n", r.verify_seal_ok));
    out
}
