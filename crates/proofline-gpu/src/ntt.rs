//! NTT over Fr on the GPU: forward / inverse / coset transforms and the fused
//! Groth16 H sequence, driving the kernels of `cuda/ntt.cu`.
//!
//! Forward: DIF passes (natural -> bit-reversed); the last pass writes
//! bit-reversed into a second buffer (natural order out). Coset forward scales
//! by g^i in the first pass's load. Inverse: DIF with w^-1, the last pass also
//! scales by n^-1 (and g^-j for the coset inverse) as it stores.
//! H: for each of a, b, c: DIF(w^-1) (evaluations -> bit-reversed
//! coefficients), DIT(w) whose first pass scales position p by n^-1 g^rev(p)
//! (-> natural coset evaluations); then a = (a b - c) / (g^n - 1); DIF(w^-1)
//! whose last pass stores bit-reversed, scaled by n^-1 g^-j.

use std::sync::Arc;

use blstrs::Scalar;
use cudarc::driver::CudaSlice;
use ff::Field;

use crate::context::{Arg, GpuContext, NttTables};
use crate::error::GpuError;
use crate::layout::{scalars_as_u32, scalars_as_u32_mut, FR_WORDS};
use crate::plan::{coset_generator, ntt_passes, ntt_passes_bitrev, pow_tables, root_of_unity};

/// Which transform [`GpuContext::ntt`] computes (natural order in and out).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NttKind {
    /// a_j = sum_i x_i w^(ij)
    Forward,
    /// x_i = n^-1 sum_j a_j w^(-ij)
    Inverse,
    /// evaluations on the coset g<w>, g = 7: a_j = sum_i x_i (g w^j)^i
    CosetForward,
    /// inverse of CosetForward
    CosetInverse,
}

/// A vector of Fr elements resident on the device (Montgomery form).
pub struct DeviceScalars {
    pub(crate) buf: CudaSlice<u32>,
    pub(crate) len: usize,
}

impl DeviceScalars {
    /// number of elements
    pub fn len(&self) -> usize {
        self.len
    }
    /// whether empty
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

const THREADS: u32 = 256;

/// A scaling factor c * G(i) for `ntt_pass` (device pointers; 0 = absent).
#[derive(Clone, Copy, Debug, Default)]
struct Scale {
    c: u64,
    plo: u64,
    phi: u64,
}

fn log2_exact(n: usize) -> Result<u32, GpuError> {
    if n == 0 || !n.is_power_of_two() {
        return Err(GpuError::InvalidInput(format!(
            "NTT length {n} is not a power of two"
        )));
    }
    let lg = n.trailing_zeros();
    if lg > 31 {
        return Err(GpuError::InvalidInput(format!(
            "NTT length 2^{lg} too large"
        )));
    }
    Ok(lg)
}

fn grid(n: usize) -> u32 {
    n.div_ceil(THREADS as usize) as u32
}

impl GpuContext {
    /// Uploads scalars (Montgomery form) to the device.
    pub fn upload_scalars(&self, s: &[Scalar]) -> Result<DeviceScalars, GpuError> {
        Ok(DeviceScalars {
            buf: self.upload_u32(scalars_as_u32(s))?,
            len: s.len(),
        })
    }

    /// Downloads device scalars into `out` (`out.len()` must equal the length).
    pub fn download_scalars(&self, d: &DeviceScalars, out: &mut [Scalar]) -> Result<(), GpuError> {
        if out.len() != d.len {
            return Err(GpuError::InvalidInput(format!(
                "download of {} scalars into {}",
                d.len,
                out.len()
            )));
        }
        self.download(&d.buf, scalars_as_u32_mut(out))
    }

