//! Element-wise field and curve operations on the GPU (`cuda/arith.cu`), used
//! by the correctness tests (GPU == blstrs) and the multiply-throughput
//! benchmark. Not on the proving path.

use blstrs::{G1Affine, G1Projective, Scalar};
use cudarc::driver::CudaFunction;

use crate::context::{Arg, GpuContext};
use crate::error::GpuError;
use crate::layout::{affines_as_u32, jacobian_from_u32, scalars_as_u32, JACOBIAN_WORDS};

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
    /// Montgomery -> canonical limbs
    FromMont = 4,
}

/// Curve operation selector for [`GpuContext::g1_op`].
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

impl GpuContext {
    /// Fr element-wise op; returns raw limbs (Montgomery form, or canonical for FromMont).
    pub fn fr_op(
        &self,
        a: &[Scalar],
        b: &[Scalar],
        op: FieldOp,
    ) -> Result<Vec<[u32; 8]>, GpuError> {
        let n = a.len().min(b.len());
        self.limb_op(
            &self.k.fr_op_test,
            scalars_as_u32(&a[..n]),
            scalars_as_u32(&b[..n]),
            op,
        )
    }

    /// Fp element-wise op on raw Montgomery limbs (12 x u32 LE each).
    pub fn fp_op(
        &self,
        a: &[[u32; 12]],
        b: &[[u32; 12]],
        op: FieldOp,
    ) -> Result<Vec<[u32; 12]>, GpuError> {
        let n = a.len().min(b.len());
        let fa: Vec<u32> = a[..n].iter().flatten().copied().collect();
        let fb: Vec<u32> = b[..n].iter().flatten().copied().collect();
        self.limb_op(&self.k.fp_op_test, &fa, &fb, op)
    }

    /// Runs a field-op test kernel over `a`, `b` (W limbs per element) and returns the results.
    fn limb_op<const W: usize>(
        &self,
        kernel: &CudaFunction,
        a: &[u32],
        b: &[u32],
        op: FieldOp,
    ) -> Result<Vec<[u32; W]>, GpuError> {
        let n = a.len() / W;
        let da = self.upload_u32(a)?;
        let db = self.upload_u32(b)?;
        let out = self.alloc_u32(n * W)?;
        self.launch(
            kernel,
            n.div_ceil(256) as u32,
            256,
            &[
                Arg::U64(self.ptr(&da)),
                Arg::U64(self.ptr(&db)),
                Arg::U64(self.ptr(&out)),
                Arg::U32(n as u32),
                Arg::U32(op as u32),
            ],
        )?;
        let mut h = vec![0u32; n * W];
        self.download(&out, &mut h)?;
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
        let da = self.upload_u32(affines_as_u32(&a[..n]))?;
        let db = self.upload_u32(affines_as_u32(&b[..n]))?;
        let out = self.alloc_u32(n * JACOBIAN_WORDS)?;
        self.launch(
            &self.k.g1_op_test,
            n.div_ceil(128) as u32,
            128,
            &[
                Arg::U64(self.ptr(&da)),
                Arg::U64(self.ptr(&db)),
                Arg::U64(self.ptr(&out)),
                Arg::U32(n as u32),
                Arg::U32(op as u32),
            ],
        )?;
        let mut h = vec![0u32; n * JACOBIAN_WORDS];
        self.download(&out, &mut h)?;
        Ok(h.chunks_exact(JACOBIAN_WORDS)
            .map(jacobian_from_u32)
            .collect())
    }

    /// Montgomery multiplications per second: (Fr, Fp), measured with `iters`
    /// chained multiplications per thread over `threads` threads.
    pub fn mul_throughput(&self, threads: usize, iters: u32) -> Result<(f64, f64), GpuError> {
        let mut res = [0f64; 2];
        for (i, (words, f)) in [
            (32usize, &self.k.fr_mul_bench),
            (48usize, &self.k.fp_mul_bench),
        ]
        .into_iter()
        .enumerate()
        {
            // data: small values (below either modulus) as Montgomery inputs
            let host: Vec<u32> = (0..threads * words)
                .map(|j| (j as u32).wrapping_mul(2654435761) >> 4)
                .collect();
            let mut host = host;
            for (j, x) in host.iter_mut().enumerate() {
                if j % (words / 4) == words / 4 - 1 {
                    *x &= 0x0fff_ffff; // keep each element below the modulus
                }
            }
            let d = self.upload_u32(&host)?;
            let args = [Arg::U64(self.ptr(&d)), Arg::U32(iters)];
            let blocks = threads.div_ceil(256) as u32;
            self.launch(f, blocks, 256, &args)?; // warm-up
            self.synchronize()?;
            let t = std::time::Instant::now();
            self.launch(f, blocks, 256, &args)?;
            self.synchronize()?;
            let s = t.elapsed().as_secs_f64();
            res[i] = (threads as f64) * 4.0 * f64::from(iters) / s;
        }
        Ok((res[0], res[1]))
    }
}
