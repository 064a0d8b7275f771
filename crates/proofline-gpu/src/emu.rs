//! Tests only: the kernels of `cuda/` compiled for the host and run by the crate's real host code.
//!
//! Each kernel module (`ntt.cu`, `msm.cu`, ...) is built with the machine's C++ compiler, with
//! `emu/runtime.h` (a host emulation of the CUDA device runtime: fibers for the threads of a
//! block, barriers, warp shuffles, atomics) forced in front, into a shared library whose one
//! export runs a kernel by name (`emu/module.cpp`). The field arithmetic takes its portable path
//! there (`cuda/mont.cuh`), everything above it is the device source as it is. [`EmuExec`] is an
//! [`Exec`] over that library and host memory, so `msm/`, `ntt.rs` and `stages.rs` run
//! unchanged on a machine without a GPU, and their results are compared with blstrs: curve and
//! field formulas, sorts, work splits, barriers (a barrier that can never release aborts the
//! test with the threads' states) and every special case, at small sizes.
//!
//! The libraries are cached under the build's `OUT_DIR`, keyed by a hash of the sources and the
//! compiler's version; a test run with unchanged kernels compiles nothing.

use std::alloc::Layout;
use std::collections::HashMap;
use std::ffi::{c_char, c_void, CString};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};

use crate::abi::ARGS_LAYOUTS;
use crate::arena::{Account, Charge};
use crate::error::GpuError;
use crate::exec::{check_copy, check_kernel, CopyDir, DevBuf, Exec, KernelArgs, Readback};

type LaunchFn = unsafe extern "C" fn(*const c_char, u32, u32, *const c_void, usize) -> i32;

/// Where the kernel sources and the generated headers are.
fn dirs() -> (PathBuf, PathBuf, PathBuf) {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    (
        manifest.join("../../cuda"),
        manifest.join("emu"),
        Path::new(env!("OUT_DIR")).join("include"),
    )
}

fn fnv1a(h: &mut u64, bytes: &[u8]) {
    for b in bytes {
        *h ^= u64::from(*b);
        *h = h.wrapping_mul(0x100_0000_01b3);
    }
}

fn compiler() -> String {
    std::env::var("CXX").unwrap_or_else(|_| "c++".into())
}

const FLAGS: &[&str] = &[
    "-std=c++17",
    "-O2",
    "-fPIC",
    "-shared",
    "-fvisibility=hidden",
    "-fno-strict-aliasing",
    "-w",
];

/// Builds (or finds in the cache) the host library of `module`.
fn build(module: &str) -> Result<PathBuf, String> {
    let (cuda, emu, include) = dirs();
    let source = cuda.join(format!("{module}.cu"));
    let registry = include.join(format!("emu_{module}.inc"));
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut inputs: Vec<PathBuf> = std::fs::read_dir(&cuda)
        .map_err(|e| format!("{}: {e}", cuda.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    inputs.sort();
    inputs.extend([
        emu.join("runtime.h"),
        emu.join("module.cpp"),
        include.join("proofline_abi.cuh"),
        registry.clone(),
    ]);
    for p in &inputs {
        fnv1a(&mut h, p.to_string_lossy().as_bytes());
        fnv1a(&mut h, &std::fs::read(p).unwrap_or_default());
    }
    let cxx = compiler();
    let version = Command::new(&cxx)
        .arg("--version")
        .output()
        .map_err(|e| format!("no C++ compiler ({cxx}): {e}"))?;
    fnv1a(&mut h, &version.stdout);
    fnv1a(&mut h, format!("{FLAGS:?}").as_bytes());
    let dir = Path::new(env!("OUT_DIR")).join("emu");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let out = dir.join(format!("{module}-{h:016x}.so"));
    if out.is_file() {
        return Ok(out);
    }
    let tmp = out.with_extension(format!("tmp{}", std::process::id()));
    let status = Command::new(&cxx)
        .args(FLAGS)
        .arg("-I")
        .arg(&cuda)
        .arg("-I")
        .arg(&include)
        .arg("-include")
        .arg(emu.join("runtime.h"))
        .arg(format!("-DEMU_SOURCE=\"{}\"", source.display()))
        .arg(format!("-DEMU_REGISTRY=\"{}\"", registry.display()))
        .arg(emu.join("module.cpp"))
        .arg("-o")
        .arg(&tmp)
        .status()
        .map_err(|e| format!("{cxx}: {e}"))?;
    if !status.success() {
        return Err(format!(
            "{cxx} failed to build the host emulation of {module}.cu"
        ));
    }
    std::fs::rename(&tmp, &out).map_err(|e| e.to_string())?;
    Ok(out)
}

/// The loaded library of each module (built on first use, kept for the process).
fn launcher(module: &'static str) -> Result<LaunchFn, GpuError> {
    static LIBS: OnceLock<Mutex<HashMap<&'static str, LaunchFn>>> = OnceLock::new();
    let libs = LIBS.get_or_init(|| Mutex::new(HashMap::new()));
    let mut g = libs.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(f) = g.get(module) {
        return Ok(*f);
    }
    let path = build(module).map_err(GpuError::InvalidInput)?;
    // SAFETY: the library is ours (emu/module.cpp), has no initialisers with side effects, and is
    // never unloaded (leaked below).
    let lib = unsafe { libloading::Library::new(&path) }
        .map_err(|e| GpuError::InvalidInput(format!("{}: {e}", path.display())))?;
    let lib: &'static libloading::Library = Box::leak(Box::new(lib));
    // SAFETY: emu_launch has exactly this signature (emu/module.cpp).
    let f: LaunchFn = unsafe { lib.get::<LaunchFn>(b"emu_launch\0") }
        .map(|s| *s)
        .map_err(|e| GpuError::InvalidInput(format!("emu_launch: {e}")))?;
    g.insert(module, f);
    Ok(f)
}

/// The module that defines `kernel`.
fn module_of(kernel: &str) -> Result<&'static str, GpuError> {
    ARGS_LAYOUTS
        .iter()
        .flat_map(|a| a.kernels.iter())
        .find(|(_, k)| *k == kernel)
        .map(|(m, _)| *m)
        .ok_or_else(|| GpuError::InvalidInput(format!("unknown kernel {kernel}")))
}

/// Host memory standing in for a device buffer (16-byte aligned, as the kernels' vector loads
/// expect).
pub(crate) struct EmuBuf {
    ptr: *mut u32,
    words: usize,
    layout: Layout,
    _charge: Charge,
}

impl DevBuf for EmuBuf {
    fn ptr(&self) -> u64 {
        self.ptr as u64
    }
    fn words(&self) -> usize {
        self.words
    }
}

impl Drop for EmuBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `EmuExec::buffer` with this layout.
        unsafe { std::alloc::dealloc(self.ptr.cast(), self.layout) };
    }
}

/// Words that a fresh (not zeroed) buffer holds, so that a kernel reading memory nobody wrote
/// sees garbage, as it may on a device.
const POISON: u32 = 0xa5a5_a5a5;

/// An [`Exec`] that runs the kernels on the host. Allocations are charged like a slot's (to an
/// unlimited account whose peak the tests can read).
pub(crate) struct EmuExec {
    account: Arc<Account>,
    sm_count: u32,
}

impl EmuExec {
    /// An emulated device with `sm_count` multiprocessors (sizes the work splits).
    pub(crate) fn new(sm_count: u32) -> Self {
        EmuExec {
            account: Account::with_granule(u64::MAX, "emulation", 4),
            sm_count,
        }
    }

    /// Highest charge so far (bytes, one-word granule).
    pub(crate) fn peak(&self) -> u64 {
        self.account.peak()
    }

    fn buffer(&self, words: usize, zeroed: bool) -> Result<EmuBuf, GpuError> {
        let charge = self.account.charge(words)?;
        let layout = Layout::from_size_align(4 * words.max(4), 16)
            .map_err(|e| GpuError::InvalidInput(e.to_string()))?;
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe {
            if zeroed {
                std::alloc::alloc_zeroed(layout)
            } else {
                std::alloc::alloc(layout)
            }
        }
        .cast::<u32>();
        if ptr.is_null() {
            return Err(GpuError::InvalidInput(format!(
                "host allocation of {words} words"
            )));
        }
        if !zeroed {
            // SAFETY: `ptr` holds `layout.size() / 4` words.
            unsafe { std::slice::from_raw_parts_mut(ptr, layout.size() / 4) }.fill(POISON);
        }
        Ok(EmuBuf {
            ptr,
            words,
            layout,
            _charge: charge,
        })
    }

