//! The memory allocator actor: one per device, the only owner of that device's memory budget
//! and the only caller of its device-global operations ([`MemoryDevice`]).
//!
//! **Leases.** A stage sends [`RequestLease`] for the bytes its device code will allocate and
//! awaits a [`Lease`] ([`LeaseKind::Transient`]). Requests are granted strictly in arrival order
//! and the sum granted never exceeds the budget; one that does not fit yet waits (it does not
//! fail). Only a request larger than the whole budget is refused. A lease is returned by dropping
//! it: its `Drop` sends [`ReleaseLease`].
//!
//! **Resident sets.** Long-lived device data of a parameter set (its bases and NTT tables) holds
//! a [`LeaseKind::Resident`] lease for its whole life. [`AcquireResident`] returns the set when it
//! is resident, or a [`ResidentLoad`] (the lease, and whether the bases fit or must be streamed)
//! that the caller fills on a compute slot and hands back with [`RegisterResident`]; requests for
//! a set being loaded wait for it. Partitions hold a [`ResidentRef`] while they use a set ("pin"
//! it); a set nobody pins is evicted, least recently used first, when a request needs its bytes.
//! Sets are admitted only while the pinned sets, plus the largest stage lease any of them
//! declared (its "reserve"), fit the budget, so that a partition that pins a set can always get
//! its stage leases: waiting for a lease never waits on a pinned set.
//!
//! **Device-global operations** (pool trim, device synchronise, high-water reset) run only when
//! no transient lease is outstanding and no upload is in flight, i.e. when no slot has work on
//! the device. The allocator trims by itself when a request cannot be met from memory the pool
//! already caches without growing it past the budget; [`Trim`] asks for one. While one is due
//! it grants nothing, so in-flight stages drain and the call runs in bounded time. On the CPU
//! backend the device is host memory and those operations are no-ops.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Instant;

use actix::prelude::*;
use metrics::{counter, gauge, histogram};
use tokio::sync::oneshot;

use crate::messages::{
    AcquireResident, AllocatorSnapshot, DeviceLoad, DeviceLoadInfo, LeaseError, PinResident,
    PoolUsage, RegisterResident, ReleaseLease, RequestLease, ResetHighWater, Residency,
    ResidentAbandoned, ResidentGrant, ResidentInfo, ResidentSizes, ResidentUnpinned, Snapshot,
    Trim,
};
use crate::resident::{ResidentLoad, ResidentRef, ResidentSet};
use crate::telemetry::{actor, Mailbox, Named};

/// The device-global operations of one device. Only its allocator holds it.
pub trait MemoryDevice: Send + 'static {
    /// Label for logs and metrics ("host", "cuda:0").
    fn label(&self) -> String;
    /// Sets how many bytes of freed memory the device's pool keeps cached across
    /// synchronisations (called once, with the budget).
    fn set_release_threshold(&mut self, _bytes: u64) -> Result<(), String> {
        Ok(())
    }
    /// What the device's pool holds (None: no pool, e.g. host memory). Reads counters only.
    fn pool_usage(&mut self) -> Option<PoolUsage> {
        None
    }
    /// Returns cached, unused memory to the device. Called only when nothing is in flight.
    fn trim(&mut self) -> Result<(), String> {
        Ok(())
    }
    /// Resets the pool's high-water marks. Called only when nothing is in flight.
    fn reset_high_water(&mut self) -> Result<(), String> {
        Ok(())
    }
    /// Waits for every stream of the device. Called only when nothing is in flight.
    fn synchronize(&mut self) -> Result<(), String> {
        Ok(())
    }
}

/// Host memory: the CPU backend's "device".
#[derive(Debug, Default)]
pub struct HostMemory;

impl MemoryDevice for HostMemory {
    fn label(&self) -> String {
        "host".into()
    }
}

/// What a lease covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum LeaseKind {
    /// One stage's buffers, for the duration of the stage.
    Transient,
    /// A resident set's data, for the set's whole life.
    Resident,
}

