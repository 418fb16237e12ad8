//! Why a field did not encode or decode ([`FieldError`], small for the hot
//! path), and the full errors it becomes once the table, row and column are
//! known.

use crate::model::error::{self, CodecError, Error, KeyProblem};
use crate::model::limits::{MAX_CELL_BYTES, MAX_QUALIFIER_BYTES};
use crate::model::schema::Schema;

/// Why one field of a derived struct did not encode or decode, kept small
/// for the hot path: which column or key part, and the codec's error. The
/// caller attaches the context (table, row, column names) once, on the cold
/// path (`decode_row`, [`crate::MutationBuilder::build`]).
#[derive(Debug)]
#[doc(hidden)]
pub enum FieldError {
    /// A column of [`Schema::columns`] did not encode or decode.
    Column {
        /// Its index in [`Schema::columns`].
        column: usize,
        /// The codec's error.
        source: CodecError,
    },
    /// A column's value is over Bigtable's cell limit.
    TooLarge {
        /// Its index in [`Schema::columns`].
        column: usize,
        /// Its encoded length.
        len: usize,
    },
    /// An entry of a map field of [`Schema::maps`] did not encode or decode.
    Entry {
        /// The map's index in [`Schema::maps`].
        map: usize,
        /// The entry's qualifier (its encoded key), when it has one.
        qualifier: Vec<u8>,
        /// The codec's error.
        source: CodecError,
    },
    /// A map entry's encoded key is over Bigtable's qualifier limit.
    EntryKeyTooLarge {
        /// The map's index in [`Schema::maps`].
        map: usize,
        /// The key's encoded length.
        len: usize,
    },
    /// A key part did not decode.
    Key {
        /// Its index among the key fields.
        part: usize,
        /// The codec's error.
        source: CodecError,
    },
    /// The key does not have the declared number of parts.
    KeyShape {
        /// How many parts it has.
        found: usize,
    },
    /// Anything else, already with its context.
    Other(Box<Error>),
}

impl From<Error> for FieldError {
    fn from(e: Error) -> Self {
        FieldError::Other(Box::new(e))
    }
}

impl FieldError {
    /// The full error for a write of `schema`'s struct.
    #[cold]
    #[must_use]
    pub fn into_write_error(self, schema: &Schema) -> Error {
        let field = |i: usize| schema.columns.get(i).map_or("", |c| c.field);
        match self {
            FieldError::Column { column: i, source } => Error::from(error::Encode {
                field: field(i),
                source,
            }),
            FieldError::TooLarge { column: i, len } => Error::from(error::ValueTooLarge {
                field: field(i),
                len,
                max: MAX_CELL_BYTES,
            }),
            FieldError::Entry { map, source, .. } => Error::from(error::Encode {
                field: map_field(schema, map),
                source,
            }),
            FieldError::EntryKeyTooLarge { map, len } => Error::from(error::ValueTooLarge {
                field: map_field(schema, map),
                len,
                max: MAX_QUALIFIER_BYTES,
            }),
            FieldError::Key { part: i, source } => Error::from(error::Encode {
                field: schema.key_fields.get(i).copied().unwrap_or(""),
                source,
            }),
            FieldError::KeyShape { found } => bad_key_shape(schema, b"", found),
            FieldError::Other(e) => *e,
        }
    }

    /// The full error for row `key` of `schema`'s table read back.
    #[cold]
    #[must_use]
    pub fn into_read_error(self, schema: &Schema, key: &[u8]) -> Error {
        let column = |i: usize| {
            schema
                .columns
                .get(i)
                .map_or(("", ""), |c| (c.family, c.qualifier))
        };
        match self {
            FieldError::Column { column: i, source } => {
                let (family, qualifier) = column(i);
                decode_error(schema, key, qualifier, family, source)
            }
            FieldError::TooLarge { column: i, len } => {
                let (family, qualifier) = column(i);
                let source = CodecError::Custom(format!("{len} bytes"));
                decode_error(schema, key, qualifier, family, source)
            }
            FieldError::Entry {
                map,
                qualifier,
                source,
            } => {
                let family = schema.maps.get(map).map_or("", |m| m.family);
                let entry = qualifier.escape_ascii().to_string();
                decode_error(schema, key, &entry, family, source)
            }
            FieldError::EntryKeyTooLarge { map, len } => {
                let family = schema.maps.get(map).map_or("", |m| m.family);
                let source = CodecError::Custom(format!("an entry key of {len} bytes"));
                decode_error(schema, key, "", family, source)
            }
            FieldError::Key { part: i, source } => Error::from(error::BadRowKey {
                table: schema.table.to_owned(),
                row_key: key.to_vec(),
                problem: KeyProblem::Field {
                    field: schema.key_fields.get(i).copied().unwrap_or(""),
                    source,
                },
            }),
            FieldError::KeyShape { found } => bad_key_shape(schema, key, found),
            FieldError::Other(e) => *e,
        }
    }
}

/// The name of map field `map` of `schema`.
fn map_field(schema: &Schema, map: usize) -> &'static str {
    schema.maps.get(map).map_or("", |m| m.field)
}

/// The error of a key read back with `found` parts instead of the schema's.
fn bad_key_shape(schema: &Schema, key: &[u8], found: usize) -> Error {
    bad_shape(
        schema.table,
        key,
        schema.key_separator,
        schema.key_fields.len(),
        found,
    )
}

/// The error of a key read back with `found` parts instead of `count`.
#[cold]
pub(crate) fn bad_shape(
    table: &str,
    key: &[u8],
    separator: &str,
    count: usize,
    found: usize,
) -> Error {
    let separator = if count <= 1 { "" } else { separator };
    Error::from(error::BadRowKey {
        table: table.to_owned(),
        row_key: key.to_vec(),
        problem: KeyProblem::Parts {
            expected: count,
            separator: separator.to_owned(),
            found,
        },
    })
}

pub(crate) fn decode_error(
    schema: &Schema,
    key: &[u8],
    qualifier: &str,
    family: &str,
    source: CodecError,
) -> Error {
    Error::from(error::Decode {
        table: schema.table.to_owned(),
        row_key: key.to_vec(),
        column: format!("{family}:{qualifier}"),
        source,
    })
}
