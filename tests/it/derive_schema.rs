//! What `#[derive(BigtableRow)]` produces, checked without a server: the
//! schema, the row key, the mutations and the decode round trip.

use crate::support;

use bigtable_ttl::__private::{decode_row, CellRef};
use bigtable_ttl::data::{mutations_of, Mutation as M};
use bigtable_ttl::{BigtableRow, Column, Expiry, Policy, ShadowColumn, WhenAbsent};
use chrono::{DateTime, TimeDelta, TimeZone, Utc};
use support::rows::Session;

/// Default strategy: composite key, two families, a per-field TTL, a
/// renamed column, a per-row expiry override and the shadow column.
#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "clicks", family = "c", key_separator = "#")]
#[ttl(default = "2d", written_at)]
struct Click {
    #[bigtable(key)]
    customer: String,
    #[bigtable(key)]
    seq: u64,
    url: String,
    #[bigtable(column = "ref")]
    referrer: Option<String>,
    #[bigtable(family = "m")]
    count: i64,
    #[bigtable(family = "m")]
    #[ttl(for = "1h")]
    hot: Option<bool>,
    #[ttl(expire_at)]
    expires: Option<DateTime<Utc>>,
}

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 1, 12, 0, 0).unwrap() + TimeDelta::microseconds(123_456)
}

fn click() -> Click {
    Click {
        customer: "c3".into(),
        seq: 7,
        url: "/home".into(),
        referrer: None,
        count: 2,
        hot: Some(true),
        expires: None,
    }
}

fn col(
    field: &'static str,
    family: &'static str,
    qualifier: &'static str,
    ttl: Option<TimeDelta>,
    when_absent: WhenAbsent,
) -> Column {
    Column {
        field,
        family,
        qualifier,
        ttl,
        when_absent,
    }
}

#[test]
fn default_strategy_schema() {
    let s = Click::SCHEMA;
    assert_eq!(s.table, "clicks");
    assert_eq!(
        s.policy,
        Policy::DefaultTtl {
            ttl: TimeDelta::days(2)
        }
    );
    assert_eq!(s.families, &["c", "m"]);
    assert_eq!(
        s.columns,
        &[
            col("url", "c", "url", None, WhenAbsent::Required),
            col("referrer", "c", "ref", None, WhenAbsent::ReadsNone),
            col("count", "m", "count", None, WhenAbsent::Required),
            col(
                "hot",
                "m",
                "hot",
                Some(TimeDelta::hours(1)),
                WhenAbsent::ReadsNone
            ),
        ]
    );
    assert_eq!(
        s.written_at,
        Some(ShadowColumn {
            family: "c",
            qualifier: "written_at"
        })
    );
    assert_eq!(s.key_fields, &["customer", "seq"]);
    assert_eq!(s.key_separator, "#");
}

#[test]
fn one_second_schema() {
    let s = Session::SCHEMA;
    assert_eq!(s.policy, Policy::CellExpiry);
    assert_eq!(s.families, &["s"]);
    assert_eq!(
        s.columns,
        &[col("user", "s", "user", None, WhenAbsent::Required)]
    );
    assert_eq!(s.written_at, None);
    assert_eq!(s.key_fields, &["id"]);
    assert_eq!(s.key_separator, "");
}

#[test]
fn row_key_matches_encode_key() {
    let c = click();
    let key = c.row_key().unwrap();
    assert_eq!(key, Click::encode_key(&("c3".to_string(), 7)).unwrap());
    assert_eq!(key, b"c3#00000000000000000007");
    let s = Session {
        id: "s1".into(),
        expires_at: now(),
        user: "ann".into(),
    };
    assert_eq!(s.row_key().unwrap(), b"s1");
    assert_eq!(Session::encode_key(&"s1".to_string()).unwrap(), b"s1");
}

#[test]
fn expiry_comes_from_the_expire_at_field() {
    let mut c = click();
    assert_eq!(c.expiry(), Expiry::PolicyDefault);
    let at = now() + TimeDelta::days(3);
    c.expires = Some(at);
    assert_eq!(c.expiry(), Expiry::At(at));
    let s = Session {
        id: "s1".into(),
        expires_at: at,
        user: "ann".into(),
    };
    assert_eq!(s.expiry(), Expiry::At(at));
}

