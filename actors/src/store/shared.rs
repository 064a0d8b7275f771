//! The shared queue: one PostgreSQL table that several daemons (on one host or many) take jobs
//! from, when `queue.postgres_url` is set.
//!
//! * A submission on any daemon is planned there (so a bad request gets its 4xx at once) and
//!   inserted as `queued`; that daemon does not run it unless it claims it.
//! * Each daemon claims jobs while it has room: `SELECT … FOR UPDATE SKIP LOCKED` picks the
//!   best-ranked job that is queued or whose claim expired, in the coordinator's order: the
//!   effective priority (the request's, else its kind's default), then the earliest deadline
//!   (none last), then the oldest; the claim sets the holder, a lease expiry and a new epoch.
//! * The holder renews its leases every third of the lease (with a status snapshot, so any
//!   daemon can show progress). A daemon that dies stops renewing; once the lease expires,
//!   another daemon claims the job (epoch + 1) and runs it from the start.
//! * An outcome is written only by an UPDATE conditioned on holder *and* epoch *and* state
//!   `running`: a daemon that lost its claim cannot complete the job, so a job completes
//!   exactly once (`completions` counts it). A renewal that finds the claim gone makes the
//!   daemon drop its local copy.
//! * Statuses, results, lists and cancellations work from any daemon.
//!
//! The queries are blocking (the `postgres` client); they run on the claimer's thread, the
//! store writer's thread, or a short-lived thread per query from the pipeline's API.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use postgres::{Client, NoTls};
use proofline_wire::{JobFailure, JobId, JobRequest, JobResult, JobState, JobStatus};

use super::codec;
use super::{Backlog, FinishOutcome, FinishedRecord, JobStore, Retention, StoreError};
use crate::job::now_ms;

/// How to reach and use the shared queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharedSpec {
    /// `postgres://user:password@host:port/database` (or key=value form).
    pub url: String,
    /// How long a claim lasts without renewal.
    pub lease: Duration,
    /// This daemon's holder name in claims.
    pub holder: String,
    /// Jobs this daemon holds claims on at most.
    pub max_claimed: usize,
    /// How often to look for claimable jobs when idle.
    pub poll: Duration,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS proofline_jobs (
    id              text PRIMARY KEY,
    request         bytea,
    priority        integer NOT NULL,
    deadline_ms     bigint,
    submitted_at_ms bigint NOT NULL,
    state           text NOT NULL,
    holder          text,
    lease_until     timestamptz,
    epoch           bigint NOT NULL DEFAULT 0,
    claims          integer NOT NULL DEFAULT 0,
    completions     integer NOT NULL DEFAULT 0,
    status          bytea NOT NULL,
    result          bytea,
    finished_at_ms  bigint
);
-- Tables made before jobs had deadlines gain the column; their index gives way to the rank one.
ALTER TABLE proofline_jobs ADD COLUMN IF NOT EXISTS deadline_ms bigint;
DROP INDEX IF EXISTS proofline_jobs_open;
CREATE INDEX IF NOT EXISTS proofline_jobs_open_rank
    ON proofline_jobs (priority DESC, deadline_ms ASC NULLS LAST, submitted_at_ms)
    WHERE state IN ('queued', 'running');
CREATE INDEX IF NOT EXISTS proofline_jobs_finished
    ON proofline_jobs (finished_at_ms) WHERE finished_at_ms IS NOT NULL;
";

/// Serialises schema creation between daemons starting together.
const SCHEMA_LOCK: i64 = 0x7072_6f6f_666c_696e;

fn state_name(s: JobState) -> &'static str {
    match s {
        JobState::Queued => "queued",
        JobState::Running => "running",
        JobState::Succeeded => "succeeded",
        JobState::Failed => "failed",
        JobState::Cancelled => "cancelled",
    }
}

fn state_of(s: &str) -> JobState {
    match s {
        "queued" => JobState::Queued,
        "running" => JobState::Running,
        "succeeded" => JobState::Succeeded,
        "failed" => JobState::Failed,
        _ => JobState::Cancelled,
    }
}

