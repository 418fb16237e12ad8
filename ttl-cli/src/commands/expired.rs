//! `bigtable-ttl expired`: the expiry feed of a family, the rows that died
//! within a window, with their last cells (`ops::expired`); whole or one
//! shard, resumable after a row.

use std::io::Write;

use bigtable_ttl_runtime::ops::{self, parse_policy, ExpiryWindow, FamilyRows};
use bigtable_ttl_runtime::Clock;
use clap::Args;
use futures_util::TryStreamExt as _;

use crate::events::{parse_instant, write_lines};
use crate::output::{instant, print_table, Fallible};
use crate::shard::ShardArgs;
use crate::target::Target;

/// The rows of a family that died within a window.
#[derive(Debug, Args)]
pub(crate) struct ExpiredArgs {
    /// The table.
    table: String,
    /// The family.
    #[arg(long)]
    family: String,
    /// The family's TTL policy: `one-second` or `default=DURATION`.
    #[arg(long, short)]
    policy: String,
    /// The window's start (inclusive): RFC 3339, `now`, or a duration ago
    /// (`1h`).
    #[arg(long)]
    from: String,
    /// The window's end (exclusive), at or before now.
    #[arg(long, default_value = "now")]
    to: String,
    /// Start after this row key (the last one a previous run handled).
    #[arg(long, value_name = "KEY")]
    after: Option<String>,
    #[command(flatten)]
    shard: ShardArgs,
    /// One JSON line a row: event id, key, death instant, last cells.
    #[arg(long)]
    json: bool,
}

impl ExpiredArgs {
    /// The shard options, for the checks of the whole command line.
    pub(crate) fn shard(&self) -> &ShardArgs {
        &self.shard
    }
}

pub(crate) async fn exec(target: &Target, args: ExpiredArgs, out: &mut dyn Write) -> Fallible<i32> {
    let policy = parse_policy(&args.policy)?;
    let now = Clock::system().now();
    let from = parse_instant(&args.from, now).map_err(|e| format!("--from: {e}"))?;
    let to = parse_instant(&args.to, now).map_err(|e| format!("--to: {e}"))?;
    args.shard.shard()?;
    let conn = target.connect().await?;
    let part = args.shard.resolve(&conn, &args.table).await?;
    let mut window = ExpiryWindow::new(from, to).with_part(part);
    if let Some(after) = &args.after {
        window = window.resume_after(after.clone().into_bytes());
    }
    let rows = FamilyRows::new(&args.table, &args.family, policy);
    let mut feed = std::pin::pin!(ops::expired(&conn, &rows, &window, now));
    let mut lines = Vec::new();
    while let Some(row) = feed.try_next().await? {
        if args.json {
            // Streamed: a consumer acts on each row as it comes.
            write_lines(out, std::slice::from_ref(&row))?;
        } else {
            lines.push([
                String::from_utf8_lossy(&row.row_key).into_owned(),
                instant(row.died_at),
                row.cells.len().to_string(),
                row.event_id,
            ]);
        }
    }
    if !args.json {
        print_table(out, ["ROW", "DIED AT", "CELLS", "EVENT ID"], &lines)?;
        writeln!(
            out,
            "{} rows died from {} to {}",
            lines.len(),
            instant(from),
            instant(to)
        )?;
    }
    Ok(crate::exit::OK)
}
