//! A struct's `Table`, behind one object-safe trait, so that a layout drawn
//! at run time can hold any of the zoo; each answer normalised into the
//! model's terms ([`Seen`], milliseconds).

use std::future::Future;
use std::ops::ControlFlow;
use std::pin::Pin;

use bigtable_ttl::data::mutations_of;
use bigtable_ttl::data::Mutation;
use bigtable_ttl::read::ReadOptions;
use bigtable_ttl::Touched;
use bigtable_ttl::{Clock, Connection, Error, Expiring, Expiry, Insert, Scan, Table};
use bigtable_ttl::{MarkProgress, MarkStatus};
use chrono::{DateTime, TimeDelta, Utc};
use futures_util::TryStreamExt as _;

use super::model::{Row, Seen};
use super::zoo::{Gen, Subject, Who};

pub type Fut<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Milliseconds since the epoch.
pub fn ms(t: DateTime<Utc>) -> i64 {
    t.timestamp_millis()
}

pub fn instant(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).expect("an instant in range")
}

/// What `insert_if_absent` answered.
#[derive(Debug)]
pub enum Inserted {
    Inserted(i64),
    Exists(Seen),
}

/// One change of an update: set column `.0` to seed `.1`'s value, or
/// (`None`) clear it.
pub type Change = (usize, Option<u8>);

/// How a scan is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadAs {
    Scan,
    Stream,
    /// `scan_parallel` in two parts, sorted by key afterwards.
    Parallel,
}

/// A read's rows: (key, what the row read as).
pub type Rows = Vec<(Vec<u8>, Seen)>;

/// A struct's table, whichever struct.
pub trait Handle: Send + Sync {
    fn who(&self) -> Who;
    fn get<'a>(&'a self, id: &'a str) -> Fut<'a, Result<Seen, Error>>;
    /// A scan (skipping rows that do not decode, when `skip`), read as
    /// `how` says, gathered in key order.
    fn scan(&self, scan: Scan, skip: bool, how: ReadAs) -> Fut<'_, Result<Rows, Error>>;
    fn put<'a>(&'a self, id: &'a str, at: i64, seed: u8) -> Fut<'a, Result<i64, Error>>;
    fn insert<'a>(&'a self, id: &'a str, at: i64, seed: u8) -> Fut<'a, Result<Inserted, Error>>;
    /// `put_if`, on "column `col` holds seed `cseed`'s value".
    fn put_if<'a>(
        &'a self,
        id: &'a str,
        at: i64,
        seed: u8,
        col: usize,
        cseed: u8,
    ) -> Fut<'a, Result<Option<i64>, Error>>;
    fn delete<'a>(&'a self, id: &'a str) -> Fut<'a, Result<(), Error>>;
    fn delete_if<'a>(&'a self, id: &'a str, col: usize, cseed: u8) -> Fut<'a, Result<bool, Error>>;
    fn update<'a>(
        &'a self,
        id: &'a str,
        changes: &'a [Change],
        ttl: Option<i64>,
    ) -> Fut<'a, Result<Option<i64>, Error>>;
    fn touch<'a>(
        &'a self,
        id: &'a str,
        ttl: i64,
        wlt: i64,
    ) -> Fut<'a, Result<Option<Touched>, Error>>;
    fn set_ttl<'a>(&'a self, id: &'a str, ttl: i64) -> Fut<'a, Result<Option<i64>, Error>>;
    fn shift_expiry<'a>(&'a self, id: &'a str, by: i64) -> Fut<'a, Result<Option<i64>, Error>>;
    /// `None` for a struct without a map.
    fn remove_entry<'a>(&'a self, id: &'a str, key: &'a str) -> Option<Fut<'a, Result<(), Error>>>;
    /// `None` for a struct without a counter; else (value, expiry).
    fn increment<'a>(
        &'a self,
        id: &'a str,
        by: i64,
        ttl: i64,
    ) -> Option<Fut<'a, Result<(i64, i64), Error>>>;
    /// `None` for a struct without a map.
    fn put_entry<'a>(
        &'a self,
        id: &'a str,
        key: &'a str,
        value: &'a str,
        ttl: i64,
    ) -> Option<Fut<'a, Result<Option<i64>, Error>>>;
    fn add_markers(&self) -> Fut<'_, Result<MarkProgress, Error>>;
}

pub struct Typed<S: Subject> {
    table: Table<S>,
}

