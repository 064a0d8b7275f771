//! The job coordinator: accepts planned jobs, admits their partitions into the pipeline by
//! rank (priority, then deadline, then age), assembles results, handles cancellation,
//! deadlines and draining, and sends each outcome to the store writer (the request was stored
//! before the job reached the coordinator).
//!
//! Each admitted partition runs as one future on the coordinator's context (the partition
//! driver, [`crate::partition`]): it sends typed messages to the stage actors and awaits their
//! replies; the coordinator's own state changes only in its handlers and in the completion
//! callback of that future, so no lock guards it. The driver records each stage transition in
//! the partition's `Progress`, which [`InFlight`] reads for the status page.
//!
//! Admission: at most `max_in_flight` partitions are in the pipeline, plus up to
//! `priority_reserve` more for a job that outranks every partition in flight, so that a
//! WindowPoSt arriving behind C2 jobs is admitted at once and then overtakes them at the next
//! stage boundary (see [`crate::scheduler`]). Deadlines are checked when partitions are admitted
//! and every [`DEADLINE_TICK`]; see [`crate::deadline`].

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use blstrs::{Bls12, Scalar};
use metrics::{counter, gauge, histogram};
use proofline_groth16::{proof_to_bytes, Proof, SharedProvingKey};
use proofline_jobs::{scalar_to_hex, CircuitThunk, ParamsSpec};
use proofline_wire::{JobCounts, JobInFlight, PartitionProgress, PartitionStage};
use tokio::sync::oneshot;
use tracing::Instrument;

use crate::backpressure::RecentRuns;
use crate::deadline::{self, LatencyModel, Remaining};
use crate::idempotency::{Digest, Repeat, RepeatIndex};
use crate::job::{now_ms, JobFailure, JobResult, JobState, JobStatus, StageTimings};
use crate::messages::*;
use crate::partition::{drive_partition, Progress, Stages};
use crate::scheduler::Rank;
use crate::store::writer::StoreWriter;
use crate::store::{FinishOutcome, FinishedRecord};
use crate::telemetry::{actor, Mailbox, Named, Secs};

/// How often unfinished jobs with a deadline are checked.
pub const DEADLINE_TICK: Duration = Duration::from_millis(500);

/// Coordinator limits.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Partitions admitted at once.
    pub max_in_flight: usize,
    /// Host memory the admitted partitions' buffers may take (estimated from each circuit's
    /// size); a partition larger than all of it is admitted alone.
    pub host_budget: u64,
    /// Extra partitions admitted beyond `max_in_flight` for a job that outranks every partition
    /// in flight.
    pub priority_reserve: usize,
    /// Unfinished jobs at most.
    pub max_queued: usize,
    /// Finished jobs kept.
    pub retain_finished: usize,
}

/// An admitted partition: its driver future and where it is.
struct Running {
    handle: SpawnHandle,
    progress: Arc<Progress>,
    /// When it was admitted (the deadline check's view of its remaining time).
    admitted: Instant,
}

struct JobEntry {
    status: JobStatus,
    seq: u64,
    /// Estimated host bytes of one partition in flight.
    host_bytes: u64,
    params: ParamsSpec,
    pending: VecDeque<(usize, CircuitThunk)>,
    expected: Vec<Vec<Scalar>>,
    proofs: Vec<Option<Proof<Bls12>>>,
    running: HashMap<usize, Running>,
    submitted: Instant,
    cancel: CancelToken,
    waiters: Vec<oneshot::Sender<JobStatus>>,
    /// The outcome is in the store (or the store gave up on it). Until then a finished job is
    /// shown as still running, so that no client sees an outcome a crash could undo.
    recorded: bool,
    result: Option<Arc<JobResult>>,
    final_check: Option<proofline_jobs::FinalCheck>,
    final_handle: Option<SpawnHandle>,
    pk: Option<SharedProvingKey>,
}

/// The coordinator actor.
pub struct JobCoordinator {
    stages: Stages,
    limits: Limits,
    jobs: HashMap<JobId, JobEntry>,
    finished_order: VecDeque<JobId>,
    seq: u64,
    in_flight: usize,
    /// Estimated host bytes of the partitions in flight, by partition.
    host_held: HashMap<(JobId, usize), u64>,
    store: Mailbox<StoreWriter>,
    /// Ids whose requests are being written to the store (counted as unfinished).
    reserved: HashSet<JobId>,
    /// Draining: only jobs already running are admitted; waiters learn when none is left.
    draining: bool,
    drain_waiters: Vec<oneshot::Sender<usize>>,
    /// Outcomes sent to the store writer and not yet written.
    writes_in_flight: usize,
    flush_waiters: Vec<oneshot::Sender<()>>,
    me: Option<Addr<Self>>,
    finished_totals: FinishedTotals,
    repeats: RepeatIndex,
    runs: RecentRuns,
    latency: LatencyModel,
}

