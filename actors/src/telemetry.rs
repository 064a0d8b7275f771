//! The pipeline's own figures: every actor's mailbox depth, busy time and messages handled, and
//! every stage's latency. They are kept here as process-wide atomics, which the status page
//! (`Pipeline::status_page`) reads directly and `/metrics` renders ([`render_prometheus`]), so the
//! page, the dashboard and Prometheus show the same numbers.
//!
//! Every message goes through a [`Mailbox`], which counts it into its actor's depth in the same
//! call that sends it. What it sends is the message wrapped in [`Counted`]: the wrapper carries a
//! ticket that takes the message off the depth either when a handler starts on it or, if no
//! handler ever does (actix skips a message whose requester has gone away, e.g. a cancelled
//! partition's, and drops the queue when an actor stops), when it is dropped. So the depth counts
//! exactly the messages sent and not yet started, and cannot drift. The same wrapper times the
//! handler (busy time) and counts it (messages handled): no handler does it by hand. Each actor
//! type opts in once with [`counted_handlers!`](crate::counted_handlers).
//!
//! Metrics rendered from these atomics (Prometheus text, see docs/operations.md):
//!
//! * `proofline_mailbox_depth{actor}` (gauge): messages sent to the actor (pool), not yet started;
//! * `proofline_actor_busy_seconds_total{actor}` (counter): time spent in handlers; its rate over
//!   `proofline_actor_threads` is the pool's busy fraction;
//! * `proofline_actor_messages_total{actor}` (counter): messages handled;
//! * `proofline_actor_threads{actor}` (gauge): threads of the pool (1 for an async actor).
//!
//! Through the `metrics` facade: `proofline_stage_seconds{stage}` (histogram of each stage's
//! latency per partition), and the page-derived gauges of [`publish_sampled`].

use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use actix::dev::{MessageResponse, OneshotSender, ToEnvelope};
use actix::prelude::*;
use metrics::{gauge, histogram};
use proofline_wire::{ActorFigures, GpuFigures, ResidentParams, StageFigures};

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
    /// The job store writer.
    pub const STORE: &str = "store_writer";
}

/// An actor's name in metrics (the `actor` label).
pub trait Named {
    /// The label, one of [`actor`]'s constants.
    const NAME: &'static str;
}

/// The live figures of one actor (pool).
#[derive(Debug)]
pub struct ActorStats {
    name: &'static str,
    depth: AtomicI64,
    permit_waiting: AtomicU64,
    busy: Mutex<BusyClock>,
    handled: AtomicU64,
    threads: AtomicUsize,
}

/// Busy time that counts handlers still running, not only finished ones, so that a stage that
/// runs for minutes shows as busy while it runs: the finished handlers' time plus, for the
/// handlers running now, the time since each started (their count times now, minus the sum of
/// their start times). Read and updated under one lock, so the total never goes down.
#[derive(Debug, Default)]
struct BusyClock {
    /// Nanoseconds of finished handlers.
    done_ns: u64,
    /// Handlers running now.
    running: u64,
    /// Sum of the running handlers' start times, nanoseconds since the process epoch.
    since_sum: u64,
}

/// Nanoseconds since the first call in this process.
fn now_ns() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// Actors in the order they were first seen (the pipeline registers them in pipeline order).
static ACTORS: Mutex<Vec<&'static ActorStats>> = Mutex::new(Vec::new());