impl LeaseKind {
    fn label(self) -> &'static str {
        match self {
            LeaseKind::Transient => "transient",
            LeaseKind::Resident => "resident",
        }
    }
}

/// A granted share of the budget; returned to the allocator when dropped.
#[derive(Debug)]
pub struct Lease {
    pub(crate) id: u64,
    bytes: u64,
    kind: LeaseKind,
    allocator: Mailbox<VramAllocator>,
}

impl Lease {
    /// Bytes granted.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// What it covers.
    pub fn kind(&self) -> LeaseKind {
        self.kind
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.allocator.do_send(ReleaseLease { id: self.id });
    }
}

/// What a queued request is for.
enum Want {
    Transient(oneshot::Sender<Lease>),
    /// Loading a resident set of `key` (its residency decided when it was queued, the bytes
    /// of its layouts in `sizes`).
    Resident {
        key: String,
        residency: Residency,
        sizes: ResidentSizes,
        reply: oneshot::Sender<Result<ResidentGrant, LeaseError>>,
    },
}

struct Pending {
    bytes: u64,
    owner: String,
    since: Instant,
    want: Want,
}

impl Pending {
    fn is_abandoned(&self) -> bool {
        match &self.want {
            Want::Transient(r) => r.is_closed(),
            Want::Resident { reply, .. } => reply.is_closed(),
        }
    }
}

struct Entry {
    set: Arc<ResidentSet>,
    bytes: u64,
    reserve: u64,
    last_used: u64,
    lease_id: u64,
}

impl Entry {
    fn pinned(&self) -> bool {
        Arc::strong_count(&self.set) > 1
    }
}

/// A request for a resident set that waits: for its load by another request, or for pinned
/// sets to be released.
struct ResidentWaiter {
    msg: AcquireResident,
    reply: oneshot::Sender<Result<ResidentGrant, LeaseError>>,
}

/// An operation that may run only when nothing is in flight on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum IdleOp {
    Trim,
    ResetHighWater,
}

/// The allocator actor.
pub struct VramAllocator {
    device: Box<dyn MemoryDevice>,
    label: String,
    budget: u64,
    leased: u64,
    leased_high: u64,
    transient: usize,
    next_id: u64,
    tick: u64,
    active: HashMap<u64, (u64, LeaseKind)>,
    waiting: VecDeque<Pending>,
    resident: HashMap<String, Entry>,
    /// Sets being loaded: their bytes and declared reserve, and the requests waiting for them.
    loading: HashMap<String, (u64, u64, Vec<ResidentWaiter>)>,
    /// Requests for sets that wait for pinned sets to be released.
    parked: Vec<ResidentWaiter>,
    due: Vec<IdleOp>,
    trims: u64,
}

impl VramAllocator {
    /// An allocator of `budget` bytes over `device`; the device's pool keeps up to the budget
    /// of freed memory cached.
    pub fn new(mut device: Box<dyn MemoryDevice>, budget: u64) -> Self {
        let label = device.label();
        if let Err(e) = device.set_release_threshold(budget) {
            tracing::warn!(device = %label, error = %e, "cannot set the pool's release threshold");
        }
        VramAllocator {
            device,
            label,
            budget,
            leased: 0,
            leased_high: 0,
            transient: 0,
            next_id: 1,
            tick: 0,
            active: HashMap::new(),
            waiting: VecDeque::new(),
            resident: HashMap::new(),
            loading: HashMap::new(),
            parked: Vec::new(),
            due: Vec::new(),
            trims: 0,
        }
    }

    fn resident_bytes(&self) -> u64 {
        self.resident.values().map(|e| e.bytes).sum()
    }

