//! The resident store of recorded constraint systems (pre-compiled A, B, C matrices), one per
//! parameter set.
//!
//! A parameter set and a circuit shape go together, so a recorded system is found by its
//! parameter file: `<stem>.r1cs` beside the `.params` file (or in a configured directory), with
//! the parameter file's name as its key. Like parameters, a system is read once, on first use,
//! checked (digest, key, and its query lengths against the parameters), and stays resident,
//! shared by every partition.
//!
//! A missing file never fails a job: the first partition of a shape whose file is missing (or
//! unusable: corrupt, another shape's, from an older format) gets a [`RecordTicket`] and records
//! the system from its own synthesis; the system becomes resident as soon as that partition is
//! done and is written to disk in the background for the next start. Partitions of the same shape
//! that arrive while it records use plain synthesis. A recording that fails leaves the slot
//! empty, so the next partition tries again.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use proofline_groth16::{prover, ParamsShape, RecordedSystem};

use crate::ParamsSpec;

/// How partitions are synthesized.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SynthesisMode {
    /// Witness generation plus the products of recorded matrices; shapes without a recording
    /// are recorded by their first partition.
    Precompiled,
    /// Every constraint evaluated for every partition (no files read or written).
    Plain,
}

/// What a partition's synthesis should do.
pub enum Precompiled {
    /// Use this recorded system.
    Ready(Arc<RecordedSystem>),
    /// Record the system from this partition's synthesis and hand it to the ticket.
    Record(RecordTicket),
    /// Synthesize plainly.
    Plain(PlainReason),
}

/// Why a partition is synthesized plainly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlainReason {
    /// The store is in [`SynthesisMode::Plain`].
    ModePlain,
    /// Another partition is recording this shape now.
    BeingRecorded,
    /// The shape's recorded system was withdrawn after it failed to fit a circuit.
    Disabled,
}

#[derive(Default)]
enum Slot {
    #[default]
    Unknown,
    Resident(Arc<RecordedSystem>),
    Recording,
    Disabled,
}

type SlotRef = Arc<Mutex<Slot>>;

/// Recorded systems by parameter set, loaded once and resident.
pub struct ConstraintsStore {
    mode: SynthesisMode,
    dir: Option<PathBuf>,
    slots: Mutex<HashMap<String, SlotRef>>,
}

impl std::fmt::Debug for ConstraintsStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConstraintsStore")
            .field("mode", &self.mode)
            .field("dir", &self.dir)
            .finish()
    }
}

/// The file name of the recorded system of a parameter file: its stem plus `.r1cs`.
pub fn constraints_file_name(params: &Path) -> String {
    let stem = params
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "params".into());
    format!("{stem}.r1cs")
}

impl ConstraintsStore {
    /// A store in `mode`; files live in `dir`, or beside each parameter file when `None`.
    pub fn new(mode: SynthesisMode, dir: Option<PathBuf>) -> Self {
        ConstraintsStore {
            mode,
            dir,
            slots: Mutex::new(HashMap::new()),
        }
    }

    /// The mode.
    pub fn mode(&self) -> SynthesisMode {
        self.mode
    }

