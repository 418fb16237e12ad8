//! The types of GoogleSQL for Bigtable values, as Bigtable names a query's
//! columns (`ResultSetMetadata`) and its parameters (`param_types`).

use std::fmt;

use crate::model::proto::r#type::{self as pt, Kind};
use crate::model::proto::Type;

/// The type of a GoogleSQL value: a column of a query's result, or a
/// parameter of a query.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SqlType {
    /// `BYTES`.
    Bytes,
    /// `STRING`.
    String,
    /// `INT64`.
    Int64,
    /// `FLOAT32`.
    Float32,
    /// `FLOAT64`.
    Float64,
    /// `BOOL`.
    Bool,
    /// `TIMESTAMP`.
    Timestamp,
    /// `DATE`.
    Date,
    /// `ARRAY<element>`.
    Array(Box<SqlType>),
    /// `STRUCT<…>`: its fields in order, names optional and not unique.
    Struct(Vec<StructField>),
    /// `MAP<key, value>` (a column family read as a map, for one).
    Map(Box<SqlType>, Box<SqlType>),
}

/// One field of a [`SqlType::Struct`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StructField {
    /// Its name; `None` for a field without one.
    pub name: Option<String>,
    /// Its type.
    pub ty: SqlType,
}

impl StructField {
    /// A field `name` (empty: none) of type `ty`.
    #[must_use]
    pub fn new(name: impl Into<String>, ty: SqlType) -> Self {
        let name = name.into();
        Self {
            name: (!name.is_empty()).then_some(name),
            ty,
        }
    }
}

impl SqlType {
    /// `ARRAY<element>`.
    #[must_use]
    pub fn array(element: SqlType) -> Self {
        Self::Array(Box::new(element))
    }

    /// `MAP<key, value>`.
    #[must_use]
    pub fn map(key: SqlType, value: SqlType) -> Self {
        Self::Map(Box::new(key), Box::new(value))
    }

    /// The type Bigtable's `t` describes.
    ///
    /// # Errors
    /// Why it cannot be one: a type with no kind ("Column type cannot be
    /// empty"), an array or map without its element types, or a kind this
    /// library does not decode (`PROTO`, `ENUM`, aggregates).
    pub(crate) fn from_proto(t: &Type) -> Result<Self, String> {
        let Some(kind) = &t.kind else {
            return Err("Column type cannot be empty".to_owned());
        };
        let inner = |t: &Option<Box<Type>>, what: &str| match t {
            Some(t) => Self::from_proto(t),
            None => Err(format!("{what} type cannot be empty")),
        };
        Ok(match kind {
            Kind::BytesType(_) => Self::Bytes,
            Kind::StringType(_) => Self::String,
            Kind::Int64Type(_) => Self::Int64,
            Kind::Float32Type(_) => Self::Float32,
            Kind::Float64Type(_) => Self::Float64,
            Kind::BoolType(_) => Self::Bool,
            Kind::TimestampType(_) => Self::Timestamp,
            Kind::DateType(_) => Self::Date,
            Kind::ArrayType(a) => Self::array(inner(&a.element_type, "Array element")?),
            Kind::MapType(m) => Self::map(
                inner(&m.key_type, "Map key")?,
                inner(&m.value_type, "Map value")?,
            ),
            Kind::StructType(s) => Self::Struct(
                s.fields
                    .iter()
                    .map(|f| {
                        let ty = match &f.r#type {
                            Some(t) => Self::from_proto(t)?,
                            None => return Err("Struct field type cannot be empty".to_owned()),
                        };
                        Ok(StructField::new(f.field_name.clone(), ty))
                    })
                    .collect::<Result<_, String>>()?,
            ),
            Kind::AggregateType(_) => {
                return Err("aggregate types are not supported as query columns".to_owned())
            }
            other => {
                return Err(format!(
                    "{} is not supported by this client (protobuf and enum columns need their descriptors)",
                    kind_name(other)
                ))
            }
        })
    }

    /// Bigtable's `Type` for this type.
    pub(crate) fn to_proto(&self) -> Type {
        let kind = match self {
            Self::Bytes => Kind::BytesType(pt::Bytes::default()),
            Self::String => Kind::StringType(pt::String::default()),
            Self::Int64 => Kind::Int64Type(pt::Int64::default()),
            Self::Float32 => Kind::Float32Type(pt::Float32::default()),
            Self::Float64 => Kind::Float64Type(pt::Float64::default()),
            Self::Bool => Kind::BoolType(pt::Bool::default()),
            Self::Timestamp => Kind::TimestampType(pt::Timestamp::default()),
            Self::Date => Kind::DateType(pt::Date::default()),
            Self::Array(e) => Kind::ArrayType(Box::new(pt::Array {
                element_type: Some(Box::new(e.to_proto())),
            })),
            Self::Map(k, v) => Kind::MapType(Box::new(pt::Map {
                key_type: Some(Box::new(k.to_proto())),
                value_type: Some(Box::new(v.to_proto())),
            })),
            Self::Struct(fields) => Kind::StructType(pt::Struct {
                fields: fields
                    .iter()
                    .map(|f| pt::r#struct::Field {
                        field_name: f.name.clone().unwrap_or_default(),
                        r#type: Some(f.ty.to_proto()),
                    })
                    .collect(),
                ..pt::Struct::default()
            }),
        };
        Type { kind: Some(kind) }
    }

    /// Why a query cannot take a parameter of this type, if it cannot:
    /// Bigtable takes scalars and arrays of them, and Google's clients
    /// have no way to send a `STRUCT` or a `MAP` (a parameter of one would
    /// fail at the server, or be read as something else).
    pub(crate) fn param_problem(&self) -> Option<String> {
        match self {
            Self::Struct(_) | Self::Map(_, _) => Some(format!(
                "a query parameter cannot be a {self}: GoogleSQL for Bigtable takes scalars and arrays of them; \
                 pass each field or entry as a parameter of its own"
            )),
            Self::Array(element) => element.param_problem(),
            _ => None,
        }
    }

    /// The `Value` kind Bigtable sends for this type, as its clients name
    /// it in errors (`STRING_VALUE`).
    pub(crate) fn value_kind(&self) -> &'static str {
        match self {
            Self::Bytes => "BYTES_VALUE",
            Self::String => "STRING_VALUE",
            Self::Int64 => "INT_VALUE",
            Self::Float32 | Self::Float64 => "FLOAT_VALUE",
            Self::Bool => "BOOL_VALUE",
            Self::Timestamp => "TIMESTAMP_VALUE",
            Self::Date => "DATE_VALUE",
            Self::Array(_) | Self::Struct(_) | Self::Map(_, _) => "ARRAY_VALUE",
        }
    }
}

