//! Structs that evolve, on the emulator: rows written by an earlier version
//! of a struct read back by a later one (`#[bigtable(default)]`), fields
//! that are never stored (`skip`), columns named by `rename_all`, and
//! newtypes and C-like enums as values and key parts, each checked byte by
//! byte in what is really stored.

use crate::raw_rows::RawRows as _;
use crate::support;

use bigtable_ttl::data::Cell;
use bigtable_ttl::{
    BigtableRow, CellCodec, Clock, CodecError, Connection, Error, KeyPart, Scan, Table,
};
use chrono::{TimeDelta, Utc};

/// A fresh instance, shared by the versions of one struct, each on a
/// connection of its own, as versions run in processes of their own (one
/// connection refuses two structs writing one marker).
async fn open<T: BigtableRow>(conn: &Connection, clock: &Clock) -> Table<T> {
    let table = Table::<T>::new(support::connection_to(conn)).with_clock(clock.clone());
    table.ensure_schema().await.unwrap();
    table
}

async fn stored<T: BigtableRow>(table: &Table<T>, key: &[u8]) -> Vec<Cell> {
    support::stored_cells(table, key).await
}

fn value<'a>(cells: &'a [Cell], qualifier: &str) -> Option<&'a [u8]> {
    cells
        .iter()
        .find(|c| c.qualifier == qualifier.as_bytes())
        .map(|c| c.value.as_slice())
}

fn qualifiers(cells: &[Cell]) -> Vec<String> {
    let mut q: Vec<String> = cells
        .iter()
        .map(|c| String::from_utf8_lossy(&c.qualifier).into_owned())
        .collect();
    q.sort();
    q
}

mod v1 {
    use bigtable_ttl::BigtableRow;

    /// The first version of the struct.
    #[derive(BigtableRow, Debug, Clone, PartialEq)]
    #[bigtable(table = "profiles", family = "p")]
    #[ttl(default = "30d")]
    pub struct Profile {
        #[bigtable(key)]
        pub id: String,
        pub name: String,
    }

    /// A struct before its rename.
    #[derive(BigtableRow, Debug, Clone, PartialEq)]
    #[bigtable(table = "items", family = "i")]
    #[ttl(default = "30d")]
    pub struct Item {
        #[bigtable(key)]
        pub id: String,
        pub label: String,
        pub note: Option<String>,
    }
}

mod v2 {
    use bigtable_ttl::BigtableRow;

    pub fn english() -> String {
        "en".to_owned()
    }

    /// The second version: two fields more, both with a default.
    #[derive(BigtableRow, Debug, Clone, PartialEq)]
    #[bigtable(table = "profiles", family = "p")]
    #[ttl(default = "30d")]
    pub struct Profile {
        #[bigtable(key)]
        pub id: String,
        pub name: String,
        #[bigtable(default)]
        pub visits: u64,
        #[bigtable(default = "english")]
        pub locale: String,
    }

    /// `v1::Item` renamed, its marker forgotten.
    #[derive(BigtableRow, Debug, Clone, PartialEq)]
    #[bigtable(table = "items", family = "i")]
    #[ttl(default = "30d")]
    pub struct Article {
        #[bigtable(key)]
        pub id: String,
        pub label: String,
        pub note: Option<String>,
    }

    /// `v1::Item` renamed, its marker kept.
    #[derive(BigtableRow, Debug, Clone, PartialEq)]
    #[bigtable(table = "items", family = "i", marker = "Item")]
    #[ttl(default = "30d")]
    pub struct Entry {
        #[bigtable(key)]
        pub id: String,
        pub label: String,
        pub note: Option<String>,
    }

    /// The second version as it would be without `default`.
    #[derive(BigtableRow, Debug, Clone, PartialEq)]
    #[bigtable(table = "profiles", family = "p", marker = "Profile")]
    #[ttl(default = "30d")]
    pub struct Strict {
        #[bigtable(key)]
        pub id: String,
        pub name: String,
        pub visits: u64,
    }

