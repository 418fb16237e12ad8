//! The `bigtable-ttl` command: know what a TTL policy does to a family's
//! data before and after switching it on.
//!
//! A thin layer over [`bigtable_ttl_runtime::ops`]: argument parsing (clap), one
//! module per command (`commands`), and what they print (`output`:
//! readable text, JSON from `Serialize` report types, progress bars on
//! standard error only on a terminal and never with `--json`). [`run`] is the whole program;
//! [`run_with`] runs it inside a Tokio runtime and writes to the given
//! streams, so tests run it in-process.
//!
//! Exit status: see [`exit`].
// No function of the library over about 100 lines without a reason
// stated next to it (the workspace allows long tests and `quote!` impls).
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
// Counts are printed and serialised; u64 -> f64 precision is irrelevant for progress.
#![allow(clippy::cast_precision_loss)]
// Doc comments of the command-line types are clap's --help text, read in a
// terminal: no Markdown backticks there.
#![allow(clippy::doc_markdown)]

mod chart;
mod commands;
mod events;
mod files;
mod output;
mod shard;
mod target;
mod words;

use std::ffi::OsString;
use std::io::Write;

use clap::{Parser, Subcommand};

use commands::apply::ApplyArgs;
use commands::audit::AuditArgs;
use commands::expired::ExpiredArgs;
use commands::inspect::InspectArgs;
use commands::migrate::MigrateArgs;
use commands::reap::ReapArgs;
use output::Fallible;
use target::Target;

/// Exit statuses.
pub mod exit {
    /// Done; for `audit`, the policy would delete nothing.
    pub const OK: i32 = 0;
    /// An error: connection, server, bad input, failed verification.
    pub const ERROR: i32 = 1;
    /// Bad command line (clap's own status), a shard that does not exist
    /// included however it is spelt (`--shard I/N`, `--parts N --part I`).
    pub const USAGE: i32 = 2;
    /// The policy would delete data: `audit` found cells it would delete,
    /// `apply` refused without `--force`.
    pub const WOULD_DELETE: i32 = 3;
    /// `migrate` or `reap` stopped before the end (`--stop-after`); resume
    /// it with `--resume --checkpoint FILE`.
    pub const STOPPED: i32 = 4;
}

/// Know what a TTL policy does to your Bigtable data, before and after.
///
/// Policies: `one-second` (family rule max_age = 1s; each cell's timestamp is
/// its expiry) or `default=DURATION` (max_age = DURATION; e.g. default=2d).
///
/// Exit status: 0 done (audit: nothing would be deleted), 1 error, 2 bad
/// usage, 3 the policy would delete data (audit; apply refused), 4 migrate
/// or reap stopped before the end (resume it).
#[derive(Debug, Parser)]
#[command(name = "bigtable-ttl", version, about, long_about)]
pub struct Cli {
    #[command(flatten)]
    target: Target,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Count what a policy would do to a family: cells and rows it would
    /// delete at once, real vs artificial timestamps, oldest and newest,
    /// rows whose columns would expire at different times, and when the
    /// cells expire under the live rule and the policy (--svg to draw it).
    /// One shard of the table with --shard I/N; --merge combines the
    /// shards' --json reports. Exit status 3 when it would delete data.
    Audit(AuditArgs),
    /// Set a family's GC rule to a policy's, after an audit; refused (exit
    /// status 3) when data would be lost, unless --force.
    Apply(ApplyArgs),
    /// Every cell of one row with its timestamp, whether it is alive, when it
    /// expires under the family's live rule, the time left, and the real
    /// write time from the shadow column (Cassandra's TTL() and WRITETIME()).
    /// Without a row: when the cells of --family expire, under its live
    /// rule and --policy.
    Inspect(InspectArgs),
    /// Copy a family with real timestamps into a family managed by a policy:
    /// expiry = real timestamp + TTL (of each row's newest write by default,
    /// --expiry per-cell for each cell's own), the real timestamp kept in the
    /// shadow column. Cells already expired are skipped and counted. Never
    /// changes the source. Resumable; verifies counts at the end. One
    /// shard of the table with --shard I/N; --verify only counts, and
    /// --verify --merge combines the shards' --json reports.
    Migrate(MigrateArgs),
    /// The expiry feed: the rows of a family that died within a window
    /// (--from, --to), with their last cells, the instant each died and a
    /// stable event id; --json prints one JSON line a row. One shard with
    /// --shard I/N; --after KEY resumes after a row.
    Expired(ExpiredArgs),
    /// The reaper: delete what expired in a family more than --grace ago,
    /// so that other readers (cbt, Google's clients, SQL, exports) stop
    /// seeing it: dead rows whole, expired cells of live rows, never a
    /// visible cell. --rate rows a second, --dry-run counts, --events
    /// writes each dead row as a JSON line before deleting it. Resumable
    /// (--checkpoint); one shard with --shard I/N.
    Reap(ReapArgs),
}

/// Run the program with `args` (the first is the program name), in a new
/// Tokio runtime, printing to standard output and error. Returns the exit
/// status (see [`exit`]).
pub fn run<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("bigtable-ttl: cannot start the async runtime: {e}");
            return exit::ERROR;
        }
    };
    let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
    runtime.block_on(run_with(args, &mut out, &mut err))
}

