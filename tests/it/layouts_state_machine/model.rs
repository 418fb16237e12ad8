//! The model: the cells stored in each row, and what each struct makes of
//! them by the rule of `guide/sharing-tables.md` and
//! `guide/rows-and-liveness.md`, written out here on its own (nothing of
//! the library's liveness code is called).

use std::collections::BTreeMap;

use super::zoo::{absent_bytes, default_micros, window_mark, Gen, Kind, Shape, ALL, LEGACY_MARKER};

/// A row's cells: by (family, qualifier), by timestamp (µs), the value.
pub type Cells = BTreeMap<(String, Vec<u8>), BTreeMap<i64, Vec<u8>>>;

/// A live row as a struct reads it: its expiry (ms), its `written_at`
/// (ms), and the bytes of every cell a whole-row write of the value read
/// would store (columns, defaults filled in, map entries).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub expiry: i64,
    pub written: Option<i64>,
    pub cells: BTreeMap<(String, Vec<u8>), Vec<u8>>,
}

/// What a struct makes of a row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    Absent,
    /// `Error::Decode` naming this column (`family:qualifier`), missing.
    Incomplete(String),
    /// `Error::Decode` of `CodecError::WrittenByAnotherStruct`: live by its
    /// marker alone, which a struct of the same marker wrote that shares
    /// no column name with this one (the sharing guide's fingerprint).
    Stranger,
    Live(Row),
}

impl Seen {
    pub fn is_live(&self) -> bool {
        matches!(self, Seen::Live(_))
    }

    pub fn expiry(&self) -> Option<i64> {
        match self {
            Seen::Live(r) => Some(r.expiry),
            _ => None,
        }
    }
}

/// One mutation, as the model applies it and as a raw write sends it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mut {
    DeleteColumn(&'static str, Vec<u8>),
    DeleteFamily(&'static str),
    Set(&'static str, Vec<u8>, i64, Vec<u8>),
}

pub fn at(family: &str, qualifier: &[u8]) -> (String, Vec<u8>) {
    (family.to_owned(), qualifier.to_vec())
}

pub fn apply(cells: &mut Cells, muts: &[Mut]) {
    for m in muts {
        match m {
            Mut::DeleteColumn(f, q) => {
                cells.remove(&at(f, q));
            }
            Mut::DeleteFamily(f) => cells.retain(|(family, _), _| family != f),
            Mut::Set(f, q, ts, v) => {
                cells.entry(at(f, q)).or_default().insert(*ts, v.clone());
            }
        }
    }
}

/// Whether a cell of `family` at `ts` (µs) is visible at `now` (ms).
pub fn visible(family: &str, ts: i64, now: i64) -> bool {
    now * 1_000 < ts + default_micros(family)
}

/// The newest stored cell of a column: (timestamp, value).
pub fn newest<'c>(cells: &'c Cells, family: &str, q: &[u8]) -> Option<(i64, &'c [u8])> {
    let (ts, v) = cells.get(&at(family, q))?.iter().next_back()?;
    Some((*ts, v.as_slice()))
}

/// The newest cell of a column if visible at `now` (ms): no older one can
/// be when it is not.
pub fn newest_visible<'c>(
    cells: &'c Cells,
    family: &str,
    q: &[u8],
    now: i64,
) -> Option<(i64, &'c [u8])> {
    newest(cells, family, q).filter(|(ts, _)| visible(family, *ts, now))
}

/// The expiry (ms) of a struct's cell at `ts`.
pub fn expiry_of(shape: &Shape, ts: i64) -> i64 {
    (ts + default_micros(shape.first_family())) / 1_000
}

/// The timestamp (µs) of a struct's cells for a row expiring at `expiry`
/// (ms).
pub fn ts_for(shape: &Shape, expiry: i64) -> i64 {
    expiry * 1_000 - default_micros(shape.first_family())
}

