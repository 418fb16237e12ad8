//! The zoo: structs of one table, each written out twice, once as the
//! derive sees it and once as the model does ([`Shape`], by hand, checked
//! against the derive's schema before the first case), and what the test
//! drives each with ([`Subject`]).
//!
//! Every family has one policy across the zoo, so that any structs drawn
//! together can share a table: `s`, `t`, `x`, `ci`, `wl` one-second
//! expiration, `d` a default of 4 s.

use std::collections::BTreeMap;
use std::fmt;

use bigtable_ttl::Update;
use bigtable_ttl::{BigtableRow, CellCodec, Condition, CounterField, MapField};
use chrono::{DateTime, Utc};

/// The default TTL of family `d` (ms).
pub const D_MS: i64 = 4_000;

/// The TTL of a family's policy, 0 for one-second expiration (µs): a cell
/// at `ts` is visible at `now` while `now < ts + default`.
pub fn default_micros(family: &str) -> i64 {
    if family == "d" {
        D_MS * 1_000
    } else {
        0
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Required,
    Optional,
    WithDefault,
    Counter,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    Str,
    I64,
}

pub struct Col {
    pub family: &'static str,
    pub qualifier: &'static str,
    pub kind: Kind,
    pub codec: Codec,
}

/// What the model knows of a struct, written out by hand.
pub struct Shape {
    pub name: &'static str,
    /// Its row marker's qualifier, in its first family.
    pub marker: &'static [u8],
    /// Its families, its own first (map families too).
    pub families: &'static [&'static str],
    pub owns_family: bool,
    pub columns: &'static [Col],
    /// Its map's family.
    pub map: Option<&'static str>,
    /// Its `written_at` shadow column: (family, qualifier).
    pub shadow: Option<(&'static str, &'static str)>,
}

impl Shape {
    /// The value of its row marker at the row's own timestamp, as the
    /// library writes it: its fingerprint.
    pub fn marker_fingerprint(&self) -> Vec<u8> {
        let who = ALL
            .into_iter()
            .find(|w| std::ptr::eq(w.shape(), self))
            .expect("a shape of the zoo");
        who.schema().marker_fingerprint()
    }

    pub fn first_family(&self) -> &'static str {
        self.families[0]
    }

    pub fn all_options(&self) -> bool {
        self.columns.iter().all(|c| c.kind == Kind::Optional)
    }

    /// Whether its marker alone makes a row: every field an `Option` or
    /// `#[bigtable(default)]` (the liveness guide).
    pub fn marker_makes_row(&self) -> bool {
        self.columns
            .iter()
            .all(|c| matches!(c.kind, Kind::Optional | Kind::WithDefault))
    }

    pub fn has_required(&self) -> bool {
        self.columns.iter().any(|c| c.kind == Kind::Required)
    }

    /// Families that are not its map's.
    pub fn plain_families(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.families
            .iter()
            .copied()
            .filter(move |f| Some(*f) != self.map)
    }

    /// Every (family, qualifier) a put of it stores or deletes, map aside:
    /// its columns, counters' window marks, shadow, marker.
    pub fn owned_cells(&self) -> Vec<(&'static str, Vec<u8>)> {
        let mut owned: Vec<(&'static str, Vec<u8>)> = Vec::new();
        for c in self.columns {
            owned.push((c.family, c.qualifier.as_bytes().to_vec()));
            if c.kind == Kind::Counter {
                owned.push((c.family, window_mark(c.qualifier)));
            }
        }
        if let Some((f, q)) = self.shadow {
            owned.push((f, q.as_bytes().to_vec()));
        }
        owned.push((self.first_family(), self.marker.to_vec()));
        owned
    }

    /// Whether it owns cell `(family, qualifier)` (see the guide's "Several
    /// structs in one table"), the legacy marker aside.
    pub fn owns(&self, family: &str, qualifier: &[u8]) -> bool {
        Some(family) == self.map
            || (self.owns_family && family == self.first_family())
            || self
                .owned_cells()
                .iter()
                .any(|(f, q)| *f == family && q == qualifier)
    }
}

pub fn window_mark(qualifier: &str) -> Vec<u8> {
    [b"\0", qualifier.as_bytes()].concat()
}

pub const LEGACY_MARKER: &[u8] = b"\0";

