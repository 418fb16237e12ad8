//! The suite's Bigtable v2 messages as the library's own types, and back:
//! the library's API names no generated type, so the proxy, which speaks
//! the messages of `test_proxy.proto`, converts each request into the
//! raw layer's types and each answer into messages. The library's own
//! tests use it too (`tests/it/main.rs`), to replay a filter the library
//! sent and to script a fake server's GoogleSQL answers: it names nothing
//! of the proxy's.
//!
//! Every message the suite can send converts; what the library's types
//! cannot hold (an empty mutation or filter, a kind a later proto adds) is
//! refused with the reason, and the proxy answers `INVALID_ARGUMENT`
//! without calling the library.

use std::ops::Bound;

use bigtable_ttl::chrono::{DateTime, Datelike as _, NaiveDate};
use bigtable_ttl::data::{
    AggregateInput, Entry, KeySample, Mutation, ReadModifyWriteRule, ReadRows, Row, RowFilter,
    SqlColumn, SqlType, SqlValue, StructField,
};

use googleapis_tonic_google_bigtable_v2::google::bigtable::v2;
use googleapis_tonic_google_bigtable_v2::google::r#type::Date;
use v2::r#type::Kind as TypeKind;
use v2::value::Kind as ValueKind;

/// What the suite's `ReadRowsRequest` asks for, as Bigtable reads it: no
/// row set, or an empty one, is every row; a `rows_limit` of zero, no
/// limit.
pub(crate) fn read_rows(request: v2::ReadRowsRequest) -> Result<ReadRows, String> {
    let mut read = match request.rows {
        Some(set) if !set.row_keys.is_empty() || !set.row_ranges.is_empty() => {
            let mut read = ReadRows::keys(set.row_keys);
            for range in set.row_ranges {
                read = read.and_range(row_range(range));
            }
            read
        }
        _ => ReadRows::all(),
    };
    if let Some(filter) = request.filter {
        read = read.filter(row_filter(filter)?);
    }
    match u64::try_from(request.rows_limit) {
        Ok(0) => {}
        Ok(rows) => read = read.limit(rows),
        Err(_) => return Err(format!("rows_limit {} is negative", request.rows_limit)),
    }
    if request.reversed {
        read = read.reversed();
    }
    Ok(read)
}

fn row_range(range: v2::RowRange) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    use v2::row_range::{EndKey, StartKey};
    let start = match range.start_key {
        Some(StartKey::StartKeyClosed(k)) => Bound::Included(k),
        Some(StartKey::StartKeyOpen(k)) => Bound::Excluded(k),
        None => Bound::Unbounded,
    };
    let end = match range.end_key {
        Some(EndKey::EndKeyClosed(k)) => Bound::Included(k),
        Some(EndKey::EndKeyOpen(k)) => Bound::Excluded(k),
        None => Bound::Unbounded,
    };
    (start, end)
}

