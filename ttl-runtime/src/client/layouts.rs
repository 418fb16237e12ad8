//! The structs a [`Connection`](crate::Connection) has opened a
//! [`Table`](crate::Table) for, by table: where two of one table would
//! write the same cells ([`crate::model::layout`]), both are refused.
//!
//! Each handle holds its [`Registration`]; the connection holds them
//! weakly, so a handle dropped (or renamed with `Table::with_name`) stops
//! counting. A clash found when a struct registers marks every live
//! registration involved, and every operation through them fails with
//! [`Error::Layout`] before anything is sent.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};

use crate::model::clash::LayoutClash;
use crate::model::error::{Error, Result};
use crate::model::layout::clash;
use crate::model::schema::{Schema, ROW_MARKER_PREFIX};

/// The structs opened on one connection, by table name.
#[derive(Debug, Default)]
pub(crate) struct Layouts {
    tables: Mutex<HashMap<String, Vec<Weak<Registration>>>>,
    /// What reads through this connection have warned of, each once: a
    /// struct's rows under another struct's marker
    /// ([`crate::model::other_marker`]), by table, reader's marker and the
    /// other marker's name.
    warned: Mutex<Vec<Warned>>,
}

/// A warning logged: the table, the reader's marker, the other marker's
/// name.
type Warned = (String, &'static [u8], Box<[u8]>);

/// One struct opened on one table: what a handle checks before each call.
#[derive(Debug)]
pub(crate) struct Registration {
    type_name: &'static str,
    schema: &'static Schema,
    clash: OnceLock<Box<LayoutClash>>,
}

impl Registration {
    /// `Err(Error::Layout)` when the struct clashes with another opened on
    /// the same table through the same connection.
    #[inline]
    pub(crate) fn check(&self) -> Result<()> {
        match self.clash.get() {
            None => Ok(()),
            Some(clash) => Err(Error::Layout {
                clash: clash.clone(),
            }),
        }
    }
}

impl Layouts {
    /// Register struct `type_name` of `schema` on `table`, and mark it and
    /// every live struct of that table it clashes with.
    pub(crate) fn register(
        &self,
        table: &str,
        type_name: &'static str,
        schema: &'static Schema,
    ) -> Arc<Registration> {
        let new = Arc::new(Registration {
            type_name,
            schema,
            clash: OnceLock::new(),
        });
        let mut tables = self.tables.lock().unwrap_or_else(PoisonError::into_inner);
        let entries = tables.entry(table.to_owned()).or_default();
        entries.retain(|weak| weak.strong_count() > 0);
        for old in entries.iter().filter_map(Weak::upgrade) {
            if old.type_name == type_name {
                continue;
            }
            if let Some(found) = clash(table, (type_name, schema), (old.type_name, old.schema)) {
                let found = Box::new(found);
                // The first clash of each is the one it reports.
                let _ = old.clash.set(found.clone());
                let _ = new.clash.set(found);
            }
        }
        entries.push(Arc::downgrade(&new));
        new
    }

    /// Whether a struct with a live handle on `table` through this
    /// connection writes the row marker named `name` (the qualifier without
    /// its prefix) in `family`.
    pub(crate) fn knows_marker(&self, table: &str, family: &str, name: &[u8]) -> bool {
        let tables = self.tables.lock().unwrap_or_else(PoisonError::into_inner);
        tables.get(table).is_some_and(|entries| {
            entries.iter().filter_map(Weak::upgrade).any(|r| {
                r.schema.marker.strip_prefix(ROW_MARKER_PREFIX) == Some(name)
                    && r.schema.marker_family() == family
            })
        })
    }

    /// Whether the reader of `table` with marker `own` meets the marker
    /// named `other` for the first time on this connection: `false` once it
    /// has, so that its warning is logged once.
    pub(crate) fn first_warning(&self, table: &str, own: &'static [u8], other: &[u8]) -> bool {
        let mut warned = self.warned.lock().unwrap_or_else(PoisonError::into_inner);
        if warned
            .iter()
            .any(|(t, o, m)| t == table && *o == own && **m == *other)
        {
            return false;
        }
        warned.push((table.to_owned(), own, other.into()));
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::policy::Policy;

    const fn schema(marker: &'static [u8]) -> Schema {
        Schema {
            table: "t",
            policy: Policy::CellExpiry,
            families: &["f"],
            owns_family: false,
            columns: &[],
            maps: &[],
            written_at: None,
            marker,
            key_fields: &["id"],
            key_separator: "",
        }
    }
    static ITEM: Schema = schema(b"\0\0Item");
    static OTHER: Schema = schema(b"\0\0Other");

    #[test]
    fn two_structs_with_one_marker_on_one_table_are_both_refused() {
        let layouts = Layouts::default();
        let a = layouts.register("t", "a::Item", &ITEM);
        let same_struct_again = layouts.register("t", "a::Item", &ITEM);
        let other_table = layouts.register("u", "b::Item", &ITEM);
        let fine = layouts.register("t", "c::Other", &OTHER);
        assert!(a.check().is_ok() && same_struct_again.check().is_ok());
        assert!(other_table.check().is_ok() && fine.check().is_ok());
        let b = layouts.register("t", "b::Item", &ITEM);
        for refused in [&a, &same_struct_again, &b] {
            let err = refused.check().unwrap_err();
            assert!(matches!(err, Error::Layout { .. }), "{err}");
            assert!(err.to_string().contains("a::Item"), "{err}");
            assert!(err.to_string().contains("b::Item"), "{err}");
        }
        assert!(fine.check().is_ok());
    }

    #[test]
    fn a_handle_dropped_no_longer_counts() {
        let layouts = Layouts::default();
        drop(layouts.register("t", "a::Item", &ITEM));
        assert!(layouts.register("t", "b::Item", &ITEM).check().is_ok());
    }
}