/// Jobs ended since start, by outcome.
#[derive(Clone, Copy, Debug, Default)]
struct FinishedTotals {
    succeeded: u64,
    failed: u64,
    cancelled: u64,
}

/// Host bytes a partition of `constraints` constraints holds in flight: the evaluations a and b
/// over the domain (C's are their product, derived by the H stage under its own lease) and
/// about as much again as one of them for the assignment and synthesis' own state.
pub fn partition_host_bytes(constraints: usize) -> u64 {
    if constraints == 0 {
        return 0;
    }
    3 * constraints.next_power_of_two() as u64 * std::mem::size_of::<Scalar>() as u64
}

impl JobEntry {
    fn rank(&self) -> Rank {
        Rank {
            priority: self.status.priority,
            deadline_ms: self.status.deadline_ms,
            seq: self.seq,
        }
    }
}

impl JobCoordinator {
    /// A coordinator over the stage actors, sending outcomes to `store`.
    pub fn new(stages: Stages, limits: Limits, store: Mailbox<StoreWriter>) -> Self {
        JobCoordinator {
            stages,
            limits,
            jobs: HashMap::new(),
            finished_order: VecDeque::new(),
            seq: 0,
            in_flight: 0,
            host_held: HashMap::new(),
            store,
            reserved: HashSet::new(),
            draining: false,
            drain_waiters: Vec::new(),
            writes_in_flight: 0,
            flush_waiters: Vec::new(),
            me: None,
            finished_totals: FinishedTotals::default(),
            repeats: RepeatIndex::default(),
            runs: RecentRuns::default(),
            latency: LatencyModel::default(),
        }
    }

    /// Whether a submission named by `client_id` / `key` repeats a retained job: `None` when
    /// not, else the existing job's status or the conflict.
    fn find_repeat(
        &self,
        client_id: Option<&JobId>,
        key: Option<&str>,
        digest: &Digest,
    ) -> Option<Result<JobStatus, SubmitError>> {
        match self.repeats.find(client_id, key, digest, |id| {
            self.jobs.contains_key(id) || self.reserved.contains(id)
        }) {
            Repeat::New => None,
            Repeat::Same(id) if self.reserved.contains(&id) => {
                Some(Err(SubmitError::BeingAccepted(id)))
            }
            Repeat::Same(id) => self.jobs.get(&id).map(|j| Ok(visible(j))),
            Repeat::Conflict { id, reason } => Some(Err(SubmitError::Conflict {
                id,
                reason: reason.to_string(),
            })),
        }
    }

    /// Seconds a refused client should wait: when the running job closest to its expected end
    /// should be done (see [`crate::backpressure`]).
    fn retry_after_s(&self) -> u64 {
        let now = now_ms();
        self.runs.retry_after_s(self.jobs.values().filter_map(|j| {
            let started = j.status.started_at_ms?;
            (j.status.state == JobState::Running)
                .then(|| now.saturating_sub(started) as f64 / 1000.0)
        }))
    }

    fn unfinished(&self) -> usize {
        self.reserved.len()
            + self
                .jobs
                .values()
                .filter(|j| !j.status.state.is_terminal())
                .count()
    }

    /// Tells drain waiters once no job is running.
    fn check_drained(&mut self) {
        if !self.draining || self.drain_waiters.is_empty() {
            return;
        }
        let running = self
            .jobs
            .values()
            .any(|j| j.status.state == JobState::Running);
        if !running {
            let left = self.unfinished();
            for w in self.drain_waiters.drain(..) {
                let _ = w.send(left);
            }
        }
    }

