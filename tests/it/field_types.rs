//! Every supported field type, through the derive, the real emulator and
//! back: fixed encodings checked byte by byte, `None` deleting its column,
//! JSON through serde, a user codec, and `i64` cells that Bigtable's own
//! counter increment understands.

use crate::support;

use bigtable_ttl::data;
use bigtable_ttl::data::Cell;
use bigtable_ttl::data::RawTable;
use bigtable_ttl::read::ReadOptions;
use bigtable_ttl::{BigtableRow, CellCodec, Clock, CodecError, Json, Scan, Table};
use chrono::{DateTime, TimeDelta, Utc};

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
struct Prefs {
    theme: String,
    tabs: Vec<u32>,
}

/// A user type with its own text encoding.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Celsius(f64);

impl CellCodec for Celsius {
    fn encode(&self) -> Result<Vec<u8>, CodecError> {
        Ok(format!("{:.1}C", self.0).into_bytes())
    }
    fn decode(bytes: &[u8]) -> Result<Self, CodecError> {
        std::str::from_utf8(bytes)
            .ok()
            .and_then(|s| s.strip_suffix('C'))
            .and_then(|s| s.parse().ok())
            .map(Celsius)
            .ok_or_else(|| CodecError::Custom(format!("not a temperature: {bytes:?}")))
    }
}

#[derive(BigtableRow, Debug, Clone, PartialEq)]
#[bigtable(table = "everything", family = "f")]
#[ttl(default = "1d")]
struct Everything {
    #[bigtable(key)]
    id: String,
    text: String,
    bytes: Vec<u8>,
    flag: bool,
    big: i64,
    small: i32,
    unsigned: u64,
    real: f64,
    at: DateTime<Utc>,
    prefs: Json<Prefs>,
    temp: Celsius,
    opt_text: Option<String>,
    opt_bytes: Option<Vec<u8>>,
    opt_flag: Option<bool>,
    opt_big: Option<i64>,
    opt_small: Option<i32>,
    opt_unsigned: Option<u64>,
    opt_real: Option<f64>,
    opt_at: Option<DateTime<Utc>>,
    opt_prefs: Option<Json<Prefs>>,
    opt_temp: Option<Celsius>,
}

fn at() -> DateTime<Utc> {
    DateTime::from_timestamp_micros(1_767_225_600_123_456).unwrap()
}

fn full(id: &str) -> Everything {
    let prefs = Prefs {
        theme: "dark".into(),
        tabs: vec![1, 2, 3],
    };
    Everything {
        id: id.into(),
        text: "héllo".into(),
        bytes: vec![0, 255, 7],
        flag: true,
        big: -42,
        small: -7,
        unsigned: u64::MAX,
        real: -1.5e300,
        at: at(),
        prefs: Json(prefs.clone()),
        temp: Celsius(21.5),
        opt_text: Some(String::new()),
        opt_bytes: Some(vec![]),
        opt_flag: Some(false),
        opt_big: Some(i64::MIN),
        opt_small: Some(i32::MAX),
        opt_unsigned: Some(0),
        opt_real: Some(f64::INFINITY),
        opt_at: Some(DateTime::UNIX_EPOCH),
        opt_prefs: Some(Json(prefs)),
        opt_temp: Some(Celsius(-3.0)),
    }
}

fn empty(id: &str) -> Everything {
    Everything {
        opt_text: None,
        opt_bytes: None,
        opt_flag: None,
        opt_big: None,
        opt_small: None,
        opt_unsigned: None,
        opt_real: None,
        opt_at: None,
        opt_prefs: None,
        opt_temp: None,
        ..full(id)
    }
}

async fn table() -> Table<Everything> {
    let table =
        Table::<Everything>::new(support::connection()).with_clock(Clock::manual(Utc::now()));
    table.ensure_schema().await.unwrap();
    table
}

async fn stored(table: &Table<Everything>, id: &str) -> Vec<Cell> {
    support::stored_cells(table, id).await
}

fn value<'a>(cells: &'a [Cell], qualifier: &str) -> Option<&'a [u8]> {
    cells
        .iter()
        .find(|c| c.qualifier == qualifier.as_bytes())
        .map(|c| c.value.as_slice())
}

