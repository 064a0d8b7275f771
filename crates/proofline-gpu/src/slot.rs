//! [`GpuSlot`]: one compute slot of a device: its own stream, the device's kernels (loaded once
//! per device, shared), an explicit device index. A slot can allocate (only inside an arena),
//! copy, launch and synchronise its own streams; it has no way to reach a device-global call.
//!
//! A stage's kernels run in the device's kernel turn (`turn.rs`), which its uploads need not
//! wait for.
//!
//! Stream rules a slot follows (they are why cudarc's cross-stream tracking is off):
//! * a stage's buffers are allocated, used and freed on the slot's stream, and the stage
//!   synchronises that stream after its last buffer is dropped, before it returns (and before
//!   its lease goes back to the allocator);
//! * resident data (bases, NTT tables) is uploaded on the device's resident stream, which is
//!   synchronised before the data is handed to any other slot, and freed on it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rayon::prelude::*;

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{
    CudaEvent, CudaSlice, CudaStream, DevicePtr, LaunchConfig, PinnedHostSlice, PushKernelArg,
};

use crate::arena::{Account, Arena, Charge};
use crate::device::{KernelTable, Shared};
use crate::error::GpuError;
use crate::exec::{check_copy, check_kernel, CopyDir, DevBuf, Exec, KernelArgs, Readback};
use crate::oplog::{KernelSpan, Recording, SlotSpan};

/// Slot id used in the op log for work on the device's resident stream.
pub const RESIDENT_LANE: usize = usize::MAX;

/// One compute slot. See the module documentation.
pub struct GpuSlot {
    pub(crate) shared: Arc<Shared>,
    id: usize,
    stream: Arc<CudaStream>,
    /// Pinned host buffers of streamed bases, kept for the slot's life: allocating page-locked
    /// memory takes milliseconds per hundred MB, and freeing it synchronises the whole device,
    /// which a slot must never do while other slots have work in flight.
    pinned: Mutex<Vec<PinnedHostSlice<u32>>>,
}

impl std::fmt::Debug for GpuSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuSlot")
            .field("device", &self.shared.index)
            .field("slot", &self.id)
            .finish()
    }
}

/// Which stream a piece of work runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lane {
    /// The slot's own stream.
    Compute,
    /// The device's resident-upload stream.
    Resident,
}

impl GpuSlot {
    pub(crate) fn new(shared: Arc<Shared>, id: usize) -> Result<Self, GpuError> {
        let stream = shared.ctx.new_stream()?;
        Ok(GpuSlot {
            shared,
            id,
            stream,
            pinned: Mutex::new(Vec::new()),
        })
    }

    /// The device index this slot computes on.
    pub fn device_index(&self) -> usize {
        self.shared.index
    }

    /// The slot's number on its device.
    pub fn id(&self) -> usize {
        self.id
    }

    /// "cuda:D/S", for logs.
    pub fn label(&self) -> String {
        format!("cuda:{}/{}", self.shared.index, self.id)
    }

    /// Multiprocessors of the device.
    pub fn sm_count(&self) -> u32 {
        self.shared.sm_count
    }

