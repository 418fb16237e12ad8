//! The ops reports and checkpoints as files (the `serde` feature): the
//! JSON the `bigtable-ttl` command prints, and the checkpoints and shard
//! reports it reads back.
//!
//! The field names are a file format, fixed here rather than taken from the
//! Rust fields, so that a checkpoint or report written by one version is read
//! by the next (`ttl-runtime/tests/data` holds files of the current version,
//! read back by a test). Keys are written twice, in hex (exact, what is read
//! back) and as text (to read); instants as RFC 3339 text for people and as
//! microseconds where they are read back. What a report is read back into is
//! checked as the operation would have made it: a corrupt or crafted file is
//! refused, saying which field is wrong.

mod audit;
mod rows;

use chrono::{DateTime, TimeDelta, Utc};
use serde::ser::SerializeStruct as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::migrate::Verification;
use super::shard::{check_shard, Part};

/// An instant as people read it: UTC to the millisecond.
fn instant(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

/// A duration as people read it, to the second (`1day 23h 59m 58s`).
fn span(d: TimeDelta) -> String {
    match d.to_std() {
        Ok(d) => {
            humantime::format_duration(std::time::Duration::from_secs(d.as_secs())).to_string()
        }
        Err(_) => "0s".to_owned(),
    }
}

/// Bytes as text, invalid UTF-8 replaced: for people, never read back.
fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A cell value: quoted text when it is printable UTF-8, else `0x` and hex.
fn printable(value: &[u8]) -> String {
    match std::str::from_utf8(value) {
        Ok(s) if !s.chars().any(char::is_control) => format!("{s:?}"),
        _ => format!("0x{}", hex::encode(value)),
    }
}

/// A [`Part`] in a file: keys in hex (exact, read back) and as text.
#[derive(Serialize, Deserialize)]
pub(crate) struct PartFile {
    index: usize,
    count: usize,
    start_hex: String,
    end_hex: Option<String>,
    #[serde(default)]
    start: String,
    #[serde(default)]
    end: Option<String>,
}

impl From<Part> for PartFile {
    fn from(p: Part) -> Self {
        Self {
            index: p.index,
            count: p.count,
            start_hex: hex::encode(&p.start),
            end_hex: p.end.as_deref().map(hex::encode),
            start: lossy(&p.start),
            end: p.end.as_deref().map(lossy),
        }
    }
}

impl TryFrom<PartFile> for Part {
    type Error = String;

    fn try_from(p: PartFile) -> Result<Self, String> {
        let key = |h: &str| hex::decode(h).map_err(|e| format!("part key `{h}` is not hex: {e}"));
        check_shard(p.index, p.count).map_err(|e| format!("part {}/{}: {e}", p.index, p.count))?;
        Ok(Part::new(
            p.index,
            p.count,
            key(&p.start_hex)?,
            p.end_hex.as_deref().map(key).transpose()?,
        ))
    }
}

// `Part` is defined in the pure core (`model::shards`), which cannot name
// this file format: its serde impls go through `PartFile` here, as
// `#[serde(into, try_from)]` would.
impl Serialize for Part {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        PartFile::from(self.clone()).serialize(s)
    }
}

impl<'de> Deserialize<'de> for Part {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Part::try_from(PartFile::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// The `shard` field: absent (or null) for the whole table.
pub(crate) mod shard {
    use super::{Deserialize, Deserializer, Part};

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Part, D::Error> {
        Ok(Option::<Part>::deserialize(d)?.unwrap_or_else(Part::whole))
    }
}

/// The last row done, as `last_row_key_hex` (read back) and `last_row_key`
/// (text); flattened into a checkpoint.
pub(crate) mod last_row_key {
    use serde::de::Error as _;

    use super::{lossy, Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    struct Key {
        last_row_key_hex: Option<String>,
        #[serde(default)]
        last_row_key: Option<String>,
    }

    // `serialize_with` hands the field by reference.
    #[allow(clippy::ref_option)]
    pub(crate) fn serialize<S: Serializer>(key: &Option<Vec<u8>>, s: S) -> Result<S::Ok, S::Error> {
        Key {
            last_row_key_hex: key.as_deref().map(hex::encode),
            last_row_key: key.as_deref().map(lossy),
        }
        .serialize(s)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Vec<u8>>, D::Error> {
        Key::deserialize(d)?
            .last_row_key_hex
            .map(|h| {
                hex::decode(&h)
                    .map_err(|e| D::Error::custom(format!("last_row_key_hex is not hex: {e}")))
            })
            .transpose()
    }
}

/// With `matches`, for the reader of a report; read back without it.
impl Serialize for Verification {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut v = s.serialize_struct("Verification", 7)?;
        v.serialize_field("source_rows", &self.source_rows)?;
        v.serialize_field("source_cells", &self.source_cells)?;
        v.serialize_field("expected_rows", &self.expected_rows)?;
        v.serialize_field("expected_cells", &self.expected_cells)?;
        v.serialize_field("target_rows", &self.target_rows)?;
        v.serialize_field("target_cells", &self.target_cells)?;
        v.serialize_field("matches", &self.matches())?;
        v.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_round_trip_with_keys_in_hex_and_text() {
        let parts = crate::ops::shard::cut(&[b"m\xff".to_vec(), b"t".to_vec()], 3);
        for part in &parts {
            let text = serde_json::to_string(part).unwrap();
            assert_eq!(&serde_json::from_str::<Part>(&text).unwrap(), part);
        }
        let text = serde_json::to_string(&parts[1]).unwrap();
        assert!(text.contains(r#""start_hex":"6dff""#), "{text}");
        assert!(text.contains("\"start\":\"m\u{fffd}\""), "{text}");
        let bad = text.replace("6dff", "6dfg");
        let err = serde_json::from_str::<Part>(&bad).unwrap_err().to_string();
        assert!(err.contains("part key `6dfg` is not hex"), "{err}");
        let bad = text.replace(r#""index":1"#, r#""index":3"#);
        let err = serde_json::from_str::<Part>(&bad).unwrap_err().to_string();
        assert!(err.starts_with("part 3/3: "), "{err}");
    }

    #[test]
    fn values_print_as_text_or_hex() {
        assert_eq!(printable(b"/home"), "\"/home\"");
        assert_eq!(printable(&[0, 1, 0xff]), "0x0001ff");
    }
}
