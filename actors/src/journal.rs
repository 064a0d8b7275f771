//! The job journal: accepted requests and finished outcomes on disk, so that an accepted job is
//! never lost silently. After a restart, requests without an outcome are planned and run again
//! under the same id, and finished results are served as before.
//!
//! Layout (one directory): `<id>.request.json` written atomically when a job is accepted;
//! `<id>.done.json` written when it reaches a terminal state, after which the request file is
//! removed (a C1 output is ~50 MB).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use proofline_jobs::JobRequest;
use serde::{Deserialize, Serialize};

use crate::job::{JobResult, JobStatus};

/// A finished job as journaled.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct FinishedRecord {
    /// Final status.
    pub status: JobStatus,
    /// Result of a successful job.
    pub result: Option<JobResult>,
}

/// What a journal holds at start-up.
#[derive(Debug, Default)]
pub struct Backlog {
    /// Jobs that ended.
    pub finished: Vec<FinishedRecord>,
    /// Jobs accepted but not ended: `(id, request)`, oldest first.
    pub pending: Vec<(String, JobRequest)>,
}

/// The journal directory.
#[derive(Clone, Debug)]
pub struct Journal {
    dir: PathBuf,
}

fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = path.with_extension("tmp");
    fs::write(&tmp, bytes)?;
    fs::File::open(&tmp)?.sync_all()?;
    fs::rename(&tmp, path)
}

/// Whether `id` is a usable job id (letters, digits and '-'); ids name journal files.
pub fn valid_id(id: &str) -> bool {
    !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}

impl Journal {
    /// Opens (creating) the journal directory.
    pub fn open(dir: impl Into<PathBuf>) -> io::Result<Self> {
        let dir = dir.into();
        fs::create_dir_all(&dir)?;
        Ok(Journal { dir })
    }

    fn path(&self, id: &str, suffix: &str) -> io::Result<PathBuf> {
        if !valid_id(id) {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "bad job id"));
        }
        Ok(self.dir.join(format!("{id}.{suffix}.json")))
    }

    /// Records an accepted job.
    pub fn accepted(&self, id: &str, request: &JobRequest) -> io::Result<()> {
        let bytes = serde_json::to_vec(request).map_err(io::Error::other)?;
        write_atomic(&self.path(id, "request")?, &bytes)
    }

    /// Records a finished job and drops its request.
    pub fn finished(&self, id: &str, record: &FinishedRecord) -> io::Result<()> {
        let bytes = serde_json::to_vec(record).map_err(io::Error::other)?;
        write_atomic(&self.path(id, "done")?, &bytes)?;
        match fs::remove_file(self.path(id, "request")?) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    /// Finished records, and requests that never finished (to run again).
    pub fn load(&self) -> io::Result<Backlog> {
        let mut done = Vec::new();
        let mut pending = Vec::new();
        let mut entries: Vec<_> = fs::read_dir(&self.dir)?.collect::<Result<_, _>>()?;
        entries.sort_by_key(|e| e.metadata().and_then(|m| m.modified()).ok());
        for e in entries {
            let name = e.file_name().to_string_lossy().to_string();
            if let Some(id) = name.strip_suffix(".done.json") {
                match serde_json::from_slice::<FinishedRecord>(&fs::read(e.path())?) {
                    Ok(r) => done.push(r),
                    Err(err) => {
                        tracing::warn!(job = id, error = %err, "unreadable journal record skipped")
                    }
                }
            } else if let Some(id) = name.strip_suffix(".request.json") {
                if self.path(id, "done")?.exists() {
                    continue;
                }
                match serde_json::from_slice::<JobRequest>(&fs::read(e.path())?) {
                    Ok(r) => pending.push((id.to_string(), r)),
                    Err(err) => {
                        tracing::warn!(job = id, error = %err, "unreadable journaled request skipped")
                    }
                }
            }
        }
        Ok(Backlog {
            finished: done,
            pending,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::{JobState, StageTimings};

    #[test]
    fn pending_until_finished() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::open(dir.path()).unwrap();
        let req = JobRequest {
            kind: "groth16".into(),
            circuit: Some("sha256-1".into()),
            input: serde_json::json!({"seed": 1}),
            public_inputs: None,
            priority: Some(3),
            deadline: Some(1_796_000_000_000),
        };
        j.accepted("abc", &req).unwrap();
        let b = j.load().unwrap();
        assert!(b.finished.is_empty());
        assert_eq!(b.pending, vec![("abc".to_string(), req.clone())]);
        let status = JobStatus {
            id: "abc".into(),
            kind: "groth16".into(),
            label: "sha256-1".into(),
            state: JobState::Succeeded,
            priority: 3,
            deadline_ms: Some(1_796_000_000_000),
            partitions: 1,
            partitions_done: 1,
            submitted_at_ms: 1,
            started_at_ms: Some(2),
            finished_at_ms: Some(3),
            timings: StageTimings::default(),
            partition_timings: vec![StageTimings::default()],
            error: None,
        };
        let rec = FinishedRecord {
            status,
            result: Some(JobResult {
                proof: vec![7; 192],
                public_inputs: vec![vec!["00".into()]],
            }),
        };
        j.finished("abc", &rec).unwrap();
        let b = j.load().unwrap();
        assert!(b.pending.is_empty());
        assert_eq!(b.finished, vec![rec]);
        assert!(j.accepted("../x", &req).is_err());
    }
}