    pub(crate) fn ntt_tables(&self, log_n: u32) -> Result<Arc<NttTables>, GpuError> {
        if let Ok(t) = self.tables.lock() {
            if let Some(x) = t.get(&log_n) {
                return Ok(x.clone());
            }
        }
        let n = 1usize << log_n;
        let half = (n / 2).max(1);
        let w = root_of_unity(log_n);
        let winv = w.invert().unwrap_or(Scalar::ONE);
        // twiddles: one contiguous table per stage (n - 1 entries, see
        // `twiddle` in cuda/ntt.cu), from the split power tables of w
        let build = |base: Scalar| -> Result<CudaSlice<u32>, GpuError> {
            let t = pow_tables(base, half);
            let lo = self.upload_u32(scalars_as_u32(&t.lo))?;
            let hi = self.upload_u32(scalars_as_u32(&t.hi))?;
            let count = (n - 1).max(1);
            let out = self.alloc_u32(count * FR_WORDS)?;
            self.launch(
                &self.k.fr_build_stage_tables,
                grid(count),
                THREADS,
                &[
                    Arg::U64(self.ptr(&out)),
                    Arg::U64(self.ptr(&lo)),
                    Arg::U64(self.ptr(&hi)),
                    Arg::U32(log_n),
                    Arg::U32(t.lo_bits),
                ],
            )?;
            Ok(out)
        };
        let tw_fwd = build(w)?;
        let tw_inv = build(winv)?;
        let g = coset_generator();
        let ginv = g.invert().unwrap_or(Scalar::ONE);
        let gt = pow_tables(g, n);
        let gi = pow_tables(ginv, n);
        let n_inv = Scalar::from(n as u64).invert().unwrap_or(Scalar::ONE);
        let z = g.pow_vartime([n as u64]) - Scalar::ONE;
        let z_inv = z.invert().unwrap_or(Scalar::ONE);
        let t = Arc::new(NttTables {
            tw_fwd,
            tw_inv,
            g_lo: self.upload_u32(scalars_as_u32(&gt.lo))?,
            g_hi: self.upload_u32(scalars_as_u32(&gt.hi))?,
            ginv_lo: self.upload_u32(scalars_as_u32(&gi.lo))?,
            ginv_hi: self.upload_u32(scalars_as_u32(&gi.hi))?,
            pow_lo_bits: gt.lo_bits,
            n_inv: self.upload_u32(scalars_as_u32(&[n_inv]))?,
            z_inv: self.upload_u32(scalars_as_u32(&[z_inv]))?,
        });
        if let Ok(mut m) = self.tables.lock() {
            m.insert(log_n, t.clone());
        }
        Ok(t)
    }

    /// Radix-2 passes over `data` (2^log_n elements, log_n >= 1), in place
    /// except that with `bitrev_out` the last pass writes bit-reversed into
    /// `out`. `load` scales the input of the first pass (factor index
    /// bit-reversed when its flag is set), `store` the output of the last.
    #[allow(clippy::too_many_arguments)]
    fn run_passes(
        &self,
        data: u64,
        out: u64,
        tw: u64,
        log_n: u32,
        dif: bool,
        load: Option<(Scale, bool)>,
        store: Option<Scale>,
        bitrev_out: bool,
        lo_bits: u32,
    ) -> Result<(), GpuError> {
        let mut passes = if dif && bitrev_out {
            ntt_passes_bitrev(log_n)
        } else {
            ntt_passes(log_n)
        };
        if dif {
            passes.reverse();
        }
        let count = passes.len();
        for (i, p) in passes.into_iter().enumerate() {
            let first = i == 0;
            let last = i + 1 == count;
            let tile = 1usize << (p.t + p.lg_l + p.hb);
            let blocks = (1usize << log_n) / tile;
            let (ls, lrev) = if first {
                load.unwrap_or_default()
            } else {
                (Scale::default(), false)
            };
            let ss = if last {
                store.unwrap_or_default()
            } else {
                Scale::default()
            };
            let dst = if last && bitrev_out { out } else { data };
            self.launch(
                &self.k.ntt_pass,
                blocks as u32,
                THREADS,
                &[
                    Arg::U64(data),
                    Arg::U64(dst),
                    Arg::U64(tw),
                    Arg::U32(log_n),
                    Arg::U32(p.s_lo),
                    Arg::U32(p.t),
                    Arg::U32(p.lg_l),
                    Arg::U32(dif as u32),
                    Arg::U64(ls.c),
                    Arg::U64(ls.plo),
                    Arg::U64(ls.phi),
                    Arg::U32(lrev as u32),
                    Arg::U64(ss.c),
                    Arg::U64(ss.plo),
                    Arg::U64(ss.phi),
                    Arg::U32((last && bitrev_out) as u32),
                    Arg::U32(lo_bits),
                    Arg::U32(p.hb),
                ],
            )?;
        }
        Ok(())
    }

