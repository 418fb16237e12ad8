//! A query's columns and rows: the metadata of a prepared query checked
//! once, and each batch of values Bigtable sends cut into rows and checked
//! against it, whole, before any of its rows is handed out.

use std::sync::Arc;

use crate::model::error::{self, Error, Result};
use crate::model::proto::{result_set_metadata::Schema, ResultSetMetadata, Value};
use crate::model::sql_type::SqlType;
use crate::model::sql_value::{FromSql, SqlValue};

/// One column of a query's result.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SqlColumn {
    /// Its name (as the query's `AS` gave it); not unique.
    pub name: String,
    /// Its type.
    pub ty: SqlType,
}

impl SqlColumn {
    /// A column `name` of type `ty`.
    #[must_use]
    pub fn new(name: impl Into<String>, ty: SqlType) -> Self {
        Self {
            name: name.into(),
            ty,
        }
    }

    /// Bigtable's `ColumnMetadata` for this column.
    #[cfg(test)]
    pub(crate) fn to_proto(&self) -> crate::model::proto::ColumnMetadata {
        crate::model::proto::ColumnMetadata {
            name: self.name.clone(),
            r#type: Some(self.ty.to_proto()),
        }
    }
}

/// The columns `metadata` describes.
///
/// # Errors
/// [`Error::QueryResponse`] for metadata without columns, or with a column
/// whose type is missing or not one this library reads.
pub(crate) fn columns_of(metadata: Option<&ResultSetMetadata>) -> Result<Arc<[SqlColumn]>> {
    let columns = match metadata.and_then(|m| m.schema.as_ref()) {
        Some(Schema::ProtoSchema(schema)) => &schema.columns,
        None => &Vec::new(),
    };
    if columns.is_empty() {
        return Err(malformed(
            "the query's metadata has no column (columns cannot be empty)",
        ));
    }
    columns
        .iter()
        .map(|c| {
            let ty = match &c.r#type {
                Some(t) => SqlType::from_proto(t),
                None => Err("Column type cannot be empty".to_owned()),
            };
            ty.map(|ty| SqlColumn::new(c.name.clone(), ty))
                .map_err(|e| malformed(format!("column `{}`: {e}", c.name)))
        })
        .collect()
}

/// One row of a query's result.
#[derive(Debug, Clone, PartialEq)]
pub struct SqlRow {
    columns: Arc<[SqlColumn]>,
    values: Vec<SqlValue>,
}

impl SqlRow {
    /// The columns of the query, in order.
    #[must_use]
    pub fn columns(&self) -> &[SqlColumn] {
        &self.columns
    }

    /// The row's values, one per column, in order.
    #[must_use]
    pub fn values(&self) -> &[SqlValue] {
        &self.values
    }

    /// The row's values, one per column, in order.
    #[must_use]
    pub fn into_values(self) -> Vec<SqlValue> {
        self.values
    }

