//! Durable job state: every accepted job is written here before it is acknowledged, and every
//! outcome when the job ends, so that an accepted job survives a crash, a `kill -9` or a
//! restart.
//!
//! * [`embedded`]: the default, a redb database file in the state directory, on one host;
//! * [`shared`]: a PostgreSQL queue shared by several daemons, which claim jobs with a lease;
//! * [`MemoryStore`]: nothing persisted (tests, throwaway runs: `state.store = "memory"`);
//! * [`codec`]: the binary records;
//! * [`writer`]: the actor that writes outcomes and prunes, off the coordinator's thread.
//!
//! Writes are blocking (a commit is an fsync, a request can be tens of MB): they run on the
//! planning thread of a submission or on the writer actor's thread, never on the coordinator's.

pub mod claimer;
pub mod codec;
pub mod embedded;
pub mod shared;
pub mod writer;

use std::path::PathBuf;
use std::time::Duration;

use proofline_wire::{JobId, JobRequest, JobStatus};

pub use codec::FinishedRecord;

/// Why the store failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The store cannot be written or read now (full disk, read-only directory, database
    /// unreachable). New jobs are refused; accepted ones stay where they are.
    #[error("job store {location} is unavailable: {message}")]
    Unavailable {
        /// File or database.
        location: String,
        /// The underlying error.
        message: String,
    },
    /// The store holds data this build cannot trust: start-up stops here rather than drop jobs.
    #[error(
        "job store {location} is damaged: {message}. No job was dropped: move the file aside \
         (keep it for inspection) and start again to begin with an empty store, or restore a \
         backup"
    )]
    Corrupt {
        /// File or database.
        location: String,
        /// What is wrong.
        message: String,
    },
    /// A job with this id is already stored.
    #[error("job id {0} already exists")]
    Duplicate(JobId),
}

/// What recording an outcome did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FinishOutcome {
    /// The outcome is stored.
    Recorded,
    /// The job already had an outcome: this one is dropped (a job completes once).
    AlreadyFinished,
    /// Shared queue: another daemon holds the job's claim now (ours expired); the outcome is
    /// dropped and the job is forgotten here.
    ClaimLost,
}

/// Which finished jobs to keep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retention {
    /// At most this many (newest kept).
    pub keep: usize,
    /// None older than this (finished time); `None`: by count only.
    pub max_age: Option<Duration>,
}

impl Retention {
    /// The cut-off time in Unix milliseconds: records finished before it go.
    pub fn cutoff_ms(&self, now_ms: u64) -> u64 {
        self.max_age
            .map(|a| now_ms.saturating_sub(a.as_millis() as u64))
            .unwrap_or(0)
    }
}

/// What a store holds at start-up.
#[derive(Debug, Default)]
pub struct Backlog {
    /// Finished jobs, oldest first.
    pub finished: Vec<FinishedRecord>,
    /// Jobs accepted but not ended: `(id, request)` (the coordinator orders them by priority).
    pub pending: Vec<(JobId, JobRequest)>,
}

/// A store of accepted jobs and their outcomes on one host.
pub trait JobStore: Send + Sync + 'static {
    /// Where the data lives, for logs and errors.
    fn location(&self) -> String;

    /// Whether accepted jobs survive a restart (false for the in-memory store).
    fn durable(&self) -> bool {
        true
    }

    /// Records an accepted job. Fails with [`StoreError::Duplicate`] when the id is stored.
    /// The request's big strings are moved out while it is encoded and moved back.
    fn accept(
        &self,
        id: &str,
        request: &mut JobRequest,
        status: &JobStatus,
    ) -> Result<(), StoreError>;

    /// Records a job's outcome and drops its request.
    fn finish(&self, id: &str, record: &FinishedRecord) -> Result<FinishOutcome, StoreError>;

    /// Drops the record of a job accepted by [`JobStore::accept`] that the coordinator then
    /// refused (the pipeline stopped in between).
    fn forget(&self, id: &str) -> Result<(), StoreError>;

    /// Finished jobs and pending requests.
    fn load(&self, retention: &Retention) -> Result<Backlog, StoreError>;

    /// Deletes finished jobs beyond `retention`; returns how many.
    fn prune(&self, retention: &Retention) -> Result<usize, StoreError>;
}

/// Nothing persisted: jobs live in memory only (`state.store = "memory"`).
#[derive(Debug, Default)]
pub struct MemoryStore;

impl JobStore for MemoryStore {
    fn location(&self) -> String {
        "memory".into()
    }
    fn durable(&self) -> bool {
        false
    }
    fn accept(&self, _: &str, _: &mut JobRequest, _: &JobStatus) -> Result<(), StoreError> {
        Ok(())
    }
    fn finish(&self, _: &str, _: &FinishedRecord) -> Result<FinishOutcome, StoreError> {
        Ok(FinishOutcome::Recorded)
    }
    fn forget(&self, _: &str) -> Result<(), StoreError> {
        Ok(())
    }
    fn load(&self, _: &Retention) -> Result<Backlog, StoreError> {
        Ok(Backlog::default())
    }
    fn prune(&self, _: &Retention) -> Result<usize, StoreError> {
        Ok(0)
    }
}

/// Where the pipeline keeps its jobs.
#[derive(Clone)]
pub enum StoreSpec {
    /// In memory only.
    Memory,
    /// A redb file on this host.
    Embedded {
        /// The database file.
        path: PathBuf,
    },
    /// A PostgreSQL queue shared by several daemons.
    Shared(shared::SharedSpec),
    /// A store the embedder provides (jobs run where they are accepted).
    Custom(std::sync::Arc<dyn JobStore>),
}

impl std::fmt::Debug for StoreSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreSpec::Memory => f.write_str("Memory"),
            StoreSpec::Embedded { path } => f.debug_struct("Embedded").field("path", path).finish(),
            StoreSpec::Shared(s) => f.debug_tuple("Shared").field(&s.holder).finish(),
            StoreSpec::Custom(s) => f.debug_tuple("Custom").field(&s.location()).finish(),
        }
    }
}

/// Whether `id` is a usable job id (letters, digits and '-').
pub fn valid_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 128 && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}