const fn col(family: &'static str, qualifier: &'static str, kind: Kind, codec: Codec) -> Col {
    Col {
        family,
        qualifier,
        kind,
        codec,
    }
}

use Codec::{Str, I64};
use Kind::{Counter, Optional, Required, WithDefault};

// ---------------------------------------------------------------------------
// The structs. One-second structs carry `#[ttl(expire_at)] expires_at`.

macro_rules! one_second {
    ($(#[$m:meta])* $name:ident { $($(#[$fm:meta])* $f:ident: $t:ty),* $(,)? }) => {
        #[derive(Debug, Clone, PartialEq, BigtableRow)]
        $(#[$m])*
        pub struct $name {
            #[bigtable(key)]
            pub id: String,
            #[ttl(expire_at)]
            pub expires_at: DateTime<Utc>,
            $($(#[$fm])* pub $f: $t,)*
        }
    };
}

one_second!(
    #[bigtable(table = "zoo", family = "s")]
    Customer {
        name: String,
        email: String
    }
);
one_second!(
    #[bigtable(table = "zoo", family = "s")]
    Product {
        name: String,
        price: i64
    }
);
one_second!(
    /// A later version of `Product`, keeping its marker.
    #[bigtable(table = "zoo", family = "s", marker = "Product")]
    ProductV2 { name: String, price: i64, #[bigtable(default)] stock: i64 }
);
one_second!(
    #[bigtable(table = "zoo", family = "s")]
    Label { name: String }
);
one_second!(#[bigtable(table = "zoo", family = "s")] Memo { note: Option<String>, status: Option<String> });
one_second!(#[bigtable(table = "zoo", family = "s")] Stats { #[bigtable(counter)] visits: i64, badge: Option<String> });
one_second!(#[bigtable(table = "zoo", family = "s")] Pref { #[bigtable(default)] theme: String, lang: Option<String> });
one_second!(
    #[bigtable(table = "zoo", family = "s", marker = "zoo.Tag")]
    Tag { name: Option<String>, status: Option<String> }
);
one_second!(
    #[bigtable(table = "zoo", family = "s")]
    Cart { owner: String, #[bigtable(map, family = "ci")] items: BTreeMap<String, String> }
);
one_second!(
    #[bigtable(table = "zoo", family = "s")]
    #[ttl(written_at = "post_wa")]
    Post { body: String }
);
one_second!(
    #[bigtable(table = "zoo", family = "s")]
    #[ttl(written_at = "like_wa")]
    Like { who: Option<String> }
);
one_second!(
    /// Two families: its own `t`, and `note` in the shared `s`.
    #[bigtable(table = "zoo", family = "t")]
    Core { name: String, level: i64, #[bigtable(family = "s")] note: Option<String> }
);
one_second!(
    #[bigtable(table = "zoo", family = "t")]
    Wishlist { note: Option<String>, #[bigtable(map, family = "wl")] wishes: BTreeMap<String, String> }
);
one_second!(
    #[bigtable(table = "zoo", family = "x", owns_family)]
    Extra { y: String, status: Option<String> }
);
one_second!(
    #[bigtable(table = "zoo", family = "t")]
    Quota {
        plan: String,
        #[bigtable(counter)]
        used: i64
    }
);

/// Two structs of one name: one marker, `\0\0Item`.
pub mod inventory {
    use bigtable_ttl::BigtableRow;
    use chrono::{DateTime, Utc};
    one_second!(#[bigtable(table = "zoo", family = "s")] Item { label: Option<String> });
}

pub mod wishlist {
    use bigtable_ttl::BigtableRow;
    use chrono::{DateTime, Utc};
    one_second!(#[bigtable(table = "zoo", family = "s")] Item { label: Option<String>, qty: Option<i64> });
}

/// A third `Item`, sharing no column name with the two above: each tells
/// its rows from theirs by the marker's fingerprint.
pub mod audit {
    use bigtable_ttl::BigtableRow;
    use chrono::{DateTime, Utc};
    one_second!(#[bigtable(table = "zoo", family = "s")] Item { seen: Option<String> });
}

/// Default expiration, family `d`.
#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "zoo", family = "d")]
#[ttl(default = "4s", written_at)]
pub struct Session {
    #[bigtable(key)]
    pub id: String,
    pub user: String,
    pub status: Option<String>,
}

/// Shares `Session`'s shadow `d:written_at`: the two cannot go through one
/// connection.
#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "zoo", family = "d")]
#[ttl(default = "4s", written_at)]
pub struct Click {
    #[bigtable(key)]
    pub id: String,
    pub url: String,
}

#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "zoo", family = "d")]
#[ttl(default = "4s", written_at = "visit_wa")]
pub struct Visit {
    #[bigtable(key)]
    pub id: String,
    pub path: String,
    pub name: Option<String>,
    #[ttl(expire_at)]
    pub until: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "zoo", family = "d")]
#[ttl(default = "4s")]
pub struct Note {
    #[bigtable(key)]
    pub id: String,
    pub text: Option<String>,
    pub status: Option<String>,
}

// Refused beside another struct of the zoo on one connection, never run.
one_second!(
    /// A map in `Cart`'s map family.
    #[bigtable(table = "zoo", family = "s")]
    CartB { label: Option<String>, #[bigtable(map, family = "ci")] stash: BTreeMap<String, String> }
);
one_second!(
    /// A column in the family `Extra` owns.
    #[bigtable(table = "zoo", family = "t")]
    XSpy { #[bigtable(family = "x")] peek: Option<String> }
);
one_second!(
    /// A column named as `Like`'s shadow.
    #[bigtable(table = "zoo", family = "s")]
    Spoiler { like_wa: Option<String> }
);

// ---------------------------------------------------------------------------
// The model's view of each.

/// Which struct.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Who {
    Customer,
    Product,
    ProductV2,
    Label,
    Memo,
    Stats,
    Pref,
    Tag,
    Cart,
    Post,
    Like,
    Core,
    Wishlist,
    Extra,
    Quota,
    InvItem,
    WishItem,
    AuditItem,
    Session,
    Click,
    Visit,
    Note,
    CartB,
    XSpy,
    Spoiler,
}

/// The structs layouts are drawn from.
pub const RUNNABLE: [Who; 22] = [
    Who::Customer,
    Who::Product,
    Who::ProductV2,
    Who::Label,
    Who::Memo,
    Who::Stats,
    Who::Pref,
    Who::Tag,
    Who::Cart,
    Who::Post,
    Who::Like,
    Who::Core,
    Who::Wishlist,
    Who::Extra,
    Who::Quota,
    Who::InvItem,
    Who::WishItem,
    Who::AuditItem,
    Who::Session,
    Who::Click,
    Who::Visit,
    Who::Note,
];

/// Every struct of the zoo.
pub const ALL: [Who; 25] = [
    Who::Customer,
    Who::Product,
    Who::ProductV2,
    Who::Label,
    Who::Memo,
    Who::Stats,
    Who::Pref,
    Who::Tag,
    Who::Cart,
    Who::Post,
    Who::Like,
    Who::Core,
    Who::Wishlist,
    Who::Extra,
    Who::Quota,
    Who::InvItem,
    Who::WishItem,
    Who::AuditItem,
    Who::Session,
    Who::Click,
    Who::Visit,
    Who::Note,
    Who::CartB,
    Who::XSpy,
    Who::Spoiler,
];

/// Groups of structs that meet often (one family, or one key space), so
/// that layouts drawn from one put them together.
pub const CLUSTERS: [&[Who]; 3] = [
    &[
        Who::Customer,
        Who::Product,
        Who::ProductV2,
        Who::Label,
        Who::Memo,
        Who::Stats,
        Who::Pref,
        Who::Tag,
        Who::Cart,
        Who::Post,
        Who::Like,
        Who::Core,
        Who::InvItem,
        Who::WishItem,
        Who::AuditItem,
    ],
    &[
        Who::Core,
        Who::Wishlist,
        Who::Extra,
        Who::Quota,
        Who::Memo,
        Who::Stats,
    ],
    &[
        Who::Session,
        Who::Click,
        Who::Visit,
        Who::Note,
        Who::Customer,
    ],
];

macro_rules! shape {
    ($name:literal, $marker:literal, [$($fam:literal),*], owns $owns:literal,
     map $map:expr, shadow $shadow:expr, [$($col:expr),* $(,)?]) => {{
        static SHAPE: Shape = Shape {
            name: $name,
            marker: $marker,
            families: &[$($fam),*],
            owns_family: $owns,
            columns: &[$($col),*],
            map: $map,
            shadow: $shadow,
        };
        &SHAPE
    }};
}

impl Who {
    pub fn shape(self) -> &'static Shape {
        match self {
            Who::Customer => {
                shape!("Customer", b"\0\0Customer", ["s"], owns false, map None, shadow None,
                [col("s", "name", Required, Str), col("s", "email", Required, Str)])
            }
            Who::Product => {
                shape!("Product", b"\0\0Product", ["s"], owns false, map None, shadow None,
                [col("s", "name", Required, Str), col("s", "price", Required, I64)])
            }
            Who::ProductV2 => {
                shape!("ProductV2", b"\0\0Product", ["s"], owns false, map None, shadow None,
                [col("s", "name", Required, Str), col("s", "price", Required, I64),
                 col("s", "stock", WithDefault, I64)])
            }
            Who::Label => shape!("Label", b"\0\0Label", ["s"], owns false, map None, shadow None,
                [col("s", "name", Required, Str)]),
            Who::Memo => shape!("Memo", b"\0\0Memo", ["s"], owns false, map None, shadow None,
                [col("s", "note", Optional, Str), col("s", "status", Optional, Str)]),
            Who::Stats => shape!("Stats", b"\0\0Stats", ["s"], owns false, map None, shadow None,
                [col("s", "visits", Counter, I64), col("s", "badge", Optional, Str)]),
            Who::Pref => shape!("Pref", b"\0\0Pref", ["s"], owns false, map None, shadow None,
                [col("s", "theme", WithDefault, Str), col("s", "lang", Optional, Str)]),
            Who::Tag => shape!("Tag", b"\0\0zoo.Tag", ["s"], owns false, map None, shadow None,
                [col("s", "name", Optional, Str), col("s", "status", Optional, Str)]),
            Who::Cart => {
                shape!("Cart", b"\0\0Cart", ["s", "ci"], owns false, map Some("ci"), shadow None,
                [col("s", "owner", Required, Str)])
            }
            Who::Post => {
                shape!("Post", b"\0\0Post", ["s"], owns false, map None, shadow Some(("s", "post_wa")),
                [col("s", "body", Required, Str)])
            }
            Who::Like => {
                shape!("Like", b"\0\0Like", ["s"], owns false, map None, shadow Some(("s", "like_wa")),
                [col("s", "who", Optional, Str)])
            }
            Who::Core => shape!("Core", b"\0\0Core", ["t", "s"], owns false, map None, shadow None,
                [col("t", "name", Required, Str), col("t", "level", Required, I64),
                 col("s", "note", Optional, Str)]),
            Who::Wishlist => {
                shape!("Wishlist", b"\0\0Wishlist", ["t", "wl"], owns false, map Some("wl"), shadow None,
                [col("t", "note", Optional, Str)])
            }
            Who::Extra => shape!("Extra", b"\0\0Extra", ["x"], owns true, map None, shadow None,
                [col("x", "y", Required, Str), col("x", "status", Optional, Str)]),
            Who::Quota => shape!("Quota", b"\0\0Quota", ["t"], owns false, map None, shadow None,
                [col("t", "plan", Required, Str), col("t", "used", Counter, I64)]),
            Who::InvItem => {
                shape!("inventory::Item", b"\0\0Item", ["s"], owns false, map None, shadow None,
                [col("s", "label", Optional, Str)])
            }
            Who::WishItem => {
                shape!("wishlist::Item", b"\0\0Item", ["s"], owns false, map None, shadow None,
                [col("s", "label", Optional, Str), col("s", "qty", Optional, I64)])
            }
            Who::AuditItem => {
                shape!("audit::Item", b"\0\0Item", ["s"], owns false, map None, shadow None,
                [col("s", "seen", Optional, Str)])
            }
            Who::Session => {
                shape!("Session", b"\0\0Session", ["d"], owns false, map None, shadow Some(("d", "written_at")),
                [col("d", "user", Required, Str), col("d", "status", Optional, Str)])
            }
            Who::Click => {
                shape!("Click", b"\0\0Click", ["d"], owns false, map None, shadow Some(("d", "written_at")),
                [col("d", "url", Required, Str)])
            }
            Who::Visit => {
                shape!("Visit", b"\0\0Visit", ["d"], owns false, map None, shadow Some(("d", "visit_wa")),
                [col("d", "path", Required, Str), col("d", "name", Optional, Str)])
            }
            Who::Note => shape!("Note", b"\0\0Note", ["d"], owns false, map None, shadow None,
                [col("d", "text", Optional, Str), col("d", "status", Optional, Str)]),
            Who::CartB => {
                shape!("CartB", b"\0\0CartB", ["s", "ci"], owns false, map Some("ci"), shadow None,
                [col("s", "label", Optional, Str)])
            }
            Who::XSpy => shape!("XSpy", b"\0\0XSpy", ["t", "x"], owns false, map None, shadow None,
                [col("x", "peek", Optional, Str)]),
            Who::Spoiler => {
                shape!("Spoiler", b"\0\0Spoiler", ["s"], owns false, map None, shadow None,
                [col("s", "like_wa", Optional, Str)])
            }
        }
    }

    /// The derive's schema, to check the shape against.
    pub fn schema(self) -> &'static bigtable_ttl::Schema {
        match self {
            Who::Customer => Customer::SCHEMA,
            Who::Product => Product::SCHEMA,
            Who::ProductV2 => ProductV2::SCHEMA,
            Who::Label => Label::SCHEMA,
            Who::Memo => Memo::SCHEMA,
            Who::Stats => Stats::SCHEMA,
            Who::Pref => Pref::SCHEMA,
            Who::Tag => Tag::SCHEMA,
            Who::Cart => Cart::SCHEMA,
            Who::Post => Post::SCHEMA,
            Who::Like => Like::SCHEMA,
            Who::Core => Core::SCHEMA,
            Who::Wishlist => Wishlist::SCHEMA,
            Who::Extra => Extra::SCHEMA,
            Who::Quota => Quota::SCHEMA,
            Who::InvItem => inventory::Item::SCHEMA,
            Who::WishItem => wishlist::Item::SCHEMA,
            Who::AuditItem => audit::Item::SCHEMA,
            Who::Session => Session::SCHEMA,
            Who::Click => Click::SCHEMA,
            Who::Visit => Visit::SCHEMA,
            Who::Note => Note::SCHEMA,
            Who::CartB => CartB::SCHEMA,
            Who::XSpy => XSpy::SCHEMA,
            Who::Spoiler => Spoiler::SCHEMA,
        }
    }

    /// Why `self` and `other` cannot go through one connection (the
    /// guide's "Layouts that cannot be kept apart are refused"), by the
    /// shapes alone.
    pub fn clash(self, other: Who) -> Option<&'static str> {
        if self == other {
            return None;
        }
        let (a, b) = (self.shape(), other.shape());
        if a.marker == b.marker {
            return Some("one marker");
        }
        let stores_in = |s: &Shape, family: &str| {
            s.families.contains(&family) || s.columns.iter().any(|c| c.family == family)
        };
        for (x, y) in [(a, b), (b, a)] {
            if x.map.is_some_and(|m| stores_in(y, m)) {
                return Some("one map family");
            }
            if let Some((f, q)) = x.shadow {
                let theirs = y.shadow == Some((f, q))
                    || y.columns.iter().any(|c| c.family == f && c.qualifier == q);
                if theirs {
                    return Some("one shadow column");
                }
            }
            if x.owns_family && stores_in(y, x.first_family()) {
                return Some("an owned family another struct uses");
            }
        }
        None
    }
}

impl fmt::Display for Who {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.shape().name)
    }
}

// ---------------------------------------------------------------------------
// Values.

const STRINGS: [&str; 3] = ["ann", "bob", "cy"];
const DEFAULT_STRINGS: [&str; 3] = ["", "dark", "light"];

/// The values of one write of a struct: column `i`'s bytes from `seed`
/// and the column alone, so that two writes of one seed agree and a
/// condition drawn with a seed can match.
#[derive(Clone, Copy)]
pub struct Gen {
    pub shape: &'static Shape,
    pub seed: u8,
}

impl Gen {
    pub fn new(who: Who, seed: u8) -> Self {
        Gen {
            shape: who.shape(),
            seed,
        }
    }

    /// Column `i`'s value, never absent (what `set` and conditions use).
    pub fn value_bytes(&self, i: usize) -> Vec<u8> {
        value_bytes(&self.shape.columns[i], self.seed)
    }

    /// What a whole-row write of this seed stores in column `i` (`None`:
    /// an `Option` left out).
    pub fn bytes(&self, i: usize) -> Option<Vec<u8>> {
        let c = &self.shape.columns[i];
        let absent = c.kind == Kind::Optional && (usize::from(self.seed) + i) % 3 == 2;
        (!absent).then(|| self.value_bytes(i))
    }

    /// The map's entries a whole-row write of this seed stores.
    pub fn entries(&self) -> BTreeMap<String, String> {
        ["k1", "k2"]
            .iter()
            .enumerate()
            .filter(|(i, _)| (self.seed >> i) & 1 == 1)
            .map(|(i, k)| ((*k).to_owned(), format!("v{}", usize::from(self.seed) + i)))
            .collect()
    }

    pub fn req<V: CellCodec>(&self, i: &mut usize) -> V {
        let v = decode(&self.bytes(*i).expect("a required value"));
        *i += 1;
        v
    }

    pub fn def<V: CellCodec>(&self, i: &mut usize) -> V {
        self.req(i)
    }

    pub fn ctr<V: CellCodec>(&self, i: &mut usize) -> V {
        self.req(i)
    }

    pub fn opt<V: CellCodec>(&self, i: &mut usize) -> Option<V> {
        let v = self.bytes(*i).map(|b| decode(&b));
        *i += 1;
        v
    }

    pub fn map<M: FromIterator<(String, String)>>(&self, _: &mut usize) -> M {
        self.entries().into_iter().collect()
    }

    pub fn value<V: CellCodec>(&self, i: usize) -> V {
        decode(&self.value_bytes(i))
    }
}

pub fn value_bytes(c: &Col, seed: u8) -> Vec<u8> {
    let k = usize::from(seed) % 3;
    match (c.codec, c.kind) {
        (Codec::Str, Kind::WithDefault) => DEFAULT_STRINGS[k].as_bytes().to_vec(),
        (Codec::Str, _) => STRINGS[k].as_bytes().to_vec(),
        (Codec::I64, Kind::Counter) => i64::from(seed).to_be_bytes().to_vec(),
        (Codec::I64, _) => i64::try_from(k).unwrap().to_be_bytes().to_vec(),
    }
}

/// What an absent column of this kind reads as (`None`: absent).
pub fn absent_bytes(c: &Col) -> Option<Vec<u8>> {
    match (c.kind, c.codec) {
        (Kind::Optional | Kind::Required, _) => None,
        (Kind::WithDefault, Codec::Str) => Some(Vec::new()),
        (Kind::WithDefault | Kind::Counter, Codec::I64) => Some(0i64.to_be_bytes().to_vec()),
        (Kind::Counter, Codec::Str) => unreachable!("a counter is an i64"),
    }
}

fn decode<V: CellCodec>(bytes: &[u8]) -> V {
    V::decode(bytes).unwrap_or_else(|e| panic!("a zoo value does not decode: {e}"))
}

// ---------------------------------------------------------------------------
// What the test drives each struct with.

/// A struct of the zoo, typed.
pub trait Subject: BigtableRow<Key = String> + Clone + fmt::Debug + Send + Sync + 'static {
    const WHO: Who;
    /// The value a whole-row write of `seed` writes, expiring at `at`.
    fn build(id: &str, at: DateTime<Utc>, g: &Gen) -> Self;
    /// `u` setting column `col` (not a counter's) to `g`'s value.
    fn set<'t>(u: Update<'t, Self>, col: usize, g: &Gen) -> Update<'t, Self>;
    /// `u` clearing column `col` (not a counter's).
    fn clear(u: Update<'_, Self>, col: usize) -> Update<'_, Self>;
    /// "Column `col` (not a counter's) holds `g`'s value."
    fn equals(col: usize, g: &Gen) -> Condition<Self>;
    fn counter() -> Option<CounterField<Self>>;
    fn map() -> Option<MapField<Self, String, String>>;
}

fn at_req(at: DateTime<Utc>) -> DateTime<Utc> {
    at
}

#[allow(clippy::unnecessary_wraps)] // The `subject!` macro's expiry field of an `Option` type.
fn at_some(at: DateTime<Utc>) -> Option<DateTime<Utc>> {
    Some(at)
}

macro_rules! subject {
    ($ty:ty = $who:expr; [$($ef:ident = $ev:ident)?]; $($kind:ident $field:ident $c:ident: $vt:ty),* $(,)?) => {
        impl Subject for $ty {
            const WHO: Who = $who;

            fn build(id: &str, at: DateTime<Utc>, g: &Gen) -> Self {
                let mut _i = 0usize;
                let _ = at;
                Self {
                    id: id.to_owned(),
                    $($ef: $ev(at),)?
                    $($field: g.$kind::<$vt>(&mut _i),)*
                }
            }

            fn set<'t>(u: Update<'t, Self>, col: usize, g: &Gen) -> Update<'t, Self> {
                let mut _i = 0usize;
                let _ = (col, g);
                $(let u = subject!(@set $kind, u, col, g, _i, <$ty>::$c, $vt);)*
                u
            }

            fn clear(u: Update<'_, Self>, col: usize) -> Update<'_, Self> {
                let mut _i = 0usize;
                let _ = col;
                $(let u = subject!(@clear $kind, u, col, _i, <$ty>::$c);)*
                u
            }

            fn equals(col: usize, g: &Gen) -> Condition<Self> {
                let mut _i = 0usize;
                let _ = g;
                $(subject!(@eq $kind, col, g, _i, <$ty>::$c, $vt);)*
                panic!("no condition on column {col} of {}", $who)
            }

            #[allow(unused_mut, unused_assignments)]
            fn counter() -> Option<CounterField<Self>> {
                let mut found = None;
                $(subject!(@ctr $kind, found, <$ty>::$c);)*
                found
            }

            #[allow(unused_mut, unused_assignments)]
            fn map() -> Option<MapField<Self, String, String>> {
                let mut found = None;
                $(subject!(@map $kind, found, <$ty>::$c);)*
                found
            }
        }
    };
    (@set map, $u:ident, $col:ident, $g:ident, $i:ident, $c:expr, $vt:ty) => { $u };
    (@set ctr, $u:ident, $col:ident, $g:ident, $i:ident, $c:expr, $vt:ty) => {{ $i += 1; $u }};
    (@set $kind:ident, $u:ident, $col:ident, $g:ident, $i:ident, $c:expr, $vt:ty) => {{
        let u = if $col == $i { $u.set($c, &$g.value::<$vt>($i)) } else { $u };
        $i += 1;
        u
    }};
    (@clear map, $u:ident, $col:ident, $i:ident, $c:expr) => { $u };
    (@clear ctr, $u:ident, $col:ident, $i:ident, $c:expr) => {{ $i += 1; $u }};
    (@clear $kind:ident, $u:ident, $col:ident, $i:ident, $c:expr) => {{
        let u = if $col == $i { $u.clear($c) } else { $u };
        $i += 1;
        u
    }};
    (@eq map, $col:ident, $g:ident, $i:ident, $c:expr, $vt:ty) => {};
    (@eq ctr, $col:ident, $g:ident, $i:ident, $c:expr, $vt:ty) => { $i += 1; };
    (@eq $kind:ident, $col:ident, $g:ident, $i:ident, $c:expr, $vt:ty) => {
        if $col == $i {
            return $c.equals(&$g.value::<$vt>($i));
        }
        $i += 1;
    };
    (@ctr ctr, $found:ident, $c:expr) => { $found = Some($c); };
    (@ctr $kind:ident, $found:ident, $c:expr) => {};
    (@map map, $found:ident, $c:expr) => { $found = Some($c); };
    (@map $kind:ident, $found:ident, $c:expr) => {};
}

type Entries = BTreeMap<String, String>;

subject!(Customer = Who::Customer; [expires_at = at_req]; req name NAME: String, req email EMAIL: String);
subject!(Product = Who::Product; [expires_at = at_req]; req name NAME: String, req price PRICE: i64);
subject!(ProductV2 = Who::ProductV2; [expires_at = at_req];
    req name NAME: String, req price PRICE: i64, def stock STOCK: i64);
subject!(Label = Who::Label; [expires_at = at_req]; req name NAME: String);
subject!(Memo = Who::Memo; [expires_at = at_req]; opt note NOTE: String, opt status STATUS: String);
subject!(Stats = Who::Stats; [expires_at = at_req]; ctr visits VISITS: i64, opt badge BADGE: String);
subject!(Pref = Who::Pref; [expires_at = at_req]; def theme THEME: String, opt lang LANG: String);
subject!(Tag = Who::Tag; [expires_at = at_req]; opt name NAME: String, opt status STATUS: String);
subject!(Cart = Who::Cart; [expires_at = at_req]; req owner OWNER: String, map items ITEMS: Entries);
subject!(Post = Who::Post; [expires_at = at_req]; req body BODY: String);
subject!(Like = Who::Like; [expires_at = at_req]; opt who WHO: String);
subject!(Core = Who::Core; [expires_at = at_req];
    req name NAME: String, req level LEVEL: i64, opt note NOTE: String);
subject!(Wishlist = Who::Wishlist; [expires_at = at_req]; opt note NOTE: String, map wishes WISHES: Entries);
subject!(Extra = Who::Extra; [expires_at = at_req]; req y Y: String, opt status STATUS: String);
subject!(Quota = Who::Quota; [expires_at = at_req]; req plan PLAN: String, ctr used USED: i64);
subject!(inventory::Item = Who::InvItem; [expires_at = at_req]; opt label LABEL: String);
subject!(wishlist::Item = Who::WishItem; [expires_at = at_req]; opt label LABEL: String, opt qty QTY: i64);
subject!(audit::Item = Who::AuditItem; [expires_at = at_req]; opt seen SEEN: String);
subject!(Session = Who::Session; []; req user USER: String, opt status STATUS: String);
subject!(Click = Who::Click; []; req url URL: String);
subject!(Visit = Who::Visit; [until = at_some]; req path PATH: String, opt name NAME: String);
subject!(Note = Who::Note; []; opt text TEXT: String, opt status STATUS: String);
subject!(CartB = Who::CartB; [expires_at = at_req]; opt label LABEL: String, map stash STASH: Entries);
subject!(XSpy = Who::XSpy; [expires_at = at_req]; opt peek PEEK: String);
subject!(Spoiler = Who::Spoiler; [expires_at = at_req]; opt like_wa LIKE_WA: String);

/// Dispatch on the type of `$who`: `$body` with `$t` the type.
macro_rules! with_type {
    ($who:expr, |$t:ident| $body:expr) => {{
        use $crate::layouts_state_machine::zoo::*;
        match $who {
            Who::Customer => {
                type $t = Customer;
                $body
            }
            Who::Product => {
                type $t = Product;
                $body
            }
            Who::ProductV2 => {
                type $t = ProductV2;
                $body
            }
            Who::Label => {
                type $t = Label;
                $body
            }
            Who::Memo => {
                type $t = Memo;
                $body
            }
            Who::Stats => {
                type $t = Stats;
                $body
            }
            Who::Pref => {
                type $t = Pref;
                $body
            }
            Who::Tag => {
                type $t = Tag;
                $body
            }
            Who::Cart => {
                type $t = Cart;
                $body
            }
            Who::Post => {
                type $t = Post;
                $body
            }
            Who::Like => {
                type $t = Like;
                $body
            }
            Who::Core => {
                type $t = Core;
                $body
            }
            Who::Wishlist => {
                type $t = Wishlist;
                $body
            }
            Who::Extra => {
                type $t = Extra;
                $body
            }
            Who::Quota => {
                type $t = Quota;
                $body
            }
            Who::InvItem => {
                type $t = inventory::Item;
                $body
            }
            Who::WishItem => {
                type $t = wishlist::Item;
                $body
            }
            Who::AuditItem => {
                type $t = audit::Item;
                $body
            }
            Who::Session => {
                type $t = Session;
                $body
            }
            Who::Click => {
                type $t = Click;
                $body
            }
            Who::Visit => {
                type $t = Visit;
                $body
            }
            Who::Note => {
                type $t = Note;
                $body
            }
            Who::CartB => {
                type $t = CartB;
                $body
            }
            Who::XSpy => {
                type $t = XSpy;
                $body
            }
            Who::Spoiler => {
                type $t = Spoiler;
                $body
            }
        }
    }};
}
