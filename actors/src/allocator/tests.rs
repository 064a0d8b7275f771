//! The allocator's protocol: order, budget, trims when idle, resident sets.

use super::*;
use crate::resident::ResidentData;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

/// A device whose pool holds `reserved` bytes of which `used` are in use, and which counts
/// its trims (a trim drops the cache: reserved = used).
#[derive(Clone, Default)]
struct FakeDevice {
    trims: Arc<AtomicUsize>,
    used: Arc<AtomicU64>,
    reserved: Arc<AtomicU64>,
    with_pool: bool,
}
impl MemoryDevice for FakeDevice {
    fn label(&self) -> String {
        "fake".into()
    }
    fn pool_usage(&mut self) -> Option<PoolUsage> {
        self.with_pool.then(|| PoolUsage {
            used: self.used.load(Ordering::SeqCst),
            reserved: self.reserved.load(Ordering::SeqCst),
            ..Default::default()
        })
    }
    fn trim(&mut self) -> Result<(), String> {
        self.trims.fetch_add(1, Ordering::SeqCst);
        self.reserved
            .store(self.used.load(Ordering::SeqCst), Ordering::SeqCst);
        Ok(())
    }
}

fn req(bytes: u64) -> RequestLease {
    RequestLease {
        bytes,
        owner: "t".into(),
    }
}

fn start(dev: FakeDevice, budget: u64) -> Mailbox<VramAllocator> {
    Mailbox::new(VramAllocator::new(Box::new(dev), budget).start())
}

async fn settle() {
    actix::clock::sleep(Duration::from_millis(30)).await;
}

#[actix::test]
async fn grants_in_order_never_overcommits_and_waits() {
    let alloc = start(FakeDevice::default(), 100);
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
    settle().await;
    assert!(rx.try_recv().is_err(), "nothing fits while 60 is leased");
    let snap = alloc.send(Snapshot).await.unwrap();
    assert_eq!((snap.leased, snap.waiting), (60, 2));
    drop(l1);
    let (first, a) = rx.recv().await.unwrap();
    let (second, b) = rx.recv().await.unwrap();
    assert_eq!((first, second), ("50", "10"), "grants follow arrival order");
    let snap = alloc.send(Snapshot).await.unwrap();
    assert_eq!((snap.leased, snap.leases, snap.waiting), (60, 2, 0));
    assert_eq!(snap.leased_high, 60);
    drop((a, b));
    let snap = alloc.send(Snapshot).await.unwrap();
    assert_eq!(snap.leased, 0);
}

#[actix::test]
async fn oversize_requests_fail_and_abandoned_requests_leave_the_queue() {
    let alloc = start(FakeDevice::default(), 100);
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
    settle().await;
    drop(l1);
    let l = f.await.unwrap().unwrap();
    assert_eq!(l.bytes(), 40);
    let snap = alloc.send(Snapshot).await.unwrap();
    assert_eq!((snap.leased, snap.waiting), (40, 0));
}

#[actix::test]
async fn a_trim_waits_for_stages_in_flight_and_nothing_starts_meanwhile() {
    let dev = FakeDevice::default();
    let alloc = start(dev.clone(), 100);
    let l1 = alloc.send(req(30)).await.unwrap().unwrap();
    alloc.send(Trim).await.unwrap();
    assert_eq!(dev.trims.load(Ordering::SeqCst), 0, "a stage is in flight");
    // while the trim is due, a request that fits is not granted
    let f = alloc.send(req(10));
    let (tx, mut rx) = tokio::sync::oneshot::channel();
    actix::spawn(async move {
        let _ = tx.send(f.await.unwrap().unwrap());
    });
    settle().await;
    assert!(rx.try_recv().is_err(), "granted while a trim was due");
    drop(l1);
    let l2 = rx.await.unwrap();
    assert_eq!(dev.trims.load(Ordering::SeqCst), 1);
    assert_eq!(alloc.send(Snapshot).await.unwrap().trims, 1);
    // an idle device trims at once
    drop(l2);
    alloc.send(Trim).await.unwrap();
    settle().await;
    assert_eq!(dev.trims.load(Ordering::SeqCst), 2);
}