#[tokio::test]
async fn every_type_round_trips_with_its_documented_encoding() {
    let table = table().await;
    let row = full("full");
    table.put(&row).await.unwrap();

    let read = table
        .get(&"full".to_owned())
        .await
        .unwrap()
        .expect("row is alive");
    assert_eq!(read.value, row);

    let cells = stored(&table, "full").await;
    assert_eq!(
        cells.len(),
        21,
        "one cell per stored field, and the row marker"
    );
    assert_eq!(value(&cells, "text"), Some("héllo".as_bytes()));
    assert_eq!(value(&cells, "bytes"), Some(&[0u8, 255, 7][..]));
    assert_eq!(value(&cells, "flag"), Some(&[1u8][..]));
    assert_eq!(value(&cells, "big"), Some(&(-42i64).to_be_bytes()[..]));
    assert_eq!(value(&cells, "small"), Some(&(-7i32).to_be_bytes()[..]));
    assert_eq!(value(&cells, "unsigned"), Some(&[0xff; 8][..]));
    assert_eq!(
        value(&cells, "real"),
        Some(&(-1.5e300f64).to_be_bytes()[..])
    );
    assert_eq!(
        value(&cells, "at"),
        Some(&1_767_225_600_123_456i64.to_be_bytes()[..])
    );
    assert_eq!(
        value(&cells, "prefs"),
        Some(&br#"{"theme":"dark","tabs":[1,2,3]}"#[..])
    );
    assert_eq!(value(&cells, "temp"), Some(&b"21.5C"[..]));
    assert_eq!(
        value(&cells, "opt_text"),
        Some(&b""[..]),
        "Some(empty) is a cell, not an absence"
    );
}

#[tokio::test]
async fn none_deletes_the_column_and_reads_back_as_none() {
    let table = table().await;
    table.put(&full("row")).await.unwrap();
    assert_eq!(stored(&table, "row").await.len(), 21);

    let cleared = empty("row");
    table.put(&cleared).await.unwrap();
    let read = table
        .get(&"row".to_owned())
        .await
        .unwrap()
        .expect("row is alive");
    assert_eq!(read.value, cleared);
    let cells = stored(&table, "row").await;
    assert_eq!(
        cells.len(),
        11,
        "the ten optional columns are gone: {cells:?}"
    );
    assert!(cells.iter().all(|c| !c.qualifier.starts_with(b"opt_")));
}

/// The narrow integers and `f32`, each big-endian in its own width.
#[derive(BigtableRow, Debug, Clone, PartialEq)]
#[bigtable(table = "narrow", family = "n")]
#[ttl(default = "1d")]
struct Narrow {
    #[bigtable(key)]
    id: String,
    byte: u8,
    signed_byte: i8,
    short: u16,
    signed_short: i16,
    word: u32,
    single: f32,
    opt_word: Option<u32>,
}

#[tokio::test]
async fn narrow_integers_and_f32_round_trip_in_their_own_width() {
    let table = Table::<Narrow>::new(support::connection()).with_clock(Clock::manual(Utc::now()));
    table.ensure_schema().await.unwrap();
    let row = Narrow {
        id: "n1".into(),
        byte: u8::MAX,
        signed_byte: i8::MIN,
        short: 0x1234,
        signed_short: -2,
        word: u32::MAX,
        single: -0.375,
        opt_word: Some(7),
    };
    table.put(&row).await.unwrap();
    assert_eq!(
        table.get("n1").await.unwrap().expect("row is alive").value,
        row
    );
    let cells = support::stored_cells(&table, "n1").await;
    for (qualifier, bytes) in [
        ("byte", &[0xff][..]),
        ("signed_byte", &[0x80]),
        ("short", &[0x12, 0x34]),
        ("signed_short", &[0xff, 0xfe]),
        ("word", &[0xff; 4]),
        ("single", &(-0.375f32).to_be_bytes()),
        ("opt_word", &[0, 0, 0, 7]),
    ] {
        assert_eq!(value(&cells, qualifier), Some(bytes), "{qualifier}");
    }
}

/// The `i64` encoding is Bigtable's counter encoding: the server's own
/// increment works on a cell this library wrote, and the result reads back.
#[tokio::test]
async fn i64_cells_are_bigtable_counters() {
    let table = table().await;
    table.put(&full("counter")).await.unwrap();

    let rules = vec![data::ReadModifyWriteRule::increment(
        "f",
        b"big".to_vec(),
        50,
    )];
    RawTable::new(table.connection(), table.name())
        .read_modify_write_row("counter", rules)
        .await
        .expect("Bigtable increments the cell");

    let read = table.get(&"counter".to_owned()).await.unwrap().unwrap();
    assert_eq!(read.big, 8, "-42 + 50");
    let shown = support::cbt(table.connection(), &["read", table.name(), "columns=f:big"]);
    assert!(
        shown.contains(r#""\x00\x00\x00\x00\x00\x00\x00\b""#),
        "cbt shows the 8-byte big-endian counter: {shown}"
    );
}

#[tokio::test]
async fn malformed_cells_are_typed_errors_naming_the_column() {
    let table = table().await;
    table.put(&full("bad")).await.unwrap();
    let now = table.clock().now();
    // A 3-byte value where an i64 belongs, written behind the library's back
    // with a timestamp newer than the library's cell.
    let short_big = data::Mutation::set_cell(
        "f",
        b"big".to_vec(),
        (now + TimeDelta::seconds(1)).timestamp_millis() * 1000,
        vec![1, 2, 3],
    );
    RawTable::new(table.connection(), table.name())
        .mutate_row("bad", vec![short_big])
        .await
        .unwrap();
    let err = table.get(&"bad".to_owned()).await.unwrap_err();
    let message = err.to_string();
    assert!(
        matches!(&err,
            bigtable_ttl::Error::Decode(e) if matches!(e.source, CodecError::WrongWidth {
                    expected: 8,
                    actual: 3
                }) ),
        "{message}"
    );
    assert!(
        message.contains("everything") && message.contains("bad") && message.contains("f:big"),
        "{message}"
    );
}

/// A row another program wrote column by column, without the required
/// column `bytes` and without a marker, is present but incomplete: nothing
/// stored proves `bytes` expired, so the read is an error naming the column
/// (never a silent `None`), or, when asked, skipped and counted as
/// incomplete. The same cells beside the struct's live marker are the same
/// error; beside a marker whose row has expired they are proven expired.
#[tokio::test]
async fn a_really_missing_required_column_is_an_error_unless_proven_expired() {
    let table = table().await;
    let ts = table.clock().now().timestamp_millis() * 1000;
    let raw = RawTable::new(table.connection(), table.name());
    let set = |qualifier: &[u8], value: &[u8]| {
        data::Mutation::set_cell("f", qualifier.to_vec(), ts, value.to_vec())
    };
    let marker = Everything::SCHEMA.marker;
    // The row timestamp it carries is two days old: its required columns
    // have expired under the 1-day default.
    let expired_marker = data::Mutation::set_cell(
        "f",
        marker.to_vec(),
        ts,
        (ts - 2 * 86_400_000_000).to_be_bytes().to_vec(),
    );
    for (key, mutations) in [
        ("partial", vec![set(b"text", b"only this")]),
        ("marked", vec![set(marker, b""), set(b"text", b"only this")]),
        ("proven", vec![expired_marker, set(b"text", b"only this")]),
    ] {
        raw.mutate_row(key, mutations).await.unwrap();
    }
    let missing_bytes = |err: &bigtable_ttl::Error| {
        matches!(&err,
            bigtable_ttl::Error::Decode(e) if e.source == CodecError::Missing && e.column == "f:bytes"
        )
    };
    for key in ["partial", "marked"] {
        let err = table.get(&key.to_owned()).await.unwrap_err();
        assert!(missing_bytes(&err), "{key}: {err}");
        let err = table.scan(Scan::keys([key.as_bytes()])).await.unwrap_err();
        assert!(missing_bytes(&err), "{key}: {err}");
    }
    assert_eq!(table.get(&"proven".to_owned()).await.unwrap(), None);
    let skipping = table
        .clone()
        .with_read_options(ReadOptions::default().with_skip_undecodable(true));
    assert!(skipping.scan(Scan::all()).await.unwrap().is_empty());
    let stats = skipping.read_stats();
    assert_eq!(stats.rows_incomplete, 2, "{stats:?}");
    assert_eq!(stats.partially_expired, 0, "{stats:?}");
}