    /// An unfinished job as the status page shows it.
    fn in_flight(&self, job: &JobEntry) -> JobInFlight {
        let partitions = (0..job.status.partitions)
            .map(|k| {
                let (stage, stage_s, device) = match job.running.get(&k) {
                    Some(r) => {
                        let (stage, secs) = r.progress.read();
                        (stage, secs, r.progress.device())
                    }
                    None if job.proofs.get(k).is_some_and(Option::is_some) => {
                        (PartitionStage::Done, 0.0, None)
                    }
                    None => (PartitionStage::Queued, 0.0, None),
                };
                PartitionProgress {
                    partition: k,
                    stage,
                    device,
                    stage_s,
                }
            })
            .collect();
        JobInFlight {
            id: job.status.id.clone(),
            kind: job.status.kind.clone(),
            label: job.status.label.clone(),
            state: job.status.state,
            priority: job.status.priority,
            deadline_ms: job.status.deadline_ms,
            partitions_done: job.status.partitions_done,
            age_s: job.submitted.secs(),
            final_check: job.final_handle.is_some(),
            partitions,
        }
    }

    fn publish(&self) {
        gauge!("proofline_partitions_in_flight").set(self.in_flight as f64);
        for state in [JobState::Queued, JobState::Running] {
            let n = self
                .jobs
                .values()
                .filter(|j| j.status.state == state)
                .count();
            let label = match state {
                JobState::Queued => "queued",
                _ => "running",
            };
            gauge!("proofline_jobs", "state" => label).set(n as f64);
        }
    }

    /// Fails every unfinished job whose deadline has passed or can no longer be met.
    fn check_deadlines(&mut self, ctx: &mut Context<Self>) {
        let now = now_ms();
        let parallel = self.limits.max_in_flight;
        let late: Vec<(JobId, String)> = self
            .jobs
            .iter()
            .filter(|(_, j)| !j.status.state.is_terminal())
            .filter_map(|(id, j)| {
                let deadline = j.status.deadline_ms?;
                let remaining = Remaining {
                    unstarted: j.pending.len(),
                    running_elapsed: j.running.values().map(|r| r.admitted.secs()).collect(),
                };
                let per = self.latency.partition_secs(&j.params.id);
                deadline::verdict(deadline, now, per, &remaining, parallel)
                    .map(|why| (id.clone(), why))
            })
            .collect();
        for (id, why) in late {
            let Some(job) = self.jobs.get(&id) else {
                continue;
            };
            counter!("proofline_deadline_exceeded_total", "kind" => job.status.kind.clone())
                .increment(1);
            tracing::warn!(job = %id, kind = %job.status.kind, reason = %why, "deadline cannot be met: job failed early");
            let e = StageError::DeadlineExceeded(why);
            self.stop_running(&id, ctx);
            self.finish(
                &id,
                JobState::Failed,
                Some(JobFailure {
                    code: e.code().to_string(),
                    message: e.to_string(),
                    partition: None,
                }),
            );
        }
    }

    /// The lowest rank among the partitions in flight.
    fn lowest_in_flight(&self) -> Option<Rank> {
        self.jobs
            .values()
            .filter(|j| !j.running.is_empty())
            .map(JobEntry::rank)
            .min()
    }

    /// Admits partitions while there is room, best rank first (priority, deadline, age).
    fn pump(&mut self, ctx: &mut Context<Self>) {
        self.check_deadlines(ctx);
        loop {
            let next = self
                .jobs
                .iter()
                .filter(|(_, j)| !j.status.state.is_terminal() && !j.pending.is_empty())
                // Draining: finish what runs, start nothing new.
                .filter(|(_, j)| !self.draining || j.status.state == JobState::Running)
                .max_by_key(|(_, j)| j.rank())
                .map(|(id, j)| (id.clone(), j.rank()));
            let Some((id, rank)) = next else { break };
            let room = self.in_flight < self.limits.max_in_flight
                || (self.in_flight < self.limits.max_in_flight + self.limits.priority_reserve
                    && self
                        .lowest_in_flight()
                        .is_some_and(|low| rank.priority > low.priority));
            if !room {
                break;
            }
            let held: u64 = self.host_held.values().sum();
            let Some(job) = self.jobs.get_mut(&id) else {
                break;
            };
            if self.in_flight > 0 && held + job.host_bytes > self.limits.host_budget {
                break; // its buffers would not fit the host budget yet
            }
            let Some((k, thunk)) = job.pending.pop_front() else {
                break;
            };
            if job.status.state == JobState::Queued {
                job.status.state = JobState::Running;
                job.status.started_at_ms = Some(now_ms());
            }
            let queued_s = job.submitted.secs();
            let progress = Arc::new(Progress::admitted(self.stages.only_device()));
            let fut = drive_partition(
                self.stages.clone(),
                id.clone(),
                k,
                rank,
                job.params.clone(),
                thunk,
                job.expected[k].clone(),
                job.cancel.clone(),
                progress.clone(),
            )
            .instrument(tracing::info_span!("partition", job = %id, partition = k));
            let job_id = id.clone();
            let handle = ctx.spawn(actix::fut::wrap_future::<_, Self>(fut).map(
                move |(res, mut t), act, ctx| {
                    t.queued_s = queued_s;
                    act.partition_done(&job_id, k, res, t, ctx)
                },
            ));
            let host_bytes = job.host_bytes;
            if let Some(job) = self.jobs.get_mut(&id) {
                job.running.insert(
                    k,
                    Running {
                        handle,
                        progress,
                        admitted: Instant::now(),
                    },
                );
            }
            self.host_held.insert((id.clone(), k), host_bytes);
            self.in_flight += 1;
        }
        self.publish();
    }