/// The struct's own marker visible at `now`: its newest of the struct's
/// marker and, for a struct owning its family, the legacy one.
pub fn own_marker<'c>(shape: &Shape, cells: &'c Cells, now: i64) -> Option<(i64, &'c [u8])> {
    let family = shape.first_family();
    let legacy = shape
        .owns_family
        .then(|| newest_visible(cells, family, LEGACY_MARKER, now))
        .flatten();
    let own = newest_visible(cells, family, shape.marker, now);
    match (own, legacy) {
        (Some(a), Some(b)) => Some(if a.0 >= b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
}

/// Whether the row carries another struct's marker at `now`: a visible cell
/// whose qualifier starts with two NUL bytes, in one of the struct's
/// families that is not its map's, other than its own marker.
pub fn foreign_marker(shape: &Shape, cells: &Cells, now: i64) -> bool {
    cells.iter().any(|((f, q), versions)| {
        q.starts_with(b"\0\0")
            && shape.plain_families().any(|pf| pf == f)
            && !(f == shape.first_family() && q.as_slice() == shape.marker)
            && versions
                .keys()
                .next_back()
                .is_some_and(|ts| visible(f, *ts, now))
    })
}

/// The row timestamp a marker at `ts` with `value` vouches for.
fn marker_row_ts(ts: i64, value: &[u8]) -> i64 {
    <[u8; 8]>::try_from(value).map_or(ts, i64::from_be_bytes)
}

/// What `shape`'s struct makes of `cells` at `now` (ms), and the
/// timestamp carrying a live row's expiry.
pub fn judge(shape: &Shape, cells: &Cells, now: i64) -> (Seen, Option<i64>) {
    judge_with(shape, cells, now, true)
}

/// [`judge`] as a rewrite (`update`, `touch`, the re-times) judges: map
/// entries left out, so a row of entries alone is no row to it (the maps
/// guide: "A row made of entries alone has no row expiry to change").
pub fn judge_rewrite(shape: &Shape, cells: &Cells, now: i64) -> (Seen, Option<i64>) {
    judge_with(shape, cells, now, false)
}

fn judge_with(shape: &Shape, cells: &Cells, now: i64, entries: bool) -> (Seen, Option<i64>) {
    let marker = own_marker(shape, cells, now);
    if marker.is_none() && foreign_marker(shape, cells, now) {
        return (Seen::Absent, None);
    }
    let col_ts = |i: usize| {
        let c = &shape.columns[i];
        newest_visible(cells, c.family, c.qualifier.as_bytes(), now).map(|(ts, _)| ts)
    };
    let required: Vec<usize> = (0..shape.columns.len())
        .filter(|&i| shape.columns[i].kind == Kind::Required)
        .collect();
    let row_ts = if required.is_empty() {
        let columns = (0..shape.columns.len()).filter_map(col_ts).max();
        let shadow = shape
            .shadow
            .and_then(|(f, q)| newest_visible(cells, f, q.as_bytes(), now))
            .map(|(ts, _)| ts);
        let by_marker = marker
            .filter(|_| shape.marker_makes_row())
            .map(|(ts, _)| ts);
        let entries = shape
            .map
            .filter(|_| entries && shape.all_options())
            .and_then(|m| entries_ts(cells, m, now));
        columns.max(shadow).max(by_marker).or(entries)
    } else if required.iter().all(|&i| col_ts(i).is_some()) {
        required.iter().filter_map(|&i| col_ts(i)).min()
    } else {
        return (
            incomplete_or_absent(shape, cells, now, marker, &required),
            None,
        );
    };
    let Some(row_ts) = row_ts else {
        return (Seen::Absent, None);
    };
    let own_column = (0..shape.columns.len()).any(|i| col_ts(i).is_some());
    if !own_column && marker.is_some_and(|(_, value)| written_by_another_struct(shape, value)) {
        return (Seen::Stranger, None);
    }
    (Seen::Live(read(shape, cells, now, row_ts)), Some(row_ts))
}

/// The names a struct's marker fingerprint holds: its columns' qualifiers
/// and its map's family.
fn names(shape: &Shape) -> Vec<&'static str> {
    let mut names: Vec<&str> = shape.columns.iter().map(|c| c.qualifier).collect();
    names.extend(shape.map);
    names
}

/// Whether a marker of `shape`'s carrying `value` was written by a struct
/// of the zoo writing that marker whose names are none of `shape`'s: the
/// writer told by the value its write stored (a struct's fingerprint),
/// the names compared exactly.
fn written_by_another_struct(shape: &Shape, value: &[u8]) -> bool {
    let Some(writer) = ALL
        .into_iter()
        .map(super::zoo::Who::shape)
        .find(|w| w.marker == shape.marker && w.marker_fingerprint() == value)
    else {
        return false;
    };
    let own = names(shape);
    !own.is_empty() && !names(writer).iter().any(|n| own.contains(n))
}

/// The newest visible entry of map family `family`.
fn entries_ts(cells: &Cells, family: &str, now: i64) -> Option<i64> {
    cells
        .iter()
        .filter(|((f, _), _)| f == family)
        .filter_map(|(_, v)| v.keys().next_back().copied())
        .filter(|ts| visible(family, *ts, now))
        .max()
}

/// A row some of whose required columns have no visible cell: absent, or
/// incomplete naming the first required column holding no cell at all.
fn incomplete_or_absent(
    shape: &Shape,
    cells: &Cells,
    now: i64,
    marker: Option<(i64, &[u8])>,
    required: &[usize],
) -> Seen {
    let visible_required = required.iter().any(|&i| {
        let c = &shape.columns[i];
        newest_visible(cells, c.family, c.qualifier.as_bytes(), now).is_some()
    });
    match marker {
        // The marker vouches for a row timestamp that has passed: its
        // required columns expired with it.
        Some((ts, value)) if !visible(shape.first_family(), marker_row_ts(ts, value), now) => {
            return Seen::Absent
        }
        None if !visible_required => return Seen::Absent,
        Some(_) | None => {}
    }
    let mut missing = None;
    for &i in required {
        let c = &shape.columns[i];
        match newest(cells, c.family, c.qualifier.as_bytes()) {
            // What is stored proves the row expired.
            Some((ts, _)) if !visible(c.family, ts, now) => return Seen::Absent,
            Some(_) => {}
            None => {
                missing.get_or_insert(format!("{}:{}", c.family, c.qualifier));
            }
        }
    }
    Seen::Incomplete(missing.expect("a required column without a cell"))
}

/// A live row's fields.
fn read(shape: &Shape, cells: &Cells, now: i64, row_ts: i64) -> Row {
    let mut out = BTreeMap::new();
    for c in shape.columns {
        let value = newest_visible(cells, c.family, c.qualifier.as_bytes(), now)
            .map(|(_, v)| v.to_vec())
            .or_else(|| absent_bytes(c));
        if let Some(v) = value {
            out.insert(at(c.family, c.qualifier.as_bytes()), v);
        }
    }
    if let Some(m) = shape.map {
        for ((f, q), versions) in cells {
            if f != m {
                continue;
            }
            if let Some((ts, v)) = versions.iter().next_back() {
                if visible(m, *ts, now) {
                    out.insert((f.clone(), q.clone()), v.clone());
                }
            }
        }
    }
    let written = shape
        .shadow
        .and_then(|(f, q)| newest_visible(cells, f, q.as_bytes(), now))
        .and_then(|(_, v)| <[u8; 8]>::try_from(v).ok())
        .map(|b| i64::from_be_bytes(b) / 1_000);
    Row {
        expiry: expiry_of(shape, row_ts),
        written,
        cells: out,
    }
}

/// The shadow column's value for a write at `now` (ms).
pub fn shadow_value(now: i64) -> Vec<u8> {
    (now * 1_000).to_be_bytes().to_vec()
}

/// A whole-row write of `g`'s value at `row_ts`, made at `now` (ms): as
/// the library writes it, or (`legacy`) as earlier versions did, with the
/// one-byte marker and no window marks, leaving out column `drop`.
pub fn whole_row(g: &Gen, row_ts: i64, now: i64, legacy: bool, drop: Option<usize>) -> Vec<Mut> {
    let shape = g.shape;
    let mut m = Vec::new();
    if shape.owns_family && !legacy {
        m.push(Mut::DeleteFamily(shape.first_family()));
    }
    for (i, c) in shape.columns.iter().enumerate() {
        let q = c.qualifier.as_bytes().to_vec();
        m.push(Mut::DeleteColumn(c.family, q.clone()));
        if let Some(v) = g.bytes(i).filter(|_| drop != Some(i)) {
            m.push(Mut::Set(c.family, q, row_ts, v));
            if c.kind == Kind::Counter && !legacy {
                let mark = window_mark(c.qualifier);
                m.push(Mut::DeleteColumn(c.family, mark.clone()));
                m.push(Mut::Set(
                    c.family,
                    mark,
                    row_ts - 1_000,
                    0i64.to_be_bytes().to_vec(),
                ));
            }
        }
    }
    if let Some((f, q)) = shape.shadow {
        m.push(Mut::DeleteColumn(f, q.as_bytes().to_vec()));
        m.push(Mut::Set(
            f,
            q.as_bytes().to_vec(),
            row_ts,
            shadow_value(now),
        ));
    }
    let marker = if legacy { LEGACY_MARKER } else { shape.marker };
    m.push(Mut::DeleteColumn(shape.first_family(), marker.to_vec()));
    m.push(Mut::Set(
        shape.first_family(),
        marker.to_vec(),
        row_ts,
        if legacy {
            Vec::new()
        } else {
            shape.marker_fingerprint()
        },
    ));
    if let Some(family) = shape.map {
        m.push(Mut::DeleteFamily(family));
        for (k, v) in g.entries() {
            m.push(Mut::Set(family, k.into_bytes(), row_ts, v.into_bytes()));
        }
    }
    m
}

/// A delete of the struct's row: exactly what it owns (the guide's
/// "Writes change only what the struct owns").
pub fn delete_row(shape: &Shape) -> Vec<Mut> {
    let mut m = Vec::new();
    if shape.owns_family {
        m.push(Mut::DeleteFamily(shape.first_family()));
    }
    for (f, q) in shape.owned_cells() {
        m.push(Mut::DeleteColumn(f, q));
    }
    m.push(Mut::DeleteColumn(
        shape.first_family(),
        LEGACY_MARKER.to_vec(),
    ));
    if let Some(family) = shape.map {
        m.push(Mut::DeleteFamily(family));
    }
    m
}

/// The struct's own cells visible at `at` (ms) that a rewrite carries:
/// columns, shadow, marker (and the legacy one, for a struct owning its
/// family), as (family, qualifier, ts, value).
fn own_visible(
    shape: &Shape,
    cells: &Cells,
    at: i64,
) -> Vec<(&'static str, Vec<u8>, i64, Vec<u8>)> {
    let mut out = Vec::new();
    let mut push = |f: &'static str, q: &[u8]| {
        if let Some((ts, v)) = newest_visible(cells, f, q, at) {
            out.push((f, q.to_vec(), ts, v.to_vec()));
        }
    };
    for c in shape.columns {
        push(c.family, c.qualifier.as_bytes());
    }
    if let Some((f, q)) = shape.shadow {
        push(f, q.as_bytes());
    }
    push(shape.first_family(), shape.marker);
    if shape.owns_family {
        push(shape.first_family(), LEGACY_MARKER);
    }
    out
}