    /// The value of the first column named `column`, as a `T`.
    ///
    /// # Errors
    /// [`Error::QueryColumn`] when no column has that name, or its value is
    /// not a `T` (a `NULL` into anything but an `Option`, an `INT64` into
    /// a `String`, …).
    pub fn get<T: FromSql>(&self, column: &str) -> Result<T> {
        let index = self
            .columns
            .iter()
            .position(|c| c.name == column)
            .ok_or_else(|| {
                Error::from(error::QueryColumn {
                    column: column.to_owned(),
                    problem: format!(
                        "the query has no such column; its columns are: {}",
                        self.columns
                            .iter()
                            .map(|c| c.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                })
            })?;
        self.get_at(index)
    }

    /// The value of the column at `index` (from 0), as a `T`.
    ///
    /// # Errors
    /// As [`SqlRow::get`].
    pub fn get_at<T: FromSql>(&self, index: usize) -> Result<T> {
        let (Some(column), Some(value)) = (self.columns.get(index), self.values.get(index)) else {
            return Err(Error::from(error::QueryColumn {
                column: format!("#{index}"),
                problem: format!("the query has {} columns", self.columns.len()),
            }));
        };
        T::from_sql(value).map_err(|problem| {
            Error::from(error::QueryColumn {
                column: column.name.clone(),
                problem: format!("its {} value {problem}", column.ty),
            })
        })
    }
}

/// The rows `values` (a whole number of rows, as a resume token closes
/// them) hold, each checked against `columns`; none when one is wrong.
///
/// # Errors
/// [`Error::QueryResponse`], naming the column and row, for a value that
/// does not fit its column's type, or values that are not a whole number
/// of rows.
pub(crate) fn rows_of(values: Vec<Value>, columns: &Arc<[SqlColumn]>) -> Result<Vec<SqlRow>> {
    let width = columns.len();
    if width == 0 || !values.len().is_multiple_of(width) {
        return Err(malformed(format!(
            "Incomplete row received: {} values for {width} columns",
            values.len()
        )));
    }
    let count = values.len() / width;
    let mut rows = Vec::with_capacity(count);
    let mut values = values.into_iter();
    for row in 0..count {
        let decoded = columns
            .iter()
            .zip(values.by_ref())
            .map(|(column, value)| {
                SqlValue::from_proto(&value, &column.ty).map_err(|e| {
                    malformed(format!("column `{}` of row {}: {e}", column.name, row + 1))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        rows.push(SqlRow {
            columns: columns.clone(),
            values: decoded,
        });
    }
    Ok(rows)
}

/// The error of an answer to a query that cannot be read.
pub(crate) fn malformed(problem: impl Into<String>) -> Error {
    Error::from(error::QueryResponse {
        problem: problem.into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::proto::ProtoSchema;

    fn metadata(columns: &[SqlColumn]) -> ResultSetMetadata {
        ResultSetMetadata {
            schema: Some(Schema::ProtoSchema(ProtoSchema {
                columns: columns.iter().map(SqlColumn::to_proto).collect(),
            })),
        }
    }

    #[test]
    fn metadata_without_columns_or_with_an_empty_type_is_malformed() {
        let empty = columns_of(Some(&metadata(&[]))).unwrap_err();
        assert!(
            empty.to_string().contains("columns cannot be empty"),
            "{empty}"
        );
        let mut bad = metadata(&[SqlColumn::new("test", SqlType::Bytes)]);
        if let Some(Schema::ProtoSchema(s)) = &mut bad.schema {
            s.columns.push(crate::model::proto::ColumnMetadata {
                name: "invalid".into(),
                r#type: Some(crate::model::proto::Type::default()),
            });
        }
        let error = columns_of(Some(&bad)).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("column `invalid`: Column type cannot be empty"),
            "{error}"
        );
        assert_eq!(error.code(), Some(crate::model::error::Code::Internal));
    }

    #[test]
    fn a_batch_is_cut_into_rows_and_refused_whole_when_one_value_is_wrong() {
        let columns: Arc<[SqlColumn]> = vec![
            SqlColumn::new("foo", SqlType::Bytes),
            SqlColumn::new("bar", SqlType::String),
        ]
        .into();
        let v = |x: SqlValue| x.to_proto();
        let good = vec![
            v(SqlValue::Bytes(b"a".to_vec())),
            v(SqlValue::from("s")),
            v(SqlValue::Null),
            v(SqlValue::from("t")),
        ];
        let rows = rows_of(good.clone(), &columns).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1].get::<Option<Vec<u8>>>("foo").unwrap(), None);
        assert_eq!(rows[1].get::<String>("bar").unwrap(), "t");
        let error = rows[1].get::<String>("foo").unwrap_err();
        assert!(
            matches!(&error, Error::QueryColumn(e) if e.column == "foo"),
            "{error}"
        );
        let missing = rows[0].get::<String>("baz").unwrap_err();
        assert!(
            missing.to_string().contains("its columns are: foo, bar"),
            "{missing}"
        );

        let mut wrong = good.clone();
        wrong[3] = v(SqlValue::Int64(42));
        let error = rows_of(wrong, &columns).unwrap_err().to_string();
        assert!(error.contains("column `bar` of row 2"), "{error}");
        assert!(error.contains("Value kind must be STRING_VALUE"), "{error}");

        let error = rows_of(good[..3].to_vec(), &columns)
            .unwrap_err()
            .to_string();
        assert!(error.contains("Incomplete row received"), "{error}");
    }
}
