//! `window-post`, `winning-post` and `snap-update` planning without sealed sectors: every bad
//! input is an `invalid_field` error naming its field; missing parameters are
//! `params_missing`; the kinds' default priorities are WinningPoSt > WindowPoSt > SnapDeals >
//! C2. (Vanilla proofs that decode but do not verify need real sectors: see `post_2kib.rs`.)

use proofline_filecoin::{
    FilecoinConfig, PoStAdapter, PoStKind, PorepC2Adapter, RegisteredPoStProof,
    RegisteredUpdateProof, SnapUpdateAdapter,
};
use proofline_jobs::{AdapterRegistry, JobAdapter, JobError, JobRequest};
use serde_json::{json, Value};
use std::sync::Arc;

fn req(kind: &str, input: Value) -> JobRequest {
    JobRequest {
        kind: kind.into(),
        circuit: None,
        input,
        ..Default::default()
    }
}

fn config(dir: &std::path::Path) -> FilecoinConfig {
    FilecoinConfig {
        params_dir: dir.to_path_buf(),
        verify_digests: false,
    }
}

/// Adapters whose parameter directory has (dummy) files for every circuit they serve.
fn adapters() -> (tempfile::TempDir, Vec<Arc<dyn JobAdapter>>) {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path());
    let all: Vec<Arc<dyn JobAdapter>> = vec![
        Arc::new(PoStAdapter::new(PoStKind::Window, c.clone())),
        Arc::new(PoStAdapter::new(PoStKind::Winning, c.clone())),
        Arc::new(SnapUpdateAdapter::new(c)),
    ];
    for a in &all {
        for circuit in a.circuits() {
            std::fs::write(&circuit.params_path, b"dummy").unwrap();
        }
    }
    (dir, all)
}

fn field_err(a: &dyn JobAdapter, r: JobRequest) -> (String, String) {
    match a.plan(&r) {
        Err(JobError::InvalidField { field, message }) => (field, message),
        Err(other) => panic!("expected invalid_field, got {other}"),
        Ok(_) => panic!("expected an error"),
    }
}

const HEX_FR: &str = "0101010101010101010101010101010101010101010101010101010101010101";
const HEX_NOT_FR: &str = "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff";

fn post_input(rp: &str) -> Value {
    json!({"registered_proof": rp, "randomness": HEX_FR, "prover_id": HEX_FR,
           "vanilla_proofs": ["AAAA"]})
}

fn with(mut v: Value, key: &str, value: Value) -> Value {
    v[key] = value;
    v
}

fn without(mut v: Value, key: &str) -> Value {
    v.as_object_mut().unwrap().remove(key);
    v
}

#[test]
fn post_inputs_name_their_field() {
    let (_dir, all) = adapters();
    let (window, winning) = (&all[0], &all[1]);
    assert_eq!(
        (window.kind(), winning.kind()),
        ("window-post", "winning-post")
    );
    let w = post_input("StackedDrgWindow2KiBV1_2");
    let cases: Vec<(Value, &str, &str)> = vec![
        (json!(null), "input", "object"),
        (
            with(w.clone(), "extra", json!(1)),
            "input.extra",
            "unknown field",
        ),
        (
            without(w.clone(), "registered_proof"),
            "input.registered_proof",
            "required",
        ),
        (
            with(
                w.clone(),
                "registered_proof",
                json!("StackedDrgWindow4KiBV1"),
            ),
            "input.registered_proof",
            "unknown registered proof",
        ),
        (
            with(w.clone(), "registered_proof", json!(7)),
            "input.registered_proof",
            "string",
        ),
        (
            with(
                w.clone(),
                "registered_proof",
                json!("StackedDrgWinning2KiBV1"),
            ),
            "input.registered_proof",
            "winning-post",
        ),
        (
            without(w.clone(), "randomness"),
            "input.randomness",
            "required",
        ),
        (
            with(w.clone(), "randomness", json!("abcd")),
            "input.randomness",
            "32 bytes",
        ),
        (
            with(w.clone(), "randomness", json!(HEX_NOT_FR)),
            "input.randomness",
            "field element",
        ),
        (
            with(w.clone(), "prover_id", json!([1, 2, 3])),
            "input.prover_id",
            "32 bytes",
        ),
        (
            with(w.clone(), "prover_id", json!(HEX_NOT_FR)),
            "input.prover_id",
            "field element",
        ),
        (
            without(w.clone(), "vanilla_proofs"),
            "input.vanilla_proofs",
            "required",
        ),
        (
            with(w.clone(), "vanilla_proofs", json!([])),
            "input.vanilla_proofs",
            "empty",
        ),
        (
            with(w.clone(), "vanilla_proofs", json!("AAAA")),
            "input.vanilla_proofs",
            "array",
        ),
        (
            with(w.clone(), "vanilla_proofs", json!(["AAAA", "%%"])),
            "input.vanilla_proofs[1]",
            "base64",
        ),
        (
            with(w.clone(), "vanilla_proofs", json!(["AAAA"])),
            "input.vanilla_proofs[0]",
            "FallbackPoStSectorProof",
        ),
    ];
    for (input, field, needle) in cases {
        let (f, m) = field_err(window.as_ref(), req("window-post", input.clone()));
        assert_eq!(f, field, "{input}: {m}");
        assert!(m.contains(needle), "{field}: '{m}' lacks '{needle}'");
    }
    let (f, m) = field_err(
        winning.as_ref(),
        req("winning-post", post_input("StackedDrgWindow2KiBV1_2")),
    );
    assert_eq!(f, "input.registered_proof");
    assert!(m.contains("window-post"), "{m}");
    let (f, _) = field_err(
        winning.as_ref(),
        req("winning-post", post_input("StackedDrgWinning2KiBV1")),
    );
    assert_eq!(f, "input.vanilla_proofs[0]");
}

