//! The memory allocator actor: one per device, the only owner of that device's memory budget
//! and the only caller of its device-global operations.
//!
//! Protocol: a stage sends [`RequestLease`] for N bytes and awaits a [`Lease`]. Leases are granted
//! strictly in arrival order and the sum of granted bytes never exceeds the budget, so an
//! out-of-memory error cannot happen by construction; a request that does not fit yet waits in
//! the queue (it does not fail). Only a request larger than the whole budget is refused. A lease
//! is returned by dropping it: its `Drop` sends [`ReleaseLease`] to this actor's mailbox.
//!
//! Device-global operations (on a GPU: pool trim, device synchronise, memory info) go through
//! [`MemoryDevice`] and are called only from this actor's handlers, and trims only when no lease
//! is outstanding, i.e. when no stage can have work in flight on the device. On the CPU backend
//! the device is host memory and those operations are no-ops.

use std::collections::{HashMap, VecDeque};
use std::time::Instant;

use actix::prelude::*;
use metrics::gauge;
use tokio::sync::oneshot;

use crate::messages::{
    AllocatorSnapshot, LeaseError, ReleaseLease, RequestLease, Snapshot, TrimWhenIdle,
};
use crate::telemetry::{actor, Mailbox, Named};

/// The device-global memory operations an allocator may perform.
pub trait MemoryDevice: Send + 'static {
    /// Label for logs and metrics ("host", "cuda:0").
    fn label(&self) -> String;
    /// Returns cached, unused memory to the device (GPU: trim the stream-ordered pool).
    /// Called only when no lease is outstanding.
    fn trim(&mut self) {}
}

/// Host memory: the CPU backend's "device".
#[derive(Debug, Default)]
pub struct HostMemory;

impl MemoryDevice for HostMemory {
    fn label(&self) -> String {
        "host".into()
    }
}

/// A granted share of the budget; returned to the allocator when dropped.
#[derive(Debug)]
pub struct Lease {
    id: u64,
    bytes: u64,
    allocator: Mailbox<VramAllocator>,
}

impl Lease {
    /// Bytes granted.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.allocator.do_send(ReleaseLease { id: self.id });
    }
}

struct Pending {
    bytes: u64,
    owner: String,
    since: Instant,
    reply: oneshot::Sender<Lease>,
}

/// The allocator actor.
pub struct VramAllocator {
    device: Box<dyn MemoryDevice>,
    label: String,
    budget: u64,
    leased: u64,
    next_id: u64,
    active: HashMap<u64, u64>,
    waiting: VecDeque<Pending>,
    trim_when_idle: bool,
}

impl VramAllocator {
    /// An allocator of `budget` bytes over `device`.
    pub fn new(device: Box<dyn MemoryDevice>, budget: u64) -> Self {
        let label = device.label();
        VramAllocator {
            device,
            label,
            budget,
            leased: 0,
            next_id: 1,
            active: HashMap::new(),
            waiting: VecDeque::new(),
            trim_when_idle: false,
        }
    }

    fn publish(&self) {
        gauge!("proofline_memory_budget_bytes", "device" => self.label.clone())
            .set(self.budget as f64);
        gauge!("proofline_memory_leased_bytes", "device" => self.label.clone())
            .set(self.leased as f64);
        gauge!("proofline_memory_waiting_requests", "device" => self.label.clone())
            .set(self.waiting.len() as f64);
    }

    /// Grants waiting requests in order while the first one fits.
    fn grant(&mut self, ctx: &mut Context<Self>) {
        while let Some(front) = self.waiting.front() {
            if front.reply.is_closed() {
                // The requester gave up (job cancelled): drop its place in the queue.
                self.waiting.pop_front();
                continue;
            }
            if self.leased + front.bytes > self.budget {
                break;
            }
            let Some(p) = self.waiting.pop_front() else {
                break;
            };
            let id = self.next_id;
            self.next_id += 1;
            self.leased += p.bytes;
            self.active.insert(id, p.bytes);
            tracing::debug!(
                device = %self.label, id, bytes = p.bytes, owner = %p.owner,
                waited_ms = p.since.elapsed().as_millis() as u64, "lease granted"
            );
            let lease = Lease {
                id,
                bytes: p.bytes,
                allocator: Mailbox::new(ctx.address()),
            };
            // If the requester is gone, the returned lease drops here and releases itself.
            let _ = p.reply.send(lease);
        }
        self.publish();
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
        ctx.set_mailbox_capacity(usize::MAX);
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
            reply: tx,
        });
        self.grant(ctx);
        Box::pin(async move { rx.await.map_err(|_| LeaseError::AllocatorGone) })
    }
}