/// The shared queue.
pub struct SharedQueue {
    spec: SharedSpec,
    location: String,
    /// Submissions, outcomes, cancellations, pruning.
    writes: Mutex<Client>,
    /// Claims and renewals (the claimer's thread).
    claims: Mutex<Client>,
    /// Statuses, results, lists.
    reads: Mutex<Client>,
    /// Claims this daemon holds: job id → epoch.
    held: Mutex<HashMap<JobId, i64>>,
}

impl std::fmt::Debug for SharedQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedQueue")
            .field("location", &self.location)
            .field("holder", &self.spec.holder)
            .finish()
    }
}

/// The URL without its password, for logs.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let creds = &url[s + 3..at];
            let user = creds.split(':').next().unwrap_or("");
            format!("{}{}@{}", &url[..s + 3], user, &url[at + 1..])
        }
        _ => url.to_string(),
    }
}

impl SharedQueue {
    /// Connects (three connections) and creates the table if needed.
    pub fn connect(spec: SharedSpec) -> Result<Self, StoreError> {
        let location = format!("postgres {}", redact(&spec.url));
        let connect = || {
            Client::connect(&spec.url, NoTls).map_err(|e| StoreError::Unavailable {
                location: location.clone(),
                message: e.to_string(),
            })
        };
        let mut writes = connect()?;
        let unavailable = |e: postgres::Error| StoreError::Unavailable {
            location: location.clone(),
            message: e.to_string(),
        };
        writes
            .execute("SELECT pg_advisory_lock($1)", &[&SCHEMA_LOCK])
            .map_err(unavailable)?;
        let created = writes.batch_execute(SCHEMA).map_err(unavailable);
        writes
            .execute("SELECT pg_advisory_unlock($1)", &[&SCHEMA_LOCK])
            .map_err(unavailable)?;
        created?;
        Ok(SharedQueue {
            claims: Mutex::new(connect()?),
            reads: Mutex::new(connect()?),
            writes: Mutex::new(writes),
            held: Mutex::new(HashMap::new()),
            location,
            spec,
        })
    }

    /// The settings.
    pub fn spec(&self) -> &SharedSpec {
        &self.spec
    }

    fn unavailable(&self, e: impl std::fmt::Display) -> StoreError {
        StoreError::Unavailable {
            location: self.location.clone(),
            message: e.to_string(),
        }
    }

    /// Runs `f` on one connection, reconnecting first if the connection was closed (the
    /// server restarted).
    fn with<T>(
        &self,
        conn: &Mutex<Client>,
        f: impl FnOnce(&mut Client) -> Result<T, postgres::Error>,
    ) -> Result<T, StoreError> {
        let mut c = conn
            .lock()
            .map_err(|_| self.unavailable("connection lock poisoned"))?;
        if c.is_closed() {
            *c = Client::connect(&self.spec.url, NoTls).map_err(|e| self.unavailable(e))?;
        }
        f(&mut c).map_err(|e| self.unavailable(e))
    }

    fn held_epoch(&self, id: &str) -> Option<i64> {
        self.held.lock().ok().and_then(|h| h.get(id).copied())
    }

