//! A freshly sealed 2KiB sector proved end to end: `PorepC2Adapter::plan`, every partition
//! through `proofline_groth16::prover::prove` on the CPU backend with parameters from the lead's
//! `ParamsStore`, the partition proofs concatenated, and the result checked with filecoin-proofs'
//! own `verify_seal`. One flipped byte must be rejected. Also: random parameters fail the
//! published digest check, and a truncated parameter file is a clear error.
//!
//! Needs the fixture (random parameters, generated into
//! `${PROOFLINE_TEST_CACHE:-$HOME/.cache/proofline/test-fixtures}` on first use: ~2.5 min on 2
//! cores). Run with `--release`.

use std::sync::{Arc, OnceLock};

use proofline_filecoin::fixture::{self, Fixture};
use proofline_filecoin::{c1, verify_c2, verify_c2_with_vk, FilecoinConfig, PorepC2Adapter};
use proofline_groth16::{proof_to_bytes, prover, CpuBackend, PROOF_BYTES};
use proofline_jobs::{JobAdapter, JobRequest, ParamsStore};

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

fn request(fx: &Fixture) -> JobRequest {
    let body = c1::request_body(
        &fx.sector.c1_output,
        &fx.sector.prover_id,
        fx.sector.sector_id,
    );
    serde_json::from_value(body).unwrap()
}

#[test]
fn c2_proof_is_accepted_by_verify_seal_and_a_flipped_byte_is_not() {
    let fx = fixture();
    let adapter = PorepC2Adapter::new(FilecoinConfig {
        params_dir: fx.params_dir.clone(),
        verify_digests: false,
    });
    let (plan, id) = adapter.plan_with_identity(&request(fx)).unwrap();
    assert_eq!(plan.partitions.len(), 1, "2KiB PoRep has one partition");
    assert_eq!(
        plan.partitions[0].public_inputs.len(),
        39,
        "2KiB partition: 40 inputs with ONE"
    );

    let store = ParamsStore::new(false);
    let pk = store.get(&plan.params).unwrap();
    let mut rng = rand::rngs::OsRng;
    let mut proof = Vec::new();
    for part in plan.partitions {
        let circuit = (part.circuit)().unwrap();
        let (p, inputs) = prover::prove(&CpuBackend, &pk, circuit, &mut rng).unwrap();
        assert_eq!(
            inputs, part.public_inputs,
            "synthesis and plan agree on public inputs"
        );
        proof.extend_from_slice(&proof_to_bytes(&p));
    }
    assert_eq!(proof.len(), PROOF_BYTES);

    // filecoin-proofs' verify_seal (reads the .vk through FIL_PROOFS_PARAMETER_CACHE, which the
    // fixture pointed at the cache) and our resident-vk variant agree.
    assert!(
        verify_c2(&proof, &id).unwrap(),
        "verify_seal rejected our proof"
    );
    assert!(verify_c2_with_vk(&proof, &id, pk.vk()).unwrap());

    // The same proof for another sector number is rejected.
    let mut other = id;
    other.sector_id += 1;
    assert!(!matches!(verify_c2(&proof, &other), Ok(true)));

    for pos in [5usize, 60, 100, 150, 191] {
        let mut bad = proof.clone();
        bad[pos] ^= 0x01;
        assert!(
            !matches!(verify_c2(&bad, &id), Ok(true)),
            "verify_seal accepted a proof with byte {pos} flipped"
        );
        assert!(!matches!(verify_c2_with_vk(&bad, &id, pk.vk()), Ok(true)));
    }
    assert!(!matches!(
        verify_c2(&proof[..PROOF_BYTES - 1], &id),
        Ok(true)
    ));
}

#[test]
fn random_parameters_fail_the_published_digest_and_truncation_is_an_error() {
    let fx = fixture();
    let checked = PorepC2Adapter::new(FilecoinConfig {
        params_dir: fx.params_dir.clone(),
        verify_digests: true,
    });
    let plan = checked.plan(&request(fx)).unwrap();
    let store = ParamsStore::new(false);
    let e = store.get(&plan.params).unwrap_err();
    assert_eq!(e.code(), "params_invalid", "{e}");
    assert!(e.to_string().contains("digest mismatch"), "{e}");

    // A truncated copy under the published name: planning accepts it (present), loading fails
    // cleanly, with and without the digest check.
    let dir = tempfile::tempdir().unwrap();
    let spec_path = dir.path().join(plan.params.path.file_name().unwrap());
    let head = {
        use std::io::Read;
        let mut buf = vec![0u8; 1 << 20];
        std::fs::File::open(&plan.params.path)
            .unwrap()
            .read_exact(&mut buf)
            .unwrap();
        buf
    };
    std::fs::write(&spec_path, head).unwrap();
    for verify_digests in [false, true] {
        let a = PorepC2Adapter::new(FilecoinConfig {
            params_dir: dir.path().to_path_buf(),
            verify_digests,
        });
        let plan = a.plan(&request(fx)).unwrap();
        let e = ParamsStore::new(false).get(&plan.params).unwrap_err();
        assert_eq!(e.code(), "params_invalid", "{e}");
    }
    // A check object is shareable (the store keeps it in an Arc).
    let _: Option<Arc<dyn proofline_jobs::ParamsCheck>> = plan.params.check.clone();
}
