//! Parameters of the built-in circuits: generation (`proofline setup`) and verifying keys
//! (`proofline vk`).
//!
//! Generated parameters come from a single-party setup (bellperson's
//! `generate_random_parameters` with OS randomness, the toxic waste dropped in memory): right
//! for demos, tests and benchmarks, not for proofs that must convince a third party.

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use bellperson::groth16::{self, VerifyingKey};
use blstrs::Bls12;
use indicatif::{ProgressBar, ProgressStyle};
use proofline_jobs::builtin::{params_spec_in, BuiltinCircuit};

/// What `setup` did.
#[derive(Debug)]
pub struct SetupOutcome {
    /// The parameter file.
    pub path: PathBuf,
    /// Whether it was generated now (false: it was present).
    pub generated: bool,
    /// Seconds taken.
    pub secs: f64,
}

struct Writer<W> {
    inner: W,
    bar: ProgressBar,
}

impl<W: Write> Write for Writer<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bar.inc(n as u64);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Generates the parameters of `circuit` into `dir` unless present (or `force`).
pub fn setup(circuit: &BuiltinCircuit, dir: &Path, force: bool) -> anyhow::Result<SetupOutcome> {
    let spec = params_spec_in(dir, circuit);
    let start = Instant::now();
    if spec.path.is_file() && !force {
        return Ok(SetupOutcome {
            path: spec.path,
            generated: false,
            secs: 0.0,
        });
    }
    std::fs::create_dir_all(dir)
        .with_context(|| format!("creating the parameter directory {}", dir.display()))?;
    let blank = circuit.blank()?;
    let bar = ProgressBar::new_spinner();
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} [{elapsed_precise}]")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    bar.set_message(format!(
        "generating parameters for {} (~{} constraints; one-party setup)",
        circuit.name(),
        circuit.constraints_hint()
    ));
    let params = groth16::generate_random_parameters::<Bls12, _, _>(blank, &mut rand::rngs::OsRng)
        .context("parameter generation failed")?;
    bar.finish_and_clear();
    let size = (params.h.len() + params.l.len() + params.a.len() + params.b_g1.len()) as u64 * 96
        + params.b_g2.len() as u64 * 192;
    let bar = ProgressBar::new(size);
    bar.set_style(
        ProgressStyle::with_template("writing {msg} [{bar:30}] {bytes}/{total_bytes}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_message(spec.path.display().to_string());
    // Write to a temporary name and rename, so an interrupted run never leaves a truncated file
    // under the real name.
    let tmp = spec.path.with_extension(format!(
        "params.{}-{:08x}.tmp",
        std::process::id(),
        rand::random::<u32>()
    ));
    {
        let f = File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
        let mut w = Writer {
            inner: BufWriter::with_capacity(1 << 22, f),
            bar: bar.clone(),
        };
        params.write(&mut w).context("writing parameters")?;
        w.flush()?;
        w.inner.get_ref().sync_all()?;
    }
    std::fs::rename(&tmp, &spec.path)?;
    let vk_path = spec.path.with_extension("vk");
    params
        .vk
        .write(BufWriter::new(File::create(&vk_path)?))
        .context("writing the verifying key")?;
    bar.finish_and_clear();
    Ok(SetupOutcome {
        path: spec.path,
        generated: true,
        secs: start.elapsed().as_secs_f64(),
    })
}

/// Reads the verifying key of `circuit` from its parameter file (which starts with it).
pub fn read_vk(circuit: &BuiltinCircuit, dir: &Path) -> anyhow::Result<VerifyingKey<Bls12>> {
    let spec = params_spec_in(dir, circuit);
    spec.require_present(&circuit.name())?;
    let f = File::open(&spec.path).with_context(|| format!("opening {}", spec.path.display()))?;
    VerifyingKey::read(std::io::BufReader::new(f).take(u64::MAX))
        .with_context(|| format!("reading the verifying key from {}", spec.path.display()))
}

/// The verifying key in bellperson's byte format.
pub fn vk_bytes(vk: &VerifyingKey<Bls12>) -> Vec<u8> {
    let mut out = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = vk.write(&mut out);
    out
}
