//! WindowPoSt, WinningPoSt and SnapDeals partitions through recorded constraints equal the full
//! synthesis bit for bit, as PoRep's do (`precompiled_porep.rs`): for each job kind over freshly
//! sealed 2KiB sectors, the first partition is recorded from its own synthesis (what the daemon
//! does for a shape without a recorded file), and every partition's witness evaluated through
//! that system gives the same a, b, c, inputs, aux values and densities as its full synthesis.
//! WindowPoSt synthesizes its sectors in child systems whose ONE is used only there, which the
//! densities must follow.
//!
//! Needs the 2KiB PoSt and update parameters of the fixture cache only for planning (generated
//! on first use, as the PoSt and update tests do). Run with `--release`.

use std::path::PathBuf;

use proofline_filecoin::fixture::{self, FIXTURE_PROOF};
use proofline_filecoin::post::{self, PoStKind};
use proofline_filecoin::{sectors, update};
use proofline_filecoin::{
    FilecoinConfig, PoStAdapter, RegisteredPoStProof, RegisteredUpdateProof, SnapUpdateAdapter,
};
use proofline_groth16::precompiled::{partition_from, synthesize_recording};
use proofline_groth16::synthesis::synthesize_boxed;
use proofline_groth16::SynthesizedPartition;
use proofline_jobs::{JobAdapter, JobPlan, JobRequest};

fn assert_same(what: &str, plain: &SynthesizedPartition, other: &SynthesizedPartition) {
    assert_eq!(plain.num_constraints(), other.num_constraints(), "{what}");
    assert!(plain.a == other.a, "{what}: a differs");
    assert!(plain.b == other.b, "{what}: b differs");
    let (p, o) = (&plain.assignment, &other.assignment);
    assert!(p.input == o.input, "{what}: inputs differ");
    assert!(p.aux == o.aux, "{what}: aux values differ");
    assert!(p.a_aux_density == o.a_aux_density, "{what}: A aux density");
    assert!(
        p.b_input_density == o.b_input_density,
        "{what}: B input density"
    );
    assert!(p.b_aux_density == o.b_aux_density, "{what}: B aux density");
}

/// Plans the request afresh for each synthesis (a partition's circuit thunk is used once) and
/// compares every partition.
fn check(what: &str, plan: impl Fn() -> JobPlan) {
    let n = plan().partitions.len();
    assert!(n > 0, "{what}: no partitions");
    let circuit = |k: usize| (plan().partitions.swap_remove(k).circuit)().unwrap();
    let (first, sys) = synthesize_recording(circuit(0), what, "test").unwrap();
    for k in 0..n {
        let plain = synthesize_boxed(circuit(k)).unwrap();
        if k == 0 {
            assert_same(&format!("{what}: recording"), &plain, &first);
        }
        let pre = partition_from(&sys, circuit(k).witness().unwrap()).unwrap();
        assert_same(&format!("{what}: partition {k}"), &plain, &pre);
    }
}

fn config(params_dir: PathBuf) -> FilecoinConfig {
    FilecoinConfig {
        params_dir,
        verify_digests: false,
    }
}

#[test]
fn post_partitions_match_the_full_synthesis() {
    let cache = fixture::default_cache_dir();
    let window_rp = RegisteredPoStProof::StackedDrgWindow2KiBV1_2;
    let (params_dir, _) = fixture::ensure_circuit(&cache, window_rp).unwrap();
    fixture::ensure_circuit(&cache, RegisteredPoStProof::StackedDrgWinning2KiBV1).unwrap();

    let case = sectors::window_post_case(FIXTURE_PROOF, 3, &mut rand::rngs::OsRng).unwrap();
    let a = PoStAdapter::new(PoStKind::Window, config(params_dir.clone()));
    let id = &case.identity;
    let req: JobRequest = serde_json::from_value(post::request_body(
        case.kind,
        id.registered_proof,
        &id.randomness,
        &id.prover_id,
        &case.vanilla_proofs,
    ))
    .unwrap();
    check("window-post-2kib", || a.plan(&req).unwrap());

    let case = sectors::winning_post_case(FIXTURE_PROOF, 4, &mut rand::rngs::OsRng).unwrap();
    let a = PoStAdapter::new(PoStKind::Winning, config(params_dir));
    let id = &case.identity;
    let req: JobRequest = serde_json::from_value(post::request_body(
        case.kind,
        id.registered_proof,
        &id.randomness,
        &id.prover_id,
        &case.vanilla_proofs,
    ))
    .unwrap();
    check("winning-post-2kib", || a.plan(&req).unwrap());
}

#[test]
fn snap_update_partitions_match_the_full_synthesis() {
    let cache = fixture::default_cache_dir();
    let (params_dir, _) =
        fixture::ensure_circuit(&cache, RegisteredUpdateProof::StackedDrg2KiBV1).unwrap();
    let case = sectors::update_case(FIXTURE_PROOF, &mut rand::rngs::OsRng).unwrap();
    let a = SnapUpdateAdapter::new(config(params_dir));
    let req: JobRequest =
        serde_json::from_value(update::request_body(&case.identity, &case.vanilla_proofs)).unwrap();
    check("snap-update-2kib", || a.plan(&req).unwrap());
}