    /// Where the recorded system of `spec` is read from and written to.
    pub fn path_for(&self, spec: &ParamsSpec) -> PathBuf {
        let dir = match &self.dir {
            Some(d) => d.clone(),
            None => spec
                .path
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| PathBuf::from(".")),
        };
        dir.join(constraints_file_name(&spec.path))
    }

    fn slot(&self, id: &str) -> SlotRef {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        slots.entry(id.to_string()).or_default().clone()
    }

    /// What the next partition of `spec`'s shape does (see the module docs). Blocking when it
    /// reads the file: call from a synthesis thread. `shape` is the parameters' shape, which a
    /// recorded system must fit.
    pub fn lookup(&self, spec: &ParamsSpec, shape: &ParamsShape) -> Precompiled {
        if self.mode == SynthesisMode::Plain {
            return Precompiled::Plain(PlainReason::ModePlain);
        }
        let slot = self.slot(&spec.id);
        let mut guard = slot.lock().unwrap_or_else(|e| e.into_inner());
        match &*guard {
            Slot::Resident(sys) => return Precompiled::Ready(sys.clone()),
            Slot::Recording => return Precompiled::Plain(PlainReason::BeingRecorded),
            Slot::Disabled => return Precompiled::Plain(PlainReason::Disabled),
            Slot::Unknown => {}
        }
        let path = self.path_for(spec);
        let why_record = if path.is_file() {
            let t = Instant::now();
            match read_checked(&path, &spec.id, shape) {
                Ok(sys) => {
                    tracing::info!(
                        params = %spec.id,
                        path = %path.display(),
                        origin = sys.origin(),
                        constraints = sys.counts().constraints,
                        terms = ?sys.nnz(),
                        bytes = sys.resident_bytes(),
                        secs = t.elapsed().as_secs_f64(),
                        "pre-compiled constraints loaded and resident"
                    );
                    let sys = Arc::new(sys);
                    *guard = Slot::Resident(sys.clone());
                    return Precompiled::Ready(sys);
                }
                Err(e) => format!("the file cannot be used ({e}); recording it again"),
            }
        } else {
            "no recorded constraints yet".to_string()
        };
        tracing::info!(
            params = %spec.id,
            path = %path.display(),
            reason = %why_record,
            "recording the constraint system from this partition's synthesis"
        );
        *guard = Slot::Recording;
        drop(guard);
        Precompiled::Record(RecordTicket {
            slot,
            key: spec.id.clone(),
            path,
            done: false,
        })
    }

    /// Withdraws the recorded system of `spec` (it did not fit a circuit's witness): later
    /// partitions of the shape use plain synthesis until the process restarts.
    pub fn disable(&self, spec: &ParamsSpec, reason: &str) {
        tracing::error!(
            params = %spec.id,
            path = %self.path_for(spec).display(),
            reason,
            "pre-compiled constraints withdrawn; this shape now uses plain synthesis (delete the \
             file to have it recorded again at the next start)"
        );
        *self
            .slot(&spec.id)
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Slot::Disabled;
    }

    /// Puts a system in the store (tests, embedding, tools that recorded it).
    pub fn insert(&self, id: &str, sys: Arc<RecordedSystem>) {
        *self.slot(id).lock().unwrap_or_else(|e| e.into_inner()) = Slot::Resident(sys);
    }

    /// Resident systems and their sizes in bytes.
    pub fn resident(&self) -> Vec<(String, usize)> {
        let slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        slots
            .iter()
            .filter_map(
                |(id, s)| match &*s.lock().unwrap_or_else(|e| e.into_inner()) {
                    Slot::Resident(sys) => Some((id.clone(), sys.resident_bytes())),
                    _ => None,
                },
            )
            .collect()
    }
}

/// Reads a file and checks it against the key and the parameters' shape.
fn read_checked(path: &Path, key: &str, shape: &ParamsShape) -> Result<RecordedSystem, String> {
    let sys = proofline_r1cs::file::read(path, Some(key)).map_err(|e| e.to_string())?;
    prover::check_recorded_shape(shape, &sys).map_err(|e| e.to_string())?;
    Ok(sys)
}

/// The right to record one shape's system. Dropping it unused (the recording failed) lets the
/// next partition of the shape try again.
pub struct RecordTicket {
    slot: SlotRef,
    key: String,
    path: PathBuf,
    done: bool,
}

impl std::fmt::Debug for RecordTicket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordTicket")
            .field("key", &self.key)
            .field("path", &self.path)
            .finish()
    }
}

impl RecordTicket {
    /// The key the system must be recorded under.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Where the system will be written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Makes `sys` resident for the shape and writes it to disk on a background thread (a write
    /// failure is logged; the system stays resident for this process).
    pub fn complete(mut self, sys: RecordedSystem) -> Arc<RecordedSystem> {
        let sys = Arc::new(sys);
        *self.slot.lock().unwrap_or_else(|e| e.into_inner()) = Slot::Resident(sys.clone());
        self.done = true;
        let (path, writing) = (self.path.clone(), sys.clone());
        let spawned = std::thread::Builder::new()
            .name("r1cs-writer".into())
            .spawn(move || write_logged(&writing, &path));
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "cannot start the constraint writer thread; writing inline");
            write_logged(&sys, &self.path);
        }
        sys
    }
}

fn write_logged(sys: &RecordedSystem, path: &Path) {
    let t = Instant::now();
    if let Some(dir) = path.parent() {
        if let Err(e) = std::fs::create_dir_all(dir) {
            tracing::warn!(path = %path.display(), error = %e, "cannot create the constraint directory");
            return;
        }
    }
    match proofline_r1cs::file::write(sys, path) {
        Ok(digest) => tracing::info!(
            params = sys.key(),
            path = %path.display(),
            digest,
            secs = t.elapsed().as_secs_f64(),
            "pre-compiled constraints written"
        ),
        Err(e) => tracing::warn!(
            params = sys.key(),
            path = %path.display(),
            error = %e,
            "cannot write the pre-compiled constraints; they stay resident in this process \
             and will be recorded again at the next start"
        ),
    }
}