    fn publish(&mut self) {
        let d = self.label.clone();
        gauge!("proofline_memory_budget_bytes", "device" => d.clone()).set(self.budget as f64);
        gauge!("proofline_memory_leased_bytes", "device" => d.clone()).set(self.leased as f64);
        gauge!("proofline_memory_resident_bytes", "device" => d.clone())
            .set(self.resident_bytes() as f64);
        gauge!("proofline_memory_waiting_requests", "device" => d.clone())
            .set(self.waiting.len() as f64);
        gauge!("proofline_resident_sets", "device" => d.clone()).set(self.resident.len() as f64);
        if let Some(u) = self.device.pool_usage() {
            gauge!("proofline_device_pool_used_bytes", "device" => d.clone()).set(u.used as f64);
            gauge!("proofline_device_pool_reserved_bytes", "device" => d.clone())
                .set(u.reserved as f64);
            gauge!("proofline_device_pool_used_high_bytes", "device" => d).set(u.used_high as f64);
        }
    }

    /// Bytes of the pinned and loading sets, and the largest reserve among them.
    fn pinned(&self) -> (u64, u64) {
        self.pinned_except(None)
    }

    /// As [`Self::pinned`], leaving out the load of `skip`.
    fn pinned_except(&self, skip: Option<&str>) -> (u64, u64) {
        let mut bytes = 0;
        let mut reserve = 0;
        for e in self.resident.values().filter(|e| e.pinned()) {
            bytes += e.bytes;
            reserve = reserve.max(e.reserve);
        }
        for (k, (b, r, _)) in &self.loading {
            if Some(k.as_str()) != skip {
                bytes += b;
                reserve = reserve.max(*r);
            }
        }
        (bytes, reserve)
    }

    /// Whether nothing can be in flight on the device.
    fn idle(&self) -> bool {
        self.transient == 0 && self.loading.is_empty()
    }

    /// Runs the operations that wait for an idle device.
    fn run_due(&mut self) {
        if self.due.is_empty() || !self.idle() {
            return;
        }
        for op in std::mem::take(&mut self.due) {
            let t = Instant::now();
            let r = match op {
                IdleOp::Trim => self.device.trim(),
                IdleOp::ResetHighWater => {
                    self.leased_high = self.leased;
                    self.device.reset_high_water()
                }
            };
            if op == IdleOp::Trim {
                self.trims += 1;
                counter!("proofline_allocator_trims_total", "device" => self.label.clone())
                    .increment(1);
            }
            match r {
                Ok(()) => {
                    tracing::debug!(device = %self.label, ?op, ms = t.elapsed().as_millis() as u64, "device-global operation")
                }
                Err(e) => {
                    tracing::warn!(device = %self.label, ?op, error = %e, "device-global operation failed")
                }
            }
        }
    }

    /// Evicts unpinned sets, least recently used first, until `bytes` more fit. Returns whether
    /// they fit.
    fn make_room(&mut self, bytes: u64) -> bool {
        while self.leased + bytes > self.budget {
            let victim = self
                .resident
                .iter()
                .filter(|(_, e)| !e.pinned())
                .min_by_key(|(_, e)| e.last_used)
                .map(|(k, _)| k.clone());
            let Some(key) = victim else {
                return false;
            };
            if let Some(e) = self.resident.remove(&key) {
                tracing::info!(device = %self.label, params = %key, bytes = e.bytes, "resident set evicted (least recently used)");
                gauge!("proofline_params_resident_bytes", "params" => key, "location" => self.label.clone())
                    .set(0.0);
                // Dropping the entry dropped the set (nobody pinned it): its data is freed on
                // the resident stream, which is idle, and its lease's release is on its way.
                // Count the bytes out now (the release then finds nothing to subtract).
                if let Some((b, _)) = self.active.remove(&e.lease_id) {
                    self.leased = self.leased.saturating_sub(b);
                }
            }
        }
        true
    }

