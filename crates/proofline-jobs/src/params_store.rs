//! The resident parameter store: each parameter file is read once, checked, and shared by every
//! partition of every job that needs it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use proofline_groth16::{ProvingKey, SharedProvingKey};

use crate::JobError;

/// An extra check of a parameter file before it is used (e.g. a published digest).
pub trait ParamsCheck: Send + Sync {
    /// `Err(reason)` when the file must not be used.
    fn check(&self, path: &Path) -> Result<(), String>;
}

/// Where a parameter set lives and how to check it.
#[derive(Clone)]
pub struct ParamsSpec {
    /// Cache key (usually the file name).
    pub id: String,
    /// The `.params` file, bellperson format.
    pub path: PathBuf,
    /// Optional check run once before the first load.
    pub check: Option<Arc<dyn ParamsCheck>>,
    /// How an operator obtains the file, for error messages.
    pub hint: String,
}

impl std::fmt::Debug for ParamsSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParamsSpec")
            .field("id", &self.id)
            .field("path", &self.path)
            .field("checked", &self.check.is_some())
            .finish()
    }
}

impl ParamsSpec {
    /// `Err(ParamsMissing)` when the file does not exist.
    pub fn require_present(&self, what: &str) -> Result<(), JobError> {
        if self.path.is_file() {
            Ok(())
        } else {
            Err(JobError::ParamsMissing {
                what: what.to_string(),
                path: self.path.clone(),
                hint: self.hint.clone(),
            })
        }
    }
}

/// Receives `(label, total_bytes)` when a load starts; returns a callback fed the bytes read.
pub type ProgressFactory = Arc<dyn Fn(&str, u64) -> Box<dyn FnMut(u64)> + Send + Sync>;

/// A resident parameter set and how long its load took (`None`: put in the store directly).
struct Loaded {
    pk: SharedProvingKey,
    load_s: Option<f64>,
}

type Slot = Arc<Mutex<Option<Loaded>>>;

/// A resident parameter set, as [`ParamsStore::resident`] reports it.
#[derive(Clone, Debug, PartialEq)]
pub struct Resident {
    /// The set's id.
    pub id: String,
    /// Bytes held in host memory.
    pub bytes: usize,
    /// Seconds its load took (check included); `None` for sets inserted directly.
    pub load_s: Option<f64>,
}

/// Loads parameter sets once and keeps them resident.
pub struct ParamsStore {
    check_points: bool,
    slots: Mutex<HashMap<String, Slot>>,
    progress: Option<ProgressFactory>,
}

impl std::fmt::Debug for ParamsStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParamsStore")
            .field("check_points", &self.check_points)
            .finish()
    }
}

impl ParamsStore {
    /// A store; `check_points` verifies every point of a file on load (slow, thorough).
    pub fn new(check_points: bool) -> Self {
        ParamsStore {
            check_points,
            slots: Mutex::new(HashMap::new()),
            progress: None,
        }
    }

    /// Reports load progress through `factory` (the binary shows a progress bar).
    pub fn with_progress(mut self, factory: ProgressFactory) -> Self {
        self.progress = Some(factory);
        self
    }

    fn slot(&self, id: &str) -> Slot {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        slots.entry(id.to_string()).or_default().clone()
    }

    /// The resident parameters of `spec`, loading them on first use. Blocking: call from a
    /// worker thread. Concurrent callers of the same set wait for one load; a failed load is
    /// not remembered, so a repaired file is picked up by the next job.
    pub fn get(&self, spec: &ParamsSpec) -> Result<SharedProvingKey, JobError> {
        let slot = self.slot(&spec.id);
        let mut guard = slot.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(loaded) = guard.as_ref() {
            return Ok(loaded.pk.clone());
        }
        spec.require_present(&spec.id)?;
        let started = Instant::now();
        let invalid = |message: String| JobError::ParamsInvalid {
            path: spec.path.clone(),
            message,
        };
        if let Some(check) = &spec.check {
            let t = Instant::now();
            check.check(&spec.path).map_err(invalid)?;
            tracing::info!(params = %spec.id, secs = t.elapsed().as_secs_f64(), "parameter check passed");
        }
        let total = std::fs::metadata(&spec.path)
            .map(|m| m.len())
            .map_err(|e| invalid(e.to_string()))?;
        let mut progress: Box<dyn FnMut(u64)> = match &self.progress {
            Some(f) => f(&spec.id, total),
            None => Box::new(|_| {}),
        };
        let t = Instant::now();
        let pk = ProvingKey::read_file(&spec.path, self.check_points, &mut *progress)
            .map_err(|e| invalid(format!("cannot read parameters: {e}")))?;
        tracing::info!(
            params = %spec.id,
            path = %spec.path.display(),
            bytes = total,
            secs = t.elapsed().as_secs_f64(),
            shape = ?pk.shape(),
            "parameters loaded and resident"
        );
        let pk = Arc::new(pk);
        *guard = Some(Loaded {
            pk: pk.clone(),
            load_s: Some(started.elapsed().as_secs_f64()),
        });
        Ok(pk)
    }

    /// Puts already-built parameters in the store (tests, embedding).
    pub fn insert(&self, id: &str, pk: SharedProvingKey) {
        let slot = self.slot(id);
        *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(Loaded { pk, load_s: None });
    }

    /// Resident parameter sets, their sizes and load times, by id. A set being loaded right now
    /// is not listed (its slot is locked by the load), so the call never waits for a load.
    pub fn resident(&self) -> Vec<Resident> {
        let slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        let mut v: Vec<Resident> = slots
            .iter()
            .filter_map(|(id, s)| {
                let g = s.try_lock().ok()?;
                g.as_ref().map(|l| Resident {
                    id: id.clone(),
                    bytes: l.pk.resident_bytes(),
                    load_s: l.load_s,
                })
            })
            .collect();
        v.sort_by(|a, b| a.id.cmp(&b.id));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Reject;
    impl ParamsCheck for Reject {
        fn check(&self, _: &Path) -> Result<(), String> {
            Err("digest mismatch".into())
        }
    }

    fn spec(path: PathBuf, check: Option<Arc<dyn ParamsCheck>>) -> ParamsSpec {
        ParamsSpec {
            id: "t".into(),
            path,
            check,
            hint: "run setup".into(),
        }
    }

    #[test]
    fn missing_truncated_and_rejected_files_are_clear_errors() {
        let dir = tempfile::tempdir().unwrap();
        let store = ParamsStore::new(false);
        let missing = store
            .get(&spec(dir.path().join("nope.params"), None))
            .unwrap_err();
        assert_eq!(missing.code(), "params_missing");
        assert!(missing.to_string().contains("run setup"));

        let truncated = dir.path().join("t.params");
        std::fs::write(&truncated, [1u8; 100]).unwrap();
        let e = store.get(&spec(truncated.clone(), None)).unwrap_err();
        assert_eq!(e.code(), "params_invalid", "{e}");

        let e = store
            .get(&spec(truncated, Some(Arc::new(Reject))))
            .unwrap_err();
        assert!(e.to_string().contains("digest mismatch"));
        assert!(store.resident().is_empty());
    }
}
