//! The store writer: records finished jobs and prunes old outcomes on its own thread, so that
//! the coordinator (and every status query waiting on its mailbox) never waits for a commit.

use std::sync::Arc;

use actix::prelude::*;

use super::{FinishOutcome, JobStore, Retention};
use crate::messages::RecordOutcome;
use crate::telemetry::{actor, Named};

/// Writes outcomes to a [`JobStore`] (a `SyncArbiter` of one thread: outcomes of one job are
/// written in order).
pub struct StoreWriter {
    store: Arc<dyn JobStore>,
    retention: Retention,
}

impl StoreWriter {
    /// A writer over `store`, pruning to `retention` after each outcome.
    pub fn new(store: Arc<dyn JobStore>, retention: Retention) -> Self {
        StoreWriter { store, retention }
    }
}

impl Actor for StoreWriter {
    type Context = SyncContext<Self>;
}

impl Named for StoreWriter {
    const NAME: &'static str = actor::STORE;
}

crate::counted_handlers!(StoreWriter);

impl Handler<RecordOutcome> for StoreWriter {
    type Result = Result<FinishOutcome, String>;

    fn handle(&mut self, msg: RecordOutcome, _: &mut SyncContext<Self>) -> Self::Result {
        // A panic in the store (a bug, or a database library's assertion) must not take this
        // thread down: the outcome is then treated as not written.
        let store = &self.store;
        let written = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            store.finish(&msg.id, &msg.record)
        }))
        .unwrap_or_else(|_| {
            Err(super::StoreError::Unavailable {
                location: store.location(),
                message: "the store panicked while writing".into(),
            })
        });
        let outcome = written.map_err(|e| {
            tracing::error!(job = %msg.id, error = %e, "cannot record the finished job; it will run again after a restart");
            e.to_string()
        })?;
        match outcome {
            FinishOutcome::Recorded => {}
            FinishOutcome::AlreadyFinished => {
                tracing::warn!(job = %msg.id, "the job already had an outcome; this one is dropped")
            }
            FinishOutcome::ClaimLost => {
                tracing::warn!(job = %msg.id, "the job's claim went to another daemon; this outcome is dropped")
            }
        }
        let pruned = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            store.prune(&self.retention)
        }));
        match pruned {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "cannot prune finished jobs"),
            Err(_) => tracing::warn!("the store panicked while pruning finished jobs"),
        }
        Ok(outcome)
    }
}
