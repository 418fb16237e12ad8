//! The leases example, its assertions run against the emulator: acquire,
//! renew only as the holder, release only as the holder, and a second
//! contender taking an expired lease before garbage collection.

use crate::support;

#[path = "../../examples/leases.rs"]
#[allow(dead_code, unreachable_pub)]
mod example;

use bigtable_ttl::Clock;

#[tokio::test]
async fn the_leases_example_holds() {
    example::demo(support::connection(), Clock::manual_at_now())
        .await
        .unwrap();
}

/// Leases of any length exclude (issue 41): on the real clock, under the
/// default write policy, contenders race for one resource with
/// `insert_if_absent_with(..ttl(..))`; each winner holds its lease a while
/// and releases it as its holder (`delete_if`), or lets it expire. No two
/// holders ever believe they hold the lease at once (a holder believes so
/// from its acquisition's answer until it asks to release, or its lease
/// expires), and a release sent and answered while the lease is live
/// succeeds. Five runs of each length side by side, on resources of their
/// own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_of_any_length_exclude() {
    let table = support::table::<exclusion::Lease>(&Clock::system()).await;
    let mut report = Vec::new();
    for ttl_ms in [20, 150, 1_000, 10_000] {
        let runs = (0..exclusion::RUNS).map(|run| {
            exclusion::run(
                table.clone(),
                format!("r{ttl_ms}-{run}"),
                ttl_ms,
                run as u64,
            )
        });
        let outcomes = futures_util::future::join_all(runs).await;
        let (mut acquisitions, mut live_releases) = (0, 0);
        for (run, outcome) in outcomes.into_iter().enumerate() {
            report.push(format!(
                "{ttl_ms} ms lease, run {run}: {} acquisitions, {} releases while live ({} refused), {} overlaps, {} errors",
                outcome.held.len(),
                outcome.live_releases,
                outcome.refused_releases.len(),
                outcome.overlaps.len(),
                outcome.errors.len()
            ));
            assert!(
                outcome.overlaps.is_empty()
                    && outcome.refused_releases.is_empty()
                    && outcome.errors.is_empty(),
                "{ttl_ms} ms lease, run {run}: overlaps {:?}; releases refused while the lease was live {:?}; errors {:?}",
                &outcome.overlaps[..outcome.overlaps.len().min(5)],
                outcome.refused_releases,
                outcome.errors
            );
            acquisitions += outcome.held.len();
            live_releases += outcome.live_releases;
        }
        // Enough happened to judge (a loaded machine may answer few
        // releases of a 20 ms lease before it expires, and of a 150 ms one
        // only some).
        assert!(
            acquisitions >= 10 && (ttl_ms < 150 || live_releases >= 3),
            "{ttl_ms} ms leases: too little happened to judge: {acquisitions} acquisitions, {live_releases} releases answered while live"
        );
    }
    println!("{}", report.join("\n"));
}

mod exclusion {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use bigtable_ttl::{BigtableRow, Error, Insert, Table};
    use chrono::{DateTime, TimeDelta, Utc};

    /// Runs of each lease length.
    pub const RUNS: usize = 5;
    /// Contenders of one run.
    const CONTENDERS: usize = 8;
    /// How long contenders race, in one run.
    const WINDOW: Duration = Duration::from_millis(2_500);

    #[derive(BigtableRow, Debug, Clone, PartialEq)]
    #[bigtable(table = "lease_exclusion", family = "l")]
    #[ttl(default = "30s")]
    pub struct Lease {
        #[bigtable(key)]
        pub resource: String,
        pub holder: String,
    }

    /// One acquisition: who, and when its holder believed it held the
    /// lease.
    #[derive(Debug, Clone)]
    #[allow(dead_code)] // Read in failure messages.
    pub struct Held {
        pub holder: String,
        pub from: DateTime<Utc>,
        pub until: DateTime<Utc>,
    }

    #[derive(Default)]
    pub struct Outcome {
        pub held: Vec<Held>,
        pub overlaps: Vec<(Held, Held)>,
        /// Releases sent and answered before the lease's expiry.
        pub live_releases: usize,
        pub refused_releases: Vec<String>,
        pub errors: Vec<String>,
    }