/// A re-time of the struct's live row to `new_ts`, its cells judged at
/// `at` (ms, the write's horizon): every visible cell of its own written
/// back at the new timestamp (the shadow with `shadow`'s value when
/// given), counters' window marks with them, the marker written anew. Map
/// entries keep theirs.
#[allow(clippy::needless_pass_by_value)] // The shadow value as the step computed it.
pub fn retime(
    shape: &Shape,
    cells: &Cells,
    at: i64,
    new_ts: i64,
    shadow: Option<Vec<u8>>,
) -> Vec<Mut> {
    let mut m = Vec::new();
    let is_marker = |f: &str, q: &[u8]| {
        f == shape.first_family()
            && (q == shape.marker || (shape.owns_family && q == LEGACY_MARKER))
    };
    for (f, q, _, v) in own_visible(shape, cells, at) {
        m.push(Mut::DeleteColumn(f, q.clone()));
        if is_marker(f, &q) {
            continue;
        }
        let v = match (&shadow, shape.shadow) {
            (Some(s), Some((sf, sq))) if sf == f && sq.as_bytes() == q.as_slice() => s.clone(),
            _ => v,
        };
        m.push(Mut::Set(f, q, new_ts, v));
    }
    for c in shape.columns {
        if c.kind == Kind::Counter
            && newest_visible(cells, c.family, c.qualifier.as_bytes(), at).is_some()
        {
            let mark = window_mark(c.qualifier);
            m.push(Mut::DeleteColumn(c.family, mark.clone()));
            m.push(Mut::Set(
                c.family,
                mark,
                new_ts - 1_000,
                0i64.to_be_bytes().to_vec(),
            ));
        }
    }
    m.push(Mut::DeleteColumn(
        shape.first_family(),
        shape.marker.to_vec(),
    ));
    m.push(Mut::Set(
        shape.first_family(),
        shape.marker.to_vec(),
        new_ts,
        shape.marker_fingerprint(),
    ));
    m
}

