//! The device-op log: when recording is on, the device handle logs each device-global call
//! (pool trim, pool attributes, memory info, device synchronise) with its host time span, and
//! every slot logs the host spans during which it had work in flight on a stream (from the first
//! operation enqueued after a synchronisation until the next synchronisation returned) and the
//! GPU time spans of that work, measured with CUDA events.
//!
//! A slot's in-flight span contains every kernel, copy and stream-ordered free it enqueued in
//! it, so "no device-global call overlaps a slot span" proves that none ran while another
//! slot's work could be executing: [`DeviceLog::overlaps`] checks exactly that, and
//! [`busy_fraction`] turns the CUDA-event spans into the fraction of a window during which the
//! device had kernels of any slot in flight. Recording is off in production (no events, no
//! spans); the regression test and the stage harness turn it on.

use std::sync::Mutex;
use std::time::Instant;

/// Whether a device records its log.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Recording {
    /// Nothing is recorded (production).
    #[default]
    Off,
    /// Device-global calls, slot spans and CUDA-event timings are recorded.
    On,
}

/// A device-global operation (only the device handle, i.e. the allocator, can make them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum DeviceOp {
    /// Set the pool's release threshold.
    SetReleaseThreshold,
    /// Trim the pool.
    Trim,
    /// `cuMemGetInfo`.
    MemoryInfo,
    /// Synchronise every stream of the device.
    SynchronizeDevice,
    /// Reset the pool's high-water marks.
    ResetHighWater,
}

/// One device-global call: host seconds since the log's start.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct OpSpan {
    /// Which call.
    pub op: DeviceOp,
    /// Start, seconds.
    pub start: f64,
    /// End, seconds.
    pub end: f64,
}

/// Host span during which a slot had work in flight.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct SlotSpan {
    /// Slot id on the device (the resident-upload stream is slot `usize::MAX`).
    pub slot: usize,
    /// First operation enqueued, seconds since the log's start.
    pub start: f64,
    /// Synchronisation returned, seconds.
    pub end: f64,
}

/// GPU time span of one slot's in-flight work (milliseconds after the device's reference
/// event, from CUDA events).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct KernelSpan {
    /// Slot id.
    pub slot: usize,
    /// Start, ms.
    pub start_ms: f64,
    /// End, ms.
    pub end_ms: f64,
}

/// A device-global call that ran while a slot had work in flight.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Overlap {
    /// The call.
    pub op: OpSpan,
    /// The slot span it overlapped.
    pub slot: SlotSpan,
}

/// The log of one device.
#[derive(Debug)]
pub struct DeviceLog {
    recording: Recording,
    epoch: Instant,
    ops: Mutex<Vec<OpSpan>>,
    slots: Mutex<Vec<SlotSpan>>,
    kernels: Mutex<Vec<KernelSpan>>,
}

impl DeviceLog {
    /// An empty log.
    pub fn new(recording: Recording) -> Self {
        DeviceLog {
            recording,
            epoch: Instant::now(),
            ops: Mutex::new(Vec::new()),
            slots: Mutex::new(Vec::new()),
            kernels: Mutex::new(Vec::new()),
        }
    }

    /// Whether it records.
    pub fn recording(&self) -> Recording {
        self.recording
    }

    /// Seconds since the log started.
    pub fn now(&self) -> f64 {
        self.epoch.elapsed().as_secs_f64()
    }

    pub(crate) fn op(&self, op: DeviceOp, start: f64) {
        if self.recording == Recording::On {
            let end = self.now();
            lock(&self.ops).push(OpSpan { op, start, end });
        }
    }

    pub(crate) fn slot_span(&self, span: SlotSpan) {
        if self.recording == Recording::On {
            lock(&self.slots).push(span);
        }
    }

    pub(crate) fn kernel_span(&self, span: KernelSpan) {
        if self.recording == Recording::On {
            lock(&self.kernels).push(span);
        }
    }

    /// The device-global calls so far.
    pub fn ops(&self) -> Vec<OpSpan> {
        lock(&self.ops).clone()
    }

    /// The slot spans so far.
    pub fn slot_spans(&self) -> Vec<SlotSpan> {
        lock(&self.slots).clone()
    }

    /// The CUDA-event spans so far.
    pub fn kernel_spans(&self) -> Vec<KernelSpan> {
        lock(&self.kernels).clone()
    }

