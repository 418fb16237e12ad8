//! Turning a value into the `Mutation`s that write it.
//!
//! Every `SetCell` carries an explicit, whole-millisecond timestamp computed by
//! the policy: there is no way to build one that leaves it to the server. Each
//! written column is first cleared (`DeleteFromColumn`, all versions) in the
//! same atomic row mutation, so the value read back is the last one written,
//! whatever the TTLs of earlier writes.

use bigtable_rs::google::bigtable::v2::{mutation, Mutation};
use chrono::{DateTime, TimeDelta, Utc};

use crate::codec::CellCodec;
use crate::error::{Error, Result};
use crate::policy::{from_micros, millis_floor, Expiry};
use crate::row::BigtableRow;

/// Bigtable's limit on one cell's value.
pub const MAX_CELL_BYTES: usize = 100 * 1024 * 1024;

/// Builds the mutations for one write of a value.
///
/// ```
/// # use bigtable_ttl::{BigtableRow};
/// # use chrono::{TimeDelta, TimeZone, Utc};
/// #[derive(BigtableRow)]
/// #[bigtable(table = "clicks", family = "c")]
/// #[ttl(default = "2d")]
/// struct Click {
///     #[bigtable(key)]
///     id: String,
///     url: String,
/// }
///
/// let now = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
/// let click = Click { id: "c1".into(), url: "/home".into() };
/// let write = click.mutation().ttl(TimeDelta::hours(1)).build(now).unwrap();
/// assert_eq!(write.expires_at, now + TimeDelta::hours(1));
/// ```
#[derive(Debug)]
#[must_use]
pub struct MutationBuilder<'a, T> {
    row: &'a T,
    expiry: Option<Expiry>,
}

/// The mutations of one row write, ready to send.
#[derive(Debug, Clone, PartialEq)]
pub struct RowMutation {
    /// The row key.
    pub row_key: Vec<u8>,
    /// The mutations, applied atomically and in order.
    pub mutations: Vec<Mutation>,
    /// The timestamp of the row-level cells (µs).
    pub timestamp_micros: i64,
    /// When the row expires.
    pub expires_at: DateTime<Utc>,
}

impl<'a, T: BigtableRow> MutationBuilder<'a, T> {
    /// A write of `row` with the expiry its fields or the policy give.
    pub fn new(row: &'a T) -> Self {
        Self { row, expiry: None }
    }

    /// Live `ttl` from the clock's now, overriding the default and any
    /// `expire_at` field.
    pub fn ttl(mut self, ttl: TimeDelta) -> Self {
        self.expiry = Some(Expiry::Ttl(ttl));
        self
    }

    /// Expire at `at`, overriding the default and any `expire_at` field.
    pub fn expire_at(mut self, at: DateTime<Utc>) -> Self {
        self.expiry = Some(Expiry::At(at));
        self
    }

    /// The value being written.
    #[must_use]
    pub fn row(&self) -> &'a T {
        self.row
    }

    /// The mutations for a write at `now`.
    ///
    /// # Errors
    /// Everything the policy rejects ([`Error::ExpiryNotInFuture`],
    /// [`Error::NonPositiveTtl`], [`Error::MissingExpiry`], out-of-range
    /// timestamps), bad keys and values. Nothing is sent when this fails.
    pub fn build(&self, now: DateTime<Utc>) -> Result<RowMutation> {
        let schema = T::SCHEMA;
        let policy = schema.policy;
        let row_key = self.row.row_key()?;
        let expiry = self.expiry.unwrap_or_else(|| self.row.expiry());
        let row_ts = policy.cell_timestamp(now, expiry).map_err(|e| match e {
            Error::MissingExpiry { .. } => Error::MissingExpiry {
                table: schema.table,
            },
            other => other,
        })?;
        let values = self.row.cell_values()?;
        let shadow_mutations = if schema.written_at.is_some() { 2 } else { 0 };
        let mut mutations = Vec::with_capacity(2 * values.len() + shadow_mutations);
        for (column, value) in schema.columns.iter().zip(values) {
            mutations.push(delete_column(column.family, column.qualifier));
            let Some(value) = value else { continue };
            if value.len() > MAX_CELL_BYTES {
                return Err(Error::ValueTooLarge {
                    field: column.field,
                    len: value.len(),
                    max: MAX_CELL_BYTES,
                });
            }
            let ts = match column.ttl {
                // A field never outlives its row.
                Some(ttl) => policy.cell_timestamp(now, Expiry::Ttl(ttl))?.min(row_ts),
                None => row_ts,
            };
            mutations.push(set_cell(column.family, column.qualifier, ts, value));
        }
        if let Some(shadow) = schema.written_at {
            let written = from_micros(millis_floor(now)?)?;
            mutations.push(delete_column(shadow.family, shadow.qualifier));
            mutations.push(set_cell(
                shadow.family,
                shadow.qualifier,
                row_ts,
                written.encode().map_err(|source| Error::Encode {
                    field: "written_at",
                    source,
                })?,
            ));
        }
        Ok(RowMutation {
            row_key,
            mutations,
            timestamp_micros: row_ts,
            expires_at: policy.expiry_of(row_ts)?,
        })
    }
}

fn delete_column(family: &str, qualifier: &str) -> Mutation {
    Mutation {
        mutation: Some(mutation::Mutation::DeleteFromColumn(
            mutation::DeleteFromColumn {
                family_name: family.to_owned(),
                column_qualifier: qualifier.as_bytes().to_vec(),
                time_range: None,
            },
        )),
    }
}

fn set_cell(family: &str, qualifier: &str, timestamp_micros: i64, value: Vec<u8>) -> Mutation {
    Mutation {
        mutation: Some(mutation::Mutation::SetCell(mutation::SetCell {
            family_name: family.to_owned(),
            column_qualifier: qualifier.as_bytes().to_vec(),
            timestamp_micros,
            value,
        })),
    }
}

/// The mutation that deletes a whole row.
#[must_use]
pub fn delete_row() -> Mutation {
    Mutation {
        mutation: Some(mutation::Mutation::DeleteFromRow(
            mutation::DeleteFromRow {},
        )),
    }
}
