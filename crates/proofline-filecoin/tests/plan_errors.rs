//! `porep-c2` planning without a sealed sector: every bad input is an `invalid_field` error that
//! names the field; missing parameters are `params_missing`, checked before the heavy work.

use base64::Engine;
use filecoin_hashers::poseidon::{PoseidonDomain, PoseidonHasher};
use filecoin_proofs_api::seal::{SealCommitPhase1Output, VanillaSealProof};
use filecoin_proofs_api::RegisteredSealProof;
use proofline_filecoin::{shapes, Commit2In, FilecoinConfig, PorepC2Adapter};
use proofline_jobs::{JobAdapter, JobError, JobRequest};
use serde_json::{json, Value};
use storage_proofs_porep::stacked::generate_replica_id;

const PROVER: [u8; 32] = [3; 32];
const SECTOR: u64 = 17;
const TICKET: [u8; 32] = [5; 32];
const COMM_D: [u8; 32] = [6; 32];

/// A syntactically valid C1 output for `rp` whose replica id matches PROVER/SECTOR, with the
/// given vanilla proofs.
fn c1(rp: RegisteredSealProof, vanilla: VanillaSealProof) -> Value {
    let porep_id = shapes::porep_config(rp).porep_id;
    let replica_id: PoseidonDomain =
        generate_replica_id::<PoseidonHasher, _>(&PROVER, SECTOR, &TICKET, COMM_D, &porep_id);
    serde_json::to_value(SealCommitPhase1Output {
        registered_proof: rp,
        vanilla_proofs: vanilla,
        comm_r: [7; 32],
        comm_d: COMM_D,
        replica_id,
        seed: [8; 32],
        ticket: TICKET,
    })
    .unwrap()
}

fn empty_2kib() -> Value {
    c1(
        RegisteredSealProof::StackedDrg2KiBV1_1,
        VanillaSealProof::StackedDrg2KiBV1(vec![]),
    )
}

fn req(input: Value) -> JobRequest {
    JobRequest {
        kind: "porep-c2".into(),
        circuit: None,
        input,
        public_inputs: None,
        ..Default::default()
    }
}

fn input(doc: Value) -> Value {
    json!({"c1_output": doc, "prover_id": hex::encode(PROVER), "sector_id": SECTOR})
}

/// An adapter whose parameter directory has (dummy) files for every supported proof.
fn adapter_with_params() -> (tempfile::TempDir, PorepC2Adapter) {
    let dir = tempfile::tempdir().unwrap();
    let a = PorepC2Adapter::new(FilecoinConfig {
        params_dir: dir.path().to_path_buf(),
        verify_digests: false,
    });
    for rp in shapes::supported() {
        std::fs::write(a.params_spec(rp).unwrap().path, b"dummy").unwrap();
    }
    (dir, a)
}

fn field_err(a: &PorepC2Adapter, r: JobRequest) -> (String, String) {
    match a.plan(&r) {
        Err(JobError::InvalidField { field, message }) => (field, message),
        Err(other) => panic!("expected invalid_field, got {other}"),
        Ok(_) => panic!("expected an error"),
    }
}

