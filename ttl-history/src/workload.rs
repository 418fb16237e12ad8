//! A run: Google's Bigtable emulator behind a fault proxy, concurrent
//! clients with skewed clocks doing leases, compare-and-set registers and
//! counters, every call recorded.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bigtable_ttl::writer::WriteOptions;
use bigtable_ttl::Retime;
use bigtable_ttl::{BigtableRow, Clock, Connection, Expiry, Insert, Table};
use bigtable_ttl_emulator::Emulator;
use chrono::{DateTime, TimeDelta, Utc};

use crate::history::{Call, History, Op, Outcome};
use crate::proxy::{Faults, Proxy};

/// A lease: who holds a resource; the row is the lease.
#[derive(BigtableRow, Debug, Clone, PartialEq)]
#[bigtable(table = "leases", family = "l")]
#[ttl(default = "30s")]
pub struct Lease {
    /// The resource.
    #[bigtable(key)]
    pub resource: String,
    /// The acquisition's token.
    pub holder: String,
}

/// A compare-and-set register: a version, expiring as its writer asks.
#[derive(BigtableRow, Debug, Clone, PartialEq)]
#[bigtable(table = "registers", family = "r")]
pub struct Register {
    /// The register.
    #[bigtable(key)]
    pub id: String,
    /// Its expiry.
    #[ttl(expire_at)]
    pub expires_at: DateTime<Utc>,
    /// Its version.
    pub version: i64,
}

/// A counter in windows.
#[derive(BigtableRow, Debug, Clone, PartialEq)]
#[bigtable(table = "windows", family = "w")]
pub struct Window {
    /// The counter.
    #[bigtable(key)]
    pub id: String,
    /// The window's expiry.
    #[ttl(expire_at)]
    pub expires_at: DateTime<Utc>,
    /// The count.
    #[bigtable(counter)]
    pub hits: i64,
}

/// How a run goes.
#[derive(Debug, Clone)]
pub struct Config {
    /// Concurrent clients, each its own connection and clock.
    pub clients: usize,
    /// How long they run.
    pub duration: Duration,
    /// Seeds the workload and the faults.
    pub seed: u64,
    /// The most a client's clock is skewed, either way (the first client
    /// is ahead by this, the second behind, the others in between).
    pub max_skew: Duration,
    /// The most a chunk is held, each way.
    pub max_delay: Duration,
    /// When to restart the emulator (from the start), if at all.
    pub restart_at: Option<Duration>,
    /// Leases, registers and counters.
    pub leases: usize,
    /// Registers.
    pub registers: usize,
    /// Counters.
    pub counters: usize,
    /// The clients' write policy.
    pub write: WriteOptions,
    /// What the run must have seen acknowledged before it stops, if
    /// anything: on a loaded machine calls are slow, and a fixed duration
    /// alone can end a run with too little to judge.
    pub enough: Option<Enough>,
}

/// The least a run goes on to see acknowledged after its `duration`, and
/// the longest it goes on for it.
#[derive(Debug, Clone, Copy)]
pub struct Enough {
    /// Leases acquired.
    pub acquisitions: usize,
    /// Register calls answered, whatever their outcome.
    pub register_calls: usize,
    /// Increments counted.
    pub increments: usize,
    /// Connections the proxy cut: a slow machine moves few bytes, and a
    /// connection is cut only once it has carried its drawn share.
    pub cuts: usize,
    /// The longest the run goes on, from its start.
    pub longest: Duration,
}

/// A kind of call a client makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Lease,
    Register,
    Increment,
}

impl Kind {
    /// The kind a draw in `0..100` makes: 35 % leases, 40 % register
    /// calls, 25 % increments.
    fn drawn(draw: u64) -> Self {
        match draw {
            0..35 => Self::Lease,
            35..75 => Self::Register,
            _ => Self::Increment,
        }
    }
}

impl Enough {
    /// The kinds of call `calls` has too few of, in [`Kind`]'s order.
    fn lacking_in(&self, calls: &[Call]) -> Vec<Kind> {
        let (mut acquisitions, mut register_calls, mut increments) = (0, 0, 0);
        for call in calls {
            match (&call.op, &call.outcome) {
                (_, Outcome::Failed(_)) => {}
                (Op::Acquire { .. }, Outcome::Holds { .. }) => acquisitions += 1,
                (Op::Increment { .. }, Outcome::Counted { .. }) => increments += 1,
                (Op::Read { .. } | Op::Insert { .. } | Op::PutIf { .. } | Op::Retime { .. }, _) => {
                    register_calls += 1;
                }
                _ => {}
            }
        }
        [
            (acquisitions < self.acquisitions, Kind::Lease),
            (register_calls < self.register_calls, Kind::Register),
            (increments < self.increments, Kind::Increment),
        ]
        .into_iter()
        .filter_map(|(short, kind)| short.then_some(kind))
        .collect()
    }
}

