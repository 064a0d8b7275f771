//! `fil-stats`: the zero / one / other split of the MSM scalars (A, B, L and all aux values) of
//! one real PoRep partition.
//!
//! Seals a fresh random sector of the chosen size in a temporary directory (add_piece, PC1, PC2,
//! C1, as the test fixture does), plans it through the `porep-c2` adapter's own
//! [`porep::plan_shape`] (the parse, public inputs and circuit thunks that the daemon and
//! `fil-bench` use), builds and synthesizes the chosen partition's circuit, and prints
//! [`stats::table`] to stderr and one JSON object to stdout (also written to `--json FILE`):
//! sector size, registered proof, seal and synthesis seconds and the [`stats::PartitionStats`].
//! With `--compare-tails` it seals a second random sector, synthesizes the same partition of it
//! and reports how far the two partitions' tails and ones coincide ([`stats::overlap`]). Synthesis
//! needs no Groth16 parameters; none are read or generated.
//!
//! ```text
//! cargo run -p proofline-filecoin --release --bin fil-stats -- \
//!     [--sector-size 2KiB|8MiB|512MiB] [--partition N] [--compare-tails] [--json FILE] \
//!     [--cache DIR]
//! ```
//!
//! filecoin-proofs' SDR parent cache goes to `<cache>/parents` (the fixture cache by default).

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;
use clap::{Parser, ValueEnum};
use proofline_filecoin::porep::plan_shape;
use proofline_filecoin::stats::{self, PartitionStats, QueryOverlap};
use proofline_filecoin::{c1, fixture, shapes, with_tree_shape, RegisteredSealProof};
use proofline_groth16::prover::public_inputs;
use proofline_groth16::synthesis::synthesize_boxed;
use proofline_groth16::{MsmPlan, SynthesizedPartition};
use serde::Serialize;

/// Sector sizes this tool seals (the V1_1 registered proof of each).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum SectorSize {
    #[value(name = "2KiB")]
    S2KiB,
    #[value(name = "8MiB")]
    S8MiB,
    #[value(name = "512MiB")]
    S512MiB,
}

impl SectorSize {
    fn registered_proof(self) -> RegisteredSealProof {
        match self {
            SectorSize::S2KiB => fixture::FIXTURE_PROOF,
            SectorSize::S8MiB => RegisteredSealProof::StackedDrg8MiBV1_1,
            SectorSize::S512MiB => RegisteredSealProof::StackedDrg512MiBV1_1,
        }
    }
}

#[derive(Parser)]
#[command(about = "Zero/one/other split of the MSM scalars of a real PoRep partition")]
struct Args {
    /// Sector size to seal (V1_1 registered proof).
    #[arg(long, value_enum, ignore_case = true, default_value = "8MiB")]
    sector_size: SectorSize,
    /// Partition to synthesize (0-based).
    #[arg(long, default_value_t = 0)]
    partition: usize,
    /// Also seal a second random sector, synthesize the same partition of it and compare the
    /// two partitions' tails (the bases with a scalar neither zero nor one) and ones.
    #[arg(long)]
    compare_tails: bool,
    /// Also write the JSON object to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Fixture cache directory, for filecoin-proofs' SDR parent cache (default
    /// ${PROOFLINE_TEST_CACHE:-$HOME/.cache/proofline/test-fixtures}).
    #[arg(long)]
    cache: Option<PathBuf>,
}

/// What is printed to stdout.
#[derive(Serialize)]
struct Report {
    sector_size: String,
    registered_proof: String,
    partition: usize,
    partitions: usize,
    sector_id: u64,
    /// add_piece + PC1 + PC2 + C1.
    seal_secs: f64,
    /// Parsing the C1 output and computing every partition's public inputs.
    plan_secs: f64,
    /// Building the partition's circuit and synthesizing it.
    synthesis_secs: f64,
    stats: PartitionStats,
    /// With `--compare-tails`: the second sector and how far its partition's tails and ones
    /// coincide with this one's.
    #[serde(skip_serializing_if = "Option::is_none")]
    compared_sector_id: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    overlap: Option<Vec<QueryOverlap>>,
}

/// One partition of a freshly sealed random sector, synthesized.
struct Synthesized {
    sector_id: u64,
    seal_secs: f64,
    plan_secs: f64,
    synthesis_secs: f64,
    partition: SynthesizedPartition,
}

