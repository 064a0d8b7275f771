//! The claimer: on a daemon attached to the shared queue, one thread that claims jobs while
//! this daemon has room, hands them to the coordinator, and renews the leases of the jobs it
//! holds. A job whose claim is found gone at renewal (expired and taken over, or cancelled on
//! another daemon) is dropped here without an outcome.

use std::collections::HashMap;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use proofline_jobs::AdapterRegistry;

use super::shared::SharedQueue;
use super::{FinishedRecord, JobStore};
use crate::coordinator::JobCoordinator;
use crate::messages::{Admission, ForgetJob, GetStatus, SubmitPlanned};
use crate::telemetry::Mailbox;

/// Commands to the claimer thread.
#[derive(Debug)]
pub enum ClaimerCommand {
    /// Claim no more jobs (draining), keep renewing.
    StopClaiming,
    /// Stop the thread.
    Stop,
}

/// Runs until told to stop.
pub(crate) fn run(
    queue: Arc<SharedQueue>,
    coordinator: Mailbox<JobCoordinator>,
    registry: Arc<AdapterRegistry>,
    commands: Receiver<ClaimerCommand>,
) {
    let spec = queue.spec().clone();
    let renew_every = (spec.lease / 3).max(Duration::from_millis(100));
    let mut last_renew = Instant::now();
    let mut claiming = true;
    loop {
        if last_renew.elapsed() >= renew_every {
            renew(&queue, &coordinator);
            last_renew = Instant::now();
        }
        let mut claimed = false;
        if claiming && queue.held().len() < spec.max_claimed {
            match queue.claim() {
                Ok(Some((id, request))) => {
                    claimed = true;
                    start(&queue, &coordinator, &registry, id, request);
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "cannot claim from the shared queue"),
            }
        }
        // Right after a claim, look again at once; otherwise wait for the poll interval.
        let wait = if claimed {
            Duration::ZERO
        } else {
            spec.poll.min(renew_every)
        };
        match commands.recv_timeout(wait) {
            Ok(ClaimerCommand::StopClaiming) => claiming = false,
            Ok(ClaimerCommand::Stop) | Err(RecvTimeoutError::Disconnected) => break,
            Err(RecvTimeoutError::Timeout) => {}
        }
    }
}

fn renew(queue: &SharedQueue, coordinator: &Mailbox<JobCoordinator>) {
    let mut snapshots = HashMap::new();
    for id in queue.held() {
        if let Ok(Some(s)) = futures::executor::block_on(coordinator.send(GetStatus(id.clone()))) {
            snapshots.insert(id, s);
        }
    }
    match queue.renew(&snapshots) {
        Ok(lost) => {
            for id in lost {
                tracing::warn!(job = %id, "claim lost (expired and taken over, or cancelled elsewhere): dropping the job here");
                coordinator.do_send(ForgetJob(id));
            }
        }
        Err(e) => tracing::warn!(error = %e, "cannot renew claims; they expire if this lasts"),
    }
}

fn start(
    queue: &SharedQueue,
    coordinator: &Mailbox<JobCoordinator>,
    registry: &AdapterRegistry,
    id: String,
    request: proofline_wire::JobRequest,
) {
    let _span = tracing::info_span!("claim", job = %id).entered();
    let plan = match registry.plan(&request) {
        Ok(p) => p,
        Err(e) => {
            // The request was valid where it was submitted; here it is not (parameters missing
            // on this host, say). Fail it visibly rather than hold it.
            tracing::error!(error = %e, "claimed job cannot be planned on this daemon; job failed");
            let status = queue.failed_status(&id, e.code(), &e.to_string());
            if let Err(e) = queue.finish(
                &id,
                &FinishedRecord {
                    status,
                    result: None,
                },
            ) {
                tracing::error!(error = %e, "cannot record the failure");
            }
            return;
        }
    };
    tracing::info!("claimed a job from the shared queue");
    let priority = registry.priority_of(&request);
    let r = futures::executor::block_on(coordinator.send(SubmitPlanned {
        id: id.clone(),
        request,
        plan,
        priority,
        admission: Admission::Claimed,
        // Names are checked by the daemon that accepted the job into the shared queue.
        digest: None,
    }));
    if !matches!(r, Ok(Ok(_))) {
        tracing::warn!(result = ?r.map(|r| r.map(|_| ())), "the coordinator refused a claimed job; giving the claim back");
        if let Err(e) = queue.release(&id) {
            tracing::warn!(error = %e, "cannot give the claim back; it expires");
        }
    }
}