impl Default for Config {
    fn default() -> Self {
        Self {
            clients: 6,
            duration: Duration::from_secs(40),
            seed: 41,
            max_skew: Duration::from_millis(500),
            max_delay: Duration::from_millis(1_500),
            restart_at: Some(Duration::from_secs(20)),
            leases: 2,
            registers: 4,
            counters: 2,
            write: WriteOptions::default(),
            enough: None,
        }
    }
}

/// What a run recorded, and the faults it met.
#[derive(Debug)]
pub struct Run {
    /// Every call.
    pub history: History,
    /// Connections the proxy cut (reset, or answers swallowed first).
    pub cuts: usize,
    /// Connections made through the proxy.
    pub connections: u64,
    /// Emulator restarts.
    pub restarts: usize,
}

/// `SplitMix64`.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn micros(t: DateTime<Utc>) -> i64 {
    t.timestamp_micros()
}

fn now() -> i64 {
    micros(Utc::now())
}

/// A number in `lo..hi`.
fn between(rng: &mut u64, lo: i64, hi: i64) -> i64 {
    lo + i64::try_from(next(rng) % u64::try_from(hi - lo).unwrap_or(1).max(1)).unwrap_or(0)
}

const PROJECT: &str = "history";
const INSTANCE: &str = "checker";

/// One client's tables.
#[derive(Clone)]
struct Client {
    id: usize,
    leases: Table<Lease>,
    registers: Table<Register>,
    windows: Table<Window>,
    clock: Clock,
    calls: Arc<Mutex<Vec<Call>>>,
}

impl Client {
    fn record(&self, invoked: i64, op: Op, outcome: Outcome) {
        self.calls.lock().unwrap().push(Call {
            client: self.id,
            invoked,
            returned: now(),
            op,
            outcome,
        });
    }

    /// The client's now, to the millisecond (what expiries are made of).
    fn now_ms(&self) -> DateTime<Utc> {
        let t = self.clock.now();
        DateTime::from_timestamp_millis(t.timestamp_millis()).unwrap_or(t)
    }

    async fn lease(&self, rng: &mut u64, n: usize, leases: usize) {
        let lease = usize::try_from(next(rng)).unwrap_or(0) % leases;
        let holder = format!("c{}-{n}", self.id);
        let ttl = if next(rng).is_multiple_of(2) {
            300
        } else {
            2_500
        };
        let row = Lease {
            resource: format!("lease{lease}"),
            holder: holder.clone(),
        };
        let op = Op::Acquire {
            lease,
            holder: holder.clone(),
        };
        let invoked = now();
        let acquired = self
            .leases
            .insert_if_absent_with(row.mutation().ttl(TimeDelta::milliseconds(ttl)))
            .await;
        let expires = match acquired {
            Ok(Insert::Inserted(w)) => {
                let expires = micros(w.expires_at);
                self.record(invoked, op, Outcome::Holds { expires });
                expires
            }
            Ok(Insert::Exists(_)) => return self.record(invoked, op, Outcome::Refused),
            Err(e) => return self.record(invoked, op, Outcome::Failed(e.to_string())),
        };
        let mine = || Lease::HOLDER.equals(&holder);
        if ttl > 1_000 {
            tokio::time::sleep(Duration::from_millis(300)).await;
            let invoked = now();
            let renewed = self
                .leases
                .put_if_with(row.mutation().ttl(TimeDelta::milliseconds(ttl)), mine())
                .await;
            let outcome = match renewed {
                Ok(Some(w)) => Outcome::Holds {
                    expires: micros(w.expires_at),
                },
                Ok(None) => Outcome::Refused,
                Err(e) => Outcome::Failed(e.to_string()),
            };
            self.record(
                invoked,
                Op::Renew {
                    lease,
                    holder: holder.clone(),
                },
                outcome,
            );
        }
        let hold = between(rng, 0, 150);
        tokio::time::sleep(Duration::from_millis(hold.unsigned_abs())).await;
        if next(rng) % 10 < 7 {
            let invoked = now();
            let outcome = match self.leases.delete_if(&row.resource, mine()).await {
                Ok(released) => Outcome::Released(released),
                Err(e) => Outcome::Failed(e.to_string()),
            };
            self.record(invoked, Op::Release { lease, holder }, outcome);
        } else {
            let left = expires - now();
            if left > 0 && left < 3_000_000 {
                tokio::time::sleep(Duration::from_micros(left.unsigned_abs())).await;
            }
        }
    }

