//! A shop's expiring data beyond plain rows: a per-user, per-hour request
//! counter whose TTL holds under increments (`#[bigtable(counter)]`), a
//! cart whose items are each reserved for their own time
//! (`#[bigtable(map)]`, one cell per entry), and a partial update that
//! changes one field and keeps the cart's lifetime (`Table::update`).
//!
//! ```sh
//! cargo run --example shopping
//! ```
//!
//! It starts Google's Bigtable emulator on a free loopback port, or uses the
//! one at `BIGTABLE_EMULATOR_HOST`. The test suite runs [`demo`] and its
//! assertions (`tests/shopping.rs`).

use std::collections::BTreeMap;

use bigtable_ttl::{BigtableRow, Clock, Connection, Expiry, Table};
use chrono::{DateTime, TimeDelta, Utc};

/// Requests of one user in one hour; the count expires two hours after its
/// first request.
#[derive(BigtableRow, Debug, Clone, PartialEq)]
#[bigtable(table = "shop", family = "r", key_separator = "#")]
pub struct Requests {
    /// The user.
    #[bigtable(key)]
    pub user: String,
    /// The hour (hours since the epoch).
    #[bigtable(key)]
    pub hour: u64,
    /// When the count expires.
    #[ttl(expire_at)]
    pub expires_at: DateTime<Utc>,
    /// The count.
    #[bigtable(counter)]
    pub hits: i64,
}

/// A cart: lives 30 days; each item is reserved for its own time.
#[derive(BigtableRow, Debug, Clone, PartialEq)]
#[bigtable(table = "shop", family = "c")]
#[ttl(default = "30d")]
pub struct Cart {
    /// The user.
    #[bigtable(key)]
    pub user: String,
    /// The currency prices are shown in.
    pub currency: String,
    /// Item → quantity.
    #[bigtable(map, family = "items")]
    pub items: BTreeMap<String, u64>,
}

/// Requests a user may make per hour.
const HOURLY_LIMIT: i64 = 3;

/// The hour `at` falls in, counted from the epoch.
fn hour_of(at: DateTime<Utc>) -> u64 {
    u64::try_from(at.timestamp() / 3600).unwrap_or_default()
}

/// Count one request of `user` at `now`; whether it is within the limit.
async fn allow(
    requests: &Table<Requests>,
    user: &str,
    now: DateTime<Utc>,
) -> bigtable_ttl::Result<bool> {
    let key = (user.to_owned(), hour_of(now));
    let count = requests
        .increment(&key, Requests::HITS, 1, Expiry::Ttl(TimeDelta::hours(2)))
        .await?;
    Ok(count.value <= HOURLY_LIMIT)
}

/// The story, with its assertions.
///
/// # Errors
/// What the tables' calls return.
///
/// # Panics
/// Where the story does not go as told.
pub async fn demo(conn: Connection, clock: Clock) -> bigtable_ttl::Result<()> {
    let requests = Table::<Requests>::new(conn.clone()).with_clock(clock.clone());
    let carts = Table::<Cart>::new(conn).with_clock(clock.clone());
    requests.ensure_schema().await?;
    carts.ensure_schema().await?;

    // The rate limit: the fourth request of the hour is refused.
    let mut allowed = Vec::new();
    for _ in 0..4 {
        allowed.push(allow(&requests, "ann", clock.now()).await?);
    }
    println!("ann's requests this hour: {allowed:?}");
    assert_eq!(allowed, [true, true, true, false]);

    // The cart, then two items reserved for 15 minutes and a day.
    let ann = "ann".to_owned();
    let cart = Cart {
        user: ann.clone(),
        currency: "EUR".into(),
        items: BTreeMap::new(),
    };
    let written = carts.put(&cart).await?;
    carts
        .put_entry(
            &ann,
            Cart::ITEMS,
            &"concert-ticket".to_owned(),
            &2,
            Expiry::Ttl(TimeDelta::minutes(15)),
        )
        .await?
        .expect("the cart is live");
    carts
        .put_entry(
            &ann,
            Cart::ITEMS,
            &"book".to_owned(),
            &1,
            Expiry::Ttl(TimeDelta::days(1)),
        )
        .await?
        .expect("the cart is live");
    for item in carts.entries(&ann, Cart::ITEMS).await? {
        let left = item.time_left(clock.now());
        println!(
            "{} x{}: reserved for {}m more",
            item.key,
            item.value,
            left.num_minutes()
        );
    }

    // Twenty minutes later the ticket's reservation has lapsed.
    clock.advance(TimeDelta::minutes(20));
    let read = carts.get(&ann).await?.expect("the cart lives 30 days");
    println!("after 20 minutes: {:?}", read.items);
    assert_eq!(read.items, BTreeMap::from([("book".to_owned(), 1)]));

    // A partial update: the currency changes, the cart keeps its expiry.
    let updated = carts
        .update(&ann)
        .set(Cart::CURRENCY, &"USD".to_owned())
        .apply()
        .await?
        .expect("the cart is live");
    assert_eq!(updated.expires_at, written.expires_at);
    let read = carts.get(&ann).await?.expect("the cart is live");
    assert_eq!(read.currency, "USD");
    assert_eq!(read.items.len(), 1, "the entries are untouched");
    println!(
        "currency now {}, cart still expires at {}",
        read.currency, read.expires_at
    );

    // Two hours on, the hour's count has expired with its window, though
    // garbage collection has not run on it yet.
    let first_hour = (ann.clone(), hour_of(clock.now() - TimeDelta::minutes(20)));
    assert_eq!(requests.get(&first_hour).await?.map(|r| r.hits), Some(4));
    clock.advance(TimeDelta::hours(2));
    assert!(requests.get(&first_hour).await?.is_none());
    assert!(allow(&requests, "ann", clock.now()).await?);
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let host = bigtable_ttl_emulator::shared_host()?;
    println!("Bigtable emulator at {host}");
    let conn = Connection::emulator(&host, "demo-project", "shopping")?;
    demo(conn, Clock::manual_at_now()).await?;
    Ok(())
}
