//! GoogleSQL values: what a query's rows hold and its parameters carry,
//! checked against their [`SqlType`] both ways (Bigtable's `Value` read
//! into a [`SqlValue`], a [`SqlValue`] sent as one), and read into Rust
//! types ([`FromSql`]).

use std::collections::HashMap;
use std::hash::Hash;

use chrono::{DateTime, Datelike as _, NaiveDate, Utc};

use crate::model::proto::value::Kind;
use crate::model::proto::{ArrayValue, Value};
use crate::model::sql_type::SqlType;

/// The years a GoogleSQL `DATE` or `TIMESTAMP` holds.
const YEARS: std::ops::RangeInclusive<i32> = 1..=9999;
const YEARS_TEXT: &str = "0001 to 9999";
const NANOS_PER_SECOND: u32 = 1_000_000_000;

/// A `TIMESTAMP` as Bigtable sends it, if GoogleSQL can hold it: nanos
/// of 1e9 or more would read as a leap second, which it has none of.
fn timestamp_of(seconds: i64, nanos: i32) -> Result<DateTime<Utc>, String> {
    let nanos_of_second = u32::try_from(nanos)
        .ok()
        .filter(|n| *n < NANOS_PER_SECOND)
        .ok_or_else(|| {
            format!("TIMESTAMP of {seconds} s and {nanos} ns: its nanos are outside 0 to 999999999")
        })?;
    DateTime::from_timestamp(seconds, nanos_of_second)
        .filter(|time| YEARS.contains(&time.year()))
        .ok_or_else(|| {
            format!("TIMESTAMP of {seconds} s is outside GoogleSQL's years {YEARS_TEXT}")
        })
}

/// A GoogleSQL value.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SqlValue {
    /// `NULL`, of any type.
    Null,
    /// A `BYTES`.
    Bytes(Vec<u8>),
    /// A `STRING`.
    String(String),
    /// An `INT64`.
    Int64(i64),
    /// A `FLOAT32`.
    Float32(f32),
    /// A `FLOAT64`.
    Float64(f64),
    /// A `BOOL`.
    Bool(bool),
    /// A `TIMESTAMP` (nanosecond precision).
    Timestamp(DateTime<Utc>),
    /// A `DATE`.
    Date(NaiveDate),
    /// An `ARRAY`: its elements, in order (each may be `NULL`).
    Array(Vec<SqlValue>),
    /// A `STRUCT`: its fields in the order of its type, each with the
    /// type's name for it (`None`: nameless).
    Struct(Vec<(Option<String>, SqlValue)>),
    /// A `MAP`: its entries, one per key (when Bigtable sends a key twice,
    /// the later value wins, as in Google's clients), in the order keys
    /// first came.
    Map(Vec<(SqlValue, SqlValue)>),
}

