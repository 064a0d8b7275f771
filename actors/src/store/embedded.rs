//! The embedded store: one redb database file (`<state.dir>/jobs.redb`) on this host.
//!
//! Tables:
//!
//! | table         | key                  | value                                  |
//! |---------------|----------------------|----------------------------------------|
//! | `pending`     | job id               | the request ([`codec::encode_request`]) |
//! | `finished`    | job id               | status and result ([`codec::encode_finished`]) |
//! | `finished_at` | (finish ms, job id)  | – (the pruning order)                   |
//! | `meta`        | `"format"`           | record format of the file               |
//!
//! Every write is one redb transaction committed with immediate durability (fsync before the
//! commit returns), so a job acknowledged with 202 is on disk. A crash between commits loses
//! nothing committed: redb recovers to the last commit when it opens the file. At start the
//! whole file's page checksums are verified and every record is decoded; any failure stops the
//! start with [`StoreError::Corrupt`] naming the file, so no job is dropped silently.

use std::path::{Path, PathBuf};
use std::sync::RwLock;

use proofline_wire::{JobRequest, JobStatus};
use redb::{Database, ReadableTable, ReadableTableMetadata, TableDefinition};

use super::codec::{self, RECORD_FORMAT};
use super::{Backlog, FinishOutcome, FinishedRecord, JobStore, Retention, StoreError};
use crate::job::now_ms;

const PENDING: TableDefinition<&str, &[u8]> = TableDefinition::new("pending");
const FINISHED: TableDefinition<&str, &[u8]> = TableDefinition::new("finished");
const FINISHED_AT: TableDefinition<(u64, &str), ()> = TableDefinition::new("finished_at");
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");

/// A redb error, boxed (redb's is large).
#[derive(Debug)]
struct Db(Box<redb::Error>);

macro_rules! db_from {
    ($($t:ty),*) => {$(
        impl From<$t> for Db {
            fn from(e: $t) -> Self {
                Db(Box::new(e.into()))
            }
        }
    )*};
}
db_from!(
    redb::Error,
    redb::TransactionError,
    redb::TableError,
    redb::StorageError,
    redb::CommitError,
    redb::DatabaseError
);

/// The file name inside the state directory.
pub const FILE_NAME: &str = "jobs.redb";

/// The redb store.
pub struct EmbeddedStore {
    path: PathBuf,
    // `None` only while the database is being reopened after an I/O error.
    db: RwLock<Option<Database>>,
}

impl std::fmt::Debug for EmbeddedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedStore")
            .field("path", &self.path)
            .finish()
    }
}

/// Errors of redb, each with the file it concerns.
fn classify(path: &Path, e: impl Into<redb::Error>) -> StoreError {
    let location = path.display().to_string();
    let e: redb::Error = e.into();
    match &e {
        redb::Error::Corrupted(_) => StoreError::Corrupt {
            location,
            message: e.to_string(),
        },
        redb::Error::Io(io)
            if matches!(
                io.kind(),
                std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::InvalidData
            ) =>
        {
            StoreError::Corrupt {
                location,
                message: e.to_string(),
            }
        }
        redb::Error::DatabaseAlreadyOpen => StoreError::Unavailable {
            location,
            message: "the file is open in another process (another proofline daemon with the \
                      same state.dir?)"
                .into(),
        },
        _ => StoreError::Unavailable {
            location,
            message: e.to_string(),
        },
    }
}

fn corrupt(path: &Path, message: String) -> StoreError {
    StoreError::Corrupt {
        location: path.display().to_string(),
        message,
    }
}

fn open_db(path: &Path) -> Result<Database, StoreError> {
    // redb asserts (panics) on some truncated files instead of returning an error.
    let opened = std::panic::catch_unwind(|| Database::create(path)).map_err(|p| {
        let what = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        corrupt(path, format!("the file is truncated or damaged ({what})"))
    })?;
    let mut db = opened.map_err(|e| classify(path, e))?;
    match db.check_integrity() {
        Ok(true) => {}
        Ok(false) => {
            tracing::warn!(file = %path.display(), "job store repaired its allocator state after an unclean stop")
        }
        Err(e) => return Err(classify(path, e)),
    }
    Ok(db)
}

