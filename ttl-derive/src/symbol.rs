//! Attribute names, in one place so the parser and the messages agree.

use std::fmt;

use syn::Path;

/// One attribute name (`bigtable`, `ttl`) or key (`table`, `expire_at`, …).
#[derive(Copy, Clone, PartialEq, Eq)]
pub struct Symbol(pub &'static str);

/// `#[bigtable(...)]`
pub const BIGTABLE: Symbol = Symbol("bigtable");
/// `#[ttl(...)]`
pub const TTL: Symbol = Symbol("ttl");

// `#[bigtable(...)]` on the struct.
pub const TABLE: Symbol = Symbol("table");
pub const FAMILY: Symbol = Symbol("family");
pub const KEY_SEPARATOR: Symbol = Symbol("key_separator");
pub const CRATE: Symbol = Symbol("crate");
pub const RENAME_ALL: Symbol = Symbol("rename_all");
pub const OWNS_FAMILY: Symbol = Symbol("owns_family");
pub const MARKER: Symbol = Symbol("marker");

// `#[ttl(...)]` on the struct.
pub const DEFAULT: Symbol = Symbol("default");
pub const WRITTEN_AT: Symbol = Symbol("written_at");

// `#[bigtable(...)]` on a field (plus `family`).
pub const KEY: Symbol = Symbol("key");
pub const COLUMN: Symbol = Symbol("column");
pub const COUNTER: Symbol = Symbol("counter");
pub const MAP: Symbol = Symbol("map");
pub const SKIP: Symbol = Symbol("skip");
// `default` on a field is spelled as the struct's `#[ttl(default)]`: [`DEFAULT`].

// `#[bigtable(...)]` on a `#[derive(CellCodec)]` enum, and on its variants.
pub const BY_NAME: Symbol = Symbol("by_name");
pub const BY_NUMBER: Symbol = Symbol("by_number");
pub const RENAME: Symbol = Symbol("rename");

// `#[ttl(...)]` on a field.
pub const EXPIRE_AT: Symbol = Symbol("expire_at");
pub const FOR: Symbol = Symbol("for");

/// The keys each attribute accepts at each position, for "unknown key" messages.
pub const STRUCT_BIGTABLE_KEYS: &[Symbol] = &[
    TABLE,
    FAMILY,
    KEY_SEPARATOR,
    RENAME_ALL,
    OWNS_FAMILY,
    MARKER,
    CRATE,
];
pub const STRUCT_TTL_KEYS: &[Symbol] = &[DEFAULT, WRITTEN_AT];
pub const FIELD_BIGTABLE_KEYS: &[Symbol] = &[KEY, COLUMN, FAMILY, COUNTER, MAP, DEFAULT, SKIP];
pub const ENUM_BIGTABLE_KEYS: &[Symbol] = &[BY_NAME, BY_NUMBER, RENAME_ALL, CRATE];
pub const VARIANT_BIGTABLE_KEYS: &[Symbol] = &[RENAME];
pub const NEWTYPE_BIGTABLE_KEYS: &[Symbol] = &[CRATE];
pub const FIELD_TTL_KEYS: &[Symbol] = &[EXPIRE_AT, FOR];

/// The default qualifier of the `written_at` shadow column, the one the
/// runtime's operations assume too.
pub const DEFAULT_WRITTEN_AT_QUALIFIER: &str = bigtable_ttl_spec::DEFAULT_WRITTEN_AT;

impl PartialEq<Symbol> for Path {
    fn eq(&self, word: &Symbol) -> bool {
        self.is_ident(word.0)
    }
}

impl fmt::Display for Symbol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

/// "`a`, `b` or `c`" for messages.
pub fn one_of(keys: &[Symbol]) -> String {
    let quoted: Vec<String> = keys.iter().map(|k| format!("`{k}`")).collect();
    match quoted.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

impl PartialEq<Symbol> for &Path {
    fn eq(&self, word: &Symbol) -> bool {
        self.is_ident(word.0)
    }
}

/// The valid key closest to a misspelt `key`, if it is close enough to be a
/// typo (edit distance at most a third of its length, and at least 1).
pub fn closest(key: &str, valid: &[Symbol]) -> Option<Symbol> {
    valid
        .iter()
        .map(|v| (edit_distance(key, v.0), *v))
        .filter(|(d, v)| *d <= (v.0.len() / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, v)| v)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = if ca == *cb {
                prev
            } else {
                1 + prev.min(cur).min(row[j])
            };
            prev = cur;
        }
    }
    row[b.len()]
}
