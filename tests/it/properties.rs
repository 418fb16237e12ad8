//! Property tests of the timestamp rules (see `ttl-runtime`'s `policy` module), the codecs and the key
//! encoding. Pure: no server.

use bigtable_ttl::{CellCodec, Error, Json, KeyPart};
use bigtable_ttl::{Expiry, Policy};
use chrono::{DateTime, TimeDelta, Utc};
use proptest::prelude::*;

/// 2001 .. 2100, at microsecond precision: sub-millisecond parts matter.
/// Bigtable timestamps are whole milliseconds of microseconds.
const MICROS_PER_MILLI: i64 = 1_000;

/// `t` in microseconds, truncated to the millisecond (the tests' instants
/// are after the epoch).
fn millis_floor(t: DateTime<Utc>) -> Result<i64, std::num::TryFromIntError> {
    let micros = u64::try_from(t.timestamp_micros())?;
    i64::try_from(micros - micros % 1_000)
}

fn instant() -> impl Strategy<Value = DateTime<Utc>> {
    (978_307_200_000_000i64..4_102_444_800_000_000)
        .prop_map(|us| DateTime::from_timestamp_micros(us).unwrap())
}

/// Positive TTLs from 1 µs to 400 days, with sub-millisecond parts.
fn ttl() -> impl Strategy<Value = TimeDelta> {
    prop_oneof![
        (1i64..5_000).prop_map(TimeDelta::microseconds),
        (1i64..34_560_000_000_000).prop_map(TimeDelta::microseconds),
    ]
}

/// Default TTLs as the derive produces them: whole milliseconds, 1 ms .. 400 days.
fn default_policy() -> impl Strategy<Value = Policy> {
    (1i64..34_560_000_000).prop_map(|ms| Policy::default_ttl(TimeDelta::milliseconds(ms)))
}

fn any_policy() -> impl Strategy<Value = Policy> {
    prop_oneof![Just(Policy::CellExpiry), default_policy()]
}

