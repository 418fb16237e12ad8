//! The row structs several test files share: the README's two strategies.
//! A test whose struct differs on purpose (another key, another family, a
//! column the others lack) declares its own.

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
