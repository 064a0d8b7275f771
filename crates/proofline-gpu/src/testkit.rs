//! Test and benchmark support (feature `testkit`), never used by the proving path:
//!
//! * [`TestGpu`]: one device and one slot with the production modules and the test kernel
//!   module (`cuda/arith.cu`) loaded: element-wise field and curve operations, multiply throughput,
//!   point tiling, and host-in/host-out wrappers of the NTT and MSM host code for correctness
//!   tests, each run under an arena sized by the byte formulas of `bytes.rs` (so the tests also
//!   check the formulas on a real device);
//! * [`DeviceData`]: device-resident scalars and points for benchmarks that time kernels alone;
//! * random inputs (points, scalars, the PoRep-like zero/one/other mix), the field tests'
//!   boundary elements (Montgomery words modulus - 1) and CPU references.

use std::time::Instant;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;
use group::{Curve, Group};
use proofline_groth16::msm::{HeldSplit, MsmPlan, SparseScalars};
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;

use crate::abi::{
    DevPtr, DevPtrMut, FpMulBenchArgs, FpOpArgs, FrMulBenchArgs, FrOpArgs, G1OpArgs,
    TilePointsArgs, AFFINE_WORDS, ELEMENT_THREADS, FR_WORDS, G1_TEST_THREADS, JACOBIAN_WORDS,
};
use crate::arena::{charge_of, Arena};
use crate::bytes::{
    chunk_windows_bytes, chunk_windows_bytes_of, pippenger_bytes_of, pippenger_bytes_precomputed,
    pippenger_bytes_precomputed_of, pippenger_bytes_with, sparse_stage_bytes_with,
    sparse_stage_bytes_with_chunk, QueryShape,
};
use crate::config::{MsmConfig, NttConfig};
use crate::curve::{MsmCurve, G1, G2};
use crate::device::{DeviceOptions, GpuDevice, KernelTable, MODULES};
use crate::error::GpuError;
use crate::exec::{grid, DevBuf, Exec, Readback};
use crate::layout::{
    affines_as_u32, g2_affines_as_u32, g2_jacobian_from_u32, jacobian_from_u32,
    scalar_from_raw_montgomery, scalars_as_u32, scalars_as_u32_mut,
};
use crate::msm::{self, Bases, MsmStats, OnesGroup};
use crate::ntt::{self, build_tables, NttKind, NttTables};
use crate::plan::{coset_generator, root_of_unity, ChunkWindows, Precomputation};
use crate::resident::{OnesSums, Residency, StageBases};
use crate::slot::{DeviceWords, GpuSlot, Lane};
use crate::stages::{sparse_stage_uploaded, upload_padded, upload_sparse_inputs, SparseGroups};

/// Element-wise operation selector (matches `op` in cuda/arith.cu).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldOp {
    /// a * b
    Mul = 0,
    /// a^2
    Sqr = 1,
    /// a + b
    Add = 2,
    /// a - b
    Sub = 3,
    /// Montgomery -> canonical limbs (Fr and Fp only)
    FromMont = 4,
    /// a^-1, 0 for 0 (Fp and Fp2 only)
    Inverse = 5,
    /// a (b - a), the difference left unreduced into the multiplication (Fr and Fp only)
    MulWideDifference = 6,
    /// a (a + b), the sum left unreduced into the multiplication (Fr and Fp only)
    MulWideSum = 7,
    /// a^-1 by the batched binary GCD alone (`cuda/fp_inv.cuh`), 0 where its batches do not
    /// finish (Fp only)
    InverseBatched = 8,
    /// a^-1 by the plain binary algorithm, 0 for 0 (Fp only)
    InverseBinary = 9,
    /// a (a b), the product a b left unreduced into the multiplication (Fp only)
    MulUnreducedProduct = 10,
    /// the words of the product a b without its final subtraction: below 2 p, congruent to
    /// a b (Fp only)
    UnreducedProduct = 11,
    /// (a b) (b - a): the product and the difference both unreduced, as both operands of the
    /// multiplication (Fp only: its two spare bits)
    MulBothUnreduced = 12,
    /// (a b)^2, the square of the unreduced product (Fp only)
    SqrUnreduced = 13,
    /// a b - (a + b) between the unreduced product and sum, corrected by 2 p (Fp only)
    SubUnreduced = 14,
    /// -a, 0 for 0 (Fp only)
    Neg = 15,
    /// (a b) a, the unreduced product as the first operand (Fp only)
    MulUnreducedFirst = 16,
}

/// Curve operation selector for [`TestGpu::g1_op`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CurveOp {
    /// a + b (mixed addition into XYZZ)
    Add = 0,
    /// 2 a
    Double = 1,
    /// a + (2b - b) through full XYZZ addition
    AddFull = 2,
    /// a + a through the mixed-addition path (doubling special case)
    AddSelf = 3,
}

/// One device, one slot and the test kernels. See the module documentation.
pub struct TestGpu {
    device: GpuDevice,
    slot: GpuSlot,
    /// Every production module (`device::MODULES`: NTT, G1 and G2 MSM) and the test module: the
    /// test helpers run production stages (NTT, H polynomial, MSMs in G1 and G2) and test
    /// kernels through the same slot.
    kernels: KernelTable,
}

/// Test data: no lease, an arena as large as it needs.
fn unbounded() -> Arena {
    Arena::new(u64::MAX, "testkit")
}

impl TestGpu {
    /// Opens device `index` with one slot and keeps freed memory cached in the pool (as the
    /// allocator does), unless `cold_pool`.
    pub fn open(index: usize, cold_pool: bool) -> Result<Self, GpuError> {
        let mut device = GpuDevice::open(index, DeviceOptions::default())?;
        if !cold_pool {
            device.set_pool_release_threshold(u64::MAX)?;
        }
        let slot = device.new_slot()?;
        let mut notes = Vec::new();
        let modules: Vec<&str> = MODULES.iter().copied().chain(["arith"]).collect();
        let kernels = KernelTable::load(&slot.shared.ctx, slot.shared.cc, &modules, &mut notes)?;
        Ok(TestGpu {
            device,
            slot,
            kernels,
        })
    }

    /// The device handle.
    pub fn device(&self) -> &GpuDevice {
        &self.device
    }

    /// The slot.
    pub fn slot(&self) -> &GpuSlot {
        &self.slot
    }