/// (kind, family, qualifier, timestamp, value) of each mutation.
fn describe(m: &M) -> (&'static str, String, String, i64, Vec<u8>) {
    match m {
        M::SetCell {
            family,
            qualifier,
            timestamp_micros,
            value,
            ..
        } => (
            "set",
            family.clone(),
            String::from_utf8(qualifier.clone()).unwrap(),
            *timestamp_micros,
            value.clone(),
        ),
        M::DeleteFromColumn {
            family,
            qualifier,
            start_micros: 0,
            end_micros: 0,
            ..
        } => (
            "delete",
            family.clone(),
            String::from_utf8(qualifier.clone()).unwrap(),
            0,
            Vec::new(),
        ),
        M::DeleteFromFamily { family, .. } => (
            "delete family",
            family.clone(),
            String::new(),
            0,
            Vec::new(),
        ),
        other => panic!("unexpected mutation {other:?}"),
    }
}

/// A reading that owns its family (`owns_family`): nothing else stores
/// cells in `r`.
#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "readings", family = "r", owns_family)]
#[ttl(default = "1d", written_at)]
struct Reading {
    #[bigtable(key)]
    id: String,
    value: i64,
    note: Option<String>,
    #[bigtable(family = "x")]
    extra: String,
}

#[test]
fn a_struct_that_owns_its_family_clears_it_once() {
    assert!(Reading::SCHEMA.owns_family && !Click::SCHEMA.owns_family);
    let reading = Reading {
        id: "r1".into(),
        value: 7,
        note: None,
        extra: "e".into(),
    };
    let write = reading.mutation().build(now()).unwrap();
    let kinds: Vec<(&str, String, String)> = mutations_of(&write)
        .iter()
        .map(describe)
        .map(|(k, f, q, _, _)| (k, f, q))
        .collect();
    let s = |k: &'static str, f: &str, q: &str| (k, f.to_owned(), q.to_owned());
    assert_eq!(
        kinds,
        [
            // One delete for the whole family, then only sets in it; a
            // column in another family is still cleared on its own.
            s("delete family", "r", ""),
            s("set", "r", "value"),
            s("delete", "x", "extra"),
            s("set", "x", "extra"),
            s("set", "r", "written_at"),
            s("set", "r", "\0\0Reading"),
        ]
    );
}

#[test]
fn mutations_delete_then_set_with_whole_millisecond_timestamps() {
    let write = click().mutation().build(now()).unwrap();
    let now_ms = now().timestamp_millis() * 1_000;
    assert_eq!(write.timestamp_micros, now_ms);
    assert_eq!(
        write.expires_at,
        now() + TimeDelta::days(2) - TimeDelta::microseconds(456)
    );
    let got: Vec<_> = mutations_of(&write).iter().map(describe).collect();
    let kinds: Vec<(&str, &str, &str)> = got
        .iter()
        .map(|(k, f, q, _, _)| (*k, f.as_str(), q.as_str()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("delete", "c", "url"),
            ("set", "c", "url"),
            // `referrer: None`: only the delete.
            ("delete", "c", "ref"),
            ("delete", "m", "count"),
            ("set", "m", "count"),
            ("delete", "m", "hot"),
            ("set", "m", "hot"),
            ("delete", "c", "written_at"),
            ("set", "c", "written_at"),
            // The row marker, in the struct's own family.
            ("delete", "c", "\0\0Click"),
            ("set", "c", "\0\0Click"),
        ]
    );
    for (kind, _, q, ts, _) in &got {
        if *kind == "set" {
            assert_eq!(ts % 1_000, 0, "{q}: {ts} is not a whole millisecond");
        }
    }
    // The per-field TTL (1h under a 2d default) shifts that cell back.
    let hot_ts = got.iter().find(|g| g.0 == "set" && g.2 == "hot").unwrap().3;
    assert_eq!(hot_ts, now_ms - 47 * 3_600_000_000);
    assert_eq!(got[1].4, b"/home");
    assert_eq!(got[4].4, 2i64.to_be_bytes());
    let marker = got.last().unwrap();
    // Its value the struct's fingerprint: the tag byte, then two bytes
    // for each of its names (columns and map families; their hashes
    // differ, and they are fewer than the 64 a list holds).
    assert_eq!(
        (marker.3, marker.4.as_slice()),
        (now_ms, &Click::SCHEMA.marker_fingerprint()[..])
    );
    let names = Click::SCHEMA.columns.len() + Click::SCHEMA.maps.len();
    assert_eq!((marker.4.len(), marker.4[0]), (1 + 2 * names, 0xfe));
}

