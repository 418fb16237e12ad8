//! `Connection::builder`: the app profile reaches the wire (body and
//! routing header) on every data call, a pool of several connections serves
//! reads and writes, and the builder's timeouts apply to every table opened
//! on the connection. All against the real emulator, through loopback
//! proxies.

use crate::recorder;
use crate::support;

use std::time::{Duration, Instant};

use bigtable_ttl::retry::RetryPolicy;
use bigtable_ttl::{Code, Connection, Error, Scan, Table};
use futures_util::future::try_join_all;
use recorder::Recorder;
use support::proxy::{Faults, Proxy};
use support::rows::{click, Click};

const DATA_SERVICE: &str = "/google.bigtable.v2.Bigtable/";

/// A fresh instance on the emulator, with the clicks table created on a
/// direct connection: what goes through the proxies is only what is tested.
async fn fresh_instance() -> Connection {
    let direct = support::connection();
    Table::<Click>::new(direct.clone())
        .ensure_schema()
        .await
        .unwrap();
    direct
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_app_profile_is_in_every_data_request_body_and_routing_header() {
    const PROFILE: &str = "ttl-batch-profile";
    let direct = fresh_instance().await;
    let recorder = Recorder::start(&support::emulator_host()).await;
    let conn = Connection::builder(direct.project(), direct.instance())
        .emulator(recorder.host())
        .app_profile(PROFILE)
        .connect()
        .await
        .unwrap();
    assert_eq!(conn.app_profile(), PROFILE);
    let table = Table::<Click>::new(conn);

    table.put(&click("c1", "/a")).await.unwrap();
    table
        .put_all(&[click("c2", "/b"), click("c3", "/c")])
        .await
        .unwrap();
    assert_eq!(
        table.get(&"c1".to_owned()).await.unwrap().unwrap().url,
        "/a"
    );
    assert_eq!(table.scan(Scan::all()).await.unwrap().len(), 3);
    table.delete(&"c3".to_owned()).await.unwrap();

    let data: Vec<_> = recorder
        .seen()
        .into_iter()
        .filter(|s| s.path.starts_with(DATA_SERVICE))
        .collect();
    let mut methods: Vec<&str> = data
        .iter()
        .map(|s| s.path.trim_start_matches(DATA_SERVICE))
        .collect();
    methods.sort_unstable();
    methods.dedup();
    assert_eq!(methods, ["MutateRow", "MutateRows", "ReadRows"]);
    for seen in &data {
        let routing = seen.header("x-goog-request-params");
        assert!(
            routing.ends_with(&format!("&app_profile_id={PROFILE}")),
            "{}: routing header {routing:?}",
            seen.path
        );
        assert!(routing.starts_with("table_name=projects%2F"), "{routing:?}");
        assert!(
            seen.body_contains(PROFILE),
            "{}: the body does not name the app profile",
            seen.path
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_of_three_connections_serves_reads_and_writes() {
    const POOL: u64 = 3;
    let direct = fresh_instance().await;
    let proxy = Proxy::start(&support::emulator_host()).await;
    let conn = Connection::builder(direct.project(), direct.instance())
        .emulator(proxy.host())
        .pool_size(3)
        .connect()
        .await
        .unwrap();
    let table = Table::<Click>::new(conn);

    let rows: Vec<Click> = (0..300).map(|i| click(&format!("k{i:04}"), "/p")).collect();
    table.put_all(&rows).await.unwrap();
    try_join_all((0..30).map(|i| table.put(&rows[i])))
        .await
        .unwrap();
    let got = try_join_all((0..30).map(|i| table.get(&rows[i * 10].id)))
        .await
        .unwrap();
    assert!(got.iter().all(Option::is_some));
    assert_eq!(table.scan(Scan::all()).await.unwrap().len(), rows.len());

    // Every connection of the pool is made (requests take them in turn);
    // the admin channel is not in play (no admin call went through).
    let deadline = Instant::now() + Duration::from_secs(20);
    while proxy.connections() < POOL && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(proxy.connections(), POOL);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_builders_timeouts_apply_to_tables_opened_on_the_connection() {
    const DEADLINE: Duration = Duration::from_secs(3);
    // Scheduling on a loaded 2-core machine; far below the default 2 minutes.
    const MARGIN: Duration = Duration::from_secs(4);
    let direct = fresh_instance().await;
    let proxy = Proxy::start(&support::emulator_host()).await;
    let conn = Connection::builder(direct.project(), direct.instance())
        .emulator(proxy.host())
        .retry(
            RetryPolicy::default()
                .with_initial_delay(Duration::from_millis(50))
                .with_max_delay(Duration::from_millis(200))
                .with_attempt_timeout(Duration::from_secs(1))
                .with_deadline(DEADLINE),
        )
        .connect()
        .await
        .unwrap();
    assert_eq!(conn.retry().deadline, DEADLINE);
    let table = Table::<Click>::new(conn);
    proxy.arm(Faults::Stall { after_bytes: 0 });

    for what in ["get", "put"] {
        let started = Instant::now();
        let call = async {
            match what {
                "get" => table.get(&"c1".to_owned()).await.map(|_| ()),
                _ => table.put(&click("c1", "/a")).await.map(|_| ()),
            }
        };
        let err = tokio::time::timeout(Duration::from_secs(60), call)
            .await
            .unwrap_or_else(|_| panic!("{what}: still waiting after 60 s"))
            .expect_err(what);
        let took = started.elapsed();
        assert!(
            matches!(&err,
                Error::Server(e) if e.code == Code::DeadlineExceeded),
            "{what}: {err:?}"
        );
        assert!(took <= DEADLINE + MARGIN, "{what}: took {took:?}: {err}");
    }
}