/// The suite's filter, every kind the library's [`RowFilter`] builds.
pub(crate) fn row_filter(filter: v2::RowFilter) -> Result<RowFilter, String> {
    use v2::row_filter::Filter;
    let flag = |set: bool, name: &str, filter: fn() -> RowFilter| {
        if set {
            Ok(filter())
        } else {
            Err(format!("{name} must be true"))
        }
    };
    let all = |filters: Vec<v2::RowFilter>| -> Result<Vec<RowFilter>, String> {
        filters.into_iter().map(row_filter).collect()
    };
    let optional = |filter: Option<Box<v2::RowFilter>>| filter.map(|f| row_filter(*f)).transpose();
    Ok(
        match filter.filter.ok_or("a RowFilter with no filter set")? {
            Filter::Chain(chain) => RowFilter::chain(all(chain.filters)?),
            Filter::Interleave(interleave) => RowFilter::interleave(all(interleave.filters)?),
            Filter::Condition(condition) => RowFilter::condition(
                optional(condition.predicate_filter)?.ok_or("a condition with no predicate")?,
                optional(condition.true_filter)?,
                optional(condition.false_filter)?,
            ),
            Filter::Sink(set) => flag(set, "sink", RowFilter::sink)?,
            Filter::PassAllFilter(set) => flag(set, "pass_all_filter", RowFilter::pass_all)?,
            Filter::BlockAllFilter(set) => flag(set, "block_all_filter", RowFilter::block_all)?,
            Filter::RowKeyRegexFilter(regex) => RowFilter::row_key_regex(regex),
            Filter::RowSampleFilter(p) => RowFilter::row_sample(p),
            Filter::FamilyNameRegexFilter(regex) => RowFilter::family_name_regex(regex),
            Filter::ColumnQualifierRegexFilter(regex) => RowFilter::column_qualifier_regex(regex),
            Filter::ColumnRangeFilter(range) => {
                use v2::column_range::{EndQualifier, StartQualifier};
                let start = match range.start_qualifier {
                    Some(StartQualifier::StartQualifierClosed(q)) => Bound::Included(q),
                    Some(StartQualifier::StartQualifierOpen(q)) => Bound::Excluded(q),
                    None => Bound::Unbounded,
                };
                let end = match range.end_qualifier {
                    Some(EndQualifier::EndQualifierClosed(q)) => Bound::Included(q),
                    Some(EndQualifier::EndQualifierOpen(q)) => Bound::Excluded(q),
                    None => Bound::Unbounded,
                };
                RowFilter::column_range(range.family_name, (start, end))
            }
            Filter::TimestampRangeFilter(range) => {
                RowFilter::timestamp_range(range.start_timestamp_micros, range.end_timestamp_micros)
            }
            Filter::ValueRegexFilter(regex) => RowFilter::value_regex(regex),
            Filter::ValueRangeFilter(range) => {
                use v2::value_range::{EndValue, StartValue};
                let start = match range.start_value {
                    Some(StartValue::StartValueClosed(v)) => Bound::Included(v),
                    Some(StartValue::StartValueOpen(v)) => Bound::Excluded(v),
                    None => Bound::Unbounded,
                };
                let end = match range.end_value {
                    Some(EndValue::EndValueClosed(v)) => Bound::Included(v),
                    Some(EndValue::EndValueOpen(v)) => Bound::Excluded(v),
                    None => Bound::Unbounded,
                };
                RowFilter::value_range((start, end))
            }
            Filter::CellsPerRowOffsetFilter(n) => RowFilter::cells_per_row_offset(n),
            Filter::CellsPerRowLimitFilter(n) => RowFilter::cells_per_row_limit(n),
            Filter::CellsPerColumnLimitFilter(n) => RowFilter::cells_per_column_limit(n),
            Filter::StripValueTransformer(set) => {
                flag(set, "strip_value_transformer", RowFilter::strip_value)?
            }
            Filter::ApplyLabelTransformer(label) => RowFilter::apply_label(label),
        },
    )
}

/// The suite's mutations.
pub(crate) fn mutations(mutations: Vec<v2::Mutation>) -> Result<Vec<Mutation>, String> {
    mutations.into_iter().map(mutation).collect()
}

fn mutation(m: v2::Mutation) -> Result<Mutation, String> {
    use v2::mutation::Mutation as M;
    Ok(match m.mutation.ok_or("a Mutation with no mutation set")? {
        M::SetCell(set) => Mutation::set_cell(
            set.family_name,
            set.column_qualifier,
            set.timestamp_micros,
            set.value,
        ),
        M::DeleteFromColumn(delete) => {
            let range = delete.time_range.unwrap_or_default();
            Mutation::delete_from_column_in(
                delete.family_name,
                delete.column_qualifier,
                range.start_timestamp_micros,
                range.end_timestamp_micros,
            )
        }
        M::DeleteFromFamily(delete) => Mutation::delete_from_family(delete.family_name),
        M::DeleteFromRow(_) => Mutation::delete_from_row(),
        M::AddToCell(add) => Mutation::add_to_cell(
            add.family_name,
            raw(add.column_qualifier, "column_qualifier")?,
            micros(add.timestamp)?,
            aggregate(add.input)?,
        ),
        M::MergeToCell(merge) => Mutation::merge_to_cell(
            merge.family_name,
            raw(merge.column_qualifier, "column_qualifier")?,
            micros(merge.timestamp)?,
            aggregate(merge.input)?,
        ),
    })
}

fn raw(value: Option<v2::Value>, what: &str) -> Result<Vec<u8>, String> {
    match value.and_then(|v| v.kind) {
        Some(ValueKind::RawValue(bytes)) => Ok(bytes),
        _ => Err(format!("{what} must be a raw_value")),
    }
}

fn micros(value: Option<v2::Value>) -> Result<i64, String> {
    match value.and_then(|v| v.kind) {
        Some(ValueKind::RawTimestampMicros(micros)) => Ok(micros),
        _ => Err("timestamp must be a raw_timestamp_micros".to_owned()),
    }
}

