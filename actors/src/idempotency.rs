//! Which submissions repeat an earlier one: the coordinator's index of client-named jobs.
//!
//! A client names a submission with its own job id (`JobRequest::id`) or an idempotency key
//! (`JobRequest::idempotency_key`, the `Idempotency-Key` header). A named submission is recorded
//! with the digest of its request ([`proofline_jobs::request_digest`]). A later submission with
//! the same name and the same digest is the same request (a client retrying after a timeout) and
//! gets the existing job; with another digest it is refused as a conflict. Names are remembered
//! as long as their job is retained by the coordinator.

use std::collections::HashMap;

use crate::messages::JobId;

/// SHA-256 of a request.
pub type Digest = [u8; 32];

/// What a named submission is, compared with the jobs the index knows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Repeat {
    /// Nothing known under its names: a new job.
    New,
    /// The same request as this existing job.
    Same(JobId),
    /// Its names are taken by another request (or by a job whose request is not known any more).
    Conflict {
        /// The job holding the name.
        id: JobId,
        /// Why the submission cannot be the same request.
        reason: &'static str,
    },
}

#[derive(Debug)]
struct Named {
    digest: Digest,
    key: Option<String>,
}

/// The index: idempotency keys to jobs, and the request digest of every named job.
#[derive(Debug, Default)]
pub struct RepeatIndex {
    keys: HashMap<String, JobId>,
    named: HashMap<JobId, Named>,
}

impl RepeatIndex {
    /// Compares a submission named by `client_id` and/or `key` with what is known; `exists`
    /// says whether a job id is in use (jobs restored from a journal exist without a digest).
    pub fn find(
        &self,
        client_id: Option<&JobId>,
        key: Option<&str>,
        digest: &Digest,
        exists: impl Fn(&JobId) -> bool,
    ) -> Repeat {
        let by_key = key.and_then(|k| self.keys.get(k));
        let holder = match (by_key, client_id) {
            (Some(k), Some(id)) if k != id => {
                return Repeat::Conflict {
                    id: k.clone(),
                    reason: "the idempotency key belongs to a job with another id",
                }
            }
            (Some(k), _) => k,
            (None, Some(id)) if exists(id) => id,
            (None, _) => return Repeat::New,
        };
        match self.named.get(holder) {
            // The same request under its id, whatever key this attempt carries (a client that
            // names its jobs may make a fresh key per attempt).
            Some(n) if &n.digest == digest => Repeat::Same(holder.clone()),
            Some(_) => Repeat::Conflict {
                id: holder.clone(),
                reason: "a different request was submitted under this name",
            },
            None => Repeat::Conflict {
                id: holder.clone(),
                reason: "the job id is in use by a job whose request is not known (restored \
                         from the journal, or submitted without a name)",
            },
        }
    }

    /// Records a new named job.
    pub fn record(&mut self, id: &JobId, key: Option<&str>, digest: Digest) {
        if let Some(k) = key {
            self.keys.insert(k.to_string(), id.clone());
        }
        self.named.insert(
            id.clone(),
            Named {
                digest,
                key: key.map(str::to_string),
            },
        );
    }

    /// Forgets a job (evicted by the coordinator).
    pub fn forget(&mut self, id: &JobId) {
        if let Some(Named { key: Some(k), .. }) = self.named.remove(id) {
            if self.keys.get(&k) == Some(id) {
                self.keys.remove(&k);
            }
        }
    }

    /// Named jobs known.
    pub fn len(&self) -> usize {
        self.named.len()
    }

    /// Whether no named job is known.
    pub fn is_empty(&self) -> bool {
        self.named.is_empty()
    }
}

/// Whether `key` is a usable idempotency key: 1 to 255 visible ASCII characters.
pub fn valid_key(key: &str) -> bool {
    (1..=255).contains(&key.len()) && key.bytes().all(|b| b.is_ascii_graphic())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_request_same_job_other_request_conflicts() {
        let mut ix = RepeatIndex::default();
        let (a, b) = ([1u8; 32], [2u8; 32]);
        let job: JobId = "j1".into();
        let none = |_: &JobId| false;
        assert_eq!(ix.find(None, Some("k"), &a, none), Repeat::New);
        ix.record(&job, Some("k"), a);
        let exists = |id: &JobId| id == "j1" || id == "restored";
        assert_eq!(
            ix.find(None, Some("k"), &a, exists),
            Repeat::Same(job.clone())
        );
        assert!(matches!(
            ix.find(None, Some("k"), &b, exists),
            Repeat::Conflict { .. }
        ));
        // By client id.
        assert_eq!(
            ix.find(Some(&job), None, &a, exists),
            Repeat::Same(job.clone())
        );
        assert!(matches!(
            ix.find(Some(&job), None, &b, exists),
            Repeat::Conflict { .. }
        ));
        // A key pointing at another id than the one given.
        let other: JobId = "j2".into();
        assert!(matches!(
            ix.find(Some(&other), Some("k"), &a, exists),
            Repeat::Conflict { .. }
        ));
        // The same id and request under another key: the same job.
        assert_eq!(
            ix.find(Some(&job), Some("k2"), &a, exists),
            Repeat::Same(job.clone())
        );
        assert!(matches!(
            ix.find(Some(&job), Some("k2"), &b, exists),
            Repeat::Conflict { .. }
        ));
        // An id in use without a known request.
        let restored: JobId = "restored".into();
        assert!(matches!(
            ix.find(Some(&restored), None, &a, exists),
            Repeat::Conflict { .. }
        ));
        // Forgotten with its job.
        ix.forget(&job);
        assert!(ix.is_empty());
        assert_eq!(ix.find(None, Some("k"), &a, none), Repeat::New);
    }

    #[test]
    fn keys() {
        assert!(valid_key("3f9c0d2a-4b1e-7788"));
        assert!(valid_key("curio:req/42"));
        assert!(!valid_key(""));
        assert!(!valid_key("has space"));
        assert!(!valid_key(&"k".repeat(256)));
    }
}
