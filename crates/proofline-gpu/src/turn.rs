//! The kernel turn of a device's compute slots ([`SlotKernels`]).
//!
//! Each slot has its own stream, so one slot's uploads (DMA, and the CPU filling the pinned
//! staging buffers) can overlap another slot's kernels. Two slots' kernels running side by side,
//! though, share the SMs and the L2 and finish later than the same kernels one after the other
//! (two slots on an H200 at the 32 GiB shape: 1.41 s per partition side by side, 1.35 s in
//! turn, for 1.30 s of kernels; docs/gpu-kernels.md). With [`SlotKernels::InTurn`] a slot uploads what a stage needs,
//! then waits for the device's kernel turn, runs the stage's kernels, synchronises its stream
//! and hands the turn on: the slots take turns in the order they asked (a ticket queue), so no
//! slot waits behind another more than once in a row.
//!
//! The turn orders a slot's own stream work only: nothing inside it is device-global, and the
//! allocator never takes it (its trims and synchronisations wait for the slots' leases, which
//! are only returned after a stage's turn is over).

use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// How the compute slots of one device run their stages' kernels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SlotKernels {
    /// One slot's kernels at a time: the others' uploads overlap them.
    #[default]
    InTurn,
    /// Every slot launches whenever it is ready: kernels of several slots share the GPU.
    Concurrent,
}

/// A device's kernel turn, shared by its slots.
#[derive(Debug)]
pub(crate) struct KernelTurns {
    mode: SlotKernels,
    queue: Mutex<Tickets>,
    served: Condvar,
}

#[derive(Debug, Default)]
struct Tickets {
    /// The ticket the next slot that asks gets.
    next: u64,
    /// The ticket whose holder has the turn (or gets it next, when nobody holds it).
    serving: u64,
}

/// The kernel turn, held until dropped (with [`SlotKernels::Concurrent`], a turn that excludes
/// nobody).
#[must_use = "the turn is handed on when this is dropped"]
#[derive(Debug)]
pub(crate) struct Turn<'a> {
    turns: Option<&'a KernelTurns>,
    waited: Duration,
}

impl Turn<'_> {
    /// How long the slot waited for the turn.
    pub(crate) fn waited(&self) -> Duration {
        self.waited
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        if let Some(t) = self.turns {
            let mut q = t.queue.lock().unwrap_or_else(|e| e.into_inner());
            q.serving += 1;
            drop(q);
            t.served.notify_all();
        }
    }
}

impl KernelTurns {
    pub(crate) fn new(mode: SlotKernels) -> Self {
        KernelTurns {
            mode,
            queue: Mutex::new(Tickets::default()),
            served: Condvar::new(),
        }
    }

    /// Waits for the turn (at once with [`SlotKernels::Concurrent`]); slots that ask while
    /// another holds it get it in the order they asked.
    pub(crate) fn wait(&self) -> Turn<'_> {
        let start = Instant::now();
        let turns = match self.mode {
            SlotKernels::Concurrent => None,
            SlotKernels::InTurn => {
                let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
                let ticket = q.next;
                q.next += 1;
                while q.serving != ticket {
                    q = self.served.wait(q).unwrap_or_else(|e| e.into_inner());
                }
                Some(self)
            }
        };
        Turn {
            turns,
            waited: start.elapsed(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::thread;

    /// In turn, no two holders overlap, and every slot gets its turns.
    #[test]
    fn in_turn_holders_never_overlap() {
        let turns = Arc::new(KernelTurns::new(SlotKernels::InTurn));
        let inside = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let done = Arc::new(AtomicUsize::new(0));
        let slots: Vec<_> = (0..4)
            .map(|_| {
                let (turns, inside, most, done) =
                    (turns.clone(), inside.clone(), most.clone(), done.clone());
                thread::spawn(move || {
                    for _ in 0..50 {
                        let turn = turns.wait();
                        let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        thread::sleep(Duration::from_micros(200));
                        inside.fetch_sub(1, Ordering::SeqCst);
                        drop(turn);
                        done.fetch_add(1, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        for s in slots {
            s.join().expect("slot thread");
        }
        assert_eq!(most.load(Ordering::SeqCst), 1);
        assert_eq!(done.load(Ordering::SeqCst), 200);
    }

    /// The turn goes to the slots in the order they asked for it: a slot that hands the turn on
    /// and asks again comes after the slot that was already waiting.
    #[test]
    fn in_turn_serves_in_arrival_order() {
        let turns = Arc::new(KernelTurns::new(SlotKernels::InTurn));
        let order = Arc::new(Mutex::new(Vec::new()));
        let first = turns.wait();
        let waiter = {
            let (turns, order) = (turns.clone(), order.clone());
            thread::spawn(move || {
                let t = turns.wait();
                order.lock().expect("order").push("other");
                drop(t);
            })
        };
        // the other slot is queued once the ticket count has moved past ours
        while turns.queue.lock().expect("queue").next < 2 {
            thread::yield_now();
        }
        drop(first);
        let again = turns.wait();
        order.lock().expect("order").push("first again");
        assert!(again.waited() > Duration::ZERO);
        drop(again);
        waiter.join().expect("waiting slot");
        assert_eq!(*order.lock().expect("order"), ["other", "first again"]);
    }

    /// Concurrent slots do not exclude each other: a second holder gets its turn while the first
    /// still holds one (in turn, it would not: the check times out instead of hanging).
    #[test]
    fn concurrent_holders_overlap() {
        for (mode, overlaps) in [
            (SlotKernels::Concurrent, true),
            (SlotKernels::InTurn, false),
        ] {
            let turns = Arc::new(KernelTurns::new(mode));
            let held = turns.wait();
            let (got, rx) = std::sync::mpsc::channel();
            let other = {
                let turns = turns.clone();
                thread::spawn(move || {
                    let t = turns.wait();
                    let _ = got.send(());
                    drop(t);
                })
            };
            let second = rx.recv_timeout(Duration::from_millis(300)).is_ok();
            drop(held);
            other.join().expect("second slot");
            assert_eq!(second, overlaps, "{mode:?}");
        }
    }
}