    /// A struct of its own (its own marker) with only a default column:
    /// rows of `Profile` have none of its cells, and are not its rows.
    #[derive(BigtableRow, Debug, Clone, PartialEq)]
    #[bigtable(table = "profiles", family = "p")]
    #[ttl(default = "30d")]
    pub struct OnlyVisits {
        #[bigtable(key)]
        pub id: String,
        #[bigtable(default)]
        pub visits: u64,
    }
}

/// A struct renamed without `marker = "..."` reads its old rows as absent
/// (another struct's marker), and says so: each such row is counted, and
/// the first logs what to change (`tests/telemetry.rs` checks the log).
/// Kept, the marker reads them; once a struct writing that marker is opened
/// on the same connection, the rows are that struct's and no longer counted.
#[tokio::test]
async fn a_struct_renamed_without_its_marker_counts_its_old_rows() {
    let conn = support::connection();
    let clock = Clock::manual(Utc::now());
    let old = open::<v1::Item>(&conn, &clock).await;
    let item = |id: &str, note: Option<&str>| v1::Item {
        id: id.into(),
        label: format!("label of {id}"),
        note: note.map(str::to_owned),
    };
    old.put_all(&[item("a", None), item("b", Some("n")), item("c", None)])
        .await
        .unwrap();
    drop(old);
    // A row this struct cannot explain (a column it does not declare) is
    // another struct's, and not counted.
    let wider = Table::<v1::Item>::new(support::connection_to(&conn));
    wider
        .raw()
        .mutate_row(
            "d",
            vec![
                bigtable_ttl::data::Mutation::set_cell("i", "\0\0Item", -1, Vec::new()),
                bigtable_ttl::data::Mutation::set_cell("i", "label", -1, b"x".to_vec()),
                bigtable_ttl::data::Mutation::set_cell("i", "extra", -1, b"y".to_vec()),
            ],
        )
        .await
        .unwrap();
    drop(wider);

    let renamed = open::<v2::Article>(&conn, &clock).await;
    assert_eq!(renamed.get(&"a".to_owned()).await.unwrap(), None);
    assert_eq!(renamed.read_stats().rows_under_unknown_marker, 1);
    assert!(renamed.scan(Scan::all()).await.unwrap().is_empty());
    assert_eq!(
        renamed.read_stats().rows_under_unknown_marker,
        4,
        "a, then a, b and c; not d"
    );
    // Expired, the old rows are no one's and not counted (the read's filter
    // leaves their cells out; `other_marker`'s unit tests judge such cells).
    clock.advance(TimeDelta::days(31));
    assert!(renamed.scan(Scan::all()).await.unwrap().is_empty());
    assert_eq!(renamed.read_stats().rows_under_unknown_marker, 4);
    clock.advance(-TimeDelta::days(31));

    let kept = Table::<v2::Entry>::new(renamed.connection().clone()).with_clock(clock.clone());
    let ids: Vec<String> = kept
        .scan(Scan::all())
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.value.id)
        .collect();
    // `d` too: under its own marker a column it does not declare is
    // another writer's, not a reason to leave the row out.
    assert_eq!(
        ids,
        ["a", "b", "c", "d"],
        "the kept marker reads the old rows"
    );
    assert!(renamed.scan(Scan::all()).await.unwrap().is_empty());
    assert_eq!(
        renamed.read_stats().rows_under_unknown_marker,
        4,
        "Item's marker is written by a struct opened on this connection"
    );
}