impl Handler<ReleaseLease> for VramAllocator {
    type Result = ();

    fn handle(&mut self, msg: ReleaseLease, ctx: &mut Context<Self>) {
        if let Some(bytes) = self.active.remove(&msg.id) {
            self.leased -= bytes;
        }
        if self.active.is_empty() && self.trim_when_idle {
            // No lease outstanding: no stage has work in flight on this device.
            self.device.trim();
            self.trim_when_idle = false;
        }
        self.grant(ctx);
    }
}

impl Handler<TrimWhenIdle> for VramAllocator {
    type Result = ();

    fn handle(&mut self, _: TrimWhenIdle, _: &mut Context<Self>) {
        if self.active.is_empty() {
            self.device.trim();
        } else {
            self.trim_when_idle = true;
        }
    }
}

impl Handler<Snapshot> for VramAllocator {
    type Result = MessageResult<Snapshot>;

    fn handle(&mut self, _: Snapshot, _: &mut Context<Self>) -> Self::Result {
        MessageResult(AllocatorSnapshot {
            device: self.label.clone(),
            budget: self.budget,
            leased: self.leased,
            leases: self.active.len(),
            waiting: self.waiting.len(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    struct CountingDevice(Arc<AtomicUsize>);
    impl MemoryDevice for CountingDevice {
        fn label(&self) -> String {
            "test".into()
        }
        fn trim(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn req(bytes: u64) -> RequestLease {
        RequestLease {
            bytes,
            owner: "t".into(),
        }
    }

    #[actix::test]
    async fn grants_in_order_never_overcommits_and_waits() {
        let trims = Arc::new(AtomicUsize::new(0));
        let alloc =
            Mailbox::new(VramAllocator::new(Box::new(CountingDevice(trims.clone())), 100).start());
        let l1 = alloc.send(req(60)).await.unwrap().unwrap();
        // 50 does not fit next to 60: it waits; a later 10 that would fit must wait behind it.
        let f2 = alloc.send(req(50));
        let f3 = alloc.send(req(10));
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let tx2 = tx.clone();
        actix::spawn(async move {
            let l = f2.await.unwrap().unwrap();
            let _ = tx.send(("50", l));
        });
        actix::spawn(async move {
            let l = f3.await.unwrap().unwrap();
            let _ = tx2.send(("10", l));
        });
        actix::clock::sleep(std::time::Duration::from_millis(50)).await;
        assert!(rx.try_recv().is_err(), "nothing fits while 60 is leased");
        let snap = alloc.send(Snapshot).await.unwrap();
        assert_eq!((snap.leased, snap.waiting), (60, 2));
        drop(l1);
        let (first, a) = rx.recv().await.unwrap();
        let (second, b) = rx.recv().await.unwrap();
        assert_eq!((first, second), ("50", "10"), "grants follow arrival order");
        let snap = alloc.send(Snapshot).await.unwrap();
        assert_eq!((snap.leased, snap.leases, snap.waiting), (60, 2, 0));
        // Trim waits for the last lease to come back.
        alloc.send(TrimWhenIdle).await.unwrap();
        assert_eq!(trims.load(Ordering::SeqCst), 0);
        drop((a, b));
        let snap = alloc.send(Snapshot).await.unwrap();
        assert_eq!(snap.leased, 0);
        assert_eq!(trims.load(Ordering::SeqCst), 1);
    }

    #[actix::test]
    async fn oversize_requests_fail_and_abandoned_requests_leave_the_queue() {
        let alloc = Mailbox::new(VramAllocator::new(Box::new(HostMemory), 100).start());
        let err = alloc.send(req(101)).await.unwrap().unwrap_err();
        assert!(matches!(
            err,
            LeaseError::ExceedsBudget {
                requested: 101,
                budget: 100,
                ..
            }
        ));
        let l1 = alloc.send(req(100)).await.unwrap().unwrap();
        // A waiter that gives up (cancelled job) must not block those behind it.
        let abandoned = alloc.send(req(100));
        drop(abandoned);
        let f = alloc.send(req(40));
        actix::clock::sleep(std::time::Duration::from_millis(20)).await;
        drop(l1);
        let l = f.await.unwrap().unwrap();
        assert_eq!(l.bytes(), 40);
        let snap = alloc.send(Snapshot).await.unwrap();
        assert_eq!((snap.leased, snap.waiting), (40, 0));
    }
}