impl SqlValue {
    /// The value Bigtable's `value` holds for a column or field of type
    /// `ty`.
    ///
    /// # Errors
    /// Why it does not fit `ty`, in the words of Google's clients where
    /// they have some (`Value kind must be STRING_VALUE for columns of
    /// type: STRING`, `Unexpected malformed struct data`).
    pub(crate) fn from_proto(value: &Value, ty: &SqlType) -> Result<Self, String> {
        let Some(kind) = &value.kind else {
            return Ok(Self::Null);
        };
        let wrong = || {
            format!(
                "Value kind must be {} for columns of type: {ty}",
                ty.value_kind()
            )
        };
        Ok(match (ty, kind) {
            (SqlType::Bytes, Kind::BytesValue(b)) => Self::Bytes(b.clone()),
            (SqlType::String, Kind::StringValue(s)) => Self::String(s.clone()),
            (SqlType::Int64, Kind::IntValue(i)) => Self::Int64(*i),
            // `as` rounds to the nearest f32, and a finite value past
            // f32's range to an infinity: refused, not read as `inf`.
            #[allow(clippy::cast_possible_truncation)]
            (SqlType::Float32, Kind::FloatValue(x)) => match *x as f32 {
                y if y.is_infinite() && x.is_finite() => {
                    return Err(format!("FLOAT32 value {x:e} is outside FLOAT32's range"))
                }
                y => Self::Float32(y),
            },
            (SqlType::Float64, Kind::FloatValue(x)) => Self::Float64(*x),
            (SqlType::Bool, Kind::BoolValue(b)) => Self::Bool(*b),
            (SqlType::Timestamp, Kind::TimestampValue(t)) => {
                Self::Timestamp(timestamp_of(t.seconds, t.nanos)?)
            }
            (SqlType::Date, Kind::DateValue(d)) => Self::Date(
                u32::try_from(d.month)
                    .ok()
                    .zip(u32::try_from(d.day).ok())
                    .and_then(|(m, day)| NaiveDate::from_ymd_opt(d.year, m, day))
                    .filter(|_| YEARS.contains(&d.year))
                    .ok_or_else(|| {
                        format!(
                            "DATE {}-{}-{} is not a calendar date of GoogleSQL's years {YEARS_TEXT}",
                            d.year, d.month, d.day
                        )
                    })?,
            ),
            (SqlType::Array(element), Kind::ArrayValue(a)) => Self::Array(
                a.values
                    .iter()
                    .enumerate()
                    .map(|(i, v)| {
                        Self::from_proto(v, element).map_err(|e| format!("element {i}: {e}"))
                    })
                    .collect::<Result<_, _>>()?,
            ),
            (SqlType::Struct(fields), Kind::ArrayValue(a)) => {
                if a.values.len() != fields.len() {
                    return Err(format!(
                        "Unexpected malformed struct data: {ty} has {} fields, the value {}",
                        fields.len(),
                        a.values.len()
                    ));
                }
                Self::Struct(
                    fields
                        .iter()
                        .zip(&a.values)
                        .map(|(f, v)| Ok((f.name.clone(), Self::from_proto(v, &f.ty)?)))
                        .collect::<Result<_, String>>()?,
                )
            }
            (SqlType::Map(key, val), Kind::ArrayValue(a)) => {
                let mut entries: Vec<(SqlValue, SqlValue)> = Vec::with_capacity(a.values.len());
                for entry in &a.values {
                    let pair = match &entry.kind {
                        Some(Kind::ArrayValue(pair)) if pair.values.len() == 2 => pair,
                        _ => {
                            return Err(format!(
                                "Unexpected malformed map data: an entry of {ty} is not a key and a value"
                            ))
                        }
                    };
                    let k = Self::from_proto(&pair.values[0], key)?;
                    let v = Self::from_proto(&pair.values[1], val)?;
                    match entries.iter_mut().find(|(seen, _)| *seen == k) {
                        Some(slot) => slot.1 = v,
                        None => entries.push((k, v)),
                    }
                }
                Self::Map(entries)
            }
            _ => return Err(wrong()),
        })
    }

    /// Bigtable's `Value` for this value (no type attached).
    pub(crate) fn to_proto(&self) -> Value {
        let array = |values: Vec<Value>| Some(Kind::ArrayValue(ArrayValue { values }));
        let kind = match self {
            Self::Null => None,
            Self::Bytes(b) => Some(Kind::BytesValue(b.clone())),
            Self::String(s) => Some(Kind::StringValue(s.clone())),
            Self::Int64(i) => Some(Kind::IntValue(*i)),
            Self::Float32(x) => Some(Kind::FloatValue(f64::from(*x))),
            Self::Float64(x) => Some(Kind::FloatValue(*x)),
            Self::Bool(b) => Some(Kind::BoolValue(*b)),
            Self::Timestamp(t) => Some(Kind::TimestampValue(prost_types::Timestamp {
                seconds: t.timestamp(),
                nanos: i32::try_from(t.timestamp_subsec_nanos()).unwrap_or(i32::MAX),
            })),
            Self::Date(d) => Some(Kind::DateValue(
                googleapis_tonic_google_bigtable_v2::google::r#type::Date {
                    year: d.year(),
                    month: i32::try_from(d.month()).unwrap_or_default(),
                    day: i32::try_from(d.day()).unwrap_or_default(),
                },
            )),
            Self::Array(values) => array(values.iter().map(Self::to_proto).collect()),
            Self::Struct(fields) => array(fields.iter().map(|(_, v)| v.to_proto()).collect()),
            Self::Map(entries) => array(
                entries
                    .iter()
                    .map(|(k, v)| Value {
                        r#type: None,
                        kind: array(vec![k.to_proto(), v.to_proto()]),
                    })
                    .collect(),
            ),
        };
        Value { r#type: None, kind }
    }

