//! `fil-bench`: 2KiB PoRep C2 through proofline (CPU backend) and through filecoin-proofs'
//! `seal_commit_phase2`, same machine, sector and parameters; prints a JSON line and a table,
//! including the zero/one/other split of the A, B, L and aux scalars of the real circuit.
//!
//! ```text
//! cargo run -p proofline-filecoin --release --bin fil-bench -- [--cache DIR] [--no-reference]
//! ```

use std::path::PathBuf;

use clap::Parser;
use proofline_filecoin::{bench, fixture, stats};

#[derive(Parser)]
#[command(about = "Benchmark 2KiB PoRep C2: proofline vs filecoin-proofs")]
struct Args {
    /// Fixture cache directory (default ${PROOFLINE_TEST_CACHE:-$HOME/.cache/proofline/test-fixtures}).
    #[arg(long)]
    cache: Option<PathBuf>,
    /// Skip filecoin-proofs' seal_commit_phase2.
    #[arg(long)]
    no_reference: bool,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let cache = args.cache.unwrap_or_else(fixture::default_cache_dir);
    let fx = fixture::ensure_fixture(&cache)?;
    eprintln!(
        "fixture: parameters {} ({}), sector {} sealed in {:.1} s",
        fx.params.params.display(),
        if fx.params.generated {
            format!("generated in {:.0} s", fx.params.secs)
        } else {
            "cached".to_string()
        },
        fx.sector.sector_id,
        fx.sector.seal_secs
    );
    let report = bench::run(&fx, !args.no_reference)?;
    println!("{}", serde_json::to_string(&report)?);
    eprint!("{}", bench::table(&report));
    eprint!("{}", stats::table(&report.scalars));
    anyhow::ensure!(report.verify_seal_ok, "verify_seal rejected a proof");
    Ok(())
}