    /// Runs `f` on a lane with every allocation charged to `arena`, then synchronises the lane
    /// (after `f`'s buffers were dropped), so that nothing of `f` is in flight on return.
    pub(crate) fn run<T>(
        &self,
        lane: Lane,
        arena: &Arena,
        f: impl FnOnce(&SlotExec<'_>) -> Result<T, GpuError>,
    ) -> Result<T, GpuError> {
        self.run_with(lane, arena, &self.shared.kernels, f)
    }

    /// As [`GpuSlot::run`], launching from another kernel table (the test module's).
    pub(crate) fn run_with<T>(
        &self,
        lane: Lane,
        arena: &Arena,
        kernels: &KernelTable,
        f: impl FnOnce(&SlotExec<'_>) -> Result<T, GpuError>,
    ) -> Result<T, GpuError> {
        let e = SlotExec::new(self, lane, arena.account.clone(), kernels);
        let r = f(&e);
        let s = e.sync();
        let r = r?;
        s?;
        Ok(r)
    }

    /// Runs `f` in the device's kernel turn (`turn.rs`): waits for the turn, runs `f` on `e`,
    /// synchronises `e`'s lane (so nothing of `f` is in flight) and hands the turn on. Returns
    /// `f`'s result and how long the slot waited for the turn.
    pub(crate) fn in_kernel_turn<T>(
        &self,
        e: &SlotExec<'_>,
        f: impl FnOnce() -> Result<T, GpuError>,
    ) -> Result<(T, Duration), GpuError> {
        let turn = self.shared.turns.wait();
        let r = f();
        let synced = e.sync();
        let waited = turn.waited();
        drop(turn);
        let r = r?;
        synced?;
        Ok((r, waited))
    }

    pub(crate) fn stream(&self, lane: Lane) -> &Arc<CudaStream> {
        match lane {
            Lane::Compute => &self.stream,
            Lane::Resident => &self.shared.resident_stream,
        }
    }
}

/// The in-flight state of one lane of one slot, for the op log.
struct Tracker {
    shared: Arc<Shared>,
    stream: Arc<CudaStream>,
    slot: usize,
    inflight: Mutex<Option<Inflight>>,
}

struct Inflight {
    start: f64,
    event: Option<CudaEvent>,
}

impl Tracker {
    /// Called before anything is enqueued: opens an in-flight span if none is open.
    fn begin(&self) -> Result<(), GpuError> {
        let mut g = self.inflight.lock().unwrap_or_else(|e| e.into_inner());
        if g.is_none() {
            let start = self.shared.log.now();
            let event = match self.shared.log.recording() {
                Recording::On => {
                    let ev = self
                        .shared
                        .ctx
                        .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
                    ev.record(&self.stream)?;
                    Some(ev)
                }
                Recording::Off => None,
            };
            *g = Some(Inflight { start, event });
        }
        Ok(())
    }

    /// Synchronises the stream and closes the open span, if any.
    fn sync(&self) -> Result<(), GpuError> {
        let open = self
            .inflight
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        let end_event = match open.as_ref().and_then(|o| o.event.as_ref()) {
            Some(_) => {
                let ev = self
                    .shared
                    .ctx
                    .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
                ev.record(&self.stream)?;
                Some(ev)
            }
            None => None,
        };
        self.stream.synchronize()?;
        if let Some(o) = open {
            let log = &self.shared.log;
            log.slot_span(SlotSpan {
                slot: self.slot,
                start: o.start,
                end: log.now(),
            });
            if let (Some(reference), Some(s), Some(e)) =
                (self.shared.reference.as_ref(), o.event, end_event)
            {
                log.kernel_span(KernelSpan {
                    slot: self.slot,
                    start_ms: f64::from(reference.elapsed_ms(&s)?),
                    end_ms: f64::from(reference.elapsed_ms(&e)?),
                });
            }
        }
        Ok(())
    }
}

/// A device buffer of a stage, charged to its arena; freed on its stream when dropped.
pub(crate) struct SlotBuf {
    slice: Option<CudaSlice<u32>>,
    ptr: u64,
    words: usize,
    charge: Option<Charge>,
    tracker: Arc<Tracker>,
}

impl SlotBuf {
    /// Keeps the buffer beyond its stage (resident data, under a long-lived lease): the charge
    /// becomes permanent and the buffer is no longer tracked.
    pub(crate) fn into_resident(mut self) -> DeviceWords {
        if let Some(c) = self.charge.take() {
            c.settle();
        }
        DeviceWords {
            slice: self.slice.take(),
            ptr: self.ptr,
            words: self.words,
        }
    }
}

impl DevBuf for SlotBuf {
    fn ptr(&self) -> u64 {
        self.ptr
    }
    fn words(&self) -> usize {
        self.words
    }
}

impl Drop for SlotBuf {
    fn drop(&mut self) {
        if self.slice.is_some() {
            // the free is enqueued on the stream: the lane is in flight until its next sync
            let _ = self.tracker.begin();
        }
    }
}

/// Device words that outlive a stage (resident data). Freed on the stream that allocated them.
pub(crate) struct DeviceWords {
    slice: Option<CudaSlice<u32>>,
    ptr: u64,
    words: usize,
}

impl DevBuf for DeviceWords {
    fn ptr(&self) -> u64 {
        self.ptr
    }
    fn words(&self) -> usize {
        self.words
    }
}

impl Drop for DeviceWords {
    fn drop(&mut self) {
        if let Some(s) = self.slice.take() {
            // cuMemFreeAsync needs the context current on whichever thread drops the data.
            let _ = s.context().bind_to_thread();
            drop(s);
        }
    }
}

/// Pageable sources of at least this many words reach the device through the slot's pinned
/// staging buffers: the driver's own staging of pageable memory ran at 6.8 GB/s on the H200
/// host, DMA from pinned memory at 55 GB/s (docs/gpu-kernels.md).
const STAGE_MIN_WORDS: usize = 1 << 18;
/// Words per staging chunk (64 MiB): two chunks in flight, one being filled by the CPU while
/// the other is copied by DMA.
const STAGE_CHUNK_WORDS: usize = 1 << 24;
/// Words each thread copies into a staging buffer at a time.
const FILL_SPLIT_WORDS: usize = 1 << 16;

/// [`Exec`] on one lane of a slot, charging an arena.
pub(crate) struct SlotExec<'a> {
    slot: &'a GpuSlot,
    kernels: &'a KernelTable,
    stream: &'a Arc<CudaStream>,
    account: Arc<Account>,
    tracker: Arc<Tracker>,
}

impl<'a> SlotExec<'a> {
    fn new(slot: &'a GpuSlot, lane: Lane, account: Arc<Account>, kernels: &'a KernelTable) -> Self {
        let stream = slot.stream(lane);
        SlotExec {
            slot,
            kernels,
            stream,
            account,
            tracker: Arc::new(Tracker {
                shared: slot.shared.clone(),
                stream: stream.clone(),
                slot: match lane {
                    Lane::Compute => slot.id,
                    Lane::Resident => RESIDENT_LANE,
                },
                inflight: Mutex::new(None),
            }),
        }
    }
}

impl SlotExec<'_> {
    /// `src` into `dst` at `offset` by the driver's copy: asynchronous DMA from page-locked
    /// memory, staged by the driver from pageable memory.
    fn copy_htod(&self, dst: &mut SlotBuf, offset: usize, src: &[u32]) -> Result<(), GpuError> {
        if src.is_empty() {
            return Ok(());
        }
        check_copy(CopyDir::Upload, dst.words, offset, src.len())?;
        self.tracker.begin()?;
        let slice = dst
            .slice
            .as_mut()
            .ok_or_else(|| GpuError::InvalidInput("upload into a released buffer".into()))?;
        let mut view = slice.slice_mut(offset..offset + src.len());
        self.stream.memcpy_htod(src, &mut view)?;
        Ok(())
    }