#[tokio::test]
async fn rows_written_before_a_field_existed_read_with_its_default() {
    let conn = support::connection();
    let clock = Clock::manual(Utc::now());
    let old = open::<v1::Profile>(&conn, &clock).await;
    let new = open::<v2::Profile>(&conn, &clock).await;
    let strict = open::<v2::Strict>(&conn, &clock).await;

    let written = old
        .put(&v1::Profile {
            id: "ann".into(),
            name: "Ann".into(),
        })
        .await
        .unwrap();
    assert_eq!(
        qualifiers(&stored(&old, b"ann").await),
        ["\0\0Profile", "name"]
    );

    let read = new.get(&"ann".to_owned()).await.unwrap().expect("alive");
    assert_eq!(
        read.value,
        v2::Profile {
            id: "ann".into(),
            name: "Ann".into(),
            visits: 0,
            locale: "en".into(),
        }
    );
    assert_eq!(read.expires_at, written.expires_at, "the old row's expiry");

    // What `default` saves the reader from.
    let err = strict.get(&"ann".to_owned()).await.unwrap_err();
    assert!(
        matches!(
            &err,
            Error::Decode(e) if e.source == CodecError::Missing && e.column == "p:visits"
        ),
        "{err}"
    );

    // A default field is written like any other, and read back as written.
    let bob = v2::Profile {
        id: "bob".into(),
        name: "Bob".into(),
        visits: 3,
        locale: "fr".into(),
    };
    new.put(&bob).await.unwrap();
    assert_eq!(
        qualifiers(&stored(&new, b"bob").await),
        ["\0\0Profile", "locale", "name", "visits"]
    );
    assert_eq!(
        new.get(&"bob".to_owned()).await.unwrap().unwrap().value,
        bob
    );

    // A condition compares what is stored: the old row reads `visits: 0`
    // but holds no `visits` cell, so `equals(&0)` does not match it.
    let replaced = new
        .put_if(
            &v2::Profile {
                id: "ann".into(),
                name: "Ann B.".into(),
                visits: 1,
                locale: "en".into(),
            },
            v2::Profile::VISITS.equals(&0),
        )
        .await
        .unwrap();
    assert!(replaced.is_none(), "no stored cell, no match");
    assert_eq!(
        new.get(&"ann".to_owned()).await.unwrap().unwrap().name,
        "Ann"
    );

    // A partial update of the new field on an old row keeps its expiry.
    new.update(&"ann".to_owned())
        .set(v2::Profile::VISITS, &5)
        .apply()
        .await
        .unwrap()
        .expect("the row is alive");
    let read = new.get(&"ann".to_owned()).await.unwrap().unwrap();
    assert_eq!((read.visits, read.locale.as_str()), (5, "en"));
    assert_eq!(read.expires_at, written.expires_at);
}

#[tokio::test]
async fn a_cleared_default_field_reads_its_default() {
    let conn = support::connection();
    let clock = Clock::manual(Utc::now());
    let profiles = open::<v2::Profile>(&conn, &clock).await;
    let key = "cy".to_owned();
    let written = profiles
        .put(&v2::Profile {
            id: key.clone(),
            name: "Cy".into(),
            visits: 7,
            locale: "fr".into(),
        })
        .await
        .unwrap();

    profiles
        .update(&key)
        .clear(v2::Profile::VISITS)
        .clear(v2::Profile::LOCALE)
        .apply()
        .await
        .unwrap()
        .expect("the row is alive");
    // The columns are gone, not rewritten with the default's bytes.
    assert_eq!(
        qualifiers(&stored(&profiles, b"cy").await),
        ["\0\0Profile", "name"]
    );
    let read = profiles.get(&key).await.unwrap().expect("alive");
    assert_eq!(
        read.value,
        v2::Profile {
            id: key.clone(),
            name: "Cy".into(),
            visits: 0,
            locale: "en".into(),
        }
    );
    assert_eq!(
        read.expires_at, written.expires_at,
        "the row keeps its expiry"
    );

    // A field with neither `Option` nor `default` is still refused.
    let err = profiles
        .update(&key)
        .clear(v2::Profile::NAME)
        .apply()
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::RequiredField(e) if e.field == "name"),
        "{err}"
    );
}