impl EmbeddedStore {
    /// Opens (creating) the store file, creating its directory.
    pub fn open(path: impl Into<PathBuf>) -> Result<Self, StoreError> {
        let path = path.into();
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| StoreError::Unavailable {
                location: dir.display().to_string(),
                message: format!("cannot create the state directory: {e}"),
            })?;
        }
        let db = open_db(&path)?;
        let store = EmbeddedStore {
            path,
            db: RwLock::new(Some(db)),
        };
        store.init()?;
        Ok(store)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn init(&self) -> Result<(), StoreError> {
        self.write(|w| {
            w.open_table(PENDING)?;
            w.open_table(FINISHED)?;
            w.open_table(FINISHED_AT)?;
            let mut meta = w.open_table(META)?;
            let found = meta.get("format")?.map(|v| v.value());
            match found {
                None => {
                    meta.insert("format", RECORD_FORMAT as u64)?;
                    Ok(Ok(()))
                }
                Some(f) if f == RECORD_FORMAT as u64 => Ok(Ok(())),
                Some(f) => Ok(Err(format!(
                    "the file holds record format {f}; this build reads format {RECORD_FORMAT}"
                ))),
            }
        })?
        .map_err(|m| corrupt(&self.path, m))
    }

    /// Runs `f` in a write transaction and commits it. An I/O error poisons a redb database
    /// until it is reopened; the next call reopens it, so the store recovers once the disk
    /// does.
    fn write<T>(
        &self,
        f: impl FnOnce(&redb::WriteTransaction) -> Result<T, Db>,
    ) -> Result<T, StoreError> {
        if self.db.read().map(|g| g.is_none()).unwrap_or(true) {
            self.reopen();
        }
        let r = {
            let guard = self.db.read().map_err(|_| self.poisoned())?;
            let db = guard.as_ref().ok_or_else(|| self.poisoned())?;
            (|| {
                let w = db.begin_write()?;
                let v = f(&w)?;
                w.commit()?;
                Ok::<T, Db>(v)
            })()
        };
        r.map_err(|Db(e)| {
            if matches!(*e, redb::Error::PreviousIo | redb::Error::Io(_)) {
                self.reopen();
            }
            classify(&self.path, *e)
        })
    }

    fn poisoned(&self) -> StoreError {
        StoreError::Unavailable {
            location: self.path.display().to_string(),
            message: "the database could not be reopened after an I/O error".into(),
        }
    }

    fn reopen(&self) {
        let Ok(mut guard) = self.db.write() else {
            return;
        };
        // redb allows one handle per file: close the failed one first.
        drop(guard.take());
        match Database::create(&self.path) {
            Ok(db) => *guard = Some(db),
            Err(e) => {
                tracing::error!(file = %self.path.display(), error = %e, "cannot reopen the job store")
            }
        }
    }

    fn prune_in(w: &redb::WriteTransaction, retention: &Retention) -> Result<usize, Db> {
        let mut at = w.open_table(FINISHED_AT)?;
        let mut finished = w.open_table(FINISHED)?;
        let total = at.len()? as usize;
        let excess = total.saturating_sub(retention.keep);
        let cutoff = retention.cutoff_ms(now_ms());
        let mut doomed: Vec<(u64, String)> = Vec::new();
        for (i, e) in at.iter()?.enumerate() {
            let (k, _) = e?;
            let (ms, id) = k.value();
            if i < excess || ms < cutoff {
                doomed.push((ms, id.to_string()));
            } else {
                break;
            }
        }
        for (ms, id) in &doomed {
            at.remove((*ms, id.as_str()))?;
            finished.remove(id.as_str())?;
        }
        Ok(doomed.len())
    }
}

impl JobStore for EmbeddedStore {
    fn location(&self) -> String {
        self.path.display().to_string()
    }

    fn accept(
        &self,
        id: &str,
        request: &mut JobRequest,
        _status: &JobStatus,
    ) -> Result<(), StoreError> {
        let bytes = codec::encode_request(request).map_err(|e| StoreError::Unavailable {
            location: self.location(),
            message: e.to_string(),
        })?;
        let inserted = self.write(|w| {
            let mut pending = w.open_table(PENDING)?;
            let finished = w.open_table(FINISHED)?;
            if pending.get(id)?.is_some() || finished.get(id)?.is_some() {
                return Ok(false);
            }
            pending.insert(id, bytes.as_slice())?;
            Ok(true)
        })?;
        if inserted {
            Ok(())
        } else {
            Err(StoreError::Duplicate(id.to_string()))
        }
    }