    fn partition_done(
        &mut self,
        id: &JobId,
        k: usize,
        res: Result<(Proof<Bls12>, SharedProvingKey), StageError>,
        timings: StageTimings,
        ctx: &mut Context<Self>,
    ) {
        self.in_flight = self.in_flight.saturating_sub(1);
        self.host_held.remove(&(id.clone(), k));
        let Some(job) = self.jobs.get_mut(id) else {
            self.pump(ctx);
            return;
        };
        job.running.remove(&k);
        if job.status.state.is_terminal() {
            self.pump(ctx);
            return;
        }
        job.status.partition_timings[k] = timings;
        job.status.timings.add(&timings);
        match res {
            Ok((proof, pk)) => {
                self.latency.record(&job.params.id, timings.total_s);
                job.proofs[k] = Some(proof);
                job.pk = Some(pk);
                job.status.partitions_done += 1;
                tracing::info!(job = %id, partition = k, secs = timings.total_s, "partition proved and verified");
                if job.status.partitions_done == job.status.partitions {
                    let mut bytes =
                        Vec::with_capacity(job.proofs.len() * proofline_groth16::PROOF_BYTES);
                    for p in job.proofs.iter().flatten() {
                        bytes.extend_from_slice(&proof_to_bytes(p));
                    }
                    match (job.final_check.take(), job.pk.clone()) {
                        (Some(check), Some(pk)) => {
                            // The adapter's check of the whole proof, on a CPU-MSM thread.
                            let fut = self.stages.cpu_msm.send(RunFinalCheck {
                                check,
                                pk,
                                proof: bytes,
                            });
                            let job_id = id.clone();
                            let handle = ctx.spawn(
                                actix::fut::wrap_future::<_, Self>(fut)
                                    .map(move |r, act, _ctx| act.final_check_done(&job_id, r)),
                            );
                            job.final_handle = Some(handle);
                        }
                        _ => self.succeed(id, bytes),
                    }
                }
            }
            Err(StageError::Cancelled) => {}
            Err(e) => {
                if matches!(
                    e,
                    StageError::Prover(proofline_groth16::ProverError::VerificationFailed)
                ) {
                    counter!("proofline_verification_failures_total").increment(1);
                    tracing::error!(job = %id, partition = k, "PROOF FAILED VERIFICATION: job failed, no proof returned");
                } else {
                    tracing::error!(job = %id, partition = k, error = %e, "partition failed");
                }
                let failure = JobFailure {
                    code: e.code().to_string(),
                    message: e.to_string(),
                    partition: Some(k),
                };
                self.stop_running(id, ctx);
                self.finish(id, JobState::Failed, Some(failure));
            }
        }
        self.pump(ctx);
    }

    /// Stores the result of a job whose every check passed.
    fn succeed(&mut self, id: &JobId, proof: Vec<u8>) {
        let Some(job) = self.jobs.get_mut(id) else {
            return;
        };
        let result = JobResult {
            proof,
            public_inputs: job
                .expected
                .iter()
                .map(|v| v.iter().map(scalar_to_hex).collect())
                .collect(),
        };
        job.result = Some(Arc::new(result));
        self.finish(id, JobState::Succeeded, None);
    }