    /// The words of a buffer (tests inspect intermediate results).
    pub(crate) fn words<'a>(&self, b: &'a EmuBuf) -> &'a [u32] {
        // SAFETY: the buffer holds `words` initialised words; no kernel runs while the slice
        // lives (launches take `&self` and the slice borrows the buffer).
        unsafe { std::slice::from_raw_parts(b.ptr, b.words) }
    }
}

impl Exec for EmuExec {
    type Buf = EmuBuf;
    /// Host memory is all there is: a staging buffer is a plain vector.
    type Host = Vec<u32>;

    fn host_buffer(&self, words: usize) -> Result<Vec<u32>, GpuError> {
        Ok(vec![0; words])
    }

    fn fill_host(host: &mut Vec<u32>, src: &[u32]) -> Result<(), GpuError> {
        let dst = host
            .get_mut(..src.len())
            .ok_or_else(|| GpuError::InvalidInput("chunk larger than its buffer".into()))?;
        dst.copy_from_slice(src);
        Ok(())
    }

    fn upload_host(&self, dst: &mut EmuBuf, src: &Vec<u32>, words: usize) -> Result<(), GpuError> {
        let src = src
            .get(..words)
            .ok_or_else(|| GpuError::InvalidInput("upload past a staging buffer".into()))?;
        self.upload_at(dst, 0, src)
    }

    fn recycle_host(&self, _: Vec<u32>) {}

    fn label(&self) -> String {
        "emu".into()
    }

    fn alloc(&self, words: usize) -> Result<EmuBuf, GpuError> {
        self.buffer(words, false)
    }

    fn zeros(&self, words: usize) -> Result<EmuBuf, GpuError> {
        self.buffer(words, true)
    }

    fn upload_at(&self, dst: &mut EmuBuf, offset: usize, src: &[u32]) -> Result<(), GpuError> {
        check_copy(CopyDir::Upload, dst.words, offset, src.len())?;
        // SAFETY: bounds checked above; host memory owned by `dst`.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst.ptr.add(offset), src.len()) };
        Ok(())
    }

    fn read(
        &self,
        _what: Readback,
        src: &EmuBuf,
        offset: usize,
        dst: &mut [u32],
    ) -> Result<(), GpuError> {
        check_copy(CopyDir::Read, src.words, offset, dst.len())?;
        // SAFETY: bounds checked above.
        unsafe { std::ptr::copy_nonoverlapping(src.ptr.add(offset), dst.as_mut_ptr(), dst.len()) };
        self.account.synced();
        Ok(())
    }

    fn launch_as<A: KernelArgs>(
        &self,
        kernel: &'static str,
        grid: u32,
        block: u32,
        args: &A,
    ) -> Result<(), GpuError> {
        check_kernel::<A>(kernel)?;
        if grid == 0 {
            return Ok(());
        }
        let f = launcher(module_of(kernel)?)?;
        let name = CString::new(kernel).map_err(|e| GpuError::InvalidInput(e.to_string()))?;
        // SAFETY: `args` is the kernel's own #[repr(C)] argument struct (checked above), whose
        // C twin the library was compiled with; its pointers are addresses of live EmuBufs.
        let rc = unsafe {
            f(
                name.as_ptr(),
                grid,
                block,
                (args as *const A).cast(),
                std::mem::size_of::<A>(),
            )
        };
        match rc {
            0 => Ok(()),
            -1 => Err(GpuError::InvalidInput(format!(
                "{kernel}: not in the host build"
            ))),
            _ => Err(GpuError::InvalidInput(format!(
                "{kernel}: argument struct size differs in the host build"
            ))),
        }
    }

    fn sync(&self) -> Result<(), GpuError> {
        self.account.synced();
        Ok(())
    }

    fn sm_count(&self) -> u32 {
        self.sm_count
    }
}

#[cfg(test)]
mod tests {
    //! The existing kernels under the emulation, against blstrs: these pin the emulation itself
    //! (the same kernels pass the device suite) before new kernels are checked with it.
    use super::*;
    use crate::abi::{
        DevPtr, DevPtrMut, FpOpArgs, FrOpArgs, G1OpArgs, ELEMENT_THREADS, FR_WORDS,
        G1_TEST_THREADS, JACOBIAN_WORDS,
    };
    use crate::config::{HSequence, MsmAcc, MsmConfig, NttConfig};
    use crate::curve::{MsmCurve, G1, G2};
    use crate::exec::grid;
    use crate::layout::{
        affines_as_u32, g2_affines_as_u32, g2_jacobian_from_u32, jacobian_from_u32, scalars_as_u32,
        scalars_as_u32_mut,
    };
    use crate::msm::affine::batch_invert;
    use crate::msm::ones::{sum_ones, OnesBits, OnesList};
    use crate::msm::{self, Bases, MsmStats, OnesGroup};
    use crate::ntt::{self, build_tables, CInput, NttKind, TablePtrs};
    use crate::plan::{ChunkWindows, OnesRounds, Precomputation};
    use crate::testkit::{
        cpu_h_poly, cpu_msm, cpu_msm_g2, cpu_ntt, fp_montgomery_top, fp_op_reference,
        fp_unreduced_is, fp_words, fr_montgomery_top, mixed_scalars, random_g2_points,
        random_points, random_scalars, scalars_around_bits, FieldOp, ScalarMix,
    };
    use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
    use ff::Field;
    use group::prime::PrimeCurveAffine;
    use group::{Curve, Group};
    use proofline_groth16::msm::SparseScalars;
    use proofline_groth16::IndexBitmap;
    use proofline_groth16::{prover, CpuBackend};
    use rand::{Rng, SeedableRng};

    /// Few multiprocessors, so that the work splits take several waves at small sizes.
    pub(crate) const SMS: u32 = 2;

    fn mont_words(s: &Scalar) -> Vec<u32> {
        scalars_as_u32(std::slice::from_ref(s)).to_vec()
    }

    #[test]
    fn fr_ops_match_blstrs() {
        let e = EmuExec::new(SMS);
        let n = 512;
        let mut a = random_scalars(n, 1);
        let mut b = random_scalars(n, 2);
        a[0] = Scalar::ZERO;
        a[1] = Scalar::ONE;
        a[2] = -Scalar::ONE;
        // the largest unreduced sum (both operands) and difference (b over a zero a)
        let top = fr_montgomery_top();
        a[3] = top;
        b[3] = top;
        a[4] = Scalar::ZERO;
        b[4] = top;
        let da = e.upload(scalars_as_u32(&a)).unwrap();
        let db = e.upload(scalars_as_u32(&b)).unwrap();
        let out = e.alloc(n * FR_WORDS as usize).unwrap();
        type Op = fn(&Scalar, &Scalar) -> Scalar;
        let ops: [(FieldOp, Op); 6] = [
            (FieldOp::Mul, |x, y| x * y),
            (FieldOp::Sqr, |x, _| x.square()),
            (FieldOp::Add, |x, y| x + y),
            (FieldOp::Sub, |x, y| x - y),
            (FieldOp::MulWideDifference, |x, y| x * (y - x)),
            (FieldOp::MulWideSum, |x, y| x * (x + y)),
        ];
        for (op, f) in ops {
            e.launch(
                grid(n, ELEMENT_THREADS),
                ELEMENT_THREADS,
                &FrOpArgs {
                    a: DevPtr(da.ptr()),
                    b: DevPtr(db.ptr()),
                    out: DevPtrMut(out.ptr()),
                    n: n as u32,
                    op: op as u32,
                },
            )
            .unwrap();
            let got = e.words(&out);
            for i in 0..n {
                assert_eq!(
                    &got[8 * i..8 * i + 8],
                    &mont_words(&f(&a[i], &b[i]))[..],
                    "{op:?} at {i}"
                );
            }
        }
    }