    fn run<T>(
        &self,
        arena: &Arena,
        f: impl FnOnce(&crate::slot::SlotExec<'_>) -> Result<T, GpuError>,
    ) -> Result<T, GpuError> {
        self.slot.run_with(Lane::Compute, arena, &self.kernels, f)
    }

    /// Fr element-wise op; returns raw limbs (Montgomery form, or canonical for FromMont).
    pub fn fr_op(
        &self,
        a: &[Scalar],
        b: &[Scalar],
        op: FieldOp,
    ) -> Result<Vec<[u32; 8]>, GpuError> {
        let n = a.len().min(b.len());
        self.limb_op::<8, _>(
            "fr_op_test",
            scalars_as_u32(&a[..n]),
            scalars_as_u32(&b[..n]),
            |a, b, out, n| FrOpArgs {
                a,
                b,
                out,
                n,
                op: op as u32,
            },
        )
    }

    /// Fp element-wise op on raw Montgomery limbs (12 x u32 LE each).
    pub fn fp_op(
        &self,
        a: &[[u32; 12]],
        b: &[[u32; 12]],
        op: FieldOp,
    ) -> Result<Vec<[u32; 12]>, GpuError> {
        self.base_field_op("fp_op_test", a, b, op)
    }

    /// Fp2 element-wise op on raw Montgomery limbs (c0 then c1, 24 x u32 LE each).
    pub fn fp2_op(
        &self,
        a: &[[u32; 24]],
        b: &[[u32; 24]],
        op: FieldOp,
    ) -> Result<Vec<[u32; 24]>, GpuError> {
        self.base_field_op("fp2_op_test", a, b, op)
    }

    /// An Fp or Fp2 test kernel (both take [`FpOpArgs`]) over elements of W limbs.
    fn base_field_op<const W: usize>(
        &self,
        kernel: &'static str,
        a: &[[u32; W]],
        b: &[[u32; W]],
        op: FieldOp,
    ) -> Result<Vec<[u32; W]>, GpuError> {
        let n = a.len().min(b.len());
        let fa: Vec<u32> = a[..n].iter().flatten().copied().collect();
        let fb: Vec<u32> = b[..n].iter().flatten().copied().collect();
        self.limb_op::<W, _>(kernel, &fa, &fb, |a, b, out, n| FpOpArgs {
            a,
            b,
            out,
            n,
            op: op as u32,
        })
    }

    fn limb_op<const W: usize, A: crate::exec::KernelArgs>(
        &self,
        kernel: &'static str,
        a: &[u32],
        b: &[u32],
        args: impl Fn(DevPtr, DevPtr, DevPtrMut, u32) -> A,
    ) -> Result<Vec<[u32; W]>, GpuError> {
        let n = a.len() / W;
        let mut h = vec![0u32; n * W];
        self.run(&unbounded(), |e| {
            let da = e.upload(a)?;
            let db = e.upload(b)?;
            let out = e.alloc(n * W)?;
            e.launch_as(
                kernel,
                grid(n, ELEMENT_THREADS),
                ELEMENT_THREADS,
                &args(
                    DevPtr(da.ptr()),
                    DevPtr(db.ptr()),
                    DevPtrMut(out.ptr()),
                    n as u32,
                ),
            )?;
            e.read(Readback::Values, &out, 0, &mut h)
        })?;
        Ok(h.chunks_exact(W)
            .map(|c| c.try_into().unwrap_or([0; W]))
            .collect())
    }

    /// G1 element-wise op (see [`CurveOp`]).
    pub fn g1_op(
        &self,
        a: &[G1Affine],
        b: &[G1Affine],
        op: CurveOp,
    ) -> Result<Vec<G1Projective>, GpuError> {
        let n = a.len().min(b.len());
        let mut h = vec![0u32; n * JACOBIAN_WORDS as usize];
        self.run(&unbounded(), |e| {
            let da = e.upload(affines_as_u32(&a[..n]))?;
            let db = e.upload(affines_as_u32(&b[..n]))?;
            let out = e.alloc(n * JACOBIAN_WORDS as usize)?;
            e.launch(
                grid(n, G1_TEST_THREADS),
                G1_TEST_THREADS,
                &G1OpArgs {
                    a: DevPtr(da.ptr()),
                    b: DevPtr(db.ptr()),
                    out: DevPtrMut(out.ptr()),
                    n: n as u32,
                    op: op as u32,
                },
            )?;
            e.read(Readback::Values, &out, 0, &mut h)
        })?;
        Ok(h.chunks_exact(JACOBIAN_WORDS as usize)
            .map(jacobian_from_u32)
            .collect())
    }

    /// G2 element-wise op (see [`CurveOp`]).
    pub fn g2_op(
        &self,
        a: &[G2Affine],
        b: &[G2Affine],
        op: CurveOp,
    ) -> Result<Vec<G2Projective>, GpuError> {
        let n = a.len().min(b.len());
        let words = G2::JACOBIAN_WORDS;
        let mut h = vec![0u32; n * words];
        self.run(&unbounded(), |e| {
            let da = e.upload(g2_affines_as_u32(&a[..n]))?;
            let db = e.upload(g2_affines_as_u32(&b[..n]))?;
            let out = e.alloc(n * words)?;
            e.launch_as(
                "g2_op_test",
                grid(n, G1_TEST_THREADS),
                G1_TEST_THREADS,
                &G1OpArgs {
                    a: DevPtr(da.ptr()),
                    b: DevPtr(db.ptr()),
                    out: DevPtrMut(out.ptr()),
                    n: n as u32,
                    op: op as u32,
                },
            )?;
            e.read(Readback::Values, &out, 0, &mut h)
        })?;
        Ok(h.chunks_exact(words).map(g2_jacobian_from_u32).collect())
    }

    /// Montgomery multiplications per second: (Fr, Fp), measured with `iters` chained
    /// multiplications per thread over `threads` threads.
    pub fn mul_throughput(&self, threads: usize, iters: u32) -> Result<(f64, f64), GpuError> {
        let mut res = [0f64; 2];
        for (i, words) in [32usize, 48].into_iter().enumerate() {
            // data: small values (below either modulus) as Montgomery inputs
            let mut host: Vec<u32> = (0..threads * words)
                .map(|j| (j as u32).wrapping_mul(2654435761) >> 4)
                .collect();
            for (j, x) in host.iter_mut().enumerate() {
                if j % (words / 4) == words / 4 - 1 {
                    *x &= 0x0fff_ffff; // keep each element below the modulus
                }
            }
            let blocks = grid(threads, ELEMENT_THREADS);
            res[i] = self.run(&unbounded(), |e| {
                let d = e.upload(&host)?;
                let launch = || match i {
                    0 => e.launch(
                        blocks,
                        ELEMENT_THREADS,
                        &FrMulBenchArgs {
                            data: DevPtrMut(d.ptr()),
                            iters,
                        },
                    ),
                    _ => e.launch(
                        blocks,
                        ELEMENT_THREADS,
                        &FpMulBenchArgs {
                            data: DevPtrMut(d.ptr()),
                            iters,
                        },
                    ),
                };
                launch()?; // warm-up
                e.sync()?;
                let t = std::time::Instant::now();
                launch()?;
                e.sync()?;
                Ok((threads as f64) * 4.0 * f64::from(iters) / t.elapsed().as_secs_f64())
            })?;
        }
        Ok((res[0], res[1]))
    }

    /// NTT of `data` (length a power of two), natural order in and out.
    pub fn ntt(&self, data: &mut [Scalar], kind: NttKind) -> Result<(), GpuError> {
        let log_n = ntt::log2_exact(data.len())?;
        let n = data.len();
        let tables = self.tables(log_n)?;
        let t = tables.ptrs();
        let arena = Arena::new(2 * charge_of(n * FR_WORDS as usize), "test ntt");
        self.run(&arena, |e| {
            let mut d = e.upload(scalars_as_u32(data))?;
            ntt::ntt(e, &mut d, &t, kind)?;
            e.read(Readback::Values, &d, 0, scalars_as_u32_mut(data))
        })
    }

    fn tables(&self, log_n: u32) -> Result<NttTables<DeviceWords>, GpuError> {
        let t = self.run(&unbounded(), |e| build_tables(e, log_n))?;
        Ok(t.map(|b| b.into_resident()))
    }

    /// Groth16 H: given evaluations a, b, c over the domain of size n (a power of two), writes
    /// the n coefficients of H into `a` (the caller takes n - 1).
    pub fn h_poly(
        &self,
        a: &mut [Scalar],
        b: &[Scalar],
        c: &[Scalar],
        cfg: &NttConfig,
    ) -> Result<(), GpuError> {
        let log_n = ntt::log2_exact(a.len())?;
        if b.len() != a.len() || c.len() != a.len() {
            return Err(GpuError::InvalidInput("h_poly lengths differ".into()));
        }
        let tables = self.tables(log_n)?;
        let t = tables.ptrs();
        let arena = Arena::new(3 * charge_of(a.len() * FR_WORDS as usize), "test h_poly");
        self.run(&arena, |e| {
            let mut da = e.upload(scalars_as_u32(a))?;
            let mut db = e.upload(scalars_as_u32(b))?;
            let mut dc = e.upload(scalars_as_u32(c))?;
            ntt::h_poly(e, &mut da, &mut db, &mut dc, &t, cfg, ntt::CInput::Given)?;
            e.read(Readback::Values, &da, 0, scalars_as_u32_mut(a))
        })
    }

    /// [`TestGpu::msm`] as one chunk through `windows` (a split is otherwise taken only by
    /// chunks of `plan::WIDE_CHUNK_POINTS`); the arena is the uploads plus
    /// `bytes::chunk_windows_bytes`.
    pub fn msm_windows(
        &self,
        bases: &[G1Affine],
        scalars: &[Scalar],
        windows: &ChunkWindows,
        cfg: &MsmConfig,
    ) -> Result<G1Projective, GpuError> {
        let bytes = chunk_windows_bytes(scalars.len(), windows, cfg, self.slot.sm_count());
        self.msm_uploaded(bases, scalars, bytes, |e, b, s, n| {
            msm::pippenger_windows::<_, G1>(e, b, s, n, windows, 0, cfg)
        })
    }

    /// Dense MSM `sum scalars[i] * bases[i]`, bases and scalars uploaded; the arena is the
    /// uploads plus `bytes::pippenger_bytes_with`.
    pub fn msm(
        &self,
        bases: &[G1Affine],
        scalars: &[Scalar],
        cfg: &MsmConfig,
    ) -> Result<G1Projective, GpuError> {
        let bytes = pippenger_bytes_with(scalars.len(), cfg, self.slot.sm_count());
        self.msm_uploaded(bases, scalars, bytes, |e, b, s, n| {
            msm::pippenger::<_, G1>(e, b, s, n, cfg, &mut MsmStats::default())
        })
    }

    /// `msm(exec, bases, scalars, n)` over `bases` and `scalars` uploaded, under an arena of the
    /// uploads plus `bytes`.
    fn msm_uploaded(
        &self,
        bases: &[G1Affine],
        scalars: &[Scalar],
        bytes: u64,
        msm: impl FnOnce(&crate::slot::SlotExec<'_>, u64, u64, usize) -> Result<G1Projective, GpuError>,
    ) -> Result<G1Projective, GpuError> {
        if bases.len() != scalars.len() {
            return Err(GpuError::InvalidInput(
                "bases and scalars differ in length".into(),
            ));
        }
        let n = scalars.len();
        let arena = Arena::new(
            charge_of(n * AFFINE_WORDS as usize) + charge_of(n * FR_WORDS as usize) + bytes,
            "test msm",
        );
        self.run(&arena, |e| {
            let b = e.upload(affines_as_u32(bases))?;
            let s = e.upload(scalars_as_u32(scalars))?;
            msm(e, b.ptr(), s.ptr(), n)
        })
    }

    /// Sparse MSM of a CPU split: bases uploaded first (resident) or streamed from the host by
    /// `stream_chunk` points; the arena is `bytes`' formula for the stage (plus the bases).
    pub fn msm_sparse(
        &self,
        bases: &[G1Affine],
        split: &SparseScalars,
        residency: Residency,
        stream_chunk: usize,
        cfg: &MsmConfig,
    ) -> Result<G1Projective, GpuError> {
        self.sparse_on::<G1>(bases, split, residency, stream_chunk, cfg)
    }

    /// [`TestGpu::msm_sparse`] in G2.
    pub fn msm_g2_sparse(
        &self,
        bases: &[G2Affine],
        split: &SparseScalars,
        residency: Residency,
        stream_chunk: usize,
        cfg: &MsmConfig,
    ) -> Result<G2Projective, GpuError> {
        self.sparse_on::<G2>(bases, split, residency, stream_chunk, cfg)
    }

    /// Dense MSM in G2, bases and scalars uploaded.
    pub fn msm_g2(
        &self,
        bases: &[G2Affine],
        scalars: &[Scalar],
        cfg: &MsmConfig,
    ) -> Result<G2Projective, GpuError> {
        if bases.len() != scalars.len() {
            return Err(GpuError::InvalidInput(
                "bases and scalars differ in length".into(),
            ));
        }
        let n = scalars.len();
        let split = SparseScalars {
            num_bases: n,
            tail_index: (0..n as u32).collect(),
            tail_scalars: scalars.to_vec(),
            ..Default::default()
        };
        // the dense path is the tail path with every scalar in the tail
        self.sparse_on::<G2>(bases, &split, Residency::Resident, 0, cfg)
    }

    fn sparse_on<C: MsmCurve>(
        &self,
        bases: &[C::Affine],
        split: &SparseScalars,
        residency: Residency,
        stream_chunk: usize,
        cfg: &MsmConfig,
    ) -> Result<C::Projective, GpuError> {
        let sm = self.slot.sm_count();
        let q: QueryShape = split.into();
        // the stage formula covers the query in both groups (B's shape is the last one)
        let stage = sparse_stage_bytes_with_chunk(&[q, q, q], residency, stream_chunk, cfg, sm);
        match residency {
            Residency::Resident => {
                let arena = Arena::new(
                    charge_of(bases.len() * C::AFFINE_WORDS) + stage,
                    "test sparse msm",
                );
                self.run(&arena, |e| {
                    let b = e.upload(C::affines_as_u32(bases))?;
                    msm::sparse::<_, C>(
                        e,
                        Bases::Device(b.ptr()),
                        split,
                        cfg,
                        &mut MsmStats::default(),
                    )
                })
            }
            Residency::Streamed => {
                let arena = Arena::new(stage, "test sparse msm");
                self.run(&arena, |e| {
                    let host = Bases::Host {
                        points: bases,
                        chunk: stream_chunk,
                    };
                    msm::sparse::<_, C>(e, host, split, cfg, &mut MsmStats::default())
                })
            }
        }
    }

    /// Host-to-device copy rates of `words` u32s, in GB/s: (the driver's copy from pageable
    /// memory, [`Exec::upload`] (through the slot's pinned staging buffers above 1 MiB), DMA
    /// alone from a pinned buffer).
    pub fn upload_rates(&self, words: usize) -> Result<(f64, f64, f64), GpuError> {
        let src: Vec<u32> = (0..words as u32).collect();
        let gb = (words * 4) as f64 / 1e9;
        self.run(&unbounded(), |e| {
            let mut d = e.alloc(words)?;
            let t = Instant::now();
            e.upload_pageable(&mut d, &src)?;
            e.sync()?;
            let pageable = gb / t.elapsed().as_secs_f64();
            // once to put the staging buffers in the slot's cache, then timed
            e.upload_at(&mut d, 0, &src)?;
            e.sync()?;
            let t = Instant::now();
            e.upload_at(&mut d, 0, &src)?;
            e.sync()?;
            let staged = gb / t.elapsed().as_secs_f64();
            let mut host = e.host_buffer(words)?;
            <crate::slot::SlotExec<'_> as Exec>::fill_host(&mut host, &src)?;
            let t = Instant::now();
            e.upload_host(&mut d, &host, words)?;
            e.sync()?;
            let dma = gb / t.elapsed().as_secs_f64();
            e.recycle_host(host);
            drop(d);
            e.sync()?;
            Ok((pageable, staged, dma))
        })
    }

    /// Scalars resident on the device (benchmarks).
    pub fn scalars(&self, s: &[Scalar]) -> Result<DeviceData, GpuError> {
        let words = self.run(&unbounded(), |e| {
            Ok(e.upload(scalars_as_u32(s))?.into_resident())
        })?;
        Ok(DeviceData {
            words,
            len: s.len(),
        })
    }

    /// `n` points resident on the device, made by repeating `unique` (benchmarks, harness).
    pub fn tiled_points(&self, unique: &[G1Affine], n: usize) -> Result<DeviceData, GpuError> {
        let words = self.run(&unbounded(), |e| {
            Ok(tile::<_, G1>(e, unique, n, 0)?.into_resident())
        })?;
        Ok(DeviceData { words, len: n })
    }

    /// [`TestGpu::tiled_points`] followed by the ones' subset sums of `sums`, as a resident
    /// set's sparse queries hold them (an error with [`OnesSums::Absent`]).
    pub fn tiled_points_summed(
        &self,
        unique: &[G1Affine],
        n: usize,
        sums: OnesSums,
    ) -> Result<SummedPoints, GpuError> {
        let group = sums_group(sums)?;
        let words = self.run(&unbounded(), |e| {
            Ok(tile_summed::<_, G1>(e, unique, n, group)?.into_resident())
        })?;
        Ok(SummedPoints(DeviceData { words, len: n }, group))
    }

    /// [`TestGpu::tiled_points_summed`] in G2.
    pub fn tiled_g2_points_summed(
        &self,
        unique: &[G2Affine],
        n: usize,
        sums: OnesSums,
    ) -> Result<SummedPoints, GpuError> {
        let group = sums_group(sums)?;
        let words = self.run(&unbounded(), |e| {
            Ok(tile_summed::<_, G2>(e, unique, n, group)?.into_resident())
        })?;
        Ok(SummedPoints(DeviceData { words, len: n }, group))
    }

    /// [`TestGpu::tiled_points`] in G2.
    pub fn tiled_g2_points(&self, unique: &[G2Affine], n: usize) -> Result<DeviceData, GpuError> {
        let words = self.run(&unbounded(), |e| {
            Ok(tile::<_, G2>(e, unique, n, 0)?.into_resident())
        })?;
        Ok(DeviceData { words, len: n })
    }

    /// The NTT tables of 2^`log_n`, resident (benchmarks build them once, as the pipeline's
    /// resident sets do).
    pub fn ntt_tables(&self, log_n: u32) -> Result<TestTables, GpuError> {
        Ok(TestTables(self.tables(log_n)?))
    }

    /// NTT of resident scalars (timed by benchmarks; does not read back): the transform writes
    /// into a fresh buffer, which replaces the old one.
    pub fn ntt_resident(
        &self,
        d: &mut DeviceData,
        tables: &TestTables,
        kind: NttKind,
    ) -> Result<(), GpuError> {
        let t = tables.0.ptrs();
        if tables.0.log_n != ntt::log2_exact(d.len)? {
            return Err(GpuError::InvalidInput("tables of another size".into()));
        }
        if tables.0.log_n == 0 {
            return Ok(());
        }
        let out = self.run(&unbounded(), |e| {
            let tmp = e.alloc(d.len * FR_WORDS as usize)?;
            ntt::ntt_into(e, d.words.ptr(), tmp.ptr(), &t, kind)?;
            Ok(tmp.into_resident())
        })?;
        d.words = out;
        Ok(())
    }

    /// H on three resident buffers (a ends up holding H's coefficients); with
    /// [`ntt::CInput::Product`] c's values are replaced by `a∘b` first, as in the H stage.
    pub fn h_poly_resident(
        &self,
        a: &mut DeviceData,
        b: &mut DeviceData,
        c: &mut DeviceData,
        tables: &TestTables,
        cfg: &NttConfig,
        c_in: ntt::CInput,
    ) -> Result<(), GpuError> {
        if [a.len, b.len, c.len] != [1usize << tables.0.log_n; 3] {
            return Err(GpuError::InvalidInput(
                "h_poly over buffers of another size".into(),
            ));
        }
        let t = tables.0.ptrs();
        let at = self.run(&unbounded(), |e| {
            ntt::h_poly_at(
                e,
                a.words.ptr(),
                b.words.ptr(),
                c.words.ptr(),
                &t,
                cfg,
                c_in,
            )
        })?;
        if at == ntt::HIn::B {
            std::mem::swap(a, b);
        }
        Ok(())
    }

    /// The H stage's transform half from host memory, as the stage runs it: a and b copied into
    /// zero-padded device buffers (through the slot's staging buffers), C's evaluations derived
    /// there (`c: None`) or copied up too (`Some`: how the stage ran before it derived them),
    /// then H on the device; nothing is read back.
    pub fn h_poly_from_host(
        &self,
        a: &[Scalar],
        b: &[Scalar],
        c: Option<&[Scalar]>,
        tables: &TestTables,
        cfg: &NttConfig,
    ) -> Result<(), GpuError> {
        let t = tables.0.ptrs();
        let words = (1usize << tables.0.log_n) * FR_WORDS as usize;
        self.run(&unbounded(), |e| {
            let up = |x| upload_padded(e, x, words);
            let (mut da, mut db) = (up(a)?, up(b)?);
            let (mut dc, c_in) = match c {
                Some(c) => (up(c)?, ntt::CInput::Given),
                None => (e.alloc(words)?, ntt::CInput::Product),
            };
            ntt::h_poly(e, &mut da, &mut db, &mut dc, &t, cfg, c_in)?;
            e.sync()
        })
    }

    /// Dense MSM over resident bases and scalars (the first `scalars.len()` bases).
    pub fn msm_resident(
        &self,
        bases: &DeviceData,
        scalars: &DeviceData,
        cfg: &MsmConfig,
    ) -> Result<(G1Projective, MsmStats), GpuError> {
        if scalars.len > bases.len {
            return Err(GpuError::InvalidInput("more scalars than bases".into()));
        }
        let mut stats = MsmStats {
            points: scalars.len,
            ..Default::default()
        };
        let arena = Arena::new(
            pippenger_bytes_with(scalars.len, cfg, self.slot.sm_count()),
            "msm",
        );
        let r = self.run(&arena, |e| {
            msm::pippenger::<_, G1>(
                e,
                bases.words.ptr(),
                scalars.words.ptr(),
                scalars.len,
                cfg,
                &mut stats,
            )
        })?;
        Ok((r, stats))
    }

    /// [`TestGpu::msm_resident`] as one chunk through `windows` whatever the planner would
    /// take for its size (the benchmark's window sweep); the arena is
    /// `bytes::chunk_windows_bytes`.
    pub fn msm_resident_windows(
        &self,
        bases: &DeviceData,
        scalars: &DeviceData,
        windows: &ChunkWindows,
        cfg: &MsmConfig,
    ) -> Result<G1Projective, GpuError> {
        self.resident_windows::<G1>(bases, scalars, windows, cfg)
    }

    /// [`TestGpu::msm_resident_windows`] over resident G2 bases.
    pub fn msm_g2_resident_windows(
        &self,
        bases: &DeviceData,
        scalars: &DeviceData,
        windows: &ChunkWindows,
        cfg: &MsmConfig,
    ) -> Result<G2Projective, GpuError> {
        self.resident_windows::<G2>(bases, scalars, windows, cfg)
    }

    fn resident_windows<C: MsmCurve>(
        &self,
        bases: &DeviceData,
        scalars: &DeviceData,
        windows: &ChunkWindows,
        cfg: &MsmConfig,
    ) -> Result<C::Projective, GpuError> {
        if scalars.len > bases.len {
            return Err(GpuError::InvalidInput("more scalars than bases".into()));
        }
        let bytes = chunk_windows_bytes_of::<C>(scalars.len, windows, cfg, self.slot.sm_count());
        let arena = Arena::new(bytes, "msm windows");
        self.run(&arena, |e| {
            msm::pippenger_windows::<_, C>(
                e,
                bases.words.ptr(),
                scalars.words.ptr(),
                scalars.len,
                windows,
                0,
                cfg,
            )
        })
    }

    /// The copies of `pre` of the first `n` resident `bases` (copy k at point k n): the
    /// fixed-base precomputation the resident sets can hold for the H query.
    pub fn precompute(
        &self,
        bases: &DeviceData,
        n: usize,
        pre: &Precomputation,
    ) -> Result<DeviceData, GpuError> {
        if n > bases.len {
            return Err(GpuError::InvalidInput("more points than bases".into()));
        }
        let words = self.run(&unbounded(), |e| {
            let all = e.alloc(n * AFFINE_WORDS as usize * pre.copies as usize)?;
            msm::precompute::<_, G1>(e, bases.words.ptr(), n, pre, all.ptr())?;
            Ok(all.into_resident())
        })?;
        Ok(DeviceData {
            words,
            len: n * pre.copies as usize,
        })
    }

    /// Dense MSM of resident scalars over the copies of [`TestGpu::precompute`] (made for
    /// `scalars.len()` points or more: `stride` points per copy).
    pub fn msm_resident_precomputed(
        &self,
        copies: &DeviceData,
        pre: &Precomputation,
        stride: usize,
        scalars: &DeviceData,
        cfg: &MsmConfig,
    ) -> Result<(G1Projective, MsmStats), GpuError> {
        if copies.len < stride * pre.copies as usize || scalars.len > stride {
            return Err(GpuError::InvalidInput(
                "copies of another size than the MSM".into(),
            ));
        }
        let mut stats = MsmStats {
            points: scalars.len,
            ..Default::default()
        };
        let arena = Arena::new(
            pippenger_bytes_precomputed(scalars.len, pre, cfg, self.slot.sm_count()),
            "precomputed msm",
        );
        let r = self.run(&arena, |e| {
            msm::pippenger_sets::<_, G1>(
                e,
                copies.words.ptr(),
                Some((*pre, stride)),
                scalars.words.ptr(),
                scalars.len,
                cfg,
                &mut stats,
            )
        })?;
        Ok((r, stats))
    }

    /// Sparse MSM of a CPU split over resident bases (the split is uploaded in the call, timed
    /// in `MsmStats::upload_ms`; the pipeline's sparse stage uploads it before its kernel turn).
    pub fn msm_sparse_resident(
        &self,
        bases: &DeviceData,
        split: &SparseScalars,
        cfg: &MsmConfig,
    ) -> Result<(G1Projective, MsmStats), GpuError> {
        self.msm_sparse_over::<G1>(Bases::Device(bases.words.ptr()), split, cfg)
    }

    /// The resident `bases` at the ascending indices `index` gathered side by side and held, with
    /// the copies of `pre` after them where given: a query's held tail.
    pub fn hold_tail(
        &self,
        bases: &DeviceData,
        index: Vec<u32>,
        pre: Option<Precomputation>,
    ) -> Result<HeldData, GpuError> {
        self.hold_tail_of::<G1>(bases, index, pre)
    }

    /// [`TestGpu::hold_tail`] of resident G2 bases.
    pub fn hold_g2_tail(
        &self,
        bases: &DeviceData,
        index: Vec<u32>,
        pre: Option<Precomputation>,
    ) -> Result<HeldData, GpuError> {
        self.hold_tail_of::<G2>(bases, index, pre)
    }

    fn hold_tail_of<C: MsmCurve>(
        &self,
        bases: &DeviceData,
        index: Vec<u32>,
        pre: Option<Precomputation>,
    ) -> Result<HeldData, GpuError> {
        if index.last().is_some_and(|&i| i as usize >= bases.len) {
            return Err(GpuError::InvalidInput(
                "a held base beyond the bases".into(),
            ));
        }
        let held = self.run(&unbounded(), |e| {
            let held = match pre {
                Some(p) => msm::hold_tail_precomputed::<_, C>(e, bases.words.ptr(), index, p)?,
                None => msm::hold_tail::<_, C>(e, bases.words.ptr(), index)?,
            };
            Ok(held.map_points(|b| b.into_resident()))
        })?;
        Ok(HeldData(held))
    }

    /// Sparse MSM over resident bases of a query split against `held`
    /// (`SparseScalars::against_held` of `held`'s indices): the rest and the held scalars are
    /// uploaded in the call (timed in `MsmStats::upload_ms`).
    pub fn msm_sparse_held(
        &self,
        bases: &DeviceData,
        held: &HeldData,
        split: &HeldSplit,
        cfg: &MsmConfig,
    ) -> Result<(G1Projective, MsmStats), GpuError> {
        self.msm_sparse_held_of::<G1>(Bases::Device(bases.words.ptr()), held, split, cfg)
    }

    /// [`TestGpu::msm_sparse_held`] in G2 (`held` from [`TestGpu::hold_g2_tail`]).
    pub fn msm_g2_sparse_held(
        &self,
        bases: &DeviceData,
        held: &HeldData,
        split: &HeldSplit,
        cfg: &MsmConfig,
    ) -> Result<(G2Projective, MsmStats), GpuError> {
        self.msm_sparse_held_of::<G2>(Bases::Device(bases.words.ptr()), held, split, cfg)
    }

    /// [`TestGpu::msm_sparse_held`] over bases with their ones' subset sums: the ones of the
    /// split's rest summed over them, as a resident set with its sums and held tails runs a
    /// query.
    pub fn msm_sparse_held_summed(
        &self,
        bases: &SummedPoints,
        held: &HeldData,
        split: &HeldSplit,
        cfg: &MsmConfig,
    ) -> Result<(G1Projective, MsmStats), GpuError> {
        self.msm_sparse_held_of::<G1>(bases.bases(), held, split, cfg)
    }

    /// [`TestGpu::msm_sparse_held_summed`] in G2.
    pub fn msm_g2_sparse_held_summed(
        &self,
        bases: &SummedPoints,
        held: &HeldData,
        split: &HeldSplit,
        cfg: &MsmConfig,
    ) -> Result<(G2Projective, MsmStats), GpuError> {
        self.msm_sparse_held_of::<G2>(bases.bases(), held, split, cfg)
    }

    fn msm_sparse_held_of<C: MsmCurve>(
        &self,
        bases: Bases<'_, C::Affine>,
        held: &HeldData,
        split: &HeldSplit,
        cfg: &MsmConfig,
    ) -> Result<(C::Projective, MsmStats), GpuError> {
        let q: QueryShape = (&split.rest).into();
        let n = split.held_scalars.len();
        let sm = self.slot.sm_count();
        let held_bytes = match held.0.precomputation() {
            Some(p) => pippenger_bytes_precomputed_of::<C>(n, &p, cfg, sm),
            None => pippenger_bytes_of::<C>(n, cfg, sm),
        };
        let arena = Arena::new(
            sparse_stage_bytes_with(&[q, q, q], Residency::Resident, cfg, sm)
                + held_bytes
                + (n * FR_WORDS as usize * 4) as u64,
            "held sparse msm",
        );
        let mut stats = MsmStats::default();
        let r = self.run(&arena, |e| {
            let dev = msm::upload_held(e, split, &mut stats)?;
            let r = msm::sparse_held::<_, C, _>(e, bases, &held.0, split, &dev, cfg, &mut stats);
            drop(dev);
            let synced = e.sync();
            let total = r?;
            synced?;
            Ok(total)
        })?;
        Ok((r, stats))
    }

    /// [`TestGpu::msm_sparse_resident`] over bases with their ones' subset sums.
    pub fn msm_sparse_summed(
        &self,
        bases: &SummedPoints,
        split: &SparseScalars,
        cfg: &MsmConfig,
    ) -> Result<(G1Projective, MsmStats), GpuError> {
        self.msm_sparse_over::<G1>(bases.bases(), split, cfg)
    }

    /// [`TestGpu::msm_g2_sparse_resident`] over bases with their ones' subset sums
    /// ([`TestGpu::tiled_g2_points_summed`]).
    pub fn msm_g2_sparse_summed(
        &self,
        bases: &SummedPoints,
        split: &SparseScalars,
        cfg: &MsmConfig,
    ) -> Result<(G2Projective, MsmStats), GpuError> {
        self.msm_sparse_over::<G2>(bases.bases(), split, cfg)
    }

    fn msm_sparse_over<C: MsmCurve>(
        &self,
        bases: Bases<'_, C::Affine>,
        split: &SparseScalars,
        cfg: &MsmConfig,
    ) -> Result<(C::Projective, MsmStats), GpuError> {
        let q: QueryShape = split.into();
        let arena = Arena::new(
            sparse_stage_bytes_with(&[q, q, q], Residency::Resident, cfg, self.slot.sm_count()),
            "sparse msm",
        );
        let mut stats = MsmStats::default();
        let r = self.run(&arena, |e| {
            msm::sparse::<_, C>(e, bases, split, cfg, &mut stats)
        })?;
        Ok((r, stats))
    }

    /// The sparse stage's G1 MSMs of `plan` (L, A and B) over resident bases that the three
    /// queries share (the partition benchmark's tiled points), their tails apart or together
    /// as `cfg.sparse_tails` says; the splits are uploaded in the call (timed in
    /// `MsmStats::upload_ms`). Returns L's, A's and B's sums.
    pub fn msm_sparse_g1_resident(
        &self,
        bases: &DeviceData,
        plan: &MsmPlan,
        cfg: &MsmConfig,
    ) -> Result<([G1Projective; 3], MsmStats), GpuError> {
        self.sparse_g1_over(Bases::Device(bases.words.ptr()), plan, cfg)
    }

    /// [`TestGpu::msm_sparse_g1_resident`] over bases with their ones' subset sums.
    pub fn msm_sparse_g1_summed(
        &self,
        bases: &SummedPoints,
        plan: &MsmPlan,
        cfg: &MsmConfig,
    ) -> Result<([G1Projective; 3], MsmStats), GpuError> {
        self.sparse_g1_over(bases.bases(), plan, cfg)
    }

    fn sparse_g1_over(
        &self,
        bases: Bases<'_>,
        plan: &MsmPlan,
        cfg: &MsmConfig,
    ) -> Result<([G1Projective; 3], MsmStats), GpuError> {
        let shapes = [(&plan.l).into(), (&plan.a).into(), (&plan.b).into()];
        let arena = Arena::new(
            sparse_stage_bytes_with(&shapes, Residency::Resident, cfg, self.slot.sm_count()),
            "sparse g1 msms",
        );
        let stage = StageBases {
            h: bases,
            l: bases,
            a: bases,
            b_g1: bases,
            b_g2: Bases::Device(0),
        };
        let mut stats = MsmStats::default();
        let msms = self.run(&arena, |e| {
            let inputs = upload_sparse_inputs(e, plan, &mut stats)?;
            let g1 = SparseGroups::G1Only;
            let r = sparse_stage_uploaded(e, plan, &inputs, &stage, g1, cfg, &mut stats);
            drop(inputs);
            let synced = e.sync();
            let msms = r?;
            synced?;
            Ok(msms)
        })?;
        Ok(([msms.l, msms.a, msms.b_g1], stats))
    }

    /// [`TestGpu::msm_sparse_resident`] in G2 (`bases` from [`TestGpu::tiled_g2_points`]).
    pub fn msm_g2_sparse_resident(
        &self,
        bases: &DeviceData,
        split: &SparseScalars,
        cfg: &MsmConfig,
    ) -> Result<(G2Projective, MsmStats), GpuError> {
        let q: QueryShape = split.into();
        let arena = Arena::new(
            sparse_stage_bytes_with(&[q, q, q], Residency::Resident, cfg, self.slot.sm_count()),
            "sparse msm",
        );
        let mut stats = MsmStats::default();
        let r = self.run(&arena, |e| {
            msm::sparse::<_, G2>(e, Bases::Device(bases.words.ptr()), split, cfg, &mut stats)
        })?;
        Ok((r, stats))
    }
}

/// `n` points of `C` made by repeating `unique`, on `e`, in a buffer with `room` points more.
fn tile<E: Exec, C: MsmCurve>(
    e: &E,
    unique: &[C::Affine],
    n: usize,
    room: usize,
) -> Result<E::Buf, GpuError> {
    if n > u32::MAX as usize {
        return Err(GpuError::InvalidInput(
            "tiling needs at most 2^32 points".into(),
        ));
    }
    let mut buf = e.alloc((n + room) * C::AFFINE_WORDS)?;
    let m = unique.len().min(n);
    if m == 0 {
        return Ok(buf);
    }
    e.upload_at(&mut buf, 0, C::affines_as_u32(&unique[..m]))?;
    let kernel = if C::NAME == "G1" {
        "g1_tile_points"
    } else {
        "g2_tile_points"
    };
    e.launch_as(
        kernel,
        grid(n, ELEMENT_THREADS),
        ELEMENT_THREADS,
        &TilePointsArgs {
            bases: DevPtrMut(buf.ptr()),
            period: m as u32,
            n: n as u32,
        },
    )?;
    Ok(buf)
}

/// The groups of `sums`; none is an error here.
fn sums_group(sums: OnesSums) -> Result<OnesGroup, GpuError> {
    sums.group()
        .ok_or_else(|| GpuError::InvalidInput("summed bases without subset sums".into()))
}

/// [`tile`]'s points followed by the ones' subset sums of `group` (`msm::ones_sums`).
fn tile_summed<E: Exec, C: MsmCurve>(
    e: &E,
    unique: &[C::Affine],
    n: usize,
    group: OnesGroup,
) -> Result<E::Buf, GpuError> {
    let buf = tile::<_, C>(e, unique, n, group.sum_points(n))?;
    msm::ones_sums::<_, C>(e, buf.ptr(), n, buf.at(n * C::AFFINE_WORDS), group)?;
    Ok(buf)
}

/// Bases on the device followed by their ones' subset sums ([`TestGpu::tiled_points_summed`],
/// [`TestGpu::tiled_g2_points_summed`]).
pub struct SummedPoints(DeviceData, OnesGroup);

impl SummedPoints {
    /// The bases alone (their subset sums follow them in the same allocation, unread): for
    /// the MSMs that read plain bases, so that one allocation serves both kinds.
    pub fn points(&self) -> &DeviceData {
        &self.0
    }

    /// The bases as the sparse MSMs read them: with their subset sums after them.
    fn bases<'a, P>(&self) -> Bases<'a, P> {
        Bases::Summed {
            ptr: self.0.words.ptr(),
            n: self.0.len,
            group: self.1,
        }
    }
}

/// NTT tables kept on the device by a benchmark.
pub struct TestTables(NttTables<DeviceWords>);

/// A query's tail held on the device ([`TestGpu::hold_tail`]).
pub struct HeldData(msm::HeldTail<DeviceWords>);

impl HeldData {
    /// The held bases' indices.
    pub fn index(&self) -> &[u32] {
        self.0.index()
    }

    /// The copies the held points carry, if any.
    pub fn precomputation(&self) -> Option<Precomputation> {
        self.0.precomputation()
    }
}

/// Device-resident data of a benchmark: scalars or points.
pub struct DeviceData {
    words: DeviceWords,
    len: usize,
}

impl DeviceData {
    /// Elements.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

// ---- random inputs and CPU references ---------------------------------------------------

const CHUNK: usize = 4096;

/// `n` pseudo-random G1 points: chunk k is start_k + j Q_k for random start_k,
/// Q_k (cheap: one addition per point plus a batch normalisation).
pub fn random_points(n: usize, seed: u64) -> Vec<G1Affine> {
    let mut out = vec![G1Affine::default(); n];
    out.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(k, chunk)| {
            let mut rng = ChaCha20Rng::seed_from_u64(seed ^ ((k as u64) << 20) ^ 0x9e37);
            let q = G1Projective::generator() * Scalar::random(&mut rng);
            let mut p = G1Projective::generator() * Scalar::random(&mut rng);
            let mut proj = Vec::with_capacity(chunk.len());
            for _ in 0..chunk.len() {
                proj.push(p);
                p += q;
            }
            G1Projective::batch_normalize(&proj, chunk);
        });
    out
}

/// `n` pseudo-random G2 points, made as [`random_points`] makes G1 points.
pub fn random_g2_points(n: usize, seed: u64) -> Vec<G2Affine> {
    let mut out = vec![G2Affine::default(); n];
    out.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(k, chunk)| {
            let mut rng = ChaCha20Rng::seed_from_u64(seed ^ ((k as u64) << 20) ^ 0x6a09);
            let q = G2Projective::generator() * Scalar::random(&mut rng);
            let mut p = G2Projective::generator() * Scalar::random(&mut rng);
            let mut proj = Vec::with_capacity(chunk.len());
            for _ in 0..chunk.len() {
                proj.push(p);
                p += q;
            }
            G2Projective::batch_normalize(&proj, chunk);
        });
    out
}

/// `n` uniformly random scalars (raw Montgomery limbs below 2^254 < r).
pub fn random_scalars(n: usize, seed: u64) -> Vec<Scalar> {
    let mut out = vec![Scalar::ZERO; n];
    out.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(k, chunk)| {
            let mut rng = ChaCha20Rng::seed_from_u64(seed ^ ((k as u64) << 24) ^ 0x51ed);
            for s in chunk.iter_mut() {
                let mut l = [0u64; 4];
                for x in l.iter_mut() {
                    *x = rng.next_u64();
                }
                l[3] &= 0x3fff_ffff_ffff_ffff;
                *s = scalar_from_raw_montgomery(l);
            }
        });
    out
}