    fn final_check_done(
        &mut self,
        id: &JobId,
        r: Result<(Vec<u8>, Result<(), String>), actix::MailboxError>,
    ) {
        let Some(job) = self.jobs.get_mut(id) else {
            return;
        };
        job.final_handle = None;
        if job.status.state.is_terminal() {
            return;
        }
        match r {
            Ok((proof, Ok(()))) => {
                tracing::info!(job = %id, "whole proof passed the final check");
                self.succeed(id, proof);
            }
            Ok((_, Err(reason))) => {
                counter!("proofline_verification_failures_total").increment(1);
                tracing::error!(job = %id, %reason, "PROOF FAILED THE FINAL CHECK: job failed, no proof returned");
                let e = StageError::FinalCheck(reason);
                self.finish(
                    id,
                    JobState::Failed,
                    Some(JobFailure {
                        code: e.code().to_string(),
                        message: e.to_string(),
                        partition: None,
                    }),
                );
            }
            Err(e) => {
                let e = StageError::from(e);
                self.finish(
                    id,
                    JobState::Failed,
                    Some(JobFailure {
                        code: e.code().to_string(),
                        message: e.to_string(),
                        partition: None,
                    }),
                );
            }
        }
    }

    /// Cancels the futures of a job's running partitions and marks the job cancelled for the
    /// stages that already hold its messages.
    fn stop_running(&mut self, id: &JobId, ctx: &mut Context<Self>) {
        if let Some(job) = self.jobs.get_mut(id) {
            job.cancel.cancel();
            job.pending.clear();
            for (k, r) in job.running.drain() {
                ctx.cancel_future(r.handle);
                self.in_flight = self.in_flight.saturating_sub(1);
                self.host_held.remove(&(id.clone(), k));
            }
            if let Some(h) = job.final_handle.take() {
                ctx.cancel_future(h);
            }
        }
    }

    fn finish(&mut self, id: &JobId, state: JobState, error: Option<JobFailure>) {
        let Some(job) = self.jobs.get_mut(id) else {
            return;
        };
        job.status.state = state;
        job.status.error = error;
        job.status.finished_at_ms = Some(now_ms());
        job.proofs.clear();
        job.pk = None;
        job.final_check = None;
        if let (JobState::Succeeded, Some(started)) = (state, job.status.started_at_ms) {
            self.runs
                .record(now_ms().saturating_sub(started) as f64 / 1000.0);
        }
        let label = match state {
            JobState::Succeeded => {
                self.finished_totals.succeeded += 1;
                histogram!("proofline_job_seconds", "kind" => job.status.kind.clone())
                    .record(job.submitted.secs());
                "succeeded"
            }
            JobState::Failed => {
                self.finished_totals.failed += 1;
                "failed"
            }
            _ => {
                self.finished_totals.cancelled += 1;
                "cancelled"
            }
        };
        counter!("proofline_jobs_finished_total", "state" => label).increment(1);
        tracing::info!(job = %id, state = label, secs = job.submitted.secs(), "job finished");
        // The store writes on its own thread; a claim lost meanwhile (shared queue) means
        // another daemon runs the job now, so this copy is forgotten.
        let write = self.store.send(RecordOutcome {
            id: id.clone(),
            record: FinishedRecord {
                status: job.status.clone(),
                result: job.result.as_deref().cloned(),
            },
        });
        self.writes_in_flight += 1;
        let (me, job_id) = (self.me.clone(), id.clone());
        actix::spawn(async move {
            let claim_lost = matches!(write.await, Ok(Ok(FinishOutcome::ClaimLost)));
            if let Some(me) = me {
                me.do_send(OutcomeWritten {
                    id: job_id,
                    claim_lost,
                });
            }
        });
        self.finished_order.push_back(id.clone());
        while self.finished_order.len() > self.limits.retain_finished {
            if let Some(old) = self.finished_order.pop_front() {
                self.jobs.remove(&old);
                self.repeats.forget(&old);
            }
        }
        self.check_drained();
    }
}

/// What clients see of a job: a finished job whose outcome is not yet in the store still shows
/// as running (or queued), without its outcome.
fn visible(j: &JobEntry) -> JobStatus {
    let mut s = j.status.clone();
    if s.state.is_terminal() && !j.recorded {
        s.state = if s.started_at_ms.is_some() {
            JobState::Running
        } else {
            JobState::Queued
        };
        s.finished_at_ms = None;
        s.error = None;
    }
    s
}

