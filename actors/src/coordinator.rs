//! The job coordinator: accepts planned jobs, admits their partitions into the pipeline by
//! rank (priority, then deadline, then age), assembles results, handles cancellation and
//! deadlines, and journals job state.
//!
//! Each admitted partition runs as one future on the coordinator's context (the partition
//! driver, [`crate::partition`]): it sends typed messages to the stage actors and awaits their
//! replies; the coordinator's own state changes only in its handlers and in the completion
//! callback of that future, so no lock guards it.
//!
//! Admission: at most `max_in_flight` partitions are in the pipeline, plus up to
//! `priority_reserve` more for a job that outranks every partition in flight, so that a
//! WindowPoSt arriving behind C2 jobs is admitted at once and then overtakes them at the next
//! stage boundary (see [`crate::scheduler`]). Deadlines are checked when partitions are admitted
//! and every [`DEADLINE_TICK`]; see [`crate::deadline`].

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use blstrs::{Bls12, Scalar};
use metrics::{counter, gauge};
use proofline_groth16::{proof_to_bytes, Proof, SharedProvingKey};
use proofline_jobs::{scalar_to_hex, CircuitThunk, ParamsSpec};
use tokio::sync::oneshot;
use tracing::Instrument;

use crate::deadline::{self, LatencyModel, Remaining};
use crate::job::{now_ms, JobFailure, JobResult, JobState, JobStatus, StageTimings};
use crate::journal::{FinishedRecord, Journal};
use crate::messages::*;
use crate::partition::{drive_partition, Stages};
use crate::scheduler::Rank;
use crate::telemetry::{actor, Busy, Named, Secs};

/// How often unfinished jobs with a deadline are checked.
pub const DEADLINE_TICK: Duration = Duration::from_millis(500);

/// Coordinator limits.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Partitions admitted at once.
    pub max_in_flight: usize,
    /// Extra partitions admitted beyond `max_in_flight` for a job that outranks every partition
    /// in flight.
    pub priority_reserve: usize,
    /// Unfinished jobs at most.
    pub max_queued: usize,
    /// Finished jobs kept.
    pub retain_finished: usize,
}

struct JobEntry {
    status: JobStatus,
    seq: u64,
    params: ParamsSpec,
    pending: VecDeque<(usize, CircuitThunk)>,
    expected: Vec<Vec<Scalar>>,
    proofs: Vec<Option<Proof<Bls12>>>,
    running: HashMap<usize, (SpawnHandle, Instant)>,
    submitted: Instant,
    cancel: CancelToken,
    waiters: Vec<oneshot::Sender<JobStatus>>,
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
    journal: Option<Journal>,
    latency: LatencyModel,
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
    /// A coordinator over the stage actors.
    pub fn new(stages: Stages, limits: Limits, journal: Option<Journal>) -> Self {
        JobCoordinator {
            stages,
            limits,
            jobs: HashMap::new(),
            finished_order: VecDeque::new(),
            seq: 0,
            in_flight: 0,
            journal,
            latency: LatencyModel::default(),
        }
    }

    fn unfinished(&self) -> usize {
        self.jobs
            .values()
            .filter(|j| !j.status.state.is_terminal())
            .count()
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
                    running_elapsed: j.running.values().map(|(_, t)| t.secs()).collect(),
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
            let Some(job) = self.jobs.get_mut(&id) else {
                break;
            };
            let Some((k, thunk)) = job.pending.pop_front() else {
                break;
            };
            if job.status.state == JobState::Queued {
                job.status.state = JobState::Running;
                job.status.started_at_ms = Some(now_ms());
            }
            let queued_s = job.submitted.secs();
            let fut = drive_partition(
                self.stages.clone(),
                id.clone(),
                k,
                rank,
                job.params.clone(),
                thunk,
                job.expected[k].clone(),
                job.cancel.clone(),
            )
            .instrument(tracing::info_span!("partition", job = %id, partition = k));
            let job_id = id.clone();
            let handle = ctx.spawn(actix::fut::wrap_future::<_, Self>(fut).map(
                move |(res, mut t), act, ctx| {
                    t.queued_s = queued_s;
                    act.partition_done(&job_id, k, res, t, ctx)
                },
            ));
            if let Some(job) = self.jobs.get_mut(&id) {
                job.running.insert(k, (handle, Instant::now()));
            }
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
            for (_, (h, _)) in job.running.drain() {
                ctx.cancel_future(h);
                self.in_flight = self.in_flight.saturating_sub(1);
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
        let label = match state {
            JobState::Succeeded => "succeeded",
            JobState::Failed => "failed",
            _ => "cancelled",
        };
        counter!("proofline_jobs_finished_total", "state" => label).increment(1);
        tracing::info!(job = %id, state = label, secs = job.submitted.secs(), "job finished");
        if let Some(journal) = &self.journal {
            let record = FinishedRecord {
                status: job.status.clone(),
                result: job.result.as_deref().cloned(),
            };
            if let Err(e) = journal.finished(id, &record) {
                tracing::error!(job = %id, error = %e, "cannot journal the finished job");
            }
        }
        for w in job.waiters.drain(..) {
            let _ = w.send(job.status.clone());
        }
        self.finished_order.push_back(id.clone());
        while self.finished_order.len() > self.limits.retain_finished {
            if let Some(old) = self.finished_order.pop_front() {
                self.jobs.remove(&old);
            }
        }
    }
}

impl Actor for JobCoordinator {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
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

impl Handler<SubmitPlanned> for JobCoordinator {
    type Result = Result<JobStatus, SubmitError>;

