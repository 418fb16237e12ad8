//! `update().clear()` on a `#[bigtable(default)]` field: its column is
//! deleted, as an `Option` field's is, so the row reads the default; a
//! field that is neither stays `Error::RequiredField`. The pure core
//! (the update planner, behind the hidden `__private` door), no server; `tests/it/evolve.rs` (workspace root)
//! shows the same on the emulator.

use bigtable_ttl_runtime::__private::update_mutation;
use bigtable_ttl_runtime::data::Cell;
use bigtable_ttl_runtime::data::{mutations_of, Mutation};
use bigtable_ttl_runtime::ops::Change;
use bigtable_ttl_runtime::{Column, Error, Policy, Schema, WhenAbsent};
use chrono::{DateTime, TimeDelta, Utc};

const fn column(qualifier: &'static str, when_absent: WhenAbsent) -> Column {
    Column {
        field: qualifier,
        family: "p",
        qualifier,
        ttl: None,
        when_absent,
    }
}

static SCHEMA: Schema = Schema {
    table: "profiles",
    policy: Policy::DefaultTtl {
        ttl: TimeDelta::days(2),
    },
    families: &["p"],
    owns_family: false,
    columns: &[
        column("name", WhenAbsent::Required),
        column("status", WhenAbsent::ReadsNone),
        column("visits", WhenAbsent::ReadsDefault),
    ],
    maps: &[],
    written_at: None,
    marker: b"\0\0Row",
    key_fields: &["id"],
    key_separator: "",
};

fn now() -> DateTime<Utc> {
    DateTime::from_timestamp_millis(1_700_000_000_000).unwrap()
}

fn cells() -> Vec<Cell> {
    let ts = now().timestamp_micros();
    ["name", "status", "visits"]
        .into_iter()
        .map(|q| Cell::new("p", q.as_bytes(), ts, b"x".to_vec()))
        .collect()
}

fn clear(column: usize) -> Result<Vec<Mutation>, Error> {
    let m = update_mutation(
        &SCHEMA,
        b"u1",
        &cells(),
        now(),
        &[Change::Clear { column }],
        None,
    )?;
    Ok(mutations_of(&m.expect("a live row")))
}

/// The qualifiers whose columns the mutations delete.
fn deleted(mutations: &[Mutation]) -> Vec<String> {
    mutations
        .iter()
        .filter_map(|m| match m {
            Mutation::DeleteFromColumn { qualifier, .. } => {
                Some(String::from_utf8_lossy(qualifier).into_owned())
            }
            _ => None,
        })
        .collect()
}

#[test]
fn a_default_field_is_cleared_like_an_option() {
    assert_eq!(deleted(&clear(2).unwrap()), ["visits"]);
    assert_eq!(deleted(&clear(1).unwrap()), ["status"]);
}

#[test]
fn a_field_with_neither_stays_required() {
    let err = clear(0).unwrap_err();
    assert!(
        matches!(&err, Error::RequiredField(e) if e.field == "name"),
        "{err}"
    );
}