#[tokio::test]
async fn defaults_fill_a_row_but_never_make_one() {
    let conn = support::connection();
    let clock = Clock::manual(Utc::now());
    let old = open::<v1::Profile>(&conn, &clock).await;
    let only = open::<v2::OnlyVisits>(&conn, &clock).await;
    old.put(&v1::Profile {
        id: "ann".into(),
        name: "Ann".into(),
    })
    .await
    .unwrap();
    assert!(
        only.get(&"ann".to_owned()).await.unwrap().is_none(),
        "a row with none of the struct's cells is absent, not all defaults"
    );
    assert!(only.scan(Scan::all()).await.unwrap().is_empty());

    only.put(&v2::OnlyVisits {
        id: "ann".into(),
        visits: 2,
    })
    .await
    .unwrap();
    assert_eq!(
        only.get(&"ann".to_owned()).await.unwrap().unwrap().visits,
        2
    );
}

#[derive(BigtableRow, Debug, Clone, PartialEq)]
#[bigtable(table = "pages", family = "p")]
#[ttl(default = "1d")]
struct Page {
    #[bigtable(key)]
    id: String,
    url: String,
    #[bigtable(default)]
    #[ttl(for = "1h")]
    hot: bool,
}

#[tokio::test]
async fn a_default_field_past_its_own_ttl_reads_as_its_default() {
    let clock = Clock::manual(Utc::now());
    let pages = support::table::<Page>(&clock).await;
    let page = Page {
        id: "home".into(),
        url: "/".into(),
        hot: true,
    };
    pages.put(&page).await.unwrap();
    assert_eq!(
        pages.get(&"home".to_owned()).await.unwrap().unwrap().value,
        page
    );

    clock.advance(TimeDelta::hours(2));
    let read = pages
        .get(&"home".to_owned())
        .await
        .unwrap()
        .expect("row alive");
    assert!(!read.hot, "past its hour, `hot` reads as its default");
    assert_eq!(read.url, "/");
}

fn ten() -> u32 {
    10
}

#[derive(BigtableRow, Debug, Clone, PartialEq)]
#[bigtable(table = "carts", family = "c")]
#[ttl(default = "1d")]
struct Cart {
    #[bigtable(key)]
    id: String,
    items: Vec<u8>,
    #[bigtable(skip)]
    cache: Vec<String>,
    #[bigtable(skip, default = "ten")]
    page_size: u32,
}

#[tokio::test]
async fn skipped_fields_are_neither_stored_nor_read() {
    let clock = Clock::manual(Utc::now());
    let carts = support::table::<Cart>(&clock).await;
    carts
        .put(&Cart {
            id: "c1".into(),
            items: vec![1, 2],
            cache: vec!["computed".into()],
            page_size: 99,
        })
        .await
        .unwrap();
    assert_eq!(
        qualifiers(&stored(&carts, b"c1").await),
        ["\0\0Cart", "items"]
    );
    assert_eq!(Cart::SCHEMA.columns.len(), 1);
    let read = carts.get(&"c1".to_owned()).await.unwrap().unwrap();
    assert_eq!(
        read.value,
        Cart {
            id: "c1".into(),
            items: vec![1, 2],
            cache: Vec::new(),
            page_size: 10,
        }
    );
}

#[derive(BigtableRow, Debug, Clone, PartialEq)]
#[bigtable(table = "accounts", family = "a", rename_all = "camelCase")]
#[ttl(default = "1d", written_at)]
struct Account {
    #[bigtable(key)]
    owner_id: String,
    user_name: String,
    #[bigtable(column = "seen")]
    last_seen_at: i64,
    visit_count: Option<u64>,
}

#[tokio::test]
async fn rename_all_names_the_columns_and_an_explicit_column_wins() {
    let clock = Clock::manual(Utc::now());
    let accounts = support::table::<Account>(&clock).await;
    let account = Account {
        owner_id: "a1".into(),
        user_name: "ann".into(),
        last_seen_at: 7,
        visit_count: Some(2),
    };
    accounts.put(&account).await.unwrap();
    assert_eq!(
        qualifiers(&stored(&accounts, b"a1").await),
        [
            "\0\0Account",
            "seen",
            "userName",
            "visitCount",
            "written_at"
        ],
        "key fields and the shadow column keep their names (`\\0`: the row marker)"
    );
    let read = accounts.get(&"a1".to_owned()).await.unwrap().unwrap();
    assert_eq!(read.value, account);
    // The typed handles keep the field's name.
    assert_eq!(Account::USER_NAME.name(), "user_name");
}