/// Whole-millisecond timestamps around `now`, both sides of every boundary.
fn timestamp_near(now: DateTime<Utc>, policy: Policy) -> impl Strategy<Value = i64> {
    let now_ms = millis_floor(now).unwrap();
    let span = policy.gc_max_age().num_microseconds().unwrap() + 10 * MICROS_PER_MILLI;
    (-span / MICROS_PER_MILLI - 3..span / MICROS_PER_MILLI + 3)
        .prop_map(move |k| (now_ms + k * MICROS_PER_MILLI).max(0))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn every_timestamp_is_a_whole_millisecond(policy in any_policy(), now in instant(), ttl in ttl()) {
        if let Ok(ts) = policy.cell_timestamp(now, Expiry::Ttl(ttl)) {
            prop_assert_eq!(ts % MICROS_PER_MILLI, 0);
            prop_assert!(ts >= 0);
        }
    }

    #[test]
    fn one_second_timestamp_is_the_expiry(now in instant(), ttl in ttl()) {
        let at = now + ttl;
        let expiry_ms = millis_floor(at).unwrap();
        match Policy::CellExpiry.cell_timestamp(now, Expiry::At(at)) {
            Ok(ts) => {
                prop_assert_eq!(ts, expiry_ms);
                prop_assert_eq!(Policy::CellExpiry.expiry_micros(ts).unwrap(), ts);
                prop_assert!(Policy::CellExpiry.is_visible(ts, now));
            }
            // Only when the expiry truncates onto now's millisecond.
            Err(Error::ExpiryNotInFuture { .. }) => prop_assert!(expiry_ms <= millis_floor(now).unwrap()),
            Err(e) => prop_assert!(false, "unexpected error {e}"),
        }
    }

    #[test]
    fn default_timestamp_is_now_shifted_by_ttl_minus_default(policy in default_policy(), now in instant(), ttl in ttl()) {
        let Policy::DefaultTtl { ttl: default } = policy else { unreachable!() };
        let now_ms = millis_floor(now).unwrap();
        let expected_expiry = now_ms + ttl.num_microseconds().unwrap();
        let expected_expiry = expected_expiry - expected_expiry % MICROS_PER_MILLI;
        match policy.cell_timestamp(now, Expiry::Ttl(ttl)) {
            Ok(ts) => {
                prop_assert_eq!(ts, expected_expiry - default.num_microseconds().unwrap());
                prop_assert_eq!(policy.expiry_micros(ts).unwrap(), expected_expiry);
                prop_assert!(policy.is_visible(ts, now));
            }
            Err(Error::ExpiryNotInFuture { .. }) => prop_assert!(expected_expiry <= now_ms),
            Err(Error::TtlUnderMillisecond { .. }) => prop_assert!(ttl < TimeDelta::milliseconds(1)),
            Err(e) => prop_assert!(false, "unexpected error {e}"),
        }
    }

    #[test]
    fn default_ttl_write_gets_the_real_write_time(policy in default_policy(), now in instant()) {
        prop_assert_eq!(policy.cell_timestamp(now, Expiry::PolicyDefault).unwrap(), millis_floor(now).unwrap());
    }

    #[test]
    fn a_cell_dies_exactly_at_its_expiry(policy in any_policy(), now in instant(), ttl in ttl()) {
        if let Ok(ts) = policy.cell_timestamp(now, Expiry::Ttl(ttl)) {
            let expiry = policy.expiry_of(ts).unwrap();
            prop_assert!(!policy.is_visible(ts, expiry));
            prop_assert!(policy.is_visible(ts, expiry - TimeDelta::milliseconds(1)));
        }
    }

    #[test]
    fn the_filter_shows_exactly_the_visible_cells((policy, now, ts) in any_policy().prop_flat_map(|p| instant().prop_flat_map(move |now| (Just(p), Just(now), timestamp_near(now, p))))) {
        let start = policy.visible_from(now);
        prop_assert_eq!(start % MICROS_PER_MILLI, 0);
        prop_assert_eq!(ts >= start, policy.is_visible(ts, now), "ts {} start {}", ts, start);
    }

    #[test]
    fn gc_never_removes_what_the_reader_still_shows(policy in any_policy(), now in instant(), offset_ms in -1_000_000_000i64..1_000_000_000) {
        let ts = (millis_floor(now).unwrap() + offset_ms * MICROS_PER_MILLI).max(0);
        if policy.is_visible(ts, now) {
            prop_assert!(policy.gc_keeps(ts, now));
        }
        let start = policy.visible_from(now);
        prop_assert!(policy.gc_keeps(start, now));
    }

    #[test]
    fn non_positive_ttls_are_rejected(policy in any_policy(), now in instant(), ms in -1_000_000i64..=0) {
        let rejected = matches!(policy.cell_timestamp(now, Expiry::Ttl(TimeDelta::milliseconds(ms))), Err(Error::NonPositiveTtl { .. }));
        prop_assert!(rejected);
    }

    #[test]
    fn expiries_at_or_before_now_are_rejected(policy in any_policy(), now in instant(), back_us in 0i64..10_000_000_000) {
        let at = now - TimeDelta::microseconds(back_us);
        let rejected = matches!(policy.cell_timestamp(now, Expiry::At(at)), Err(Error::ExpiryNotInFuture { .. }));
        prop_assert!(rejected);
    }

    #[test]
    fn a_longer_ttl_never_sorts_below_a_shorter_one(policy in any_policy(), now in instant(), a in ttl(), b in ttl()) {
        let (short, long) = if a <= b { (a, b) } else { (b, a) };
        if let (Ok(s), Ok(l)) = (policy.cell_timestamp(now, Expiry::Ttl(short)), policy.cell_timestamp(now, Expiry::Ttl(long))) {
            prop_assert!(s <= l);
        }
    }

    #[test]
    fn i64_keys_sort_like_the_numbers(a in any::<i64>(), b in any::<i64>()) {
        let enc = |v: i64| { let mut out = Vec::new(); v.write_key(&mut out).unwrap(); out };
        prop_assert_eq!(a.cmp(&b), enc(a).cmp(&enc(b)));
        prop_assert_eq!(i64::read_key(&enc(a)).unwrap(), a);
    }

    #[test]
    fn u64_and_i32_keys_sort_like_the_numbers(a in any::<u64>(), b in any::<u64>(), c in any::<i32>(), d in any::<i32>()) {
        let enc = |v: &dyn Fn(&mut Vec<u8>)| { let mut out = Vec::new(); v(&mut out); out };
        let (ea, eb) = (enc(&|o| a.write_key(o).unwrap()), enc(&|o| b.write_key(o).unwrap()));
        prop_assert_eq!(a.cmp(&b), ea.cmp(&eb));
        let (ec, ed) = (enc(&|o| c.write_key(o).unwrap()), enc(&|o| d.write_key(o).unwrap()));
        prop_assert_eq!(c.cmp(&d), ec.cmp(&ed));
        prop_assert_eq!(i32::read_key(&ec).unwrap(), c);
    }

    #[test]
    fn codecs_round_trip(s in ".*", bytes in proptest::collection::vec(any::<u8>(), 0..64), flag in any::<bool>(),
                         i in any::<i64>(), j in any::<i32>(), u in any::<u64>(), f in any::<f64>(), at in instant()) {
        prop_assert_eq!(String::decode(&s.encode().unwrap()).unwrap(), s);
        prop_assert_eq!(Vec::<u8>::decode(&bytes.encode().unwrap()).unwrap(), bytes);
        prop_assert_eq!(bool::decode(&flag.encode().unwrap()).unwrap(), flag);
        prop_assert_eq!(i64::decode(&i.encode().unwrap()).unwrap(), i);
        prop_assert_eq!(i32::decode(&j.encode().unwrap()).unwrap(), j);
        prop_assert_eq!(u64::decode(&u.encode().unwrap()).unwrap(), u);
        prop_assert_eq!(f64::decode(&f.encode().unwrap()).unwrap().to_bits(), f.to_bits());
        prop_assert_eq!(DateTime::<Utc>::decode(&at.encode().unwrap()).unwrap(), at);
    }
}

