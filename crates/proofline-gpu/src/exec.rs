//! The seam between the kernels' host code and a device: [`Exec`] allocates buffers, copies,
//! launches kernels with their typed argument struct, and reads results back.
//!
//! The NTT and MSM host code (`ntt.rs`, `msm/`) is written once against this trait. A compute
//! slot runs it on its stream with every allocation charged to an [`Arena`](crate::arena::Arena)
//! sized by the stage's lease; [`DryRun`](crate::arena::DryRun) runs the same code on the CPU
//! without a device, answering each read-back with the worst case the call site declares, which
//! is how `bytes.rs`'s formulas are tested against what the code really allocates.

use crate::error::GpuError;

/// A kernel's argument struct (generated with its C twin from `abi.rs`): one per kernel, or
/// one shared by the G1 and G2 twins of a curve kernel.
pub trait KernelArgs: cudarc::driver::DeviceRepr + Copy {
    /// The kernels launched with it, as (module, kernel); [`Exec::launch`] launches the first.
    const KERNELS: &'static [(&'static str, &'static str)];
}

/// Checks that `kernel` takes `A` (a G2 kernel launched with another kernel's struct is a bug).
pub(crate) fn check_kernel<A: KernelArgs>(kernel: &'static str) -> Result<(), GpuError> {
    if A::KERNELS.iter().any(|(_, k)| *k == kernel) {
        Ok(())
    } else {
        Err(GpuError::InvalidInput(format!(
            "kernel {kernel} does not take the argument struct of {}",
            A::KERNELS[0].1
        )))
    }
}

/// What a read-back returns, with the bound the code relies on, so that a dry run can answer
/// with the worst case (the real device ignores the bounds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Readback {
    /// The number of sorted bucket entries of a Pippenger chunk, of the points a batch-affine
    /// round leaves, or of a sparse query's ones in a range (at most `max`).
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
    /// Launches the first kernel of `A::KERNELS` over a 1-D grid.
    fn launch<A: KernelArgs>(&self, grid: u32, block: u32, args: &A) -> Result<(), GpuError> {
        self.launch_as(A::KERNELS[0].1, grid, block, args)
    }
    /// Launches `kernel`, one of `A::KERNELS`, over a 1-D grid.
    fn launch_as<A: KernelArgs>(
        &self,
        kernel: &'static str,
        grid: u32,
        block: u32,
        args: &A,
    ) -> Result<(), GpuError>;
    /// Waits for everything enqueued so far; memory freed before it is reusable after it.
    fn sync(&self) -> Result<(), GpuError>;
    /// Multiprocessors of the device (sizes the reductions).
    fn sm_count(&self) -> u32;
}

/// Which way a copy between host and device goes.
#[derive(Clone, Copy, Debug)]
pub(crate) enum CopyDir {
    /// Host to device.
    Upload,
    /// Device to host.
    Read,
}

/// Ok when `len` words at `offset` lie within a device buffer of `words`; every [`Exec`]
/// checks its copies with it, so they all fail alike.
pub(crate) fn check_copy(
    dir: CopyDir,
    words: usize,
    offset: usize,
    len: usize,
) -> Result<(), GpuError> {
    if offset.checked_add(len).is_some_and(|end| end <= words) {
        return Ok(());
    }
    Err(GpuError::InvalidInput(match dir {
        CopyDir::Upload => format!("upload of {len} words at {offset} into a buffer of {words}"),
        CopyDir::Read => format!("read of {len} words at {offset} from a buffer of {words}"),
    }))
}

/// Blocks of `threads` covering `n` items.
pub(crate) fn grid(n: usize, threads: u32) -> u32 {
    n.div_ceil(threads as usize) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_stay_within_their_buffer() {
        assert!(check_copy(CopyDir::Upload, 10, 0, 10).is_ok());
        assert!(check_copy(CopyDir::Read, 10, 4, 6).is_ok());
        assert!(check_copy(CopyDir::Upload, 10, 0, 0).is_ok());
        let e = check_copy(CopyDir::Upload, 10, 4, 7)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("upload of 7 words at 4 into a buffer of 10"),
            "{e}"
        );
        let e = check_copy(CopyDir::Read, 10, 11, 0)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("read of 0 words at 11 from a buffer of 10"),
            "{e}"
        );
        // an offset near usize::MAX must not wrap around into range
        assert!(check_copy(CopyDir::Upload, 10, usize::MAX, 2).is_err());
    }
}