    #[test]
    fn fp_ops_match_blst() {
        use rand_chacha::rand_core::{RngCore, SeedableRng};
        let e = EmuExec::new(SMS);
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(3);
        let n = 512;
        let mut gen = || {
            let mut l = [0u64; 6];
            for x in l.iter_mut() {
                *x = rng.next_u64();
            }
            l[5] &= 0x0fff_ffff_ffff_ffff;
            blst::blst_fp { l }
        };
        let mut a: Vec<blst::blst_fp> = (0..n).map(|_| gen()).collect();
        let mut b: Vec<blst::blst_fp> = (0..n).map(|_| gen()).collect();
        a[0] = blst::blst_fp { l: [0; 6] };
        // Montgomery words p - 1: the largest unreduced sum (a = b) and difference (b over 0)
        let p_minus_1 = fp_montgomery_top();
        a[1] = p_minus_1;
        b[1] = p_minus_1;
        b[0] = p_minus_1;
        let aw: Vec<u32> = a.iter().flat_map(fp_words).collect();
        let bw: Vec<u32> = b.iter().flat_map(fp_words).collect();
        let da = e.upload(&aw).unwrap();
        let db = e.upload(&bw).unwrap();
        let out = e.alloc(n * 12).unwrap();
        for op in [
            FieldOp::Mul,
            FieldOp::Sqr,
            FieldOp::Add,
            FieldOp::Sub,
            FieldOp::FromMont,
            FieldOp::MulWideDifference,
            FieldOp::MulWideSum,
            FieldOp::MulUnreducedProduct,
            FieldOp::MulBothUnreduced,
            FieldOp::SqrUnreduced,
            FieldOp::SubUnreduced,
            FieldOp::Neg,
            FieldOp::MulUnreducedFirst,
        ] {
            let got = fp_op(&e, &da, &db, &out, n, op);
            for i in 0..n {
                let r = fp_op_reference(op, &a[i], &b[i]).unwrap();
                assert_eq!(
                    &got[12 * i..12 * i + 12],
                    &fp_words(&r)[..],
                    "{op:?} at {i}"
                );
            }
        }
        // the unreduced products themselves: each the product or the product plus p, and the
        // inputs reach the second (the range the multiplications above took)
        let raw = fp_op(&e, &da, &db, &out, n, FieldOp::UnreducedProduct);
        let mut above_p = 0;
        for i in 0..n {
            let mut r = blst::blst_fp::default();
            // SAFETY: plain blst field arithmetic on valid values.
            unsafe { blst::blst_fp_mul(&mut r, &a[i], &b[i]) };
            let word: [u32; 12] = raw[12 * i..12 * i + 12].try_into().unwrap();
            match fp_unreduced_is(&word, &fp_words(&r)) {
                Some(plus_p) => above_p += plus_p as usize,
                None => panic!("unreduced product at {i} is neither a b nor a b + p"),
            }
        }
        assert!(above_p > 0, "no unreduced product at or above p in {n}");
    }

    /// Launches fp_op_test's `op` over the `n` values at `a` and `b` into `out`; its words.
    fn fp_op(e: &EmuExec, a: &EmuBuf, b: &EmuBuf, out: &EmuBuf, n: usize, op: FieldOp) -> Vec<u32> {
        e.launch(
            grid(n, ELEMENT_THREADS),
            ELEMENT_THREADS,
            &FpOpArgs {
                a: DevPtr(a.ptr()),
                b: DevPtr(b.ptr()),
                out: DevPtrMut(out.ptr()),
                n: n as u32,
                op: op as u32,
            },
        )
        .unwrap();
        e.words(out).to_vec()
    }

    #[test]
    fn g1_ops_match_blstrs() {
        let e = EmuExec::new(SMS);
        let n = 256;
        let mut a = random_points(n, 5);
        let mut b = random_points(n, 6);
        a[0] = G1Affine::identity();
        b[1] = G1Affine::identity();
        b[2] = a[2];
        b[3] = -a[3];
        let da = e.upload(affines_as_u32(&a)).unwrap();
        let db = e.upload(affines_as_u32(&b)).unwrap();
        let out = e.alloc(n * JACOBIAN_WORDS as usize).unwrap();
        for op in 0..4u32 {
            e.launch(
                grid(n, G1_TEST_THREADS),
                G1_TEST_THREADS,
                &G1OpArgs {
                    a: DevPtr(da.ptr()),
                    b: DevPtr(db.ptr()),
                    out: DevPtrMut(out.ptr()),
                    n: n as u32,
                    op,
                },
            )
            .unwrap();
            let got = e.words(&out);
            for i in 0..n {
                let (pa, pb) = (G1Projective::from(a[i]), G1Projective::from(b[i]));
                let want = match op {
                    0 | 2 => pa + pb,
                    _ => pa.double(),
                };
                let w = JACOBIAN_WORDS as usize;
                assert_eq!(
                    jacobian_from_u32(&got[w * i..w * (i + 1)]),
                    want,
                    "op {op} at {i}"
                );
            }
        }
    }

    #[test]
    fn ntt_and_h_poly_match_cpu() {
        let e = EmuExec::new(SMS);
        for lg in [1u32, 2, 5, 10, 11, 12, 13] {
            let n = 1usize << lg;
            let tables = build_tables(&e, lg).unwrap();
            let t = tables.ptrs();
            let x = random_scalars(n, 40 + u64::from(lg));
            for kind in [
                NttKind::Forward,
                NttKind::Inverse,
                NttKind::CosetForward,
                NttKind::CosetInverse,
            ] {
                let mut d = e.upload(scalars_as_u32(&x)).unwrap();
                ntt::ntt(&e, &mut d, &t, kind).unwrap();
                let mut got = vec![Scalar::ZERO; n];
                e.read(Readback::Values, &d, 0, scalars_as_u32_mut(&mut got))
                    .unwrap();
                let mut want = x.clone();
                cpu_ntt(&mut want, kind);
                assert!(got == want, "{kind:?} 2^{lg}");
            }
            let (a, b) = (x.clone(), random_scalars(n, 7));
            let product = prover::pointwise_product(&a, &b);
            for (name, cfg) in NttConfig::variants() {
                // any c where the sequence takes any, else the a∘b of a satisfied witness
                let c = if cfg.h.takes_any_c() {
                    random_scalars(n, 8)
                } else {
                    product.clone()
                };
                let mut want = a.clone();
                cpu_h_poly(&mut want, &b, &c);
                let got = h_poly_on(&e, &t, [&a, &b, &c], &cfg, CInput::Given);
                assert!(got == want, "h_poly 2^{lg}, {name}");
            }
        }
    }

    /// The fused H sequences over plans of three passes (for a, b and c), C's evaluations given
    /// as those of a satisfied witness.
    #[test]
    fn h_poly_large_matches_cpu() {
        let e = EmuExec::new(SMS);
        let lg = 19u32;
        let n = 1usize << lg;
        let tables = build_tables(&e, lg).unwrap();
        let t = tables.ptrs();
        let (a, b) = (random_scalars(n, 61), random_scalars(n, 62));
        let c = prover::pointwise_product(&a, &b);
        let mut want = a.clone();
        cpu_h_poly(&mut want, &b, &c);
        for h in [HSequence::Fused, HSequence::Quotient] {
            let got = h_poly_on(&e, &t, [&a, &b, &c], &NttConfig { h }, CInput::Given);
            assert!(got == want, "h_poly 2^{lg}, {h:?}");
        }
    }

    /// H on the emulated device from a, b and c's values on the host (C's evaluations, or stale
    /// values the product replaces), read back.
    fn h_poly_on(
        e: &EmuExec,
        t: &TablePtrs,
        [a, b, c]: [&[Scalar]; 3],
        cfg: &NttConfig,
        c_in: CInput,
    ) -> Vec<Scalar> {
        let up = |x: &[Scalar]| e.upload(scalars_as_u32(x)).unwrap();
        let (mut da, mut db, mut dc) = (up(a), up(b), up(c));
        ntt::h_poly(e, &mut da, &mut db, &mut dc, t, cfg, c_in).unwrap();
        let mut got = vec![Scalar::ZERO; a.len()];
        e.read(Readback::Values, &da, 0, scalars_as_u32_mut(&mut got))
            .unwrap();
        got
    }