    /// Whether a grant of `bytes` would make the device pool grow past the budget without a
    /// trim first (the pool cannot serve it from memory it already caches).
    fn needs_trim(&mut self, bytes: u64) -> bool {
        match self.device.pool_usage() {
            Some(u) => {
                u.reserved.saturating_sub(u.used) < bytes && u.reserved + bytes > self.budget
            }
            None => false,
        }
    }

    fn new_lease(&mut self, ctx: &mut Context<Self>, bytes: u64, kind: LeaseKind) -> Lease {
        let id = self.next_id;
        self.next_id += 1;
        self.leased += bytes;
        self.leased_high = self.leased_high.max(self.leased);
        if kind == LeaseKind::Transient {
            self.transient += 1;
        }
        self.active.insert(id, (bytes, kind));
        Lease {
            id,
            bytes,
            kind,
            allocator: Mailbox::again(ctx.address()),
        }
    }

    /// Grants waiting requests in order while the first one fits.
    fn grant(&mut self, ctx: &mut Context<Self>) {
        self.run_due();
        while let Some(front) = self.waiting.front() {
            if front.is_abandoned() {
                // The requester gave up (job cancelled): drop its place in the queue.
                self.waiting.pop_front();
                continue;
            }
            if !self.due.is_empty() {
                break; // draining for a device-global operation
            }
            let bytes = front.bytes;
            if !self.make_room(bytes) {
                // Only transient leases (which always end) and pinned sets are in the way.
                if let Some(Pending {
                    want: Want::Resident { key, sizes, .. },
                    ..
                }) = self.waiting.front()
                {
                    // A set's load waits only for transient leases: if pinned sets block it,
                    // it streams its bases, or waits aside for them.
                    let own = self.loading.get(key.as_str()).map(|l| l.1).unwrap_or(0);
                    let (pinned, reserve) = self.pinned_except(Some(key.as_str()));
                    let reserve = reserve.max(own);
                    if pinned + bytes + reserve > self.budget {
                        let (key, sizes) = (key.clone(), *sizes);
                        self.requeue_blocked_load(key, sizes, pinned, reserve);
                        continue;
                    }
                }
                break;
            }
            if self.needs_trim(bytes) {
                self.due.push(IdleOp::Trim);
                self.run_due();
                if !self.due.is_empty() {
                    break;
                }
            }
            let Some(p) = self.waiting.pop_front() else {
                break;
            };
            let waited = p.since.elapsed().as_secs_f64();
            match p.want {
                Want::Transient(reply) => {
                    let lease = self.new_lease(ctx, p.bytes, LeaseKind::Transient);
                    self.record_wait(LeaseKind::Transient, waited, &p.owner, p.bytes);
                    // If the requester is gone, the lease drops here and releases itself.
                    let _ = reply.send(lease);
                }
                Want::Resident {
                    key,
                    residency,
                    reply,
                    ..
                } => {
                    let lease = self.new_lease(ctx, p.bytes, LeaseKind::Resident);
                    self.record_wait(LeaseKind::Resident, waited, &p.owner, p.bytes);
                    let load = ResidentLoad {
                        key,
                        residency,
                        lease: Some(lease),
                        allocator: Mailbox::again(ctx.address()),
                    };
                    let _ = reply.send(Ok(ResidentGrant::Load(load)));
                }
            }
        }
        self.publish();
    }