    fn handle(&mut self, msg: SubmitPlanned, ctx: &mut Context<Self>) -> Self::Result {
        let _busy = Busy::start(Self::NAME);
        let unfinished = self.unfinished();
        if unfinished >= self.limits.max_queued {
            return Err(SubmitError::QueueFull(unfinished));
        }
        if self.jobs.contains_key(&msg.id) {
            return Err(SubmitError::Duplicate(msg.id));
        }
        let SubmitPlanned {
            id,
            request,
            plan,
            priority,
            journal,
        } = msg;
        let n = plan.partitions.len();
        let mut expected = Vec::with_capacity(n);
        let mut pending = VecDeque::with_capacity(n);
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
        if journal {
            if let Some(j) = &self.journal {
                if let Err(e) = j.accepted(&id, &request) {
                    // Accepting a job we could lose on restart would break our promise.
                    tracing::error!(job = %id, error = %e, "cannot journal the job; refusing it");
                    return Err(SubmitError::Journal {
                        id,
                        message: e.to_string(),
                    });
                }
            }
        }
        self.seq += 1;
        tracing::info!(job = %id, kind = %status.kind, label = %status.label, partitions = n, priority = status.priority, deadline_ms = ?status.deadline_ms, "job accepted");
        counter!("proofline_jobs_accepted_total").increment(1);
        self.jobs.insert(
            id.clone(),
            JobEntry {
                status: status.clone(),
                seq: self.seq,
                params: plan.params,
                pending,
                expected,
                proofs: vec![None; n],
                running: HashMap::new(),
                submitted: Instant::now(),
                cancel: CancelToken::default(),
                waiters: Vec::new(),
                result: None,
                final_check: plan.final_check,
                final_handle: None,
                pk: None,
            },
        );
        self.pump(ctx);
        Ok(self
            .jobs
            .get(&id)
            .map(|j| j.status.clone())
            .unwrap_or(status))
    }
}

impl Handler<RestoreFinished> for JobCoordinator {
    type Result = ();

    fn handle(&mut self, msg: RestoreFinished, _: &mut Context<Self>) {
        let _busy = Busy::start(Self::NAME);
        let FinishedRecord { status, result } = msg.0;
        let id = status.id.clone();
        self.seq += 1;
        self.jobs.insert(
            id.clone(),
            JobEntry {
                status,
                seq: self.seq,
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
        let _busy = Busy::start(Self::NAME);
        self.jobs.get(&msg.0).map(|j| j.status.clone())
    }
}

impl Handler<GetResult> for JobCoordinator {
    type Result = Option<(JobStatus, Option<Arc<JobResult>>)>;

    fn handle(&mut self, msg: GetResult, _: &mut Context<Self>) -> Self::Result {
        let _busy = Busy::start(Self::NAME);
        self.jobs
            .get(&msg.0)
            .map(|j| (j.status.clone(), j.result.clone()))
    }
}

impl Handler<ListJobs> for JobCoordinator {
    type Result = MessageResult<ListJobs>;

    fn handle(&mut self, _: ListJobs, _: &mut Context<Self>) -> Self::Result {
        let _busy = Busy::start(Self::NAME);
        let mut v: Vec<(u64, JobStatus)> = self
            .jobs
            .values()
            .map(|j| (j.seq, j.status.clone()))
            .collect();
        v.sort_by_key(|e| std::cmp::Reverse(e.0));
        MessageResult(v.into_iter().map(|(_, s)| s).collect())
    }
}

impl Handler<CancelJob> for JobCoordinator {
    type Result = Option<JobStatus>;

    fn handle(&mut self, msg: CancelJob, ctx: &mut Context<Self>) -> Self::Result {
        let _busy = Busy::start(Self::NAME);
        let state = self.jobs.get(&msg.0)?.status.state;
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
        self.jobs.get(&msg.0).map(|j| j.status.clone())
    }
}

impl Handler<AwaitJob> for JobCoordinator {
    type Result = ResponseFuture<Option<JobStatus>>;

    fn handle(&mut self, msg: AwaitJob, _: &mut Context<Self>) -> Self::Result {
        let _busy = Busy::start(Self::NAME);
        match self.jobs.get_mut(&msg.0) {
            None => Box::pin(async { None }),
            Some(j) if j.status.state.is_terminal() => {
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
        let _busy = Busy::start(Self::NAME);
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