    /// NTT of device-resident data (natural order in and out). Does not
    /// synchronise.
    pub fn ntt_device(&self, d: &mut DeviceScalars, kind: NttKind) -> Result<(), GpuError> {
        let log_n = log2_exact(d.len)?;
        if log_n == 0 {
            return Ok(()); // every transform of one element is the identity
        }
        let t = self.ntt_tables(log_n)?;
        let data = self.ptr(&d.buf);
        let tmp = self.alloc_u32(d.len * FR_WORDS)?;
        let tmpp = self.ptr(&tmp);
        let lb = t.pow_lo_bits;
        let g = Scale {
            c: 0,
            plo: self.ptr(&t.g_lo),
            phi: self.ptr(&t.g_hi),
        };
        let ninv = Scale {
            c: self.ptr(&t.n_inv),
            plo: 0,
            phi: 0,
        };
        let ninv_ginv = Scale {
            c: self.ptr(&t.n_inv),
            plo: self.ptr(&t.ginv_lo),
            phi: self.ptr(&t.ginv_hi),
        };
        match kind {
            NttKind::Forward => self.run_passes(
                data,
                tmpp,
                self.ptr(&t.tw_fwd),
                log_n,
                true,
                None,
                None,
                true,
                lb,
            )?,
            NttKind::CosetForward => self.run_passes(
                data,
                tmpp,
                self.ptr(&t.tw_fwd),
                log_n,
                true,
                Some((g, false)),
                None,
                true,
                lb,
            )?,
            NttKind::Inverse => self.run_passes(
                data,
                tmpp,
                self.ptr(&t.tw_inv),
                log_n,
                true,
                None,
                Some(ninv),
                true,
                lb,
            )?,
            NttKind::CosetInverse => self.run_passes(
                data,
                tmpp,
                self.ptr(&t.tw_inv),
                log_n,
                true,
                None,
                Some(ninv_ginv),
                true,
                lb,
            )?,
        }
        // the result is in tmp: swap buffers (the old one is freed on our stream)
        d.buf = tmp;
        Ok(())
    }

    /// NTT of `data` (length a power of two), natural order in and out.
    pub fn ntt(&self, data: &mut [Scalar], kind: NttKind) -> Result<(), GpuError> {
        log2_exact(data.len())?;
        let mut d = self.upload_scalars(data)?;
        self.ntt_device(&mut d, kind)?;
        self.download_scalars(&d, data)
    }

    /// Groth16 H on device-resident evaluations: on return `a` holds the n
    /// coefficients of H = (A B - C) / Z (computed on the coset g<w>); `b` and
    /// `c` are overwritten with their coset evaluations. Does not synchronise.
    pub fn h_poly_device(
        &self,
        a: &mut DeviceScalars,
        b: &mut DeviceScalars,
        c: &mut DeviceScalars,
    ) -> Result<(), GpuError> {
        if a.len != b.len || a.len != c.len {
            return Err(GpuError::InvalidInput(format!(
                "h_poly lengths differ: {} {} {}",
                a.len, b.len, c.len
            )));
        }
        let log_n = log2_exact(a.len)?;
        let t = self.ntt_tables(log_n)?;
        let lb = t.pow_lo_bits;
        let (twf, twi) = (self.ptr(&t.tw_fwd), self.ptr(&t.tw_inv));
        let ninv_g = Scale {
            c: self.ptr(&t.n_inv),
            plo: self.ptr(&t.g_lo),
            phi: self.ptr(&t.g_hi),
        };
        let ninv_ginv = Scale {
            c: self.ptr(&t.n_inv),
            plo: self.ptr(&t.ginv_lo),
            phi: self.ptr(&t.ginv_hi),
        };
        if log_n > 0 {
            for x in [&*a, &*b, &*c] {
                let p = self.ptr(&x.buf);
                // evaluations -> bit-reversed coefficients (times n)
                self.run_passes(p, p, twi, log_n, true, None, None, false, lb)?;
                // * n^-1 g^i on load, then -> natural-order coset evaluations
                self.run_passes(
                    p,
                    p,
                    twf,
                    log_n,
                    false,
                    Some((ninv_g, true)),
                    None,
                    false,
                    lb,
                )?;
            }
        }
        let (pa, pb, pc) = (self.ptr(&a.buf), self.ptr(&b.buf), self.ptr(&c.buf));
        self.launch(
            &self.k.fr_h_pointwise,
            grid(a.len),
            THREADS,
            &[
                Arg::U64(pa),
                Arg::U64(pb),
                Arg::U64(pc),
                Arg::U32(a.len as u32),
                Arg::U64(self.ptr(&t.z_inv)),
            ],
        )?;
        if log_n > 0 {
            // inverse coset NTT; the last pass writes bit-reversed, scaled by
            // n^-1 g^-j, into b's (now free) buffer
            self.run_passes(pa, pb, twi, log_n, true, None, Some(ninv_ginv), true, lb)?;
            std::mem::swap(&mut a.buf, &mut b.buf);
        }
        Ok(())
    }

    /// Groth16 H: given evaluations a, b, c over the domain of size n (a power
    /// of two), writes the n coefficients of H into `a` (the caller takes n - 1).
    pub fn h_poly(&self, a: &mut [Scalar], b: &[Scalar], c: &[Scalar]) -> Result<(), GpuError> {
        let mut da = self.upload_scalars(a)?;
        let mut db = self.upload_scalars(b)?;
        let mut dc = self.upload_scalars(c)?;
        self.h_poly_device(&mut da, &mut db, &mut dc)?;
        self.download_scalars(&da, a)
    }
}