impl ActorStats {
    /// The figures of `name`, created on first use. They live for the whole process: actor
    /// names are a handful of constants.
    pub fn of(name: &'static str) -> &'static ActorStats {
        let mut all = ACTORS.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = all.iter().find(|s| s.name == name) {
            return s;
        }
        let s: &'static ActorStats = Box::leak(Box::new(ActorStats {
            name,
            depth: AtomicI64::new(0),
            permit_waiting: AtomicU64::new(0),
            busy: Mutex::new(BusyClock::default()),
            handled: AtomicU64::new(0),
            threads: AtomicUsize::new(1),
        }));
        all.push(s);
        s
    }

    fn clock(&self) -> std::sync::MutexGuard<'_, BusyClock> {
        self.busy.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Seconds spent in handlers so far, running ones included, and the handlers running now.
    fn busy_now(&self) -> (f64, u64) {
        let c = self.clock();
        let live = c
            .running
            .saturating_mul(now_ns())
            .saturating_sub(c.since_sum);
        ((c.done_ns + live) as f64 / 1e9, c.running)
    }

    fn enter(&self) -> u64 {
        let mut c = self.clock();
        let t = now_ns();
        c.running += 1;
        c.since_sum += t;
        t
    }

    fn leave(&self, started: u64) {
        let mut c = self.clock();
        c.done_ns += now_ns().saturating_sub(started);
        c.running = c.running.saturating_sub(1);
        c.since_sum = c.since_sum.saturating_sub(started);
        drop(c);
        self.handled.fetch_add(1, Ordering::Relaxed);
    }

    /// Messages sent and not yet started.
    pub fn depth(&self) -> u64 {
        self.depth.load(Ordering::Relaxed).max(0) as u64
    }

    /// Records how many partitions wait for a stage permit to send work to this pool. The
    /// stage scheduler keeps a pool's mailbox no deeper than its threads, so a pool's backlog
    /// is these waiters, not its mailbox.
    pub fn set_permit_waiting(&self, n: usize) {
        self.permit_waiting.store(n as u64, Ordering::Relaxed);
    }

    /// Records the pool's thread count.
    pub fn set_threads(&self, n: usize) {
        self.threads.store(n.max(1), Ordering::Relaxed);
    }

    fn figures(&self) -> ActorFigures {
        let (busy_seconds_total, running) = self.busy_now();
        ActorFigures {
            actor: self.name.to_string(),
            mailbox_depth: self.depth(),
            permit_waiting: self.permit_waiting.load(Ordering::Relaxed),
            threads: self.threads.load(Ordering::Relaxed),
            running,
            busy_seconds_total,
            messages_total: self.handled.load(Ordering::Relaxed),
        }
    }
}

/// Every actor's figures, in pipeline order.
pub fn actors() -> Vec<ActorFigures> {
    let all = ACTORS.lock().unwrap_or_else(|e| e.into_inner());
    all.iter().map(|s| s.figures()).collect()
}

/// One message's place in its actor's depth: taken off when a handler starts, or on drop.
#[derive(Debug)]
pub struct Ticket {
    stats: Option<&'static ActorStats>,
}

impl Ticket {
    fn issue(stats: &'static ActorStats) -> Self {
        stats.depth.fetch_add(1, Ordering::Relaxed);
        Ticket { stats: Some(stats) }
    }

