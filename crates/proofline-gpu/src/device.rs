//! Device discovery and [`GpuDevice`], the handle of one GPU that only the memory allocator
//! holds: it alone can set pool attributes, trim the pool, read memory info and pool usage, and
//! synchronise the whole device. Compute happens on [`GpuSlot`]s, which the device creates at
//! start-up (each with its own stream) and which cannot reach any of those calls.
//!
//! Neither type is `Clone`; the device's CUDA context (the primary context of an explicit device
//! index) never leaves this crate.

use std::collections::HashMap;
use std::sync::Arc;

use cudarc::driver::sys::{self, CUmemPool_attribute as PoolAttr};
use cudarc::driver::{CudaContext, CudaEvent, CudaFunction, CudaModule, CudaStream};
use cudarc::nvrtc::Ptx;

use crate::abi::ARGS_LAYOUTS;
use crate::error::GpuError;
use crate::kernels;
use crate::oplog::{DeviceLog, DeviceOp, Recording};
use crate::slot::GpuSlot;
use crate::turn::{KernelTurns, SlotKernels};

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
    if !unsafe { sys::is_culib_present() } {
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
    use sys::CUdevice_attribute_enum as A;
    let mut out = Vec::new();
    for index in 0..count as usize {
        let dev = cudarc::driver::result::device::get(index as i32)?;
        let attr = |a| {
            // SAFETY: dev is a valid device handle from cuDeviceGet.
            unsafe { cudarc::driver::result::device::get_attribute(dev, a) }
        };
        let major = attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
        let minor = attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
        let sms = attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
        // SAFETY: as above.
        let total = unsafe { cudarc::driver::result::device::total_mem(dev) }?;
        let name = cudarc::driver::result::device::get_name(dev)?;
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
        reason: format!("no image of module '{module}' (kernels are built for sm_80 and newer)"),
    })
}

/// The kernels of some modules, by name, loaded once per device and shared by its slots.
pub(crate) struct KernelTable {
    functions: HashMap<&'static str, CudaFunction>,
    _modules: Vec<Arc<CudaModule>>,
}

impl KernelTable {
    /// Loads `modules` on `ctx` and looks up every kernel of `abi.rs` that they define.
    pub(crate) fn load(
        ctx: &Arc<CudaContext>,
        (major, minor): (i32, i32),
        modules: &[&str],
        notes: &mut Vec<String>,
    ) -> Result<Self, GpuError> {
        let mut functions = HashMap::new();
        let mut loaded = Vec::new();
        for m in modules {
            let (img, what) = select_image(m, major, minor)?;
            notes.push(format!("{m}: {what}"));
            let module = ctx.load_module(img)?;
            for (_, kernel) in ARGS_LAYOUTS
                .iter()
                .flat_map(|a| a.kernels.iter())
                .filter(|(module, _)| module == m)
            {
                functions.insert(*kernel, module.load_function(kernel)?);
            }
            loaded.push(module);
        }
        Ok(KernelTable {
            functions,
            _modules: loaded,
        })
    }

    pub(crate) fn get(&self, kernel: &'static str) -> Result<&CudaFunction, GpuError> {
        self.functions.get(kernel).ok_or_else(|| {
            GpuError::InvalidInput(format!("kernel {kernel} is not loaded on this device"))
        })
    }
}

/// Production kernel modules (the test module `arith` is loaded only by `testkit`, beside these).
pub(crate) const MODULES: &[&str] = &["ntt", "msm", "msm_g2"];

/// What the device's stream-ordered memory pool holds, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct PoolUsage {
    /// Handed out to allocations now.
    pub used: u64,
    /// Mapped by the pool now (used + cached).
    pub reserved: u64,
    /// Highest `used` since the last reset.
    pub used_high: u64,
    /// Highest `reserved` since the last reset.
    pub reserved_high: u64,
}

/// Options of [`GpuDevice::open`].
#[derive(Clone, Copy, Debug, Default)]
pub struct DeviceOptions {
    /// Whether the device-op log records (tests and the stage harness).
    pub recording: Recording,
    /// Whether the device's slots run their stages' kernels in turn or side by side.
    pub slot_kernels: SlotKernels,
}

