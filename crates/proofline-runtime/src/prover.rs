//! The embedding handle: a running pipeline started from a [`Config`], and typed calls that
//! return proof bytes.
//!
//! ```no_run
//! use proofline_config::Config;
//! use proofline_runtime::{Prover, SealCommitPhase1Output};
//!
//! # fn run(c1: SealCommitPhase1Output, prover_id: [u8; 32]) -> Result<(), Box<dyn std::error::Error>> {
//! let prover = Prover::start(&Config::load(None)?)?;        // CPU or GPU, as configured
//! let proof: Vec<u8> =
//!     futures::executor::block_on(prover.prove_porep_c2(c1, prover_id, 42))?;
//! assert_eq!(proof.len() % 192, 0);                          // seal_commit_phase2's bytes
//! prover.shutdown();
//! # Ok(()) }
//! ```
//!
//! [`Prover::prove_porep_c2`] hands the parsed C1 output to the `porep-c2` adapter as a struct
//! (no JSON, no base64 on the way in). The pipeline journals every accepted request; when it has
//! a journal (`state.dir`), the C1 output is serialized once into the journaled request so that
//! the job survives a restart; without one, nothing is serialized.

use std::sync::Arc;

use proofline_actors::{Pipeline, Submitted};
use proofline_config::Config;
use proofline_filecoin::{C2Input, PorepC2Adapter, SealCommitPhase1Output};
use proofline_jobs::JobRequest;
use proofline_wire::{JobResult, JobStatus};

use crate::{ProveError, RuntimeError};

/// A running proving pipeline, in process.
pub struct Prover {
    pipeline: Pipeline,
    porep: Arc<PorepC2Adapter>,
}

impl Prover {
    /// Starts the pipeline `config` describes (backend, devices, job kinds, journal).
    pub fn start(config: &Config) -> Result<Self, RuntimeError> {
        Ok(Prover {
            pipeline: crate::start_pipeline(config)?,
            porep: Arc::new(crate::porep_adapter(config)),
        })
    }

    /// The pipeline (status, list, cancel, memory).
    pub fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }

    /// Submits a job; returns its status (a repeated request under the same id or idempotency
    /// key returns the existing job).
    pub async fn submit(&self, request: JobRequest) -> Result<JobStatus, ProveError> {
        Ok(self.pipeline.submit(request).await?)
    }

    /// Submits a job, waits for it, and returns its result.
    pub async fn prove(&self, request: JobRequest) -> Result<Arc<JobResult>, ProveError> {
        let status = self.pipeline.submit(request).await?;
        self.finish(&status.id).await
    }

    /// Proves PoRep commit phase 2 for a sector: its C1 output (as filecoin-proofs-api
    /// returns it), the prover id (see `proofline_filecoin::miner` for a miner actor id) and the
    /// sector number. Returns exactly what `seal_commit_phase2` returns: the partition proofs
    /// concatenated, already checked with `verify_seal`'s logic.
    pub async fn prove_porep_c2(
        &self,
        c1: SealCommitPhase1Output,
        prover_id: [u8; 32],
        sector_id: u64,
    ) -> Result<Vec<u8>, ProveError> {
        let mut request = JobRequest::new(PorepC2Adapter::KIND);
        request.input = serde_json::json!({
            "prover_id": hex::encode(prover_id),
            "sector_id": sector_id,
        });
        if self.pipeline.persists() {
            let bytes = serde_json::to_vec(&c1).map_err(|e| ProveError::Encode(e.to_string()))?;
            request.payload = Some(bytes.into());
        }
        let adapter = Arc::clone(&self.porep);
        let input = C2Input::new(c1, prover_id, sector_id);
        let Submitted { status, .. } = self
            .pipeline
            .submit_planned(request, move |_| {
                adapter.plan_input(input, None, None).map(|(plan, _)| plan)
            })
            .await?;
        let result = self.finish(&status.id).await?;
        Ok(result.proof.clone())
    }

    async fn finish(&self, id: &str) -> Result<Arc<JobResult>, ProveError> {
        self.pipeline.wait(id).await?;
        Ok(self.pipeline.result(id).await?)
    }

    /// Stops the pipeline. Unfinished jobs stay in the store, if it is durable.
    pub fn shutdown(self) {
        self.pipeline.shutdown();
    }
}