    fn redeem(mut self) -> Option<&'static ActorStats> {
        let s = self.stats.take();
        if let Some(s) = s {
            s.depth.fetch_sub(1, Ordering::Relaxed);
        }
        s
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if let Some(s) = self.stats.take() {
            s.depth.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// A message on its way through a [`Mailbox`]: the message and its depth ticket.
pub struct Counted<M> {
    msg: M,
    ticket: Ticket,
}

impl<M: Message> Message for Counted<M> {
    type Result = M::Result;
}

impl<M> Counted<M> {
    /// Starts handling: takes the message off the depth and starts the busy clock.
    pub fn start(self) -> (M, Busy) {
        let busy = self.ticket.redeem().map(|s| (s, s.enter()));
        (self.msg, Busy(busy))
    }
}

/// Held while a handler runs; accounts busy time and one message handled on drop.
pub struct Busy(Option<(&'static ActorStats, u64)>);

impl Drop for Busy {
    fn drop(&mut self) {
        if let Some((s, started)) = self.0.take() {
            s.leave(started);
        }
    }
}

/// The response of a counted handler: the inner handler's response, passed through unchanged.
pub struct Handled<R>(pub R);

impl<A, M, R> MessageResponse<A, Counted<M>> for Handled<R>
where
    A: Actor,
    M: Message,
    R: MessageResponse<A, M>,
{
    fn handle(self, ctx: &mut A::Context, tx: Option<OneshotSender<M::Result>>) {
        self.0.handle(ctx, tx)
    }
}

/// Lets `$actor` receive [`Counted`] messages: every `Handler<M>` it has also handles
/// `Counted<M>`, with the depth ticket taken and the busy time accounted around the call.
#[macro_export]
macro_rules! counted_handlers {
    ($actor:ty) => {
        impl<M> ::actix::Handler<$crate::telemetry::Counted<M>> for $actor
        where
            M: ::actix::Message + 'static,
            $actor: ::actix::Handler<M>,
        {
            type Result = $crate::telemetry::Handled<<$actor as ::actix::Handler<M>>::Result>;

            fn handle(
                &mut self,
                msg: $crate::telemetry::Counted<M>,
                ctx: &mut Self::Context,
            ) -> Self::Result {
                let (msg, _busy) = msg.start();
                $crate::telemetry::Handled(<$actor as ::actix::Handler<M>>::handle(self, msg, ctx))
            }
        }
    };
}

/// The address of an actor (or actor pool) through which every message is counted into its
/// mailbox depth as it is sent.
pub struct Mailbox<A: Actor + Named> {
    addr: Addr<A>,
    stats: &'static ActorStats,
}

impl<A: Actor + Named> Clone for Mailbox<A> {
    fn clone(&self) -> Self {
        Mailbox {
            addr: self.addr.clone(),
            stats: self.stats,
        }
    }
}

impl<A: Actor + Named> std::fmt::Debug for Mailbox<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mailbox").field("actor", &A::NAME).finish()
    }
}

impl<A: Actor + Named> Mailbox<A> {
    /// Wraps a started actor's address (one thread).
    pub fn new(addr: Addr<A>) -> Self {
        Self::pool(addr, 1)
    }

    /// Wraps the address of a pool of `threads` actors.
    pub fn pool(addr: Addr<A>, threads: usize) -> Self {
        let stats = ActorStats::of(A::NAME);
        stats.set_threads(threads);
        Mailbox { addr, stats }
    }

    /// Another handle to an actor already wrapped (an actor handing out its own address, e.g.
    /// in a lease): its pool's thread count stays as it was.
    pub fn again(addr: Addr<A>) -> Self {
        Mailbox {
            addr,
            stats: ActorStats::of(A::NAME),
        }
    }

    /// Sends `msg` and returns the reply future.
    pub fn send<M>(&self, msg: M) -> Request<A, Counted<M>>
    where
        M: Message + Send + 'static,
        M::Result: Send,
        A: Handler<Counted<M>>,
        A::Context: ToEnvelope<A, Counted<M>>,
    {
        let ticket = Ticket::issue(self.stats);
        self.addr.send(Counted { msg, ticket })
    }

    /// Whether both address the same actor.
    pub fn same_actor(&self, other: &Mailbox<A>) -> bool {
        self.addr == other.addr
    }

    /// Sends `msg` without waiting for a reply.
    pub fn do_send<M>(&self, msg: M)
    where
        M: Message + Send + 'static,
        M::Result: Send,
        A: Handler<Counted<M>>,
        A::Context: ToEnvelope<A, Counted<M>>,
    {
        let ticket = Ticket::issue(self.stats);
        self.addr.do_send(Counted { msg, ticket })
    }
}

/// The figures of one stage.
struct StageStats {
    name: &'static str,
    count: AtomicU64,
    ns: AtomicU64,
}

static STAGES: Mutex<Vec<&'static StageStats>> = Mutex::new(Vec::new());

fn stage_stats(name: &'static str) -> &'static StageStats {
    let mut all = STAGES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(s) = all.iter().find(|s| s.name == name) {
        return s;
    }
    let s: &'static StageStats = Box::leak(Box::new(StageStats {
        name,
        count: AtomicU64::new(0),
        ns: AtomicU64::new(0),
    }));
    all.push(s);
    s
}

/// Records a stage latency: the `proofline_stage_seconds{stage}` histogram and the stage's
/// count and total seconds on the status page.
pub fn stage(stage: &'static str, secs: f64) {
    histogram!("proofline_stage_seconds", "stage" => stage).record(secs);
    let s = stage_stats(stage);
    s.count.fetch_add(1, Ordering::Relaxed);
    s.ns.fetch_add((secs.max(0.0) * 1e9) as u64, Ordering::Relaxed);
}

