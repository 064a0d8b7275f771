//! Metrics every actor reports: mailbox depth (messages waiting) and busy time, plus stage
//! latencies. Names (Prometheus):
//!
//! * `proofline_mailbox_depth{actor}` (gauge): messages sent to the actor (pool) not yet handled;
//! * `proofline_actor_busy_microseconds_total{actor}` (counter): time spent in handlers (its
//!   rate over 1e6 is the pool's utilisation in busy threads);
//! * `proofline_actor_messages_total{actor}` (counter): messages handled;
//! * `proofline_stage_seconds{stage}` (histogram): latency of each pipeline stage per partition.
//!
//! Every message goes through a [`Mailbox`], which counts it into the depth gauge in the same
//! call that sends it, so the gauge cannot drift from the sends; handlers hold a [`Busy`] guard
//! for their duration, which takes the message off the gauge.

use std::time::Instant;

use actix::dev::ToEnvelope;
use actix::prelude::*;
use metrics::{counter, gauge, histogram};

/// Actor names used as the `actor` label.
pub mod actor {
    /// The job coordinator.
    pub const COORDINATOR: &str = "coordinator";
    /// Synthesis pool.
    pub const SYNTHESIS: &str = "synthesis";
    /// CPU-MSM pool.
    pub const CPU_MSM: &str = "cpu_msm";
    /// Parameter loader.
    pub const PARAMS: &str = "params_loader";
    /// Memory allocator.
    pub const ALLOCATOR: &str = "allocator";
    /// Compute actors.
    pub const COMPUTE: &str = "compute";
    /// Stage scheduler.
    pub const SCHEDULER: &str = "scheduler";
}

/// An actor's name in metrics (the `actor` label).
pub trait Named {
    /// The label, one of [`actor`]'s constants.
    const NAME: &'static str;
}

fn enqueued(actor: &'static str) {
    gauge!("proofline_mailbox_depth", "actor" => actor).increment(1.0);
}

/// The address of an actor (or actor pool) through which every message is counted into
/// `proofline_mailbox_depth{actor}` as it is sent.
pub struct Mailbox<A: Actor + Named> {
    addr: Addr<A>,
}

impl<A: Actor + Named> Clone for Mailbox<A> {
    fn clone(&self) -> Self {
        Mailbox {
            addr: self.addr.clone(),
        }
    }
}

impl<A: Actor + Named> std::fmt::Debug for Mailbox<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mailbox").field("actor", &A::NAME).finish()
    }
}

impl<A: Actor + Named> Mailbox<A> {
    /// Wraps a started actor's address.
    pub fn new(addr: Addr<A>) -> Self {
        Mailbox { addr }
    }

    /// Sends `msg` and returns the reply future.
    pub fn send<M>(&self, msg: M) -> Request<A, M>
    where
        M: Message + Send + 'static,
        M::Result: Send,
        A: Handler<M>,
        A::Context: ToEnvelope<A, M>,
    {
        enqueued(A::NAME);
        self.addr.send(msg)
    }

    /// Sends `msg` without waiting for a reply.
    pub fn do_send<M>(&self, msg: M)
    where
        M: Message + Send + 'static,
        M::Result: Send,
        A: Handler<M>,
        A::Context: ToEnvelope<A, M>,
    {
        enqueued(A::NAME);
        self.addr.do_send(msg)
    }
}

/// Held by a handler: takes the message off the depth gauge and accounts busy time on drop.
pub struct Busy {
    actor: &'static str,
    start: Instant,
}

impl Busy {
    /// Starts handling one message of `actor`.
    pub fn start(actor: &'static str) -> Self {
        gauge!("proofline_mailbox_depth", "actor" => actor).decrement(1.0);
        Busy {
            actor,
            start: Instant::now(),
        }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let micros = self.start.elapsed().as_micros() as u64;
        counter!("proofline_actor_busy_microseconds_total", "actor" => self.actor)
            .increment(micros);
        counter!("proofline_actor_messages_total", "actor" => self.actor).increment(1);
    }
}

/// Records a stage latency.
pub fn stage(stage: &'static str, secs: f64) {
    histogram!("proofline_stage_seconds", "stage" => stage).record(secs);
}

/// Helper trait: `f64` seconds since an instant.
pub trait Secs {
    /// Seconds elapsed.
    fn secs(&self) -> f64;
}

impl Secs for Instant {
    fn secs(&self) -> f64 {
        self.elapsed().as_secs_f64()
    }
}