#[test]
fn bad_inputs_name_their_field() {
    let (_dir, a) = adapter_with_params();
    assert_eq!(a.kind(), "porep-c2");
    let cases: Vec<(Value, &str, &str)> = vec![
        (json!(null), "input", "object"),
        (
            json!({"prover_id": hex::encode(PROVER), "sector_id": 1}),
            "input.c1_output_base64",
            "required",
        ),
        (
            json!({"c1_output_base64": "!!", "prover_id": hex::encode(PROVER), "sector_id": 1}),
            "input.c1_output_base64",
            "not base64",
        ),
        (
            json!({"c1_output_base64": base64::engine::general_purpose::STANDARD.encode(b"{\"x\":1}"),
                   "prover_id": hex::encode(PROVER), "sector_id": 1}),
            "input.c1_output_base64",
            "neither a C1 output",
        ),
        (
            json!({"c1_output_base64": 5, "prover_id": hex::encode(PROVER), "sector_id": 1}),
            "input.c1_output_base64",
            "base64 string",
        ),
        (
            json!({"c1_output": "abc", "prover_id": hex::encode(PROVER), "sector_id": 1}),
            "input.c1_output",
            "c1_output_base64",
        ),
        (
            json!({"c1_output": {}, "c1_output_base64": "", "prover_id": hex::encode(PROVER), "sector_id": 1}),
            "input",
            "document once",
        ),
        (
            json!({"c1_output": empty_2kib(), "prover_id": "abcd", "sector_id": 1}),
            "input.prover_id",
            "32 bytes",
        ),
        (
            json!({"c1_output": empty_2kib(), "prover_id": [1, 2], "sector_id": 1}),
            "input.prover_id",
            "got 2 bytes",
        ),
        (
            json!({"c1_output": empty_2kib(), "sector_id": 1}),
            "input.prover_id",
            "required",
        ),
        (
            json!({"c1_output": empty_2kib(), "prover_id": hex::encode(PROVER), "sector_id": "x"}),
            "input.sector_id",
            "unsigned",
        ),
        (
            json!({"c1_output": empty_2kib(), "prover_id": hex::encode(PROVER)}),
            "input.sector_id",
            "required",
        ),
    ];
    for (inp, field, needle) in cases {
        let (f, m) = field_err(&a, req(inp.clone()));
        assert_eq!(f, field, "{inp}: {m}");
        assert!(m.contains(needle), "{inp}: '{m}' lacks '{needle}'");
    }

    // The document as the request's payload: a Commit2In or a bare C1 output, and what each
    // may conflict with.
    let c1_bytes = serde_json::to_vec(&empty_2kib()).unwrap();
    let commit2in = |num: u64, size: u64| {
        serde_json::to_vec(&Commit2In {
            sector_num: num,
            phase1_out: c1_bytes.clone(),
            sector_size: size,
        })
        .unwrap()
    };
    let with_payload = |input: Value, payload: Vec<u8>| JobRequest {
        payload: Some(payload.into()),
        ..req(input)
    };
    let payload_cases: Vec<(Value, Vec<u8>, &str, &str)> = vec![
        (
            json!({"prover_id": hex::encode(PROVER), "sector_id": SECTOR + 1}),
            commit2in(SECTOR, 2048),
            "input.sector_id",
            "SectorNum is 17",
        ),
        (
            json!({"prover_id": hex::encode(PROVER)}),
            commit2in(SECTOR, 1 << 35),
            "payload.SectorSize",
            "2KiB",
        ),
        (
            json!({"prover_id": hex::encode(PROVER), "miner_id": "f01000"}),
            commit2in(SECTOR, 2048),
            "input.miner_id",
            "not both",
        ),
        (
            json!({"miner_id": "f1abc"}),
            commit2in(SECTOR, 2048),
            "input.miner_id",
            "ID address",
        ),
        (
            json!({"prover_id": hex::encode(PROVER)}),
            c1_bytes.clone(),
            "input.sector_id",
            "bare C1 output",
        ),
        (
            json!({"prover_id": hex::encode(PROVER), "sector_id": SECTOR}),
            b"\x00\x01binary".to_vec(),
            "payload",
            "neither a C1 output",
        ),
        (
            json!({"prover_id": hex::encode(PROVER), "sector_id": SECTOR, "sector": 1}),
            c1_bytes.clone(),
            "input.sector",
            "unknown field",
        ),
        // The miner's prover id is not the one the C1 output was sealed with.
        (
            json!({"miner_id": "t01000"}),
            commit2in(SECTOR, 2048),
            "input.miner_id",
            "do not match",
        ),
    ];
    for (inp, payload, field, needle) in payload_cases {
        let (f, m) = field_err(&a, with_payload(inp.clone(), payload));
        assert_eq!(f, field, "{inp}: {m}");
        assert!(m.contains(needle), "{inp}: '{m}' lacks '{needle}'");
    }
    // The same documents pass parsing when consistent: the sector number comes from the
    // Commit2In, the empty vanilla proofs are then the first thing refused.
    for payload in [commit2in(SECTOR, 2048), c1_bytes.clone()] {
        let sector = if payload == c1_bytes {
            json!(SECTOR)
        } else {
            json!(null)
        };
        let mut input = json!({"prover_id": hex::encode(PROVER)});
        if !sector.is_null() {
            input["sector_id"] = sector;
        }
        let (f, m) = field_err(&a, with_payload(input, payload));
        assert!(f.ends_with("vanilla_proofs"), "{f}: {m}");
        assert!(m.contains("0 partitions"), "{m}");
    }

    // Unknown registered proof, in both encodings.
    let mut doc = empty_2kib();
    doc["registered_proof"] = json!("StackedDrg4KiBV9");
    let (f, m) = field_err(&a, req(input(doc.clone())));
    assert_eq!(f, "input.c1_output.registered_proof");
    assert!(
        m.contains("unknown registered proof 'StackedDrg4KiBV9'"),
        "{m}"
    );
    let b64 = base64::engine::general_purpose::STANDARD.encode(serde_json::to_vec(&doc).unwrap());
    let (f, _) = field_err(
        &a,
        req(
            json!({"c1_output_base64": b64, "prover_id": hex::encode(PROVER), "sector_id": SECTOR}),
        ),
    );
    assert_eq!(f, "input.c1_output_base64.registered_proof");

    // A document with a field missing names that field in the message.
    let mut doc = empty_2kib();
    doc.as_object_mut().unwrap().remove("seed");
    let (f, m) = field_err(&a, req(input(doc)));
    assert_eq!(f, "input.c1_output");
    assert!(m.contains("seed"), "{m}");

    // Non-interactive PoRep is refused (its C2 output is an aggregate).
    let ni = c1(
        RegisteredSealProof::StackedDrg2KiBV1_2_Feat_NonInteractivePoRep,
        VanillaSealProof::StackedDrg2KiBV1(vec![]),
    );
    let (f, m) = field_err(&a, req(input(ni)));
    assert_eq!(f, "input.c1_output.registered_proof");
    assert!(m.contains("aggregate"), "{m}");

    // Wrong sector number or prover id: the replica id does not match.
    let (f, m) = field_err(
        &a,
        req(
            json!({"c1_output": empty_2kib(), "prover_id": hex::encode(PROVER), "sector_id": SECTOR + 1}),
        ),
    );
    assert_eq!(f, "input.prover_id");
    assert!(m.contains("do not match"), "{m}");
    let (f, _) = field_err(
        &a,
        req(json!({"c1_output": empty_2kib(), "prover_id": vec![4u8; 32], "sector_id": SECTOR})),
    );
    assert_eq!(f, "input.prover_id");

    // Vanilla proofs of another sector size, and of the wrong partition count.
    let wrong = c1(
        RegisteredSealProof::StackedDrg2KiBV1_1,
        VanillaSealProof::StackedDrg32GiBV1(vec![]),
    );
    let (f, m) = field_err(&a, req(input(wrong)));
    assert_eq!(f, "input.c1_output.vanilla_proofs");
    assert!(m.contains("32GiB") && m.contains("2KiB"), "{m}");
    let (f, m) = field_err(&a, req(input(empty_2kib())));
    assert_eq!(f, "input.c1_output.vanilla_proofs");
    assert!(m.contains("0 partitions"), "{m}");

    // Zero commitments.
    let mut doc = empty_2kib();
    doc["seed"] = json!(vec![0u8; 32]);
    let (f, _) = field_err(&a, req(input(doc)));
    assert_eq!(f, "input.c1_output.seed");

    // A circuit name that is not the C1 output's registered proof.
    let mut r = req(input(empty_2kib()));
    r.circuit = Some("StackedDrg32GiBV1_1".into());
    let (f, m) = field_err(&a, r);
    assert_eq!(f, "circuit");
    assert!(m.contains("StackedDrg2KiBV1_1"), "{m}");
}

#[test]
fn missing_parameters_are_reported_before_planning() {
    let dir = tempfile::tempdir().unwrap();
    let a = PorepC2Adapter::new(FilecoinConfig {
        params_dir: dir.path().to_path_buf(),
        verify_digests: true,
    });
    let e = a.plan(&req(input(empty_2kib()))).unwrap_err();
    assert_eq!(e.code(), "params_missing", "{e}");
    let text = e.to_string();
    let name = shapes::params_files(RegisteredSealProof::StackedDrg2KiBV1_1)
        .unwrap()
        .params;
    assert!(
        text.contains(&name) && text.contains("fetch-params 2KiB"),
        "{text}"
    );
    // Every supported proof is listed, none present.
    let circuits = a.circuits();
    assert_eq!(circuits.len(), 15);
    assert!(circuits
        .iter()
        .all(|c| !c.params_present && c.kind == "porep-c2"));
    // The digest check is attached when asked for.
    assert!(a
        .params_spec(RegisteredSealProof::StackedDrg2KiBV1_1)
        .unwrap()
        .check
        .is_some());
}