    /// Why this value cannot be sent as a query parameter, if it cannot:
    /// a date or time outside GoogleSQL's years, a leap second, a `STRUCT`
    /// or a `MAP` (see [`SqlType::param_problem`]).
    pub(crate) fn param_problem(&self) -> Option<String> {
        let outside = |what: String| {
            Some(format!(
                "{what} is outside GoogleSQL's years {YEARS_TEXT}, which Bigtable refuses"
            ))
        };
        match self {
            Self::Timestamp(t) if !YEARS.contains(&t.year()) => outside(format!("TIMESTAMP {t}")),
            Self::Timestamp(t) if t.timestamp_subsec_nanos() >= NANOS_PER_SECOND => Some(format!(
                "TIMESTAMP {t} is a leap second, which GoogleSQL has no way to hold"
            )),
            Self::Date(d) if !YEARS.contains(&d.year()) => outside(format!("DATE {d}")),
            Self::Array(values) => values.iter().find_map(Self::param_problem),
            Self::Struct(_) | Self::Map(_) => self.sql_type().map_or_else(
                || {
                    Some(format!(
                        "a query parameter cannot be a {}",
                        self.kind_name()
                    ))
                },
                |ty| ty.param_problem(),
            ),
            _ => None,
        }
    }

    /// Whether this value can be sent as a `ty` (`NULL` is any type).
    #[must_use]
    pub fn fits(&self, ty: &SqlType) -> bool {
        match (self, ty) {
            (Self::Null, _)
            | (Self::Bytes(_), SqlType::Bytes)
            | (Self::String(_), SqlType::String)
            | (Self::Int64(_), SqlType::Int64)
            | (Self::Float32(_), SqlType::Float32)
            | (Self::Float64(_), SqlType::Float64)
            | (Self::Bool(_), SqlType::Bool)
            | (Self::Timestamp(_), SqlType::Timestamp)
            | (Self::Date(_), SqlType::Date) => true,
            (Self::Array(values), SqlType::Array(element)) => {
                values.iter().all(|v| v.fits(element))
            }
            (Self::Struct(values), SqlType::Struct(fields)) => {
                values.len() == fields.len()
                    && values.iter().zip(fields).all(|((_, v), f)| v.fits(&f.ty))
            }
            (Self::Map(entries), SqlType::Map(k, v)) => {
                entries.iter().all(|(ek, ev)| ek.fits(k) && ev.fits(v))
            }
            _ => false,
        }
    }

    /// The type this value says it has, where it says one (`None` for
    /// `NULL`, and for an array or map with no typed element).
    #[must_use]
    pub fn sql_type(&self) -> Option<SqlType> {
        Some(match self {
            Self::Null => return None,
            Self::Bytes(_) => SqlType::Bytes,
            Self::String(_) => SqlType::String,
            Self::Int64(_) => SqlType::Int64,
            Self::Float32(_) => SqlType::Float32,
            Self::Float64(_) => SqlType::Float64,
            Self::Bool(_) => SqlType::Bool,
            Self::Timestamp(_) => SqlType::Timestamp,
            Self::Date(_) => SqlType::Date,
            Self::Array(values) => SqlType::array(values.iter().find_map(Self::sql_type)?),
            Self::Struct(fields) => SqlType::Struct(
                fields
                    .iter()
                    .map(|(name, v)| {
                        v.sql_type().map(|ty| {
                            crate::model::sql_type::StructField::new(
                                name.clone().unwrap_or_default(),
                                ty,
                            )
                        })
                    })
                    .collect::<Option<_>>()?,
            ),
            Self::Map(entries) => SqlType::map(
                entries.iter().find_map(|(k, _)| k.sql_type())?,
                entries.iter().find_map(|(_, v)| v.sql_type())?,
            ),
        })
    }

    /// What kind of value this is, for errors.
    fn kind_name(&self) -> &'static str {
        match self {
            Self::Null => "NULL",
            Self::Bytes(_) => "BYTES",
            Self::String(_) => "STRING",
            Self::Int64(_) => "INT64",
            Self::Float32(_) => "FLOAT32",
            Self::Float64(_) => "FLOAT64",
            Self::Bool(_) => "BOOL",
            Self::Timestamp(_) => "TIMESTAMP",
            Self::Date(_) => "DATE",
            Self::Array(_) => "ARRAY",
            Self::Struct(_) => "STRUCT",
            Self::Map(_) => "MAP",
        }
    }
}

