//! Map fields on a [`Table`]: one entry written with its own expiry
//! (`put_entry`, Redis's `HSET` + `HEXPIRE`), removed (`remove_entry`), and
//! the live entries read with their expiries (`entries`, Redis's `HTTL`).

use futures_util::TryStreamExt as _;

use crate::client::table::conditional::Checked;
use crate::client::table::{Table, Written};
use crate::client::telemetry;
use crate::model::codec::CellCodec;
use crate::model::condition::{another_structs_row, live_row};
use crate::model::error::{self, Error, Result};
use crate::model::key::{AsKey, KeyPart};
use crate::model::liveness::Verdict;
use crate::model::map::{MapEntry, MapField};
use crate::model::mutation::{delete_column, set_cell, set_cell_owned, RowMutation};
use crate::model::policy::{from_micros, millis_floor, Expiry, Policy};
use crate::model::row::BigtableRow;
use crate::model::scan::Scan;
use crate::model::view::{decode_entry, RowView};
use crate::model::writer::another_structs_row_error;
use crate::wire::merge::{Cell, MergedRow};

impl<T: BigtableRow> Table<T> {
    /// Write one entry of map field `map` in the row with key `key`, with
    /// its own expiry, leaving the other entries and the row's columns as
    /// they are (Redis's `HSET` then `HEXPIRE` on one field; Cassandra's
    /// `UPDATE … USING TTL` of one map element). An entry with the same key
    /// is replaced, value and expiry.
    ///
    /// `expiry` is the entry's own: `Expiry::Ttl`, `Expiry::At`, or, under a
    /// default TTL, `Expiry::PolicyDefault`. When the struct has a required
    /// field, the row's expiry bounds every entry: once the row's columns
    /// have expired, its entries are no longer read, whatever their own
    /// expiry.
    ///
    /// When the struct has a required field, an entry is written only into
    /// a live row (conditionally, in one `CheckAndMutateRow`): a row made of
    /// entries alone could not be read back. `None` then means no live row
    /// was there and nothing was written. A struct whose fields are all
    /// optional or maps creates the row.
    ///
    /// ```no_run
    /// # use std::collections::BTreeMap;
    /// # use bigtable_ttl::{BigtableRow, Expiry, Table};
    /// # use chrono::TimeDelta;
    /// #[derive(BigtableRow)]
    /// #[bigtable(table = "carts", family = "c")]
    /// #[ttl(default = "30d")]
    /// struct Cart {
    ///     #[bigtable(key)]
    ///     user: String,
    ///     currency: String,
    ///     /// Item id → quantity, each reserved for its own time.
    ///     #[bigtable(map, family = "items")]
    ///     items: BTreeMap<String, u64>,
    /// }
    /// # async fn run(carts: Table<Cart>) -> bigtable_ttl::Result<()> {
    /// let reserved = carts
    ///     .put_entry(&"ann".to_owned(), Cart::ITEMS, &"sku-1".to_owned(), &2, Expiry::Ttl(TimeDelta::minutes(15)))
    ///     .await?;
    /// if let Some(w) = reserved {
    ///     println!("held until {}", w.expires_at);
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// Before anything is sent: [`Error::Encode`], [`Error::ValueTooLarge`]
    /// (an entry key over Bigtable's 16 KiB qualifier limit or a value over
    /// its cell limit), [`Error::MissingExpiry`] for `Expiry::PolicyDefault`
    /// under one-second expiration, what the policy rejects
    /// ([`Error::ExpiryNotInFuture`], [`Error::NonPositiveTtl`]), key
    /// errors. [`Error::Server`]; [`Error::OutcomeUnknown`] when the
    /// conditional write's answer was lost and the entry is not there.
    pub async fn put_entry<Q: ?Sized + AsKey<T::Key>, K: KeyPart, V: CellCodec>(
        &self,
        key: &Q,
        map: MapField<T, K, V>,
        entry_key: &K,
        value: &V,
        expiry: Expiry,
    ) -> Result<Option<Written>> {
        telemetry::operation(
            self.name(),
            "put_entry",
            |w| u64::from(w.is_some()),
            async move {
                let row_key = self.row_key(key)?;
                let (qualifier, value) = map.encode_entry(entry_key, value)?;
                let policy = T::SCHEMA.policy;
                if expiry == Expiry::PolicyDefault && policy == Policy::CellExpiry {
                    return Err(Error::from(error::MissingExpiry {
                        table: Some(self.name().to_owned()),
                    }));
                }
                let now = self.clock().now();
                let ts = policy.cell_timestamp(now, expiry)?;
                let family = map.family();
                let m = RowMutation {
                    row_key,
                    mutations: vec![
                        delete_column(family, &qualifier),
                        set_cell_owned(family, qualifier, ts, value),
                    ],
                    timestamp_micros: ts,
                    expires_at: policy.expiry_of(ts)?,
                };
                let written = Written::new(&m, from_micros(millis_floor(now)?)?);
                // The write and the read that settles a lost answer, within
                // one deadline.
                let this = self.for_write_call();
                let checked = if T::SCHEMA.all_fields_optional() {
                    // An entry makes a row of options, on its own; where
                    // the row carries another struct's marker and not this
                    // struct's (a vertical split), an entry alone would not
                    // make it this struct's row: its marker goes with it,
                    // at the entry's timestamp.
                    let mut marked = m.mutations.clone();
                    marked.push(set_cell(
                        T::SCHEMA.marker_family(),
                        T::SCHEMA.marker,
                        ts,
                        T::SCHEMA.marker_fingerprint(),
                    ));
                    let predicate = another_structs_row(T::SCHEMA, now);
                    this.check_and_mutate(&m.row_key, predicate, marked, m.mutations.clone())
                        .await?
                } else {
                    let (cut, horizon) = this.horizon(now);
                    let predicate = live_row(T::SCHEMA, horizon);
                    cut.check_and_mutate(&m.row_key, predicate, m.mutations.clone(), Vec::new())
                        .await?
                };
                match checked {
                    Checked::Answered(_) if T::SCHEMA.all_fields_optional() => Ok(Some(written)),
                    Checked::Answered(true) => Ok(Some(written)),
                    Checked::Answered(false) => Ok(None),
                    // Not re-sent: the entry may have been written and then
                    // removed or replaced by another writer since.
                    Checked::Unknown(status) => {
                        if this.settle(&m, &status).await? {
                            Ok(Some(written))
                        } else {
                            Err(self.outcome_unknown(m.row_key, status))
                        }
                    }
                }
            },
        )
        .await
    }