/// Whether the row holds, in the struct's families, a visible cell the
/// struct does not own (the legacy marker in its first family aside, which
/// no struct can tell its own): another struct's or another program's.
pub fn holds_others(shape: &Shape, cells: &Cells, now: i64) -> bool {
    cells.iter().any(|((f, q), versions)| {
        shape.families.contains(&f.as_str())
            && !(q.as_slice() == LEGACY_MARKER && f == shape.first_family())
            && !shape.owns(f, q)
            && versions
                .keys()
                .next_back()
                .is_some_and(|ts| visible(f, *ts, now))
    })
}

/// What `add_markers` of a struct does with one row, by the guide.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MarkClass {
    /// Gets the struct's marker: (timestamp, value).
    Marked(i64, Vec<u8>),
    Already,
    Incomplete,
    NotLive,
    Other,
}

pub fn mark_class(shape: &Shape, cells: &Cells, now: i64) -> MarkClass {
    let marked = own_marker(shape, cells, now).is_some();
    if !marked && foreign_marker(shape, cells, now) {
        return MarkClass::Other;
    }
    match judge_rewrite(shape, cells, now) {
        (Seen::Live(_), Some(row_ts)) => {
            if marked {
                return MarkClass::Already;
            }
            if holds_others(shape, cells, now) {
                return MarkClass::Other;
            }
            // At the newest required timestamp, carrying the row's.
            let ts = shape
                .columns
                .iter()
                .filter(|c| c.kind == Kind::Required)
                .filter_map(|c| newest_visible(cells, c.family, c.qualifier.as_bytes(), now))
                .map(|(ts, _)| ts)
                .max()
                .unwrap_or(row_ts);
            let value = if ts == row_ts {
                shape.marker_fingerprint()
            } else {
                row_ts.to_be_bytes().to_vec()
            };
            MarkClass::Marked(ts, value)
        }
        (Seen::Incomplete(_), _) => MarkClass::Incomplete,
        (Seen::Stranger, _) => MarkClass::Other,
        _ => {
            let legacy = newest_visible(cells, shape.first_family(), LEGACY_MARKER, now);
            match legacy {
                Some((ts, _)) if shape.all_options() && !shape.owns_family => {
                    if holds_others(shape, cells, now) {
                        MarkClass::Other
                    } else {
                        MarkClass::Marked(ts, shape.marker_fingerprint())
                    }
                }
                _ => MarkClass::NotLive,
            }
        }
    }
}

/// Whether the row has a visible cell in one of the struct's families.
pub fn touches(shape: &Shape, cells: &Cells, now: i64) -> bool {
    cells.iter().any(|((f, _), versions)| {
        shape.families.contains(&f.as_str())
            && versions
                .keys()
                .next_back()
                .is_some_and(|ts| visible(f, *ts, now))
    })
}