    /// The proving path's H: C's evaluations derived on the device as a∘b equal the CPU
    /// prover's H, over one tile and over fused plans.
    #[test]
    fn h_poly_of_a_product_matches_the_cpu_prover() {
        let e = EmuExec::new(SMS);
        for lg in [0u32, 3, 11, 14] {
            let n = 1usize << lg;
            let tables = build_tables(&e, lg).unwrap();
            let t = tables.ptrs();
            let (a, b) = (random_scalars(n, 70 + u64::from(lg)), random_scalars(n, 71));
            let want = prover::compute_h(&CpuBackend, a.clone(), b.clone()).unwrap();
            // stale values in c: the product replaces them
            let stale = random_scalars(n, 72);
            for (name, cfg) in NttConfig::variants() {
                let got = h_poly_on(&e, &t, [&a, &b, &stale], &cfg, CInput::Product);
                assert!(got[..n - 1] == want[..], "2^{lg}, {name}");
            }
        }
    }

    fn dense_msm(
        e: &EmuExec,
        points: &[G1Affine],
        scalars: &[Scalar],
        cfg: &MsmConfig,
    ) -> G1Projective {
        let b = e.upload(affines_as_u32(points)).unwrap();
        let s = e.upload(scalars_as_u32(scalars)).unwrap();
        let n = scalars.len();
        msm::pippenger::<_, G1>(e, b.ptr(), s.ptr(), n, cfg, &mut MsmStats::default()).unwrap()
    }

    #[test]
    fn msm_dense_matches_blstrs() {
        let e = EmuExec::new(SMS);
        let points = random_points(1 << 12, 11);
        let scalars = random_scalars(1 << 12, 12);
        for (name, cfg) in MsmConfig::single_msm_variants() {
            for n in [1usize, 2, 3, 100, 1 << 10, 1 << 12] {
                // a fresh account: its peak is this MSM's (with real data read back), within
                // the byte formula of bytes.rs plus the uploads
                let e = EmuExec::new(SMS);
                let got = dense_msm(&e, &points[..n], &scalars[..n], &cfg);
                assert_eq!(got, cpu_msm(&points[..n], &scalars[..n]), "{name}, n = {n}");
                let uploads = 4 * (n * (24 + 8)) as u64;
                assert!(
                    e.peak() <= uploads + crate::bytes::pippenger_bytes_exact(n, &cfg, SMS),
                    "{name}, n = {n}: peak {}",
                    e.peak()
                );
            }
            // one giant bucket per window (the big-bucket path), and one point repeated
            // (doubling)
            let n = 1 << 11;
            let same_scalar = vec![-Scalar::ONE; n];
            assert_eq!(
                dense_msm(&e, &points[..n], &same_scalar, &cfg),
                cpu_msm(&points[..n], &same_scalar),
                "{name}"
            );
            let same_point = vec![points[0]; n];
            assert_eq!(
                dense_msm(&e, &same_point, &scalars[..n], &cfg),
                cpu_msm(&same_point, &scalars[..n]),
                "{name}"
            );
        }
    }

    /// Windows split between two MSMs over the same bases (the layout of the largest chunks,
    /// here at small sizes): equal to blstrs, with scalars whose low digits carry into the high
    /// part, and within the byte formula of bytes.rs.
    #[test]
    fn split_windows_match_blstrs() {
        let n = 1 << 11;
        let points = random_points(n, 81);
        let scalars = scalars_around_bits(n, &[180, 156, 165], 82);
        let want = cpu_msm(&points, &scalars);
        let splits = [
            ChunkWindows::split(9, 20),
            ChunkWindows::split(12, 13),
            ChunkWindows::split(15, 11),
        ];
        for (k, windows) in splits.iter().enumerate() {
            let variants = match k {
                0 => MsmConfig::single_msm_variants(),
                _ => vec![("default", MsmConfig::default())],
            };
            for (name, cfg) in variants {
                let e = EmuExec::new(SMS);
                let b = e.upload(affines_as_u32(&points)).unwrap();
                let s = e.upload(scalars_as_u32(&scalars)).unwrap();
                let got =
                    msm::pippenger_windows::<_, G1>(&e, b.ptr(), s.ptr(), n, windows, 0, &cfg)
                        .unwrap();
                assert_eq!(got, want, "{windows:?}, {name}");
                let uploads = 4 * (n * (24 + 8)) as u64;
                let formula = crate::bytes::windows_bytes_exact(n, windows, &cfg, SMS);
                assert!(
                    e.peak() <= uploads + formula,
                    "{windows:?}, {name}: peak {} against {formula}",
                    e.peak()
                );
            }
        }
    }

    /// Fixed-base precomputation: the copies equal 2^(k c) times the bases, and the MSM over
    /// them equals blstrs, for several copies per bucket set (and with a base at infinity),
    /// under the MSM variants.
    #[test]
    fn precomputed_msm_matches_blstrs() {
        let e = EmuExec::new(SMS);
        let n = 1500;
        let mut points = random_points(n, 71);
        points[5] = G1Affine::identity();
        let scalars = random_scalars(n, 72);
        let want = cpu_msm(&points, &scalars);
        let b = e.upload(affines_as_u32(&points)).unwrap();
        let s = e.upload(scalars_as_u32(&scalars)).unwrap();
        // every variant over 3 copies (six bucket sets, the last one short); the others, whose
        // sets only the sort sees differently, under each sort: windows of 16 bits take two
        // radix passes, of 18 bits (15 windows in one set of 2^17 buckets) three, through both
        // buffers of pairs
        let d = MsmConfig::default();
        let every = MsmConfig::single_msm_variants();
        let sorts: Vec<_> = every
            .iter()
            .filter(|(_, m)| MsmConfig { sort: d.sort, ..*m } == d)
            .cloned()
            .collect();
        // one set: the window combination's blocks stay 16 or fill the card
        let one_set: Vec<_> = sorts
            .iter()
            .cloned()
            .chain(MsmConfig::combine_variants())
            .collect();
        for (window, copies, variants) in [
            (16u32, 2u32, &sorts),
            (16, 3, &every),
            (16, 16, &one_set),
            (18, 15, &one_set),
        ] {
            let pre = Precomputation { window, copies };
            let all = e.alloc(n * 24 * copies as usize).unwrap();
            msm::precompute::<_, G1>(&e, b.ptr(), n, &pre, all.ptr()).unwrap();
            let words = e.words(&all);
            let k = copies as usize - 1;
            let shift = Scalar::from(2u64).pow_vartime([u64::from(window * (copies - 1))]);
            for i in [0usize, 5, n - 1] {
                let got = G1Projective::from(points_from_words(&words[24 * (k * n + i)..][..24]));
                assert_eq!(
                    got,
                    G1Projective::from(points[i]) * shift,
                    "copy {k} of {i}"
                );
            }
            for (name, cfg) in variants {
                let got = msm::pippenger_sets::<_, G1>(
                    &e,
                    all.ptr(),
                    Some((pre, n)),
                    s.ptr(),
                    n,
                    cfg,
                    &mut MsmStats::default(),
                )
                .unwrap();
                assert_eq!(got, want, "windows of {window}, {copies} copies, {name}");
            }
        }
    }

    fn points_from_words(w: &[u32]) -> G1Affine {
        let mut p = G1Affine::identity();
        // SAFETY: G1Affine is 24 words of a valid affine point (written by the kernel).
        unsafe {
            std::ptr::copy_nonoverlapping(w.as_ptr(), (&mut p as *mut G1Affine).cast::<u32>(), 24)
        };
        p
    }

    #[test]
    fn msm_sparse_matches_blstrs() {
        let e = EmuExec::new(SMS);
        let n = 3000;
        let mut points = random_points(n, 21);
        points[n / 2] = G1Affine::identity();
        let b = e.upload(affines_as_u32(&points)).unwrap();
        for (name, cfg) in MsmConfig::single_msm_variants() {
            for mix in [ScalarMix::B_8MIB, ScalarMix::ONES, ScalarMix::ZEROS] {
                let scalars = mixed_scalars(n, mix, 22);
                let split = SparseScalars::from_dense(&scalars);
                let mut stats = MsmStats::default();
                let got =
                    msm::sparse::<_, G1>(&e, Bases::Device(b.ptr()), &split, &cfg, &mut stats)
                        .unwrap();
                assert_eq!(got, cpu_msm(&points, &scalars), "{name}, {mix:?}");
                let host = Bases::Host {
                    points: &points,
                    chunk: 997,
                };
                let got = msm::sparse::<_, G1>(&e, host, &split, &cfg, &mut stats).unwrap();
                assert_eq!(got, cpu_msm(&points, &scalars), "{name}, streamed {mix:?}");
            }
        }
    }