    /// The load at the front cannot fit next to the pinned sets: load the bases alone (without
    /// the engine's extras) if that fits, else stream them (tables only) if that fits, else
    /// park the requests for that set until sets are unpinned.
    fn requeue_blocked_load(
        &mut self,
        key: String,
        sizes: ResidentSizes,
        pinned: u64,
        reserve: u64,
    ) {
        let Some(mut p) = self.waiting.pop_front() else {
            return;
        };
        if let Want::Resident { residency, .. } = &mut p.want {
            let fits = |bytes: u64| pinned + bytes + reserve <= self.budget;
            let smaller = if *residency != Residency::Resident {
                None
            } else if p.bytes > sizes.bases && fits(sizes.bases) {
                tracing::info!(device = %self.label, params = %key, "the bases' extras do not fit next to the sets in use: the bases alone");
                Some((Residency::Resident, sizes.bases))
            } else if fits(sizes.tables) {
                tracing::info!(device = %self.label, params = %key, "bases do not fit next to the sets in use: streaming them");
                Some((Residency::Streamed, sizes.tables))
            } else {
                None
            };
            if let Some((r, bytes)) = smaller {
                *residency = r;
                if let Some(l) = self.loading.get_mut(&key) {
                    l.0 = bytes;
                }
                p.bytes = bytes;
                self.waiting.push_front(p);
                return;
            }
        }
        // park: the load waits aside, with the requests waiting for it, until a set is unpinned
        if let Want::Resident { reply, .. } = p.want {
            let own_reserve = match self.loading.remove(&key) {
                Some((_, r, waiters)) => {
                    self.parked.extend(waiters);
                    r
                }
                None => reserve,
            };
            self.parked.push(ResidentWaiter {
                msg: AcquireResident {
                    key,
                    sizes,
                    reserve: own_reserve,
                    owner: p.owner,
                },
                reply,
            });
        }
    }

    fn record_wait(&self, kind: LeaseKind, secs: f64, owner: &str, bytes: u64) {
        histogram!("proofline_lease_wait_seconds", "device" => self.label.clone(), "kind" => kind.label())
            .record(secs);
        tracing::debug!(device = %self.label, owner, bytes, kind = kind.label(), waited_ms = (secs * 1e3) as u64, "lease granted");
    }

    /// Serves a request for a resident set.
    fn acquire(
        &mut self,
        msg: AcquireResident,
        reply: oneshot::Sender<Result<ResidentGrant, LeaseError>>,
        ctx: &mut Context<Self>,
    ) {
        self.tick += 1;
        let tick = self.tick;
        let (pinned, reserve) = self.pinned();
        if let Some(e) = self.resident.get_mut(&msg.key) {
            let extra = if e.pinned() { 0 } else { e.bytes };
            if pinned + extra + reserve.max(msg.reserve).max(e.reserve) > self.budget {
                // pinning it now could starve the stages of the sets in use: wait for them
                self.parked.push(ResidentWaiter { msg, reply });
                return;
            }
            e.last_used = tick;
            let _ = reply.send(Ok(ResidentGrant::Ready(ResidentRef {
                set: e.set.clone(),
                allocator: Mailbox::again(ctx.address()),
            })));
            return;
        }
        if let Some((_, _, waiters)) = self.loading.get_mut(&msg.key) {
            waiters.push(ResidentWaiter { msg, reply });
            return;
        }
        let sizes = msg.sizes;
        if sizes.tables.max(msg.reserve) > self.budget || sizes.tables + msg.reserve > self.budget {
            let _ = reply.send(Err(LeaseError::ExceedsBudget {
                requested: sizes.tables + msg.reserve,
                budget: self.budget,
                device: self.label.clone(),
            }));
            return;
        }
        let reserve = reserve.max(msg.reserve);
        let fits = |bytes: u64| pinned + bytes + reserve <= self.budget;
        let (residency, bytes) = if fits(sizes.full) {
            (Residency::Resident, sizes.full)
        } else if fits(sizes.bases) {
            (Residency::Resident, sizes.bases)
        } else if fits(sizes.tables) {
            (Residency::Streamed, sizes.tables)
        } else {
            self.parked.push(ResidentWaiter { msg, reply });
            return;
        };
        self.loading
            .insert(msg.key.clone(), (bytes, msg.reserve, Vec::new()));
        self.waiting.push_back(Pending {
            bytes,
            owner: msg.owner,
            since: Instant::now(),
            want: Want::Resident {
                key: msg.key,
                residency,
                sizes,
                reply,
            },
        });
        self.grant(ctx);
    }