#[actix::test]
async fn it_trims_by_itself_when_the_pool_would_grow_past_the_budget() {
    let dev = FakeDevice {
        with_pool: true,
        ..Default::default()
    };
    let alloc = start(dev.clone(), 100);
    // 90 reserved, none used: a request of 50 fits the cache, no trim
    dev.reserved.store(90, Ordering::SeqCst);
    let l = alloc.send(req(50)).await.unwrap().unwrap();
    assert_eq!(dev.trims.load(Ordering::SeqCst), 0);
    drop(l);
    settle().await;
    // 90 reserved of which 60 used (by something outside the leases): 40 cannot come from
    // the cache, and growing the pool would pass the budget: trim first
    dev.used.store(60, Ordering::SeqCst);
    let l = alloc.send(req(40)).await.unwrap().unwrap();
    assert_eq!(dev.trims.load(Ordering::SeqCst), 1);
    drop(l);
}

/// A request for a set whose bases on the device take `full` bytes (no extras) and `tables`
/// streamed.
fn acquire(key: &str, full: u64, tables: u64, reserve: u64) -> AcquireResident {
    acquire_sizes(
        key,
        ResidentSizes {
            full,
            bases: full,
            tables,
        },
        reserve,
    )
}

fn acquire_sizes(key: &str, sizes: ResidentSizes, reserve: u64) -> AcquireResident {
    AcquireResident {
        key: key.into(),
        sizes,
        reserve,
        owner: "t".into(),
    }
}

fn data(tag: u32) -> ResidentData {
    Arc::new(tag)
}

/// The load `msg` is granted (the test's set is not resident yet).
async fn load_grant(alloc: &Mailbox<VramAllocator>, msg: AcquireResident) -> ResidentLoad {
    match alloc.send(msg).await.unwrap().unwrap() {
        ResidentGrant::Load(l) => l,
        ResidentGrant::Ready(_) => panic!("the set loads"),
    }
}

/// `l` filled with the data `tag` and registered: the set, pinned.
async fn register(alloc: &Mailbox<VramAllocator>, l: ResidentLoad, tag: u32) -> ResidentRef {
    alloc
        .send(RegisterResident {
            load: l,
            data: data(tag),
        })
        .await
        .unwrap()
        .unwrap()
}

async fn load(
    alloc: &Mailbox<VramAllocator>,
    key: &str,
    full: u64,
    tables: u64,
    reserve: u64,
) -> ResidentRef {
    match alloc
        .send(acquire(key, full, tables, reserve))
        .await
        .unwrap()
        .unwrap()
    {
        ResidentGrant::Load(l) => register(alloc, l, 7).await,
        ResidentGrant::Ready(r) => r,
    }
}

#[actix::test]
async fn a_set_loads_once_and_requests_during_the_load_wait_for_it() {
    let alloc = start(FakeDevice::default(), 1000);
    let first = alloc
        .send(acquire("p", 400, 50, 100))
        .await
        .unwrap()
        .unwrap();
    let ResidentGrant::Load(l) = first else {
        panic!("the first request loads")
    };
    assert_eq!((l.residency(), l.bytes()), (Residency::Resident, 400));
    // a second request for the same set waits for the load
    let second = alloc.send(acquire("p", 400, 50, 100));
    let (tx, rx) = tokio::sync::oneshot::channel();
    actix::spawn(async move {
        let _ = tx.send(second.await.unwrap().unwrap());
    });
    settle().await;
    let r1 = alloc
        .send(RegisterResident {
            load: l,
            data: data(1),
        })
        .await
        .unwrap()
        .unwrap();
    let ResidentGrant::Ready(r2) = rx.await.unwrap() else {
        panic!("the second request gets the loaded set")
    };
    assert_eq!(r2.data().downcast_ref::<u32>(), Some(&1));
    let snap = alloc.send(Snapshot).await.unwrap();
    assert_eq!((snap.resident_bytes, snap.leased), (400, 400));
    assert_eq!(snap.resident[0].users, 2);
    drop((r1, r2));
    // unpinned, it stays resident
    let snap = alloc.send(Snapshot).await.unwrap();
    assert_eq!((snap.resident_bytes, snap.resident[0].users), (400, 0));
}