/// The Fr element whose Montgomery words are r - 1 (it is -1 / R). Taken as both operands of a
/// sum, or subtracted from zero, it gives the largest value an unreduced sum (2r - 2) or
/// difference (2r - 1) can hold: the field tests' boundary for `FieldOp::MulWideSum` and
/// `FieldOp::MulWideDifference`.
pub fn fr_montgomery_top() -> Scalar {
    scalar_from_raw_montgomery([
        0xffff_ffff_0000_0000,
        0x53bd_a402_fffe_5bfe,
        0x3339_d808_09a1_d805,
        0x73ed_a753_299d_7d48,
    ])
}

/// The Fp element whose Montgomery words are p - 1: Fp's counterpart of [`fr_montgomery_top`].
pub fn fp_montgomery_top() -> blst::blst_fp {
    blst::blst_fp {
        l: [
            0xb9fe_ffff_ffff_aaaa,
            0x1eab_fffe_b153_ffff,
            0x6730_d2a0_f6b0_f624,
            0x6477_4b84_f385_12bf,
            0x4b1b_a7b6_434b_acd7,
            0x1a01_11ea_397f_e69a,
        ],
    }
}

/// Which value `raw`, the words of a Montgomery product left without its final subtraction
/// (`FieldOp::UnreducedProduct`), holds against `reduced`, the product's reduced words:
/// `Some(false)` for `reduced` itself, `Some(true)` for `reduced + p`, `None` for anything else
/// (an unreduced product is congruent to the product and below 2 p, so it is one of the two).
pub fn fp_unreduced_is(raw: &[u32; 12], reduced: &[u32; 12]) -> Option<bool> {
    if raw == reduced {
        return Some(false);
    }
    // p = (p - 1) + 1, then reduced + p, word by word
    let mut p = fp_words(&fp_montgomery_top());
    p[0] += 1;
    let mut carry = 0u64;
    let mut plus_p = [0u32; 12];
    for i in 0..12 {
        let s = reduced[i] as u64 + p[i] as u64 + carry;
        plus_p[i] = s as u32;
        carry = s >> 32;
    }
    (carry == 0 && *raw == plus_p).then_some(true)
}