fn aggregate(value: Option<v2::Value>) -> Result<AggregateInput, String> {
    match value.and_then(|v| v.kind) {
        Some(ValueKind::IntValue(i)) => Ok(AggregateInput::Int64(i)),
        Some(ValueKind::RawValue(bytes)) => Ok(AggregateInput::Raw(bytes)),
        _ => Err("input must be an int_value or a raw_value".to_owned()),
    }
}

/// The suite's `MutateRows` entries.
pub(crate) fn entries(entries: Vec<v2::mutate_rows_request::Entry>) -> Result<Vec<Entry>, String> {
    entries
        .into_iter()
        .map(|e| Ok(Entry::new(e.row_key, mutations(e.mutations)?)))
        .collect()
}

/// The suite's `ReadModifyWriteRow` rules.
pub(crate) fn rules(
    rules: Vec<v2::ReadModifyWriteRule>,
) -> Result<Vec<ReadModifyWriteRule>, String> {
    use v2::read_modify_write_rule::Rule;
    rules
        .into_iter()
        .map(|r| match r.rule {
            Some(Rule::AppendValue(value)) => Ok(ReadModifyWriteRule::append(
                r.family_name,
                r.column_qualifier,
                value,
            )),
            Some(Rule::IncrementAmount(amount)) => Ok(ReadModifyWriteRule::increment(
                r.family_name,
                r.column_qualifier,
                amount,
            )),
            None => Err("a ReadModifyWriteRule with no rule set".to_owned()),
        })
        .collect()
}

/// A row as `google.bigtable.v2.Row`: cells grouped by family, then by
/// column, in the order they came.
pub(crate) fn row(row: Row) -> v2::Row {
    let mut families: Vec<v2::Family> = Vec::new();
    for cell in row.cells {
        let family = match families.last_mut() {
            Some(family) if family.name == cell.family => family,
            _ => {
                families.push(v2::Family {
                    name: cell.family,
                    columns: Vec::new(),
                });
                families.last_mut().expect("just pushed")
            }
        };
        let wire = v2::Cell {
            timestamp_micros: cell.timestamp_micros,
            value: cell.value,
            labels: Vec::new(),
        };
        match family.columns.last_mut() {
            Some(column) if column.qualifier == cell.qualifier => column.cells.push(wire),
            _ => family.columns.push(v2::Column {
                qualifier: cell.qualifier,
                cells: vec![wire],
            }),
        }
    }
    v2::Row {
        key: row.key,
        families,
    }
}

/// A sample of `SampleRowKeys`.
pub(crate) fn sample(sample: KeySample) -> v2::SampleRowKeysResponse {
    v2::SampleRowKeysResponse {
        row_key: sample.key,
        offset_bytes: sample.offset_bytes,
    }
}

// ----- GoogleSQL -----------------------------------------------------------

/// The type the suite's `t` describes.
pub(crate) fn sql_type(t: &v2::Type) -> Result<SqlType, String> {
    let inner = |t: &Option<Box<v2::Type>>, what: &str| match t {
        Some(t) => sql_type(t),
        None => Err(format!("{what} type cannot be empty")),
    };
    Ok(
        match t.kind.as_ref().ok_or("Column type cannot be empty")? {
            TypeKind::BytesType(_) => SqlType::Bytes,
            TypeKind::StringType(_) => SqlType::String,
            TypeKind::Int64Type(_) => SqlType::Int64,
            TypeKind::Float32Type(_) => SqlType::Float32,
            TypeKind::Float64Type(_) => SqlType::Float64,
            TypeKind::BoolType(_) => SqlType::Bool,
            TypeKind::TimestampType(_) => SqlType::Timestamp,
            TypeKind::DateType(_) => SqlType::Date,
            TypeKind::ArrayType(a) => SqlType::array(inner(&a.element_type, "Array element")?),
            TypeKind::MapType(m) => SqlType::map(
                inner(&m.key_type, "Map key")?,
                inner(&m.value_type, "Map value")?,
            ),
            TypeKind::StructType(s) => SqlType::Struct(
                s.fields
                    .iter()
                    .map(|f| {
                        let ty = f
                            .r#type
                            .as_ref()
                            .ok_or("Struct field type cannot be empty")?;
                        Ok(StructField::new(f.field_name.clone(), sql_type(ty)?))
                    })
                    .collect::<Result<_, String>>()?,
            ),
            _ => return Err("this type is not supported by this client".to_owned()),
        },
    )
}

