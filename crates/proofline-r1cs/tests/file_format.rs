//! The constraint file: a recorded system survives the round trip exactly; a truncated file, a
//! changed byte anywhere, another shape's file, a foreign file and a newer format are clear
//! errors; evaluation refuses a witness of another shape or one that fails a constraint, and
//! matches a direct evaluation.

use std::path::Path;

use bellpepper_core::{ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use ff::Field;
use proofline_r1cs::file::{self, Header};
use proofline_r1cs::{Blank, R1csError, RecordedSystem, Recorder, WithValues, Witness};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

/// Records a chain of `n` products with 300 distinct coefficients (16-bit indices) and inputs in
/// A, B and C, with values (`x = Some`) or blank.
fn chain<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    n: usize,
    x: Option<Scalar>,
) -> Result<(), SynthesisError> {
    let missing = || SynthesisError::AssignmentMissing;
    let k = cs.alloc_input(|| "k", || x.map(|x| x.double()).ok_or_else(missing))?;
    let mut acc = cs.alloc(|| "x", || x.ok_or_else(missing))?;
    let mut acc_val = x;
    for i in 0..n {
        let c = Scalar::from((i % 300) as u64 + 3);
        let v = acc_val.map(|a| (c * a + a.double()) * (a - Scalar::ONE));
        let y = cs.alloc(|| "y", || v.ok_or_else(missing))?;
        cs.enforce(
            || "step",
            |lc| lc + (c, acc) + k - k + (Scalar::from(2u64), acc),
            |lc| lc + acc - CS::one(),
            |lc| lc + y,
        );
        acc = y;
        acc_val = v;
    }
    let out = cs.alloc_input(|| "out", || acc_val.ok_or_else(missing))?;
    cs.enforce(
        || "out",
        |lc| lc + acc,
        |lc| lc + CS::one(),
        |lc| lc + out + k - k,
    );
    Ok(())
}

fn recorded(n: usize) -> (RecordedSystem, Witness) {
    let mut cs = Recorder::<WithValues>::root();
    chain(&mut cs, n, Some(Scalar::from(5u64))).unwrap();
    cs.finish("chain", "test").unwrap()
}

fn same(a: &RecordedSystem, b: &RecordedSystem) {
    assert_eq!(a.key(), b.key());
    assert_eq!(a.origin(), b.origin());
    assert_eq!(a.counts(), b.counts());
    assert_eq!(a.table(), b.table());
    assert_eq!(a.matrices(), b.matrices());
    assert_eq!(a.a_aux_density(), b.a_aux_density());
    assert_eq!(a.b_input_density(), b.b_input_density());
    assert_eq!(a.b_aux_density(), b.b_aux_density());
}

fn corrupt_reason(e: R1csError) -> String {
    match e {
        R1csError::Corrupt { reason, .. } => reason,
        other => panic!("expected a corrupt-file error, got {other}"),
    }
}

fn header_len(path: &Path) -> usize {
    let b = std::fs::read(path).unwrap();
    12 + u32::from_le_bytes(b[8..12].try_into().unwrap()) as usize
}

