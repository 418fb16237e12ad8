//! Leases: one holder at a time for a named resource, for a limited time,
//! on conditional writes. A worker acquires a lease only if no live lease
//! exists, renews it only while it still holds it, and releases it only as
//! its holder. A lease that was not renewed is free the moment it expires:
//! its cells are still stored (garbage collection runs late), but no
//! condition sees them, so a second contender takes it at once.
//!
//! A lease is exclusive from its acquisition until its expiry, whatever
//! its length: an acquisition is judged when it is sent, and a lease live
//! then wins, however soon it expires. The expiry is on the holder's
//! clock: a contender whose clock runs ahead by `s` takes the lease `s`
//! early, so a holder stops acting as one at its expiry minus the clock
//! skew it allows. A renewal is judged at the write's horizon (a second
//! under the default write policy): renew with more than that left. A
//! release succeeds while the lease is live.
//!
//! ```sh
//! cargo run --example leases
//! ```
//!
//! It starts Google's Bigtable emulator on a free loopback port, or uses the
//! one at `BIGTABLE_EMULATOR_HOST`. The test suite runs [`demo`] and its
//! assertions (`tests/leases.rs`).

use bigtable_ttl::{BigtableRow, Clock, Connection, Insert, Table, Written};
use chrono::{DateTime, TimeDelta, Utc};

/// Who holds a resource; the lease is the row, and it ends with the row.
#[derive(BigtableRow, Debug, Clone, PartialEq)]
#[bigtable(table = "leases", family = "l")]
#[ttl(default = "30s")]
pub struct Lease {
    /// What is leased.
    #[bigtable(key)]
    pub resource: String,
    /// Who holds it.
    pub holder: String,
}

/// Leases of `ttl` each, on one table.
pub struct Leases {
    table: Table<Lease>,
    ttl: TimeDelta,
}

impl Leases {
    /// Leases on `table`, each for `ttl` from its acquisition or renewal.
    #[must_use]
    pub fn new(table: Table<Lease>, ttl: TimeDelta) -> Self {
        Self { table, ttl }
    }

    /// Take `resource` for `holder` if nobody holds it: until when (on
    /// this table's clock; see the module docs for clock skew), or who
    /// holds it.
    pub async fn acquire(
        &self,
        resource: &str,
        holder: &str,
    ) -> bigtable_ttl::Result<Result<DateTime<Utc>, String>> {
        let lease = Lease {
            resource: resource.to_owned(),
            holder: holder.to_owned(),
        };
        match self
            .table
            .insert_if_absent_with(lease.mutation().ttl(self.ttl))
            .await?
        {
            Insert::Inserted(written) => Ok(Ok(written.expires_at)),
            Insert::Exists(current) => Ok(Err(current.value.holder)),
        }
    }

    /// Extend `holder`'s lease on `resource` by a full TTL from now, only if
    /// `holder` still holds it with more than the write's horizon left (a
    /// lease that expired, or expires before the renewal may land, cannot
    /// be renewed).
    pub async fn renew(
        &self,
        resource: &str,
        holder: &str,
    ) -> bigtable_ttl::Result<Option<Written>> {
        let lease = Lease {
            resource: resource.to_owned(),
            holder: holder.to_owned(),
        };
        let mine = Lease::HOLDER.equals(&lease.holder);
        self.table
            .put_if_with(lease.mutation().ttl(self.ttl), mine)
            .await
    }

    /// Give `resource` up, only if `holder` holds it: whether it did
    /// (always, while the lease is live).
    pub async fn release(&self, resource: &str, holder: &str) -> bigtable_ttl::Result<bool> {
        let mine = Lease::HOLDER.equals(&holder.to_owned());
        self.table.delete_if(&resource.to_owned(), mine).await
    }
}

/// The story, on `conn` with the manual `clock`.
///
/// # Errors
/// What the table's calls return.
///
/// # Panics
/// Where the story does not go as told.
pub async fn demo(conn: Connection, clock: Clock) -> bigtable_ttl::Result<()> {
    let table = Table::<Lease>::new(conn).with_clock(clock.clone());
    table.ensure_schema().await?;
    let leases = Leases::new(table.clone(), TimeDelta::seconds(10));
    let job = "nightly-report";

    let until = leases
        .acquire(job, "worker-a")
        .await?
        .expect("a free lease");
    println!("worker-a holds {job} until {until}");
    let to_ms = |t: DateTime<Utc>| t.timestamp_millis();
    assert_eq!(to_ms(until), to_ms(clock.now() + TimeDelta::seconds(10)));
    assert_eq!(
        leases.acquire(job, "worker-b").await?,
        Err("worker-a".to_owned()),
        "one holder at a time"
    );

    clock.advance(TimeDelta::seconds(8));
    let renewed = leases
        .renew(job, "worker-a")
        .await?
        .expect("still the holder");
    println!("worker-a renewed until {}", renewed.expires_at);
    assert!(renewed.expires_at > until);
    assert!(
        leases.renew(job, "worker-b").await?.is_none(),
        "only the holder renews"
    );
    assert!(
        !leases.release(job, "worker-b").await?,
        "only the holder releases"
    );

    // worker-a stops renewing. Its lease expires; its cells are still stored.
    clock.advance(TimeDelta::seconds(11));
    let stored = table.raw().read_row(job, None).await?;
    let cells = stored.map_or(0, |row| row.cells.len());
    println!("after expiry, {cells} cells still stored, none visible");
    assert!(cells > 0, "garbage collection has not run");
    assert!(
        leases.renew(job, "worker-a").await?.is_none(),
        "an expired lease cannot be renewed"
    );
    let until = leases
        .acquire(job, "worker-b")
        .await?
        .expect("an expired lease is free, GC or not");
    println!("worker-b holds {job} until {until}");
    assert!(!leases.release(job, "worker-a").await?);

    assert!(leases.release(job, "worker-b").await?);
    assert_eq!(table.get(&job.to_owned()).await?, None);
    assert!(leases.acquire(job, "worker-a").await?.is_ok());
    println!("worker-b released it; worker-a took it again");
    Ok(())
}

#[allow(dead_code)]
#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let host = bigtable_ttl_emulator::shared_host()?;
    println!("Bigtable emulator at {host}");
    let conn = Connection::emulator(&host, "demo-project", "leases")?;
    demo(conn, Clock::manual_at_now()).await?;
    Ok(())
}
