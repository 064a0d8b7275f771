//! Device discovery and the per-device [`GpuContext`]: one CUDA context (the
//! device's primary context) on an explicit device index, one stream owned by
//! this context, and the kernel modules selected by compute capability.
//!
//! Compute methods synchronise only this context's stream. Device-global calls
//! (device synchronise, memory-pool trim and threshold, memory info) are
//! separate methods meant for the VRAM allocator actor alone.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr, LaunchConfig,
    PushKernelArg,
};
use cudarc::nvrtc::Ptx;

use crate::error::GpuError;
use crate::kernels;

/// One CUDA device as seen by [`probe`].
#[derive(Clone, Debug, serde::Serialize)]
pub struct DeviceInfo {
    /// device ordinal
    pub index: usize,
    /// marketing name
    pub name: String,
    /// (major, minor)
    pub compute_capability: (i32, i32),
    /// total device memory in bytes
    pub total_memory: usize,
    /// multiprocessors
    pub multiprocessors: i32,
}

fn driver_ready() -> Result<(), GpuError> {
    if !kernels::HAVE_KERNELS {
        return Err(GpuError::Unavailable(format!(
            "this build has no CUDA kernels ({})",
            kernels::BUILD_NOTE
        )));
    }
    // cudarc panics when libcuda is missing: check before any other call.
    // SAFETY: only tries to dlopen the driver library.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(GpuError::Unavailable(
            "NVIDIA driver library (libcuda) not found".into(),
        ));
    }
    cudarc::driver::result::init()
        .map_err(|e| GpuError::Unavailable(format!("cuInit failed: {e:?}")))?;
    Ok(())
}

/// Lists the CUDA devices, or says why the GPU backend is unavailable.
pub fn probe() -> Result<Vec<DeviceInfo>, GpuError> {
    driver_ready()?;
    let count = CudaContext::device_count().map_err(|e| GpuError::Unavailable(format!("{e:?}")))?;
    if count <= 0 {
        return Err(GpuError::Unavailable("no CUDA device present".into()));
    }
    use cudarc::driver::sys::CUdevice_attribute_enum as A;
    let mut out = Vec::new();
    for index in 0..count as usize {
        let dev = cudarc::driver::result::device::get(index as i32)?;
        // SAFETY: dev is a valid device handle from cuDeviceGet.
        let (major, minor, sms, total, name) = unsafe {
            let major = cudarc::driver::result::device::get_attribute(
                dev,
                A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
            )?;
            let minor = cudarc::driver::result::device::get_attribute(
                dev,
                A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
            )?;
            let sms = cudarc::driver::result::device::get_attribute(
                dev,
                A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            )?;
            let total = cudarc::driver::result::device::total_mem(dev)?;
            (
                major,
                minor,
                sms,
                total,
                cudarc::driver::result::device::get_name(dev)?,
            )
        };
        out.push(DeviceInfo {
            index,
            name,
            compute_capability: (major, minor),
            total_memory: total,
            multiprocessors: sms,
        });
    }
    Ok(out)
}

/// Which embedded image a device gets: the newest cubin of the same major
/// version whose minor is <= the device's, else PTX (JIT by the driver) for
/// newer cards. Returns a description for logs.
pub(crate) fn select_image(
    module: &str,
    major: i32,
    minor: i32,
) -> Result<(Ptx, String), GpuError> {
    let cc = (major * 10 + minor) as u32;
    let best = kernels::CUBINS
        .iter()
        .filter(|(m, a, _)| *m == module && a / 10 == major as u32 && *a <= cc)
        .max_by_key(|(_, a, _)| *a);
    if let Some((_, a, bytes)) = best {
        return Ok((Ptx::from_binary(bytes.to_vec()), format!("cubin sm_{a}")));
    }
    let ptx = kernels::PTX
        .iter()
        .filter(|(m, a, _)| *m == module && *a <= cc)
        .max_by_key(|(_, a, _)| *a);
    if let Some((_, a, src)) = ptx {
        return Ok((Ptx::from_src(*src), format!("ptx compute_{a} (driver JIT)")));
    }
    Err(GpuError::NoKernelImage {
        major,
        minor,
        reason: "kernels are built for sm_80 and newer".into(),
    })
}

pub(crate) struct Kernels {
    // arith
    pub fr_op_test: CudaFunction,
    pub fp_op_test: CudaFunction,
    pub g1_op_test: CudaFunction,
    pub fr_mul_bench: CudaFunction,
    pub fp_mul_bench: CudaFunction,
    // ntt
    pub ntt_pass: CudaFunction,
    pub fr_build_stage_tables: CudaFunction,
    pub fr_h_pointwise: CudaFunction,
    // msm
    pub msm_digits: CudaFunction,
    pub msm_count_tail: CudaFunction,
    pub scan_tiles: CudaFunction,
    pub scan_sums: CudaFunction,
    pub scan_add: CudaFunction,
    pub msm_bucket_acc: CudaFunction,
    pub msm_find_big: CudaFunction,
    pub msm_bucket_fixup: CudaFunction,
    pub msm_bucket_reduce: CudaFunction,
    pub msm_window_combine: CudaFunction,
    pub msm_big_partial: CudaFunction,
    pub msm_big_final: CudaFunction,
    pub xyzz_reduce: CudaFunction,
    pub msm_sum_ones: CudaFunction,
    pub msm_collect_ones: CudaFunction,
    pub g1_tile_points: CudaFunction,
}