/// What `fp_op_test` computes for `op` on `a` and `b`, by blst: the field tests' reference. `None`
/// for [`FieldOp::UnreducedProduct`], whose words are checked with [`fp_unreduced_is`].
pub fn fp_op_reference(op: FieldOp, a: &blst::blst_fp, b: &blst::blst_fp) -> Option<blst::blst_fp> {
    let mut r = blst::blst_fp::default();
    let mut d = blst::blst_fp::default();
    let mut e = blst::blst_fp::default();
    // SAFETY: plain blst field arithmetic on valid values.
    unsafe {
        match op {
            FieldOp::Mul => blst::blst_fp_mul(&mut r, a, b),
            FieldOp::Sqr => blst::blst_fp_sqr(&mut r, a),
            FieldOp::Add => blst::blst_fp_add(&mut r, a, b),
            FieldOp::Sub => blst::blst_fp_sub(&mut r, a, b),
            FieldOp::FromMont => blst::blst_fp_from(&mut r, a),
            FieldOp::Inverse | FieldOp::InverseBatched | FieldOp::InverseBinary => {
                blst::blst_fp_eucl_inverse(&mut r, a)
            }
            FieldOp::MulWideDifference => {
                blst::blst_fp_sub(&mut d, b, a);
                blst::blst_fp_mul(&mut r, a, &d);
            }
            FieldOp::MulWideSum => {
                blst::blst_fp_add(&mut d, a, b);
                blst::blst_fp_mul(&mut r, a, &d);
            }
            FieldOp::MulUnreducedProduct | FieldOp::MulUnreducedFirst => {
                blst::blst_fp_mul(&mut d, a, b);
                blst::blst_fp_mul(&mut r, &d, a);
            }
            FieldOp::MulBothUnreduced => {
                blst::blst_fp_mul(&mut d, a, b);
                blst::blst_fp_sub(&mut e, b, a);
                blst::blst_fp_mul(&mut r, &d, &e);
            }
            FieldOp::SqrUnreduced => {
                blst::blst_fp_mul(&mut d, a, b);
                blst::blst_fp_sqr(&mut r, &d);
            }
            FieldOp::SubUnreduced => {
                blst::blst_fp_mul(&mut d, a, b);
                blst::blst_fp_add(&mut e, a, b);
                blst::blst_fp_sub(&mut r, &d, &e);
            }
            FieldOp::Neg => blst::blst_fp_cneg(&mut r, a, true),
            FieldOp::UnreducedProduct => return None,
        }
    }
    Some(r)
}