impl Actor for JobCoordinator {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.me = Some(ctx.address());
        // Series that alerts watch exist from the start, at zero.
        counter!("proofline_verification_failures_total").increment(0);
        counter!("proofline_jobs_accepted_total").increment(0);
        self.publish();
        ctx.run_interval(DEADLINE_TICK, |act, ctx| {
            if act
                .jobs
                .values()
                .any(|j| j.status.deadline_ms.is_some() && !j.status.state.is_terminal())
            {
                act.pump(ctx);
            }
        });
    }
}

impl Named for JobCoordinator {
    const NAME: &'static str = actor::COORDINATOR;
}

crate::counted_handlers!(JobCoordinator);

impl Handler<FindRepeat> for JobCoordinator {
    type Result = Option<Result<JobStatus, SubmitError>>;

    fn handle(&mut self, msg: FindRepeat, _: &mut Context<Self>) -> Self::Result {
        self.find_repeat(msg.id.as_ref(), msg.key.as_deref(), &msg.digest)
    }
}

impl Handler<SubmitPlanned> for JobCoordinator {
    type Result = Result<Submitted, SubmitError>;

    fn handle(&mut self, msg: SubmitPlanned, ctx: &mut Context<Self>) -> Self::Result {
        // A client's job passed `Reserve` (repeats, capacity, id); a restored or claimed one is
        // already in the store and is never refused for capacity.
        let reserved = msg.admission == Admission::Reserved && self.reserved.remove(&msg.id);
        if !reserved && self.jobs.contains_key(&msg.id) {
            return Err(SubmitError::Conflict {
                id: msg.id,
                reason: "the job id is in use".into(),
            });
        }
        let SubmitPlanned {
            id,
            request,
            plan,
            priority,
            digest,
            ..
        } = msg;
        let n = plan.partitions.len();
        let mut expected = Vec::with_capacity(n);
        let mut pending = VecDeque::with_capacity(n);
        let host_bytes = plan
            .partitions
            .iter()
            .map(|p| partition_host_bytes(p.constraints_hint))
            .max()
            .unwrap_or(0);
        for (k, p) in plan.partitions.into_iter().enumerate() {
            expected.push(p.public_inputs);
            pending.push_back((k, p.circuit));
        }
        let status = JobStatus {
            id: id.clone(),
            kind: request.kind.clone(),
            label: plan.label,
            state: JobState::Queued,
            priority,
            deadline_ms: request.deadline,
            partitions: n,
            partitions_done: 0,
            submitted_at_ms: now_ms(),
            started_at_ms: None,
            finished_at_ms: None,
            timings: StageTimings::default(),
            partition_timings: vec![StageTimings::default(); n],
            error: None,
        };
        if let Some(digest) = digest {
            self.repeats
                .record(&id, request.idempotency_key.as_deref(), digest);
        }
        self.seq += 1;
        tracing::info!(job = %id, kind = %status.kind, label = %status.label, partitions = n, priority = status.priority, deadline_ms = ?status.deadline_ms, "job accepted");
        counter!("proofline_jobs_accepted_total").increment(1);
        self.jobs.insert(
            id.clone(),
            JobEntry {
                status: status.clone(),
                seq: self.seq,
                host_bytes,
                params: plan.params,
                pending,
                expected,
                proofs: vec![None; n],
                running: HashMap::new(),
                submitted: Instant::now(),
                cancel: CancelToken::default(),
                waiters: Vec::new(),
                recorded: false,
                result: None,
                final_check: plan.final_check,
                final_handle: None,
                pk: None,
            },
        );
        self.pump(ctx);
        Ok(Submitted {
            // A job failed at once (its deadline had passed) shows as failed once that is stored.
            status: self.jobs.get(&id).map(visible).unwrap_or(status),
            outcome: SubmitOutcome::Accepted,
        })
    }
}

impl Handler<Reserve> for JobCoordinator {
    type Result = Result<Reservation, SubmitError>;