#[test]
fn one_second_mutation_uses_the_expiry_as_timestamp() {
    let at = now() + TimeDelta::minutes(30);
    let s = Session {
        id: "s1".into(),
        expires_at: at,
        user: "ann".into(),
    };
    let write = s.mutation().build(now()).unwrap();
    assert_eq!(write.timestamp_micros, at.timestamp_millis() * 1_000);
    // The user column and the row marker, each deleted then set.
    assert_eq!(mutations_of(&write).len(), 4);
}

/// The cells the `SetCell`s of `mutations` write.
fn cells(mutations: &[M]) -> Vec<CellRef<'_>> {
    mutations
        .iter()
        .filter_map(|m| match m {
            M::SetCell {
                family,
                qualifier,
                timestamp_micros,
                value,
                ..
            } => Some(CellRef {
                family,
                qualifier,
                value,
                timestamp_micros: *timestamp_micros,
            }),
            _ => None,
        })
        .collect()
}

#[test]
fn decode_round_trip() {
    let c = click();
    let write = c.mutation().build(now()).unwrap();
    let read = decode_row::<Click>(&write.row_key, cells(&mutations_of(&write)), now())
        .unwrap()
        .expect("row visible");
    // The expire_at field is filled from the row's expiry.
    let expected = Click {
        expires: Some(write.expires_at),
        ..c
    };
    assert_eq!(read.value, expected);
    assert_eq!(read.expires_at, write.expires_at);
    let written = DateTime::from_timestamp_millis(now().timestamp_millis()).unwrap();
    assert_eq!(read.written_at, Some(written));

    // After the per-field TTL the field reads as None, the row is still there.
    let later = now() + TimeDelta::hours(2);
    let read = decode_row::<Click>(&write.row_key, cells(&mutations_of(&write)), later)
        .unwrap()
        .unwrap();
    assert_eq!(read.value.hot, None);
    assert_eq!(read.value.url, "/home");

    // After the default, the row is gone.
    let gone = now() + TimeDelta::days(2);
    assert!(
        decode_row::<Click>(&write.row_key, cells(&mutations_of(&write)), gone)
            .unwrap()
            .is_none()
    );
}

#[test]
fn one_second_decode_round_trip() {
    let at = now() + TimeDelta::minutes(30);
    let s = Session {
        id: "s1".into(),
        expires_at: at,
        user: "ann".into(),
    };
    let write = s.mutation().build(now()).unwrap();
    let read = decode_row::<Session>(&write.row_key, cells(&mutations_of(&write)), now())
        .unwrap()
        .unwrap();
    let at_ms = DateTime::from_timestamp_millis(at.timestamp_millis()).unwrap();
    assert_eq!(
        read.value,
        Session {
            expires_at: at_ms,
            ..s
        }
    );
}

/// A cell of `family:qualifier` at `ts` holding `value`.
fn cell<'a>(family: &'a str, qualifier: &'a str, value: &'a [u8], ts: i64) -> CellRef<'a> {
    CellRef {
        family,
        qualifier: qualifier.as_bytes(),
        value,
        timestamp_micros: ts,
    }
}

/// The error and its causes, one level each, as a reporter prints them.
fn report(err: &bigtable_ttl::Error) -> String {
    let mut levels = vec![err.to_string()];
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        levels.push(cause.to_string());
        source = cause.source();
    }
    levels.join(": ")
}