#[actix::test]
async fn unpinned_sets_are_evicted_lru_and_pinned_ones_never() {
    let alloc = start(FakeDevice::default(), 1000);
    let a = load(&alloc, "a", 300, 10, 100).await;
    let b = load(&alloc, "b", 300, 10, 100).await;
    drop(a);
    // "a" is unpinned and older: a stage lease of 500 evicts it, not the pinned "b"
    let l = alloc.send(req(500)).await.unwrap().unwrap();
    let snap = alloc.send(Snapshot).await.unwrap();
    assert_eq!(
        snap.resident
            .iter()
            .map(|r| r.params.as_str())
            .collect::<Vec<_>>(),
        vec!["b"]
    );
    assert!(snap.leased <= 1000);
    // 300 + 500 leased: a request of 300 waits for the stage, never evicts pinned "b"
    let f = alloc.send(req(300));
    let (tx, mut rx) = tokio::sync::oneshot::channel();
    actix::spawn(async move {
        let _ = tx.send(f.await.unwrap().unwrap());
    });
    settle().await;
    assert!(rx.try_recv().is_err());
    drop(l);
    let _l2 = rx.await.unwrap();
    assert_eq!(alloc.send(Snapshot).await.unwrap().resident.len(), 1);
    drop(b);
}

#[actix::test]
async fn a_set_whose_extras_do_not_fit_next_to_the_sets_in_use_loads_its_bases_alone() {
    let alloc = start(FakeDevice::default(), 1000);
    let sizes = ResidentSizes {
        full: 350,
        bases: 250,
        tables: 60,
    };
    // alone on the device, the set takes its extras
    let l = load_grant(&alloc, acquire_sizes("b", sizes, 200)).await;
    assert_eq!((l.residency(), l.bytes()), (Residency::Resident, 350));
    drop(l);
    // beside a pinned set of 500 (reserve 200) the extras would leave no room for a stage,
    // the bases alone do: resident without them rather than streamed
    let a = load(&alloc, "a", 500, 50, 200).await;
    let l = load_grant(&alloc, acquire_sizes("b", sizes, 200)).await;
    assert_eq!((l.residency(), l.bytes()), (Residency::Resident, 250));
    let b = register(&alloc, l, 2).await;
    assert_eq!(b.residency(), Residency::Resident);
    assert_eq!(alloc.send(Snapshot).await.unwrap().resident_bytes, 750);
    drop((a, b));
}

#[actix::test]
async fn bases_that_do_not_fit_next_to_the_sets_in_use_are_streamed() {
    let alloc = start(FakeDevice::default(), 1000);
    let a = load(&alloc, "a", 500, 50, 200).await;
    // 500 pinned + reserve 200: a second full set of 400 would leave no room for a stage
    let l = load_grant(&alloc, acquire("b", 400, 60, 200)).await;
    assert_eq!((l.residency(), l.bytes()), (Residency::Streamed, 60));
    let b = register(&alloc, l, 2).await;
    assert_eq!(b.residency(), Residency::Streamed);
    // an abandoned load lets the next request load
    drop(load_grant(&alloc, acquire("c", 100, 10, 50)).await);
    assert!(matches!(
        alloc
            .send(acquire("c", 100, 10, 50))
            .await
            .unwrap()
            .unwrap(),
        ResidentGrant::Load(_)
    ));
    drop((a, b));
}

/// A set is pinned by key only where it is resident, never loaded: a set pinned that way stays
/// when a lease needs room, and goes once nobody pins it.
#[actix::test]
async fn pinning_a_set_by_key_keeps_it_and_loads_nothing() {
    let alloc = start(FakeDevice::default(), 1000);
    let pin = |key: &str| {
        alloc.send(PinResident {
            key: key.to_string(),
        })
    };
    assert!(
        pin("tails").await.unwrap().is_none(),
        "not resident: nothing"
    );
    let set = load(&alloc, "tails", 300, 0, 100).await;
    drop(set);
    settle().await;
    let pinned = pin("tails").await.unwrap().expect("resident: pinned");
    assert_eq!(pinned.key(), "tails");
    // 800 fits only without the set: the request waits while it is pinned
    let want = alloc.send(req(800));
    let (tx, mut rx) = tokio::sync::oneshot::channel();
    actix::spawn(async move {
        let _ = tx.send(want.await.unwrap().unwrap());
    });
    settle().await;
    assert!(rx.try_recv().is_err(), "a pinned set is not evicted");
    drop(pinned);
    settle().await;
    let lease = rx.await.unwrap();
    assert_eq!(lease.bytes(), 800);
    assert!(
        pin("tails").await.unwrap().is_none(),
        "evicted for the lease"
    );
}