    /// Jobs this daemon holds claims on.
    pub fn held(&self) -> Vec<JobId> {
        self.held
            .lock()
            .map(|h| h.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// Claims the best claimable job: queued, or running under an expired lease. Returns its
    /// id and request.
    pub fn claim(&self) -> Result<Option<(JobId, JobRequest)>, StoreError> {
        let lease_s = self.spec.lease.as_secs_f64();
        let row = self.with(&self.claims, |c| {
            c.query_opt(
                "WITH next AS (
                     SELECT id FROM proofline_jobs
                     WHERE state IN ('queued', 'running')
                       AND (holder IS NULL OR lease_until < now())
                     ORDER BY priority DESC, deadline_ms ASC NULLS LAST, submitted_at_ms
                     LIMIT 1
                     FOR UPDATE SKIP LOCKED)
                 UPDATE proofline_jobs j
                 SET holder = $1, lease_until = now() + make_interval(secs => $2),
                     epoch = j.epoch + 1, claims = j.claims + 1, state = 'running'
                 FROM next WHERE j.id = next.id
                 RETURNING j.id, j.request, j.epoch, j.claims",
                &[&self.spec.holder, &lease_s],
            )
        })?;
        let Some(row) = row else { return Ok(None) };
        let id: String = row.get(0);
        let bytes: Option<Vec<u8>> = row.get(1);
        let epoch: i64 = row.get(2);
        let claims: i32 = row.get(3);
        if let Ok(mut h) = self.held.lock() {
            h.insert(id.clone(), epoch);
        }
        if claims > 1 {
            tracing::warn!(job = %id, claims, "took over a job whose previous holder stopped renewing its claim");
        }
        let request = bytes
            .ok_or_else(|| "the job has no stored request".to_string())
            .and_then(|b| codec::decode_request(&b).map_err(|e| e.to_string()));
        match request {
            Ok(r) => Ok(Some((id, r))),
            Err(message) => {
                // Unusable request: fail the job here, visibly, rather than claim it forever.
                let failed = self.failed_status(&id, "store_corrupt", &message);
                let rec = FinishedRecord {
                    status: failed,
                    result: None,
                };
                self.finish(&id, &rec)?;
                tracing::error!(job = %id, %message, "claimed job's request is unreadable; job failed");
                Ok(None)
            }
        }
    }

    /// A failed status for a job known only by its row.
    pub fn failed_status(&self, id: &str, code: &str, message: &str) -> JobStatus {
        let mut s = self
            .status(id)
            .ok()
            .flatten()
            .unwrap_or_else(|| crate::job::queued_status(id, "?", "?", 0, None, 0));
        s.state = JobState::Failed;
        s.finished_at_ms = Some(now_ms());
        s.error = Some(JobFailure {
            code: code.into(),
            message: message.into(),
            partition: None,
        });
        s
    }

    /// Renews the leases of every held claim, storing the given status snapshots. Returns
    /// the jobs whose claim is gone (expired and taken, or cancelled elsewhere).
    pub fn renew(&self, snapshots: &HashMap<JobId, JobStatus>) -> Result<Vec<JobId>, StoreError> {
        let held: Vec<(JobId, i64)> = self
            .held
            .lock()
            .map(|h| h.iter().map(|(k, v)| (k.clone(), *v)).collect())
            .unwrap_or_default();
        let lease_s = self.spec.lease.as_secs_f64();
        let mut lost = Vec::new();
        for (id, epoch) in held {
            let snapshot = match snapshots.get(&id) {
                Some(s) => Some(codec::encode_status(s).map_err(|e| self.unavailable(e))?),
                None => None,
            };
            let n = self.with(&self.claims, |c| {
                c.execute(
                    "UPDATE proofline_jobs
                     SET lease_until = now() + make_interval(secs => $4),
                         status = COALESCE($5, status)
                     WHERE id = $1 AND holder = $2 AND epoch = $3 AND state = 'running'",
                    &[&id, &self.spec.holder, &epoch, &lease_s, &snapshot],
                )
            })?;
            if n == 0 {
                if let Ok(mut h) = self.held.lock() {
                    h.remove(&id);
                }
                lost.push(id);
            }
        }
        Ok(lost)
    }

    /// Gives back the claim of one job: it is queued again at once, for any daemon.
    pub fn release(&self, id: &str) -> Result<bool, StoreError> {
        let Some(epoch) = self.held.lock().ok().and_then(|mut h| h.remove(id)) else {
            return Ok(false);
        };
        let n = self.with(&self.writes, |c| {
            c.execute(
                "UPDATE proofline_jobs SET state = 'queued', holder = NULL, lease_until = NULL
                 WHERE id = $1 AND holder = $2 AND epoch = $3 AND state = 'running'",
                &[&id, &self.spec.holder, &epoch],
            )
        })?;
        Ok(n == 1)
    }

    /// Gives back every held claim (a draining daemon): the jobs are queued again at once.
    pub fn release_all(&self) -> Result<usize, StoreError> {
        let mut n = 0;
        for id in self.held() {
            n += usize::from(self.release(&id)?);
        }
        Ok(n)
    }

    fn status_of_row(row: &postgres::Row) -> Result<JobStatus, String> {
        let state: String = row.get("state");
        let bytes: Vec<u8> = row.get("status");
        let mut s = codec::decode_status(&bytes).map_err(|e| e.to_string())?;
        let state = state_of(&state);
        // The row's state is the truth; the snapshot may be a renewal behind.
        if !(s.state.is_terminal() && state.is_terminal()) {
            s.state = state;
        }
        Ok(s)
    }

    /// A job's status as the queue knows it.
    pub fn status(&self, id: &str) -> Result<Option<JobStatus>, StoreError> {
        let row = self.with(&self.reads, |c| {
            c.query_opt(
                "SELECT state, status FROM proofline_jobs WHERE id = $1",
                &[&id],
            )
        })?;
        row.map(|r| Self::status_of_row(&r).map_err(|e| self.unavailable(e)))
            .transpose()
    }

    /// A job's status and, when it succeeded, its result.
    pub fn result(&self, id: &str) -> Result<Option<(JobStatus, Option<JobResult>)>, StoreError> {
        let row = self.with(&self.reads, |c| {
            c.query_opt(
                "SELECT state, status, result FROM proofline_jobs WHERE id = $1",
                &[&id],
            )
        })?;
        let Some(row) = row else { return Ok(None) };
        let status = Self::status_of_row(&row).map_err(|e| self.unavailable(e))?;
        let result: Option<Vec<u8>> = row.get("result");
        let result = result
            .map(|b| codec::decode_result(&b).map_err(|e| self.unavailable(e)))
            .transpose()?;
        Ok(Some((status, result)))
    }

    /// The newest `limit` jobs.
    pub fn list(&self, limit: usize) -> Result<Vec<JobStatus>, StoreError> {
        let limit = limit.min(i64::MAX as usize) as i64;
        let rows = self.with(&self.reads, |c| {
            c.query(
                "SELECT state, status FROM proofline_jobs ORDER BY submitted_at_ms DESC, id LIMIT $1",
                &[&limit],
            )
        })?;
        rows.iter()
            .map(|r| Self::status_of_row(r).map_err(|e| self.unavailable(e)))
            .collect()
    }

    /// Cancels a queued or running job from any daemon. Its holder, if any, finds its claim
    /// gone at the next renewal and drops the job. Returns the status (unchanged when the job
    /// had already ended), `None` for an unknown id.
    pub fn cancel(&self, id: &str) -> Result<Option<JobStatus>, StoreError> {
        let Some(mut s) = self.status(id)? else {
            return Ok(None);
        };
        if s.state.is_terminal() {
            return Ok(Some(s));
        }
        s.state = JobState::Cancelled;
        s.finished_at_ms = Some(now_ms());
        s.error = Some(JobFailure {
            code: "cancelled".into(),
            message: "cancelled by a client".into(),
            partition: None,
        });
        let bytes = codec::encode_status(&s).map_err(|e| self.unavailable(e))?;
        let finished = s.finished_at_ms.map(|t| t as i64);
        let n = self.with(&self.writes, |c| {
            c.execute(
                "UPDATE proofline_jobs
                 SET state = 'cancelled', status = $2, request = NULL, holder = NULL,
                     lease_until = NULL, finished_at_ms = $3
                 WHERE id = $1 AND state IN ('queued', 'running')",
                &[&id, &bytes, &finished],
            )
        })?;
        if n == 0 {
            // It ended meanwhile.
            return self.status(id);
        }
        Ok(Some(s))
    }

    /// How many times a job was claimed and completed (tests and operations).
    pub fn counters(&self, id: &str) -> Result<Option<(i32, i32)>, StoreError> {
        let row = self.with(&self.reads, |c| {
            c.query_opt(
                "SELECT claims, completions FROM proofline_jobs WHERE id = $1",
                &[&id],
            )
        })?;
        Ok(row.map(|r| (r.get(0), r.get(1))))
    }
}

impl JobStore for SharedQueue {
    fn location(&self) -> String {
        self.location.clone()
    }