    fn handle(&mut self, msg: Reserve, _: &mut Context<Self>) -> Self::Result {
        // A repeat is answered with the existing job even when the queue is full or draining.
        if let Some(digest) = &msg.digest {
            if let Some(found) =
                self.find_repeat(msg.client_id.as_ref(), msg.key.as_deref(), digest)
            {
                return found.map(|s| Reservation::Existing(Box::new(s)));
            }
        }
        if self.draining {
            return Err(SubmitError::Draining);
        }
        let unfinished = self.unfinished();
        if unfinished >= self.limits.max_queued {
            return Err(SubmitError::QueueFull {
                unfinished,
                retry_after_s: self.retry_after_s(),
            });
        }
        if self.jobs.contains_key(&msg.id) || !self.reserved.insert(msg.id.clone()) {
            return Err(SubmitError::Conflict {
                id: msg.id,
                reason: "the job id is in use".into(),
            });
        }
        // Named now, so that a retry arriving while this request is being stored is recognised.
        if let Some(digest) = msg.digest {
            self.repeats.record(&msg.id, msg.key.as_deref(), digest);
        }
        Ok(Reservation::Reserved)
    }
}

impl Handler<Unreserve> for JobCoordinator {
    type Result = ();

    fn handle(&mut self, msg: Unreserve, _: &mut Context<Self>) {
        if self.reserved.remove(&msg.0) {
            self.repeats.forget(&msg.0);
        }
    }
}

impl JobCoordinator {
    fn forget(&mut self, id: &JobId, ctx: &mut Context<Self>) {
        self.stop_running(id, ctx);
        if self.jobs.remove(id).is_some() {
            self.finished_order.retain(|j| j != id);
            tracing::info!(job = %id, "job forgotten here");
        }
        self.check_drained();
        self.pump(ctx);
    }
}

impl Handler<ForgetJob> for JobCoordinator {
    type Result = ();

    fn handle(&mut self, msg: ForgetJob, ctx: &mut Context<Self>) {
        self.forget(&msg.0, ctx);
    }
}

impl Handler<OutcomeWritten> for JobCoordinator {
    type Result = ();

    fn handle(&mut self, msg: OutcomeWritten, ctx: &mut Context<Self>) {
        self.writes_in_flight = self.writes_in_flight.saturating_sub(1);
        if msg.claim_lost {
            self.forget(&msg.id, ctx);
        } else if let Some(job) = self.jobs.get_mut(&msg.id) {
            // Durable now (or the store gave up and logged it): clients may see the outcome.
            job.recorded = true;
            for w in job.waiters.drain(..) {
                let _ = w.send(job.status.clone());
            }
        }
        if self.writes_in_flight == 0 {
            for w in self.flush_waiters.drain(..) {
                let _ = w.send(());
            }
        }
    }
}

impl Handler<FlushOutcomes> for JobCoordinator {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _: FlushOutcomes, _: &mut Context<Self>) -> Self::Result {
        if self.writes_in_flight == 0 {
            return Box::pin(async {});
        }
        let (tx, rx) = oneshot::channel();
        self.flush_waiters.push(tx);
        Box::pin(async move {
            let _ = rx.await;
        })
    }
}

impl Handler<Drain> for JobCoordinator {
    type Result = ResponseFuture<usize>;

    fn handle(&mut self, _: Drain, _: &mut Context<Self>) -> Self::Result {
        self.draining = true;
        let (tx, rx) = oneshot::channel();
        self.drain_waiters.push(tx);
        self.check_drained();
        Box::pin(async move { rx.await.unwrap_or(0) })
    }
}

impl Handler<RestoreFinished> for JobCoordinator {
    type Result = ();

    fn handle(&mut self, msg: RestoreFinished, _: &mut Context<Self>) {
        let FinishedRecord { status, result } = msg.0;
        let id = status.id.clone();
        self.seq += 1;
        self.jobs.insert(
            id.clone(),
            JobEntry {
                status,
                seq: self.seq,
                host_bytes: 0,
                params: ParamsSpec {
                    id: String::new(),
                    path: Default::default(),
                    check: None,
                    hint: String::new(),
                },
                pending: VecDeque::new(),
                expected: Vec::new(),
                proofs: Vec::new(),
                running: HashMap::new(),
                submitted: Instant::now(),
                cancel: CancelToken::default(),
                waiters: Vec::new(),
                recorded: true,
                result: result.map(Arc::new),
                final_check: None,
                final_handle: None,
                pk: None,
            },
        );
        self.finished_order.push_back(id);
    }
}

impl Handler<GetStatus> for JobCoordinator {
    type Result = Option<JobStatus>;

    fn handle(&mut self, msg: GetStatus, _: &mut Context<Self>) -> Self::Result {
        self.jobs.get(&msg.0).map(visible)
    }
}

impl Handler<GetResult> for JobCoordinator {
    type Result = Option<(JobStatus, Option<Arc<JobResult>>)>;

