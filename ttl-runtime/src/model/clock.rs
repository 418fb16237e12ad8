//! The clock that writes and reads share.

use std::sync::{
    atomic::{AtomicI64, Ordering},
    Arc,
};
use std::time::{SystemTime, UNIX_EPOCH};

use chrono::{DateTime, TimeDelta, Utc};

/// Where "now" comes from, for computing cell timestamps on write and the
/// timestamp filter on read.
///
/// [`Clock::system`] is the wall clock. [`Clock::manual_at_now`] is a clock
/// you move yourself, starting at the real now; clones share it, so moving
/// it moves every table that holds a clone:
///
/// ```
/// use bigtable_ttl::Clock;
/// use chrono::TimeDelta;
///
/// let clock = Clock::manual_at_now();
/// let start = clock.now();
/// let shared = clock.clone();
/// clock.advance(TimeDelta::minutes(90));
/// assert_eq!(shared.now(), start + TimeDelta::minutes(90));
/// ```
///
/// # Garbage collection runs on real time
///
/// The clock moves what this library writes and reads, not Bigtable: Cloud
/// Bigtable's and the emulator's garbage collection compare cell timestamps
/// with their own, real, clock. A cell written through a manual clock set
/// far in the past carries a timestamp that is already dead in real time,
/// and is collected at once (the emulator collects every second or so: a
/// row written at a clock 30 days back is gone within a second). Start a
/// manual clock at the real now ([`Clock::manual_at_now`]) and move it
/// forward; a clock in the past is only for pure computations that write
/// nothing ([`crate::MutationBuilder::build`]).
#[derive(Debug, Clone, Default)]
pub struct Clock {
    manual: Option<Arc<AtomicI64>>,
    /// Added to the system clock (not to a manual one).
    offset: TimeDelta,
}

impl Clock {
    /// The system clock.
    #[must_use]
    pub fn system() -> Self {
        Self::default()
    }

    /// The system clock, `by` ahead of it (behind when `by` is negative):
    /// what a client whose clock is off sees, to test how this library
    /// meets a server whose clock is not the client's (see the guide's
    /// "Time and clocks" and "Counters" pages for the skew each feature
    /// supports).
    ///
    /// ```
    /// use bigtable_ttl::Clock;
    /// use chrono::{TimeDelta, Utc};
    ///
    /// let ahead = Clock::system_offset(TimeDelta::milliseconds(300));
    /// assert!(ahead.now() >= Utc::now() + TimeDelta::milliseconds(299));
    /// ```
    #[must_use]
    pub fn system_offset(by: TimeDelta) -> Self {
        Self {
            manual: None,
            offset: by,
        }
    }

    /// A clock that stays at `start` until set or advanced (microsecond precision).
    ///
    /// **Writes through it are collected by Bigtable's real-time garbage
    /// collection** as if written at `start`: a `start` in the past writes
    /// cells that may be dead, and collected, at once (see the type's
    /// docs). Against a table, use [`Clock::manual_at_now`] and move it
    /// forward; a fixed `start` suits computations that send nothing.
    ///
    /// ```
    /// use bigtable_ttl::Clock;
    /// use chrono::{TimeDelta, TimeZone, Utc};
    ///
    /// // For a table: the real now, then forward.
    /// let clock = Clock::manual_at_now();
    /// clock.advance(TimeDelta::hours(3));
    ///
    /// // A fixed instant: for pure computations only (building a
    /// // mutation, checking timestamp math), never for writes that must
    /// // survive: Bigtable collects by its own clock.
    /// let fixed = Clock::manual(Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap());
    /// # let _ = fixed;
    /// ```
    #[must_use]
    pub fn manual(start: DateTime<Utc>) -> Self {
        Self {
            manual: Some(Arc::new(AtomicI64::new(start.timestamp_micros()))),
            offset: TimeDelta::zero(),
        }
    }

    /// A manual clock starting at the system clock's current time: the
    /// manual clock to write with, since Bigtable's garbage collection runs
    /// on real time.
    #[must_use]
    pub fn manual_at_now() -> Self {
        Self::manual(Utc::now())
    }

