//! What the typed layer builds, as the raw layer's messages: the one place
//! a [`RowMutation`]'s Bigtable v2 mutations are handed out, so that the
//! typed API's signatures name none of Bigtable's generated types.

use crate::model::mutation::RowMutation;
use crate::model::proto::{mutate_rows_request::Entry, Mutation};

/// The mutations of `write`, in order, as Bigtable's v2 messages.
///
/// ```
/// use bigtable_ttl::{data, BigtableRow};
/// use chrono::{TimeZone, Utc};
///
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
/// let write = Click { id: "c1".into(), url: "/home".into() }.mutation().build(now).unwrap();
/// assert!(!data::mutations_of(&write).is_empty());
/// let entry = data::into_entry(write);
/// assert_eq!(entry.row_key, b"c1");
/// ```
#[must_use]
pub fn mutations_of(write: &RowMutation) -> &[Mutation] {
    &write.mutations
}

/// `write` as one entry of a `MutateRows` request
/// ([`crate::data::RawTable::mutate_rows`]): its row key and mutations.
#[must_use]
pub fn into_entry(write: RowMutation) -> Entry {
    Entry {
        row_key: write.row_key,
        mutations: write.mutations,
        ..Entry::default()
    }
}
