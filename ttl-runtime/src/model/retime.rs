//! Re-timing one row, planned from its cells as stored: the mutation that
//! moves every live cell of the row to a new expiry (see [`Retime`]). Pure;
//! `Table::retime`, `touch` and `update` send it (`crate::client::table`).

use chrono::{DateTime, TimeDelta, Utc};

use crate::model::cell::Cell;
use crate::model::error::{self, Error, Overflow, Result};
use crate::model::mutation::{delete_column, mark_window, push_marker, set_cell, RowMutation};
use crate::model::policy::{Expiry, Policy};
use crate::model::row_cells::RowCells;
use crate::model::schema::{Column, Schema, WhenAbsent};

/// How to re-time a row.
///
/// Re-timing reads the row's visible cells with the table's read filter
/// (the newest live version of each column), computes the row's new
/// timestamp with the policy's rules, and sends one atomic `MutateRow` that,
/// per column, deletes every version (`DeleteFromColumn`) and writes the
/// value back (`SetCell`) at the new timestamp. The shadow column keeps its
/// value (the row was not rewritten by its owner, only re-timed), and a
/// column with its own shorter TTL (`#[ttl(for = "…")]`) keeps its own
/// expiry unless the row's new one is earlier: a field never outlives its
/// row.
///
/// The write is conditional (`CheckAndMutateRow`): it applies only if the
/// row still holds exactly the cells read (each column's newest live cell,
/// same timestamp, same value, and no live cell in a column that had none).
/// A write to the row in between makes it read again and retry, at most
/// [`RETIME_ROUNDS`](crate::retry::RETIME_ROUNDS) times, then fail with [`Error::Conflict`]: a re-time
/// never restores values older than the last acknowledged write. A write
/// whose answer is lost is never sent again: the row is read, and unless
/// it holds the re-timed cells the call ends with
/// [`Error::OutcomeUnknown`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Retime {
    /// Live this long from now (longer or shorter than before).
    Ttl(TimeDelta),
    /// Expire at this instant.
    At(DateTime<Utc>),
    /// Move the current expiry by this much: positive extends, negative
    /// shortens.
    By(TimeDelta),
}

/// The mutation that re-times one row, from the row's cells as stored (any
/// cell not visible at `now` under the schema's policy, or not one of its
/// columns, marker or shadow, is ignored; of each column the newest visible
/// version is kept). `None` when the row is not live at `now`
/// ([`crate::liveness`]: a re-time never revives a row). Pure.
///
/// The row's current expiry is the one the typed reader reports;
/// [`Retime::By`] moves that. Every column, the shadow column and the row
/// marker are written back at the new timestamp (a row that had no marker
/// gets one: it is whole now); a column with its own TTL keeps its own
/// expiry unless the row's new one is earlier. Map entries keep theirs.
///
/// # Errors
/// What the policy rejects for the new expiry: [`Error::ExpiryNotInFuture`]
/// (shortening past now: use [`Table::delete`]),
/// [`Error::NonPositiveTtl`], out-of-range timestamps.
pub(crate) fn retime_mutation(
    schema: &Schema,
    row_key: &[u8],
    cells: &[Cell],
    now: DateTime<Utc>,
    how: Retime,
) -> Result<Option<RowMutation>> {
    retime_row(&RowCells::of(schema, cells, now), row_key, now, how)
}