    /// Remove the entry `entry_key` of map field `map` from the row with key
    /// `key` (Redis's `HDEL`); nothing happens when there is none.
    ///
    /// # Errors
    /// Key errors, [`Error::Encode`] / [`Error::ValueTooLarge`] for the
    /// entry key, [`Error::Server`].
    pub async fn remove_entry<Q: ?Sized + AsKey<T::Key>, K: KeyPart, V>(
        &self,
        key: &Q,
        map: MapField<T, K, V>,
        entry_key: &K,
    ) -> Result<()>
    where
        V: CellCodec,
    {
        telemetry::operation(self.name(), "remove_entry", |()| 1, async move {
            let row_key = self.row_key(key)?;
            let qualifier = map.encode_key(entry_key)?;
            self.mutate_row(row_key, vec![delete_column(map.family(), &qualifier)])
                .await
        })
        .await
    }

    /// The live entries of map field `map` in the row with key `key`, in
    /// the order of their encoded keys, each with its expiry (Redis's
    /// `HTTL` for every field): its own, or the row's when that is sooner
    /// and the row bounds its entries (see [`Table::put_entry`]). Empty when the row does not exist or has
    /// expired.
    ///
    /// # Errors
    /// [`Error::Decode`] for an entry that does not decode (naming its
    /// family and key), key errors, [`Error::Server`].
    pub async fn entries<Q: ?Sized + AsKey<T::Key>, K: KeyPart, V: CellCodec>(
        &self,
        key: &Q,
        map: MapField<T, K, V>,
    ) -> Result<Vec<MapEntry<K, V>>> {
        telemetry::operation(self.name(), "entries", |_| 1, async move {
            let row_key = self.row_key(key)?;
            let now = self.clock().now();
            let request = self.read_request(
                Scan::keys([row_key.as_slice()]).limit(1),
                Some(self.row_filter(now)),
            );
            let rows: Vec<MergedRow> = self.raw_stream(request).try_collect().await?;
            let Some((row_key, cells)) = rows.into_iter().next() else {
                return Ok(Vec::new());
            };
            let mut view = RowView::empty(T::SCHEMA, &row_key);
            let verdict = view
                .reduce(
                    T::SCHEMA,
                    T::column_of,
                    cells.iter().map(Cell::as_cell_ref),
                    now,
                )
                .map_err(|e| e.in_table(self.name()))?;
            if verdict == Verdict::WrittenByAnotherStruct {
                return Err(another_structs_row_error(T::SCHEMA, &row_key).in_table(self.name()));
            }
            if verdict.row_ts().is_none() {
                // Entries are read only while their row is live.
                return Ok(Vec::new());
            }
            let policy = T::SCHEMA.policy;
            let bounded = !T::SCHEMA.all_fields_optional();
            let row_expires = view.expires_at();
            view.entries(map.index())
                .iter()
                .map(|e| {
                    let (key, value) = decode_entry(e.qualifier, e.value).map_err(|source| {
                        Error::from(error::Decode {
                            table: self.name().to_owned(),
                            row_key: row_key.to_vec(),
                            column: format!("{}:{}", map.family(), e.qualifier.escape_ascii()),
                            source,
                        })
                    })?;
                    let own = policy.expiry_of(e.timestamp_micros)?;
                    Ok(MapEntry {
                        key,
                        value,
                        // Where the row bounds its entries, none is read
                        // past the row's expiry.
                        expires_at: if bounded { own.min(row_expires) } else { own },
                    })
                })
                .collect()
        })
        .await
    }
}
