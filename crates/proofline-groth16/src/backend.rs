//! The backend trait: the steps of a proof that a device may take over, one by one.
//!
//! Every step works on plain buffers owned by the caller. [`CpuBackend`] implements all of them
//! with blst and rayon; a GPU backend implements the same trait and may delegate any step it
//! does not accelerate to a `CpuBackend`.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};

use crate::msm::{self, MsmError, SparseScalars};
use crate::ntt::{self, NttError, NttKind};

/// Errors a backend step can return.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// A transform was given bad lengths.
    #[error(transparent)]
    Ntt(#[from] NttError),
    /// An MSM was given inconsistent inputs.
    #[error(transparent)]
    Msm(#[from] MsmError),
    /// The device failed.
    #[error("device error: {0}")]
    Device(String),
}

/// The replaceable steps of the Groth16 prover.
pub trait ProverBackend: Send + Sync + 'static {
    /// A short name for logs and metrics ("cpu", "cuda:0").
    fn name(&self) -> &str;

    /// One transform in place (see [`crate::ntt`] for the conventions).
    fn ntt(&self, data: &mut [Scalar], kind: NttKind) -> Result<(), BackendError>;

    /// Coefficients of `H = (A·B − C)/Z` into `a`, from evaluations over the domain
    /// (equal power-of-two lengths); `b` and `c` are scratch.
    fn h_poly(
        &self,
        a: &mut [Scalar],
        b: &mut [Scalar],
        c: &mut [Scalar],
    ) -> Result<(), BackendError>;

    /// [`ProverBackend::h_poly`] where C's evaluations are `a∘b` (a witness that satisfies
    /// every constraint); `b` is scratch. By default it computes them and calls `h_poly`.
    fn h_poly_of_product(&self, a: &mut [Scalar], b: &mut [Scalar]) -> Result<(), BackendError> {
        let mut c = ntt::pointwise_product(a, b);
        self.h_poly(a, b, &mut c)
    }

    /// `Σ scalars[i] · bases[i]` in G1 (dense: the H query).
    fn msm_g1_dense(
        &self,
        bases: &[G1Affine],
        scalars: &[Scalar],
    ) -> Result<G1Projective, BackendError>;

    /// Sparse MSM in G1 (the L, A and B queries): zeros skipped, ones added, tail Pippenger.
    fn msm_g1_sparse(
        &self,
        bases: &[G1Affine],
        split: &SparseScalars,
        query: &'static str,
    ) -> Result<G1Projective, BackendError>;

    /// Sparse MSM in G2 (the B query).
    fn msm_g2_sparse(
        &self,
        bases: &[G2Affine],
        split: &SparseScalars,
        query: &'static str,
    ) -> Result<G2Projective, BackendError>;
}

/// All steps on the CPU: blst's Pippenger, rayon-parallel NTTs.
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuBackend;

impl ProverBackend for CpuBackend {
    fn name(&self) -> &str {
        "cpu"
    }

    fn ntt(&self, data: &mut [Scalar], kind: NttKind) -> Result<(), BackendError> {
        Ok(ntt::ntt_cpu(data, kind)?)
    }

    fn h_poly(
        &self,
        a: &mut [Scalar],
        b: &mut [Scalar],
        c: &mut [Scalar],
    ) -> Result<(), BackendError> {
        Ok(ntt::h_poly_cpu(a, b, c)?)
    }

    fn h_poly_of_product(&self, a: &mut [Scalar], b: &mut [Scalar]) -> Result<(), BackendError> {
        Ok(ntt::h_poly_of_product_cpu(a, b)?)
    }

    fn msm_g1_dense(
        &self,
        bases: &[G1Affine],
        scalars: &[Scalar],
    ) -> Result<G1Projective, BackendError> {
        msm::check_bases("H", scalars.len(), bases.len())?;
        Ok(msm::msm_dense::<msm::G1>(bases, scalars))
    }

    fn msm_g1_sparse(
        &self,
        bases: &[G1Affine],
        split: &SparseScalars,
        query: &'static str,
    ) -> Result<G1Projective, BackendError> {
        Ok(msm::msm_sparse::<msm::G1>(bases, split, query)?)
    }

    fn msm_g2_sparse(
        &self,
        bases: &[G2Affine],
        split: &SparseScalars,
        query: &'static str,
    ) -> Result<G2Projective, BackendError> {
        Ok(msm::msm_sparse::<msm::G2>(bases, split, query)?)
    }
}
