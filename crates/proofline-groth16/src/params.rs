//! Groth16 parameters in bellperson's file format, held resident and shared.
//!
//! A [`ProvingKey`] wraps bellperson's `Parameters<Bls12>` (whose query vectors are already
//! `Arc`s) together with its prepared verifying key, so that every partition of every job shares
//! one copy and verification costs no preparation.

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::Path;
use std::sync::Arc;

use bellperson::groth16::{self, Parameters, PreparedVerifyingKey, VerifyingKey};
use blstrs::Bls12;

/// Parameters and prepared verifying key of one circuit.
pub struct ProvingKey {
    params: Parameters<Bls12>,
    pvk: PreparedVerifyingKey<Bls12>,
}

impl std::fmt::Debug for ProvingKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProvingKey")
            .field("shape", &self.shape())
            .finish()
    }
}

/// Sizes of the queries of a parameter set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParamsShape {
    /// Public inputs including ONE (`vk.ic.len()`).
    pub num_inputs: usize,
    /// H query length (domain size − 1).
    pub h: usize,
    /// L query length (aux variables).
    pub l: usize,
    /// A query length.
    pub a: usize,
    /// B query length in G1.
    pub b_g1: usize,
    /// B query length in G2.
    pub b_g2: usize,
}

/// Counts bytes read, for progress reporting.
struct Counting<R, F> {
    inner: R,
    read: u64,
    on_progress: F,
}

impl<R: Read, F: FnMut(u64)> Read for Counting<R, F> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        (self.on_progress)(self.read);
        Ok(n)
    }
}

impl ProvingKey {
    /// Wraps parameters (e.g. fresh from `generate_random_parameters`).
    pub fn new(params: Parameters<Bls12>) -> Self {
        let pvk = groth16::prepare_verifying_key(&params.vk);
        ProvingKey { params, pvk }
    }

    /// Reads a bellperson parameter file. `checked` verifies that every point is on the curve
    /// and in the subgroup (slow); `on_progress` receives the bytes read so far.
    pub fn read_file(path: &Path, checked: bool, on_progress: impl FnMut(u64)) -> io::Result<Self> {
        let file = File::open(path)?;
        let reader = Counting {
            inner: BufReader::with_capacity(1 << 22, file),
            read: 0,
            on_progress,
        };
        let params = Parameters::<Bls12>::read(reader, checked)?;
        Ok(Self::new(params))
    }

    /// The bellperson parameters.
    pub fn params(&self) -> &Parameters<Bls12> {
        &self.params
    }

    /// The verifying key.
    pub fn vk(&self) -> &VerifyingKey<Bls12> {
        &self.params.vk
    }

    /// The prepared verifying key.
    pub fn pvk(&self) -> &PreparedVerifyingKey<Bls12> {
        &self.pvk
    }

    /// Query sizes.
    pub fn shape(&self) -> ParamsShape {
        let p = &self.params;
        ParamsShape {
            num_inputs: p.vk.ic.len(),
            h: p.h.len(),
            l: p.l.len(),
            a: p.a.len(),
            b_g1: p.b_g1.len(),
            b_g2: p.b_g2.len(),
        }
    }

    /// Approximate resident size in bytes.
    pub fn resident_bytes(&self) -> usize {
        let s = self.shape();
        (s.h + s.l + s.a + s.b_g1) * std::mem::size_of::<blstrs::G1Affine>()
            + s.b_g2 * std::mem::size_of::<blstrs::G2Affine>()
    }

    /// Writes the verifying key in bellperson's byte format.
    pub fn write_vk(&self, out: impl io::Write) -> io::Result<()> {
        self.params.vk.write(out)
    }
}

/// Shared handle to a resident parameter set.
pub type SharedProvingKey = Arc<ProvingKey>;