#[test]
fn update_inputs_name_their_field() {
    let (_dir, all) = adapters();
    let snap = &all[2];
    assert_eq!(snap.kind(), "snap-update");
    let u = json!({"registered_proof": "StackedDrg2KiBV1", "comm_r_old": HEX_FR,
                   "comm_r_new": HEX_FR, "comm_d_new": HEX_FR, "vanilla_proofs": ["AAAA"]});
    let zeros = "00".repeat(32);
    let cases: Vec<(Value, &str, &str)> = vec![
        (json!([]), "input", "object"),
        (
            with(u.clone(), "sector_id", json!(1)),
            "input.sector_id",
            "unknown field",
        ),
        (
            with(u.clone(), "registered_proof", json!("StackedDrg2KiBV1_1")),
            "input.registered_proof",
            "unknown registered proof",
        ),
        (
            without(u.clone(), "comm_r_old"),
            "input.comm_r_old",
            "required",
        ),
        (
            with(u.clone(), "comm_r_new", json!(zeros)),
            "input.comm_r_new",
            "all zeros",
        ),
        (
            with(u.clone(), "comm_d_new", json!(HEX_NOT_FR)),
            "input.comm_d_new",
            "field element",
        ),
        (
            with(u.clone(), "comm_d_new", json!("0x12")),
            "input.comm_d_new",
            "32 bytes",
        ),
        (
            with(u.clone(), "vanilla_proofs", json!(["AAAA", "AAAA"])),
            "input.vanilla_proofs",
            "1 partitions",
        ),
        (
            with(u.clone(), "vanilla_proofs", json!([3])),
            "input.vanilla_proofs[0]",
            "base64 string",
        ),
        (u.clone(), "input.vanilla_proofs[0]", "PartitionProof"),
    ];
    for (input, field, needle) in cases {
        let (f, m) = field_err(snap.as_ref(), req("snap-update", input.clone()));
        assert_eq!(f, field, "{input}: {m}");
        assert!(m.contains(needle), "{field}: '{m}' lacks '{needle}'");
    }
}

#[test]
fn missing_parameters_are_params_missing_and_names_are_the_published_ones() {
    let empty = tempfile::tempdir().unwrap();
    let c = config(empty.path());
    let window = PoStAdapter::new(PoStKind::Window, c.clone());
    let e = window
        .plan(&req("window-post", post_input("StackedDrgWindow32GiBV1_2")))
        .unwrap_err();
    assert_eq!(e.code(), "params_missing", "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("v28-proof-of-spacetime-fallback-merkletree-poseidon_hasher-8-8-0")
            && msg.contains("32GiB"),
        "{msg}"
    );
    let snap = SnapUpdateAdapter::new(c);
    let e = snap
        .plan(&req(
            "snap-update",
            json!({"registered_proof": "StackedDrg2KiBV1", "comm_r_old": HEX_FR,
                   "comm_r_new": HEX_FR, "comm_d_new": HEX_FR, "vanilla_proofs": ["AAAA"]}),
        ))
        .unwrap_err();
    assert_eq!(e.code(), "params_missing", "{e}");
    assert!(e.to_string().contains("v28-empty-sector-update-"), "{e}");
    // Every circuit is listed with its published file.
    let names: Vec<String> = window.circuits().into_iter().map(|c| c.name).collect();
    assert!(
        names.contains(&"StackedDrgWindow2KiBV1_2".to_string()),
        "{names:?}"
    );
    assert_eq!(names.len(), 10);
    let update: Vec<_> = snap.circuits();
    assert_eq!(update.len(), 5);
    assert!(update.iter().all(|c| !c.params_present));
    assert_eq!(
        snap.params_spec(RegisteredUpdateProof::StackedDrg2KiBV1)
            .unwrap()
            .path,
        update[0].params_path
    );
    assert_eq!(
        window
            .params_spec(RegisteredPoStProof::StackedDrgWindow2KiBV1)
            .unwrap()
            .path,
        window
            .params_spec(RegisteredPoStProof::StackedDrgWindow2KiBV1_2)
            .unwrap()
            .path,
        "V1 and V1_2 WindowPoSt share one circuit"
    );
}

#[test]
fn default_priorities_order_the_kinds() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path());
    let mut reg = AdapterRegistry::new();
    reg.register(Arc::new(PorepC2Adapter::new(c.clone())));
    reg.register(Arc::new(PoStAdapter::new(PoStKind::Window, c.clone())));
    reg.register(Arc::new(PoStAdapter::new(PoStKind::Winning, c.clone())));
    reg.register(Arc::new(SnapUpdateAdapter::new(c)));
    let p = |kind: &str| reg.priority_of(&req(kind, json!({})));
    assert!(p("winning-post") > p("window-post"));
    assert!(p("window-post") > p("snap-update"));
    assert!(p("snap-update") > p("porep-c2"));
    // An explicit priority always wins, 0 included.
    let mut r = req("winning-post", json!({}));
    r.priority = Some(0);
    assert_eq!(reg.priority_of(&r), 0);
    r.priority = Some(-5);
    assert_eq!(reg.priority_of(&r), -5);
}
