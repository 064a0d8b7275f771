//! The compute devices and CPU-MSM actors without the rest of the pipeline, for stage-level load
//! tests: partitions go in as evaluations and splits (no jobs, no synthesis, no verification),
//! through the same allocators, compute slots and partition code ([`compute_partition`]) as in
//! the daemon. Runs on its own thread with its own actix system, like [`crate::Pipeline`].

use std::sync::Arc;
use std::thread::JoinHandle;

use actix::prelude::*;
use proofline_groth16::{CpuBackend, MsmResults};

use crate::devices::{start_devices, DeviceSetup, DeviceStages};
use crate::job::StageTimings;
use crate::messages::{AllocatorSnapshot, ResetHighWater, Snapshot, StageError, Trim};
use crate::partition::{compute_partition, ComputeGate, ComputeInput, Progress};
use crate::pipeline::PipelineError;
use crate::telemetry::Mailbox;
use crate::workers::CpuMsmActor;

/// Running devices and CPU-MSM actors.
pub struct StagePool {
    devices: Arc<Vec<DeviceStages>>,
    cpu_msm: Mailbox<CpuMsmActor>,
    system: System,
    thread: Option<JoinHandle<()>>,
}

impl StagePool {
    /// Starts `devices` and `cpu_msm_workers` CPU-MSM actors.
    pub fn start(devices: Vec<DeviceSetup>, cpu_msm_workers: usize) -> Result<Self, PipelineError> {
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("proofline-stages".into())
            .spawn(move || {
                let sys = System::new();
                let started = sys.block_on(async move {
                    let cpu_msm =
                        Mailbox::new(SyncArbiter::start(cpu_msm_workers.max(1), move || {
                            CpuMsmActor::new(Arc::new(CpuBackend))
                        }));
                    (System::current(), Arc::new(start_devices(devices)), cpu_msm)
                });
                if tx.send(started).is_ok() {
                    let _ = sys.run();
                }
            })?;
        let (system, devices, cpu_msm) = rx.recv().map_err(|_| PipelineError::Startup)?;
        Ok(StagePool {
            devices,
            cpu_msm,
            system,
            thread: Some(thread),
        })
    }

    /// One partition's compute stages; returns the results, the device, and the timings.
    pub async fn run(
        &self,
        input: ComputeInput,
    ) -> (Result<(MsmResults, String), StageError>, StageTimings) {
        let mut t = StageTimings::default();
        let s = std::time::Instant::now();
        let progress = Progress::admitted(None);
        let r = compute_partition(
            &self.devices,
            &self.cpu_msm,
            ComputeGate::Open,
            input,
            &mut t,
            &progress,
        )
        .await;
        t.total_s = s.elapsed().as_secs_f64();
        (r, t)
    }

    /// Each device's allocator state.
    pub async fn memory(&self) -> Vec<AllocatorSnapshot> {
        let mut out = Vec::new();
        for d in self.devices.iter() {
            if let Ok(s) = d.allocator.send(Snapshot).await {
                out.push(s);
            }
        }
        out
    }

    /// Asks every allocator to trim its device's pool (as soon as nothing is in flight there).
    pub fn trim_all(&self) {
        for d in self.devices.iter() {
            d.allocator.do_send(Trim);
        }
    }

    /// Resets every allocator's and pool's high-water marks (when nothing is in flight).
    pub fn reset_high_water(&self) {
        for d in self.devices.iter() {
            d.allocator.do_send(ResetHighWater);
        }
    }

    /// The devices' labels.
    pub fn device_labels(&self) -> Vec<String> {
        self.devices.iter().map(|d| d.label.clone()).collect()
    }

    /// Stops the actors.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.system.stop();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for StagePool {
    fn drop(&mut self) {
        self.stop();
    }
}
