//! Partial updates, planned: the mutation that sets some fields of a live
//! row, or clears its `Option` and `#[bigtable(default)]` ones, keeping its
//! expiry (Redis's `SET … KEEPTTL`) or re-timing the whole row in the same
//! step, from the row's cells. Pure; `Table::update` reads the cells and
//! writes conditionally on the row still holding them
//! (`crate::client::table::update`).

use chrono::{DateTime, Utc};

use crate::model::cell::Cell;
use crate::model::codec::CellCodec;
use crate::model::error::{self, Error, Result};
use crate::model::limits::MAX_CELL_BYTES;
use crate::model::mutation::{delete_column, push_marker, set_cell, RowMutation};
use crate::model::policy::{from_micros, millis_floor, Expiry};
use crate::model::retime::{retime_mutation, Retime};
use crate::model::row_cells::RowCells;
#[cfg(test)]
use crate::model::schema::Schema;
use crate::model::writer::another_structs_row_error;

/// One change of a partial update.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Change {
    /// Set column `column` (an index of `Schema::columns`) to these bytes.
    Set {
        /// The column's index.
        column: usize,
        /// Its new value, encoded.
        value: Vec<u8>,
    },
    /// Delete column `column` (an `Option` or `#[bigtable(default)]` field's).
    Clear {
        /// The column's index.
        column: usize,
    },
}

/// The mutation that applies `changes` to the row `row` (its cells as
/// stored, judged at `now`: only those visible count), at `now`. With
/// `retime`, the whole row is re-timed to that expiry in the same mutation
/// (as `retime_mutation`); without, every cell written keeps the row's
/// current expiry, a column with its own TTL gets that TTL from now (never
/// past the row's expiry). The shadow column, when declared, gets `now`.
///
/// `None` when the row is not live at `now` ([`crate::liveness`]):
/// an update never revives a row.
///
/// # Errors
/// [`Error::RequiredField`] for clearing a field that is neither an `Option`
/// nor `#[bigtable(default)]`;
/// [`Error::ValueTooLarge`]; what the policy rejects for `retime`
/// ([`Error::ExpiryNotInFuture`], [`Error::NonPositiveTtl`], …).
///
/// A planner, not an operation: `Table::update` is the way in.
pub(crate) fn update_row(
    row: &RowCells<'_>,
    row_key: &[u8],
    now: DateTime<Utc>,
    changes: &[Change],
    retime: Option<Retime>,
) -> Result<Option<RowMutation>> {
    let schema = row.schema();
    let policy = schema.policy;
    if row.written_by_another_struct() {
        return Err(another_structs_row_error(schema, row_key));
    }
    let Some(row_ts) = row.verdict().row_ts() else {
        return Ok(None);
    };
    let Planned {
        mut next,
        written,
        cleared,
    } = planned(row, now, row_ts, changes, retime.is_some())?;

    // A row of `Option`s and defaults without its marker (written by
    // another program, or before per-struct markers) lives by its columns:
    // clearing the last of them would leave no row, where the answer says
    // one is there. The marker keeps it, as a put of such a value does.
    let add_marker = schema.marker_makes_row() && !row.marked();
    if add_marker {
        next.push(Cell {
            family: schema.marker_family().to_owned(),
            qualifier: schema.marker.to_vec(),
            value: schema.marker_fingerprint(),
            timestamp_micros: row_ts,
        });
    }
    // What a read right after would see: the answer must be that row. Its
    // expiry may be earlier than the row's before: a row of options lives
    // until its newest cell, and the update may clear it. Clearing the last
    // column of a row whose marker another struct of the name wrote would
    // leave that struct's row: refused as leaving none of this one's.
    let Some(after_ts) = RowCells::of(schema, &next, now).verdict().row_ts() else {
        return Err(Error::from(error::UpdateLeavesNoRow {
            table: schema.table.to_owned(),
            row_key: row_key.to_vec(),
        }));
    };
    let mut m = if let Some(how) = retime {
        // Every live cell (the new values among them) at the new expiry.
        let Some(m) = retime_mutation(schema, row_key, &next, now, how)? else {
            return Ok(None);
        };
        m
    } else {
        let mut mutations = Vec::with_capacity(2 * written.len() + cleared.len());
        for cell in next.iter().filter(|c| {
            written
                .iter()
                .any(|&(f, q)| c.family == f && c.qualifier == q)
        }) {
            mutations.push(delete_column(&cell.family, &cell.qualifier));
            mutations.push(set_cell(
                &cell.family,
                &cell.qualifier,
                cell.timestamp_micros,
                cell.value.clone(),
            ));
        }
        if add_marker {
            push_marker(&mut mutations, schema, row_ts, row_ts);
        }
        RowMutation {
            row_key: row_key.to_vec(),
            mutations,
            timestamp_micros: after_ts,
            expires_at: policy.expiry_of(after_ts)?,
        }
    };
    for (family, qualifier) in cleared {
        m.mutations.push(delete_column(family, qualifier));
    }
    Ok(Some(m))
}

