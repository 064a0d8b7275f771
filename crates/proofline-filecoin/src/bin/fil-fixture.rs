//! `fil-fixture`: prepares the 2KiB test fixtures (random parameters under the published names
//! in the cache directory) and optionally writes ready request bodies for fresh sectors: a
//! `porep-c2` job (C1 output), a `window-post` and a `winning-post` job (vanilla proofs) and a
//! `snap-update` job (vanilla partition proofs of an updated sector). Each body's parameters
//! are generated first when missing.
//!
//! ```text
//! cargo run -p proofline-filecoin --release --bin fil-fixture -- [--cache DIR] [--c1-out FILE]
//!     [--window-post-out FILE] [--winning-post-out FILE] [--snap-out FILE]
//! ```

use std::path::PathBuf;

use clap::Parser;
use proofline_filecoin::fixture::{self, FIXTURE_PROOF};
use proofline_filecoin::post::{self, PoStKind};
use proofline_filecoin::{sectors, update, ProofCircuit};

#[derive(Parser)]
#[command(about = "Prepare the 2KiB test fixtures (random parameters, cached) and request bodies")]
struct Args {
    /// Cache directory (default ${PROOFLINE_TEST_CACHE:-$HOME/.cache/proofline/test-fixtures}).
    #[arg(long)]
    cache: Option<PathBuf>,
    /// Also seal a random 2KiB sector and write a porep-c2 request body here.
    #[arg(long)]
    c1_out: Option<PathBuf>,
    /// Also write a window-post request body over 2 fresh sectors here.
    #[arg(long)]
    window_post_out: Option<PathBuf>,
    /// Also write a winning-post request body for a fresh sector here.
    #[arg(long)]
    winning_post_out: Option<PathBuf>,
    /// Also write a snap-update request body for a freshly updated sector here.
    #[arg(long)]
    snap_out: Option<PathBuf>,
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
    let mut rng = rand::rngs::OsRng;
    let write = |out: &PathBuf, circuit: ProofCircuit, body: serde_json::Value| {
        let p = fixture::ensure_params(circuit, &params_dir, &mut rand::rngs::OsRng, generator)?;
        std::fs::write(out, serde_json::to_vec_pretty(&body)?)?;
        eprintln!(
            "wrote a {} request to {} (parameters {})",
            body["kind"],
            out.display(),
            p.params.display()
        );
        anyhow::Ok(())
    };
    for (out, kind) in [
        (&args.window_post_out, PoStKind::Window),
        (&args.winning_post_out, PoStKind::Winning),
    ] {
        let Some(out) = out else { continue };
        let case = match kind {
            PoStKind::Window => sectors::window_post_case(FIXTURE_PROOF, 2, &mut rng)?,
            PoStKind::Winning => sectors::winning_post_case(FIXTURE_PROOF, 4, &mut rng)?,
        };
        let id = &case.identity;
        let body = post::request_body(
            kind,
            id.registered_proof,
            &id.randomness,
            &id.prover_id,
            &case.vanilla_proofs,
        );
        write(out, id.registered_proof.into(), body)?;
    }
    if let Some(out) = &args.snap_out {
        let case = sectors::update_case(FIXTURE_PROOF, &mut rng)?;
        let body = update::request_body(&case.identity, &case.vanilla_proofs);
        write(out, case.identity.registered_proof.into(), body)?;
    }
    Ok(())
}
