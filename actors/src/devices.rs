//! The compute devices of a pipeline: per device one [`VramAllocator`] (its memory budget and
//! device-global calls) and one pool of [`ComputeActor`]s (its slots, each with its own engine),
//! and how the partition driver picks a device, gets a parameter set resident on it and has
//! the device hold the set's tails.

use std::sync::{Arc, Mutex};

use actix::prelude::*;
use proofline_groth16::{MsmPlan, SharedProvingKey};

use crate::allocator::{MemoryDevice, VramAllocator};
use crate::compute::{ComputeEngine, DeviceSizing, G2Placement, NoEngine};
use crate::job::StageTimings;
use crate::messages::{
    AcquireResident, DeviceLoad, HoldTails, MakeResident, PinResident, RegisterResident, Residency,
    ResidentGrant, StageError,
};
use crate::partition::G2Stage;
use crate::resident::{ResidentData, ResidentRef};
use crate::telemetry::{Mailbox, Secs};
use crate::workers::ComputeActor;

/// Everything one device is started with.
pub struct DeviceSetup {
    /// Its device-global operations (owned by its allocator).
    pub memory: Box<dyn MemoryDevice>,
    /// Its allocator's budget, bytes.
    pub budget: u64,
    /// One engine per compute slot.
    pub engines: Vec<Box<dyn ComputeEngine>>,
    /// How its stages are sized.
    pub sizing: Arc<dyn DeviceSizing>,
}

impl DeviceSetup {
    /// Its label ("host", "cuda:0").
    pub fn label(&self) -> String {
        self.memory.label()
    }
}

/// A started device: where the partition driver sends its stages.
#[derive(Clone)]
pub struct DeviceStages {
    /// "host", "cuda:0".
    pub label: String,
    /// Its allocator.
    pub allocator: Mailbox<VramAllocator>,
    /// Its compute slots.
    pub compute: Mailbox<ComputeActor>,
    /// How its stages are sized.
    pub sizing: Arc<dyn DeviceSizing>,
    /// Where its partitions get the G2 MSM (its engines' placement).
    pub g2: G2Placement,
}

/// Starts each device's allocator and compute pool (call inside the pipeline's actix system).
pub fn start_devices(setups: Vec<DeviceSetup>) -> Vec<DeviceStages> {
    // the actor figures are per actor kind: every device's slots count in `compute`, every
    // device's allocator in `allocator`
    let all_slots: usize = setups.iter().map(|d| d.engines.len().max(1)).sum();
    let allocators = setups.len();
    setups
        .into_iter()
        .map(|d| {
            let label = d.label();
            let slots = d.engines.len().max(1);
            let g2 = d
                .engines
                .first()
                .map_or(G2Placement::CpuMsmActor, |e| e.g2_placement());
            let engines = Arc::new(Mutex::new(d.engines));
            let compute = Mailbox::pool(
                SyncArbiter::start(slots, move || {
                    let engine = engines
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .pop()
                        .unwrap_or_else(|| Box::new(NoEngine));
                    ComputeActor::new(engine)
                }),
                all_slots,
            );
            let allocator =
                Mailbox::pool(VramAllocator::new(d.memory, d.budget).start(), allocators);
            tracing::info!(device = %label, slots, budget_bytes = d.budget, "device started");
            DeviceStages {
                label,
                allocator,
                compute,
                sizing: d.sizing,
                g2,
            }
        })
        .collect()
}

/// The device for a partition of `key`: the one with the fewest stages in flight and waiting;
/// among those, one that holds the set (resident or loading). So partitions spread over the
/// devices, and each device makes the set resident once, when it first gets one of them.
pub async fn choose_device<'a>(
    devices: &'a [DeviceStages],
    key: &str,
) -> Result<&'a DeviceStages, StageError> {
    if devices.len() <= 1 {
        return devices
            .first()
            .ok_or_else(|| StageError::Mailbox("no compute device".into()));
    }
    let mut best: Option<((usize, bool), &DeviceStages)> = None;
    for d in devices {
        let l = d
            .allocator
            .send(DeviceLoad {
                key: key.to_string(),
            })
            .await?;
        let rank = (l.stages, !l.holds);
        if best.as_ref().is_none_or(|(b, _)| rank < *b) {
            best = Some((rank, d));
        }
    }
    best.map(|(_, d)| d)
        .ok_or_else(|| StageError::Mailbox("no compute device".into()))
}

/// `pk`'s resident data on `dev`, pinned (None where the device keeps nothing resident): ready,
/// or uploaded now on one of the device's slots under the lease the allocator granted. The
/// time goes into the partition's parameter time, the wait for the lease into its lease wait.
pub async fn ensure_resident(
    dev: &DeviceStages,
    key: &str,
    owner: &str,
    pk: &SharedProvingKey,
    t: &mut StageTimings,
) -> Result<Option<ResidentRef>, StageError> {
    let Some(sizes) = dev.sizing.resident(pk) else {
        return Ok(None);
    };
    let reserve = dev
        .sizing
        .h_stage(pk, Some(Residency::Resident))
        .max(dev.sizing.h_stage(pk, Some(Residency::Streamed)));
    let s = std::time::Instant::now();
    let grant = dev
        .allocator
        .send(AcquireResident {
            key: key.to_string(),
            sizes,
            reserve,
            owner: owner.to_string(),
        })
        .await??;
    t.lease_wait_s += s.secs();
    match grant {
        ResidentGrant::Ready(r) => Ok(Some(r)),
        ResidentGrant::Load(load) => {
            let s = std::time::Instant::now();
            let data = dev
                .compute
                .send(MakeResident {
                    pk: pk.clone(),
                    residency: load.residency(),
                    bytes: load.bytes(),
                })
                .await??;
            let r = dev
                .allocator
                .send(RegisterResident { load, data })
                .await??;
            t.params_s += s.secs();
            Ok(Some(r))
        }
    }
}