/// Every stage's count and total seconds so far, in the order they first ran.
pub fn stages() -> Vec<StageFigures> {
    let all = STAGES.lock().unwrap_or_else(|e| e.into_inner());
    all.iter()
        .map(|s| StageFigures {
            stage: s.name.to_string(),
            count: s.count.load(Ordering::Relaxed),
            seconds_total: s.ns.load(Ordering::Relaxed) as f64 / 1e9,
        })
        .collect()
}

/// Publishes the figures that are sampled rather than counted (uptime, resident parameters, GPU
/// readings) to the `metrics` facade; `/metrics` calls it before rendering.
pub fn publish_sampled(uptime_s: f64, params: &[ResidentParams], gpus: &[GpuFigures]) {
    gauge!("proofline_uptime_seconds").set(uptime_s);
    for p in params {
        gauge!("proofline_params_resident_bytes", "params" => p.id.clone(), "location" => "host")
            .set(p.host_bytes as f64);
        if let Some(s) = p.load_s {
            gauge!("proofline_params_load_seconds", "params" => p.id.clone()).set(s);
        }
    }
    for g in gpus {
        let d = || g.device.clone();
        if let Some(u) = g.utilization_ratio {
            gauge!("proofline_gpu_utilization_ratio", "device" => d()).set(u);
        }
        if let Some(b) = g.memory_used_bytes {
            gauge!("proofline_gpu_memory_used_bytes", "device" => d()).set(b as f64);
        }
        if let Some(b) = g.memory_total_bytes {
            gauge!("proofline_gpu_memory_total_bytes", "device" => d()).set(b as f64);
        }
        if let Some(t) = g.temperature_celsius {
            gauge!("proofline_gpu_temperature_celsius", "device" => d()).set(t);
        }
    }
}

/// Devices' latest kernel-busy fractions.
static GPU_BUSY: Mutex<Vec<(String, f64)>> = Mutex::new(Vec::new());

/// Records a device's kernel-busy fraction (the share of the last measurement window in which
/// the pipeline's kernels ran on it, from CUDA events of the compute stages):
/// `proofline_gpu_busy_ratio{device}` and the device's `kernel_busy_ratio` on the status page.
pub fn gpu_busy(device: &str, ratio: f64) {
    gauge!("proofline_gpu_busy_ratio", "device" => device.to_string()).set(ratio);
    let mut all = GPU_BUSY.lock().unwrap_or_else(|e| e.into_inner());
    match all.iter_mut().find(|(d, _)| d == device) {
        Some(e) => e.1 = ratio,
        None => all.push((device.to_string(), ratio)),
    }
}

/// A device's latest kernel-busy fraction, if its compute stages reported one.
pub fn gpu_busy_ratio(device: &str) -> Option<f64> {
    let all = GPU_BUSY.lock().unwrap_or_else(|e| e.into_inner());
    all.iter().find(|(d, _)| d == device).map(|e| e.1)
}

/// Reads the GPUs' own figures (utilisation, memory, temperature), e.g. through NVML. Called
/// when the status page or `/metrics` is rendered; must not block for long and must not panic
/// when the library or a device is gone (it returns fewer figures).
pub trait GpuProbe: Send + Sync {
    /// One reading per GPU.
    fn sample(&self) -> Vec<GpuFigures>;
}

/// The actor families rendered from the atomics: name, Prometheus type, HELP text.
pub const ACTOR_FAMILIES: [(&str, &str, &str); 4] = [
    (
        "proofline_mailbox_depth",
        "gauge",
        "Messages sent to the actor (pool) and not yet started. A mailbox that keeps growing is the bottleneck stage.",
    ),
    (
        "proofline_actor_busy_seconds_total",
        "counter",
        "Seconds the actor (pool) spent in message handlers; its rate over proofline_actor_threads is the pool's busy fraction.",
    ),
    (
        "proofline_actor_messages_total",
        "counter",
        "Messages the actor (pool) handled.",
    ),
    (
        "proofline_actor_threads",
        "gauge",
        "Threads of the actor pool (1 for an async actor).",
    ),
];