/// The message for the library's type `ty`.
pub(crate) fn sql_type_to_wire(ty: &SqlType) -> Result<v2::Type, String> {
    use v2::r#type as t;
    let kind = match ty {
        SqlType::Bytes => TypeKind::BytesType(t::Bytes::default()),
        SqlType::String => TypeKind::StringType(t::String::default()),
        SqlType::Int64 => TypeKind::Int64Type(t::Int64::default()),
        SqlType::Float32 => TypeKind::Float32Type(t::Float32::default()),
        SqlType::Float64 => TypeKind::Float64Type(t::Float64::default()),
        SqlType::Bool => TypeKind::BoolType(t::Bool::default()),
        SqlType::Timestamp => TypeKind::TimestampType(t::Timestamp::default()),
        SqlType::Date => TypeKind::DateType(t::Date::default()),
        SqlType::Array(e) => TypeKind::ArrayType(Box::new(t::Array {
            element_type: Some(Box::new(sql_type_to_wire(e)?)),
        })),
        SqlType::Map(k, v) => TypeKind::MapType(Box::new(t::Map {
            key_type: Some(Box::new(sql_type_to_wire(k)?)),
            value_type: Some(Box::new(sql_type_to_wire(v)?)),
        })),
        SqlType::Struct(fields) => TypeKind::StructType(t::Struct {
            fields: fields
                .iter()
                .map(|f| {
                    Ok(t::r#struct::Field {
                        field_name: f.name.clone().unwrap_or_default(),
                        r#type: Some(sql_type_to_wire(&f.ty)?),
                    })
                })
                .collect::<Result<_, String>>()?,
            ..t::Struct::default()
        }),
        other => return Err(format!("the proxy cannot send the type {other}")),
    };
    Ok(v2::Type { kind: Some(kind) })
}

/// A result column's metadata.
pub(crate) fn column(column: &SqlColumn) -> Result<v2::ColumnMetadata, String> {
    Ok(v2::ColumnMetadata {
        name: column.name.clone(),
        r#type: Some(sql_type_to_wire(&column.ty)?),
    })
}

/// The value the suite's `value` holds for a parameter of type `ty`.
pub(crate) fn sql_value(value: &v2::Value, ty: &SqlType) -> Result<SqlValue, String> {
    let Some(kind) = &value.kind else {
        return Ok(SqlValue::Null);
    };
    Ok(match (ty, kind) {
        (SqlType::Bytes, ValueKind::BytesValue(b)) => SqlValue::Bytes(b.clone()),
        (SqlType::String, ValueKind::StringValue(s)) => SqlValue::String(s.clone()),
        (SqlType::Int64, ValueKind::IntValue(i)) => SqlValue::Int64(*i),
        #[allow(clippy::cast_possible_truncation)]
        (SqlType::Float32, ValueKind::FloatValue(x)) => SqlValue::Float32(*x as f32),
        (SqlType::Float64, ValueKind::FloatValue(x)) => SqlValue::Float64(*x),
        (SqlType::Bool, ValueKind::BoolValue(b)) => SqlValue::Bool(*b),
        (SqlType::Timestamp, ValueKind::TimestampValue(t)) => SqlValue::Timestamp(
            u32::try_from(t.nanos)
                .ok()
                .and_then(|nanos| DateTime::from_timestamp(t.seconds, nanos))
                .ok_or_else(|| format!("timestamp {t} is out of range"))?,
        ),
        (SqlType::Date, ValueKind::DateValue(d)) => SqlValue::Date(
            u32::try_from(d.month)
                .ok()
                .zip(u32::try_from(d.day).ok())
                .and_then(|(m, day)| NaiveDate::from_ymd_opt(d.year, m, day))
                .ok_or_else(|| {
                    format!(
                        "date {}-{}-{} is not a calendar date",
                        d.year, d.month, d.day
                    )
                })?,
        ),
        (SqlType::Array(element), ValueKind::ArrayValue(a)) => SqlValue::Array(
            a.values
                .iter()
                .map(|v| sql_value(v, element))
                .collect::<Result<_, _>>()?,
        ),
        (SqlType::Struct(fields), ValueKind::ArrayValue(a)) if a.values.len() == fields.len() => {
            SqlValue::Struct(
                fields
                    .iter()
                    .zip(&a.values)
                    .map(|(f, v)| Ok((f.name.clone(), sql_value(v, &f.ty)?)))
                    .collect::<Result<_, String>>()?,
            )
        }
        (SqlType::Map(key, val), ValueKind::ArrayValue(a)) => SqlValue::Map(
            a.values
                .iter()
                .map(|entry| match &entry.kind {
                    Some(ValueKind::ArrayValue(pair)) if pair.values.len() == 2 => Ok((
                        sql_value(&pair.values[0], key)?,
                        sql_value(&pair.values[1], val)?,
                    )),
                    _ => Err(format!("an entry of {ty} is not a key and a value")),
                })
                .collect::<Result<_, String>>()?,
        ),
        _ => return Err(format!("the value does not fit {ty}")),
    })
}