/// An Fp element's twelve 32-bit words, lowest first, as the kernels hold them.
pub fn fp_words(f: &blst::blst_fp) -> [u32; 12] {
    let mut o = [0u32; 12];
    for i in 0..6 {
        o[2 * i] = f.l[i] as u32;
        o[2 * i + 1] = (f.l[i] >> 32) as u32;
    }
    o
}

/// Zero / one / other fractions of a scalar vector (PoRep-like default 0.6 / 0.3 / 0.1).
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct ScalarMix {
    /// fraction of zeros
    pub zero: f64,
    /// fraction of ones
    pub one: f64,
}

impl ScalarMix {
    /// The B query's split of a real 8MiB PoRep partition (docs/filecoin.md), the largest
    /// "other" share measured (8 %).
    pub const B_8MIB: ScalarMix = ScalarMix {
        zero: 0.4621,
        one: 0.4579,
    };
    /// The L query's split of a real 8MiB PoRep partition.
    pub const L_8MIB: ScalarMix = ScalarMix {
        zero: 0.5066,
        one: 0.4642,
    };
    /// Every scalar one.
    pub const ONES: ScalarMix = ScalarMix {
        zero: 0.0,
        one: 1.0,
    };
    /// Every scalar zero.
    pub const ZEROS: ScalarMix = ScalarMix {
        zero: 1.0,
        one: 0.0,
    };
}