    /// Retries the parked requests (a set was unpinned or loaded, or a load was abandoned).
    fn retry_parked(&mut self, ctx: &mut Context<Self>) {
        for w in std::mem::take(&mut self.parked) {
            if w.reply.is_closed() {
                continue;
            }
            self.acquire(w.msg, w.reply, ctx);
        }
    }
}

impl Named for VramAllocator {
    const NAME: &'static str = actor::ALLOCATOR;
}

crate::counted_handlers!(VramAllocator);

impl Actor for VramAllocator {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        // Releases must never wait behind a full mailbox.
        ctx.set_mailbox_capacity(crate::scheduler::UNBOUNDED_MAILBOX);
        self.publish();
    }
}

impl Handler<RequestLease> for VramAllocator {
    type Result = ResponseFuture<Result<Lease, LeaseError>>;

    fn handle(&mut self, msg: RequestLease, ctx: &mut Context<Self>) -> Self::Result {
        if msg.bytes > self.budget {
            let err = LeaseError::ExceedsBudget {
                requested: msg.bytes,
                budget: self.budget,
                device: self.label.clone(),
            };
            return Box::pin(async move { Err(err) });
        }
        let (tx, rx) = oneshot::channel();
        self.waiting.push_back(Pending {
            bytes: msg.bytes,
            owner: msg.owner,
            since: Instant::now(),
            want: Want::Transient(tx),
        });
        self.grant(ctx);
        Box::pin(async move { rx.await.map_err(|_| LeaseError::AllocatorGone) })
    }
}

impl Handler<ReleaseLease> for VramAllocator {
    type Result = ();

    fn handle(&mut self, msg: ReleaseLease, ctx: &mut Context<Self>) {
        if let Some((bytes, kind)) = self.active.remove(&msg.id) {
            self.leased = self.leased.saturating_sub(bytes);
            if kind == LeaseKind::Transient {
                self.transient = self.transient.saturating_sub(1);
            }
        }
        self.grant(ctx);
    }
}

impl Handler<AcquireResident> for VramAllocator {
    type Result = ResponseFuture<Result<ResidentGrant, LeaseError>>;

    fn handle(&mut self, msg: AcquireResident, ctx: &mut Context<Self>) -> Self::Result {
        let (tx, rx) = oneshot::channel();
        self.acquire(msg, tx, ctx);
        Box::pin(async move { rx.await.map_err(|_| LeaseError::AllocatorGone)? })
    }
}

impl Handler<PinResident> for VramAllocator {
    type Result = MessageResult<PinResident>;

    /// The set pinned where it is resident and pinning it leaves every pinned set's stage
    /// leases room; never loads nor waits.
    fn handle(&mut self, msg: PinResident, ctx: &mut Context<Self>) -> Self::Result {
        self.tick += 1;
        let tick = self.tick;
        let (pinned, reserve) = self.pinned();
        let budget = self.budget;
        let Some(e) = self.resident.get_mut(&msg.key) else {
            return MessageResult(None);
        };
        let extra = if e.pinned() { 0 } else { e.bytes };
        if pinned + extra + reserve.max(e.reserve) > budget {
            return MessageResult(None);
        }
        e.last_used = tick;
        MessageResult(Some(ResidentRef {
            set: e.set.clone(),
            allocator: Mailbox::again(ctx.address()),
        }))
    }
}

impl Handler<RegisterResident> for VramAllocator {
    type Result = MessageResult<RegisterResident>;

