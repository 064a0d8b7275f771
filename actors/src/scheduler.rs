//! The stage scheduler: permits for the heavy stages, granted in job rank order.
//!
//! The stage pools (synthesis, compute) have FIFO mailboxes. If every admitted partition sent
//! its next message straight to a pool, a WindowPoSt partition admitted behind two C2 partitions
//! would queue behind their messages at every stage. Instead, before each heavy stage a
//! partition driver asks this actor for a [`StagePermit`] of that stage's class; each class has
//! as many permits as its pool has workers, so a pool's mailbox never holds more messages than it
//! can start, and whenever a permit comes back the waiting partition of the highest [`Rank`]
//! gets it. A high-priority partition therefore overtakes lower ones at the next stage boundary;
//! it never interrupts a stage that is already running.
//!
//! Between two stages of the same class (H, then the sparse G1 MSMs) a partition does not drop
//! its permit and ask again: in the gap the permit would go to whoever is already waiting, even
//! a lower rank. It hands the permit back with [`ContinueStage`] instead, and the permit goes to
//! the best of the waiters and itself.
//!
//! A permit is a value: dropping it sends [`ReleaseStage`] back, as a memory lease does. A
//! waiter whose driver was dropped (cancelled or failed job) leaves the queue without a grant.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::time::Instant;

use actix::prelude::*;
use metrics::gauge;
use tokio::sync::oneshot;

use crate::messages::{
    AcquireStage, ContinueStage, ReleaseStage, StageSnapshot, StageSnapshotRequest,
};
use crate::telemetry::{actor, ActorStats, Mailbox, Named};

/// A mailbox capacity that no number of messages reaches: actix's channel counts capacity and
/// senders together below `usize::MAX / 2` (a capacity of `usize::MAX` overflows that sum the
/// first time an address is cloned).
pub(crate) const UNBOUNDED_MAILBOX: usize = usize::MAX >> 2;

/// The classes of heavy stages that need a permit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StageClass {
    /// Circuit construction and synthesis (the synthesis pool).
    Synthesis,
    /// H polynomial with its MSM, or the sparse G1 MSMs (the compute actors; the CPU-MSM work
    /// that overlaps them runs under the same permit).
    Compute,
}

impl StageClass {
    const ALL: [StageClass; 2] = [StageClass::Synthesis, StageClass::Compute];

    fn index(self) -> usize {
        match self {
            StageClass::Synthesis => 0,
            StageClass::Compute => 1,
        }
    }

    /// Label in metrics.
    pub fn label(self) -> &'static str {
        match self {
            StageClass::Synthesis => "synthesis",
            StageClass::Compute => "compute",
        }
    }

    /// The pool whose work this class's permits admit.
    fn pool(self) -> &'static str {
        match self {
            StageClass::Synthesis => actor::SYNTHESIS,
            StageClass::Compute => actor::COMPUTE,
        }
    }
}

/// The order in which partitions are admitted and served: higher priority first; within a
/// priority, the earlier deadline first (jobs without one last); then the older job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rank {
    /// Effective priority of the job.
    pub priority: i32,
    /// Deadline, Unix milliseconds.
    pub deadline_ms: Option<u64>,
    /// Submission order of the job (smaller is older).
    pub seq: u64,
}

impl Ord for Rank {
    /// `a > b` when `a` is served first.
    fn cmp(&self, other: &Self) -> Ordering {
        let deadline = |r: &Rank| std::cmp::Reverse(r.deadline_ms.unwrap_or(u64::MAX));
        self.priority
            .cmp(&other.priority)
            .then_with(|| deadline(self).cmp(&deadline(other)))
            .then_with(|| other.seq.cmp(&self.seq))
    }
}

impl PartialOrd for Rank {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// A granted stage slot; returned to the scheduler when dropped.
#[derive(Debug)]
pub struct StagePermit {
    class: StageClass,
    scheduler: Mailbox<StageScheduler>,
    /// False once the scheduler took the slot back in a [`ContinueStage`].
    held: bool,
}

impl StagePermit {
    /// The stage class this permit is for.
    pub fn class(&self) -> StageClass {
        self.class
    }

    /// The scheduler has taken the slot over: dropping this value must not release it again.
    fn taken(mut self) {
        self.held = false;
    }
}

impl Drop for StagePermit {
    fn drop(&mut self) {
        if self.held {
            self.scheduler.do_send(ReleaseStage { class: self.class });
        }
    }
}

struct Waiter {
    rank: Rank,
    /// Arrival order, so that equal ranks (two partitions of one job) are served in order.
    arrival: u64,
    since: Instant,
    reply: oneshot::Sender<StagePermit>,
}

impl PartialEq for Waiter {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Waiter {}

impl Ord for Waiter {
    fn cmp(&self, other: &Self) -> Ordering {
        self.rank
            .cmp(&other.rank)
            .then_with(|| other.arrival.cmp(&self.arrival))
    }
}

impl PartialOrd for Waiter {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[derive(Default)]
struct Queue {
    capacity: usize,
    held: usize,
    waiting: BinaryHeap<Waiter>,
}

/// The scheduler actor (one per pipeline).
pub struct StageScheduler {
    queues: [Queue; 2],
    arrivals: u64,
}

impl StageScheduler {
    /// A scheduler with `synthesis` and `compute` permits (the pools' sizes; at least 1 each).
    pub fn new(synthesis: usize, compute: usize) -> Self {
        let mut queues: [Queue; 2] = Default::default();
        queues[StageClass::Synthesis.index()].capacity = synthesis.max(1);
        queues[StageClass::Compute.index()].capacity = compute.max(1);
        StageScheduler {
            queues,
            arrivals: 0,
        }
    }