impl Default for ScalarMix {
    fn default() -> Self {
        ScalarMix {
            zero: 0.6,
            one: 0.3,
        }
    }
}

/// `n` (at least 3 per bit, plus 3) random scalars that begin with 2^b - 1 (every signed digit
/// below b carries), 2^b and -2^b for each bit b of `bits`, then -1, 0 and 1: the scalars a
/// split of the windows at bit b must carry across.
pub fn scalars_around_bits(n: usize, bits: &[u64], seed: u64) -> Vec<Scalar> {
    let mut v = random_scalars(n, seed);
    let two = Scalar::from(2u64);
    let mut edge = Vec::new();
    for &b in bits {
        let p = two.pow_vartime([b]);
        edge.extend([p - Scalar::ONE, p, -p]);
    }
    edge.extend([-Scalar::ONE, Scalar::ZERO, Scalar::ONE]);
    for (s, e) in v.iter_mut().zip(edge) {
        *s = e;
    }
    v
}

/// `n` scalars drawn with the given mix (others uniformly random).
pub fn mixed_scalars(n: usize, mix: ScalarMix, seed: u64) -> Vec<Scalar> {
    let mut out = random_scalars(n, seed);
    out.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(k, chunk)| {
            let mut rng = ChaCha20Rng::seed_from_u64(seed ^ ((k as u64) << 28) ^ 0x77);
            for s in chunk.iter_mut() {
                let u = (rng.next_u32() as f64) / (u32::MAX as f64 + 1.0);
                if u < mix.zero {
                    *s = Scalar::ZERO;
                } else if u < mix.zero + mix.one {
                    *s = Scalar::ONE;
                }
            }
        });
    out
}