/// Newtypes: stored exactly as their one field.
#[derive(CellCodec, Debug, Clone, PartialEq)]
struct UserId(String);

#[derive(KeyPart, Debug, Clone, PartialEq)]
struct Tenant(u32);

#[derive(CellCodec, Debug, Clone, Copy, PartialEq)]
struct Seats(i32);

/// By name, `snake_case`, with one variant renamed.
#[derive(CellCodec, Debug, Clone, Copy, PartialEq)]
#[bigtable(by_name, rename_all = "snake_case")]
enum Status {
    Active,
    OnHold,
    #[bigtable(rename = "gone")]
    Deleted,
}

/// By number, one byte.
#[derive(CellCodec, Debug, Clone, Copy, PartialEq)]
#[bigtable(by_number)]
#[repr(u8)]
enum Plan {
    Free = 0,
    Pro = 2,
    Team = 7,
}

/// By number, four bytes (as an `i32` field).
#[derive(CellCodec, Debug, Clone, Copy, PartialEq)]
#[bigtable(by_number)]
#[repr(i32)]
enum Level {
    Low = -1,
    High = 1_000_000,
}

#[derive(BigtableRow, Debug, Clone, PartialEq)]
#[bigtable(table = "members", family = "m", key_separator = "#")]
#[ttl(default = "1d")]
struct Member {
    #[bigtable(key)]
    tenant: Tenant,
    #[bigtable(key)]
    user: String,
    owner: UserId,
    manager: Option<UserId>,
    seats: Seats,
    status: Status,
    plan: Plan,
    level: Option<Level>,
}

#[tokio::test]
async fn newtypes_and_enums_round_trip_with_their_documented_bytes() {
    let clock = Clock::manual(Utc::now());
    let members = support::table::<Member>(&clock).await;
    let member = Member {
        tenant: Tenant(7),
        user: "ann".into(),
        owner: UserId("bob".into()),
        manager: Some(UserId("cy".into())),
        seats: Seats(12),
        status: Status::OnHold,
        plan: Plan::Team,
        level: Some(Level::Low),
    };
    members.put(&member).await.unwrap();
    let deleted = Member {
        user: "dan".into(),
        manager: None,
        status: Status::Deleted,
        plan: Plan::Pro,
        level: Some(Level::High),
        ..member.clone()
    };
    members.put(&deleted).await.unwrap();

    let rows = members.raw_rows(Scan::all()).await.unwrap();
    let keys: Vec<&[u8]> = rows.iter().map(|(k, _)| k.as_slice()).collect();
    assert_eq!(
        keys,
        [&b"0000000007#ann"[..], b"0000000007#dan"],
        "a `Tenant(u32)` key part is a u32's ten digits"
    );
    let cells = &rows[0].1;
    assert_eq!(value(cells, "owner"), Some(&b"bob"[..]));
    assert_eq!(value(cells, "manager"), Some(&b"cy"[..]));
    assert_eq!(value(cells, "seats"), Some(&12i32.to_be_bytes()[..]));
    assert_eq!(value(cells, "status"), Some(&b"on_hold"[..]));
    assert_eq!(value(cells, "plan"), Some(&[7u8][..]));
    assert_eq!(value(cells, "level"), Some(&(-1i32).to_be_bytes()[..]));
    let cells = &rows[1].1;
    assert_eq!(value(cells, "manager"), None);
    assert_eq!(value(cells, "status"), Some(&b"gone"[..]));
    assert_eq!(value(cells, "plan"), Some(&[2u8][..]));
    assert_eq!(value(cells, "level"), Some(&1_000_000i32.to_be_bytes()[..]));

    let key = (Tenant(7), "ann".to_owned());
    assert_eq!(members.get(&key).await.unwrap().unwrap().value, member);
    let by_tenant = members
        .scan(Scan::key_prefix::<Member>(&(Tenant(7),)).unwrap())
        .await
        .unwrap();
    let read: Vec<Member> = by_tenant.into_iter().map(|m| m.value).collect();
    assert_eq!(read, [member, deleted]);

    // cbt, another client, sees the names.
    let shown = support::cbt(
        members.connection(),
        &["read", members.name(), "columns=m:status"],
    );
    assert!(
        shown.contains("\"on_hold\"") && shown.contains("\"gone\""),
        "{shown}"
    );
}