/// Tables cached per domain size: twiddles and coset powers on the device.
pub(crate) struct NttTables {
    pub tw_fwd: CudaSlice<u32>,
    pub tw_inv: CudaSlice<u32>,
    pub g_lo: CudaSlice<u32>,
    pub g_hi: CudaSlice<u32>,
    pub ginv_lo: CudaSlice<u32>,
    pub ginv_hi: CudaSlice<u32>,
    pub pow_lo_bits: u32,
    /// n^-1, (g^n - 1)^-1 (Montgomery)
    pub n_inv: CudaSlice<u32>,
    pub z_inv: CudaSlice<u32>,
}

/// A CUDA context bound to one device index, with its own stream.
pub struct GpuContext {
    index: usize,
    pub(crate) ctx: Arc<CudaContext>,
    pub(crate) stream: Arc<CudaStream>,
    pub(crate) k: Kernels,
    pub(crate) tables: Mutex<HashMap<u32, Arc<NttTables>>>,
    pub(crate) sm_count: u32,
    info: DeviceInfo,
    images: String,
}

impl std::fmt::Debug for GpuContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuContext")
            .field("index", &self.index)
            .field("info", &self.info)
            .field("images", &self.images)
            .finish()
    }
}

fn load(
    ctx: &Arc<CudaContext>,
    module: &str,
    major: i32,
    minor: i32,
    notes: &mut Vec<String>,
) -> Result<Arc<CudaModule>, GpuError> {
    let (img, what) = select_image(module, major, minor)?;
    notes.push(format!("{module}: {what}"));
    Ok(ctx.load_module(img)?)
}

impl GpuContext {
    /// Opens device `device_index` (its primary context), creates this
    /// context's stream and loads the kernels.
    pub fn new(device_index: usize) -> Result<Self, GpuError> {
        let devices = probe()?;
        let info = devices
            .get(device_index)
            .cloned()
            .ok_or(GpuError::NoSuchDevice {
                index: device_index,
                count: devices.len(),
            })?;
        let ctx = CudaContext::new(device_index)?;
        // One stream per GpuContext; buffers are only used on it, so cudarc's
        // cross-stream event tracking is not needed.
        // SAFETY: every CudaSlice of this context is used on `stream` only.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream()?;
        let (major, minor) = info.compute_capability;
        let mut notes = Vec::new();
        let arith = load(&ctx, "arith", major, minor, &mut notes)?;
        let ntt = load(&ctx, "ntt", major, minor, &mut notes)?;
        let msm = load(&ctx, "msm", major, minor, &mut notes)?;
        let f = |m: &Arc<CudaModule>, name: &str| m.load_function(name).map_err(GpuError::from);
        let k = Kernels {
            fr_op_test: f(&arith, "fr_op_test")?,
            fp_op_test: f(&arith, "fp_op_test")?,
            g1_op_test: f(&arith, "g1_op_test")?,
            fr_mul_bench: f(&arith, "fr_mul_bench")?,
            fp_mul_bench: f(&arith, "fp_mul_bench")?,
            ntt_pass: f(&ntt, "ntt_pass")?,
            fr_build_stage_tables: f(&ntt, "fr_build_stage_tables")?,
            fr_h_pointwise: f(&ntt, "fr_h_pointwise")?,
            msm_digits: f(&msm, "msm_digits")?,
            msm_count_tail: f(&msm, "msm_count_tail")?,
            scan_tiles: f(&msm, "scan_tiles")?,
            scan_sums: f(&msm, "scan_sums")?,
            scan_add: f(&msm, "scan_add")?,
            msm_bucket_acc: f(&msm, "msm_bucket_acc")?,
            msm_find_big: f(&msm, "msm_find_big")?,
            msm_bucket_fixup: f(&msm, "msm_bucket_fixup")?,
            msm_bucket_reduce: f(&msm, "msm_bucket_reduce")?,
            msm_window_combine: f(&msm, "msm_window_combine")?,
            msm_big_partial: f(&msm, "msm_big_partial")?,
            msm_big_final: f(&msm, "msm_big_final")?,
            xyzz_reduce: f(&msm, "xyzz_reduce")?,
            msm_sum_ones: f(&msm, "msm_sum_ones")?,
            msm_collect_ones: f(&msm, "msm_collect_ones")?,
            g1_tile_points: f(&msm, "g1_tile_points")?,
        };
        Ok(GpuContext {
            index: device_index,
            sm_count: info.multiprocessors.max(1) as u32,
            ctx,
            stream,
            k,
            tables: Mutex::new(HashMap::new()),
            info,
            images: notes.join(", "),
        })
    }

    /// The device index this context is bound to.
    pub fn device_index(&self) -> usize {
        self.index
    }

    /// Device description.
    pub fn device_info(&self) -> &DeviceInfo {
        &self.info
    }

