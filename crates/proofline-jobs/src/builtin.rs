//! The `groth16` job kind: proofs of the built-in circuits.
//!
//! Circuit names are `sha256-N` (N compression blocks, about 27,000 constraints each). Input:
//! `{"preimage_hex": "..."}` with exactly `64·N − 9` bytes, or `{"seed": u64}` for a
//! deterministic demo preimage. Parameters: `<params_dir>/proofline-sha256-N.params`, written by
//! `proofline setup --circuit sha256-N`.

use std::path::{Path, PathBuf};

use proofline_circuits::Sha256Preimage;

use crate::{CircuitInfo, JobAdapter, JobError, JobPlan, JobRequest, ParamsSpec, PartitionPlan};

/// Constraints per SHA-256 block, for sizing (measured: see docs/benchmarks.md).
pub const SHA256_CONSTRAINTS_PER_BLOCK: usize = 27_600;

/// A built-in circuit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BuiltinCircuit {
    /// SHA-256 preimage of N blocks.
    Sha256 {
        /// Compression blocks.
        blocks: usize,
    },
}

impl BuiltinCircuit {
    /// Parses `sha256-N`.
    pub fn parse(name: &str) -> Result<Self, JobError> {
        let unknown = || JobError::UnknownCircuit {
            name: name.to_string(),
            known: format!("sha256-N for N in 1..={}", Sha256Preimage::MAX_BLOCKS),
        };
        let n = name.strip_prefix("sha256-").ok_or_else(unknown)?;
        let blocks: usize = n.parse().map_err(|_| unknown())?;
        if blocks == 0 || blocks > Sha256Preimage::MAX_BLOCKS {
            return Err(unknown());
        }
        Ok(BuiltinCircuit::Sha256 { blocks })
    }

    /// The canonical name.
    pub fn name(&self) -> String {
        match self {
            BuiltinCircuit::Sha256 { blocks } => format!("sha256-{blocks}"),
        }
    }

    /// The parameter file name.
    pub fn params_file(&self) -> String {
        format!("proofline-{}.params", self.name())
    }

    /// Approximate constraints.
    pub fn constraints_hint(&self) -> usize {
        match self {
            BuiltinCircuit::Sha256 { blocks } => blocks * SHA256_CONSTRAINTS_PER_BLOCK,
        }
    }

    /// The circuit without witness (parameter generation).
    pub fn blank(&self) -> Result<Sha256Preimage, JobError> {
        match self {
            BuiltinCircuit::Sha256 { blocks } => Sha256Preimage::blank(*blocks)
                .map_err(|e| JobError::field("circuit", e.to_string())),
        }
    }
}

/// The adapter for the built-in circuits.
#[derive(Clone, Debug)]
pub struct BuiltinAdapter {
    params_dir: PathBuf,
    listed: Vec<BuiltinCircuit>,
}

impl BuiltinAdapter {
    /// Kind name.
    pub const KIND: &'static str = "groth16";

    /// Parameters are looked up in `params_dir`; `listed` circuits are advertised.
    pub fn new(params_dir: impl Into<PathBuf>, listed: Vec<BuiltinCircuit>) -> Self {
        BuiltinAdapter {
            params_dir: params_dir.into(),
            listed,
        }
    }

    /// The parameter spec of a circuit.
    pub fn params_spec(&self, circuit: &BuiltinCircuit) -> ParamsSpec {
        params_spec_in(&self.params_dir, circuit)
    }
}

/// The parameter spec of a built-in circuit in `dir`.
pub fn params_spec_in(dir: &Path, circuit: &BuiltinCircuit) -> ParamsSpec {
    ParamsSpec {
        id: circuit.params_file(),
        path: dir.join(circuit.params_file()),
        check: None,
        hint: format!(
            "generate them with `proofline setup --circuit {}`",
            circuit.name()
        ),
    }
}