    async fn register(&self, rng: &mut u64, n: usize, registers: usize) {
        let reg = usize::try_from(next(rng)).unwrap_or(0) % registers;
        let id = format!("reg{reg}");
        let invoked = now();
        let read = self.registers.get(&id).await;
        let seen = match read {
            Ok(row) => {
                let seen = row.map(|r| (r.value.version, micros(r.expires_at)));
                self.record(invoked, Op::Read { reg }, Outcome::Value(seen));
                seen
            }
            Err(e) => {
                self.record(invoked, Op::Read { reg }, Outcome::Failed(e.to_string()));
                return;
            }
        };
        let version = i64::try_from(self.id * 1_000_000 + n).unwrap_or(i64::MAX);
        let expires_at = self.now_ms() + TimeDelta::milliseconds(between(rng, 300, 3_000));
        let expires = micros(expires_at);
        let row = Register {
            id: id.clone(),
            expires_at,
            version,
        };
        let invoked = now();
        match seen {
            None => {
                let op = Op::Insert {
                    reg,
                    version,
                    expires,
                };
                let outcome = match self.registers.insert_if_absent(&row).await {
                    Ok(Insert::Inserted(_)) => Outcome::Applied,
                    Ok(Insert::Exists(r)) => {
                        Outcome::NotApplied(Some((r.value.version, micros(r.expires_at))))
                    }
                    Err(e) => Outcome::Failed(e.to_string()),
                };
                self.record(invoked, op, outcome);
            }
            Some((expect, _)) if !next(rng).is_multiple_of(4) => {
                let op = Op::PutIf {
                    reg,
                    expect,
                    version,
                    expires,
                };
                let outcome = match self
                    .registers
                    .put_if(&row, Register::VERSION.equals(&expect))
                    .await
                {
                    Ok(Some(_)) => Outcome::Applied,
                    Ok(None) => Outcome::NotApplied(None),
                    Err(e) => Outcome::Failed(e.to_string()),
                };
                self.record(invoked, op, outcome);
            }
            Some(_) => {
                let op = Op::Retime { reg, expires };
                let outcome = match self.registers.retime(&id, Retime::At(expires_at)).await {
                    Ok(Some(_)) => Outcome::Applied,
                    Ok(None) => Outcome::NotApplied(None),
                    Err(e) => Outcome::Failed(e.to_string()),
                };
                self.record(invoked, op, outcome);
            }
        }
    }

    async fn increment(&self, rng: &mut u64, counters: usize) {
        let counter = usize::try_from(next(rng)).unwrap_or(0) % counters;
        let window = 1_000;
        let op = Op::Increment {
            counter,
            window: window * 1_000,
        };
        let invoked = now();
        let counted = self
            .windows
            .increment(
                &format!("counter{counter}"),
                Window::HITS,
                1,
                Expiry::Ttl(TimeDelta::milliseconds(window)),
            )
            .await;
        let outcome = match counted {
            Ok(c) => Outcome::Counted {
                value: c.value,
                expires: micros(c.expires_at),
            },
            Err(e) => Outcome::Failed(e.to_string()),
        };
        self.record(invoked, op, outcome);
    }
}

async fn ensure_schema(host: &str) -> Result<(), String> {
    let conn = Connection::emulator(host, PROJECT, INSTANCE).map_err(|e| e.to_string())?;
    Table::<Lease>::new(conn.clone())
        .ensure_schema()
        .await
        .map_err(|e| e.to_string())?;
    Table::<Register>::new(conn.clone())
        .ensure_schema()
        .await
        .map_err(|e| e.to_string())?;
    Table::<Window>::new(conn)
        .ensure_schema()
        .await
        .map_err(|e| e.to_string())?;
    Ok(())
}

async fn start_emulator(port: Option<u16>) -> Result<Emulator, String> {
    tokio::task::spawn_blocking(move || match port {
        None => Emulator::start(),
        Some(port) => Emulator::start_on_port(port),
    })
    .await
    .map_err(|e| e.to_string())?
    .map_err(|e| e.to_string())
}