/// Key parts, round-tripped alone.
fn key_round_trip<K: KeyPart + PartialEq + std::fmt::Debug>(v: &K) -> Result<(), TestCaseError> {
    let mut out = Vec::new();
    v.write_key(&mut out).unwrap();
    prop_assert_eq!(&K::read_key(&out).unwrap(), v);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1_000))]

    #[test]
    fn every_key_part_round_trips(s in ".*", bytes in proptest::collection::vec(any::<u8>(), 0..64),
                                  u in any::<u64>(), v in any::<u32>(), i in any::<i64>(), j in any::<i32>(), at in instant()) {
        key_round_trip(&s)?;
        key_round_trip(&bytes)?;
        key_round_trip(&u)?;
        key_round_trip(&v)?;
        key_round_trip(&i)?;
        key_round_trip(&j)?;
        key_round_trip(&at)?;
    }

    #[test]
    fn json_cells_round_trip(v in proptest::collection::vec((".*", any::<i64>(), any::<bool>()), 0..8)) {
        let json = Json(v);
        prop_assert_eq!(Json::<Vec<(String, i64, bool)>>::decode(&json.encode().unwrap()).unwrap(), json);
    }

    #[test]
    fn fixed_width_cells_of_another_width_are_errors(bytes in proptest::collection::vec(any::<u8>(), 0..16)) {
        prop_assert_eq!(i64::decode(&bytes).is_ok(), bytes.len() == 8);
        prop_assert_eq!(i32::decode(&bytes).is_ok(), bytes.len() == 4);
        prop_assert_eq!(u64::decode(&bytes).is_ok(), bytes.len() == 8);
        prop_assert_eq!(f64::decode(&bytes).is_ok(), bytes.len() == 8);
    }
}

#[test]
fn before_the_epoch_is_an_error_not_a_negative_timestamp() {
    let policy = Policy::default_ttl(TimeDelta::days(2));
    let now = DateTime::from_timestamp_millis(3_600_000).unwrap(); // 1970-01-01T01:00
    let err = policy
        .cell_timestamp(now, Expiry::Ttl(TimeDelta::minutes(1)))
        .unwrap_err();
    assert!(matches!(err, Error::TimestampBeforeEpoch { .. }), "{err}");
    let err = policy
        .cell_timestamp(
            DateTime::from_timestamp_millis(-5).unwrap(),
            Expiry::PolicyDefault,
        )
        .unwrap_err();
    assert!(matches!(err, Error::TimestampBeforeEpoch { .. }), "{err}");
}

#[test]
fn expiry_beyond_the_representable_range_is_an_error() {
    let now = DateTime::from_timestamp_millis(1_700_000_000_000).unwrap();
    let err = Policy::CellExpiry
        .cell_timestamp(now, Expiry::Ttl(TimeDelta::MAX))
        .unwrap_err();
    assert!(matches!(err, Error::ExpiryOutOfRange { .. }), "{err}");
}