    /// The current time.
    #[must_use]
    pub fn now(&self) -> DateTime<Utc> {
        match &self.manual {
            // Adding a zero offset is chrono's date arithmetic all the same:
            // the bulk writer asks the time once a row.
            None if self.offset.is_zero() => Utc::now(),
            None => Utc::now()
                .checked_add_signed(self.offset)
                .unwrap_or_else(|| {
                    if self.offset < TimeDelta::zero() {
                        DateTime::<Utc>::MIN_UTC
                    } else {
                        DateTime::<Utc>::MAX_UTC
                    }
                }),
            Some(micros) => DateTime::from_timestamp_micros(micros.load(Ordering::SeqCst))
                .unwrap_or(DateTime::<Utc>::MAX_UTC),
        }
    }

    /// [`Clock::now`] in µs since the epoch. On the system clock this reads
    /// it without building a `DateTime` (a calendar date from the seconds,
    /// then back to a count): the bulk writer asks the time once a row.
    #[inline]
    pub(crate) fn now_micros(&self) -> i64 {
        if self.manual.is_none() && self.offset.is_zero() {
            if let Ok(since) = SystemTime::now().duration_since(UNIX_EPOCH) {
                // Whole µs as chrono counts them (nanoseconds truncated).
                return i64::try_from(since.as_micros()).unwrap_or(i64::MAX);
            }
        }
        self.now().timestamp_micros()
    }

    /// Set a manual clock to `t`.
    ///
    /// # Panics
    /// On the system clock (offset or not), which cannot be set: that is a
    /// programming error.
    pub fn set(&self, t: DateTime<Utc>) {
        self.manual
            .as_ref()
            .expect("Clock::set on the system clock; use Clock::manual")
            .store(t.timestamp_micros(), Ordering::SeqCst);
    }

    /// Move a manual clock by `by` (which may be negative). The clock stops
    /// at the ends of chrono's range instead of wrapping around.
    ///
    /// # Panics
    /// On the system clock (offset or not), which cannot be moved.
    pub fn advance(&self, by: TimeDelta) {
        let (min, max) = (
            DateTime::<Utc>::MIN_UTC.timestamp_micros(),
            DateTime::<Utc>::MAX_UTC.timestamp_micros(),
        );
        let by = by.num_microseconds().unwrap_or_else(|| {
            if by < TimeDelta::zero() {
                i64::MIN
            } else {
                i64::MAX
            }
        });
        let micros = self
            .manual
            .as_ref()
            .expect("Clock::advance on the system clock; use Clock::manual");
        // The closure always returns `Some`: the update cannot fail.
        let _ = micros.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |now| {
            Some(now.saturating_add(by).clamp(min, max))
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn now_in_micros_is_now_on_every_kind_of_clock() {
        let system = Clock::system();
        let before = system.now().timestamp_micros();
        let micros = system.now_micros();
        let after = system.now().timestamp_micros();
        assert!(
            before <= micros && micros <= after,
            "{before} {micros} {after}"
        );
        let start = DateTime::from_timestamp_micros(1_700_000_000_123_456).unwrap();
        let manual = Clock::manual(start);
        assert_eq!(manual.now_micros(), 1_700_000_000_123_456);
        let ahead = Clock::system_offset(TimeDelta::days(400));
        let micros = ahead.now_micros();
        let system_after = system.now_micros();
        assert!(micros >= system_after + TimeDelta::days(399).num_microseconds().unwrap());
        assert!(micros <= ahead.now().timestamp_micros());
    }

    #[test]
    fn advancing_stops_at_the_ends_of_the_range() {
        let start = DateTime::from_timestamp_micros(1_700_000_000_123_456).unwrap();
        let clock = Clock::manual(start);
        clock.advance(TimeDelta::MIN);
        assert_eq!(clock.now(), DateTime::<Utc>::MIN_UTC);
        clock.advance(TimeDelta::MAX);
        clock.advance(TimeDelta::MAX);
        // The clock keeps microseconds.
        let max = DateTime::from_timestamp_micros(DateTime::<Utc>::MAX_UTC.timestamp_micros());
        assert_eq!(Some(clock.now()), max);
        clock.set(start);
        clock.advance(TimeDelta::minutes(-5));
        assert_eq!(clock.now(), start - TimeDelta::minutes(5));
    }
}
