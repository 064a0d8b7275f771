//! `fil-fixture`: prepares the 2KiB PoRep test fixture (random parameters under the published
//! names in the cache directory) and optionally writes a freshly sealed sector's C1 output.
//!
//! ```text
//! cargo run -p proofline-filecoin --release --bin fil-fixture -- [--cache DIR] [--c1-out FILE]
//! ```

use std::path::PathBuf;

use clap::Parser;
use proofline_filecoin::fixture;

#[derive(Parser)]
#[command(about = "Prepare the 2KiB PoRep test fixture (random parameters, cached)")]
struct Args {
    /// Cache directory (default ${PROOFLINE_TEST_CACHE:-$HOME/.cache/proofline/test-fixtures}).
    #[arg(long)]
    cache: Option<PathBuf>,
    /// Also seal a random 2KiB sector and write a porep-c2 request body here.
    #[arg(long)]
    c1_out: Option<PathBuf>,
    /// Generate missing parameters with bellperson's reference generator (slower).
    #[arg(long)]
    bellperson: bool,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let cache = args.cache.unwrap_or_else(fixture::default_cache_dir);
    let params_dir = fixture::point_filecoin_proofs_at(&cache)?;
    let generator = if args.bellperson {
        fixture::Generator::Bellperson
    } else {
        fixture::Generator::Fast
    };
    let report = fixture::ensure_params(
        fixture::FIXTURE_PROOF,
        &params_dir,
        &mut rand::rngs::OsRng,
        generator,
    )?;
    println!(
        "{}",
        serde_json::json!({
            "params": report.params,
            "vk": report.vk,
            "generated": report.generated,
            "generate_secs": report.secs,
        })
    );
    if let Some(out) = args.c1_out {
        let sector = fixture::seal_random_sector(fixture::FIXTURE_PROOF, &mut rand::rngs::OsRng)?;
        let body = proofline_filecoin::c1::request_body(
            &sector.c1_output,
            &sector.prover_id,
            sector.sector_id,
        );
        std::fs::write(&out, serde_json::to_vec_pretty(&body)?)?;
        eprintln!(
            "wrote a porep-c2 request for sector {} to {} (sealed in {:.1} s)",
            sector.sector_id,
            out.display(),
            sector.seal_secs
        );
    }
    Ok(())
}