    /// Which kernel images were loaded (cubin arch or PTX), for logs.
    pub fn kernel_images(&self) -> &str {
        &self.images
    }

    /// (free, total) device memory in bytes (cuMemGetInfo: device-global; pool-held
    /// memory is not counted as free).
    pub fn memory_info(&self) -> Result<(usize, usize), GpuError> {
        Ok(self.ctx.mem_get_info()?)
    }

    /// Waits for this context's stream only.
    pub fn synchronize(&self) -> Result<(), GpuError> {
        Ok(self.stream.synchronize()?)
    }

    /// ALLOCATOR-ONLY: synchronises the whole device (every stream of every
    /// context on it). Never called by the compute methods.
    pub fn synchronize_device(&self) -> Result<(), GpuError> {
        Ok(self.ctx.synchronize()?)
    }

    /// ALLOCATOR-ONLY: trims the device's default memory pool to `keep_bytes`.
    /// Memory freed asynchronously is only returned after its stream was
    /// synchronised on the host.
    pub fn trim_pool(&self, keep_bytes: usize) -> Result<(), GpuError> {
        self.ctx.bind_to_thread()?;
        let mut pool = std::ptr::null_mut();
        // SAFETY: plain driver calls on this context's device.
        unsafe {
            cudarc::driver::sys::cuDeviceGetDefaultMemPool(&mut pool, self.ctx.cu_device())
                .result()?;
            cudarc::driver::sys::cuMemPoolTrimTo(pool, keep_bytes).result()?;
        }
        Ok(())
    }

    /// ALLOCATOR-ONLY: sets the release threshold of the device's default pool
    /// (bytes kept cached across synchronisations).
    pub fn set_pool_release_threshold(&self, bytes: u64) -> Result<(), GpuError> {
        self.ctx.bind_to_thread()?;
        let mut pool = std::ptr::null_mut();
        let mut v: u64 = bytes;
        // SAFETY: the attribute takes a cuuint64_t by pointer.
        unsafe {
            cudarc::driver::sys::cuDeviceGetDefaultMemPool(&mut pool, self.ctx.cu_device())
                .result()?;
            cudarc::driver::sys::cuMemPoolSetAttribute(
                pool,
                cudarc::driver::sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                (&mut v as *mut u64).cast(),
            )
            .result()?;
        }
        Ok(())
    }

    /// Drops the cached NTT tables (twiddles are n/2 x 32 bytes per direction).
    pub fn clear_caches(&self) {
        if let Ok(mut t) = self.tables.lock() {
            t.clear();
        }
    }

    // ---- helpers for the other modules -----------------------------------------
    pub(crate) fn alloc_u32(&self, len: usize) -> Result<CudaSlice<u32>, GpuError> {
        // SAFETY: every buffer is fully written by a copy or a kernel before it is read.
        Ok(unsafe { self.stream.alloc::<u32>(len.max(1)) }?)
    }
    pub(crate) fn zeros_u32(&self, len: usize) -> Result<CudaSlice<u32>, GpuError> {
        Ok(self.stream.alloc_zeros::<u32>(len.max(1))?)
    }
    pub(crate) fn upload_u32(&self, src: &[u32]) -> Result<CudaSlice<u32>, GpuError> {
        let mut d = self.alloc_u32(src.len())?;
        if !src.is_empty() {
            self.stream.memcpy_htod(src, &mut d)?;
        }
        Ok(d)
    }
    pub(crate) fn ptr(&self, s: &CudaSlice<u32>) -> u64 {
        let (p, _sync) = s.device_ptr(&self.stream);
        p
    }
    pub(crate) fn download(&self, src: &CudaSlice<u32>, dst: &mut [u32]) -> Result<(), GpuError> {
        self.download_at(src, 0, dst)
    }
    /// Copies `src[offset .. offset + dst.len()]` to the host (synchronises).
    pub(crate) fn download_at(
        &self,
        src: &CudaSlice<u32>,
        offset: usize,
        dst: &mut [u32],
    ) -> Result<(), GpuError> {
        if dst.is_empty() {
            return Ok(());
        }
        let view = src.slice(offset..offset + dst.len());
        self.stream.memcpy_dtoh(&view, dst)?;
        self.stream.synchronize()?;
        Ok(())
    }

    /// Launches `f` with a 1-D grid and the given scalar/pointer arguments.
    pub(crate) fn launch(
        &self,
        f: &CudaFunction,
        grid: u32,
        block: u32,
        args: &[Arg],
    ) -> Result<(), GpuError> {
        if grid == 0 {
            return Ok(());
        }
        let cfg = LaunchConfig {
            grid_dim: (grid, 1, 1),
            block_dim: (block, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = self.stream.launch_builder(f);
        for a in args {
            match a {
                Arg::U32(v) => b.arg(v),
                Arg::U64(v) => b.arg(v),
            };
        }
        // SAFETY: argument lists match the kernel signatures in cuda/*.cu.
        unsafe { b.launch(cfg) }?;
        Ok(())
    }
}

/// A kernel argument (device pointers are passed as u64).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Arg {
    U32(u32),
    U64(u64),
}