    /// A query's MSM split against a held tail (`msm::sparse_held`): equal to blstrs with the
    /// held list an earlier split's tail (part of it this split's zeros and ones, the rest of
    /// this tail outside it), this split's own tail, and none; the held points plain and with
    /// precomputed copies.
    #[test]
    fn held_tail_msm_matches_blstrs() {
        let e = EmuExec::new(SMS);
        let n = 3000;
        let mut points = random_points(n, 31);
        points[7] = G1Affine::identity();
        let b = e.upload(affines_as_u32(&points)).unwrap();
        let scalars = mixed_scalars(n, ScalarMix::B_8MIB, 32);
        let want = cpu_msm(&points, &scalars);
        let split = SparseScalars::from_dense(&scalars);
        let earlier = SparseScalars::from_dense(&mixed_scalars(n, ScalarMix::B_8MIB, 33));
        let cfg = MsmConfig::default();
        for held in [earlier.tail_index, split.tail_index.clone(), Vec::new()] {
            let h = split.against_held(&held).unwrap();
            // copies for windows of 8 bits keep the emulated bucket sets small; the windows
            // the pipeline precomputes are checked in `precomputed_msm_matches_blstrs`
            for pre in [
                None,
                Some(Precomputation {
                    window: 8,
                    copies: 3,
                }),
            ] {
                let tail = match pre {
                    Some(p) => msm::hold_tail_precomputed::<_, G1>(&e, b.ptr(), held.clone(), p),
                    None => msm::hold_tail::<_, G1>(&e, b.ptr(), held.clone()),
                }
                .unwrap();
                let mut stats = MsmStats::default();
                let dev = msm::upload_held(&e, &h, &mut stats).unwrap();
                let got = msm::sparse_held::<_, G1, _>(
                    &e,
                    Bases::Device(b.ptr()),
                    &tail,
                    &h,
                    &dev,
                    &cfg,
                    &mut stats,
                )
                .unwrap();
                assert_eq!(got, want, "held {}, {pre:?}", held.len());
            }
        }
        // held scalars of another length than the held tail: an error, not a wrong sum
        let tail = msm::hold_tail::<_, G1>(&e, b.ptr(), split.tail_index.clone()).unwrap();
        let other = split.against_held(&split.tail_index[1..]).unwrap();
        let dev = msm::upload_held(&e, &other, &mut MsmStats::default()).unwrap();
        let bases = Bases::Device(b.ptr());
        let r = msm::sparse_held::<_, G1, _>(
            &e,
            bases,
            &tail,
            &other,
            &dev,
            &cfg,
            &mut MsmStats::default(),
        );
        assert!(matches!(r, Err(GpuError::InvalidInput(_))));
    }

    /// The sparse stage over held tails (`tails::hold_tails_device`, then
    /// `stages::sparse_stage_held_device`): L, A and B in G1 and B in G2 equal to blstrs with the
    /// tails held from an earlier partition's split (its tails partly this one's zeros and
    /// ones, this one's tail partly outside them) and from this split itself, gathered and
    /// over copies, B's tail in G2 held or not.
    #[test]
    fn sparse_stage_over_held_tails_matches_blstrs() {
        use crate::resident::StageBases;
        use crate::stages::{sparse_stage_held_device, SparseGroups};
        use crate::tails::{hold_tails_device, Tails};
        use proofline_groth16::msm::MsmPlan;
        let e = EmuExec::new(SMS);
        let lens = [1400usize, 1100, 900];
        let points: Vec<Vec<G1Affine>> = lens
            .iter()
            .zip(61u64..)
            .map(|(&n, seed)| random_points(n, seed))
            .collect();
        let g2_points = random_g2_points(lens[2], 64);
        let dev: Vec<_> = points
            .iter()
            .map(|p| e.upload(affines_as_u32(p)).unwrap())
            .collect();
        let dev_g2 = e.upload(G2::affines_as_u32(&g2_points)).unwrap();
        let bases = StageBases {
            h: Bases::Device(0),
            l: Bases::Device(dev[0].ptr()),
            a: Bases::Device(dev[1].ptr()),
            b_g1: Bases::Device(dev[2].ptr()),
            b_g2: Bases::Device(dev_g2.ptr()),
        };
        let mixes = [ScalarMix::L_8MIB, ScalarMix::B_8MIB, ScalarMix::B_8MIB];
        let plan_of = |seed: u64| {
            let s: Vec<Vec<Scalar>> = lens
                .iter()
                .zip(&mixes)
                .zip(seed..)
                .map(|((&n, &mix), seed)| mixed_scalars(n, mix, seed))
                .collect();
            let split = |k: usize| SparseScalars::from_dense(&s[k]);
            let plan = MsmPlan {
                l: split(0),
                a: split(1),
                b: split(2),
            };
            (s, plan)
        };
        let (scalars, plan) = plan_of(71);
        let (_, earlier) = plan_of(81);
        let want: Vec<G1Projective> = points
            .iter()
            .zip(&scalars)
            .map(|(p, s)| cpu_msm(p, s))
            .collect();
        let want_g2 = cpu_msm_g2(&g2_points, &scalars[2]);
        let ptrs = Tails {
            g1: [dev[0].ptr(), dev[1].ptr(), dev[2].ptr()],
            b_g2: Some(dev_g2.ptr()),
        };
        let cfg = MsmConfig::default();
        // windows of 8 bits: small bucket sets to emulate (see `held_tail_msm_matches_blstrs`)
        let copies = Some(Precomputation {
            window: 8,
            copies: 3,
        });
        let plain = Tails {
            g1: [None; 3],
            b_g2: None,
        };
        let g2_gathered = Tails {
            b_g2: Some(None),
            ..plain
        };
        let all_copies = Tails {
            g1: [copies, None, copies],
            b_g2: Some(copies),
        };
        // B in G2 not held (B's whole split for it), held gathered and over copies, from a split
        // against an earlier partition's tails and from this partition's own
        for (from, name, pres) in [
            (&earlier, "an earlier split", plain),
            (&earlier, "an earlier split", all_copies),
            (&plan, "this split", g2_gathered),
            (&plan, "this split", all_copies),
        ] {
            let held = hold_tails_device(&e, ptrs, from, pres).unwrap();
            let what = format!("tails of {name}, copies {pres:?}");
            let got =
                sparse_stage_held_device(&e, &plan, &held, &bases, SparseGroups::G1AndG2, &cfg)
                    .unwrap();
            assert_eq!([got.l, got.a, got.b_g1], want[..], "{what}");
            assert_eq!(got.b_g2, Some(want_g2), "{what}");
        }
        // the G1 side alone: no B in G2
        let held = hold_tails_device(&e, ptrs, &plan, plain).unwrap();
        let g1 =
            sparse_stage_held_device(&e, &plan, &held, &bases, SparseGroups::G1Only, &cfg).unwrap();
        assert_eq!([g1.l, g1.a, g1.b_g1], want[..]);
        assert_eq!(g1.b_g2, None);
    }