    /// `src` (pageable) into `dst` at `offset` through two of the slot's pinned buffers: the
    /// CPU fills one chunk (in parallel) while the previous chunk's DMA runs. Returns once the
    /// last chunk is on the device, so `src` may be dropped, as after the driver's copy.
    fn upload_staged(&self, dst: &mut SlotBuf, offset: usize, src: &[u32]) -> Result<(), GpuError> {
        // checked before any staging buffer is taken (each chunk's copy checks its own part)
        check_copy(CopyDir::Upload, dst.words, offset, src.len())?;
        let chunk = STAGE_CHUNK_WORDS.min(src.len());
        let mut bufs = [self.host_buffer(chunk)?, self.host_buffer(chunk)?];
        let mut copied: [Option<CudaEvent>; 2] = [None, None];
        let result = (|| -> Result<(), GpuError> {
            for (k, piece) in src.chunks(chunk).enumerate() {
                let i = k % 2;
                // the buffer's previous chunk must be on the device before it is refilled
                if let Some(ev) = copied[i].take() {
                    ev.synchronize()?;
                }
                let host = bufs[i]
                    .as_mut_slice()?
                    .get_mut(..piece.len())
                    .ok_or_else(|| GpuError::InvalidInput("staging chunk too small".into()))?;
                host.par_chunks_mut(FILL_SPLIT_WORDS)
                    .zip(piece.par_chunks(FILL_SPLIT_WORDS))
                    .for_each(|(d, s)| d.copy_from_slice(s));
                self.copy_htod(dst, offset + k * chunk, host)?;
                copied[i] = Some(
                    self.stream
                        .record_event(Some(CUevent_flags::CU_EVENT_DISABLE_TIMING))?,
                );
            }
            for ev in copied.iter().flatten() {
                ev.synchronize()?;
            }
            Ok(())
        })();
        if result.is_err() {
            // a chunk may still be in flight: the buffers are only reused once it has landed
            self.stream.synchronize()?;
        }
        let [a, b] = bufs;
        self.recycle_host(a);
        self.recycle_host(b);
        result
    }