fn bitreverse<T>(a: &mut [T]) {
    let n = a.len();
    let lg = n.trailing_zeros();
    if lg == 0 {
        return;
    }
    for i in 0..n {
        let j = i.reverse_bits() >> (usize::BITS - lg);
        if i < j {
            a.swap(i, j);
        }
    }
}

/// Plain CPU radix-2 NTT with root `w` (natural order in and out).
pub fn cpu_ntt_with_root(a: &mut [Scalar], w: Scalar) {
    let n = a.len();
    bitreverse(a);
    let mut m = 1;
    while m < n {
        let wm = w.pow_vartime([(n / (2 * m)) as u64]);
        for k in (0..n).step_by(2 * m) {
            let mut wj = Scalar::ONE;
            for j in 0..m {
                let t = a[k + j + m] * wj;
                a[k + j + m] = a[k + j] - t;
                a[k + j] += t;
                wj *= wm;
            }
        }
        m *= 2;
    }
}

/// CPU reference of [`NttKind`] transforms.
pub fn cpu_ntt(a: &mut [Scalar], kind: NttKind) {
    let n = a.len();
    let lg = n.trailing_zeros();
    let w = root_of_unity(lg);
    let g = coset_generator();
    let ninv = Scalar::from(n as u64).invert().unwrap_or(Scalar::ONE);
    match kind {
        NttKind::Forward => cpu_ntt_with_root(a, w),
        NttKind::Inverse => {
            cpu_ntt_with_root(a, w.invert().unwrap_or(Scalar::ONE));
            a.iter_mut().for_each(|x| *x *= ninv);
        }
        NttKind::CosetForward => {
            let mut p = Scalar::ONE;
            for x in a.iter_mut() {
                *x *= p;
                p *= g;
            }
            cpu_ntt_with_root(a, w);
        }
        NttKind::CosetInverse => {
            cpu_ntt_with_root(a, w.invert().unwrap_or(Scalar::ONE));
            let ginv = g.invert().unwrap_or(Scalar::ONE);
            let mut p = ninv;
            for x in a.iter_mut() {
                *x *= p;
                p *= ginv;
            }
        }
    }
}