    fn handle(&mut self, msg: GetResult, _: &mut Context<Self>) -> Self::Result {
        self.jobs
            .get(&msg.0)
            .map(|j| (visible(j), j.result.clone().filter(|_| j.recorded)))
    }
}

impl Handler<ListJobs> for JobCoordinator {
    type Result = MessageResult<ListJobs>;

    fn handle(&mut self, _: ListJobs, _: &mut Context<Self>) -> Self::Result {
        let mut v: Vec<(u64, JobStatus)> =
            self.jobs.values().map(|j| (j.seq, visible(j))).collect();
        v.sort_by_key(|e| std::cmp::Reverse(e.0));
        MessageResult(v.into_iter().map(|(_, s)| s).collect())
    }
}

impl Handler<CancelJob> for JobCoordinator {
    type Result = ResponseFuture<Option<JobStatus>>;

    /// Answers once the cancellation is in the store, like every outcome.
    fn handle(&mut self, msg: CancelJob, ctx: &mut Context<Self>) -> Self::Result {
        let Some(state) = self.jobs.get(&msg.0).map(|j| j.status.state) else {
            return Box::pin(async { None });
        };
        if !state.is_terminal() {
            self.stop_running(&msg.0, ctx);
            self.finish(
                &msg.0,
                JobState::Cancelled,
                Some(JobFailure {
                    code: "cancelled".into(),
                    message: "cancelled by a client".into(),
                    partition: None,
                }),
            );
            self.pump(ctx);
        }
        match self.jobs.get_mut(&msg.0) {
            None => Box::pin(async { None }),
            Some(j) if j.recorded => {
                let s = j.status.clone();
                Box::pin(async move { Some(s) })
            }
            Some(j) => {
                let (tx, rx) = oneshot::channel();
                j.waiters.push(tx);
                Box::pin(async move { rx.await.ok() })
            }
        }
    }
}

impl Handler<AwaitJob> for JobCoordinator {
    type Result = ResponseFuture<Option<JobStatus>>;

    fn handle(&mut self, msg: AwaitJob, _: &mut Context<Self>) -> Self::Result {
        match self.jobs.get_mut(&msg.0) {
            None => Box::pin(async { None }),
            Some(j) if j.status.state.is_terminal() && j.recorded => {
                let s = j.status.clone();
                Box::pin(async move { Some(s) })
            }
            Some(j) => {
                let (tx, rx) = oneshot::channel();
                j.waiters.push(tx);
                Box::pin(async move { rx.await.ok() })
            }
        }
    }
}

impl Handler<Counts> for JobCoordinator {
    type Result = MessageResult<Counts>;

    fn handle(&mut self, _: Counts, _: &mut Context<Self>) -> Self::Result {
        let mut c = PipelineCounts {
            partitions_in_flight: self.in_flight,
            ..Default::default()
        };
        for j in self.jobs.values() {
            match j.status.state {
                JobState::Queued => c.queued += 1,
                JobState::Running => c.running += 1,
                _ => c.finished += 1,
            }
        }
        MessageResult(c)
    }
}

impl Handler<InFlight> for JobCoordinator {
    type Result = MessageResult<InFlight>;

    fn handle(&mut self, _: InFlight, _: &mut Context<Self>) -> Self::Result {
        let mut unfinished: Vec<&JobEntry> = self
            .jobs
            .values()
            .filter(|j| !j.status.state.is_terminal())
            .collect();
        // Running first, then in the order they are admitted and scheduled (best rank first).
        unfinished.sort_by_key(|j| {
            (
                j.status.state != JobState::Running,
                std::cmp::Reverse(j.rank()),
            )
        });
        let mut counts = JobCounts {
            succeeded_total: self.finished_totals.succeeded,
            failed_total: self.finished_totals.failed,
            cancelled_total: self.finished_totals.cancelled,
            ..Default::default()
        };
        for j in self.jobs.values() {
            match j.status.state {
                JobState::Queued => counts.queued += 1,
                JobState::Running => counts.running += 1,
                _ => counts.finished_retained += 1,
            }
        }
        MessageResult(InFlightView {
            jobs: unfinished.into_iter().map(|j| self.in_flight(j)).collect(),
            counts,
            partitions_in_flight: self.in_flight,
            max_partitions_in_flight: self.limits.max_in_flight,
        })
    }
}