    /// The driver's copy from pageable memory, without the staging buffers (the benchmark's
    /// reference for [`SlotExec::upload_staged`]).
    #[cfg(any(test, feature = "testkit"))]
    pub(crate) fn upload_pageable(&self, dst: &mut SlotBuf, src: &[u32]) -> Result<(), GpuError> {
        self.copy_htod(dst, 0, src)
    }
}

impl Exec for SlotExec<'_> {
    type Buf = SlotBuf;
    type Host = PinnedHostSlice<u32>;

    fn host_buffer(&self, words: usize) -> Result<PinnedHostSlice<u32>, GpuError> {
        let mut cache = self.slot.pinned.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = cache.iter().position(|b| b.len() >= words) {
            return Ok(cache.swap_remove(i));
        }
        drop(cache);
        // SAFETY: page-locked host memory of `words` u32s; zeroed below before any use.
        let mut b = unsafe { self.stream.context().alloc_pinned::<u32>(words.max(1)) }?;
        b.as_mut_slice()?.fill(0);
        Ok(b)
    }

    fn fill_host(host: &mut PinnedHostSlice<u32>, src: &[u32]) -> Result<(), GpuError> {
        let dst = host
            .as_mut_slice()?
            .get_mut(..src.len())
            .ok_or_else(|| GpuError::InvalidInput("chunk larger than its buffer".into()))?;
        dst.copy_from_slice(src);
        Ok(())
    }

    fn upload_host(
        &self,
        dst: &mut SlotBuf,
        src: &PinnedHostSlice<u32>,
        words: usize,
    ) -> Result<(), GpuError> {
        // a plain slice of page-locked memory: the copy is an asynchronous DMA (the caller
        // synchronises before the buffer is written again)
        let src = src
            .as_slice()?
            .get(..words)
            .ok_or_else(|| GpuError::InvalidInput("upload past a staging buffer".into()))?;
        self.copy_htod(dst, 0, src)
    }

    fn recycle_host(&self, host: PinnedHostSlice<u32>) {
        self.slot
            .pinned
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(host);
    }

    fn label(&self) -> String {
        self.slot.label()
    }

    fn alloc(&self, words: usize) -> Result<SlotBuf, GpuError> {
        let charge = self.account.charge(words)?;
        self.tracker.begin()?;
        // SAFETY: every buffer is fully written by a copy or a kernel before it is read.
        let slice = unsafe { self.stream.alloc::<u32>(words.max(1)) }?;
        let ptr = {
            let (ptr, _sync) = slice.device_ptr(self.stream);
            ptr
        };
        Ok(SlotBuf {
            ptr,
            words,
            slice: Some(slice),
            charge: Some(charge),
            tracker: self.tracker.clone(),
        })
    }

    fn zeros(&self, words: usize) -> Result<SlotBuf, GpuError> {
        let mut b = self.alloc(words)?;
        if let Some(s) = b.slice.as_mut() {
            self.stream.memset_zeros(s)?;
        }
        Ok(b)
    }

    fn upload_at(&self, dst: &mut SlotBuf, offset: usize, src: &[u32]) -> Result<(), GpuError> {
        if src.len() < STAGE_MIN_WORDS {
            return self.copy_htod(dst, offset, src);
        }
        self.upload_staged(dst, offset, src)
    }

    fn read(
        &self,
        _what: Readback,
        src: &SlotBuf,
        offset: usize,
        dst: &mut [u32],
    ) -> Result<(), GpuError> {
        if dst.is_empty() {
            return Ok(());
        }
        check_copy(CopyDir::Read, src.words, offset, dst.len())?;
        self.tracker.begin()?;
        let slice = src
            .slice
            .as_ref()
            .ok_or_else(|| GpuError::InvalidInput("read from a released buffer".into()))?;
        let view = slice.slice(offset..offset + dst.len());
        self.stream.memcpy_dtoh(&view, dst)?;
        self.sync()
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
        let f = self.kernels.get(kernel)?;
        self.tracker.begin()?;
        let cfg = LaunchConfig {
            grid_dim: (grid, 1, 1),
            block_dim: (block, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = self.stream.launch_builder(f);
        b.arg(args);
        // SAFETY: `A` is the kernel's own argument struct; its C twin in proofline_abi.cuh has
        // the same layout (asserted when the kernels are compiled).
        unsafe { b.launch(cfg) }?;
        Ok(())
    }

    fn sync(&self) -> Result<(), GpuError> {
        self.tracker.sync()?;
        self.account.synced();
        Ok(())
    }

    fn sm_count(&self) -> u32 {
        self.slot.shared.sm_count
    }
}