/// The message for the library's value `value` (no type attached).
pub(crate) fn sql_value_to_wire(value: &SqlValue) -> Result<v2::Value, String> {
    let array = |values: Vec<v2::Value>| Some(ValueKind::ArrayValue(v2::ArrayValue { values }));
    let kind = match value {
        SqlValue::Null => None,
        SqlValue::Bytes(b) => Some(ValueKind::BytesValue(b.clone())),
        SqlValue::String(s) => Some(ValueKind::StringValue(s.clone())),
        SqlValue::Int64(i) => Some(ValueKind::IntValue(*i)),
        SqlValue::Float32(x) => Some(ValueKind::FloatValue(f64::from(*x))),
        SqlValue::Float64(x) => Some(ValueKind::FloatValue(*x)),
        SqlValue::Bool(b) => Some(ValueKind::BoolValue(*b)),
        SqlValue::Timestamp(t) => Some(ValueKind::TimestampValue(prost_types::Timestamp {
            seconds: t.timestamp(),
            nanos: i32::try_from(t.timestamp_subsec_nanos()).unwrap_or(i32::MAX),
        })),
        SqlValue::Date(d) => Some(ValueKind::DateValue(Date {
            year: d.year(),
            month: i32::try_from(d.month()).unwrap_or_default(),
            day: i32::try_from(d.day()).unwrap_or_default(),
        })),
        SqlValue::Array(values) => array(
            values
                .iter()
                .map(sql_value_to_wire)
                .collect::<Result<_, _>>()?,
        ),
        SqlValue::Struct(fields) => array(
            fields
                .iter()
                .map(|(_, v)| sql_value_to_wire(v))
                .collect::<Result<_, _>>()?,
        ),
        SqlValue::Map(entries) => array(
            entries
                .iter()
                .map(|(k, v)| {
                    Ok(v2::Value {
                        r#type: None,
                        kind: array(vec![sql_value_to_wire(k)?, sql_value_to_wire(v)?]),
                    })
                })
                .collect::<Result<_, String>>()?,
        ),
        other => return Err(format!("the proxy cannot send the value {other:?}")),
    };
    Ok(v2::Value { r#type: None, kind })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_request_keeps_its_rows_limit_and_direction() {
        let request = v2::ReadRowsRequest {
            rows: Some(v2::RowSet::default()),
            rows_limit: -1,
            ..v2::ReadRowsRequest::default()
        };
        assert!(read_rows(request).unwrap_err().contains("negative"));
        let every = v2::ReadRowsRequest {
            rows: Some(v2::RowSet::default()),
            ..v2::ReadRowsRequest::default()
        };
        assert_eq!(read_rows(every).unwrap(), ReadRows::all());
        let some = v2::ReadRowsRequest {
            rows: Some(v2::RowSet {
                row_keys: vec![b"k".to_vec()],
                row_ranges: vec![v2::RowRange {
                    start_key: Some(v2::row_range::StartKey::StartKeyOpen(b"a".to_vec())),
                    end_key: None,
                }],
            }),
            rows_limit: 3,
            reversed: true,
            ..v2::ReadRowsRequest::default()
        };
        let expected = ReadRows::keys([b"k"])
            .and_range((Bound::Excluded(b"a".to_vec()), Bound::Unbounded))
            .limit(3)
            .reversed();
        assert_eq!(read_rows(some).unwrap(), expected);
    }

    #[test]
    fn sql_values_go_to_the_wire_and_back() {
        let ty = SqlType::map(
            SqlType::String,
            SqlType::array(SqlType::Struct(vec![
                StructField::new("n", SqlType::Int64),
                StructField::new("", SqlType::Date),
            ])),
        );
        let value = SqlValue::Map(vec![(
            SqlValue::from("k"),
            SqlValue::Array(vec![SqlValue::Struct(vec![
                (Some("n".into()), SqlValue::Int64(7)),
                (
                    None,
                    SqlValue::Date(NaiveDate::from_ymd_opt(2024, 2, 29).unwrap()),
                ),
            ])]),
        )]);
        let wire_type = sql_type_to_wire(&ty).unwrap();
        assert_eq!(sql_type(&wire_type).unwrap(), ty);
        let wire = sql_value_to_wire(&value).unwrap();
        assert_eq!(sql_value(&wire, &ty).unwrap(), value);
    }
}
