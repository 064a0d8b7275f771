//! Job kinds: what a request asks for, and how it becomes partition circuits.
//!
//! A [`JobAdapter`] serves one job kind (`"groth16"` for the built-in circuits, `"porep-c2"` for
//! Filecoin). At submission it validates the request and returns a [`JobPlan`]: the parameter set
//! to prove with and, per partition, the expected public inputs and a deferred constructor of
//! the circuit (run later on a synthesis thread). The pipeline is the same for every kind; a new
//! proof type is a new adapter and a parameter entry.
//!
//! [`ParamsStore`] loads each parameter file once and keeps it resident; [`ConstraintsStore`]
//! does the same for each parameter set's recorded constraint system (pre-compiled matrices),
//! recording it from the first synthesis of its shape when it is missing.

pub mod builtin;
pub mod constraints_store;
pub mod error;
pub mod params_store;
pub mod priority;
pub mod request;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use blstrs::Scalar;
use proofline_groth16::PartitionCircuit;

pub use constraints_store::{
    ConstraintsStore, PlainReason, Precompiled, RecordTicket, SynthesisMode,
};
pub use error::{ErrorKind, JobError};
pub use params_store::{ParamsCheck, ParamsSpec, ParamsStore, Resident};
pub use proofline_wire::{JobRequest, Payload};
pub use request::{expected_public_inputs, parse_scalar_hex, request_digest, scalar_to_hex};

/// Builds one partition's circuit; runs on a synthesis thread, not on the request path.
pub type CircuitThunk =
    Box<dyn FnOnce() -> Result<Box<dyn PartitionCircuit>, JobError> + Send + 'static>;

/// One partition of a planned job.
pub struct PartitionPlan {
    /// The public inputs (without ONE) the proof must carry; synthesis is checked against them.
    pub public_inputs: Vec<Scalar>,
    /// Builds the circuit.
    pub circuit: CircuitThunk,
    /// Rough number of constraints, for memory budgeting (0 when unknown).
    pub constraints_hint: usize,
}

impl std::fmt::Debug for PartitionPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartitionPlan")
            .field("public_inputs", &self.public_inputs.len())
            .field("constraints_hint", &self.constraints_hint)
            .finish()
    }
}

/// A check of a job's whole proof (all partitions concatenated) before it is returned, run on a
/// CPU-MSM actor thread with the job's parameters; e.g. filecoin-proofs' own `verify_seal` logic.
/// `Err(reason)` fails the job.
pub type FinalCheck =
    Box<dyn FnOnce(&[u8], &proofline_groth16::ProvingKey) -> Result<(), String> + Send + 'static>;

/// What an adapter makes of a valid request.
pub struct JobPlan {
    /// Human-readable label ("sha256-2", "porep-c2 2KiB sector 7").
    pub label: String,
    /// The parameter set every partition is proved with.
    pub params: ParamsSpec,
    /// The partitions, in output order; the job's proof is their proofs concatenated.
    pub partitions: Vec<PartitionPlan>,
    /// An extra check of the whole proof, beyond the per-partition verification every job gets.
    pub final_check: Option<FinalCheck>,
}

impl std::fmt::Debug for JobPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobPlan")
            .field("label", &self.label)
            .field("params", &self.params)
            .field("partitions", &self.partitions)
            .field("final_check", &self.final_check.is_some())
            .finish()
    }
}

/// One job kind.
pub trait JobAdapter: Send + Sync + 'static {
    /// The kind name used in requests.
    fn kind(&self) -> &'static str;

    /// Validates `request` and plans the job. Cheap checks only (parsing, sizes, parameter
    /// file presence); errors are the client's and map to 4xx responses.
    fn plan(&self, request: &JobRequest) -> Result<JobPlan, JobError>;

    /// Circuits this adapter offers, with their parameter sets (for `setup`, `vk`, listings).
    fn circuits(&self) -> Vec<CircuitInfo>;

    /// The priority of this kind's jobs when a request gives none ([`priority`]).
    fn default_priority(&self) -> i32 {
        priority::DEFAULT
    }
}

/// A circuit an adapter can prove.
#[derive(Clone, Debug, serde::Serialize)]
pub struct CircuitInfo {
    /// Name used in requests and on the command line.
    pub name: String,
    /// Job kind.
    pub kind: String,
    /// Parameter file.
    pub params_path: PathBuf,
    /// Whether the parameter file is present.
    pub params_present: bool,
}

/// The adapters of a running pipeline, by kind.
#[derive(Clone, Default)]
pub struct AdapterRegistry {
    adapters: BTreeMap<&'static str, Arc<dyn JobAdapter>>,
}

impl AdapterRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) the adapter of its kind.
    pub fn register(&mut self, adapter: Arc<dyn JobAdapter>) {
        self.adapters.insert(adapter.kind(), adapter);
    }

    /// The adapter of `kind`.
    pub fn get(&self, kind: &str) -> Result<&Arc<dyn JobAdapter>, JobError> {
        self.adapters
            .get(kind)
            .ok_or_else(|| JobError::UnknownKind {
                kind: kind.to_string(),
                known: self.kinds().join(", "),
            })
    }

    /// Registered kinds.
    pub fn kinds(&self) -> Vec<&'static str> {
        self.adapters.keys().copied().collect()
    }

    /// Plans a request with the adapter of its kind.
    pub fn plan(&self, request: &JobRequest) -> Result<JobPlan, JobError> {
        self.get(&request.kind)?.plan(request)
    }

    /// The effective priority of a request: its own, else its kind's default.
    pub fn priority_of(&self, request: &JobRequest) -> i32 {
        request.priority.unwrap_or_else(|| {
            self.adapters
                .get(request.kind.as_str())
                .map_or(priority::DEFAULT, |a| a.default_priority())
        })
    }

    /// Every circuit of every adapter.
    pub fn circuits(&self) -> Vec<CircuitInfo> {
        self.adapters.values().flat_map(|a| a.circuits()).collect()
    }
}