/// Run `config`'s workload and record it.
///
/// # Errors
/// When the emulator cannot be started or its tables made.
///
/// # Panics
/// When a client panicked (holding the record's lock).
pub async fn run(config: &Config) -> Result<Run, String> {
    let mut emulator = start_emulator(None).await?;
    let port = emulator.port();
    let host = emulator.host().to_owned();
    ensure_schema(&host).await?;
    let proxy = Arc::new(Proxy::start(&host).await);
    proxy.arm(Faults::Chaos {
        seed: config.seed,
        max_delay: config.max_delay,
        // Cuts come within a few dozen calls: a loaded machine made 92
        // calls over 13 connections in two minutes, and with cuts drawn
        // between 3 and 60 kB only one connection was cut.
        cut_after: (2_000, 24_000),
        lose_percent: 40,
        hold: Duration::from_millis(700),
    });
    let calls = Arc::new(Mutex::new(Vec::new()));
    let max_skew = i64::try_from(config.max_skew.as_micros()).unwrap_or(0);
    let mut rng = config.seed;
    let skews: Vec<i64> = (0..config.clients)
        .map(|i| match i {
            0 => max_skew,
            1 => -max_skew,
            _ => between(&mut rng, -max_skew, max_skew + 1),
        })
        .collect();
    let start = now();
    let stop = start + i64::try_from(config.duration.as_micros()).unwrap_or(0);
    let longest = config.enough.map_or(stop, |e| {
        start + i64::try_from(e.longest.as_micros()).unwrap_or(0)
    });
    let mut tasks = Vec::new();
    for (id, &skew) in skews.iter().enumerate() {
        let conn =
            Connection::emulator(&proxy.host(), PROJECT, INSTANCE).map_err(|e| e.to_string())?;
        let clock = Clock::system_offset(TimeDelta::microseconds(skew));
        let client = Client {
            id,
            leases: Table::<Lease>::new(conn.clone())
                .with_clock(clock.clone())
                .with_write_options(config.write),
            registers: Table::<Register>::new(conn.clone())
                .with_clock(clock.clone())
                .with_write_options(config.write),
            windows: Table::<Window>::new(conn)
                .with_clock(clock.clone())
                .with_write_options(config.write),
            clock,
            calls: calls.clone(),
        };
        let mut rng = config.seed.wrapping_add(1_000 * id as u64 + 1);
        let (leases, registers, counters) = (config.leases, config.registers, config.counters);
        let enough = config.enough;
        let seen = calls.clone();
        let proxy = proxy.clone();
        tasks.push(tokio::spawn(async move {
            let mut n = 0;
            loop {
                let t = now();
                // Past its duration the run goes on (until `longest`) for
                // what it lacks, and makes only those calls: a loaded
                // machine once answered 7 increments in two minutes while
                // leases and registers had long had their count.
                let lacking = if t < stop {
                    Vec::new()
                } else {
                    let Some(enough) = enough.filter(|_| t < longest) else {
                        break;
                    };
                    let lacking = enough.lacking_in(&seen.lock().unwrap());
                    if lacking.is_empty() && proxy.resets() >= enough.cuts {
                        break;
                    }
                    lacking
                };
                n += 1;
                let draw = next(&mut rng) % 100;
                let kind = match usize::try_from(draw) {
                    Ok(i) if !lacking.is_empty() => lacking[i % lacking.len()],
                    _ => Kind::drawn(draw),
                };
                match kind {
                    Kind::Lease => client.lease(&mut rng, n, leases).await,
                    Kind::Register => client.register(&mut rng, n, registers).await,
                    Kind::Increment => client.increment(&mut rng, counters).await,
                }
                let pause = next(&mut rng) % 20;
                tokio::time::sleep(Duration::from_millis(pause)).await;
            }
        }));
    }
    let mut restarts = 0;
    if let Some(at) = config.restart_at {
        tokio::time::sleep(at).await;
        let invoked = now();
        emulator.kill();
        drop(emulator);
        emulator = start_emulator(Some(port)).await?;
        ensure_schema(&host).await?;
        calls.lock().unwrap().push(Call {
            client: usize::MAX,
            invoked,
            returned: now(),
            op: Op::Restart,
            outcome: Outcome::Done,
        });
        restarts += 1;
    }
    for task in tasks {
        task.await.map_err(|e| e.to_string())?;
    }
    drop(emulator);
    let mut calls = std::mem::take(&mut *calls.lock().unwrap());
    calls.sort_by_key(|c| c.invoked);
    Ok(Run {
        history: History {
            skews,
            horizon: i64::try_from(config.write.horizon.as_micros()).unwrap_or(i64::MAX),
            calls,
        },
        cuts: proxy.resets(),
        connections: proxy.connections(),
        restarts,
    })
}