    fn accept(
        &self,
        id: &str,
        request: &mut JobRequest,
        status: &JobStatus,
    ) -> Result<(), StoreError> {
        let bytes = codec::encode_request(request).map_err(|e| self.unavailable(e))?;
        let snapshot = codec::encode_status(status).map_err(|e| self.unavailable(e))?;
        let n = self.with(&self.writes, |c| {
            c.execute(
                "INSERT INTO proofline_jobs
                     (id, request, priority, deadline_ms, submitted_at_ms, state, status)
                 VALUES ($1, $2, $3, $4, $5, 'queued', $6) ON CONFLICT (id) DO NOTHING",
                &[
                    &id,
                    &bytes,
                    // The effective priority: the status carries the kind's default when the
                    // request gives none.
                    &status.priority,
                    &status.deadline_ms.map(|d| d.min(i64::MAX as u64) as i64),
                    &(status.submitted_at_ms as i64),
                    &snapshot,
                ],
            )
        })?;
        if n == 0 {
            return Err(StoreError::Duplicate(id.to_string()));
        }
        Ok(())
    }

    fn finish(&self, id: &str, record: &FinishedRecord) -> Result<FinishOutcome, StoreError> {
        let Some(epoch) = self.held_epoch(id) else {
            return Ok(FinishOutcome::ClaimLost);
        };
        let status = codec::encode_status(&record.status).map_err(|e| self.unavailable(e))?;
        let result = record
            .result
            .as_ref()
            .map(codec::encode_result)
            .transpose()
            .map_err(|e| self.unavailable(e))?;
        let finished = record.status.finished_at_ms.unwrap_or_else(now_ms) as i64;
        let state = state_name(record.status.state);
        let n = self.with(&self.writes, |c| {
            c.execute(
                "UPDATE proofline_jobs
                 SET state = $4, status = $5, result = $6, request = NULL, holder = NULL,
                     lease_until = NULL, finished_at_ms = $7, completions = completions + 1
                 WHERE id = $1 AND holder = $2 AND epoch = $3 AND state = 'running'",
                &[
                    &id,
                    &self.spec.holder,
                    &epoch,
                    &state,
                    &status,
                    &result,
                    &finished,
                ],
            )
        })?;
        if let Ok(mut h) = self.held.lock() {
            h.remove(id);
        }
        Ok(if n == 1 {
            FinishOutcome::Recorded
        } else {
            FinishOutcome::ClaimLost
        })
    }