/// A later version of `Status`'s column, written by a newer program.
#[derive(CellCodec, Debug, Clone, Copy, PartialEq)]
#[bigtable(by_name, rename_all = "snake_case")]
enum NewStatus {
    Active,
    Archived,
}

#[derive(BigtableRow, Debug, Clone, PartialEq)]
#[bigtable(table = "states", family = "s", marker = "State")]
#[ttl(default = "1d")]
struct NewState {
    #[bigtable(key)]
    id: String,
    status: NewStatus,
    plan: u8_cell::Byte,
}

#[derive(BigtableRow, Debug, Clone, PartialEq)]
#[bigtable(table = "states", family = "s")]
#[ttl(default = "1d")]
struct State {
    #[bigtable(key)]
    id: String,
    status: Status,
    plan: Plan,
}

/// A one-byte cell written without going through `Plan`.
mod u8_cell {
    use bigtable_ttl::{CellCodec, CodecError};

    #[derive(Debug, Clone, Copy, PartialEq)]
    pub struct Byte(pub u8);

    impl CellCodec for Byte {
        fn encode(&self) -> Result<Vec<u8>, CodecError> {
            Ok(vec![self.0])
        }
        fn decode(bytes: &[u8]) -> Result<Self, CodecError> {
            Ok(Byte(bytes[0]))
        }
    }
}

#[tokio::test]
async fn a_value_that_is_no_variant_is_a_decode_error_naming_column_value_and_enum() {
    let conn = support::connection();
    let clock = Clock::manual(Utc::now());
    let newer = open::<NewState>(&conn, &clock).await;
    let older = open::<State>(&conn, &clock).await;

    newer
        .put(&NewState {
            id: "s1".into(),
            status: NewStatus::Archived,
            plan: u8_cell::Byte(2),
        })
        .await
        .unwrap();
    let err = older.get(&"s1".to_owned()).await.unwrap_err();
    let Error::Decode(e) = &err else {
        panic!("expected a decode error, got {err}");
    };
    let bigtable_ttl::error::Decode { column, source, .. } = &**e;
    assert_eq!(column, "s:status");
    assert_eq!(
        source,
        &CodecError::UnknownVariant {
            enum_name: "Status",
            value: "\"archived\"".into()
        }
    );
    let text = format!("{err}: {source}");
    assert!(
        text.contains("s:status") && text.contains("\"archived\"") && text.contains("`Status`"),
        "{text}"
    );

    newer
        .put(&NewState {
            id: "s2".into(),
            status: NewStatus::Active,
            plan: u8_cell::Byte(9),
        })
        .await
        .unwrap();
    let err = older.get(&"s2".to_owned()).await.unwrap_err();
    assert!(
        matches!(
            &err,
            Error::Decode(e) if e.column == "s:plan"
                && matches!(&e.source, CodecError::UnknownVariant { enum_name: "Plan", value } if value == "9")
        ),
        "{err:?}"
    );

    newer
        .put(&NewState {
            id: "s3".into(),
            status: NewStatus::Active,
            plan: u8_cell::Byte(7),
        })
        .await
        .unwrap();
    let read = older.get(&"s3".to_owned()).await.unwrap().unwrap();
    assert_eq!((read.status, read.plan), (Status::Active, Plan::Team));
}
