//! Allocation only inside a lease: an [`Arena`] is made from the bytes a lease granted, and
//! every device buffer of a stage is charged to it. A charge that would exceed the grant fails
//! with [`GpuError::LeaseExceeded`] (a wrong byte formula: a bug, never an out-of-memory).
//!
//! Accounting follows the stream-ordered pool: a buffer dropped on the host is freed in stream
//! order, so its bytes stay charged ("pending") until the stream is next synchronised. Every
//! allocation is rounded up to [`GRANULE`] bytes, so that the charge is never below what the
//! pool counts as used. [`DryRun`] is an [`Exec`] without a device that charges the same way;
//! the tests of `bytes.rs` run the real host code on it.

#[cfg(test)]
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::error::GpuError;
#[cfg(test)]
use crate::exec::{check_copy, check_kernel, CopyDir, DevBuf, Exec, KernelArgs, Readback};

/// Every allocation is charged in multiples of this many bytes (the pool's mapping granularity,
/// an upper bound of its per-allocation rounding).
pub const GRANULE: u64 = 2 << 20;

/// Bytes charged for a buffer of `words` u32 words (at least one word is allocated).
pub fn charge_of(words: usize) -> u64 {
    charge_in(words, GRANULE)
}

/// Bytes charged for `words` u32 words in multiples of `granule` bytes.
pub(crate) fn charge_in(words: usize, granule: u64) -> u64 {
    (4 * words.max(1) as u64).div_ceil(granule) * granule
}

/// The running account of one arena.
#[derive(Debug)]
pub(crate) struct Account {
    granted: u64,
    granule: u64,
    what: &'static str,
    live: AtomicU64,
    pending: AtomicU64,
    peak: AtomicU64,
}

impl Account {
    pub(crate) fn new(granted: u64, what: &'static str) -> Arc<Self> {
        Self::with_granule(granted, what, GRANULE)
    }

    pub(crate) fn with_granule(granted: u64, what: &'static str, granule: u64) -> Arc<Self> {
        Arc::new(Account {
            granted,
            granule,
            what,
            live: AtomicU64::new(0),
            pending: AtomicU64::new(0),
            peak: AtomicU64::new(0),
        })
    }

    /// Charges `words`; fails when the arena would exceed its grant.
    pub(crate) fn charge(self: &Arc<Self>, words: usize) -> Result<Charge, GpuError> {
        let bytes = charge_in(words, self.granule);
        let held = self.live.load(Ordering::Relaxed) + self.pending.load(Ordering::Relaxed);
        if held + bytes > self.granted {
            return Err(GpuError::LeaseExceeded {
                requested: held + bytes,
                granted: self.granted,
                what: self.what,
            });
        }
        self.live.fetch_add(bytes, Ordering::Relaxed);
        self.peak.fetch_max(held + bytes, Ordering::Relaxed);
        Ok(Charge {
            account: self.clone(),
            bytes,
        })
    }

    /// The stream was synchronised: memory freed before is back in the pool.
    pub(crate) fn synced(&self) {
        self.pending.store(0, Ordering::Relaxed);
    }

    /// Highest charge so far.
    pub(crate) fn peak(&self) -> u64 {
        self.peak.load(Ordering::Relaxed)
    }

    /// Bytes granted.
    pub(crate) fn granted(&self) -> u64 {
        self.granted
    }
}

/// One buffer's charge; returned (as pending) when the buffer drops.
#[derive(Debug)]
pub(crate) struct Charge {
    account: Arc<Account>,
    bytes: u64,
}

impl Charge {
    /// Makes the charge permanent: the buffer outlives the arena (resident data, covered by a
    /// long-lived lease for its whole life).
    pub(crate) fn settle(self) {
        std::mem::forget(self);
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.account.live.fetch_sub(self.bytes, Ordering::Relaxed);
        self.account
            .pending
            .fetch_add(self.bytes, Ordering::Relaxed);
    }
}

/// The byte budget of one stage on one device: every buffer the stage allocates is charged here.
pub struct Arena {
    pub(crate) account: Arc<Account>,
}

impl Arena {
    /// An arena of `granted` bytes (the bytes of the lease the stage runs under).
    pub fn new(granted: u64, what: &'static str) -> Self {
        Arena {
            account: Account::new(granted, what),
        }
    }

    /// Highest charge so far, in bytes.
    pub fn peak(&self) -> u64 {
        self.account.peak()
    }

    /// Bytes granted.
    pub fn granted(&self) -> u64 {
        self.account.granted()
    }
}

#[cfg(test)]
/// A buffer of the dry run: only its size exists.
#[derive(Debug)]
pub(crate) struct DryBuf {
    words: usize,
    _charge: Charge,
}

