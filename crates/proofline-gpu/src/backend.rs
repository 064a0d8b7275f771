//! The GPU implementation of proofline-groth16's [`ProverBackend`]: the transforms, the H
//! polynomial and the G1 MSMs run on one device through a [`GpuContext`]; the G2 MSM stays on
//! the CPU (blst), where it overlaps the GPU work in the pipeline.
//!
//! One `GpuBackend` owns one context (one device index, one stream). The pipeline gives each
//! compute slot its own backend, so slots never share a stream; device-global operations are not
//! called from here (they belong to the allocator actor, through `GpuMemory`).

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use group::Group;
use proofline_groth16::msm::{check_bases, SparseScalars};
use proofline_groth16::{BackendError, CpuBackend, NttKind, ProverBackend};

use crate::{GpuContext, GpuError};

/// A device's compute backend.
pub struct GpuBackend {
    ctx: GpuContext,
    cpu: CpuBackend,
    name: String,
}

impl std::fmt::Debug for GpuBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuBackend")
            .field("name", &self.name)
            .finish()
    }
}

fn dev(e: GpuError) -> BackendError {
    BackendError::Device(e.to_string())
}

impl GpuBackend {
    /// Opens device `index` (its kernels load here, never on a request path).
    pub fn new(index: usize) -> Result<Self, GpuError> {
        let ctx = GpuContext::new(index)?;
        Ok(GpuBackend {
            name: format!("cuda:{index}"),
            ctx,
            cpu: CpuBackend,
        })
    }

    /// The context.
    pub fn context(&self) -> &GpuContext {
        &self.ctx
    }
}

impl ProverBackend for GpuBackend {
    fn name(&self) -> &str {
        &self.name
    }

    fn ntt(&self, data: &mut [Scalar], kind: NttKind) -> Result<(), BackendError> {
        let k = match kind {
            NttKind::Forward => crate::NttKind::Forward,
            NttKind::Inverse => crate::NttKind::Inverse,
            NttKind::CosetForward => crate::NttKind::CosetForward,
            NttKind::CosetInverse => crate::NttKind::CosetInverse,
        };
        self.ctx.ntt(data, k).map_err(dev)
    }

    fn h_poly(
        &self,
        a: &mut [Scalar],
        b: &mut [Scalar],
        c: &mut [Scalar],
    ) -> Result<(), BackendError> {
        self.ctx.h_poly(a, b, c).map_err(dev)
    }

    fn msm_g1_dense(
        &self,
        bases: &[G1Affine],
        scalars: &[Scalar],
    ) -> Result<G1Projective, BackendError> {
        check_bases("H", scalars.len(), bases.len())?;
        if scalars.is_empty() {
            return Ok(G1Projective::identity());
        }
        self.ctx
            .msm_g1(&bases[..scalars.len()], scalars)
            .map_err(dev)
    }

    fn msm_g1_sparse(
        &self,
        bases: &[G1Affine],
        split: &SparseScalars,
        query: &'static str,
    ) -> Result<G1Projective, BackendError> {
        check_bases(query, split.num_bases, bases.len())?;
        if split.num_bases == 0 {
            return Ok(G1Projective::identity());
        }
        // The kernels take the dense scalar vector and split zeros, ones and tail on the GPU.
        let dense = split.to_dense();
        self.ctx
            .msm_g1_sparse(&bases[..split.num_bases], &dense)
            .map_err(dev)
    }

    fn msm_g2_sparse(
        &self,
        bases: &[G2Affine],
        split: &SparseScalars,
        query: &'static str,
    ) -> Result<G2Projective, BackendError> {
        self.cpu.msm_g2_sparse(bases, split, query)
    }
}
