//! What the typed layer builds, as the raw layer's types: the one place a
//! [`RowMutation`]'s mutations are handed out.

use crate::client::data::mutation::Mutation;
use crate::model::mutation::RowMutation;

/// The mutations of `write`, in order, as the raw layer's [`Mutation`]s
/// (to inspect them, or to send them with
/// [`RawTable::mutate_row`](crate::data::RawTable::mutate_row);
/// [`Entry::from`](crate::data::Entry) makes a whole `MutateRows` entry).
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
/// let sets = data::mutations_of(&write)
///     .into_iter()
///     .filter(|m| matches!(m, data::Mutation::SetCell { .. }))
///     .count();
/// assert!(sets > 0);
/// ```
#[must_use]
pub fn mutations_of(write: &RowMutation) -> Vec<Mutation> {
    // The typed layer writes only cells and deletes, each of which the
    // raw layer's type holds (`mutation.rs` tests every kind).
    write
        .mutations
        .iter()
        .cloned()
        .filter_map(Mutation::from_wire)
        .collect()
}