/// A Rust type a GoogleSQL value is read into ([`SqlRow::get`](crate::data::SqlRow::get)).
///
/// `NULL` reads only into an `Option` (or a [`SqlValue`]); an `INT64` reads
/// into `i64`, a `FLOAT64` into `f64`, a `FLOAT32` into `f32` or `f64`, an
/// `ARRAY` into a `Vec`, a `MAP` into a `HashMap`.
pub trait FromSql: Sized {
    /// `value` as this type.
    ///
    /// # Errors
    /// Why it is not one (its kind, or `NULL` into a type that has none).
    fn from_sql(value: &SqlValue) -> Result<Self, String>;
}

fn not_a(value: &SqlValue, want: &str) -> String {
    if *value == SqlValue::Null {
        format!("is NULL, not {want}: read it as an Option")
    } else {
        format!("is {}, not {want}", value.kind_name())
    }
}

macro_rules! from_sql {
    ($rust:ty, $want:literal, $($pat:pat => $out:expr),+) => {
        impl FromSql for $rust {
            fn from_sql(value: &SqlValue) -> Result<Self, String> {
                match value {
                    $($pat => Ok($out),)+
                    other => Err(not_a(other, $want)),
                }
            }
        }
    };
}

from_sql!(String, "STRING", SqlValue::String(s) => s.clone());
from_sql!(Vec<u8>, "BYTES", SqlValue::Bytes(b) => b.clone());
from_sql!(i64, "INT64", SqlValue::Int64(i) => *i);
from_sql!(f64, "FLOAT64", SqlValue::Float64(x) => *x, SqlValue::Float32(x) => f64::from(*x));
from_sql!(f32, "FLOAT32", SqlValue::Float32(x) => *x);
from_sql!(bool, "BOOL", SqlValue::Bool(b) => *b);
from_sql!(DateTime<Utc>, "TIMESTAMP", SqlValue::Timestamp(t) => *t);
from_sql!(NaiveDate, "DATE", SqlValue::Date(d) => *d);

impl FromSql for SqlValue {
    fn from_sql(value: &SqlValue) -> Result<Self, String> {
        Ok(value.clone())
    }
}

impl<T: FromSql> FromSql for Option<T> {
    fn from_sql(value: &SqlValue) -> Result<Self, String> {
        match value {
            SqlValue::Null => Ok(None),
            other => T::from_sql(other).map(Some),
        }
    }
}

impl<T: FromSql> FromSql for Vec<T> {
    fn from_sql(value: &SqlValue) -> Result<Self, String> {
        match value {
            SqlValue::Array(values) => values
                .iter()
                .enumerate()
                .map(|(i, v)| T::from_sql(v).map_err(|e| format!("element {i} {e}")))
                .collect(),
            other => Err(not_a(other, "ARRAY")),
        }
    }
}

impl<K, V, S> FromSql for HashMap<K, V, S>
where
    K: FromSql + Eq + Hash,
    V: FromSql,
    S: std::hash::BuildHasher + Default,
{
    fn from_sql(value: &SqlValue) -> Result<Self, String> {
        match value {
            SqlValue::Map(entries) => entries
                .iter()
                .map(|(k, v)| {
                    Ok((
                        K::from_sql(k).map_err(|e| format!("a key {e}"))?,
                        V::from_sql(v).map_err(|e| format!("a value {e}"))?,
                    ))
                })
                .collect(),
            other => Err(not_a(other, "MAP")),
        }
    }
}

macro_rules! into_sql {
    ($($rust:ty => $variant:ident $(via $conv:expr)?),+ $(,)?) => {
        $(impl From<$rust> for SqlValue {
            fn from(value: $rust) -> Self {
                SqlValue::$variant($($conv)?(value))
            }
        })+
    };
}

into_sql!(
    String => String,
    &str => String via str::to_owned,
    Vec<u8> => Bytes,
    &[u8] => Bytes via ToOwned::to_owned,
    i64 => Int64,
    i32 => Int64 via i64::from,
    f32 => Float32,
    f64 => Float64,
    bool => Bool,
    DateTime<Utc> => Timestamp,
    NaiveDate => Date,
);

impl<T: Into<SqlValue>> From<Option<T>> for SqlValue {
    fn from(value: Option<T>) -> Self {
        value.map_or(SqlValue::Null, Into::into)
    }
}