/// CPU reference of [`TestGpu::h_poly`] (the bellperson sequence).
pub fn cpu_h_poly(a: &mut [Scalar], b: &[Scalar], c: &[Scalar]) {
    use NttKind::*;
    let mut b = b.to_vec();
    let mut c = c.to_vec();
    for x in [&mut *a, &mut b[..], &mut c[..]] {
        cpu_ntt(x, Inverse);
        cpu_ntt(x, CosetForward);
    }
    let n = a.len() as u64;
    let zinv = (coset_generator().pow_vartime([n]) - Scalar::ONE)
        .invert()
        .unwrap_or(Scalar::ONE);
    for i in 0..a.len() {
        a[i] = (a[i] * b[i] - c[i]) * zinv;
    }
    cpu_ntt(a, CosetInverse);
}

/// sum_i coeffs[i] x^i (Horner).
pub fn eval_poly(coeffs: &[Scalar], x: Scalar) -> Scalar {
    coeffs.iter().rev().fold(Scalar::ZERO, |acc, c| acc * x + c)
}

/// A plain CPU MSM (the reference of the GPU tests).
pub fn cpu_msm(points: &[G1Affine], scalars: &[Scalar]) -> G1Projective {
    let proj: Vec<G1Projective> = points.iter().map(G1Projective::from).collect();
    G1Projective::multi_exp(&proj, scalars)
}

/// A plain CPU MSM in G2.
pub fn cpu_msm_g2(points: &[G2Affine], scalars: &[Scalar]) -> G2Projective {
    let proj: Vec<G2Projective> = points.iter().map(G2Projective::from).collect();
    G2Projective::multi_exp(&proj, scalars)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn montgomery_tops_are_the_moduli_minus_one() {
        // words r - 1 read as a Montgomery form are (r - 1) / R = -1 / R
        let minus_inv_r = -Scalar::from(2u64)
            .pow_vartime([256u64])
            .invert()
            .expect("2 is invertible");
        assert_eq!(fr_montgomery_top(), minus_inv_r);
        // x + x = x - 1 (words one lower, no wrap) holds only for x = -1: the words are p - 1
        let top = fp_montgomery_top();
        let mut sum = blst::blst_fp::default();
        // SAFETY: blst reads the two inputs and writes the output, all valid blst_fp values.
        unsafe { blst::blst_fp_add(&mut sum, &top, &top) };
        let mut expect = top;
        expect.l[0] -= 1;
        assert_eq!(sum.l, expect.l);
    }
}