    fn handle(&mut self, msg: RegisterResident, ctx: &mut Context<Self>) -> Self::Result {
        let RegisterResident { mut load, data } = msg;
        let lease = load.lease.take();
        let key = load.key.clone();
        let (bytes, reserve, waiters) =
            self.loading
                .remove(&key)
                .unwrap_or((load.bytes(), 0, Vec::new()));
        let Some(lease) = lease else {
            return MessageResult(Err(LeaseError::AllocatorGone));
        };
        let bytes = bytes.max(lease.bytes());
        let lease_id = lease.id;
        self.tick += 1;
        let set = Arc::new(ResidentSet {
            key: key.clone(),
            residency: load.residency,
            data,
            _lease: lease,
        });
        let mode = match load.residency {
            Residency::Resident => "resident",
            Residency::Streamed => "streamed",
        };
        tracing::info!(device = %self.label, params = %key, bytes, mode, "parameters resident on the device");
        gauge!("proofline_params_resident_bytes", "params" => key.clone(), "location" => self.label.clone())
            .set(bytes as f64);
        self.resident.insert(
            key,
            Entry {
                set: set.clone(),
                bytes,
                reserve,
                last_used: self.tick,
                lease_id,
            },
        );
        let r = ResidentRef {
            set,
            allocator: Mailbox::again(ctx.address()),
        };
        for w in waiters {
            let _ = w.reply.send(Ok(ResidentGrant::Ready(r.clone())));
        }
        self.grant(ctx);
        MessageResult(Ok(r))
    }
}

impl Handler<ResidentAbandoned> for VramAllocator {
    type Result = ();

    fn handle(&mut self, msg: ResidentAbandoned, ctx: &mut Context<Self>) {
        if let Some((_, _, waiters)) = self.loading.remove(&msg.key) {
            tracing::warn!(device = %self.label, params = %msg.key, "a resident upload was abandoned");
            self.parked.extend(waiters);
        }
        self.retry_parked(ctx);
        self.grant(ctx);
    }
}

impl Handler<ResidentUnpinned> for VramAllocator {
    type Result = ();

    fn handle(&mut self, _: ResidentUnpinned, ctx: &mut Context<Self>) {
        if !self.parked.is_empty() {
            self.retry_parked(ctx);
        }
        self.grant(ctx);
    }
}

impl Handler<Trim> for VramAllocator {
    type Result = ();

    fn handle(&mut self, _: Trim, ctx: &mut Context<Self>) {
        if !self.due.contains(&IdleOp::Trim) {
            self.due.push(IdleOp::Trim);
        }
        self.grant(ctx);
    }
}

impl Handler<ResetHighWater> for VramAllocator {
    type Result = ();

    fn handle(&mut self, _: ResetHighWater, ctx: &mut Context<Self>) {
        if !self.due.contains(&IdleOp::ResetHighWater) {
            self.due.push(IdleOp::ResetHighWater);
        }
        self.grant(ctx);
    }
}

impl Handler<DeviceLoad> for VramAllocator {
    type Result = MessageResult<DeviceLoad>;

    fn handle(&mut self, msg: DeviceLoad, _: &mut Context<Self>) -> Self::Result {
        MessageResult(DeviceLoadInfo {
            stages: self.transient + self.waiting.len(),
            holds: self.resident.contains_key(&msg.key) || self.loading.contains_key(&msg.key),
        })
    }
}

impl Handler<Snapshot> for VramAllocator {
    type Result = MessageResult<Snapshot>;

    fn handle(&mut self, _: Snapshot, _: &mut Context<Self>) -> Self::Result {
        let mut resident: Vec<ResidentInfo> = self
            .resident
            .iter()
            .map(|(k, e)| ResidentInfo {
                params: k.clone(),
                bytes: e.bytes,
                residency: e.set.residency,
                users: Arc::strong_count(&e.set) - 1,
            })
            .collect();
        resident.sort_by(|a, b| a.params.cmp(&b.params));
        MessageResult(AllocatorSnapshot {
            device: self.label.clone(),
            budget: self.budget,
            leased: self.leased,
            leased_high: self.leased_high,
            leases: self.active.len(),
            waiting: self.waiting.len(),
            resident_bytes: self.resident_bytes(),
            resident,
            trims: self.trims,
            pool: self.device.pool_usage(),
        })
    }
}

#[cfg(test)]
mod tests;
