//! `fil-bench`: 2KiB Filecoin proofs through proofline (CPU backend) and through
//! filecoin-proofs' own proving calls, same machine, inputs and parameters; prints one JSON line
//! per job and a table.
//!
//! * `porep-c2` (default): `seal_commit_phase2`, with the zero/one/other split of the real
//!   circuit's A, B, L and aux scalars;
//! * `window-post`, `winning-post`, `snap-update`: `generate_window_post_with_vanilla`,
//!   `generate_winning_post_with_vanilla`, `generate_empty_sector_update_proof_with_vanilla` on
//!   the vanilla proofs of fresh sectors; `post` runs the three.
//!
//! ```text
//! cargo run -p proofline-filecoin --release --bin fil-bench -- [--kind KIND] [--sectors N]
//!     [--cache DIR] [--no-reference]
//! ```

use std::path::PathBuf;

use clap::{Parser, ValueEnum};
use proofline_filecoin::bench_post::{self, Case};
use proofline_filecoin::fixture::{self, FIXTURE_PROOF};
use proofline_filecoin::sectors;
use proofline_filecoin::{bench, stats, FilecoinConfig, ProofCircuit};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Kind {
    /// PoRep commit phase 2.
    PorepC2,
    /// WindowPoSt over `--sectors` sectors.
    WindowPost,
    /// WinningPoSt.
    WinningPost,
    /// SnapDeals update.
    SnapUpdate,
    /// WindowPoSt, WinningPoSt and SnapDeals.
    Post,
}

#[derive(Parser)]
#[command(about = "Benchmark 2KiB Filecoin proofs: proofline vs filecoin-proofs")]
struct Args {
    /// Which proof.
    #[arg(long, value_enum, default_value_t = Kind::PorepC2)]
    kind: Kind,
    /// Sectors of the WindowPoSt (2KiB: 2 per partition).
    #[arg(long, default_value_t = 2)]
    sectors: usize,
    /// Fixture cache directory (default ${PROOFLINE_TEST_CACHE:-$HOME/.cache/proofline/test-fixtures}).
    #[arg(long)]
    cache: Option<PathBuf>,
    /// Skip filecoin-proofs' own call.
    #[arg(long)]
    no_reference: bool,
}

fn c2(cache: &std::path::Path, reference: bool) -> anyhow::Result<()> {
    let fx = fixture::ensure_fixture(cache)?;
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
    let report = bench::run(&fx, reference)?;
    println!("{}", serde_json::to_string(&report)?);
    eprint!("{}", bench::table(&report));
    eprint!("{}", stats::table(&report.scalars));
    anyhow::ensure!(report.verify_seal_ok, "verify_seal rejected a proof");
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let cache = args.cache.unwrap_or_else(fixture::default_cache_dir);
    let reference = !args.no_reference;
    if args.kind == Kind::PorepC2 {
        return c2(&cache, reference);
    }
    let kinds = match args.kind {
        Kind::Post => vec![Kind::WindowPost, Kind::WinningPost, Kind::SnapUpdate],
        k => vec![k],
    };
    // Before any filecoin-proofs call: sealing reads its settings too.
    fixture::point_filecoin_proofs_at(&cache)?;
    let mut rng = rand::rngs::OsRng;
    let mut reports = Vec::new();
    for kind in kinds {
        let case = match kind {
            Kind::WindowPost => Case::PoSt(sectors::window_post_case(
                FIXTURE_PROOF,
                args.sectors,
                &mut rng,
            )?),
            Kind::WinningPost => {
                Case::PoSt(sectors::winning_post_case(FIXTURE_PROOF, 4, &mut rng)?)
            }
            _ => Case::Update(sectors::update_case(FIXTURE_PROOF, &mut rng)?),
        };
        let circuit = match &case {
            Case::PoSt(c) => ProofCircuit::from(c.identity.registered_proof),
            Case::Update(c) => ProofCircuit::from(c.identity.registered_proof),
        };
        let (params_dir, p) = fixture::ensure_circuit(&cache, circuit)?;
        eprintln!(
            "{}: parameters {} ({})",
            circuit.name(),
            p.params.display(),
            if p.generated {
                format!("generated in {:.0} s", p.secs)
            } else {
                "cached".to_string()
            }
        );
        let config = FilecoinConfig {
            params_dir,
            verify_digests: false,
        };
        let r = bench_post::run(&case, &config, reference)?;
        println!("{}", serde_json::to_string(&r)?);
        anyhow::ensure!(r.verified, "{}: a proof was rejected", r.bench);
        reports.push(r);
    }
    eprint!("{}", bench_post::table(&reports));
    Ok(())
}
