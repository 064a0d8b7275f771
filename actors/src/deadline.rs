//! Deadlines: how long a partition of each circuit takes, measured, and whether a job can
//! still make its deadline.
//!
//! The coordinator records the service time of every proved partition (admission to verified
//! proof) under its parameter set's id, i.e. per circuit: a 2KiB WindowPoSt partition and a
//! 32GiB one are different circuits with different times. The estimate is an exponentially
//! weighted moving average of those times.
//!
//! A job is failed with `deadline_exceeded` when its deadline has passed, or when the time left
//! is below an optimistic estimate of what it still needs: the longest remainder of its running
//! partitions, or the waves of its unstarted partitions at `parallel` partitions at a time,
//! whichever is longer (queueing behind other jobs is not counted). Failing on an optimistic
//! estimate means a job is given up only when it cannot finish in time; with no measurement yet
//! for its circuit, only a passed deadline fails it.

use std::collections::HashMap;

/// Weight of the newest sample in the moving average.
const ALPHA: f64 = 0.3;

/// Measured partition times per circuit.
#[derive(Debug, Default)]
pub struct LatencyModel {
    secs: HashMap<String, f64>,
}

impl LatencyModel {
    /// Records one partition of `circuit` that took `secs` from admission to verified proof.
    pub fn record(&mut self, circuit: &str, secs: f64) {
        if !secs.is_finite() || secs < 0.0 {
            return;
        }
        self.secs
            .entry(circuit.to_string())
            .and_modify(|s| *s = ALPHA * secs + (1.0 - ALPHA) * *s)
            .or_insert(secs);
    }

    /// The estimated partition time of `circuit`, once one was measured.
    pub fn partition_secs(&self, circuit: &str) -> Option<f64> {
        self.secs.get(circuit).copied()
    }
}

/// What is left of a job, for the deadline check.
#[derive(Clone, Debug, Default)]
pub struct Remaining {
    /// Partitions not admitted yet.
    pub unstarted: usize,
    /// Seconds since admission of each running partition.
    pub running_elapsed: Vec<f64>,
}

/// The optimistic time a job still needs, given the circuit's partition time and how many
/// partitions run at once.
pub fn needed_secs(partition_secs: f64, remaining: &Remaining, parallel: usize) -> f64 {
    let running = remaining
        .running_elapsed
        .iter()
        .map(|e| (partition_secs - e).max(0.0))
        .fold(0.0, f64::max);
    let waves = remaining.unstarted.div_ceil(parallel.max(1));
    running.max(waves as f64 * partition_secs)
}

/// `Some(reason)` when a job with `deadline_ms` cannot be finished in time any more.
pub fn verdict(
    deadline_ms: u64,
    now_ms: u64,
    partition_secs: Option<f64>,
    remaining: &Remaining,
    parallel: usize,
) -> Option<String> {
    if now_ms >= deadline_ms {
        return Some(format!(
            "the deadline {deadline_ms} (Unix ms) passed {:.3} s ago",
            (now_ms - deadline_ms) as f64 / 1e3
        ));
    }
    let left = (deadline_ms - now_ms) as f64 / 1e3;
    let per = partition_secs?;
    let needed = needed_secs(per, remaining, parallel);
    (needed > left).then(|| {
        format!(
            "{left:.3} s left before the deadline {deadline_ms} (Unix ms), at least {needed:.3} s \
             needed ({} unstarted and {} running partitions at {per:.3} s each, measured for \
             this circuit)",
            remaining.unstarted,
            remaining.running_elapsed.len()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_average_follows_measurements_per_circuit() {
        let mut m = LatencyModel::default();
        assert_eq!(m.partition_secs("a"), None);
        m.record("a", 10.0);
        m.record("a", 20.0);
        m.record("b", 1.0);
        m.record("b", f64::NAN);
        assert!((m.partition_secs("a").unwrap() - 13.0).abs() < 1e-9);
        assert_eq!(m.partition_secs("b"), Some(1.0));
    }

    #[test]
    fn needed_time_counts_waves_and_running_remainders() {
        let r = Remaining {
            unstarted: 5,
            running_elapsed: vec![],
        };
        assert_eq!(needed_secs(10.0, &r, 2), 30.0, "3 waves of 2");
        let r = Remaining {
            unstarted: 0,
            running_elapsed: vec![4.0, 8.0, 12.0],
        };
        assert_eq!(needed_secs(10.0, &r, 2), 6.0, "the longest remainder");
        let r = Remaining {
            unstarted: 1,
            running_elapsed: vec![1.0],
        };
        assert_eq!(needed_secs(10.0, &r, 2), 10.0);
    }

    #[test]
    fn verdicts() {
        let r = Remaining {
            unstarted: 2,
            running_elapsed: vec![],
        };
        let passed = verdict(1_000, 1_500, None, &r, 1).unwrap();
        assert!(passed.contains("passed 0.500 s ago"), "{passed}");
        assert_eq!(
            verdict(100_000, 1_000, None, &r, 1),
            None,
            "no estimate yet"
        );
        assert_eq!(
            verdict(100_000, 1_000, Some(10.0), &r, 1),
            None,
            "99 s for 20 s"
        );
        let tight = verdict(20_000, 1_000, Some(10.0), &r, 1).unwrap();
        assert!(
            tight.contains("19.000 s left") && tight.contains("20.000 s"),
            "{tight}"
        );
        assert_eq!(
            verdict(20_000, 1_000, Some(10.0), &r, 2),
            None,
            "one wave of 2"
        );
    }
}
