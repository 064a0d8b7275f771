//! Error type of proofline-gpu: every failure is a [`GpuError`] value.

/// What can go wrong on the GPU path.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    /// No usable GPU: no driver library, no device, or a build without kernels.
    #[error("GPU backend unavailable: {0}")]
    Unavailable(String),
    /// The requested device index does not exist.
    #[error("GPU device {index} not found ({count} device(s))")]
    NoSuchDevice {
        /// requested index
        index: usize,
        /// devices present
        count: usize,
    },
    /// No embedded kernel image suits the device.
    #[error("no kernel image for compute capability {major}.{minor}: {reason}")]
    NoKernelImage {
        /// major compute capability
        major: i32,
        /// minor compute capability
        minor: i32,
        /// details
        reason: String,
    },
    /// The device ran out of memory. Allocations are made only inside a lease whose bytes the
    /// allocator granted from its budget, so this means something outside the budget (another
    /// process, a budget larger than the device) took the memory.
    #[error("CUDA out of memory: {0}")]
    OutOfMemory(String),
    /// A stage asked its arena for more than the lease it runs under: a byte formula in
    /// `bytes.rs` disagrees with the code. A bug, never a resource shortage.
    #[error(
        "device allocation of {requested} bytes exceeds the lease of {granted} bytes ({what})"
    )]
    LeaseExceeded {
        /// Bytes the arena would hold with this allocation.
        requested: u64,
        /// Bytes the lease granted.
        granted: u64,
        /// Which stage.
        what: &'static str,
    },
    /// A CUDA driver call failed.
    #[error("CUDA driver error: {0}")]
    Driver(String),
    /// Caller passed inputs the operation cannot take.
    #[error("invalid input: {0}")]
    InvalidInput(String),
}

impl GpuError {
    /// Whether this is a device out-of-memory error (the harness counts them; must be 0).
    pub fn is_out_of_memory(&self) -> bool {
        matches!(self, GpuError::OutOfMemory(_))
    }
}

impl From<cudarc::driver::DriverError> for GpuError {
    fn from(e: cudarc::driver::DriverError) -> Self {
        use cudarc::driver::sys::cudaError_enum as E;
        if e.0 == E::CUDA_ERROR_OUT_OF_MEMORY {
            GpuError::OutOfMemory(format!("{e:?}"))
        } else {
            GpuError::Driver(format!("{e:?}"))
        }
    }
}
