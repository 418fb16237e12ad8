//! The short run CI makes (40 s, to two minutes on a loaded machine): a history of six
//! clients through the fault proxy, the emulator restarted halfway,
//! checked. A failing history's timeline is written beside the test's
//! target directory, and the failure names it.

use std::path::Path;
use std::time::Duration;

use bigtable_ttl_history::workload::{self, Config, Enough};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_history_through_faults_holds() {
    let config = Config {
        duration: Duration::from_secs(40),
        restart_at: Some(Duration::from_secs(20)),
        // A loaded machine answers slowly: the run goes on (to two
        // minutes at most) until there is enough to judge.
        enough: Some(Enough {
            acquisitions: 10,
            register_calls: 30,
            increments: 10,
            cuts: 2,
            longest: Duration::from_secs(120),
        }),
        ..Config::default()
    };
    let run = workload::run(&config).await.expect("a run");
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("history");
    let (verdict, timeline) =
        bigtable_ttl_history::judge(&run, &out, "short").expect("the timeline written");
    let figures = bigtable_ttl_history::figures(&run, &verdict);
    println!("{figures}");
    assert!(
        verdict.ok(),
        "{figures}\n{}\ntimeline: {}",
        verdict
            .violations
            .iter()
            .map(|v| v.what.as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        timeline.map_or_else(String::new, |p| p.display().to_string())
    );
    // Enough happened, and enough went wrong, to judge.
    assert!(verdict.acquisitions >= 10, "{figures}");
    assert!(verdict.register_calls >= 30, "{figures}");
    assert!(verdict.increments >= 10, "{figures}");
    assert!(run.cuts >= 2 && run.restarts == 1, "{figures}");
    assert!(
        run.history
            .calls
            .iter()
            .any(bigtable_ttl_history::Call::failed),
        "no call met a fault: {figures}"
    );
}
