//! The one-second strategy: every session carries its own expiry, which is
//! its cell timestamp; the family's GC rule is `max_age = 1s`. Watch sessions
//! disappear from typed reads at their expiry, and from storage when the
//! emulator's garbage collection catches up.
//!
//! ```sh
//! cargo run --example sessions
//! ```

use std::time::Duration;

use bigtable_ttl::chrono::{DateTime, TimeDelta, Utc};
use bigtable_ttl::data::ReadRows;
use bigtable_ttl::{human, BigtableRow, Connection, Error, Scan, Table};
use bigtable_ttl_emulator as emulator;
use futures_util::TryStreamExt as _;

/// A login session; no expiry, no write.
#[derive(BigtableRow, Debug)]
#[bigtable(table = "sessions", family = "s")]
struct Session {
    #[bigtable(key)]
    id: String,
    #[ttl(expire_at)]
    expires_at: DateTime<Utc>,
    user: String,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The emulator at BIGTABLE_EMULATOR_HOST (loopback only), or one started
    // for this process on a free loopback port and stopped when it exits.
    let host = emulator::shared_host()?;
    println!("Bigtable emulator at {host}");
    let conn = Connection::emulator(&host, "demo-project", "demo-instance")?;
    let sessions = Table::<Session>::new(conn);
    sessions.ensure_schema().await?;

    let now = Utc::now();
    for (id, user, lifetime) in [
        ("s-short", "ada", TimeDelta::seconds(2)),
        ("s-medium", "grace", TimeDelta::seconds(4)),
        ("s-long", "linus", TimeDelta::hours(1)),
    ] {
        let session = Session {
            id: id.into(),
            expires_at: now + lifetime,
            user: user.into(),
        };
        sessions.put(&session).await?;
        println!("wrote {id} for {user}, expiring in {}", human(lifetime));
    }

    // An expiry in the past is refused before anything is sent.
    let stale = Session {
        id: "s-stale".into(),
        expires_at: now - TimeDelta::seconds(1),
        user: "nobody".into(),
    };
    match sessions.put(&stale).await {
        Err(e @ Error::ExpiryNotInFuture { .. }) => println!("refused s-stale: {e}"),
        other => println!("unexpected: {other:?}"),
    }

    println!("\n  t    typed read (alive)         stored cells (raw, until GC)");
    for second in 0..=8 {
        let alive: Vec<String> = sessions
            .scan(Scan::all())
            .await?
            .into_iter()
            .map(|s| s.value.id)
            .collect();
        let stored: usize = sessions
            .raw()
            .read_rows(ReadRows::all())
            .try_fold(0, |n, row| async move { Ok(n + row.cells.len()) })
            .await?;
        println!("  {second}s   {:<26} {stored}", alive.join(", "));
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    Ok(())
}
