//! The click-events story of the README, end to end on the real emulator:
//! ten customers, most clicks living 2 days, customer 3's 1 hour, customer
//! 7's 3 days; the clock moved to +90 minutes and +2.5 days.

use crate::raw_rows::RawRows as _;
use crate::support;

use std::collections::BTreeSet;

use bigtable_ttl::{BigtableRow, Clock, Scan, Table};
use chrono::{DateTime, TimeDelta, Utc};

#[derive(BigtableRow, Debug, Clone, PartialEq)]
#[bigtable(table = "clicks", family = "c", key_separator = "#")]
#[ttl(default = "2d", written_at)]
struct Click {
    #[bigtable(key)]
    customer: u32,
    #[bigtable(key)]
    seq: u32,
    url: String,
    referrer: Option<String>,
    #[ttl(expire_at)]
    expires: Option<DateTime<Utc>>,
}

fn customers(rows: &[bigtable_ttl::Expiring<Click>]) -> BTreeSet<u32> {
    rows.iter().map(|c| c.customer).collect()
}

#[tokio::test]
async fn click_events_expire_per_customer() {
    let conn = support::connection();
    let start = Utc::now();
    let clock = Clock::manual(start);
    let table = Table::<Click>::new(conn).with_clock(clock.clone());
    table.ensure_schema().await.unwrap();

    let mut rows = Vec::new();
    for customer in 0..10 {
        for seq in 0..4 {
            let click = Click {
                customer,
                seq,
                url: format!("/p/{customer}/{seq}"),
                referrer: (seq % 2 == 0).then(|| "ad".to_owned()),
                expires: (customer == 7).then(|| start + TimeDelta::days(3)),
            };
            if customer == 3 {
                table
                    .put_with(click.mutation().ttl(TimeDelta::hours(1)))
                    .await
                    .unwrap();
            } else {
                rows.push(click);
            }
        }
    }
    table.put_all(&rows).await.unwrap();

    let now = table.scan(Scan::all()).await.unwrap();
    assert_eq!(now.len(), 40);
    assert_eq!(customers(&now), (0..10).collect());
    let ms = |t: DateTime<Utc>| t.timestamp_millis();
    for click in &now {
        let expected = match click.customer {
            3 => start + TimeDelta::hours(1),
            7 => start + TimeDelta::days(3),
            _ => start + TimeDelta::days(2),
        };
        assert_eq!(
            ms(click.expires_at),
            ms(expected),
            "customer {}",
            click.customer
        );
        assert_eq!(click.written_at.map(ms), Some(ms(start)));
    }

    clock.set(start + TimeDelta::minutes(90));
    let later = table.scan(Scan::all()).await.unwrap();
    assert_eq!(later.len(), 36);
    assert!(
        !customers(&later).contains(&3),
        "customer 3's clicks are gone at +90 min"
    );

    clock.set(start + TimeDelta::hours(60));
    let much_later = table.scan(Scan::all()).await.unwrap();
    assert_eq!(customers(&much_later), BTreeSet::from([7]));
    assert_eq!(much_later.len(), 4);

    // Nothing was collected: the cells are still stored, just hidden.
    assert_eq!(table.raw_rows(Scan::all()).await.unwrap().len(), 40);
}