/// The name of a kind of type this library does not decode.
fn kind_name(kind: &Kind) -> &'static str {
    match kind {
        Kind::ProtoType(_) => "PROTO",
        Kind::EnumType(_) => "ENUM",
        _ => "this type",
    }
}

impl fmt::Display for SqlType {
    /// GoogleSQL's spelling: `INT64`, `ARRAY<STRING>`,
    /// `MAP<BYTES, STRING>`, `STRUCT<name STRING, INT64>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Bytes => f.write_str("BYTES"),
            Self::String => f.write_str("STRING"),
            Self::Int64 => f.write_str("INT64"),
            Self::Float32 => f.write_str("FLOAT32"),
            Self::Float64 => f.write_str("FLOAT64"),
            Self::Bool => f.write_str("BOOL"),
            Self::Timestamp => f.write_str("TIMESTAMP"),
            Self::Date => f.write_str("DATE"),
            Self::Array(e) => write!(f, "ARRAY<{e}>"),
            Self::Map(k, v) => write!(f, "MAP<{k}, {v}>"),
            Self::Struct(fields) => {
                f.write_str("STRUCT<")?;
                for (i, field) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    if let Some(name) = &field.name {
                        write!(f, "{name} ")?;
                    }
                    write!(f, "{}", field.ty)?;
                }
                f.write_str(">")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_round_trip_through_bigtables_messages() {
        let t = SqlType::map(
            SqlType::Bytes,
            SqlType::array(SqlType::Struct(vec![
                StructField::new("timestamp", SqlType::Timestamp),
                StructField::new("", SqlType::Bytes),
            ])),
        );
        assert_eq!(SqlType::from_proto(&t.to_proto()), Ok(t.clone()));
        assert_eq!(
            t.to_string(),
            "MAP<BYTES, ARRAY<STRUCT<timestamp TIMESTAMP, BYTES>>>"
        );
    }

    #[test]
    fn a_type_without_a_kind_is_refused() {
        assert_eq!(
            SqlType::from_proto(&Type::default()),
            Err("Column type cannot be empty".to_owned())
        );
        let array = Type {
            kind: Some(Kind::ArrayType(Box::new(pt::Array { element_type: None }))),
        };
        assert!(SqlType::from_proto(&array)
            .unwrap_err()
            .contains("Array element"));
    }
}