    /// Several MSMs through one Pippenger chunk (`msm::pippenger_batch`): each sum equal to
    /// blstrs when the MSMs span different numbers of radix tiles (2, 1 and 5 of 4096 points: the
    /// passes run the largest's tiles, the smaller sets' extra tiles hold nothing) and the
    /// largest sets the windows (10 bits: two radix passes), each MSM's scalars in a buffer of
    /// its own.
    #[test]
    fn pippenger_batch_matches_blstrs_over_msms_of_different_tiles() {
        use crate::config::MsmSort;
        use crate::plan::MsmBatch;
        let e = EmuExec::new(SMS);
        let sizes = [4100usize, 300, 16_500];
        let total: usize = sizes.iter().sum();
        let points = random_points(total, 111);
        let bases = e.upload(affines_as_u32(&points)).unwrap();
        let scalars: Vec<Vec<Scalar>> = sizes
            .iter()
            .zip(112u64..)
            .map(|(&n, seed)| random_scalars(n, seed))
            .collect();
        let on_device: Vec<_> = scalars
            .iter()
            .map(|s| e.upload(scalars_as_u32(s)).unwrap())
            .collect();
        let ptrs: Vec<u64> = on_device.iter().map(|b| b.ptr()).collect();
        let cfg = MsmConfig::default();
        let batch = MsmBatch::new(&sizes, MsmSort::Radix, cfg.max_chunk()).unwrap();
        assert_eq!((batch.sets.plan.c, batch.radix.passes.len()), (10, 2));
        let mut stats = MsmStats::default();
        let got = msm::pippenger_batch::<_, G1>(&e, bases.ptr(), &ptrs, &batch, &cfg, &mut stats)
            .unwrap();
        let mut first = 0;
        for (k, (&n, s)) in sizes.iter().zip(&scalars).enumerate() {
            assert_eq!(
                got[k],
                cpu_msm(&points[first..first + n], s),
                "MSM {k} of {n}"
            );
            first += n;
        }
        assert_eq!((stats.chunks, stats.tail), (1, total));
    }

    /// The sparse stage's G1 queries (each over its own bases) with their tails apart and
    /// together (`SparseTails::Together`: one Pippenger chunk for the three): equal to blstrs
    /// over resident and streamed bases, with a query without a tail before or between queries
    /// with one. Together takes one chunk where the radix sort can hold the tails, and runs them
    /// apart under a sort that cannot (atomic).
    #[test]
    fn sparse_stage_tails_together_match_blstrs() {
        use crate::config::{MsmSort, SparseTails};
        use crate::resident::StageBases;
        use crate::stages::{sparse_stage_device, SparseGroups};
        use proofline_groth16::msm::MsmPlan;
        let e = EmuExec::new(SMS);
        let lens = [1800usize, 1500, 1100];
        let points: Vec<Vec<G1Affine>> = lens
            .iter()
            .zip(91u64..)
            .map(|(&n, seed)| random_points(n, seed))
            .collect();
        let dev: Vec<_> = points
            .iter()
            .map(|p| e.upload(affines_as_u32(p)).unwrap())
            .collect();
        let together = MsmConfig {
            sparse_tails: SparseTails::Together,
            ..MsmConfig::default()
        };
        let configs = [
            ("apart", MsmConfig::default(), None),
            ("together", together, Some(1)),
            (
                "together, atomic sort",
                MsmConfig {
                    sort: MsmSort::Atomic,
                    ..together
                },
                None,
            ),
        ];
        let (l, b, ones) = (ScalarMix::L_8MIB, ScalarMix::B_8MIB, ScalarMix::ONES);
        for mixes in [[l, b, b], [l, ones, b], [ones, l, b]] {
            let scalars: Vec<Vec<Scalar>> = lens
                .iter()
                .zip(&mixes)
                .zip(101u64..)
                .map(|((&n, &mix), seed)| mixed_scalars(n, mix, seed))
                .collect();
            let want: Vec<G1Projective> = points
                .iter()
                .zip(&scalars)
                .map(|(p, s)| cpu_msm(p, s))
                .collect();
            let split = |k: usize| SparseScalars::from_dense(&scalars[k]);
            let plan = MsmPlan {
                l: split(0),
                a: split(1),
                b: split(2),
            };
            let tails = [&plan.l, &plan.a, &plan.b]
                .iter()
                .filter(|s| !s.tail_index.is_empty())
                .count();
            for (name, cfg, chunks) in &configs {
                let resident = StageBases {
                    h: Bases::Device(0),
                    l: Bases::Device(dev[0].ptr()),
                    a: Bases::Device(dev[1].ptr()),
                    b_g1: Bases::Device(dev[2].ptr()),
                    b_g2: Bases::Device(0),
                };
                let host = |k: usize| Bases::Host {
                    points: &points[k],
                    chunk: 777,
                };
                let streamed = StageBases {
                    h: Bases::Device(0),
                    l: host(0),
                    a: host(1),
                    b_g1: host(2),
                    b_g2: Bases::Device(0),
                };
                for (bases, how) in [(resident, "resident"), (streamed, "streamed")] {
                    let (got, stats) =
                        sparse_stage_device(&e, &plan, &bases, SparseGroups::G1Only, cfg).unwrap();
                    let what = format!("{name}, {how}, {mixes:?}");
                    assert_eq!([got.l, got.a, got.b_g1], want[..], "{what}");
                    assert_eq!(got.b_g2, None, "{what}");
                    assert_eq!(stats.chunks, chunks.unwrap_or(tails), "{what}");
                }
            }
        }
    }

    /// The ones' sum over bit ranges that start and end inside words, in both accumulations,
    /// with rounds small enough to run here: several groups, many rounds, an XYZZ rest, groups
    /// of one point, and repeated points (doublings).
    fn ones_sum_matches<C: MsmCurve>(points: &mut [C::Affine], fill: impl Fn(&mut [C::Affine]))
    where
        C::Projective: From<C::Affine> + std::iter::Sum,
    {
        let e = EmuExec::new(SMS);
        let n = points.len();
        fill(points);
        let b = e.upload(C::affines_as_u32(points)).unwrap();
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(32);
        let ones: IndexBitmap = (0..n as u32).filter(|_| rng.gen_bool(0.46)).collect();
        let bits = e.upload(ones.words()).unwrap();
        let bits = OnesBits::of(&bits, ones.len());
        for (name, cfg) in MsmConfig::single_msm_variants() {
            for rounds in [
                None,
                C::KERNELS.affine.map(|ak| ak.ones),
                Some(OnesRounds {
                    entries: n / 8,
                    left: 20,
                }),
                Some(OnesRounds {
                    entries: 1,
                    left: 1,
                }),
            ] {
                for (lo, hi) in [
                    (0, n),
                    (5, n - 9),
                    (33, 64),
                    (n / 2, n / 2 + 1),
                    (64, 96),
                    (40, 40),
                ] {
                    let want: C::Projective = ones
                        .iter_range(lo, hi)
                        .map(|i| C::Projective::from(points[i as usize]))
                        .sum();
                    let mut stats = MsmStats::default();
                    let base = b.at(lo * C::AFFINE_WORDS);
                    let single = OnesList::Single;
                    let got =
                        sum_ones::<_, C>(&e, base, &bits, lo..hi, single, rounds, &cfg, &mut stats)
                            .unwrap();
                    assert!(got == want, "{} {name}, {rounds:?}, {lo}..{hi}", C::NAME);
                    assert_eq!(stats.ones_summed, ones.iter_range(lo, hi).count());
                }
            }
        }
    }

    #[test]
    fn ones_sum_matches_blstrs_over_any_range() {
        ones_sum_matches::<G1>(&mut random_points(2500, 31), |p| {
            p[7] = G1Affine::identity();
            for i in 100..140 {
                p[i] = p[99];
            }
        });
    }

