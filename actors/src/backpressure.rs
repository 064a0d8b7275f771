//! How long a refused client should wait before submitting again: the `Retry-After` of a full
//! queue, estimated from the queue's own state.
//!
//! The queue has room again when one unfinished job ends. The coordinator keeps the run times
//! (admission to end) of the last jobs that succeeded; the wait is the shortest expected
//! remainder among the running jobs (mean run time minus time already run), or one mean run
//! time when none is running yet, bounded to [1 s, 10 min]. Without history: 10 s.

use std::collections::VecDeque;

/// Run times kept.
const KEEP: usize = 32;
/// Answer without history, seconds.
pub const DEFAULT_RETRY_AFTER_S: u64 = 10;
/// Longest answer, seconds.
pub const MAX_RETRY_AFTER_S: u64 = 600;

/// Run times of recent successful jobs.
#[derive(Debug, Default)]
pub struct RecentRuns {
    secs: VecDeque<f64>,
}

impl RecentRuns {
    /// Records a job's run time (admission to end), seconds.
    pub fn record(&mut self, secs: f64) {
        if !secs.is_finite() || secs < 0.0 {
            return;
        }
        if self.secs.len() == KEEP {
            self.secs.pop_front();
        }
        self.secs.push_back(secs);
    }

    /// Mean run time, if any was recorded.
    pub fn mean(&self) -> Option<f64> {
        (!self.secs.is_empty()).then(|| self.secs.iter().sum::<f64>() / self.secs.len() as f64)
    }

    /// Seconds until a queue slot is expected to free, from how long each running job has run.
    pub fn retry_after_s(&self, running_for: impl IntoIterator<Item = f64>) -> u64 {
        let Some(mean) = self.mean() else {
            return DEFAULT_RETRY_AFTER_S;
        };
        let soonest = running_for
            .into_iter()
            .map(|ran| (mean - ran).max(0.0))
            .fold(None, |m: Option<f64>, r| Some(m.map_or(r, |m| m.min(r))))
            .unwrap_or(mean);
        (soonest.ceil() as u64).clamp(1, MAX_RETRY_AFTER_S)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimates_from_queue_state() {
        let mut r = RecentRuns::default();
        assert_eq!(r.retry_after_s([]), DEFAULT_RETRY_AFTER_S);
        for s in [30.0, 50.0] {
            r.record(s);
        }
        assert_eq!(r.mean(), Some(40.0));
        // No job running yet: one mean run time.
        assert_eq!(r.retry_after_s([]), 40);
        // The job closest to its end decides.
        assert_eq!(r.retry_after_s([5.0, 32.5]), 8);
        // Overdue jobs: retry soon, never at once.
        assert_eq!(r.retry_after_s([100.0]), 1);
        // Bounded above.
        r.record(1e9);
        assert_eq!(r.retry_after_s([]), MAX_RETRY_AFTER_S);
        // Only recent runs count.
        for _ in 0..KEEP {
            r.record(2.0);
        }
        assert_eq!(r.retry_after_s([]), 2);
        r.record(f64::NAN);
        assert_eq!(r.mean(), Some(2.0));
    }
}