/// State shared by a device and its slots: the context, the kernels, the stream resident data
/// is uploaded and freed on, the op log and the timing reference.
pub(crate) struct Shared {
    pub(crate) index: usize,
    pub(crate) ctx: Arc<CudaContext>,
    pub(crate) kernels: KernelTable,
    /// Stream of resident uploads (parameters' bases, NTT tables): their buffers are freed on it,
    /// so that a free never waits behind another slot's kernels.
    pub(crate) resident_stream: Arc<CudaStream>,
    pub(crate) log: Arc<DeviceLog>,
    /// The slots' kernel turn (`turn.rs`).
    pub(crate) turns: KernelTurns,
    /// Recorded (and completed) at open: CUDA-event spans are measured from it.
    pub(crate) reference: Option<CudaEvent>,
    pub(crate) sm_count: u32,
    /// Compute capability (major, minor), to load more modules (tests).
    #[cfg_attr(not(feature = "testkit"), allow(dead_code))]
    pub(crate) cc: (i32, i32),
}

/// The handle of one GPU that its allocator owns. See the module documentation.
pub struct GpuDevice {
    shared: Arc<Shared>,
    info: DeviceInfo,
    images: String,
    pool: sys::CUmemoryPool,
    next_slot: usize,
}

// SAFETY: the pool handle is a driver object usable from any thread (the driver API is thread
// safe) once the context is bound; every method binds the context first.
unsafe impl Send for GpuDevice {}
// SAFETY: as above; the methods take `&self` and only make driver calls.
unsafe impl Sync for GpuDevice {}

impl std::fmt::Debug for GpuDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuDevice")
            .field("info", &self.info)
            .field("images", &self.images)
            .finish()
    }
}