/// Appends the actor families, rendered from the atomics, to a Prometheus text page.
pub fn render_prometheus(out: &mut String) {
    use std::fmt::Write;
    let actors = actors();
    for (i, (name, kind, help)) in ACTOR_FAMILIES.iter().enumerate() {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} {kind}");
        for a in &actors {
            let value = match i {
                0 => a.mailbox_depth as f64,
                1 => a.busy_seconds_total,
                2 => a.messages_total as f64,
                _ => a.threads as f64,
            };
            let _ = writeln!(out, "{name}{{actor=\"{}\"}} {value}", a.actor);
        }
        out.push('\n');
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A test actor with its own name, so that its figures are not shared with other tests.
    struct Sleeper;
    impl Actor for Sleeper {
        type Context = SyncContext<Self>;
    }
    impl Named for Sleeper {
        const NAME: &'static str = "test_sleeper";
    }
    #[derive(Message)]
    #[rtype(result = "u64")]
    struct Nap(u64);
    impl Handler<Nap> for Sleeper {
        type Result = u64;
        fn handle(&mut self, msg: Nap, _: &mut SyncContext<Self>) -> u64 {
            std::thread::sleep(std::time::Duration::from_millis(msg.0));
            msg.0
        }
    }
    crate::counted_handlers!(Sleeper);

    fn figures(name: &str) -> ActorFigures {
        actors()
            .into_iter()
            .find(|a| a.actor == name)
            .expect("registered")
    }

    #[actix::test]
    async fn depth_counts_waiting_messages_and_returns_to_zero_even_when_requesters_give_up() {
        let mb = Mailbox::pool(SyncArbiter::start(1, || Sleeper), 1);
        assert_eq!(figures("test_sleeper").threads, 1);
        // One message runs for 300 ms; three more wait behind it.
        let first = mb.send(Nap(300));
        actix::clock::sleep(std::time::Duration::from_millis(50)).await;
        let waiting: Vec<_> = (0..3).map(|_| mb.send(Nap(10))).collect();
        assert_eq!(figures("test_sleeper").mailbox_depth, 3);
        // Their requesters give up (a cancelled partition): actix skips those messages without
        // calling a handler, and the depth must still come back down.
        drop(waiting);
        assert_eq!(first.await.unwrap(), 300);
        let mut depth = u64::MAX;
        for _ in 0..100 {
            depth = figures("test_sleeper").mailbox_depth;
            if depth == 0 {
                break;
            }
            actix::clock::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert_eq!(depth, 0, "skipped messages leave the depth");
        // A handler counts as busy while it runs, and one message once it is done.
        let before = figures("test_sleeper");
        let nap = mb.send(Nap(400));
        actix::clock::sleep(std::time::Duration::from_millis(200)).await;
        let during = figures("test_sleeper");
        assert_eq!(during.running, 1);
        assert_eq!(during.messages_total, before.messages_total);
        let so_far = during.busy_seconds_total - before.busy_seconds_total;
        assert!(
            (0.15..0.4).contains(&so_far),
            "busy while running: {so_far}"
        );
        assert_eq!(nap.await.unwrap(), 400);
        let after = figures("test_sleeper");
        assert_eq!(after.messages_total, before.messages_total + 1);
        let busy = after.busy_seconds_total - before.busy_seconds_total;
        assert!((0.4..1.5).contains(&busy), "busy {busy}");
        assert_eq!(after.running, 0);
        assert_eq!(after.mailbox_depth, 0);

        let mut text = String::new();
        render_prometheus(&mut text);
        assert!(text.contains("# TYPE proofline_actor_busy_seconds_total counter"));
        assert!(text.contains("proofline_mailbox_depth{actor=\"test_sleeper\"} 0"));
        assert!(text.contains("proofline_actor_threads{actor=\"test_sleeper\"} 1"));
    }

    #[test]
    fn stage_figures_accumulate() {
        stage("test_stage", 0.5);
        stage("test_stage", 1.5);
        let s = stages()
            .into_iter()
            .find(|s| s.stage == "test_stage")
            .unwrap();
        assert_eq!(s.count, 2);
        assert!((s.seconds_total - 2.0).abs() < 1e-6);
    }
}