/// The allocator's key of the tails a device holds for the parameter set `key`: they are a
/// resident set of their own (leased, pinned and evicted as one), made from a partition's split.
pub fn tails_key(key: &str) -> String {
    format!("{key}#tails")
}

/// The tails `dev` holds for the parameter set `key` (or its record that none fit), pinned,
/// where it has them already: a partition pins them when it starts, beside the set, so that
/// they stay while the device's partitions run (an unpinned set is evicted when a lease needs
/// its bytes). `None` where the device has none yet: [`ensure_tails`] then holds them.
pub async fn pin_tails(dev: &DeviceStages, key: &str) -> Result<Option<ResidentRef>, StageError> {
    Ok(dev
        .allocator
        .send(PinResident {
            key: tails_key(key),
        })
        .await?)
}

/// The tails `dev` holds for the parameter set `key`, pinned (None where it holds none): ready,
/// or held now from `plan` (B's in G2 with `g2` [`G2Stage::Run`]) over the pinned resident set
/// `resident` on one of the device's slots, under the lease the allocator granted for the
/// largest layout that fits beside the sets in use
/// ([`DeviceSizing::held_tails`](crate::compute::DeviceSizing::held_tails)). Where none fits, an
/// empty holding is registered, so that later partitions do not ask again while it stays. The
/// time goes into the partition's parameter time, the wait into its lease wait.
#[allow(clippy::too_many_arguments)]
pub async fn ensure_tails(
    dev: &DeviceStages,
    key: &str,
    owner: &str,
    pk: &SharedProvingKey,
    plan: &Arc<MsmPlan>,
    g2: G2Stage,
    resident: &ResidentRef,
    t: &mut StageTimings,
) -> Result<Option<ResidentRef>, StageError> {
    if resident.residency() != Residency::Resident {
        return Ok(None);
    }
    let Some(sizes) = dev.sizing.held_tails(pk, plan, g2) else {
        return Ok(None);
    };
    let reserve = dev
        .sizing
        .h_stage(pk, Some(Residency::Resident))
        .max(
            dev.sizing
                .sparse_stage(plan, Some(Residency::Resident), None),
        );
    let s = std::time::Instant::now();
    let grant = dev
        .allocator
        .send(AcquireResident {
            key: tails_key(key),
            sizes,
            reserve,
            owner: owner.to_string(),
        })
        .await??;
    t.lease_wait_s += s.secs();
    let held = match grant {
        ResidentGrant::Ready(r) => r,
        ResidentGrant::Load(load) => {
            let s = std::time::Instant::now();
            let data: ResidentData = match load.residency() {
                Residency::Resident => {
                    let held = dev
                        .compute
                        .send(HoldTails {
                            plan: plan.clone(),
                            g2,
                            resident: resident.clone(),
                            bytes: load.bytes(),
                        })
                        .await?;
                    match held {
                        Ok(data) => data,
                        Err(e) => {
                            // the partition runs without them; dropping the load gives its
                            // lease back, and a later partition tries again
                            tracing::warn!(device = %dev.label, params = %key, error = %e, "holding the tails failed");
                            return Ok(None);
                        }
                    }
                }
                // nothing held: registered empty
                Residency::Streamed => Arc::new(()),
            };
            let r = dev
                .allocator
                .send(RegisterResident { load, data })
                .await??;
            t.params_s += s.secs();
            r
        }
    };
    Ok((held.residency() == Residency::Resident).then_some(held))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::allocator::HostMemory;
    use crate::compute::{CpuEngine, CpuSizing};
    use crate::messages::{RequestLease, ResidentSizes};

    fn two_devices() -> Vec<DeviceStages> {
        start_devices(
            (0..2)
                .map(|_| DeviceSetup {
                    memory: Box::new(HostMemory),
                    budget: 1000,
                    engines: vec![Box::new(CpuEngine::default())],
                    sizing: Arc::new(CpuSizing),
                })
                .collect(),
        )
    }

    #[actix::test]
    async fn partitions_go_where_the_fewest_stages_are_then_where_the_set_is() {
        let devs = two_devices();
        let pick = |d: &DeviceStages| {
            devs.iter()
                .position(|x| x.allocator.same_actor(&d.allocator))
        };
        // a stage in flight on the first device: the second gets the next partition
        let lease = devs[0]
            .allocator
            .send(RequestLease {
                bytes: 10,
                owner: "t".into(),
            })
            .await
            .unwrap()
            .unwrap();
        let d = choose_device(&devs, "p").await.unwrap();
        assert_eq!(pick(d), Some(1));
        drop(lease);
        // equal loads: the device that holds the set
        let ResidentGrant::Load(load) = devs[1]
            .allocator
            .send(AcquireResident {
                key: "p".into(),
                sizes: ResidentSizes {
                    full: 10,
                    bases: 10,
                    tables: 1,
                },
                reserve: 10,
                owner: "t".into(),
            })
            .await
            .unwrap()
            .unwrap()
        else {
            panic!("loads")
        };
        let _set = devs[1]
            .allocator
            .send(RegisterResident {
                load,
                data: Arc::new(()),
            })
            .await
            .unwrap()
            .unwrap();
        actix::clock::sleep(std::time::Duration::from_millis(20)).await;
        let d = choose_device(&devs, "p").await.unwrap();
        assert_eq!(pick(d), Some(1));
        let d = choose_device(&devs, "other").await.unwrap();
        assert_eq!(
            pick(d),
            Some(0),
            "no device holds it: the first of the least loaded"
        );
    }
}