impl Drop for RecordTicket {
    fn drop(&mut self) {
        if !self.done {
            let mut slot = self.slot.lock().unwrap_or_else(|e| e.into_inner());
            if matches!(*slot, Slot::Recording) {
                *slot = Slot::Unknown;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proofline_circuits::Sha256Preimage;
    use proofline_groth16::precompiled::record_blank;
    use proofline_groth16::prover::params_shape_of;
    use proofline_groth16::synthesis::synthesize;

    fn spec(dir: &Path) -> ParamsSpec {
        ParamsSpec {
            id: "proofline-sha256-1.params".into(),
            path: dir.join("proofline-sha256-1.params"),
            check: None,
            hint: String::new(),
        }
    }

    fn system(key: &str) -> (RecordedSystem, ParamsShape) {
        let blank = Sha256Preimage::blank(1).unwrap();
        let sys = record_blank(blank, key, "test").unwrap();
        let real = Sha256Preimage::new(1, Sha256Preimage::demo_preimage(1, 1)).unwrap();
        (sys, params_shape_of(&synthesize(real).unwrap()))
    }

    fn wait_for(path: &Path) {
        for _ in 0..200 {
            if path.is_file() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("{} was not written", path.display());
    }

    #[test]
    fn missing_files_are_recorded_once_then_loaded() {
        let dir = tempfile::tempdir().unwrap();
        let spec = spec(dir.path());
        let (sys, shape) = system(&spec.id);
        let store = ConstraintsStore::new(SynthesisMode::Precompiled, None);
        let path = store.path_for(&spec);
        assert_eq!(path, dir.path().join("proofline-sha256-1.r1cs"));

        // The first partition records; the others synthesize plainly meanwhile.
        let Precompiled::Record(ticket) = store.lookup(&spec, &shape) else {
            panic!("a missing file must be recorded")
        };
        assert!(matches!(
            store.lookup(&spec, &shape),
            Precompiled::Plain(PlainReason::BeingRecorded)
        ));
        // A recording that fails (ticket dropped) lets the next partition try again.
        drop(ticket);
        let Precompiled::Record(ticket) = store.lookup(&spec, &shape) else {
            panic!("the next partition records after a failed recording")
        };
        assert_eq!(ticket.key(), spec.id);
        ticket.complete(sys.clone());
        assert!(matches!(store.lookup(&spec, &shape), Precompiled::Ready(_)));
        assert_eq!(store.resident().len(), 1);
        wait_for(&path);

        // A new process loads the file.
        let fresh = ConstraintsStore::new(SynthesisMode::Precompiled, None);
        let Precompiled::Ready(loaded) = fresh.lookup(&spec, &shape) else {
            panic!("the written file must load")
        };
        assert_eq!(loaded.matrices(), sys.matrices());

        // The witness of another shape withdraws it: plain synthesis from then on.
        fresh.disable(&spec, "test");
        assert!(matches!(
            fresh.lookup(&spec, &shape),
            Precompiled::Plain(PlainReason::Disabled)
        ));

        // Plain mode reads nothing.
        let plain = ConstraintsStore::new(SynthesisMode::Plain, None);
        assert!(matches!(
            plain.lookup(&spec, &shape),
            Precompiled::Plain(PlainReason::ModePlain)
        ));
    }

    #[test]
    fn unusable_files_are_recorded_again() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let spec = spec(dir.path());
        let (sys, shape) = system(&spec.id);
        let store =
            ConstraintsStore::new(SynthesisMode::Precompiled, Some(elsewhere.path().into()));
        let path = store.path_for(&spec);
        assert!(path.starts_with(elsewhere.path()));
        proofline_r1cs::file::write(&sys, &path).unwrap();

        // Parameters of another shape: the file does not fit them.
        let mut other = shape;
        other.l += 1;
        assert!(matches!(
            store.lookup(&spec, &other),
            Precompiled::Record(_)
        ));

        // A truncated file.
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
        let store =
            ConstraintsStore::new(SynthesisMode::Precompiled, Some(elsewhere.path().into()));
        assert!(matches!(
            store.lookup(&spec, &shape),
            Precompiled::Record(_)
        ));

        // Another shape's file under this name.
        let (foreign, _) = system("proofline-sha256-9.params");
        proofline_r1cs::file::write(&foreign, &path).unwrap();
        let store =
            ConstraintsStore::new(SynthesisMode::Precompiled, Some(elsewhere.path().into()));
        assert!(matches!(
            store.lookup(&spec, &shape),
            Precompiled::Record(_)
        ));
    }
}