#[cfg(test)]
impl DevBuf for DryBuf {
    fn ptr(&self) -> u64 {
        // Distinct non-zero addresses are not needed: nothing is dereferenced.
        0x1000
    }
    fn words(&self) -> usize {
        self.words
    }
}

#[cfg(test)]
/// An [`Exec`] without a device: allocations are charged exactly as on a slot, kernels are not
/// run, and each read-back answers the worst case its call site declares.
pub(crate) struct DryRun {
    account: Arc<Account>,
    sm_count: u32,
    launches: Cell<usize>,
}

#[cfg(test)]
impl DryRun {
    /// A dry run of a device with `sm_count` multiprocessors and an unlimited grant, charging
    /// in multiples of `granule` bytes.
    pub(crate) fn new(sm_count: u32, granule: u64) -> Self {
        DryRun {
            account: Account::with_granule(u64::MAX, "dry run", granule),
            sm_count,
            launches: Cell::new(0),
        }
    }

    /// Highest charge so far.
    pub(crate) fn peak(&self) -> u64 {
        self.account.peak()
    }

    /// Kernels launched so far.
    pub(crate) fn launches(&self) -> usize {
        self.launches.get()
    }
}

#[cfg(test)]
impl Exec for DryRun {
    type Buf = DryBuf;
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

    fn upload_host(&self, dst: &mut DryBuf, src: &Vec<u32>, words: usize) -> Result<(), GpuError> {
        let src = src
            .get(..words)
            .ok_or_else(|| GpuError::InvalidInput("upload past a staging buffer".into()))?;
        self.upload_at(dst, 0, src)
    }

    fn recycle_host(&self, _: Vec<u32>) {}

    fn label(&self) -> String {
        "dry".into()
    }

    fn alloc(&self, words: usize) -> Result<DryBuf, GpuError> {
        Ok(DryBuf {
            words,
            _charge: self.account.charge(words)?,
        })
    }

    fn zeros(&self, words: usize) -> Result<DryBuf, GpuError> {
        self.alloc(words)
    }

    fn upload_at(&self, dst: &mut DryBuf, offset: usize, src: &[u32]) -> Result<(), GpuError> {
        check_copy(CopyDir::Upload, dst.words, offset, src.len())
    }

    fn read(
        &self,
        what: Readback,
        src: &DryBuf,
        offset: usize,
        dst: &mut [u32],
    ) -> Result<(), GpuError> {
        check_copy(CopyDir::Read, src.words, offset, dst.len())?;
        match what {
            Readback::Entries { max } | Readback::BigCount { max } => dst.fill(max),
            Readback::BigList { entries } => {
                // As many big buckets as asked for, each one entry past a multiple of the
                // big-bucket block, the sizes summing to at most `entries`: the most blocks.
                let pairs = (dst.len() / 2).max(1) as u32;
                let size = (entries / pairs).max(1);
                for (k, p) in dst.chunks_exact_mut(2).enumerate() {
                    p[0] = k as u32;
                    p[1] = size;
                }
            }
            Readback::Values => dst.fill(0),
        }
        self.account.synced();
        Ok(())
    }

    fn launch_as<A: KernelArgs>(
        &self,
        kernel: &'static str,
        _grid: u32,
        _block: u32,
        _args: &A,
    ) -> Result<(), GpuError> {
        check_kernel::<A>(kernel)?;
        self.launches.set(self.launches.get() + 1);
        Ok(())
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
    use super::*;

    #[test]
    fn charges_round_up_and_frees_wait_for_a_sync() {
        let a = Account::new(3 * GRANULE, "t");
        let x = a.charge(1).unwrap();
        assert_eq!(charge_of(1), GRANULE);
        assert_eq!(charge_of((GRANULE / 4) as usize + 1), 2 * GRANULE);
        let y = a.charge((GRANULE / 4) as usize).unwrap();
        assert!(matches!(
            a.charge((GRANULE / 4) as usize + 1),
            Err(GpuError::LeaseExceeded { .. })
        ));
        drop(y);
        // freed in stream order: still charged until the stream is synchronised
        assert!(a.charge((GRANULE / 4) as usize + 1).is_err());
        a.synced();
        let z = a.charge((GRANULE / 4) as usize + 1).unwrap();
        assert_eq!(a.peak(), 3 * GRANULE);
        drop((x, z));
    }

    #[test]
    fn settled_charges_stay() {
        let a = Account::new(2 * GRANULE, "t");
        a.charge(1).unwrap().settle();
        a.synced();
        assert!(a.charge(1).is_ok());
        assert!(a.charge(GRANULE as usize).is_err());
    }
}