impl GpuDevice {
    /// Opens device `index` (its primary context), loads the kernels and creates the stream of
    /// resident uploads. Never call on a request path (module loading takes a while).
    pub fn open(index: usize, options: DeviceOptions) -> Result<Self, GpuError> {
        let devices = probe()?;
        let info = devices.get(index).cloned().ok_or(GpuError::NoSuchDevice {
            index,
            count: devices.len(),
        })?;
        let ctx = CudaContext::new(index)?;
        // Buffers are used only on the stream that allocated them, or read by other streams
        // after the stream that wrote them was synchronised on the host (resident data), so
        // cudarc's cross-stream event tracking is not needed.
        // SAFETY: see above; every slot follows that rule (slot.rs).
        unsafe { ctx.disable_event_tracking() };
        let resident_stream = ctx.new_stream()?;
        let mut notes = Vec::new();
        let kernels = KernelTable::load(&ctx, info.compute_capability, MODULES, &mut notes)?;
        let mut pool = std::ptr::null_mut();
        // SAFETY: plain driver call on this context's device.
        unsafe { sys::cuDeviceGetDefaultMemPool(&mut pool, ctx.cu_device()).result()? };
        let reference = match options.recording {
            Recording::On => {
                let ev = ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))?;
                ev.record(&resident_stream)?;
                ev.synchronize()?;
                Some(ev)
            }
            Recording::Off => None,
        };
        let shared = Arc::new(Shared {
            index,
            sm_count: info.multiprocessors.max(1) as u32,
            cc: info.compute_capability,
            ctx,
            kernels,
            resident_stream,
            log: Arc::new(DeviceLog::new(options.recording)),
            turns: KernelTurns::new(options.slot_kernels),
            reference,
        });
        Ok(GpuDevice {
            shared,
            info,
            images: notes.join(", "),
            pool,
            next_slot: 0,
        })
    }

    /// A compute slot on this device: its own stream, the device's kernels, the explicit device
    /// index. Create slots at start-up: the first stream of a context synchronises it.
    pub fn new_slot(&mut self) -> Result<GpuSlot, GpuError> {
        let id = self.next_slot;
        self.next_slot += 1;
        GpuSlot::new(self.shared.clone(), id)
    }

    /// The device index.
    pub fn index(&self) -> usize {
        self.shared.index
    }

    /// "cuda:N", for logs and metrics.
    pub fn label(&self) -> String {
        format!("cuda:{}", self.shared.index)
    }

    /// Device description.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// Which kernel images were loaded (cubin arch or PTX), for logs.
    pub fn kernel_images(&self) -> &str {
        &self.images
    }

    /// The device-op log (records only with [`Recording::On`]).
    pub fn log(&self) -> Arc<DeviceLog> {
        self.shared.log.clone()
    }

    fn logged<T>(
        &self,
        op: DeviceOp,
        f: impl FnOnce() -> Result<T, GpuError>,
    ) -> Result<T, GpuError> {
        let start = self.shared.log.now();
        self.shared.ctx.bind_to_thread()?;
        let r = f();
        self.shared.log.op(op, start);
        r
    }

    /// (free, total) device memory (`cuMemGetInfo`; memory cached by the pool is not free).
    pub fn memory_info(&self) -> Result<(usize, usize), GpuError> {
        self.logged(DeviceOp::MemoryInfo, || {
            Ok(self.shared.ctx.mem_get_info()?)
        })
    }

    /// Sets how many bytes of freed memory the pool keeps cached across synchronisations.
    pub fn set_pool_release_threshold(&self, bytes: u64) -> Result<(), GpuError> {
        self.logged(DeviceOp::SetReleaseThreshold, || {
            self.set_attr(PoolAttr::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, bytes)
        })
    }

    /// Returns cached memory above `keep_bytes` (and above what is in use) to the device. First
    /// synchronises the resident stream, which is idle whenever no upload is in flight, so that
    /// evicted resident data is back in the pool.
    pub fn trim_pool(&self, keep_bytes: u64) -> Result<(), GpuError> {
        self.logged(DeviceOp::Trim, || {
            self.shared.resident_stream.synchronize()?;
            // SAFETY: the pool belongs to this context's device.
            unsafe { sys::cuMemPoolTrimTo(self.pool, keep_bytes as usize).result()? };
            Ok(())
        })
    }

    /// Waits for every stream of every context on the device.
    pub fn synchronize_device(&self) -> Result<(), GpuError> {
        self.logged(DeviceOp::SynchronizeDevice, || {
            Ok(self.shared.ctx.synchronize()?)
        })
    }

    /// The pool's used and reserved bytes, now and at their high-water marks. Reads host-side
    /// counters: it waits for nothing, and is not logged as a device-global call.
    pub fn pool_usage(&self) -> Result<PoolUsage, GpuError> {
        self.shared.ctx.bind_to_thread()?;
        Ok(PoolUsage {
            used: self.attr(PoolAttr::CU_MEMPOOL_ATTR_USED_MEM_CURRENT)?,
            reserved: self.attr(PoolAttr::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)?,
            used_high: self.attr(PoolAttr::CU_MEMPOOL_ATTR_USED_MEM_HIGH)?,
            reserved_high: self.attr(PoolAttr::CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH)?,
        })
    }

    /// Resets the pool's high-water marks to the current values.
    pub fn reset_pool_high_water(&self) -> Result<(), GpuError> {
        self.logged(DeviceOp::ResetHighWater, || {
            self.set_attr(PoolAttr::CU_MEMPOOL_ATTR_USED_MEM_HIGH, 0)?;
            self.set_attr(PoolAttr::CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, 0)
        })
    }

    fn attr(&self, a: PoolAttr) -> Result<u64, GpuError> {
        let mut v: u64 = 0;
        // SAFETY: these attributes are cuuint64_t values written through the pointer.
        unsafe { sys::cuMemPoolGetAttribute(self.pool, a, (&mut v as *mut u64).cast()).result()? };
        Ok(v)
    }

    fn set_attr(&self, a: PoolAttr, mut v: u64) -> Result<(), GpuError> {
        // SAFETY: as above, read through the pointer.
        unsafe { sys::cuMemPoolSetAttribute(self.pool, a, (&mut v as *mut u64).cast()).result()? };
        Ok(())
    }
}