#[test]
fn a_system_survives_its_file_and_blank_recording_equals_recording_with_values() {
    let (sys, _) = recorded(1000);
    let mut blank = Recorder::<Blank>::root();
    chain(&mut blank, 1000, None).unwrap();
    let (blank, ()) = blank.finish("chain", "test").unwrap();
    same(&sys, &blank);
    assert_eq!(
        sys.matrices().a.coeffs.width(),
        2,
        "300 coefficients need 16 bits"
    );

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chain.r1cs");
    let digest = file::write(&sys, &path).unwrap();
    assert_eq!(digest.len(), 64);
    let back = file::read(&path, Some("chain")).unwrap();
    same(&sys, &back);
    let h: Header = file::read_header(&path).unwrap();
    assert_eq!(
        (h.key.as_str(), h.digest.as_str()),
        ("chain", digest.as_str())
    );
    assert_eq!(h.constraints as usize, sys.counts().constraints);
    // No partial file is left behind.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn damaged_and_foreign_files_are_refused() {
    let (sys, _) = recorded(500);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chain.r1cs");
    file::write(&sys, &path).unwrap();
    let good = std::fs::read(&path).unwrap();
    let head = header_len(&path);

    // Another shape's key.
    match file::read(&path, Some("other")).unwrap_err() {
        R1csError::WrongShape {
            found, expected, ..
        } => {
            assert_eq!((found.as_str(), expected.as_str()), ("chain", "other"))
        }
        e => panic!("{e}"),
    }

    // Truncated.
    let bad = dir.path().join("bad.r1cs");
    std::fs::write(&bad, &good[..good.len() - 7]).unwrap();
    let r = corrupt_reason(file::read(&bad, None).unwrap_err());
    assert!(r.contains("truncated"), "{r}");

    // One byte changed in every part of the payload: the digest catches it.
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    for _ in 0..24 {
        let mut b = good.clone();
        let at = rng.gen_range(head..b.len());
        b[at] ^= 1 << rng.gen_range(0..8);
        std::fs::write(&bad, &b).unwrap();
        let r = corrupt_reason(file::read(&bad, Some("chain")).unwrap_err());
        assert!(
            r.contains("digest mismatch")
                || r.contains("invalid value")
                || r.contains("bits beyond"),
            "byte {at}: {r}"
        );
    }

    // A changed header field (the origin text) is covered by the digest too.
    let mut b = good.clone();
    let pos = b[..head].windows(4).position(|w| w == b"test").unwrap();
    b[pos] = b'T';
    std::fs::write(&bad, &b).unwrap();
    let r = corrupt_reason(file::read(&bad, Some("chain")).unwrap_err());
    assert!(r.contains("digest mismatch"), "{r}");

    // Not a constraint file at all, and a future format version.
    std::fs::write(&bad, b"v28-stacked-proof-of-replication parameters").unwrap();
    let r = corrupt_reason(file::read(&bad, None).unwrap_err());
    assert!(r.contains("magic"), "{r}");
    let mut h = file::read_header(&path).unwrap();
    h.format_version = file::FORMAT_VERSION + 1;
    let enc = bincode::serde::encode_to_vec(&h, bincode::config::standard()).unwrap();
    let mut b = file::MAGIC.to_vec();
    b.extend_from_slice(&(enc.len() as u32).to_le_bytes());
    b.extend_from_slice(&enc);
    b.extend_from_slice(&good[head..]);
    std::fs::write(&bad, &b).unwrap();
    let r = corrupt_reason(file::read(&bad, None).unwrap_err());
    assert!(r.contains("format version"), "{r}");

    // A missing file is an I/O error naming the path.
    let e = file::read(&dir.path().join("none.r1cs"), None).unwrap_err();
    assert!(
        matches!(e, R1csError::Io { .. }) && e.to_string().contains("none.r1cs"),
        "{e}"
    );
}

#[test]
fn evaluation_matches_the_constraints_and_refuses_another_shape() {
    let (sys, w) = recorded(200);
    let e = sys.evaluate(&w).unwrap();
    let n = sys.counts().constraints;
    assert_eq!((e.a.len(), e.b.len()), (n, n));
    assert!(e.a.capacity() >= n.next_power_of_two());
    assert!(e.b.capacity() >= n.next_power_of_two());
    // The input rows are input·0 = 0.
    assert_eq!(e.a[n - w.input.len()..], w.input[..]);
    // Evaluating by hand from the rows gives the same values.
    let value = |c: u32| match proofline_r1cs::csr::Column::decode(c) {
        proofline_r1cs::csr::Column::Input(i) => w.input[i],
        proofline_r1cs::csr::Column::Aux(j) => w.aux[j],
    };
    let m = sys.matrices();
    for r in [0, 1, 57, n - 1] {
        let by_hand: Scalar =
            m.b.row(r)
                .map(|(c, k)| value(c) * sys.table()[k as usize])
                .sum();
        assert_eq!(by_hand, e.b[r], "row {r}");
        // C's row by hand is a·b: the witness satisfies the circuit.
        let c_by_hand: Scalar =
            m.c.row(r)
                .map(|(c, k)| value(c) * sys.table()[k as usize])
                .sum();
        assert_eq!(c_by_hand, e.a[r] * e.b[r], "row {r}");
    }

    let (_, w_other) = recorded(201);
    match sys.evaluate(&w_other).unwrap_err() {
        R1csError::WitnessShape { key, aux, .. } => {
            assert_eq!(key, "chain");
            assert_eq!(aux, (w.aux.len(), w.aux.len() + 1));
        }
        e => panic!("{e}"),
    }
}

#[test]
fn evaluation_refuses_a_witness_that_fails_a_constraint() {
    let (sys, mut w) = recorded(50);
    // aux 0 is x and aux i + 1 the output y of step i: a wrong y fails step i first (C·w ≠ a·b).
    w.aux[21] += Scalar::ONE;
    match sys.evaluate(&w).unwrap_err() {
        R1csError::Unsatisfied { key, row } => assert_eq!((key.as_str(), row), ("chain", 20)),
        e => panic!("{e}"),
    }
    // The last row: the public output.
    let (_, mut w) = recorded(50);
    let last = w.input.len() - 1;
    w.input[last] += Scalar::ONE;
    match sys.evaluate(&w).unwrap_err() {
        R1csError::Unsatisfied { row, .. } => assert_eq!(row, 50),
        e => panic!("{e}"),
    }
}
