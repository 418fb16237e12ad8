//! The expansion names everything by absolute path: it compiles without the
//! prelude, beside user types that shadow prelude names, under strict lints,
//! and through a renamed facade.

#![deny(unused_qualifications, warnings)]
#![allow(dead_code)]

/// No prelude at all: every path the expansion writes must be absolute.
mod no_prelude {
    #![no_implicit_prelude]

    use ::bigtable_ttl::BigtableRow;
    use ::chrono::{DateTime, Utc};

    #[derive(BigtableRow)]
    #[bigtable(table = "t", family = "f", key_separator = "#")]
    #[ttl(default = "1h", written_at = "w")]
    pub struct Row {
        #[bigtable(key)]
        pub a: ::std::string::String,
        #[bigtable(key)]
        pub b: u64,
        pub value: ::std::string::String,
        #[ttl(for = "10m")]
        pub maybe: ::std::option::Option<i64>,
        #[ttl(expire_at)]
        pub expires: ::std::option::Option<DateTime<Utc>>,
    }

    #[derive(::bigtable_ttl::CellCodec, ::bigtable_ttl::KeyPart)]
    pub struct Id(::std::string::String);

    #[derive(::bigtable_ttl::CellCodec)]
    #[bigtable(by_name, rename_all = "kebab-case")]
    pub enum Status {
        OnHold,
        #[bigtable(rename = "x")]
        Gone,
    }

    #[derive(::bigtable_ttl::CellCodec)]
    #[bigtable(by_number)]
    #[repr(u8)]
    pub enum Plan {
        Free = 0,
        Pro = 1,
    }

    pub fn two() -> i64 {
        2
    }

    #[derive(BigtableRow)]
    #[bigtable(table = "e", family = "f", rename_all = "camelCase")]
    #[ttl(default = "1h")]
    pub struct Evolved {
        #[bigtable(key)]
        pub id: Id,
        pub owner: Id,
        pub status: Status,
        pub plan_kind: ::std::option::Option<Plan>,
        #[bigtable(default)]
        pub visits: u64,
        #[bigtable(default = "two")]
        pub rank: i64,
        #[bigtable(skip)]
        pub cache: ::std::vec::Vec<u8>,
        #[bigtable(skip, default = "two")]
        pub size: i64,
    }

    #[derive(BigtableRow)]
    #[bigtable(table = "s", family = "f")]
    pub struct OneSecond {
        #[bigtable(key)]
        pub id: ::std::string::String,
        #[ttl(expire_at)]
        pub at: DateTime<Utc>,
        pub v: bool,
    }
}

/// User types named like the prelude items the expansion uses.
mod shadowing {
    #![allow(non_camel_case_types)]

    use ::bigtable_ttl::BigtableRow;
    use chrono::{DateTime, Utc};

    pub struct Result;
    pub struct Ok;
    pub struct Err;
    pub struct Option;
    pub struct Some;
    pub struct None;
    pub struct Vec;
    pub struct Box;
    pub struct Self_;
    pub struct Schema;
    pub struct Column;
    pub struct Policy;
    pub struct Expiry;
    pub struct KeyBuilder;
    pub struct RowView;
    pub struct Field;
    pub struct Condition;
    pub struct u8;
    pub mod core {}
    pub mod std {}
    pub mod bigtable_ttl {}
    pub const fn millis() {}
    pub const fn encode_required() {}

    #[derive(::bigtable_ttl::CellCodec, ::bigtable_ttl::KeyPart)]
    pub struct Id(String);

    #[derive(::bigtable_ttl::CellCodec)]
    #[bigtable(by_name)]
    pub enum Status {
        On,
        Off,
    }

    #[derive(::bigtable_ttl::CellCodec)]
    #[bigtable(by_number)]
    #[repr(u8)]
    pub enum Plan {
        Free = 0,
        Pro = 1,
    }

    #[derive(BigtableRow)]
    #[bigtable(table = "e", family = "f", rename_all = "PascalCase")]
    #[ttl(default = "2d")]
    pub struct Evolved {
        #[bigtable(key)]
        pub id: Id,
        pub status: Status,
        pub plan: Plan,
        #[bigtable(default)]
        pub count: i64,
        #[bigtable(skip)]
        pub cache: ::std::string::String,
    }

    #[derive(BigtableRow)]
    #[bigtable(table = "t", family = "f")]
    #[ttl(default = "2d")]
    pub struct Row {
        #[bigtable(key)]
        pub id: String,
        pub value: String,
        pub other: ::core::option::Option<String>,
        #[ttl(expire_at)]
        pub expires: ::core::option::Option<DateTime<Utc>>,
    }
}

/// The facade under another name.
mod renamed {
    use bigtable_ttl as btt;
    use btt::BigtableRow;

    #[derive(BigtableRow)]
    #[bigtable(table = "t", family = "f", crate = btt)]
    #[ttl(default = "90s")]
    pub struct Row {
        #[bigtable(key)]
        pub id: String,
        pub value: String,
    }

    #[derive(btt::CellCodec)]
    #[bigtable(by_name, crate = btt)]
    pub enum Status {
        On,
    }

    #[derive(btt::CellCodec, btt::KeyPart)]
    #[bigtable(crate = "self::btt")]
    pub struct Id(String);

    #[derive(BigtableRow)]
    #[bigtable(table = "t", family = "f", crate = btt)]
    #[ttl(default = "90s")]
    pub struct Typed {
        #[bigtable(key)]
        pub id: Id,
        pub status: Status,
    }

    #[derive(BigtableRow)]
    #[bigtable(table = "t", family = "f", crate = "self::btt")]
    #[ttl(default = "90s")]
    pub struct StringPath {
        #[bigtable(key)]
        pub id: String,
        pub value: String,
    }
}

/// Raw identifiers: the column is named without the `r#`.
mod raw {
    use bigtable_ttl::BigtableRow;

    #[derive(BigtableRow)]
    #[bigtable(table = "t", family = "f")]
    #[ttl(default = "1d")]
    pub struct Row {
        #[bigtable(key)]
        pub r#type: String,
        pub r#match: String,
    }
}

#[test]
fn expansions_compile_and_work() {
    use bigtable_ttl::BigtableRow;
    assert_eq!(no_prelude::Row::SCHEMA.written_at.unwrap().qualifier, "w");
    assert_eq!(shadowing::Row::SCHEMA.columns.len(), 2);
    assert_eq!(renamed::Row::SCHEMA.table, "t");
    assert_eq!(renamed::StringPath::SCHEMA.key_fields, &["id"]);
    assert_eq!(raw::Row::SCHEMA.columns[0].qualifier, "match");
    assert_eq!(raw::Row::SCHEMA.key_fields, &["type"]);
    // The field handles: named after the field without `r#`, typed by the
    // field (or `Option`'s inner type), pointing at the right column.
    assert_eq!(raw::Row::MATCH.name(), "match");
    assert_eq!(no_prelude::Row::MAYBE.equals(&7_i64).field(), "maybe");
    assert_eq!(shadowing::Row::OTHER.name(), "other");
    let row = no_prelude::OneSecond {
        id: "x".into(),
        at: chrono::Utc::now(),
        v: true,
    };
    assert_eq!(row.row_key().unwrap(), b"x");
}