/// [`retime_mutation`] of a row already judged.
pub(crate) fn retime_row(
    row: &RowCells<'_>,
    row_key: &[u8],
    now: DateTime<Utc>,
    how: Retime,
) -> Result<Option<RowMutation>> {
    let schema = row.schema();
    let policy = schema.policy;
    let Some(current_ts) = row.verdict().row_ts() else {
        return Ok(None);
    };
    let expiry = match how {
        Retime::Ttl(ttl) => Expiry::Ttl(ttl),
        Retime::At(at) => Expiry::At(at),
        Retime::By(delta) => {
            let current = policy.expiry_of(current_ts)?;
            Expiry::At(current.checked_add_signed(delta).ok_or_else(|| {
                Error::from(error::ExpiryOutOfRange {
                    overflow: Overflow::Sum {
                        micros: current.timestamp_micros(),
                        by: delta,
                    },
                })
            })?)
        }
    };
    if expiry == Expiry::PolicyDefault && policy == Policy::CellExpiry {
        return Err(Error::from(error::MissingExpiry {
            table: Some(schema.table.to_owned()),
        }));
    }
    let row_ts = policy.cell_timestamp(now, expiry)?;
    let mut mutations = Vec::with_capacity(2 * row.newest.len() + 2);
    // The earliest timestamp of a required column, carried by the marker.
    let mut expiry_ts = row_ts;
    for ((family, qualifier), cell) in &row.newest {
        if schema.is_marker(family, qualifier) {
            // Written anew below, the marker of a row whole at one
            // timestamp (`push_marker` deletes the struct's own, its
            // versions expired before `now` too).
            if *qualifier != schema.marker {
                mutations.push(delete_column(family, qualifier));
            }
            continue;
        }
        mutations.push(delete_column(family, qualifier));
        let column = schema
            .column_index(family, qualifier)
            .map(|i| &schema.columns[i]);
        let ts = match column.and_then(|c| c.ttl) {
            Some(_) => cell.timestamp_micros.min(row_ts),
            None => row_ts,
        };
        if column.is_some_and(Column::is_required) {
            expiry_ts = expiry_ts.min(ts);
        }
        mutations.push(set_cell(family, qualifier, ts, cell.value.clone()));
    }
    for column in schema.columns {
        // A counter's window mark moves with it (see `model::counter`).
        if column.when_absent == WhenAbsent::ReadsZero
            && row
                .get(column.family, column.qualifier.as_bytes())
                .is_some()
        {
            mutations.extend(mark_window(column, row_ts));
        }
    }
    push_marker(&mut mutations, schema, row_ts, expiry_ts);
    Ok(Some(RowMutation {
        row_key: row_key.to_vec(),
        mutations,
        timestamp_micros: row_ts,
        expires_at: policy.expiry_of(row_ts)?,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::codec::CellCodec;
    use crate::model::policy::Policy;
    use crate::model::proto::mutation;
    use crate::model::schema::{Column, ShadowColumn, WhenAbsent};

    static SCHEMA: Schema = Schema {
        table: "clicks",
        policy: Policy::DefaultTtl {
            ttl: TimeDelta::days(2),
        },
        families: &["c"],
        owns_family: false,
        columns: &[
            Column {
                field: "url",
                family: "c",
                qualifier: "url",
                ttl: None,
                when_absent: WhenAbsent::Required,
            },
            Column {
                field: "hot",
                family: "c",
                qualifier: "hot",
                ttl: Some(TimeDelta::hours(1)),
                when_absent: WhenAbsent::ReadsNone,
            },
        ],
        maps: &[],
        written_at: Some(ShadowColumn {
            family: "c",
            qualifier: "written_at",
        }),
        marker: b"\0\0Row",
        key_fields: &["id"],
        key_separator: "",
    };

    fn now() -> DateTime<Utc> {
        DateTime::from_timestamp_millis(1_700_000_000_000).unwrap()
    }

    fn cell(q: &str, ts: DateTime<Utc>, value: &[u8]) -> Cell {
        Cell {
            family: "c".into(),
            qualifier: q.as_bytes().to_vec(),
            value: value.to_vec(),
            timestamp_micros: ts.timestamp_micros(),
        }
    }

    fn sets(m: &RowMutation) -> Vec<(String, i64, Vec<u8>)> {
        let mut deletes = 0;
        let out: Vec<_> = m
            .mutations
            .iter()
            .filter_map(|m| match &m.mutation {
                Some(mutation::Mutation::SetCell(c)) => Some((
                    String::from_utf8_lossy(&c.column_qualifier).into_owned(),
                    c.timestamp_micros,
                    c.value.clone(),
                )),
                Some(mutation::Mutation::DeleteFromColumn(_)) => {
                    deletes += 1;
                    None
                }
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(deletes, out.len(), "one delete per column");
        out
    }

    #[test]
    fn extending_moves_every_row_level_cell_and_keeps_values() {
        let now = now();
        let written = now - TimeDelta::hours(1);
        let ts = written; // default TTL: timestamp = write time, expiry = +2d
        let cells = [
            cell("url", ts, b"/new"),
            cell("url", ts - TimeDelta::minutes(1), b"/old"),
            cell(
                "hot",
                now - TimeDelta::days(2) + TimeDelta::minutes(30),
                b"x",
            ),
            cell("written_at", ts, &written.encode().unwrap()),
        ];
        let m = retime_mutation(&SCHEMA, b"k", &cells, now, Retime::By(TimeDelta::days(1)))
            .unwrap()
            .unwrap();
        let new_ts = (ts + TimeDelta::days(1)).timestamp_micros();
        assert_eq!(m.expires_at, written + TimeDelta::days(3));
        assert_eq!(
            sets(&m),
            vec![
                // the hot field keeps its own (earlier) expiry
                ("hot".to_owned(), cells[2].timestamp_micros, b"x".to_vec()),
                ("url".to_owned(), new_ts, b"/new".to_vec()),
                ("written_at".to_owned(), new_ts, written.encode().unwrap()),
                // A row written before the marker existed gets one: it is
                // whole at one timestamp now.
                // Its value the struct's fingerprint.
                ("\0\0Row".to_owned(), new_ts, SCHEMA.marker_fingerprint()),
            ]
        );
    }

    #[test]
    fn shortening_caps_per_field_ttls_and_cannot_pass_now() {
        let now = now();
        let cells = [
            cell("url", now, b"/u"),
            cell("hot", now - TimeDelta::days(2) + TimeDelta::hours(1), b"x"),
        ];
        let m = retime_mutation(
            &SCHEMA,
            b"k",
            &cells,
            now,
            Retime::Ttl(TimeDelta::minutes(10)),
        )
        .unwrap()
        .unwrap();
        assert_eq!(m.expires_at, now + TimeDelta::minutes(10));
        let got = sets(&m);
        assert!(
            got.iter().all(|(_, ts, _)| *ts == m.timestamp_micros),
            "{got:?}"
        );
        let err = retime_mutation(&SCHEMA, b"k", &cells, now, Retime::By(-TimeDelta::days(3)))
            .unwrap_err();
        assert!(matches!(err, Error::ExpiryNotInFuture { .. }), "{err}");
    }

    #[test]
    fn an_expired_or_missing_row_is_none() {
        let now = now();
        let cells = [cell("url", now - TimeDelta::days(3), b"/u")];
        assert!(
            retime_mutation(&SCHEMA, b"k", &cells, now, Retime::Ttl(TimeDelta::hours(1)))
                .unwrap()
                .is_none()
        );
        assert!(
            retime_mutation(&SCHEMA, b"k", &[], now, Retime::Ttl(TimeDelta::hours(1)))
                .unwrap()
                .is_none()
        );
    }
}