/// `update_row` of the row whose cells are `cells`, judged at `now`.
#[cfg(test)]
fn update_mutation(
    schema: &Schema,
    row_key: &[u8],
    cells: &[Cell],
    now: DateTime<Utc>,
    changes: &[Change],
    retime: Option<Retime>,
) -> Result<Option<RowMutation>> {
    update_row(
        &RowCells::of(schema, cells, now),
        row_key,
        now,
        changes,
        retime,
    )
}

/// The row's own cells after an update's changes (and the shadow column's
/// new write time), and which columns it writes and which it clears.
struct Planned<'s> {
    next: Vec<Cell>,
    written: Vec<(&'s str, &'s [u8])>,
    cleared: Vec<(&'s str, &'s [u8])>,
}

/// [`Planned`] for `changes` on `row`, whose timestamp is `row_ts`, at
/// `now`; `retimed` when the row is re-timed in the same write.
fn planned<'s>(
    row: &RowCells<'s>,
    now: DateTime<Utc>,
    row_ts: i64,
    changes: &[Change],
    retimed: bool,
) -> Result<Planned<'s>> {
    let schema = row.schema();
    let policy = schema.policy;
    let mut next: Vec<Cell> = row.newest.values().map(|c| (*c).clone()).collect();
    let mut cleared = Vec::new();
    let mut written = Vec::new();
    for change in changes {
        let (column_index, value) = match change {
            Change::Set { column, value } => (*column, Some(value)),
            Change::Clear { column } => (*column, None),
        };
        let column = &schema.columns[column_index];
        let qualifier = column.qualifier.as_bytes();
        next.retain(|c| !(c.family == column.family && c.qualifier == qualifier));
        written.retain(|&(f, q)| !(f == column.family && q == qualifier));
        cleared.retain(|&(f, q)| !(f == column.family && q == qualifier));
        let Some(value) = value else {
            if !column.can_be_cleared() {
                return Err(Error::from(error::RequiredField {
                    table: schema.table.to_owned(),
                    field: column.field,
                }));
            }
            cleared.push((column.family, qualifier));
            continue;
        };
        if value.len() > MAX_CELL_BYTES {
            return Err(Error::from(error::ValueTooLarge {
                field: column.field,
                len: value.len(),
                max: MAX_CELL_BYTES,
            }));
        }
        let ts = match column.ttl {
            // A field never outlives its row: the current one, or, when
            // re-timed, the new one (`retime_mutation` caps it there).
            Some(ttl) if retimed => policy.cell_timestamp(now, Expiry::Ttl(ttl))?,
            Some(ttl) => policy.cell_timestamp(now, Expiry::Ttl(ttl))?.min(row_ts),
            None => row_ts,
        };
        next.push(Cell {
            family: column.family.to_owned(),
            qualifier: qualifier.to_vec(),
            value: value.clone(),
            timestamp_micros: ts,
        });
        written.push((column.family, qualifier));
    }
    if let Some(shadow) = schema.written_at {
        let qualifier = shadow.qualifier.as_bytes();
        let at = from_micros(millis_floor(now)?)?;
        let value = at.encode().map_err(|source| {
            Error::from(error::Encode {
                field: "written_at",
                source,
            })
        })?;
        next.retain(|c| !(c.family == shadow.family && c.qualifier == qualifier));
        next.push(Cell {
            family: shadow.family.to_owned(),
            qualifier: qualifier.to_vec(),
            value,
            timestamp_micros: row_ts,
        });
        written.push((shadow.family, qualifier));
    }

    Ok(Planned {
        next,
        written,
        cleared,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::policy::Policy;
    use crate::model::proto::mutation;
    use crate::model::schema::{test_column, Column, ShadowColumn, WhenAbsent};
    use chrono::TimeDelta;

    static SCHEMA: Schema = Schema {
        table: "profiles",
        policy: Policy::DefaultTtl {
            ttl: TimeDelta::days(2),
        },
        families: &["p"],
        owns_family: false,
        columns: &[
            Column {
                field: "name",
                family: "p",
                qualifier: "name",
                ttl: None,
                when_absent: WhenAbsent::Required,
            },
            Column {
                field: "status",
                family: "p",
                qualifier: "status",
                ttl: None,
                when_absent: WhenAbsent::ReadsNone,
            },
        ],
        maps: &[],
        written_at: Some(ShadowColumn {
            family: "p",
            qualifier: "written_at",
        }),
        marker: b"\0\0Row",
        key_fields: &["id"],
        key_separator: "",
    };

    fn cell(q: &str, ts: i64, value: &[u8]) -> Cell {
        Cell {
            family: "p".into(),
            qualifier: q.as_bytes().to_vec(),
            value: value.to_vec(),
            timestamp_micros: ts,
        }
    }

    fn now() -> DateTime<Utc> {
        DateTime::from_timestamp_millis(1_700_000_000_000).unwrap()
    }

    /// A `SetCell`: qualifier, timestamp, value.
    type Set = (String, i64, Vec<u8>);

    /// Each `SetCell`, and the qualifier of each `DeleteFromColumn`.
    fn parts(m: &RowMutation) -> (Vec<Set>, Vec<String>) {
        let (mut sets, mut deletes) = (Vec::new(), Vec::new());
        for m in &m.mutations {
            match &m.mutation {
                Some(mutation::Mutation::SetCell(c)) => sets.push((
                    String::from_utf8_lossy(&c.column_qualifier).into_owned(),
                    c.timestamp_micros,
                    c.value.clone(),
                )),
                Some(mutation::Mutation::DeleteFromColumn(d)) => {
                    deletes.push(String::from_utf8_lossy(&d.column_qualifier).into_owned());
                }
                other => panic!("{other:?}"),
            }
        }
        (sets, deletes)
    }

    #[test]
    fn keeping_the_expiry_writes_only_the_changes_and_the_shadow_at_the_row_timestamp() {
        let now = now();
        let ts = (now - TimeDelta::hours(1)).timestamp_micros();
        let cells = [cell("name", ts, b"ann"), cell("status", ts, b"away")];
        let changes = [
            Change::Set {
                column: 0,
                value: b"bob".to_vec(),
            },
            Change::Clear { column: 1 },
        ];
        let m = update_mutation(&SCHEMA, b"k", &cells, now, &changes, None)
            .unwrap()
            .unwrap();
        assert_eq!(m.timestamp_micros, ts);
        let (sets, deletes) = parts(&m);
        assert_eq!(
            sets,
            vec![
                ("name".to_owned(), ts, b"bob".to_vec()),
                ("written_at".to_owned(), ts, now.encode().unwrap()),
            ]
        );
        assert_eq!(deletes, ["name", "written_at", "status"]);
    }

    /// A struct with a required, an `Option` and a `#[bigtable(default)]`
    /// field, no shadow column.
    static DEFAULTS: Schema = Schema {
        table: "profiles",
        policy: Policy::DefaultTtl {
            ttl: TimeDelta::days(2),
        },
        families: &["f"],
        owns_family: false,
        columns: &[
            test_column("name", WhenAbsent::Required),
            test_column("status", WhenAbsent::ReadsNone),
            test_column("visits", WhenAbsent::ReadsDefault),
        ],
        maps: &[],
        written_at: None,
        marker: b"\0\0Row",
        key_fields: &["id"],
        key_separator: "",
    };

    /// `update().clear()` on a `#[bigtable(default)]` field deletes its
    /// column, as an `Option` field's is, so the row reads the default; a
    /// field that is neither stays [`Error::RequiredField`].
    /// `tests/it/evolve.rs` (workspace root) shows the same on the emulator.
    #[test]
    fn a_default_field_is_cleared_like_an_option() {
        let now = now();
        let cells: Vec<Cell> = ["name", "status", "visits"]
            .into_iter()
            .map(|q| Cell {
                family: "f".into(),
                qualifier: q.as_bytes().to_vec(),
                value: b"x".to_vec(),
                timestamp_micros: now.timestamp_micros(),
            })
            .collect();
        let clear = |column| {
            update_mutation(
                &DEFAULTS,
                b"u1",
                &cells,
                now,
                &[Change::Clear { column }],
                None,
            )
            .map(|m| parts(&m.expect("a live row")).1)
        };
        assert_eq!(clear(2).unwrap(), ["visits"]);
        assert_eq!(clear(1).unwrap(), ["status"]);
        let err = clear(0).unwrap_err();
        assert!(
            matches!(&err, Error::RequiredField(e) if e.field == "name"),
            "{err}"
        );
    }

    #[test]
    fn clearing_a_required_field_or_updating_a_dead_row_writes_nothing() {
        let now = now();
        let live = [cell("name", now.timestamp_micros(), b"ann")];
        let err = update_mutation(
            &SCHEMA,
            b"k",
            &live,
            now,
            &[Change::Clear { column: 0 }],
            None,
        )
        .unwrap_err();
        assert!(
            matches!(&err, Error::RequiredField(e) if e.field == "name"),
            "{err}"
        );
        let dead = [cell(
            "name",
            (now - TimeDelta::days(3)).timestamp_micros(),
            b"ann",
        )];
        let set = [Change::Set {
            column: 1,
            value: b"x".to_vec(),
        }];
        assert_eq!(
            update_mutation(
                &SCHEMA,
                b"k",
                &dead,
                now,
                &set,
                Some(Retime::Ttl(TimeDelta::hours(1)))
            )
            .unwrap(),
            None
        );
    }

    /// A row of options live by its column while its marker is another
    /// struct's of the name (that program wrote the marker last): clearing
    /// the column would leave that struct's row, never this one's.
    #[test]
    fn clearing_the_last_column_under_another_structs_marker_is_refused() {
        static OPTIONS: Schema = Schema {
            columns: &[test_column("status", WhenAbsent::ReadsNone)],
            ..DEFAULTS
        };
        static STRANGER: Schema = Schema {
            columns: &[test_column("seen", WhenAbsent::ReadsNone)],
            ..DEFAULTS
        };
        let now = now();
        let ts = now.timestamp_micros();
        let row = |marker_value: &[u8]| {
            [
                Cell {
                    family: "f".into(),
                    qualifier: OPTIONS.marker.to_vec(),
                    value: marker_value.to_vec(),
                    timestamp_micros: ts,
                },
                Cell {
                    family: "f".into(),
                    qualifier: b"status".to_vec(),
                    value: b"x".to_vec(),
                    timestamp_micros: ts - 1,
                },
            ]
        };
        let clear = |cells: &[Cell]| {
            update_mutation(
                &OPTIONS,
                b"k",
                cells,
                now,
                &[Change::Clear { column: 0 }],
                None,
            )
        };
        let err = clear(&row(&STRANGER.marker_fingerprint())).unwrap_err();
        assert!(matches!(err, Error::UpdateLeavesNoRow(_)), "{err}");
        // Under its own marker the row stays, its marker keeping it.
        let cleared = clear(&row(&OPTIONS.marker_fingerprint())).unwrap();
        assert_eq!(parts(&cleared.expect("a live row")).1, ["status"]);
    }
}

/// Every update answers the row a read right after it would see: over
/// random rows (columns present or not, live or expired, with or without
/// the struct's marker, another struct's marker) of structs with required,
/// optional, default and counter fields, random sets and clears, kept or
/// re-timed. The planned mutation is applied to the stored cells as
/// Bigtable applies a row mutation, and the result judged by the rule.
#[cfg(test)]
mod answers {
    use super::*;
    use crate::model::liveness::Verdict;
    use crate::model::policy::Policy;
    use crate::model::proto::mutation::Mutation as M;
    use crate::model::schema::{test_column as column, Column, WhenAbsent};
    use chrono::TimeDelta;
    use proptest::prelude::*;

    const fn schema(columns: &'static [Column], policy: Policy) -> Schema {
        Schema {
            table: "t",
            policy,
            families: &["f"],
            owns_family: false,
            columns,
            maps: &[],
            written_at: None,
            marker: b"\0\0Row",
            key_fields: &["id"],
            key_separator: "",
        }
    }

    const DAY: Policy = Policy::DefaultTtl {
        ttl: TimeDelta::days(1),
    };
    static SCHEMAS: [Schema; 4] = [
        schema(
            &[
                column("a", WhenAbsent::Required),
                column("o", WhenAbsent::ReadsNone),
                column("d", WhenAbsent::ReadsDefault),
            ],
            DAY,
        ),
        schema(
            &[
                column("o", WhenAbsent::ReadsNone),
                column("d", WhenAbsent::ReadsDefault),
            ],
            DAY,
        ),
        schema(
            &[
                column("o", WhenAbsent::ReadsNone),
                column("p", WhenAbsent::ReadsNone),
            ],
            DAY,
        ),
        schema(
            &[
                column("n", WhenAbsent::ReadsZero),
                column("o", WhenAbsent::ReadsNone),
            ],
            Policy::CellExpiry,
        ),
    ];

    fn now() -> DateTime<Utc> {
        DateTime::from_timestamp_millis(1_700_000_000_000).unwrap()
    }

    /// A stored cell `qualifier` whose expiry is `offset_s` seconds from
    /// now (negative: expired, not yet collected).
    fn cell(schema: &Schema, qualifier: &[u8], offset_s: i64) -> Cell {
        let expiry = now() + TimeDelta::seconds(offset_s);
        let ts = match schema.policy {
            Policy::CellExpiry => expiry,
            Policy::DefaultTtl { ttl } => expiry - ttl,
        };
        Cell {
            family: "f".to_owned(),
            qualifier: qualifier.to_vec(),
            timestamp_micros: ts.timestamp_millis() * 1_000,
            value: if qualifier == b"n" {
                7i64.to_be_bytes().to_vec()
            } else {
                b"v".to_vec()
            },
        }
    }

    /// What Bigtable stores after applying `m` to `cells`, in order.
    fn apply(cells: &[Cell], m: &RowMutation) -> Vec<Cell> {
        let mut after = cells.to_vec();
        for mutation in &m.mutations {
            match mutation.mutation.as_ref().unwrap() {
                M::SetCell(set) => {
                    after.retain(|c| {
                        !(c.family == set.family_name
                            && c.qualifier == set.column_qualifier
                            && c.timestamp_micros == set.timestamp_micros)
                    });
                    after.push(Cell {
                        family: set.family_name.clone(),
                        qualifier: set.column_qualifier.clone(),
                        timestamp_micros: set.timestamp_micros,
                        value: set.value.clone(),
                    });
                }
                M::DeleteFromColumn(d) => {
                    after.retain(|c| {
                        !(c.family == d.family_name && c.qualifier == d.column_qualifier)
                    });
                }
                M::DeleteFromFamily(d) => after.retain(|c| c.family != d.family_name),
                other => panic!("an update sends no {other:?}"),
            }
        }
        after
    }

    fn row() -> impl Strategy<Value = (usize, Vec<Cell>)> {
        (
            0..SCHEMAS.len(),
            prop::collection::vec(prop::option::of(-30i64..3_600), 5),
        )
            .prop_map(|(s, offsets)| {
                let schema = &SCHEMAS[s];
                let mut names: Vec<&[u8]> = schema
                    .columns
                    .iter()
                    .map(|c| c.qualifier.as_bytes())
                    .collect();
                names.extend([schema.marker, b"\0\0Other"]);
                let cells = names
                    .into_iter()
                    .zip(offsets)
                    .filter_map(|(q, offset)| offset.map(|o| cell(schema, q, o)))
                    .collect();
                (s, cells)
            })
    }

    proptest! {
        #[test]
        fn an_update_answers_the_row_a_read_right_after_sees(
            (s, cells) in row(),
            changes in prop::collection::vec((0usize..3, any::<bool>()), 1..4),
            retimed in any::<bool>(),
        ) {
            let schema = &SCHEMAS[s];
            let changes: Vec<Change> = changes
                .into_iter()
                .filter(|(i, _)| *i < schema.columns.len())
                .map(|(column, set)| if set {
                    Change::Set { column, value: b"new".to_vec() }
                } else {
                    Change::Clear { column }
                })
                .collect();
            let retime = retimed.then_some(Retime::Ttl(TimeDelta::hours(2)));
            let before = RowCells::of(schema, &cells, now()).verdict();
            match update_mutation(schema, b"k", &cells, now(), &changes, retime) {
                Ok(Some(m)) => {
                    let after = apply(&cells, &m);
                    let row = RowCells::of(schema, &after, now());
                    let Verdict::Live { .. } = row.verdict() else {
                        return Err(TestCaseError::fail(format!("answered {m:?}, then {:?} of {after:?}", row.verdict())));
                    };
                    // The answer's expiry is the row's, for a row of
                    // options too (clearing its newest cell ends it sooner).
                    let expiry = schema.policy.expiry_of(row.verdict().row_ts().unwrap()).unwrap();
                    prop_assert_eq!(m.expires_at, expiry);
                    // The last change of each column is what reads back.
                    for (i, c) in schema.columns.iter().enumerate() {
                        let last = changes.iter().rev().find(|ch| matches!(ch,
                            Change::Set { column, .. } | Change::Clear { column } if *column == i));
                        let read = row.get(c.family, c.qualifier.as_bytes()).map(|c| c.value.clone());
                        match last {
                            Some(Change::Set { value, .. }) => prop_assert_eq!(read, Some(value.clone())),
                            Some(Change::Clear { .. }) => prop_assert_eq!(read, None),
                            None => {}
                        }
                    }
                }
                Ok(None) => prop_assert!(before.row_ts().is_none(), "{before:?}"),
                Err(Error::RequiredField { .. }) => {
                    let cleared_unclearable = changes.iter().any(|c| {
                        matches!(c, Change::Clear { column } if !schema.columns[*column].can_be_cleared())
                    });
                    prop_assert!(cleared_unclearable);
                }
                Err(Error::UpdateLeavesNoRow { .. }) => prop_assert!(
                    !schema.marker_makes_row() && !schema.columns.iter().any(Column::is_required),
                    "only a struct living by its columns alone can be emptied (or one on another struct's marker, which these rows never carry)"
                ),
                Err(e) => return Err(TestCaseError::fail(e.to_string())),
            }
        }
    }
}