    fn finish(&self, id: &str, record: &FinishedRecord) -> Result<FinishOutcome, StoreError> {
        let bytes = codec::encode_finished(record).map_err(|e| StoreError::Unavailable {
            location: self.location(),
            message: e.to_string(),
        })?;
        let ms = record.status.finished_at_ms.unwrap_or_else(now_ms);
        self.write(|w| {
            let mut pending = w.open_table(PENDING)?;
            let mut finished = w.open_table(FINISHED)?;
            pending.remove(id)?;
            if finished.get(id)?.is_some() {
                return Ok(FinishOutcome::AlreadyFinished);
            }
            finished.insert(id, bytes.as_slice())?;
            w.open_table(FINISHED_AT)?.insert((ms, id), ())?;
            Ok(FinishOutcome::Recorded)
        })
    }

    fn forget(&self, id: &str) -> Result<(), StoreError> {
        self.write(|w| {
            w.open_table(PENDING)?.remove(id)?;
            Ok(())
        })
    }

    fn load(&self, retention: &Retention) -> Result<Backlog, StoreError> {
        let pruned = self.prune(retention)?;
        if pruned > 0 {
            tracing::info!(file = %self.path.display(), pruned, "pruned finished jobs beyond the retention");
        }
        let guard = self.db.read().map_err(|_| self.poisoned())?;
        let db = guard.as_ref().ok_or_else(|| self.poisoned())?;
        let c = |e: redb::Error| classify(&self.path, e);
        let r = db.begin_read().map_err(|e| c(e.into()))?;
        let pending_t = r.open_table(PENDING).map_err(|e| c(e.into()))?;
        let finished_t = r.open_table(FINISHED).map_err(|e| c(e.into()))?;
        let at_t = r.open_table(FINISHED_AT).map_err(|e| c(e.into()))?;
        let mut backlog = Backlog::default();
        for e in pending_t.iter().map_err(|e| c(e.into()))? {
            let (k, v) = e.map_err(|e| c(e.into()))?;
            let id = k.value().to_string();
            let req = codec::decode_request(v.value())
                .map_err(|e| corrupt(&self.path, format!("pending job {id}: {e}")))?;
            backlog.pending.push((id, req));
        }
        let mut seen = 0usize;
        for e in at_t.iter().map_err(|e| c(e.into()))? {
            let (k, _) = e.map_err(|e| c(e.into()))?;
            let (_, id) = k.value();
            let v = finished_t
                .get(id)
                .map_err(|e| c(e.into()))?
                .ok_or_else(|| {
                    corrupt(
                        &self.path,
                        format!("finished job {id} is indexed but missing"),
                    )
                })?;
            let rec = codec::decode_finished(v.value())
                .map_err(|e| corrupt(&self.path, format!("finished job {id}: {e}")))?;
            backlog.finished.push(rec);
            seen += 1;
        }
        let stored = finished_t.len().map_err(|e| c(e.into()))? as usize;
        if stored != seen {
            return Err(corrupt(
                &self.path,
                format!("{stored} finished jobs but {seen} in the finishing order"),
            ));
        }
        Ok(backlog)
    }

