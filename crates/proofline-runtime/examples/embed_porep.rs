//! A Rust sealing worker embedding proofline: start the pipeline from a configuration, prove
//! PoRep commit phase 2 from a C1 output held as a struct, check the proof with filecoin-proofs'
//! own `verify_seal`, shut down. No HTTP, no JSON, no base64 on the way in.
//!
//! ```sh
//! cargo run --release -p proofline-runtime --example embed_porep
//! ```
//!
//! It proves a freshly sealed random 2KiB sector with the test fixture's random parameters
//! (`proofline_filecoin::fixture`, cached under `$PROOFLINE_TEST_CACHE`, generated on first use in
//! about 2.5 minutes on 2 cores). A real worker passes its own C1 output, prover id (for a miner
//! actor id: `proofline_filecoin::miner::prover_id_of_actor`) and sector number, and leaves
//! `[filecoin] params_dir` at the published parameters. `tests/embed_example.rs` runs this
//! example in the test suite.

use proofline_config::Config;
use proofline_filecoin::{fixture, verify_c2, SealIdentity};
use proofline_runtime::{Prover, SealCommitPhase1Output};

/// Proves the fixture sector through the embedding API and checks the proof.
pub fn run() -> Result<(), Box<dyn std::error::Error>> {
    let fx = fixture::ensure_fixture(&fixture::default_cache_dir())?;
    // What filecoin-ffi hands a worker after commit phase 1, as the typed struct.
    let c1: SealCommitPhase1Output = serde_json::from_slice(&fx.sector.c1_output)?;
    let (prover_id, sector_id) = (fx.sector.prover_id, fx.sector.sector_id);
    let identity = SealIdentity {
        registered_proof: c1.registered_proof,
        comm_r: c1.comm_r,
        comm_d: c1.comm_d,
        ticket: c1.ticket,
        seed: c1.seed,
        prover_id,
        sector_id,
    };

    // The embedded default plus PROOFLINE_<SECTION>__<KEY> variables; the fixture's parameters.
    let mut config = Config::load(None)?;
    config.filecoin.params_dir = fx.params_dir.display().to_string();
    config.filecoin.verify_digests = false; // random test parameters
    config.log.level = "warn".into();
    proofline_runtime::init_logging(&config);

    let prover = Prover::start(&config)?;
    let proof = futures::executor::block_on(prover.prove_porep_c2(c1, prover_id, sector_id));
    prover.shutdown();
    let proof = proof?;

    let accepted = verify_c2(&proof, &identity)?;
    println!(
        "sector {sector_id}: {} proof bytes, verify_seal: {}",
        proof.len(),
        if accepted { "accepted" } else { "REJECTED" }
    );
    if !accepted {
        return Err("verify_seal rejected the proof".into());
    }
    let mut tampered = proof.clone();
    tampered[proof.len() / 2] ^= 1;
    if matches!(verify_c2(&tampered, &identity), Ok(true)) {
        return Err("verify_seal accepted a tampered proof".into());
    }
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