    fn publish(&self) {
        for class in StageClass::ALL {
            let q = &self.queues[class.index()];
            gauge!("proofline_stage_permits_waiting", "stage" => class.label())
                .set(q.waiting.len() as f64);
            gauge!("proofline_stage_permits_held", "stage" => class.label()).set(q.held as f64);
            ActorStats::of(class.pool()).set_permit_waiting(q.waiting.len());
        }
    }

    fn enqueue(&mut self, class: StageClass, rank: Rank) -> oneshot::Receiver<StagePermit> {
        let (tx, rx) = oneshot::channel();
        self.arrivals += 1;
        self.queues[class.index()].waiting.push(Waiter {
            rank,
            arrival: self.arrivals,
            since: Instant::now(),
            reply: tx,
        });
        rx
    }

    fn permit(class: StageClass, ctx: &Context<Self>) -> StagePermit {
        StagePermit {
            class,
            scheduler: Mailbox::new(ctx.address()),
            held: true,
        }
    }

    /// Grants permits of `class` to the best waiters while any are free.
    fn grant(&mut self, class: StageClass, ctx: &mut Context<Self>) {
        let q = &mut self.queues[class.index()];
        while q.held < q.capacity {
            let Some(w) = q.waiting.pop() else {
                break;
            };
            if w.reply.is_closed() {
                continue;
            }
            q.held += 1;
            tracing::trace!(
                stage = class.label(),
                priority = w.rank.priority,
                waited_ms = w.since.elapsed().as_millis() as u64,
                "stage permit granted"
            );
            // A requester that went away in the meantime drops the permit, which releases it.
            let _ = w.reply.send(Self::permit(class, ctx));
        }
        self.publish();
    }
}

impl Named for StageScheduler {
    const NAME: &'static str = actor::SCHEDULER;
}

impl Actor for StageScheduler {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        // Releases must never wait behind a full mailbox.
        ctx.set_mailbox_capacity(UNBOUNDED_MAILBOX);
        self.publish();
    }
}

crate::counted_handlers!(StageScheduler);

impl Handler<AcquireStage> for StageScheduler {
    type Result = ResponseFuture<Option<StagePermit>>;

    fn handle(&mut self, msg: AcquireStage, ctx: &mut Context<Self>) -> Self::Result {
        let rx = self.enqueue(msg.class, msg.rank);
        self.grant(msg.class, ctx);
        Box::pin(async move { rx.await.ok() })
    }
}

impl Handler<ContinueStage> for StageScheduler {
    type Result = ResponseFuture<Option<StagePermit>>;

    fn handle(&mut self, msg: ContinueStage, ctx: &mut Context<Self>) -> Self::Result {
        let class = msg.permit.class();
        msg.permit.taken();
        let q = &mut self.queues[class.index()];
        // Drop waiters that went away, so that they cannot outrank the holder.
        while q.waiting.peek().is_some_and(|w| w.reply.is_closed()) {
            q.waiting.pop();
        }
        let outranked = q.waiting.peek().is_some_and(|w| w.rank > msg.rank);
        if !outranked {
            // The holder is the best: it keeps its slot (the count of held permits is unchanged).
            let permit = Self::permit(class, ctx);
            return Box::pin(async move { Some(permit) });
        }
        // A better waiter takes the slot; the holder queues like any other request.
        q.held = q.held.saturating_sub(1);
        let rx = self.enqueue(class, msg.rank);
        self.grant(class, ctx);
        Box::pin(async move { rx.await.ok() })
    }
}

impl Handler<ReleaseStage> for StageScheduler {
    type Result = ();

    fn handle(&mut self, msg: ReleaseStage, ctx: &mut Context<Self>) {
        let q = &mut self.queues[msg.class.index()];
        q.held = q.held.saturating_sub(1);
        self.grant(msg.class, ctx);
    }
}

impl Handler<StageSnapshotRequest> for StageScheduler {
    type Result = MessageResult<StageSnapshotRequest>;