/// Run the program with `args` (the first is the program name), writing to
/// `out` and `err`. Returns the exit status (see [`exit`]).
pub async fn run_with<I, T>(args: I, out: &mut dyn Write, err: &mut dyn Write) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args).and_then(Cli::checked) {
        Ok(cli) => cli,
        Err(e) => {
            let text = e.render().to_string();
            let _ = if e.use_stderr() {
                write!(err, "{text}")
            } else {
                write!(out, "{text}")
            };
            return e.exit_code();
        }
    };
    match execute(cli, out).await {
        Ok(code) => code,
        Err(e) => {
            let _ = writeln!(err, "bigtable-ttl: {}", with_causes(&*e));
            exit::ERROR
        }
    }
}

/// `e` and the causes under it on one line (`error: cause: cause`), as
/// anyhow's `{:#}` prints them: what failed, then why (a connection
/// error's "Connection refused").
fn with_causes(e: &(dyn std::error::Error + 'static)) -> String {
    std::iter::successors(Some(e), |e| e.source())
        .map(|level| words::in_flags(level).unwrap_or_else(|| level.to_string()))
        .collect::<Vec<_>>()
        .join(": ")
}

impl Cli {
    /// The command line once the checks that span several options pass,
    /// as usage errors (exit status 2) like clap's own: a bad shard is the
    /// same mistake however it is spelt.
    fn checked(self) -> Result<Self, clap::Error> {
        let shard = match &self.command {
            Command::Audit(args) => Some(args.shard()),
            Command::Migrate(args) => Some(args.shard()),
            Command::Expired(args) => Some(args.shard()),
            Command::Reap(args) => Some(args.shard()),
            Command::Apply(_) | Command::Inspect(_) => None,
        };
        if let Some(Err(problem)) = shard.map(shard::ShardArgs::usage) {
            use clap::CommandFactory as _;
            return Err(Cli::command().error(clap::error::ErrorKind::ValueValidation, problem));
        }
        Ok(self)
    }
}

async fn execute(cli: Cli, out: &mut dyn Write) -> Fallible<i32> {
    match cli.command {
        Command::Audit(args) => commands::audit::exec(&cli.target, args, out).await,
        Command::Apply(args) => commands::apply::exec(&cli.target, args, out).await,
        Command::Inspect(args) => commands::inspect::exec(&cli.target, args, out).await,
        Command::Migrate(args) => commands::migrate::exec(&cli.target, args, out).await,
        Command::Expired(args) => commands::expired::exec(&cli.target, args, out).await,
        Command::Reap(args) => commands::reap::exec(&cli.target, args, out).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_well_formed() {
        use clap::CommandFactory as _;
        Cli::command().debug_assert();
    }

    #[tokio::test]
    async fn a_bad_policy_fails_before_connecting() {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = run_with(
            [
                "bigtable-ttl",
                "audit",
                "t",
                "--family",
                "f",
                "--policy",
                "default=soon",
            ],
            &mut out,
            &mut err,
        )
        .await;
        assert_eq!(code, exit::ERROR);
        let err = String::from_utf8(err).unwrap();
        assert!(err.contains("invalid policy `default=soon`"), "{err}");
    }

    #[tokio::test]
    async fn a_bad_emulator_host_is_an_error_not_a_panic() {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let args = [
            "bigtable-ttl",
            "--project",
            "p",
            "--instance",
            "i",
            "--emulator-host",
            "a b:1",
            "inspect",
            "t",
            "row",
        ];
        let code = run_with(args, &mut out, &mut err).await;
        assert_eq!(code, exit::ERROR);
        let err = String::from_utf8(err).unwrap();
        assert!(
            err.contains("malformed Bigtable address") && err.matches("white space").count() == 1,
            "{err}"
        );
    }

    /// A connection that is refused: the message says so and where, not
    /// only that the call failed. (A first connection to an emulator is
    /// not retried: nothing runs there.)
    #[tokio::test]
    async fn a_connection_error_says_why() {
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let host = format!("127.0.0.1:{port}");
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let args = [
            "bigtable-ttl",
            "--project",
            "p",
            "--instance",
            "i",
            "--emulator-host",
            &host,
            "inspect",
            "t",
            "row",
        ];
        let code = run_with(args, &mut out, &mut err).await;
        assert_eq!(code, exit::ERROR);
        let err = String::from_utf8(err).unwrap();
        assert!(err.contains("UNAVAILABLE"), "what failed: {err}");
        assert!(err.contains("Connection refused"), "why: {err}");
        assert!(err.contains(&format!("at {host}")), "where: {err}");
    }

    /// A file that cannot be read names the file, then the system's
    /// reason once (it printed "Is a directory (os error 21)" twice).
    #[tokio::test]
    async fn a_file_error_says_its_cause_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_str().unwrap();
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = run_with(
            ["bigtable-ttl", "audit", "--merge", path, path],
            &mut out,
            &mut err,
        )
        .await;
        assert_eq!(code, exit::ERROR);
        let err = String::from_utf8(err).unwrap();
        assert!(
            err.contains(&format!("reading report {path}: "))
                && err.matches("os error").count() == 1,
            "{err}"
        );
    }

    #[tokio::test]
    async fn usage_errors_exit_2() {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = run_with(["bigtable-ttl", "audit"], &mut out, &mut err).await;
        assert_eq!(code, exit::USAGE);
    }
}