/// `who`'s table named `name` on `conn`, on `clock`.
pub fn open(who: Who, conn: &Connection, name: &str, clock: &Clock) -> Box<dyn Handle> {
    with_type!(who, |S| Box::new(Typed::<S> {
        table: Table::<S>::new(conn.clone())
            .with_name(name)
            .with_clock(clock.clone()),
    }))
}

/// `who`'s schema made in table `name` (families added, the table created
/// if missing).
pub async fn ensure(who: Who, conn: &Connection, name: &str) -> Result<(), Error> {
    with_type!(who, |S| {
        Table::<S>::new(conn.clone())
            .with_name(name)
            .ensure_schema()
            .await
            .map(|_| ())
    })
}

/// What a struct read, in the model's terms: the bytes a whole-row write of
/// the value read would store (its marker, shadow and window marks aside).
fn seen<S: Subject>(row: &Expiring<S>) -> Result<Seen, Error> {
    let expires_at = row.expires_at;
    if let Expiry::At(t) = row.value.expiry() {
        assert_eq!(
            t,
            expires_at,
            "{}: the expiry field is not the row's",
            S::WHO
        );
    }
    let built = row
        .value
        .mutation()
        .expire_at(expires_at)
        .build(expires_at - TimeDelta::milliseconds(1))?;
    let shadow = S::WHO.shape().shadow;
    let cells = mutations_of(&built)
        .iter()
        .filter_map(|m| match m {
            Mutation::SetCell {
                family,
                qualifier,
                value,
                ..
            } => Some((family, qualifier, value)),
            _ => None,
        })
        .filter(|(_, q, _)| !q.starts_with(b"\0"))
        .filter(|(f, q, _)| {
            shadow.is_none_or(|(sf, sq)| (sf, sq.as_bytes()) != (f.as_str(), &q[..]))
        })
        .map(|(f, q, v)| ((f.clone(), q.clone()), v.clone()))
        .collect();
    Ok(Seen::Live(Row {
        expiry: ms(expires_at),
        written: row.written_at.map(ms),
        cells,
    }))
}

#[allow(clippy::needless_pass_by_value)] // Takes what a scan returns, as it returns it.
fn rows<S: Subject>(rows: Vec<Expiring<S>>) -> Result<Rows, Error> {
    rows.iter()
        .map(|r| Ok((r.value.row_key()?, seen(r)?)))
        .collect()
}

impl<S: Subject> Typed<S> {
    fn value(id: &str, at: i64, seed: u8) -> S {
        S::build(id, instant(at), &Gen::new(S::WHO, seed))
    }
}

impl<S: Subject> Handle for Typed<S> {
    fn who(&self) -> Who {
        S::WHO
    }

    fn get<'a>(&'a self, id: &'a str) -> Fut<'a, Result<Seen, Error>> {
        Box::pin(async move {
            match self.table.get(id).await? {
                None => Ok(Seen::Absent),
                Some(row) => seen(&row),
            }
        })
    }

