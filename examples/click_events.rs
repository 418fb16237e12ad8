//! The click-events story: ten customers' clicks in one table. Most expire
//! after 2 days, customer 3's after 1 hour, customer 7's after 3 days. The
//! program writes them, then reads the table as it will look now, 90 minutes
//! from now and 2.5 days from now, by moving the clock reads and writes share.
//!
//! ```sh
//! cargo run --example click_events
//! ```
//!
//! It starts Google's Bigtable emulator on a free loopback port, or uses the
//! one at `BIGTABLE_EMULATOR_HOST`.

use std::collections::BTreeMap;

use bigtable_ttl::chrono::{DateTime, TimeDelta, Utc};
use bigtable_ttl::{human, BigtableRow, Clock, Connection, Scan, Table};
use bigtable_ttl_emulator as emulator;

/// One click. Key: `customer#seq`.
#[derive(BigtableRow, Debug)]
#[bigtable(table = "clicks", family = "c", key_separator = "#")]
#[ttl(default = "2d", written_at)]
struct Click {
    #[bigtable(key)]
    customer: String,
    #[bigtable(key)]
    seq: u32,
    url: String,
    referrer: Option<String>,
    /// Per-row override of the 2-day default.
    #[ttl(expire_at)]
    expires: Option<DateTime<Utc>>,
}

const CUSTOMERS: u32 = 10;
const CLICKS_PER_CUSTOMER: u32 = 5;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The emulator at BIGTABLE_EMULATOR_HOST (loopback only), or one started
    // for this process on a free loopback port and stopped when it exits.
    let host = emulator::shared_host()?;
    println!("Bigtable emulator at {host}");

    // A manual clock at the real now: Bigtable's garbage collection runs on
    // real time, so a clock set in the past would write cells it collects
    // at once. Moving it forward is safe: reads only filter by it.
    let clock = Clock::manual_at_now();
    let start = clock.now();
    let conn = Connection::emulator(&host, "demo-project", "demo-instance")?;
    let clicks = Table::<Click>::new(conn).with_clock(clock.clone());
    let report = clicks.ensure_schema().await?;
    println!("schema: {report}");

    let mut default_rows = Vec::new();
    for customer in 0..CUSTOMERS {
        for seq in 0..CLICKS_PER_CUSTOMER {
            let click = Click {
                customer: format!("customer-{customer}"),
                seq,
                url: format!("/product/{}", customer * 100 + seq),
                referrer: (seq % 2 == 0).then(|| "search".to_owned()),
                // Customer 7 keeps clicks 3 days, through the expire_at field.
                expires: (customer == 7).then(|| start + TimeDelta::days(3)),
            };
            if customer == 3 {
                // Customer 3's clicks live 1 hour, through the write builder.
                clicks
                    .put_with(click.mutation().ttl(TimeDelta::hours(1)))
                    .await?;
            } else {
                default_rows.push(click);
            }
        }
    }
    clicks.put_all(&default_rows).await?;
    println!(
        "wrote {} clicks for {CUSTOMERS} customers\n",
        CUSTOMERS * CLICKS_PER_CUSTOMER
    );

    for (label, offset) in [
        ("now", TimeDelta::zero()),
        ("now + 90 minutes", TimeDelta::minutes(90)),
        ("now + 2.5 days", TimeDelta::hours(60)),
    ] {
        clock.set(start + offset);
        let visible = clicks.scan(Scan::all()).await?;
        let mut per_customer: BTreeMap<&str, (usize, DateTime<Utc>)> = BTreeMap::new();
        for click in &visible {
            let entry = per_customer
                .entry(click.customer.as_str())
                .or_insert((0, click.expires_at));
            entry.0 += 1;
            entry.1 = entry.1.max(click.expires_at);
        }
        println!("{label}: {} clicks visible", visible.len());
        for customer in 0..CUSTOMERS {
            let name = format!("customer-{customer}");
            match per_customer.get(name.as_str()) {
                Some((count, expires)) => println!(
                    "  {name:<12} {count} clicks, expire in {}",
                    human(*expires - clock.now())
                ),
                None => println!("  {name:<12} -"),
            }
        }
        println!();
    }
    Ok(())
}
