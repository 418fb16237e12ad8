//! Partial updates of one row ([`Table::update`], [`Update`]): the row is
//! read, the change planned (`crate::model::update`) and written
//! conditionally on the row still holding what was read.

use chrono::{DateTime, TimeDelta, Utc};

use crate::client::table::retime::Round;
use crate::client::table::{Table, Written};
use crate::client::telemetry;
use crate::model::codec::CellCodec;
use crate::model::condition::{Field, Pin};
use crate::model::error::{self, Error, Result};
use crate::model::key::AsKey;
use crate::model::mutation::RowMutation;
use crate::model::policy::{from_micros, millis_floor};
use crate::model::retime::Retime;
use crate::model::row::BigtableRow;
use crate::model::row_cells::RowCells;
use crate::model::update::{update_row, Change};

/// A partial update of one row, built by [`Table::update`]: typed setters
/// for some of its fields, then [`Update::apply`].
#[must_use = "an update does nothing until `apply` is awaited"]
pub struct Update<'t, T: BigtableRow> {
    table: &'t Table<T>,
    row_key: Result<Vec<u8>>,
    changes: Vec<Change>,
    /// The first value that did not encode, reported by `apply`.
    bad_value: Option<Error>,
    retime: Option<Retime>,
}

impl<T: BigtableRow> std::fmt::Debug for Update<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Update")
            .field("table", &self.table.name())
            .field("changes", &self.changes)
            .field("retime", &self.retime)
            .finish_non_exhaustive()
    }
}

impl<T: BigtableRow> Update<'_, T> {
    /// Set `field` to `value` (through the field's codec).
    pub fn set<V: CellCodec>(mut self, field: Field<T, V>, value: &V) -> Self {
        match value.encode() {
            Ok(value) => self.changes.push(Change::Set {
                column: field.index(),
                value,
            }),
            Err(source) => {
                self.bad_value.get_or_insert_with(|| {
                    Error::from(error::Encode {
                        field: field.name(),
                        source,
                    })
                });
            }
        }
        self
    }

    /// Delete `field`'s column: an `Option` field reads as `None`, a
    /// `#[bigtable(default)]` one as its default. Only for those fields
    /// ([`Error::RequiredField`] otherwise, from `apply`).
    pub fn clear<V>(mut self, field: Field<T, V>) -> Self {
        self.changes.push(Change::Clear {
            column: field.index(),
        });
        self
    }

    /// Re-time the whole row to live `ttl` from now, in the same step.
    pub fn ttl(mut self, ttl: TimeDelta) -> Self {
        self.retime = Some(Retime::Ttl(ttl));
        self
    }

    /// Re-time the whole row to expire at `at`, in the same step.
    pub fn expire_at(mut self, at: DateTime<Utc>) -> Self {
        self.retime = Some(Retime::At(at));
        self
    }

    /// Read the row and write the changes, conditional on the row still
    /// holding what was read (re-read and tried again when another write
    /// came in between, at most
    /// [`RETIME_ROUNDS`](crate::retry::RETIME_ROUNDS) times). What was
    /// written, or `None` when the row does not exist or has expired (it is
    /// not revived). A write whose answer is lost is never sent again: the
    /// row is read, and unless it holds the written cells the call ends
    /// with [`Error::OutcomeUnknown`].
    ///
    /// # Errors
    /// Before anything is sent: key errors, [`Error::Encode`],
    /// [`Error::ValueTooLarge`], [`Error::RequiredField`], what the policy
    /// rejects for `.ttl()` / `.expire_at()`. [`Error::Server`];
    /// [`Error::Conflict`] when other writes kept changing the row;
    /// [`Error::OutcomeUnknown`].
    pub async fn apply(self) -> Result<Option<Written>> {
        telemetry::operation(
            self.table.name(),
            "update",
            |w| u64::from(w.is_some()),
            async move {
                let row_key = self.row_key?;
                if let Some(e) = self.bad_value {
                    return Err(e);
                }
                // Refused whatever the row holds, as the derive already
                // knows: not only once a read finds the row live.
                let schema = T::SCHEMA;
                for change in &self.changes {
                    if let Change::Clear { column } = change {
                        let column = &schema.columns[*column];
                        if !column.can_be_cleared() {
                            return Err(Error::from(error::RequiredField {
                                table: self.table.name().to_owned(),
                                field: column.field,
                            }));
                        }
                    }
                }
                let table = self.table;
                // A re-time copies every value: they must be as read. Setting
                // columns at the row's timestamp needs only the row's
                // liveness as read (a counter incremented meanwhile, another
                // field updated, do not conflict).
                let pin = if self.retime.is_some() {
                    Pin::Everything
                } else {
                    Pin::Liveness
                };
                let plan = |row: &RowCells<'_>, now| {
                    let m = update_row(row, &row_key, now, &self.changes, self.retime)
                        .map_err(|e| e.in_table(table.name()))?;
                    Ok(m.map_or(Round::Done(None), |m| Round::Write(m, pin, ())))
                };
                let applied = |m: RowMutation, (), now| {
                    Ok(Some(Written::new(&m, from_micros(millis_floor(now)?)?)))
                };
                table.rewrite_unchanged(&row_key, plan, applied).await
            },
        )
        .await
    }
}

impl<T: BigtableRow> Table<T> {
    /// A partial update of the row with key `key`: set some fields, clear
    /// `Option` and `#[bigtable(default)]` ones, keep the row's expiry (or re-time it with `.ttl()` /
    /// `.expire_at()`), in one atomic conditional write.
    ///
    /// ```no_run
    /// # use bigtable_ttl::{BigtableRow, Table};
    /// #[derive(BigtableRow)]
    /// #[bigtable(table = "profiles", family = "p")]
    /// #[ttl(default = "30d", written_at)]
    /// struct Profile {
    ///     #[bigtable(key)]
    ///     id: String,
    ///     name: String,
    ///     status: Option<String>,
    /// }
    /// # async fn run(profiles: Table<Profile>) -> bigtable_ttl::Result<()> {
    /// let key = "u1".to_owned();
    /// let updated = profiles
    ///     .update(&key)
    ///     .set(Profile::NAME, &"Ann".to_owned())
    ///     .clear(Profile::STATUS)
    ///     .apply()
    ///     .await?;
    /// match updated {
    ///     Some(w) => println!("still expires at {}", w.expires_at),
    ///     None => println!("no live row: nothing written"),
    /// }
    /// # Ok(()) }
    /// ```
    pub fn update<'t, Q: ?Sized + AsKey<T::Key>>(&'t self, key: &Q) -> Update<'t, T> {
        Update {
            table: self,
            row_key: self.row_key(key),
            changes: Vec::new(),
            bad_value: None,
            retime: None,
        }
    }
}