    /// `SplitMix64`.
    fn next(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    async fn sleep_until(at: DateTime<Utc>) {
        if let Ok(left) = (at - Utc::now()).to_std() {
            tokio::time::sleep(left).await;
        }
    }

    async fn contender(
        table: Table<Lease>,
        resource: String,
        ttl_ms: i64,
        id: usize,
        seed: u64,
        outcome: Arc<Mutex<Outcome>>,
    ) {
        let mut rng = seed;
        let ttl = TimeDelta::milliseconds(ttl_ms);
        let stop = Utc::now() + TimeDelta::from_std(WINDOW).unwrap();
        let mut n = 0;
        while Utc::now() < stop {
            n += 1;
            // A token of this acquisition, so that no holder's condition
            // can match another's lease.
            let holder = format!("c{id}-{n}");
            let lease = Lease {
                resource: resource.clone(),
                holder: holder.clone(),
            };
            let written = match table.insert_if_absent_with(lease.mutation().ttl(ttl)).await {
                Ok(Insert::Inserted(written)) => written,
                Ok(Insert::Exists(_)) | Err(Error::Conflict { .. }) => {
                    let pause = 1 + next(&mut rng) % 8;
                    tokio::time::sleep(Duration::from_millis(pause)).await;
                    continue;
                }
                Err(e) => {
                    outcome.lock().unwrap().errors.push(e.to_string());
                    continue;
                }
            };
            let from = Utc::now();
            let expires = written.expires_at;
            // Hold up to a quarter of the lease (at most 200 ms), then
            // release it or, for leases short enough to wait for, let it
            // expire.
            let hold = (ttl_ms / 4).min(200);
            let hold = i64::try_from(next(&mut rng) % u64::try_from(hold).unwrap()).unwrap();
            tokio::time::sleep(Duration::from_millis(u64::try_from(hold).unwrap())).await;
            // Leases of a second and more are always released: one left to
            // expire takes a second of the run's window, and a loaded
            // machine left too few releases to judge. The shorter ones
            // test exclusion across an expiry.
            let release = ttl_ms >= 1_000 || next(&mut rng).is_multiple_of(2);
            let until = if release {
                let asked = Utc::now();
                let mine = Lease::HOLDER.equals(&holder);
                let released = table.delete_if(&resource, mine).await;
                let answered = Utc::now();
                let mut o = outcome.lock().unwrap();
                match released {
                    Ok(released) if answered < expires => {
                        o.live_releases += 1;
                        if !released {
                            o.refused_releases.push(format!(
                                "{holder}: asked {asked}, answered {answered}, expiry {expires}"
                            ));
                        }
                    }
                    Ok(_) => {}
                    Err(e) => o.errors.push(e.to_string()),
                }
                asked.min(expires)
            } else {
                sleep_until(expires).await;
                expires
            };
            outcome.lock().unwrap().held.push(Held {
                holder,
                from,
                until,
            });
        }
    }

    /// Keep the resource's row from ever being empty: a cell of a column
    /// `Lease` does not declare (which its reads and conditions never
    /// look at, and its scoped delete leaves), stamped a day ahead so the
    /// family's 30 s rule keeps it through the run.
    ///
    /// The emulator (`bttest`) locks a row object, not the table, for a
    /// write: `CheckAndMutateRow` looks the row up, then locks it, and its
    /// garbage collection drops an empty row object from the table in
    /// between. A write that looked up the row a release just emptied can
    /// then land in the dropped object, answered as applied and read by no
    /// one, and a second insert then finds the key free. Bigtable itself
    /// has no such gap. Seen once in this test under a loaded full suite
    /// (two holders 3.5 ms apart), not reproduced on its own.
    async fn pin_row(table: &Table<Lease>, resource: &str) {
        let day_ahead = (Utc::now() + TimeDelta::days(1)).timestamp_millis() * 1_000;
        table
            .raw()
            .mutate_row(
                resource,
                vec![bigtable_ttl::data::Mutation::set_cell(
                    "l",
                    b"pin".to_vec(),
                    day_ahead,
                    Vec::new(),
                )],
            )
            .await
            .unwrap();
    }

    /// One run: `CONTENDERS` contenders on `resource`, leases of `ttl_ms`.
    pub async fn run(table: Table<Lease>, resource: String, ttl_ms: i64, seed: u64) -> Outcome {
        pin_row(&table, &resource).await;
        let outcome = Arc::new(Mutex::new(Outcome::default()));
        let tasks: Vec<_> = (0..CONTENDERS)
            .map(|id| {
                tokio::spawn(contender(
                    table.clone(),
                    resource.clone(),
                    ttl_ms,
                    id,
                    seed * 100 + id as u64,
                    outcome.clone(),
                ))
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        let row = table.raw().read_row(&resource, None).await.unwrap();
        assert!(
            row.is_some_and(|r| r.cells.iter().any(|c| c.qualifier == b"pin")),
            "{resource}: the holders' releases removed a column `Lease` does not own"
        );
        let mut outcome = std::mem::take(&mut *outcome.lock().unwrap());
        let mut held = outcome.held.clone();
        held.sort_by_key(|h| h.from);
        for (i, a) in held.iter().enumerate() {
            for b in &held[i + 1..] {
                if b.from >= a.until {
                    continue;
                }
                if a.from < b.until {
                    outcome.overlaps.push((a.clone(), b.clone()));
                }
            }
        }
        outcome
    }
}