/// Seals a random sector of `rp`, plans it through the `porep-c2` adapter and synthesizes
/// `partition`, checking its public inputs against the plan's.
fn seal_and_synthesize(rp: RegisteredSealProof, partition: usize) -> anyhow::Result<Synthesized> {
    let size = u64::from(rp.sector_size());
    eprintln!(
        "sealing a random {} sector ({})",
        shapes::sector_size_label(size),
        shapes::name(rp)
    );
    let sector = fixture::seal_random_sector(rp, &mut rand::rngs::OsRng)
        .with_context(|| format!("sealing a {} sector", shapes::name(rp)))?;
    eprintln!(
        "sector {} sealed in {:.1} s",
        sector.sector_id, sector.seal_secs
    );

    let t = Instant::now();
    let body = c1::request_body(&sector.c1_output, &sector.prover_id, sector.sector_id);
    let input = c1::parse_input(&body["input"], None).context("parsing the sealed C1 output")?;
    let plans = with_tree_shape!(size, plan_shape(input), |s| Err(
        proofline_jobs::JobError::Internal(format!("unsupported sector size {s}"))
    ))
    .context("planning the partitions")?;
    let plan_secs = t.elapsed().as_secs_f64();
    let part = plans
        .into_iter()
        .nth(partition)
        .with_context(|| format!("--partition {partition}: no such partition"))?;

    let t = Instant::now();
    let circuit = (part.circuit)()
        .with_context(|| format!("building the circuit of partition {partition}"))?;
    let synth =
        synthesize_boxed(circuit).with_context(|| format!("synthesizing partition {partition}"))?;
    let synthesis_secs = t.elapsed().as_secs_f64();
    anyhow::ensure!(
        public_inputs(&synth.assignment) == part.public_inputs.as_slice(),
        "partition {partition}: the synthesized public inputs differ from the planned ones"
    );
    Ok(Synthesized {
        sector_id: sector.sector_id,
        seal_secs: sector.seal_secs,
        plan_secs,
        synthesis_secs,
        partition: synth,
    })
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let rp = args.sector_size.registered_proof();
    let size = u64::from(rp.sector_size());
    let partitions = usize::from(shapes::porep_config(rp).partitions);
    anyhow::ensure!(
        args.partition < partitions,
        "--partition {} is out of range: {} has {partitions} partition(s) (0..={})",
        args.partition,
        shapes::name(rp),
        partitions - 1
    );
    if let Some(path) = &args.json {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        anyhow::ensure!(
            dir.is_dir(),
            "--json {}: directory {} does not exist",
            path.display(),
            dir.display()
        );
    }

    let cache = args.cache.unwrap_or_else(fixture::default_cache_dir);
    fixture::point_filecoin_proofs_at(&cache)
        .with_context(|| format!("--cache {}", cache.display()))?;
    let first = seal_and_synthesize(rp, args.partition)?;
    let stats = stats::partition_stats(&first.partition);
    let first_plan = args
        .compare_tails
        .then(|| MsmPlan::build(&first.partition.assignment));
    // the first partition's assignment goes before the second sector is sealed
    let Synthesized {
        sector_id,
        seal_secs,
        plan_secs,
        synthesis_secs,
        partition,
    } = first;
    drop(partition);
    let (compared_sector_id, overlap) = match first_plan {
        Some(plan) => {
            let second = seal_and_synthesize(rp, args.partition)?;
            let shared = stats::overlap(&plan, &MsmPlan::build(&second.partition.assignment));
            (Some(second.sector_id), Some(shared))
        }
        None => (None, None),
    };

    let report = Report {
        sector_size: shapes::sector_size_label(size),
        registered_proof: shapes::name(rp),
        partition: args.partition,
        partitions,
        sector_id,
        seal_secs,
        plan_secs,
        synthesis_secs,
        stats,
        compared_sector_id,
        overlap,
    };
    eprintln!(
        "{} partition {}/{}: plan {:.2} s, circuit + synthesis {:.2} s",
        report.registered_proof,
        report.partition,
        report.partitions,
        report.plan_secs,
        report.synthesis_secs
    );
    eprint!("{}", stats::table(&report.stats));
    if let (Some(id), Some(o)) = (report.compared_sector_id, &report.overlap) {
        eprintln!(
            "tails and ones against partition {} of sector {id}:",
            report.partition
        );
        eprint!("{}", stats::overlap_table(o));
    }
    let json = serde_json::to_string(&report)?;
    println!("{json}");
    if let Some(path) = &args.json {
        std::fs::write(path, format!("{json}\n"))
            .with_context(|| format!("--json {}: writing the report", path.display()))?;
    }
    Ok(())
}