#[test]
fn decode_errors_name_the_table_row_and_column() {
    let ts = now().timestamp_millis() * 1_000;
    let two = 2i64.to_be_bytes();
    // Only optional cells, no marker: nothing of a row of `Click`.
    assert!(decode_row::<Click>(
        b"c3#00000000000000000007",
        [cell("c", "ref", b"r", ts)],
        now(),
    )
    .unwrap()
    .is_none());
    // A required column absent while another is visible, with or without
    // a live marker: incomplete (nothing shows `url` expired).
    for cells in [
        vec![cell("m", "count", &two, ts)],
        vec![
            cell("c", "\0\0Click", b"", ts),
            cell("m", "count", &two, ts),
        ],
    ] {
        let err = decode_row::<Click>(b"c3#00000000000000000007", cells, now()).unwrap_err();
        assert_eq!(
            report(&err),
            "table `clicks`, row \"c3#00000000000000000007\", column `c:url` does not decode: required column is missing"
        );
    }
    // A marker whose row has expired proves `url` expired with it.
    let expired_row = (ts - 3 * 86_400_000_000).to_be_bytes();
    assert!(decode_row::<Click>(
        b"c3#00000000000000000007",
        [
            cell("c", "\0\0Click", &expired_row, ts),
            cell("m", "count", &two, ts)
        ],
        now(),
    )
    .unwrap()
    .is_none());
    // A malformed value in the second family.
    let err = decode_row::<Click>(
        b"c3#00000000000000000007",
        [cell("c", "url", b"/", ts), cell("m", "count", b"xy", ts)],
        now(),
    )
    .unwrap_err();
    assert_eq!(
        report(&err),
        "table `clicks`, row \"c3#00000000000000000007\", column `m:count` does not decode: expected 8 bytes, found 2"
    );
    // A malformed shadow column.
    let err = decode_row::<Click>(
        b"c3#00000000000000000007",
        [
            cell("c", "url", b"/", ts),
            cell("m", "count", &two, ts),
            cell("c", "written_at", b"x", ts),
        ],
        now(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("column `c:written_at`"), "{err}");
    // Invalid UTF-8 in a one-key struct's value.
    let err = decode_row::<Session>(
        b"s1",
        [cell("s", "user", &[0xff], ts + 3_600_000_000)],
        now(),
    )
    .unwrap_err();
    assert!(
        report(&err).starts_with(
            "table `sessions`, row \"s1\", column `s:user` does not decode: cell is not valid UTF-8"
        ),
        "{err}"
    );
}

#[test]
fn bad_keys_read_back_name_the_table_and_field() {
    let ts = now().timestamp_millis() * 1_000;
    let two = 2i64.to_be_bytes();
    let cells = || [cell("c", "url", b"/", ts), cell("m", "count", &two, ts)];
    let err = decode_row::<Click>(b"c3", cells(), now()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "row key \"c3\" of table `clicks` does not decode: expected 2 parts joined by \"#\", found 1"
    );
    let err = decode_row::<Click>(b"c3#7", cells(), now()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "row key \"c3#7\" of table `clicks` does not decode: key field `seq`: expected 20 decimal digits, found \"7\""
    );
    let err = decode_row::<Session>(b"\xff", [cell("s", "user", b"u", ts + 1)], now()).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("row key \"\\xff\" of table `sessions` does not decode: key field `id`:"),
        "{err}"
    );
}

#[test]
fn newest_visible_cell_wins_and_other_cells_are_ignored() {
    let ts = now().timestamp_millis() * 1_000;
    let (one, two) = (1i64.to_be_bytes(), 2i64.to_be_bytes());
    let read = decode_row::<Click>(
        b"c3#00000000000000000007",
        [
            cell("c", "url", b"/old", ts - 1_000),
            cell("c", "url", b"/new", ts),
            cell("c", "other", b"ignored", ts + 5_000),
            cell("x", "url", b"ignored", ts + 5_000),
            // Expired long ago under the 2-day default: not visible.
            cell("m", "count", &one, ts - 3 * 86_400_000_000),
            cell("m", "count", &two, ts - 2_000),
        ],
        now(),
    )
    .unwrap()
    .unwrap();
    assert_eq!(read.value.url, "/new");
    assert_eq!(read.value.count, 2);
    assert_eq!(read.value.referrer, None);
    // The row is live until its first required column (`count`) expires.
    assert_eq!(
        read.expires_at,
        DateTime::from_timestamp_micros(ts - 2_000).unwrap() + TimeDelta::days(2)
    );
    // Only an expired cell and undeclared ones: the row is absent.
    assert!(decode_row::<Click>(
        b"c3#00000000000000000007",
        [
            cell("m", "count", &one, ts - 3 * 86_400_000_000),
            cell("c", "other", b"x", ts),
        ],
        now(),
    )
    .unwrap()
    .is_none());
}

/// A field whose codec refuses to encode.
#[derive(Debug, Clone, PartialEq)]
struct Refuses;

impl bigtable_ttl::CellCodec for Refuses {
    fn encode(&self) -> Result<Vec<u8>, bigtable_ttl::CodecError> {
        Err(bigtable_ttl::CodecError::Custom("no".into()))
    }
    fn decode(_: &[u8]) -> Result<Self, bigtable_ttl::CodecError> {
        Ok(Refuses)
    }
}

#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "refusals", family = "r")]
#[ttl(default = "1d")]
struct Refusal {
    #[bigtable(key)]
    id: String,
    fine: String,
    refuses: Refuses,
}

#[test]
fn encode_errors_name_the_field() {
    let r = Refusal {
        id: "r1".into(),
        fine: "ok".into(),
        refuses: Refuses,
    };
    let err = r.mutation().build(now()).unwrap_err();
    assert!(
        matches!(&err,
            bigtable_ttl::Error::Encode(e) if e.field == "refuses"),
        "{err:?}"
    );
    assert_eq!(report(&err), "field `refuses` could not be encoded: no");
}
