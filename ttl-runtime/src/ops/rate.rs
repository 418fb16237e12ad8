//! A token bucket in rows a second: what paces the reaper's deletes.
//!
//! Hand-written rather than `governor`: a dozen lines on tokio's own
//! clock (the timer every delay of this library uses, which tokio's test
//! clock can pause), where `governor` would bring its own clock (`quanta`),
//! its own timer and about ten crates for one `until_n_ready`.

use std::num::NonZeroU32;
use std::time::Duration;

use tokio::time::Instant;

/// Rows may go at `rate` a second, on average over any span; after an idle
/// spell, up to one second's worth at once.
#[derive(Debug)]
pub(crate) struct TokenBucket {
    /// The time one row's token takes to come.
    per_row: Duration,
    /// The credit an idle bucket keeps.
    burst: Duration,
    /// When the tokens taken so far are all earned.
    next: Instant,
}

impl TokenBucket {
    /// A bucket of `rate` rows a second, empty: the first rows wait for
    /// their tokens too, so a run of `n` rows takes `n / rate` seconds.
    pub(crate) fn new(rate: NonZeroU32) -> Self {
        Self {
            per_row: Duration::from_secs(1) / rate.get(),
            burst: Duration::from_secs(1),
            next: Instant::now(),
        }
    }

    /// Wait until `rows` more rows may go: until their tokens are earned.
    pub(crate) async fn take(&mut self, rows: u64) {
        let now = Instant::now();
        let due = self.due(now, rows);
        if due > now {
            tokio::time::sleep_until(due).await;
        }
    }

    /// When `rows` more rows asked for at `now` may go.
    fn due(&mut self, now: Instant, rows: u64) -> Instant {
        let earliest = now.checked_sub(self.burst).unwrap_or(now);
        let start = self.next.max(earliest);
        let rows = u32::try_from(rows).unwrap_or(u32::MAX);
        self.next = start + self.per_row.saturating_mul(rows);
        self.next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_go_at_the_rate_from_the_first_one() {
        let mut bucket = TokenBucket::new(NonZeroU32::new(100).unwrap());
        let started = bucket.next;
        let mut now = started;
        for _ in 0..10 {
            // Each batch goes once its tokens are earned.
            now = bucket.due(now, 50);
        }
        // 500 rows at 100 a second: five seconds, not four and a half.
        assert_eq!(now - started, Duration::from_secs(5));
        // An idle spell earns at most a second.
        let idle = now + Duration::from_secs(30);
        assert_eq!(bucket.due(idle, 100), idle);
        assert_eq!(bucket.due(idle, 100), idle + Duration::from_secs(1));
    }
}