    fn forget(&self, id: &str) -> Result<(), StoreError> {
        self.with(&self.writes, |c| {
            c.execute(
                "DELETE FROM proofline_jobs WHERE id = $1 AND state = 'queued' AND holder IS NULL",
                &[&id],
            )
        })?;
        Ok(())
    }

    fn load(&self, retention: &Retention) -> Result<Backlog, StoreError> {
        // Jobs in the queue are claimed, not replayed: nothing to restore locally.
        self.prune(retention)?;
        Ok(Backlog::default())
    }

    fn prune(&self, retention: &Retention) -> Result<usize, StoreError> {
        let keep = retention.keep.min(i64::MAX as usize) as i64;
        let cutoff = retention.cutoff_ms(now_ms()) as i64;
        let n = self.with(&self.writes, |c| {
            c.execute(
                "DELETE FROM proofline_jobs WHERE finished_at_ms IS NOT NULL AND (
                     finished_at_ms < $2 OR id NOT IN (
                         SELECT id FROM proofline_jobs WHERE finished_at_ms IS NOT NULL
                         ORDER BY finished_at_ms DESC LIMIT $1))",
                &[&keep, &cutoff],
            )
        })?;
        Ok(n as usize)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn passwords_are_not_logged() {
        assert_eq!(
            super::redact("postgres://u:secret@h:5432/db"),
            "postgres://u@h:5432/db"
        );
        assert_eq!(super::redact("host=/tmp dbname=x"), "host=/tmp dbname=x");
    }
}
