//! proofline-gpu: BLS12-381 NTT over Fr and G1 and G2 multi-scalar multiplication on NVIDIA GPUs, with
//! the kernels of `cuda/` compiled ahead of time (build.rs) and loaded through cudarc.
//!
//! Two handles, two capabilities:
//!
//! * [`GpuDevice`], opened once per device index and held by the device's memory allocator: pool
//!   attributes (release threshold), pool trim, memory info, pool usage and high-water marks,
//!   device-wide synchronisation. It creates the slots.
//! * [`GpuSlot`], one per compute slot: its own stream, the device's kernels, an explicit device
//!   index; it runs the partition's GPU stages ([`GpuSlot::upload_resident`],
//!   [`GpuSlot::h_stage`], [`GpuSlot::sparse_stage`]) and cannot reach a device-global call.
//!   A device's slots run their stages' kernels in turn or side by side ([`SlotKernels`], an
//!   option of [`GpuDevice::open`]); their uploads overlap either way.
//!
//! Every stage runs under the bytes of one lease: an [`Arena`] charges each device allocation
//! and refuses to exceed the grant. [`bytes`] computes those bytes from the stage's shapes.
//! Resident data (NTT tables, query bases) is a [`ResidentSet`], uploaded once per parameter set
//! and device and shared by the device's slots.
//!
//! The kernels' arguments are one `#[repr(C)]` struct per kernel and the constants the host and
//! the kernels share are defined once, in `abi.rs`, from which build.rs generates the C header.
//!
//! A machine without a GPU (no libcuda, no device, or a build without nvcc) gets
//! [`GpuError::Unavailable`] from [`probe`] and [`GpuDevice::open`], never a panic.

/// The host/kernel interface (`abi.rs`, shared with build.rs, which generates the C header
/// from the layouts and constants that the crate itself does not all read).
#[allow(dead_code)]
mod abi {
    use crate::exec::KernelArgs;
    use cudarc::driver::DeviceRepr;
    include!("abi.rs");
}
pub mod arena;
pub mod bytes;
pub mod config;
mod curve;
mod device;
#[cfg(test)]
mod emu;
mod error;
mod exec;
pub mod layout;
#[cfg(test)]
mod mont_model;
mod msm;
mod ntt;
pub mod oplog;
pub mod plan;
mod resident;
mod slot;
mod stager;
mod stages;
mod tails;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;
mod turn;

/// Kernel images embedded by build.rs.
pub mod kernels {
    include!(concat!(env!("OUT_DIR"), "/kernels.rs"));
}

pub use arena::Arena;
pub use config::{
    CombineBlocks, G2Madd, HSequence, MsmAcc, MsmConfig, MsmSort, MsmWindows, NttConfig,
    RoundPoints, SparseTails,
};
pub use device::{probe, DeviceInfo, DeviceOptions, GpuDevice, PoolUsage};
pub use error::GpuError;
pub use msm::{MsmStats, STREAM_CHUNK};
pub use ntt::{CInput, NttKind};
pub use oplog::{DeviceLog, Recording};
pub use plan::Precomputation;
pub use resident::{HostQueries, OnesSums, QueryLens, Residency, ResidentSet};
pub use slot::GpuSlot;
pub use stages::{HStageTimes, SparseGroups, SparseMsms, SparseStageTimes};
pub use tails::{G2Tail, HeldShape, HeldTails, TailLayout, TailQuery, Tails};
pub use turn::SlotKernels;

#[cfg(test)]
mod tests {
    /// On a machine without a GPU (CI), probing and opening must return an error value, never
    /// panic; with a GPU it lists at least one device and opens it.
    #[test]
    fn probe_never_panics() {
        match crate::probe() {
            Ok(devs) => assert!(!devs.is_empty()),
            Err(crate::GpuError::Unavailable(reason)) => eprintln!("GPU unavailable: {reason}"),
            Err(e) => panic!("unexpected probe error: {e}"),
        }
        match crate::GpuDevice::open(0, crate::DeviceOptions::default()) {
            Ok(d) => eprintln!("opened {:?}", d.info()),
            Err(e) => eprintln!("GpuDevice::open(0): {e}"),
        }
    }
}