impl<T: Into<SqlValue>> From<Vec<T>> for SqlValue {
    fn from(values: Vec<T>) -> Self {
        SqlValue::Array(values.into_iter().map(Into::into).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::sql_type::StructField;

    fn string(s: &str) -> Value {
        SqlValue::from(s).to_proto()
    }

    #[test]
    fn a_value_of_the_wrong_kind_is_named_in_googles_words() {
        let int = SqlValue::Int64(42).to_proto();
        assert_eq!(
            SqlValue::from_proto(&int, &SqlType::String),
            Err("Value kind must be STRING_VALUE for columns of type: STRING".to_owned())
        );
        let map = SqlType::map(SqlType::String, SqlType::Int64);
        let bad = SqlValue::Map(vec![(SqlValue::from("s"), SqlValue::from("wrong"))]).to_proto();
        assert!(SqlValue::from_proto(&bad, &map)
            .unwrap_err()
            .contains("Value kind must be INT_VALUE for columns of type: INT64"));
        let array = SqlType::array(SqlType::String);
        let bad = SqlValue::Array(vec![SqlValue::from("foo"), SqlValue::Int64(1)]).to_proto();
        assert!(SqlValue::from_proto(&bad, &array)
            .unwrap_err()
            .contains("element 1: Value kind must be STRING_VALUE"));
    }

    #[test]
    fn a_struct_short_of_a_field_is_malformed() {
        let ty = SqlType::Struct(vec![
            StructField::new("s", SqlType::String),
            StructField::new("i", SqlType::Int64),
        ]);
        let short = SqlValue::Array(vec![SqlValue::from("foo")]).to_proto();
        assert!(SqlValue::from_proto(&short, &ty)
            .unwrap_err()
            .starts_with("Unexpected malformed struct data"));
    }

    #[test]
    fn nulls_nest_and_a_repeated_map_key_keeps_the_last_value() {
        let ty = SqlType::map(SqlType::Bytes, SqlType::String);
        let entries = |pairs: Vec<(Value, Value)>| Value {
            r#type: None,
            kind: Some(Kind::ArrayValue(ArrayValue {
                values: pairs
                    .into_iter()
                    .map(|(k, v)| Value {
                        r#type: None,
                        kind: Some(Kind::ArrayValue(ArrayValue { values: vec![k, v] })),
                    })
                    .collect(),
            })),
        };
        let foo = SqlValue::from(b"foo".as_slice()).to_proto();
        let value = entries(vec![
            (foo.clone(), string("first")),
            (Value::default(), string("null key")),
            (foo, string("last")),
        ]);
        assert_eq!(
            SqlValue::from_proto(&value, &ty),
            Ok(SqlValue::Map(vec![
                (SqlValue::Bytes(b"foo".to_vec()), SqlValue::from("last")),
                (SqlValue::Null, SqlValue::from("null key")),
            ]))
        );
    }

    #[test]
    fn values_round_trip_and_read_into_rust_types() {
        let t = DateTime::from_timestamp(2000, 1000).unwrap();
        let d = NaiveDate::from_ymd_opt(2024, 9, 1).unwrap();
        let ty = SqlType::Struct(vec![
            StructField::new("t", SqlType::Timestamp),
            StructField::new("d", SqlType::Date),
            StructField::new("", SqlType::Float32),
        ]);
        let value = SqlValue::Struct(vec![
            (Some("t".into()), SqlValue::Timestamp(t)),
            (Some("d".into()), SqlValue::Date(d)),
            (None, SqlValue::Float32(1.5)),
        ]);
        assert_eq!(
            SqlValue::from_proto(&value.to_proto(), &ty),
            Ok(value.clone())
        );
        assert_eq!(value.sql_type(), Some(ty));
        let ints = SqlValue::from(vec![Some(1_i64), None]);
        assert_eq!(Vec::<Option<i64>>::from_sql(&ints), Ok(vec![Some(1), None]));
        assert_eq!(
            Vec::<i64>::from_sql(&ints),
            Err("element 1 is NULL, not INT64: read it as an Option".to_owned())
        );
        assert_eq!(
            String::from_sql(&SqlValue::Int64(1)),
            Err("is INT64, not STRING".to_owned())
        );
    }

    /// What GoogleSQL cannot hold is refused, read or sent: nanos of a
    /// second or more (a leap second), years outside 0001-9999, a FLOAT64
    /// past FLOAT32's range in a FLOAT32 column, and parameters of a
    /// STRUCT or a MAP.
    #[test]
    fn values_outside_googlesqls_ranges_are_refused() {
        let timestamp = |seconds, nanos| Value {
            r#type: None,
            kind: Some(Kind::TimestampValue(prost_types::Timestamp {
                seconds,
                nanos,
            })),
        };
        let leap = SqlValue::from_proto(&timestamp(0, 1_500_000_000), &SqlType::Timestamp);
        assert!(leap
            .unwrap_err()
            .contains("nanos are outside 0 to 999999999"));
        assert!(SqlValue::from_proto(&timestamp(0, -1), &SqlType::Timestamp).is_err());
        assert!(SqlValue::from_proto(&timestamp(0, 999_999_999), &SqlType::Timestamp).is_ok());
        // 10000-01-01T00:00:00Z, and the second before it.
        let y10k = 253_402_300_800;
        let err = SqlValue::from_proto(&timestamp(y10k, 0), &SqlType::Timestamp).unwrap_err();
        assert!(
            err.contains("outside GoogleSQL's years 0001 to 9999"),
            "{err}"
        );
        assert!(SqlValue::from_proto(&timestamp(y10k - 1, 0), &SqlType::Timestamp).is_ok());
        // 0000-12-31T23:59:59Z.
        assert!(SqlValue::from_proto(&timestamp(-62_135_596_801, 0), &SqlType::Timestamp).is_err());
        for year in [0, -5, 10_000] {
            let date = Value {
                r#type: None,
                kind: Some(Kind::DateValue(
                    googleapis_tonic_google_bigtable_v2::google::r#type::Date {
                        year,
                        month: 1,
                        day: 1,
                    },
                )),
            };
            let err = SqlValue::from_proto(&date, &SqlType::Date).unwrap_err();
            assert!(err.contains("years 0001 to 9999"), "{year}: {err}");
        }
        let huge = SqlValue::Float64(1e300).to_proto();
        let err = SqlValue::from_proto(&huge, &SqlType::Float32).unwrap_err();
        assert!(err.contains("outside FLOAT32's range"), "{err}");
        let inf = SqlValue::Float64(f64::INFINITY).to_proto();
        assert_eq!(
            SqlValue::from_proto(&inf, &SqlType::Float32),
            Ok(SqlValue::Float32(f32::INFINITY))
        );
        assert_eq!(
            SqlValue::from_proto(&SqlValue::Float64(1.5).to_proto(), &SqlType::Float32),
            Ok(SqlValue::Float32(1.5))
        );

        let date = |y| SqlValue::Date(NaiveDate::from_ymd_opt(y, 1, 1).unwrap());
        assert!(date(10_000)
            .param_problem()
            .unwrap()
            .contains("10000-01-01 is outside GoogleSQL"));
        assert!(SqlValue::from(vec![date(1), date(0)])
            .param_problem()
            .is_some());
        assert_eq!(date(9999).param_problem(), None);
        let leap = NaiveDate::from_ymd_opt(2016, 12, 31)
            .unwrap()
            .and_hms_nano_opt(23, 59, 59, 1_500_000_000)
            .unwrap()
            .and_utc();
        assert!(SqlValue::Timestamp(leap)
            .param_problem()
            .unwrap()
            .contains("leap second"));
        let fields = SqlValue::Struct(vec![(Some("a".into()), SqlValue::Int64(1))]);
        assert!(fields
            .param_problem()
            .unwrap()
            .contains("cannot be a STRUCT<a INT64>"));
        let map = SqlValue::Map(vec![(SqlValue::from("k"), SqlValue::Int64(1))]);
        assert!(map
            .param_problem()
            .unwrap()
            .contains("cannot be a MAP<STRING, INT64>"));
        let nested = SqlType::array(SqlType::map(SqlType::String, SqlType::Int64));
        assert!(nested.param_problem().is_some());
        assert_eq!(SqlType::array(SqlType::Date).param_problem(), None);
    }

    #[test]
    fn a_value_fits_its_own_type_and_null_fits_any() {
        assert!(SqlValue::Null.fits(&SqlType::array(SqlType::Date)));
        assert!(SqlValue::from(vec![Some("a"), None]).fits(&SqlType::array(SqlType::String)));
        assert!(!SqlValue::Float64(1.0).fits(&SqlType::Float32));
        assert!(!SqlValue::from(vec![1_i64]).fits(&SqlType::array(SqlType::String)));
    }
}
