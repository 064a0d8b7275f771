//! PoRep synthesis through recorded constraints equals the full synthesis, bit for bit, and
//! proves: the fixture's freshly sealed 2KiB sector, its partition synthesized by storage-proofs'
//! circuit (every constraint), by the parallel per-challenge witness with the matrices recorded
//! from filecoin-proofs' blank circuit (and read back from their file), and by the recording of
//! the real circuit; a, b, c, every input and aux value and the three densities agree, and the
//! proof made from the pre-compiled partition passes `verify_seal`.
//!
//! `eight_mib_matches` (ignored: seals an 8MiB sector, ~1 min on 2 cores) does the same
//! comparison for the 8MiB shape, which needs no parameters:
//! `cargo test --release -p proofline-filecoin --test precompiled_porep -- --ignored`.

use std::sync::OnceLock;

use proofline_filecoin::fixture::{self, Fixture};
use proofline_filecoin::porep::plan_shape;
use proofline_filecoin::{
    c1, constraints, verify_c2, with_tree_shape, FilecoinConfig, PorepC2Adapter,
    RegisteredSealProof,
};
use proofline_groth16::precompiled::{partition_from, synthesize_recording};
use proofline_groth16::synthesis::synthesize_boxed;
use proofline_groth16::{proof_to_bytes, prover, CpuBackend, SynthesizedPartition};
use proofline_jobs::{JobAdapter, JobRequest, ParamsStore, PartitionPlan};

fn fixture() -> &'static Fixture {
    static FX: OnceLock<Fixture> = OnceLock::new();
    FX.get_or_init(|| {
        let cache = fixture::default_cache_dir();
        match fixture::ensure_fixture(&cache) {
            Ok(f) => f,
            Err(e) => panic!("fixture in {}: {e}", cache.display()),
        }
    })
}

fn assert_same(what: &str, plain: &SynthesizedPartition, other: &SynthesizedPartition) {
    assert_eq!(plain.num_constraints(), other.num_constraints(), "{what}");
    assert!(plain.a == other.a, "{what}: a differs");
    assert!(plain.b == other.b, "{what}: b differs");
    let (p, o) = (&plain.assignment, &other.assignment);
    assert!(p.input == o.input, "{what}: inputs differ");
    assert_eq!(p.aux.len(), o.aux.len(), "{what}: aux count");
    if let Some(i) = (0..p.aux.len()).find(|&i| p.aux[i] != o.aux[i]) {
        panic!("{what}: aux variable {i} differs");
    }
    assert!(p.a_aux_density == o.a_aux_density, "{what}: A aux density");
    assert!(
        p.b_input_density == o.b_input_density,
        "{what}: B input density"
    );
    assert!(p.b_aux_density == o.b_aux_density, "{what}: B aux density");
}

/// The partitions of a sealed sector, planned twice (a thunk is consumed by one synthesis).
fn plans(sector: &fixture::SealedSector, copies: usize) -> Vec<Vec<PartitionPlan>> {
    let size = u64::from(sector.registered_proof.sector_size());
    (0..copies)
        .map(|_| {
            let body = c1::request_body(&sector.c1_output, &sector.prover_id, sector.sector_id);
            let input = c1::parse_input(&body["input"], None).unwrap();
            with_tree_shape!(size, plan_shape(input), |s| Err(
                proofline_jobs::JobError::Internal(format!("{s}"))
            ))
            .unwrap()
        })
        .collect()
}

/// Compares the three syntheses of partition 0 and returns the pre-compiled one.
fn check_sector(sector: &fixture::SealedSector) -> SynthesizedPartition {
    let rp = sector.registered_proof;
    let mut copies = plans(sector, 3).into_iter();
    let mut next = || copies.next().unwrap().remove(0).circuit;

    let plain = synthesize_boxed((next())().unwrap()).unwrap();

    let blank = constraints::record(rp).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = constraints::path_in(rp, dir.path()).unwrap();
    proofline_r1cs::file::write(&blank, &path).unwrap();
    let key = constraints::key(rp).unwrap();
    let sys = proofline_r1cs::file::read(&path, Some(&key)).unwrap();
    prover::check_recorded_shape(&prover::params_shape_of(&plain), &sys).unwrap();

    let w = (next())().unwrap().witness().unwrap();
    let pre = partition_from(&sys, w).unwrap();
    assert_same("parallel witness + blank-recorded matrices", &plain, &pre);

    let (first, recorded) = synthesize_recording((next())().unwrap(), &key, "test").unwrap();
    assert_same("recording of the real circuit", &plain, &first);
    assert!(recorded.matrices() == sys.matrices(), "same matrices");
    assert!(recorded.table() == sys.table(), "same coefficients");
    pre
}

#[test]
fn two_kib_matches_the_full_synthesis_and_its_proof_passes_verify_seal() {
    let fx = fixture();
    let pre = check_sector(&fx.sector);

    let adapter = PorepC2Adapter::new(FilecoinConfig {
        params_dir: fx.params_dir.clone(),
        verify_digests: false,
    });
    let body = c1::request_body(
        &fx.sector.c1_output,
        &fx.sector.prover_id,
        fx.sector.sector_id,
    );
    let req: JobRequest = serde_json::from_value(body).unwrap();
    let (plan, id) = adapter.plan_with_identity(&req).unwrap();
    assert_eq!(plan.partitions.len(), 1);
    let pk = ParamsStore::new(false).get(&plan.params).unwrap();
    prover::check_shape(&pk, &pre).unwrap();
    let (proof, inputs) =
        prover::prove_synthesized(&CpuBackend, &pk, pre, &mut rand::rngs::OsRng).unwrap();
    assert_eq!(inputs, plan.partitions[0].public_inputs);
    let bytes = proof_to_bytes(&proof);
    assert!(verify_c2(&bytes, &id).unwrap());
    let mut bad = bytes.clone();
    bad[100] ^= 1;
    assert!(!verify_c2(&bad, &id).unwrap_or(false));
    assert!(adapter.kind() == "porep-c2");
}

#[test]
#[ignore]
fn eight_mib_matches() {
    let fx = fixture();
    fixture::point_filecoin_proofs_at(&fx.cache).unwrap();
    let sector = fixture::seal_random_sector(
        RegisteredSealProof::StackedDrg8MiBV1_1,
        &mut rand::rngs::OsRng,
    )
    .unwrap();
    check_sector(&sector);
}
