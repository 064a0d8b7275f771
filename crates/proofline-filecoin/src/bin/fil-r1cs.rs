//! `fil-r1cs`: records a PoRep shape's constraint system (pre-compiled A, B, C matrices) ahead of
//! time, and inspects recorded files.
//!
//! ```text
//! fil-r1cs record --sector-size 32GiB [--params-dir DIR | --out FILE]
//! fil-r1cs inspect FILE [--verify]
//! ```
//!
//! `record` runs filecoin-proofs' blank partition circuit of the sector size (no sector, no
//! parameters needed) and writes `<params stem>.r1cs` into the parameter directory (default: the
//! daemon's rule, `$FIL_PROOFS_PARAMETER_CACHE` else `/var/tmp/filecoin-proof-parameters`),
//! where the daemon's synthesis actors find it; without it the daemon records a shape from its
//! first partition. The V1, V1_1 and synthetic proofs of one sector size share the file. It
//! prints one JSON object (counts, terms, seconds, bytes, peak memory) on stdout.
//!
//! `inspect` prints a file's header; with `--verify` it also reads the whole file and checks its
//! digest and structure.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use clap::{Parser, Subcommand, ValueEnum};
use proofline_filecoin::{config, constraints, shapes, RegisteredSealProof};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum SectorSize {
    #[value(name = "2KiB")]
    S2KiB,
    #[value(name = "8MiB")]
    S8MiB,
    #[value(name = "512MiB")]
    S512MiB,
    #[value(name = "32GiB")]
    S32GiB,
    #[value(name = "64GiB")]
    S64GiB,
}

impl SectorSize {
    fn registered_proof(self) -> RegisteredSealProof {
        use RegisteredSealProof::*;
        match self {
            SectorSize::S2KiB => StackedDrg2KiBV1_1,
            SectorSize::S8MiB => StackedDrg8MiBV1_1,
            SectorSize::S512MiB => StackedDrg512MiBV1_1,
            SectorSize::S32GiB => StackedDrg32GiBV1_1,
            SectorSize::S64GiB => StackedDrg64GiBV1_1,
        }
    }
}

#[derive(Parser)]
#[command(about = "Record or inspect pre-compiled PoRep constraint systems")]
struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Record a sector size's partition circuit from its blank circuit.
    Record {
        /// Sector size.
        #[arg(long, value_enum, ignore_case = true)]
        sector_size: SectorSize,
        /// Parameter directory to write `<params stem>.r1cs` into.
        #[arg(long, conflicts_with = "out")]
        params_dir: Option<PathBuf>,
        /// Write to this file instead.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Print a recorded file's header.
    Inspect {
        /// The file.
        file: PathBuf,
        /// Also read the whole file and check its digest and structure.
        #[arg(long)]
        verify: bool,
    },
}

/// Peak resident memory of this process (VmHWM), bytes; 0 where unavailable.
fn peak_rss() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

fn main() -> anyhow::Result<()> {
    match Args::parse().command {
        Command::Record {
            sector_size,
            params_dir,
            out,
        } => {
            let rp = sector_size.registered_proof();
            let path = match out {
                Some(p) => p,
                None => {
                    let dir = params_dir.unwrap_or_else(config::default_params_dir);
                    anyhow::ensure!(
                        dir.is_dir(),
                        "--params-dir {}: not a directory",
                        dir.display()
                    );
                    constraints::path_in(rp, &dir)?
                }
            };
            eprintln!(
                "recording the {} partition circuit ({}) into {}",
                shapes::sector_size_label(u64::from(rp.sector_size())),
                shapes::name(rp),
                path.display()
            );
            let t = Instant::now();
            let sys = constraints::record(rp)?;
            let record_secs = t.elapsed().as_secs_f64();
            let t = Instant::now();
            let digest = proofline_r1cs::file::write(&sys, &path)
                .with_context(|| format!("writing {}", path.display()))?;
            let write_secs = t.elapsed().as_secs_f64();
            let c = sys.counts();
            let report = serde_json::json!({
                "registered_proof": shapes::name(rp),
                "key": sys.key(),
                "file": path,
                "file_bytes": std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0),
                "digest": digest,
                "constraints": c.constraints,
                "inputs": c.inputs,
                "aux": c.aux,
                "terms": sys.nnz(),
                "coefficients": sys.table().len(),
                "resident_bytes": sys.resident_bytes(),
                "record_secs": record_secs,
                "write_secs": write_secs,
                "peak_rss_bytes": peak_rss(),
            });
            println!("{report}");
        }
        Command::Inspect { file, verify } => {
            let header = proofline_r1cs::file::read_header(&file)?;
            let mut report = serde_json::to_value(&header)?;
            if verify {
                let t = Instant::now();
                let sys = proofline_r1cs::file::read(&file, None)?;
                report["verified"] = serde_json::json!(true);
                report["read_secs"] = serde_json::json!(t.elapsed().as_secs_f64());
                report["resident_bytes"] = serde_json::json!(sys.resident_bytes());
            }
            println!("{report}");
        }
    }
    Ok(())
}