impl JobAdapter for BuiltinAdapter {
    fn kind(&self) -> &'static str {
        Self::KIND
    }

    fn plan(&self, req: &JobRequest) -> Result<JobPlan, JobError> {
        let name = req.circuit.as_deref().ok_or_else(|| {
            JobError::field("circuit", "required for kind 'groth16' (e.g. \"sha256-2\")")
        })?;
        let circuit = BuiltinCircuit::parse(name)?;
        let BuiltinCircuit::Sha256 { blocks } = circuit;
        if req.payload.is_some() {
            return Err(JobError::field(
                "payload",
                "kind 'groth16' takes no document; give the preimage in input.preimage_hex",
            ));
        }
        let input = req.input.as_object();
        let preimage = match (
            input.and_then(|o| o.get("preimage_hex")),
            input.and_then(|o| o.get("seed")),
        ) {
            (Some(_), Some(_)) => {
                return Err(JobError::field(
                    "input",
                    "give either preimage_hex or seed, not both",
                ))
            }
            (Some(h), None) => {
                let text = h
                    .as_str()
                    .ok_or_else(|| JobError::field("input.preimage_hex", "must be a string"))?;
                let bytes = hex::decode(text)
                    .map_err(|e| JobError::field("input.preimage_hex", format!("not hex: {e}")))?;
                let expected = Sha256Preimage::preimage_len(blocks);
                if bytes.len() != expected {
                    return Err(JobError::field(
                        "input.preimage_hex",
                        format!("{name} takes exactly {expected} bytes, got {}", bytes.len()),
                    ));
                }
                bytes
            }
            (None, Some(s)) => {
                let seed = s
                    .as_u64()
                    .ok_or_else(|| JobError::field("input.seed", "must be an unsigned integer"))?;
                Sha256Preimage::demo_preimage(blocks, seed)
            }
            (None, None) => {
                return Err(JobError::field(
                    "input",
                    "an object with preimage_hex (hex string) or seed (integer) is required",
                ))
            }
        };
        let public_inputs = Sha256Preimage::public_inputs(&preimage);
        if let Some(expected) = crate::expected_public_inputs(req)? {
            if expected.len() != public_inputs.len() {
                return Err(JobError::field(
                    "public_inputs",
                    format!(
                        "{name} has {} public inputs, got {}",
                        public_inputs.len(),
                        expected.len()
                    ),
                ));
            }
            if expected != public_inputs {
                return Err(JobError::field(
                    "public_inputs",
                    "do not match the packed SHA-256 digest of the preimage",
                ));
            }
        }
        let params = self.params_spec(&circuit);
        params.require_present(name)?;
        let thunk: crate::CircuitThunk = Box::new(move || {
            let c = Sha256Preimage::new(blocks, preimage)
                .map_err(|e| JobError::Internal(e.to_string()))?;
            Ok(Box::new(c) as Box<dyn proofline_groth16::PartitionCircuit>)
        });
        Ok(JobPlan {
            label: circuit.name(),
            params,
            partitions: vec![PartitionPlan {
                public_inputs,
                circuit: thunk,
                constraints_hint: circuit.constraints_hint(),
            }],
            // Per-partition verification against the key and the digest is the whole check.
            final_check: None,
        })
    }

    fn circuits(&self) -> Vec<CircuitInfo> {
        self.listed
            .iter()
            .map(|c| {
                let spec = self.params_spec(c);
                CircuitInfo {
                    name: c.name(),
                    kind: Self::KIND.to_string(),
                    params_present: spec.path.is_file(),
                    params_path: spec.path,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::scalar_to_hex;

    fn req(circuit: Option<&str>, input: serde_json::Value) -> JobRequest {
        JobRequest {
            circuit: circuit.map(str::to_string),
            input,
            ..JobRequest::new("groth16")
        }
    }

    #[test]
    fn validation_names_the_field() {
        let dir = tempfile::tempdir().unwrap();
        let a = BuiltinAdapter::new(dir.path(), vec![]);
        let code = |r: JobRequest| a.plan(&r).unwrap_err();
        assert_eq!(
            code(req(None, serde_json::json!({"seed": 1}))).to_string(),
            "invalid field 'circuit': required for kind 'groth16' (e.g. \"sha256-2\")"
        );
        assert_eq!(
            code(req(Some("md5-1"), serde_json::json!({}))).code(),
            "unknown_circuit"
        );
        assert_eq!(
            code(req(Some("sha256-0"), serde_json::json!({}))).code(),
            "unknown_circuit"
        );
        let e = code(req(
            Some("sha256-1"),
            serde_json::json!({"preimage_hex": "abcd"}),
        ));
        assert!(
            e.to_string().contains("input.preimage_hex") && e.to_string().contains("55 bytes"),
            "{e}"
        );
        let e = code(req(Some("sha256-1"), serde_json::json!({"seed": -3})));
        assert!(e.to_string().contains("input.seed"), "{e}");
        let e = code(req(Some("sha256-1"), serde_json::json!(null)));
        assert!(e.to_string().contains("'input'"), "{e}");
        // Valid input, but no parameters in the directory.
        let e = code(req(Some("sha256-1"), serde_json::json!({"seed": 3})));
        assert_eq!(e.code(), "params_missing");
        assert!(e.to_string().contains("proofline setup --circuit sha256-1"));
    }

    #[test]
    fn public_inputs_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("proofline-sha256-1.params"), b"x").unwrap();
        let a = BuiltinAdapter::new(dir.path(), vec![BuiltinCircuit::Sha256 { blocks: 1 }]);
        let mut r = req(Some("sha256-1"), serde_json::json!({"seed": 3}));
        let good: Vec<String> = Sha256Preimage::public_inputs(&Sha256Preimage::demo_preimage(1, 3))
            .iter()
            .map(scalar_to_hex)
            .collect();
        r.public_inputs = Some(good.clone());
        let plan = a.plan(&r).unwrap();
        assert_eq!(plan.partitions.len(), 1);
        r.public_inputs = Some(good[..1].to_vec());
        assert!(a
            .plan(&r)
            .unwrap_err()
            .to_string()
            .contains("has 2 public inputs, got 1"));
        r.public_inputs = Some(vec![good[1].clone(), good[0].clone()]);
        assert!(a.plan(&r).unwrap_err().to_string().contains("do not match"));
        r.public_inputs = Some(vec!["12".into(), good[0].clone()]);
        assert!(a
            .plan(&r)
            .unwrap_err()
            .to_string()
            .contains("public_inputs[0]"));
        assert!(a.circuits()[0].params_present);
    }
}