    fn handle(&mut self, msg: StageSnapshotRequest, _: &mut Context<Self>) -> Self::Result {
        let q = &self.queues[msg.0.index()];
        MessageResult(StageSnapshot {
            held: q.held,
            waiting: q.waiting.len(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rank(priority: i32, deadline_ms: Option<u64>, seq: u64) -> Rank {
        Rank {
            priority,
            deadline_ms,
            seq,
        }
    }

    #[test]
    fn rank_orders_priority_then_deadline_then_age() {
        assert!(rank(1, None, 9) > rank(0, Some(1), 1), "priority first");
        assert!(
            rank(0, Some(5), 9) > rank(0, Some(6), 1),
            "earlier deadline first"
        );
        assert!(
            rank(0, Some(u64::MAX - 1), 9) > rank(0, None, 1),
            "a deadline before none"
        );
        assert!(rank(0, None, 1) > rank(0, None, 2), "older first");
    }

    fn acquire(
        s: &Mailbox<StageScheduler>,
        r: Rank,
        name: &'static str,
        tx: tokio::sync::mpsc::UnboundedSender<(&'static str, StagePermit)>,
    ) {
        let f = s.send(AcquireStage {
            class: StageClass::Compute,
            rank: r,
        });
        actix::spawn(async move {
            if let Ok(Some(p)) = f.await {
                let _ = tx.send((name, p));
            }
        });
    }

    #[actix::test]
    async fn a_released_permit_goes_to_the_best_waiter() {
        let s = Mailbox::new(StageScheduler::new(1, 1).start());
        let held = s
            .send(AcquireStage {
                class: StageClass::Compute,
                rank: rank(0, None, 1),
            })
            .await
            .unwrap()
            .unwrap();
        assert_eq!(held.class(), StageClass::Compute);
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        acquire(&s, rank(0, None, 2), "c2 second", tx.clone());
        acquire(&s, rank(0, None, 3), "c2 third", tx.clone());
        acquire(&s, rank(200, None, 4), "window-post", tx.clone());
        // A request given up before it is handled never queues (actix skips messages whose
        // reply nobody awaits); one given up while waiting is skipped when its turn comes.
        let abandoned = s.send(AcquireStage {
            class: StageClass::Compute,
            rank: rank(300, None, 5),
        });
        drop(abandoned);
        actix::clock::sleep(std::time::Duration::from_millis(30)).await;
        assert!(rx.try_recv().is_err(), "the only permit is held");
        let snap = s
            .send(StageSnapshotRequest(StageClass::Compute))
            .await
            .unwrap();
        assert_eq!((snap.held, snap.waiting), (1, 3));
        // The synthesis class is independent.
        let synth = s
            .send(AcquireStage {
                class: StageClass::Synthesis,
                rank: rank(0, None, 9),
            })
            .await
            .unwrap();
        assert!(synth.is_some());

        let mut order = Vec::new();
        drop(held);
        for _ in 0..3 {
            let (name, permit) = rx.recv().await.unwrap();
            order.push(name);
            drop(permit);
        }
        assert_eq!(order, ["window-post", "c2 second", "c2 third"]);

        // Between two compute stages a holder keeps its permit unless a waiter outranks it.
        let low = s
            .send(AcquireStage {
                class: StageClass::Compute,
                rank: rank(0, None, 10),
            })
            .await
            .unwrap()
            .unwrap();
        acquire(&s, rank(0, None, 11), "c2 waiting", tx.clone());
        actix::clock::sleep(std::time::Duration::from_millis(20)).await;
        let low = s
            .send(ContinueStage {
                permit: low,
                rank: rank(0, None, 10),
            })
            .await
            .unwrap()
            .unwrap();
        assert!(
            rx.try_recv().is_err(),
            "an equal or lower waiter does not take over"
        );
        acquire(&s, rank(200, None, 12), "window-post waiting", tx.clone());
        actix::clock::sleep(std::time::Duration::from_millis(20)).await;
        let continued = s.send(ContinueStage {
            permit: low,
            rank: rank(0, None, 10),
        });
        let (name, high) = rx.recv().await.unwrap();
        assert_eq!(
            name, "window-post waiting",
            "the better waiter takes the slot"
        );
        let snap = s
            .send(StageSnapshotRequest(StageClass::Compute))
            .await
            .unwrap();
        assert_eq!(
            (snap.held, snap.waiting),
            (1, 2),
            "the holder queued behind it"
        );
        drop(high);
        // The holder's job is older than the other waiter's: its permit comes back first.
        let back = continued.await.unwrap().unwrap();
        assert!(rx.try_recv().is_err());
        drop(back);
        let (name, next) = rx.recv().await.unwrap();
        assert_eq!(name, "c2 waiting");
        drop(next);
        actix::clock::sleep(std::time::Duration::from_millis(20)).await;
        let snap = s
            .send(StageSnapshotRequest(StageClass::Compute))
            .await
            .unwrap();
        assert_eq!((snap.held, snap.waiting), (0, 0));
        let snap = s
            .send(StageSnapshotRequest(StageClass::Compute))
            .await
            .unwrap();
        assert_eq!((snap.held, snap.waiting), (0, 0));
    }
}
