//! The row structs several test files share: the README's two strategies,
//! and the structs of stories more than one file tells (a rate limit, a
//! cart, a page written by another program). A test whose struct differs
//! on purpose (another key, another family, a column the others lack)
//! declares its own.

use std::collections::BTreeMap;

use bigtable_ttl::BigtableRow;
use chrono::{DateTime, Utc};

/// One-second strategy: every row carries its expiry.
#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "sessions", family = "s")]
pub struct Session {
    #[bigtable(key)]
    pub id: String,
    #[ttl(expire_at)]
    pub expires_at: DateTime<Utc>,
    pub user: String,
}

/// A session `id` of user `u-{id}` expiring at `expires_at`.
pub fn session(id: &str, expires_at: DateTime<Utc>) -> Session {
    Session {
        id: id.to_owned(),
        expires_at,
        user: format!("u-{id}"),
    }
}

/// Default strategy: two days unless the row or the write says otherwise,
/// with the real write time in a shadow column and a one-hour field.
#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "clicks", family = "c")]
#[ttl(default = "2d", written_at)]
pub struct Click {
    #[bigtable(key)]
    pub id: String,
    pub url: String,
    pub referrer: Option<String>,
    #[ttl(for = "1h")]
    pub hot: Option<String>,
    #[ttl(expire_at)]
    pub expires: Option<DateTime<Utc>>,
}

/// A click `id` on `url`, every optional field `None`.
pub fn click(id: &str, url: &str) -> Click {
    Click {
        id: id.to_owned(),
        url: url.to_owned(),
        referrer: None,
        hot: None,
        expires: None,
    }
}

/// An event of a long scan: many rows, each with a number and a body of
/// varying size (the scan and fault tests make their own).
#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "events", family = "e")]
#[ttl(default = "2d")]
pub struct Event {
    #[bigtable(key)]
    pub id: String,
    pub n: i64,
    pub body: String,
}

/// Requests of one user in one hour-long window: a counter in a row of its
/// own expiry, under a two-part key.
#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "rate_limits", family = "r", key_separator = "#")]
pub struct RateLimit {
    #[bigtable(key)]
    pub user: String,
    #[bigtable(key)]
    pub hour: u64,
    #[ttl(expire_at)]
    pub expires_at: DateTime<Utc>,
    #[bigtable(counter)]
    pub hits: i64,
}

/// A cart: a required column, and items reserved each for its own time
/// (a map in a family of its own), under a default TTL.
#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "carts", family = "c")]
#[ttl(default = "2d")]
pub struct Cart {
    #[bigtable(key)]
    pub user: String,
    pub currency: String,
    #[bigtable(map, family = "items")]
    pub items: BTreeMap<String, u64>,
}

/// A page: two required fields, which the tests write as another program
/// does, column by column (`cbt set`, the server's timestamps).
#[derive(Debug, Clone, PartialEq, BigtableRow)]
#[bigtable(table = "pages", family = "p")]
#[ttl(default = "1h")]
pub struct Page {
    #[bigtable(key)]
    pub id: String,
    pub url: String,
    pub user: String,
}