    fn scan(&self, scan: Scan, skip: bool, how: ReadAs) -> Fut<'_, Result<Rows, Error>> {
        Box::pin(async move {
            let table = self
                .table
                .clone()
                .with_read_options(ReadOptions::default().with_skip_undecodable(skip));
            let read = match how {
                ReadAs::Scan => table.scan(scan).await?,
                ReadAs::Stream => table.stream(scan).try_collect().await?,
                ReadAs::Parallel => table.scan_parallel(scan, 2).try_collect().await?,
            };
            let mut rows = rows(read)?;
            if how == ReadAs::Parallel {
                rows.sort_by(|a, b| a.0.cmp(&b.0));
            }
            Ok(rows)
        })
    }

    fn put<'a>(&'a self, id: &'a str, at: i64, seed: u8) -> Fut<'a, Result<i64, Error>> {
        Box::pin(async move {
            let value = Self::value(id, at, seed);
            let w = self
                .table
                .put_with(value.mutation().expire_at(instant(at)))
                .await?;
            Ok(ms(w.expires_at))
        })
    }

    fn insert<'a>(&'a self, id: &'a str, at: i64, seed: u8) -> Fut<'a, Result<Inserted, Error>> {
        Box::pin(async move {
            let value = Self::value(id, at, seed);
            match self
                .table
                .insert_if_absent_with(value.mutation().expire_at(instant(at)))
                .await?
            {
                Insert::Inserted(w) => Ok(Inserted::Inserted(ms(w.expires_at))),
                Insert::Exists(row) => Ok(Inserted::Exists(seen(&row)?)),
            }
        })
    }

    fn put_if<'a>(
        &'a self,
        id: &'a str,
        at: i64,
        seed: u8,
        col: usize,
        cseed: u8,
    ) -> Fut<'a, Result<Option<i64>, Error>> {
        Box::pin(async move {
            let value = Self::value(id, at, seed);
            let cond = S::equals(col, &Gen::new(S::WHO, cseed));
            let w = self
                .table
                .put_if_with(value.mutation().expire_at(instant(at)), cond)
                .await?;
            Ok(w.map(|w| ms(w.expires_at)))
        })
    }

    fn delete<'a>(&'a self, id: &'a str) -> Fut<'a, Result<(), Error>> {
        Box::pin(async move { self.table.delete(id).await })
    }

    fn delete_if<'a>(&'a self, id: &'a str, col: usize, cseed: u8) -> Fut<'a, Result<bool, Error>> {
        Box::pin(async move {
            let cond = S::equals(col, &Gen::new(S::WHO, cseed));
            self.table.delete_if(id, cond).await
        })
    }

    fn update<'a>(
        &'a self,
        id: &'a str,
        changes: &'a [Change],
        ttl: Option<i64>,
    ) -> Fut<'a, Result<Option<i64>, Error>> {
        Box::pin(async move {
            let mut u = self.table.update(id);
            for &(col, seed) in changes {
                u = match seed {
                    Some(seed) => S::set(u, col, &Gen::new(S::WHO, seed)),
                    None => S::clear(u, col),
                };
            }
            if let Some(ttl) = ttl {
                u = u.ttl(TimeDelta::milliseconds(ttl));
            }
            Ok(u.apply().await?.map(|w| ms(w.expires_at)))
        })
    }

    fn touch<'a>(
        &'a self,
        id: &'a str,
        ttl: i64,
        wlt: i64,
    ) -> Fut<'a, Result<Option<Touched>, Error>> {
        Box::pin(async move {
            self.table
                .touch(
                    id,
                    TimeDelta::milliseconds(ttl),
                    TimeDelta::milliseconds(wlt),
                )
                .await
        })
    }

    fn set_ttl<'a>(&'a self, id: &'a str, ttl: i64) -> Fut<'a, Result<Option<i64>, Error>> {
        Box::pin(async move {
            let m = self.table.set_ttl(id, TimeDelta::milliseconds(ttl)).await?;
            Ok(m.map(|m| ms(m.expires_at)))
        })
    }

    fn shift_expiry<'a>(&'a self, id: &'a str, by: i64) -> Fut<'a, Result<Option<i64>, Error>> {
        Box::pin(async move {
            let m = self
                .table
                .shift_expiry(id, TimeDelta::milliseconds(by))
                .await?;
            Ok(m.map(|m| ms(m.expires_at)))
        })
    }

    fn remove_entry<'a>(&'a self, id: &'a str, key: &'a str) -> Option<Fut<'a, Result<(), Error>>> {
        let map = S::map()?;
        Some(Box::pin(async move {
            self.table.remove_entry(id, map, &key.to_owned()).await
        }))
    }

    fn increment<'a>(
        &'a self,
        id: &'a str,
        by: i64,
        ttl: i64,
    ) -> Option<Fut<'a, Result<(i64, i64), Error>>> {
        let counter = S::counter()?;
        Some(Box::pin(async move {
            let c = self
                .table
                .increment(id, counter, by, Expiry::Ttl(TimeDelta::milliseconds(ttl)))
                .await?;
            Ok((c.value, ms(c.expires_at)))
        }))
    }

    fn put_entry<'a>(
        &'a self,
        id: &'a str,
        key: &'a str,
        value: &'a str,
        ttl: i64,
    ) -> Option<Fut<'a, Result<Option<i64>, Error>>> {
        let map = S::map()?;
        Some(Box::pin(async move {
            let w = self
                .table
                .put_entry(
                    id,
                    map,
                    &key.to_owned(),
                    &value.to_owned(),
                    Expiry::Ttl(TimeDelta::milliseconds(ttl)),
                )
                .await?;
            Ok(w.map(|w| ms(w.expires_at)))
        }))
    }

    fn add_markers(&self) -> Fut<'_, Result<MarkProgress, Error>> {
        Box::pin(async move {
            match self
                .table
                .add_markers(None, |_| ControlFlow::Continue(()))
                .await?
            {
                MarkStatus::Done(p) | MarkStatus::Stopped(p) => Ok(p),
                other => panic!("add_markers: {other:?}"),
            }
        })
    }
}