    fn prune(&self, retention: &Retention) -> Result<usize, StoreError> {
        self.write(|w| Self::prune_in(w, retention))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proofline_wire::{JobResult, JobState, StageTimings};
    use std::time::Duration;

    fn req(seed: u64) -> JobRequest {
        JobRequest {
            kind: "groth16".into(),
            circuit: Some("sha256-1".into()),
            input: serde_json::json!({ "seed": seed }),
            public_inputs: None,
            ..Default::default()
        }
    }

    fn status(id: &str, finished_at_ms: u64) -> JobStatus {
        JobStatus {
            id: id.into(),
            kind: "groth16".into(),
            label: "sha256-1".into(),
            state: JobState::Succeeded,
            priority: 0,
            deadline_ms: None,
            partitions: 1,
            partitions_done: 1,
            submitted_at_ms: 1,
            started_at_ms: Some(2),
            finished_at_ms: Some(finished_at_ms),
            timings: StageTimings::default(),
            partition_timings: vec![StageTimings::default()],
            error: None,
        }
    }

    fn done(id: &str, ms: u64) -> FinishedRecord {
        FinishedRecord {
            status: status(id, ms),
            result: Some(JobResult {
                proof: vec![1; 192],
                public_inputs: vec![vec!["00".into()]],
            }),
        }
    }

    const ALL: Retention = Retention {
        keep: usize::MAX,
        max_age: None,
    };

    #[test]
    fn pending_until_finished_once_and_duplicates_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        let s = EmbeddedStore::open(&path).unwrap();
        let st = status("a", 5);
        s.accept("a", &mut req(1), &st).unwrap();
        assert!(matches!(
            s.accept("a", &mut req(2), &st),
            Err(StoreError::Duplicate(_))
        ));
        let b = s.load(&ALL).unwrap();
        assert_eq!(b.pending, vec![("a".to_string(), req(1))]);
        assert!(b.finished.is_empty());
        assert_eq!(
            s.finish("a", &done("a", 5)).unwrap(),
            FinishOutcome::Recorded
        );
        assert_eq!(
            s.finish("a", &done("a", 6)).unwrap(),
            FinishOutcome::AlreadyFinished,
            "a job completes once"
        );
        drop(s);
        // Reopened: the outcome is there, the request is gone, the id is still taken.
        let s = EmbeddedStore::open(&path).unwrap();
        let b = s.load(&ALL).unwrap();
        assert!(b.pending.is_empty());
        assert_eq!(b.finished, vec![done("a", 5)]);
        assert!(matches!(
            s.accept("a", &mut req(1), &st),
            Err(StoreError::Duplicate(_))
        ));
    }

    #[test]
    fn pruning_by_count_and_by_age() {
        let dir = tempfile::tempdir().unwrap();
        let s = EmbeddedStore::open(dir.path().join(FILE_NAME)).unwrap();
        let now = now_ms();
        for (i, id) in ["old", "b", "c", "d"].iter().enumerate() {
            s.accept(id, &mut req(i as u64), &status(id, 0)).unwrap();
            let ms = if *id == "old" {
                now - 3_600_000
            } else {
                now - 10 + i as u64
            };
            s.finish(id, &done(id, ms)).unwrap();
        }
        let by_age = Retention {
            keep: 100,
            max_age: Some(Duration::from_secs(60)),
        };
        assert_eq!(s.prune(&by_age).unwrap(), 1);
        let by_count = Retention {
            keep: 2,
            max_age: None,
        };
        let b = s.load(&by_count).unwrap();
        let ids: Vec<_> = b.finished.iter().map(|r| r.status.id.as_str()).collect();
        assert_eq!(ids, ["c", "d"], "the newest are kept, oldest first");
    }

    #[test]
    fn a_truncated_or_damaged_file_is_reported_not_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        {
            let s = EmbeddedStore::open(&path).unwrap();
            for i in 0..20 {
                let id = format!("job-{i}");
                let mut r = req(i);
                r.input["pad"] = serde_json::json!("x".repeat(20_000));
                s.accept(&id, &mut r, &status(&id, 0)).unwrap();
            }
        }
        let full = std::fs::read(&path).unwrap();

        let open_err = |path: &Path| match EmbeddedStore::open(path).and_then(|s| s.load(&ALL)) {
            Ok(b) => panic!("opened, {} pending jobs", b.pending.len()),
            Err(e) => e,
        };
        std::fs::write(&path, &full[..full.len() / 2]).unwrap();
        let e = open_err(&path);
        assert!(matches!(e, StoreError::Corrupt { .. }), "{e}");
        let msg = e.to_string();
        assert!(msg.contains(&path.display().to_string()), "{msg}");
        assert!(msg.contains("move the file aside"), "{msg}");

        // Damage inside a live record (its padding), not in free space.
        let pad = "x".repeat(64);
        let at = full
            .windows(64)
            .position(|w| w == pad.as_bytes())
            .expect("a record's padding is in the file");
        let mut damaged = full.clone();
        for b in &mut damaged[at + 100..at + 116] {
            *b ^= 0x5a;
        }
        std::fs::write(&path, &damaged).unwrap();
        let e = open_err(&path);
        assert!(matches!(e, StoreError::Corrupt { .. }), "{e}");
    }
}
