//! Map fields (`#[bigtable(map)]`): one cell per entry, each with its own
//! expiry, in a family of the map's own. The typed handle
//! ([`MapField`]) the derive generates per map field, an entry read back
//! with its expiry ([`MapEntry`]), and the encoding of one entry.

use std::marker::PhantomData;

use chrono::{DateTime, TimeDelta, Utc};

use crate::model::codec::CellCodec;
use crate::model::error::{self, Error, Result};
use crate::model::key::KeyPart;
use crate::model::limits::{MAX_CELL_BYTES, MAX_QUALIFIER_BYTES};
use crate::model::row::BigtableRow;
use crate::model::schema::MapColumn;

/// A typed handle on one map field of `T`, with keys `K` and values `V`:
/// what `Table::put_entry`, `Table::remove_entry` and `Table::entries`
/// take. `#[derive(BigtableRow)]` generates one per map field as an
/// associated const named after it (`Session::TAGS` for `tags`).
///
/// ```
/// use std::collections::BTreeMap;
/// use bigtable_ttl::BigtableRow;
///
/// #[derive(BigtableRow)]
/// #[bigtable(table = "sessions", family = "s")]
/// #[ttl(default = "7d")]
/// struct Session {
///     #[bigtable(key)]
///     id: String,
///     #[bigtable(map, family = "tags")]
///     tags: BTreeMap<String, String>,
/// }
///
/// assert_eq!(Session::TAGS.name(), "tags");
/// assert_eq!(Session::TAGS.family(), "tags");
/// ```
pub struct MapField<T, K, V> {
    map: usize,
    types: PhantomData<Types<T, K, V>>,
}

/// The handle's types, without owning any (always `Send`, `Sync`, `Copy`).
type Types<T, K, V> = fn() -> (T, K, V);

impl<T, K, V> Clone for MapField<T, K, V> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T, K, V> Copy for MapField<T, K, V> {}

impl<T, K, V> std::fmt::Debug for MapField<T, K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MapField").field("map", &self.map).finish()
    }
}

impl<T, K, V> MapField<T, K, V> {
    /// Map `map` of `T::SCHEMA.maps`; what the derive calls.
    #[doc(hidden)]
    #[must_use]
    pub const fn new(map: usize) -> Self {
        Self {
            map,
            types: PhantomData,
        }
    }

    /// Its index in `T::SCHEMA.maps`.
    pub(crate) fn index(self) -> usize {
        self.map
    }
}

impl<T: BigtableRow, K, V> MapField<T, K, V> {
    fn column(self) -> &'static MapColumn {
        &T::SCHEMA.maps[self.map]
    }

    /// The field's name.
    #[must_use]
    pub fn name(self) -> &'static str {
        self.column().field
    }

    /// The column family holding its entries.
    #[must_use]
    pub fn family(self) -> &'static str {
        self.column().family
    }
}

impl<T: BigtableRow, K: KeyPart, V: CellCodec> MapField<T, K, V> {
    /// The qualifier and cell value of entry `key` → `value`.
    ///
    /// # Errors
    /// [`Error::Encode`] when either does not encode, [`Error::ValueTooLarge`]
    /// over Bigtable's qualifier or cell limit.
    pub(crate) fn encode_entry(self, key: &K, value: &V) -> Result<(Vec<u8>, Vec<u8>)> {
        let qualifier = self.encode_key(key)?;
        let value = value.encode().map_err(|source| {
            Error::from(error::Encode {
                field: self.name(),
                source,
            })
        })?;
        if value.len() > MAX_CELL_BYTES {
            return Err(Error::from(error::ValueTooLarge {
                field: self.name(),
                len: value.len(),
                max: MAX_CELL_BYTES,
            }));
        }
        Ok((qualifier, value))
    }

    /// The qualifier of entry `key`.
    ///
    /// # Errors
    /// As [`MapField::encode_entry`].
    pub(crate) fn encode_key(self, key: &K) -> Result<Vec<u8>> {
        let qualifier = key.to_key().map_err(|source| {
            Error::from(error::Encode {
                field: self.name(),
                source,
            })
        })?;
        check_qualifier(self.name(), &qualifier)?;
        Ok(qualifier)
    }
}

/// Refuse an entry key Bigtable would refuse as a qualifier.
pub(crate) fn check_qualifier(field: &'static str, qualifier: &[u8]) -> Result<()> {
    if qualifier.len() > MAX_QUALIFIER_BYTES {
        return Err(Error::from(error::ValueTooLarge {
            field,
            len: qualifier.len(),
            max: MAX_QUALIFIER_BYTES,
        }));
    }
    Ok(())
}

/// One live entry of a map field, with its expiry (Redis's `HTTL`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapEntry<K, V> {
    /// The entry's key.
    pub key: K,
    /// Its value.
    pub value: V,
    /// When it expires.
    pub expires_at: DateTime<Utc>,
}

impl<K, V> MapEntry<K, V> {
    /// Time left before the entry expires, as seen at `now` (zero once expired).
    #[must_use]
    pub fn time_left(&self, now: DateTime<Utc>) -> TimeDelta {
        (self.expires_at - now).max(TimeDelta::zero())
    }
}