    /// The ones' subset sums of `group` and the ones summed over them: groups that hold
    /// infinity, double and cancel, a long run of one point, a count of bases that leaves the
    /// last group short (`points` is made so, at least 200 of them); ranges from aligned bases
    /// (inside words, ends inside a group) in both accumulations; unaligned starts refused; and
    /// sparse MSMs over the summed bases.
    fn summed_ones_match<C: MsmCurve>(
        points: &mut [C::Affine],
        group: OnesGroup,
        cpu: impl Fn(&[C::Affine], &[Scalar]) -> C::Projective,
    ) where
        C::Affine: PrimeCurveAffine,
        C::Projective: From<C::Affine> + std::iter::Sum + Curve<AffineRepr = C::Affine>,
    {
        let e = EmuExec::new(SMS);
        let n = points.len();
        let g = group.bases();
        assert!(n >= 200 && n % g != 0, "{n} points");
        for i in [7, 10, 11] {
            points[i] = C::Affine::identity();
        }
        let k = n / 40;
        for j in k..k + k / 2 {
            points[2 * j + 1] = points[2 * j];
        }
        for j in k + k / 2..2 * k {
            points[2 * j + 1] = -points[2 * j];
        }
        let run = 3 * n / 4;
        for i in run..run + n / 20 {
            points[i] = points[run - 1];
        }
        let sums = group.sum_points(n);
        let w = C::AFFINE_WORDS;
        let mut all = e.alloc((n + sums) * w).unwrap();
        e.upload_at(&mut all, 0, C::affines_as_u32(points)).unwrap();
        msm::ones_sums::<_, C>(&e, all.ptr(), n, all.at(n * w), group).unwrap();
        let mut got = vec![0u32; sums * w];
        e.read(Readback::Values, &all, n * w, &mut got).unwrap();
        let sum = |p: &[C::Affine]| -> C::Affine {
            let s: C::Projective = p.iter().map(|&q| C::Projective::from(q)).sum();
            s.to_affine()
        };
        let want: Vec<C::Affine> = points
            .chunks(g)
            .flat_map(|p| match group {
                OnesGroup::Pairs => vec![sum(p)],
                OnesGroup::Triples => {
                    let inf = C::Affine::identity();
                    let (a, b, c) = (p[0], p.get(1).copied().unwrap_or(inf), p.get(2).copied());
                    let c = c.unwrap_or(inf);
                    vec![sum(&[a, b]), sum(&[a, c]), sum(&[b, c]), sum(&[a, b, c])]
                }
            })
            .collect();
        assert_eq!(got, C::affines_as_u32(&want), "{} {group:?} sums", C::NAME);
        let list = OnesList::Summed { n, group };
        let (ranges, refused): (Vec<(usize, usize)>, [usize; 2]) = match group {
            OnesGroup::Pairs => (
                vec![(0, n), (6, n - 9), (32, 64), (64, 97), (n - 1, n), (40, 40)],
                [5, 7],
            ),
            OnesGroup::Triples => (
                vec![(0, n), (96, n - 9), (96, 200), (192, 193), (0, 5), (96, 96)],
                [3, 32],
            ),
        };
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(35);
        let xyzz = MsmConfig {
            acc: MsmAcc::Xyzz,
            ..MsmConfig::default()
        };
        for density in [0.46, 0.9] {
            let ones: IndexBitmap = (0..n as u32).filter(|_| rng.gen_bool(density)).collect();
            let bits = e.upload(ones.words()).unwrap();
            let bits = OnesBits::of(&bits, ones.len());
            for cfg in [MsmConfig::default(), xyzz] {
                let rounds = [
                    None,
                    Some(OnesRounds {
                        entries: n / 8,
                        left: 20,
                    }),
                ];
                for rounds in rounds {
                    for &(lo, hi) in &ranges {
                        let want: C::Projective = ones
                            .iter_range(lo, hi)
                            .map(|i| C::Projective::from(points[i as usize]))
                            .sum();
                        // one point per group of bases with a one
                        let mut groups: Vec<u32> =
                            ones.iter_range(lo, hi).map(|i| i / g as u32).collect();
                        groups.dedup();
                        let mut stats = MsmStats::default();
                        let base = all.at(lo * w);
                        let got = sum_ones::<_, C>(
                            &e,
                            base,
                            &bits,
                            lo..hi,
                            list,
                            rounds,
                            &cfg,
                            &mut stats,
                        )
                        .unwrap();
                        assert!(
                            got == want,
                            "{} {group:?} {density}, {cfg:?}, {rounds:?}, {lo}..{hi}",
                            C::NAME
                        );
                        assert_eq!(stats.ones_summed, groups.len(), "{lo}..{hi}");
                    }
                }
                for lo in refused {
                    let mut stats = MsmStats::default();
                    let at = all.at(lo * w);
                    let r = sum_ones::<_, C>(&e, at, &bits, lo..n, list, None, &cfg, &mut stats);
                    assert!(matches!(r, Err(GpuError::InvalidInput(_))), "{lo}: {r:?}");
                }
            }
        }
        for mix in [ScalarMix::B_8MIB, ScalarMix::ONES] {
            let scalars = mixed_scalars(n, mix, 36);
            let split = SparseScalars::from_dense(&scalars);
            let bases = Bases::Summed {
                ptr: all.ptr(),
                n,
                group,
            };
            let mut stats = MsmStats::default();
            let cfg = MsmConfig::default();
            let got = msm::sparse::<_, C>(&e, bases, &split, &cfg, &mut stats).unwrap();
            assert!(
                got == cpu(points, &scalars),
                "{} {group:?} {mix:?}",
                C::NAME
            );
        }
    }

    #[test]
    fn paired_ones_match_blstrs() {
        let mut points = random_points(2501, 34);
        summed_ones_match::<G1>(&mut points, OnesGroup::Pairs, cpu_msm);
    }

    #[test]
    fn tripled_ones_match_blstrs() {
        let mut points = random_points(2503, 38);
        summed_ones_match::<G1>(&mut points, OnesGroup::Triples, cpu_msm);
    }

    #[test]
    fn g2_paired_ones_match_blstrs() {
        let mut points = random_g2_points(401, 37);
        summed_ones_match::<G2>(&mut points, OnesGroup::Pairs, cpu_msm_g2);
    }

    #[test]
    fn g2_tripled_ones_match_blstrs() {
        let mut points = random_g2_points(401, 39);
        summed_ones_match::<G2>(&mut points, OnesGroup::Triples, cpu_msm_g2);
    }

    #[test]
    fn g2_ones_sum_matches_blstrs_over_any_range() {
        ones_sum_matches::<G2>(&mut random_g2_points(400, 33), |p| {
            p[7] = G2Affine::identity();
            for i in 100..120 {
                p[i] = p[99];
            }
        });
    }

    fn random_fp(rng: &mut impl rand_chacha::rand_core::RngCore) -> blst::blst_fp {
        let mut l = [0u64; 6];
        for x in l.iter_mut() {
            *x = rng.next_u64();
        }
        l[5] &= 0x0fff_ffff_ffff_ffff;
        blst::blst_fp { l }
    }

    /// `got` holds blst's inverse of each of `a` (0 for 0), in the kernels' words.
    fn assert_fp_inverses(got: &[u32], a: &[blst::blst_fp]) {
        for (i, x) in a.iter().enumerate() {
            let mut r = blst::blst_fp::default();
            // SAFETY: plain blst field arithmetic (blst maps 0 to 0).
            unsafe { blst::blst_fp_eucl_inverse(&mut r, x) };
            assert_eq!(
                &got[12 * i..12 * i + 12],
                &fp_words(&r)[..],
                "inverse at {i}"
            );
        }
    }

    /// The batch-affine rounds' batched inversion (a product tree per block, the binary
    /// inversion at the root of the tree over the blocks, back down) against blst, over several
    /// blocks and a last partial one, with 1 and p - 1 among the values; and over more blocks
    /// than the top tree has leaves (301: its leaves take two blocks each, the last unpaired).
    #[test]
    fn batched_fp_inversion_matches_blst() {
        use crate::abi::AFF_INV_THREADS;
        use rand_chacha::rand_core::SeedableRng;
        let e = EmuExec::new(SMS);
        let ak = G1::KERNELS.affine.expect("G1 has batch-affine rounds");
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(37);
        let per_block = AFF_INV_THREADS as usize;
        for n in [3 * per_block + 17, 300 * per_block + 17] {
            let mut a: Vec<blst::blst_fp> = (0..n).map(|_| random_fp(&mut rng)).collect();
            // SAFETY: plain blst field arithmetic.
            unsafe {
                blst::blst_fp_from_uint64(&mut a[0], [1u64, 0, 0, 0, 0, 0].as_ptr());
                blst::blst_fp_cneg(&mut a[1], &a[0], true);
            }
            let aw: Vec<u32> = a.iter().flat_map(fp_words).collect();
            let values = e.upload(&aw).unwrap();
            let blk = e.alloc(n.div_ceil(per_block) * 12).unwrap();
            let out = e.alloc(n * 12).unwrap();
            batch_invert(&e, ak, values.ptr(), blk.ptr(), out.ptr(), n).unwrap();
            assert_fp_inverses(e.words(&out), &a);
        }
        // one value more than the top tree's leaves can hold is refused before any launch
        let over = crate::abi::AFF_INV_MAX as usize + 1;
        assert!(matches!(
            batch_invert(&e, ak, 0, 0, 0, over),
            Err(GpuError::InvalidInput(_))
        ));
    }

