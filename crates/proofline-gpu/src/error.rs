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
    /// A CUDA driver call failed.
    #[error("CUDA driver error: {0}")]
    Driver(String),
    /// Caller passed inputs the operation cannot take.
    #[error("invalid input: {0}")]
    InvalidInput(String),
}

impl From<cudarc::driver::DriverError> for GpuError {
    fn from(e: cudarc::driver::DriverError) -> Self {
        GpuError::Driver(format!("{e:?}"))
    }
}
