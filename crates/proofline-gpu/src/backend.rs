//! proofline-groth16's [`ProverBackend`] on one GPU slot, for callers that run the prover's
//! stages on plain host buffers (`prover::prove`, tools, tests). Each call uploads its inputs
//! and runs under an arena sized by `bytes.rs`; the pipeline's compute actors do better with
//! the slot's stage API (resident bases, H read straight from the device). The G2 MSM runs on
//! the GPU too, in the stage of the sparse G1 MSMs ([`G2Placement::WithSparseG1`]).

use std::collections::HashMap;
use std::sync::Mutex;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use group::Group;
use proofline_groth16::msm::{check_bases, SparseScalars};
use proofline_groth16::{BackendError, G2Placement, NttKind, ProverBackend};

use crate::abi::{AFFINE_WORDS, FR_WORDS};
use crate::arena::{charge_of, Arena};
use crate::bytes::{pippenger_bytes, sparse_stage_bytes, QueryShape};
use crate::config::{MsmConfig, NttConfig};
use crate::curve::{MsmCurve, G1, G2};
use crate::error::GpuError;
use crate::exec::{DevBuf, Exec, Readback};
use crate::layout::{affines_as_u32, scalars_as_u32, scalars_as_u32_mut};
use crate::msm::{self, Bases, MsmStats};
use crate::ntt::{self, build_tables, NttTables};
use crate::resident::Residency;
use crate::slot::{DeviceWords, GpuSlot, Lane};

/// A slot as a [`ProverBackend`]: one call at a time (the slot has one stream).
pub struct GpuBackend {
    inner: Mutex<Inner>,
    name: String,
}

struct Inner {
    slot: GpuSlot,
    tables: HashMap<u32, NttTables<DeviceWords>>,
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
    /// A backend over `slot`.
    pub fn new(slot: GpuSlot) -> Self {
        GpuBackend {
            name: slot.label(),
            inner: Mutex::new(Inner {
                slot,
                tables: HashMap::new(),
            }),
        }
    }

    fn with<T>(
        &self,
        f: impl FnOnce(&mut Inner) -> Result<T, GpuError>,
    ) -> Result<T, BackendError> {
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut g).map_err(dev)
    }
}

impl Inner {
    fn tables(&mut self, log_n: u32) -> Result<ntt::TablePtrs, GpuError> {
        if !self.tables.contains_key(&log_n) {
            let arena = Arena::new(u64::MAX, "backend tables");
            let t = self
                .slot
                .run(Lane::Resident, &arena, |e| build_tables(e, log_n))?;
            self.tables.insert(log_n, t.map(|b| b.into_resident()));
        }
        self.tables
            .get(&log_n)
            .map(|t| t.ptrs())
            .ok_or_else(|| GpuError::InvalidInput("tables".into()))
    }
}

impl ProverBackend for GpuBackend {
    fn name(&self) -> &str {
        &self.name
    }

    fn g2_placement(&self) -> G2Placement {
        G2Placement::WithSparseG1
    }

    fn ntt(&self, data: &mut [Scalar], kind: NttKind) -> Result<(), BackendError> {
        let k = match kind {
            NttKind::Forward => crate::NttKind::Forward,
            NttKind::Inverse => crate::NttKind::Inverse,
            NttKind::CosetForward => crate::NttKind::CosetForward,
            NttKind::CosetInverse => crate::NttKind::CosetInverse,
        };
        self.with(|g| {
            let log_n = ntt::log2_exact(data.len())?;
            let t = g.tables(log_n)?;
            let arena = Arena::new(2 * charge_of(data.len() * FR_WORDS as usize), "ntt");
            g.slot.run(Lane::Compute, &arena, |e| {
                let mut d = e.upload(scalars_as_u32(data))?;
                ntt::ntt(e, &mut d, &t, k)?;
                e.read(Readback::Values, &d, 0, scalars_as_u32_mut(data))
            })
        })
    }

    fn h_poly(
        &self,
        a: &mut [Scalar],
        b: &mut [Scalar],
        c: &mut [Scalar],
    ) -> Result<(), BackendError> {
        self.with(|g| {
            let log_n = ntt::log2_exact(a.len())?;
            if b.len() != a.len() || c.len() != a.len() {
                return Err(GpuError::InvalidInput("h_poly lengths differ".into()));
            }
            let t = g.tables(log_n)?;
            let arena = Arena::new(3 * charge_of(a.len() * FR_WORDS as usize), "h_poly");
            g.slot.run(Lane::Compute, &arena, |e| {
                let mut da = e.upload(scalars_as_u32(a))?;
                let mut db = e.upload(scalars_as_u32(b))?;
                let mut dc = e.upload(scalars_as_u32(c))?;
                ntt::h_poly(e, &mut da, &mut db, &mut dc, &t, &NttConfig::default())?;
                e.read(Readback::Values, &da, 0, scalars_as_u32_mut(a))
            })
        })
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
        let n = scalars.len();
        self.with(|g| {
            let arena = Arena::new(
                charge_of(n * AFFINE_WORDS as usize)
                    + charge_of(n * FR_WORDS as usize)
                    + pippenger_bytes(n, g.slot.sm_count()),
                "dense msm",
            );
            g.slot.run(Lane::Compute, &arena, |e| {
                let b = e.upload(affines_as_u32(&bases[..n]))?;
                let s = e.upload(scalars_as_u32(scalars))?;
                msm::pippenger::<_, G1>(
                    e,
                    b.ptr(),
                    s.ptr(),
                    n,
                    &MsmConfig::default(),
                    &mut MsmStats::default(),
                )
            })
        })
    }

    fn msm_g1_sparse(
        &self,
        bases: &[G1Affine],
        split: &SparseScalars,
        query: &'static str,
    ) -> Result<G1Projective, BackendError> {
        self.sparse::<G1>(bases, split, query)
    }

    fn msm_g2_sparse(
        &self,
        bases: &[G2Affine],
        split: &SparseScalars,
        query: &'static str,
    ) -> Result<G2Projective, BackendError> {
        self.sparse::<G2>(bases, split, query)
    }
}

impl GpuBackend {
    /// A sparse MSM of `C` with its bases uploaded for the call.
    fn sparse<C: MsmCurve>(
        &self,
        bases: &[C::Affine],
        split: &SparseScalars,
        query: &'static str,
    ) -> Result<C::Projective, BackendError> {
        check_bases(query, split.num_bases, bases.len())?;
        if split.num_bases == 0 {
            return Ok(C::Projective::identity());
        }
        self.with(|g| {
            let q: QueryShape = split.into();
            // the stage formula covers the query in both groups
            let stage = sparse_stage_bytes(&[q, q, q], Residency::Resident, g.slot.sm_count());
            let arena = Arena::new(
                charge_of(split.num_bases * C::AFFINE_WORDS) + stage,
                "sparse msm",
            );
            g.slot.run(Lane::Compute, &arena, |e| {
                let b = e.upload(C::affines_as_u32(&bases[..split.num_bases]))?;
                msm::sparse::<_, C>(
                    e,
                    Bases::Device(b.ptr()),
                    split,
                    &MsmConfig::default(),
                    &mut MsmStats::default(),
                )
            })
        })
    }
}