    /// The batched binary GCD alone (zero where its batches do not finish, so a value it could
    /// not invert fails the comparison) and the plain binary algorithm against blst, over
    /// random values and Montgomery words at the edges: 0, 1, small, single bits, p - 1.
    #[test]
    fn fp_binary_gcd_inverses_match_blst() {
        use rand_chacha::rand_core::SeedableRng;
        let e = EmuExec::new(SMS);
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(41);
        let mut a: Vec<blst::blst_fp> = (0..2000).map(|_| random_fp(&mut rng)).collect();
        let words = |w: [u32; 12]| {
            let mut l = [0u64; 6];
            for (k, x) in l.iter_mut().enumerate() {
                *x = u64::from(w[2 * k]) | (u64::from(w[2 * k + 1]) << 32);
            }
            blst::blst_fp { l }
        };
        let mut edge = vec![[0u32; 12]; 8];
        edge[1][0] = 1;
        edge[2][0] = 2;
        edge[3][0] = 0xffff_ffff;
        edge[4][2] = 1;
        edge[5][11] = 1 << 28;
        edge[6] = fp_words(&fp_montgomery_top());
        edge[7][1] = 3;
        a.extend(edge.into_iter().map(words));
        for k in 0..381 {
            let mut w = [0u32; 12];
            w[k / 32] = 1 << (k % 32);
            a.push(words(w));
        }
        for op in [FieldOp::InverseBatched, FieldOp::InverseBinary] {
            assert_fp_inverses(&fp_unary_op(&e, &a, op), &a);
        }
    }

    /// `fp_op_test`'s `op` of each of `a` (as both operands) under the emulation, in words.
    fn fp_unary_op(e: &EmuExec, a: &[blst::blst_fp], op: FieldOp) -> Vec<u32> {
        let n = a.len();
        let aw: Vec<u32> = a.iter().flat_map(fp_words).collect();
        let da = e.upload(&aw).unwrap();
        let out = e.alloc(n * 12).unwrap();
        fp_op(e, &da, &da, &out, n, op)
    }

    #[test]
    fn fp_inverse_and_fp2_ops_match_blst() {
        use rand_chacha::rand_core::SeedableRng;
        let e = EmuExec::new(SMS);
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(31);
        let n = 128;
        // Fp inverse, with 0 (inverse 0) and 1
        let mut a: Vec<blst::blst_fp> = (0..n).map(|_| random_fp(&mut rng)).collect();
        a[0] = blst::blst_fp { l: [0; 6] };
        a[1] = blst::blst_fp::default();
        // SAFETY: plain blst field arithmetic.
        unsafe { blst::blst_fp_from_uint64(&mut a[1], [1u64, 0, 0, 0, 0, 0].as_ptr()) };
        assert_fp_inverses(&fp_unary_op(&e, &a, FieldOp::Inverse), &a);
        // Fp2
        let fp2 = |rng: &mut rand_chacha::ChaCha20Rng| blst::blst_fp2 {
            fp: [random_fp(rng), random_fp(rng)],
        };
        let mut x: Vec<blst::blst_fp2> = (0..n).map(|_| fp2(&mut rng)).collect();
        let y: Vec<blst::blst_fp2> = (0..n).map(|_| fp2(&mut rng)).collect();
        x[0] = blst::blst_fp2::default();
        x[1].fp[1] = blst::blst_fp::default();
        let words = |v: &[blst::blst_fp2]| -> Vec<u32> {
            v.iter()
                .flat_map(|f| fp_words(&f.fp[0]).into_iter().chain(fp_words(&f.fp[1])))
                .collect()
        };
        let dx = e.upload(&words(&x)).unwrap();
        let dy = e.upload(&words(&y)).unwrap();
        let out = e.alloc(n * 24).unwrap();
        for op in [0u32, 1, 2, 3, 5] {
            e.launch_as(
                "fp2_op_test",
                grid(n, ELEMENT_THREADS),
                ELEMENT_THREADS,
                &FpOpArgs {
                    a: DevPtr(dx.ptr()),
                    b: DevPtr(dy.ptr()),
                    out: DevPtrMut(out.ptr()),
                    n: n as u32,
                    op,
                },
            )
            .unwrap();
            let got = e.words(&out);
            for i in 0..n {
                let mut r = blst::blst_fp2::default();
                // SAFETY: plain blst field arithmetic on valid values.
                unsafe {
                    match op {
                        0 => blst::blst_fp2_mul(&mut r, &x[i], &y[i]),
                        1 => blst::blst_fp2_sqr(&mut r, &x[i]),
                        2 => blst::blst_fp2_add(&mut r, &x[i], &y[i]),
                        3 => blst::blst_fp2_sub(&mut r, &x[i], &y[i]),
                        _ => blst::blst_fp2_eucl_inverse(&mut r, &x[i]),
                    }
                }
                assert_eq!(
                    &got[24 * i..24 * i + 24],
                    &words(&[r])[..],
                    "fp2 op {op} at {i}"
                );
            }
        }
    }

    #[test]
    fn g2_ops_match_blstrs() {
        let e = EmuExec::new(SMS);
        let n = 64;
        let mut a = random_g2_points(n, 41);
        let mut b = random_g2_points(n, 42);
        a[0] = G2Affine::identity();
        b[1] = G2Affine::identity();
        b[2] = a[2];
        b[3] = -a[3];
        let da = e.upload(g2_affines_as_u32(&a)).unwrap();
        let db = e.upload(g2_affines_as_u32(&b)).unwrap();
        let out = e.alloc(n * 72).unwrap();
        for op in 0..4u32 {
            e.launch_as(
                "g2_op_test",
                grid(n, G1_TEST_THREADS),
                G1_TEST_THREADS,
                &G1OpArgs {
                    a: DevPtr(da.ptr()),
                    b: DevPtr(db.ptr()),
                    out: DevPtrMut(out.ptr()),
                    n: n as u32,
                    op,
                },
            )
            .unwrap();
            let got = e.words(&out);
            for i in 0..n {
                let (pa, pb) = (G2Projective::from(a[i]), G2Projective::from(b[i]));
                let want = match op {
                    0 | 2 => pa + pb,
                    _ => pa.double(),
                };
                assert_eq!(
                    g2_jacobian_from_u32(&got[72 * i..72 * (i + 1)]),
                    want,
                    "op {op} at {i}"
                );
            }
        }
    }

    #[test]
    fn g2_msm_matches_blstrs() {
        let e = EmuExec::new(SMS);
        let cfg = MsmConfig::default();
        let mut stats = MsmStats::default();
        let n = 1500;
        let mut points = random_g2_points(n, 51);
        points[7] = G2Affine::identity();
        let scalars = random_scalars(n, 52);
        let b = e.upload(g2_affines_as_u32(&points)).unwrap();
        for len in [1usize, 3, 200, n] {
            let s = e.upload(scalars_as_u32(&scalars[..len])).unwrap();
            let got =
                msm::pippenger::<_, G2>(&e, b.ptr(), s.ptr(), len, &cfg, &mut MsmStats::default())
                    .unwrap();
            assert_eq!(
                got,
                cpu_msm_g2(&points[..len], &scalars[..len]),
                "dense n = {len}"
            );
        }
        // the measured B split of an 8MiB partition, resident and streamed; one giant bucket
        let mixed = mixed_scalars(n, ScalarMix::B_8MIB, 53);
        let split = SparseScalars::from_dense(&mixed);
        let want = cpu_msm_g2(&points, &mixed);
        let got =
            msm::sparse::<_, G2>(&e, Bases::Device(b.ptr()), &split, &cfg, &mut stats).unwrap();
        assert_eq!(got, want, "sparse resident");
        let host = Bases::Host {
            points: &points,
            chunk: 333,
        };
        let got = msm::sparse::<_, G2>(&e, host, &split, &cfg, &mut stats).unwrap();
        assert_eq!(got, want, "sparse streamed");
        let same = vec![Scalar::from(5u64); n];
        let s = e.upload(scalars_as_u32(&same)).unwrap();
        let got = msm::pippenger::<_, G2>(&e, b.ptr(), s.ptr(), n, &cfg, &mut stats).unwrap();
        assert_eq!(got, cpu_msm_g2(&points, &same), "one bucket");
    }
}
