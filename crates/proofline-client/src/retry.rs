//! When to try a request again, and how long to wait first: bounded exponential backoff with
//! full jitter, or the daemon's `Retry-After` when it gives one.
//!
//! Only answers that say "not now" are retried: a transport error (the daemon restarting, a
//! connection reset, a timeout) and HTTP 503 (queue full, journal unavailable, shutting down).
//! Submissions are safe to repeat because the client sends every submission with an
//! idempotency key, the same one on each attempt: the daemon answers a repeat with the job it
//! already accepted.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

/// How many times, and how long between.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all (1: no retry).
    pub attempts: u32,
    /// First backoff ceiling; doubled after each attempt.
    pub base: Duration,
    /// Largest backoff ceiling.
    pub max_backoff: Duration,
    /// Largest wait a `Retry-After` may impose; a longer one is not waited for (the error is
    /// returned).
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    /// 6 attempts, backoff ceilings 0.25, 0.5, 1, 2, 4 s (about 8 s at most before giving up on
    /// an unreachable daemon), `Retry-After` honoured up to 2 minutes.
    fn default() -> Self {
        RetryPolicy {
            attempts: 6,
            base: Duration::from_millis(250),
            max_backoff: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(120),
        }
    }
}

impl RetryPolicy {
    /// No retries.
    pub fn none() -> Self {
        RetryPolicy {
            attempts: 1,
            ..Self::default()
        }
    }

    /// The wait before attempt `attempt + 1` (`attempt` counts from 1) after a retryable
    /// failure, or `None` when no attempt is left or the daemon asks for a longer wait than
    /// allowed. `retry_after`: the daemon's `Retry-After`; `unit`: a random number in [0, 1).
    pub fn delay(
        &self,
        attempt: u32,
        retry_after: Option<Duration>,
        unit: f64,
    ) -> Option<Duration> {
        if attempt >= self.attempts {
            return None;
        }
        match retry_after {
            Some(r) if r > self.max_retry_after => None,
            // The daemon knows its queue; spread clients over a tenth of its wait.
            Some(r) => Some(r + r.mul_f64(0.1 * unit)),
            None => {
                let ceiling = self
                    .base
                    .saturating_mul(1u32 << (attempt - 1).min(20))
                    .min(self.max_backoff);
                Some(ceiling.mul_f64(unit))
            }
        }
    }
}

/// A random 64-bit number from the standard library's per-process random hash keys (no
/// dependency; not for cryptography).
pub fn random_u64() -> u64 {
    let mut h = RandomState::new().build_hasher();
    h.write_u64(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0),
    );
    h.finish()
}

/// A random number in [0, 1).
pub fn random_unit() -> f64 {
    (random_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// A fresh idempotency key: 32 random hex digits.
pub fn new_idempotency_key() -> String {
    format!("{:016x}{:016x}", random_u64(), random_u64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_exponential_backoff_with_jitter() {
        let p = RetryPolicy::default();
        let ms = |d: Option<Duration>| d.map(|d| d.as_millis());
        // Full jitter: anywhere below the ceiling, which doubles up to the cap.
        assert_eq!(ms(p.delay(1, None, 0.0)), Some(0));
        assert_eq!(ms(p.delay(1, None, 0.999_999)), Some(249));
        assert_eq!(ms(p.delay(2, None, 0.5)), Some(250));
        assert_eq!(ms(p.delay(5, None, 0.5)), Some(2000));
        let capped = RetryPolicy { attempts: 40, ..p };
        assert_eq!(ms(capped.delay(30, None, 0.5)), Some(4000));
        // Bounded attempts.
        assert_eq!(p.delay(6, None, 0.5), None);
        assert_eq!(RetryPolicy::none().delay(1, None, 0.5), None);
        // Retry-After wins, with a little spread; too long a wait is not waited for.
        assert_eq!(
            ms(p.delay(1, Some(Duration::from_secs(3)), 0.0)),
            Some(3000)
        );
        assert_eq!(
            ms(p.delay(1, Some(Duration::from_secs(3)), 0.5)),
            Some(3150)
        );
        assert_eq!(p.delay(1, Some(Duration::from_secs(600)), 0.5), None);
    }

    #[test]
    fn keys_and_randomness() {
        let (a, b) = (new_idempotency_key(), new_idempotency_key());
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
        for _ in 0..100 {
            let u = random_unit();
            assert!((0.0..1.0).contains(&u));
        }
    }
}
