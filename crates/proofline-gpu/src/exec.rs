//! The seam between the kernels' host code and a device: [`Exec`] allocates buffers, copies,
//! launches kernels with their typed argument struct, and reads results back.
//!
//! The NTT and MSM host code (`ntt.rs`, `msm.rs`) is written once against this trait. A compute
//! slot runs it on its stream with every allocation charged to an [`Arena`](crate::arena::Arena)
//! sized by the stage's lease; [`DryRun`](crate::arena::DryRun) runs the same code on the CPU
//! without a device, answering each read-back with the worst case the call site declares, which
//! is how `bytes.rs`'s formulas are tested against what the code really allocates.

use crate::error::GpuError;

/// A kernel's argument struct (one per kernel, generated with its C twin from `abi.rs`).
pub trait KernelArgs: cudarc::driver::DeviceRepr + Copy {
    /// The kernel's name in its module.
    const KERNEL: &'static str;
}

/// What a read-back returns, with the bound the code relies on, so that a dry run can answer
/// with the worst case (the real device ignores the bounds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Readback {
    /// The number of sorted bucket entries of a Pippenger chunk (at most `max`).
    Entries {
        /// Upper bound: points times windows.
        max: u32,
    },
    /// The number of big buckets found (at most `max`).
    BigCount {
        /// Upper bound: the capacity of the big-bucket list.
        max: u32,
    },
    /// The `(bucket, size)` pairs of the big buckets, whose sizes sum to at most `entries`.
    BigList {
        /// Sum of the sizes at most.
        entries: u32,
    },
    /// Results: any values.
    Values,
}

/// A device buffer of u32 words.
pub(crate) trait DevBuf {
    /// Device address of the first word.
    fn ptr(&self) -> u64;
    /// Length in u32 words.
    fn words(&self) -> usize;
    /// Device address of word `w`.
    fn at(&self, w: usize) -> u64 {
        self.ptr() + 4 * w as u64
    }
}

/// A device (or a dry run of one) that the kernels' host code drives.
pub(crate) trait Exec {
    /// Buffers this device hands out.
    type Buf: DevBuf;
    /// Host staging buffers (pinned memory on a slot) for streaming bases.
    type Host: Send;

    /// A host staging buffer of at least `words` u32 words.
    fn host_buffer(&self, words: usize) -> Result<Self::Host, GpuError>;
    /// Writes `src` at the start of `host` (on any thread; the caller makes sure no upload
    /// from it is in flight).
    fn fill_host(host: &mut Self::Host, src: &[u32]) -> Result<(), GpuError>;
    /// Copies the first `words` of `src` into `dst` from word 0 (enqueued; complete at the next
    /// sync, before which `src` must not be written).
    fn upload_host(
        &self,
        dst: &mut Self::Buf,
        src: &Self::Host,
        words: usize,
    ) -> Result<(), GpuError>;
    /// Gives a staging buffer back for later use.
    fn recycle_host(&self, host: Self::Host);
    /// "cuda:D/S", for metrics.
    fn label(&self) -> String;

    /// `words` u32 words, contents undefined until written by a copy or a kernel.
    fn alloc(&self, words: usize) -> Result<Self::Buf, GpuError>;
    /// `words` zeroed u32 words.
    fn zeros(&self, words: usize) -> Result<Self::Buf, GpuError>;
    /// A buffer holding `src`.
    fn upload(&self, src: &[u32]) -> Result<Self::Buf, GpuError> {
        let mut b = self.alloc(src.len())?;
        self.upload_at(&mut b, 0, src)?;
        Ok(b)
    }
    /// Copies `src` into `dst` from word `offset` on.
    fn upload_at(&self, dst: &mut Self::Buf, offset: usize, src: &[u32]) -> Result<(), GpuError>;
    /// Copies `dst.len()` words from `src` at word `offset` to the host; synchronises.
    fn read(
        &self,
        what: Readback,
        src: &Self::Buf,
        offset: usize,
        dst: &mut [u32],
    ) -> Result<(), GpuError>;
    /// Launches `A::KERNEL` over a 1-D grid.
    fn launch<A: KernelArgs>(&self, grid: u32, block: u32, args: &A) -> Result<(), GpuError>;
    /// Waits for everything enqueued so far; memory freed before it is reusable after it.
    fn sync(&self) -> Result<(), GpuError>;
    /// Multiprocessors of the device (sizes the reductions).
    fn sm_count(&self) -> u32;
}

/// Blocks of `threads` covering `n` items.
pub(crate) fn grid(n: usize, threads: u32) -> u32 {
    n.div_ceil(threads as usize) as u32
}