    /// Every device-global call that overlapped a slot span.
    pub fn overlaps(&self) -> Vec<Overlap> {
        overlaps(&self.ops(), &self.slot_spans())
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Every pair of a device-global call and a slot span whose time intervals intersect.
pub fn overlaps(ops: &[OpSpan], slots: &[SlotSpan]) -> Vec<Overlap> {
    let mut sorted: Vec<SlotSpan> = slots.to_vec();
    sorted.sort_by(|a, b| a.start.total_cmp(&b.start));
    let mut out = Vec::new();
    for op in ops {
        // slot spans starting at or before the call's end can intersect it
        let upto = sorted.partition_point(|s| s.start <= op.end);
        for s in &sorted[..upto] {
            if s.end >= op.start {
                out.push(Overlap { op: *op, slot: *s });
            }
        }
    }
    out
}

/// Fraction of `[from_ms, to_ms]` covered by the union of the spans (kernel-busy fraction of
/// the device over that window).
pub fn busy_fraction(spans: &[KernelSpan], from_ms: f64, to_ms: f64) -> f64 {
    if to_ms <= from_ms {
        return 0.0;
    }
    let mut v: Vec<(f64, f64)> = spans
        .iter()
        .map(|s| (s.start_ms.max(from_ms), s.end_ms.min(to_ms)))
        .filter(|(a, b)| b > a)
        .collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut covered = 0.0;
    let mut cur: Option<(f64, f64)> = None;
    for (a, b) in v {
        cur = match cur {
            Some((ca, cb)) if a <= cb => Some((ca, cb.max(b))),
            Some((ca, cb)) => {
                covered += cb - ca;
                Some((a, b))
            }
            None => Some((a, b)),
        };
    }
    if let Some((ca, cb)) = cur {
        covered += cb - ca;
    }
    covered / (to_ms - from_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(start: f64, end: f64) -> OpSpan {
        OpSpan {
            op: DeviceOp::Trim,
            start,
            end,
        }
    }
    fn slot(slot: usize, start: f64, end: f64) -> SlotSpan {
        SlotSpan { slot, start, end }
    }

    #[test]
    fn a_call_between_spans_is_clean_and_one_inside_or_across_is_not() {
        let slots = [slot(0, 1.0, 2.0), slot(1, 1.5, 3.0), slot(0, 4.0, 5.0)];
        // in the gap of both slots
        assert!(overlaps(&[op(3.1, 3.9)], &slots).is_empty());
        // before everything, after everything
        assert!(overlaps(&[op(0.0, 0.5), op(5.5, 6.0)], &slots).is_empty());
        // inside slot 1's span only
        let o = overlaps(&[op(2.5, 2.6)], &slots);
        assert_eq!(o.len(), 1);
        assert_eq!(o[0].slot.slot, 1);
        // across the end of slot 0 and into slot 1
        assert_eq!(overlaps(&[op(1.9, 2.1)], &slots).len(), 2);
        // a call that contains a whole span
        assert_eq!(overlaps(&[op(3.5, 6.0)], &slots).len(), 1);
        // touching counts as overlapping (clock resolution)
        assert_eq!(overlaps(&[op(3.0, 3.05)], &slots).len(), 1);
    }

    #[test]
    fn busy_fraction_is_the_union() {
        let k = |s: f64, e: f64| KernelSpan {
            slot: 0,
            start_ms: s,
            end_ms: e,
        };
        // two overlapping spans count once; a gap does not count
        let spans = [k(0.0, 40.0), k(30.0, 60.0), k(70.0, 100.0)];
        let f = busy_fraction(&spans, 0.0, 100.0);
        assert!((f - 0.9).abs() < 1e-12, "{f}");
        // clipped to the window
        let f = busy_fraction(&spans, 50.0, 100.0);
        assert!((f - 0.8).abs() < 1e-12, "{f}");
        assert_eq!(busy_fraction(&[], 0.0, 1.0), 0.0);
    }

    #[test]
    fn the_log_records_only_when_asked() {
        let off = DeviceLog::new(Recording::Off);
        off.op(DeviceOp::Trim, 0.0);
        off.slot_span(slot(0, 0.0, 1.0));
        assert!(off.ops().is_empty() && off.slot_spans().is_empty());
        let on = DeviceLog::new(Recording::On);
        on.slot_span(slot(0, 0.0, 0.0));
        let t = on.now();
        on.op(DeviceOp::Trim, t);
        assert_eq!(on.ops().len(), 1);
        assert!(on.overlaps().is_empty());
    }
}
