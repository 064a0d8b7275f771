//! proofline-gpu: BLS12-381 NTT over Fr and G1 multi-scalar multiplication on
//! NVIDIA GPUs, with the kernels of `cuda/` compiled ahead of time (build.rs)
//! and loaded through cudarc.
//!
//! This crate owns the GPU kernels' host side: device discovery ([`probe`]),
//! one [`GpuContext`] per device index with its own stream, NTTs
//! ([`GpuContext::ntt`], [`GpuContext::h_poly`]) and MSMs
//! ([`GpuContext::msm_g1`], sparse and resident variants). Host buffers are
//! blstrs types, uploaded byte-for-byte (blst's Montgomery layouts).
//!
//! A machine without a GPU (no libcuda, no device, or a build without nvcc)
//! gets [`GpuError::Unavailable`] from [`probe`] and [`GpuContext::new`], never
//! a panic.

mod arith;
pub mod backend;
mod context;
mod error;
pub mod layout;
mod msm;
mod ntt;
pub mod plan;
pub mod testutil;

/// Kernel images embedded by build.rs.
pub mod kernels {
    include!(concat!(env!("OUT_DIR"), "/kernels.rs"));
}

pub use arith::{CurveOp, FieldOp};
pub use backend::GpuBackend;
pub use context::{probe, DeviceInfo, GpuContext};
pub use error::GpuError;
pub use msm::{DeviceBases, MsmStats};
pub use ntt::{DeviceScalars, NttKind};

#[cfg(test)]
mod tests {
    /// On a machine without a GPU (CI), probing must return an error value,
    /// never panic; with a GPU it lists at least one device.
    #[test]
    fn probe_never_panics() {
        match crate::probe() {
            Ok(devs) => assert!(!devs.is_empty()),
            Err(crate::GpuError::Unavailable(reason)) => eprintln!("GPU unavailable: {reason}"),
            Err(e) => panic!("unexpected probe error: {e}"),
        }
        if let Err(e) = crate::GpuContext::new(0) {
            eprintln!("GpuContext::new(0): {e}");
        }
    }
}
