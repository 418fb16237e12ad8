//! What a run records: every call of every client, when it was invoked
//! and when it returned (µs on the true clock, the system's, which the
//! emulator also runs on), what it asked and what it got.

use std::fmt;

/// A recorded run.
#[derive(Debug, Clone, Default)]
pub struct History {
    /// Each client's clock skew (µs): its table's clock reads the true
    /// time plus this.
    pub skews: Vec<i64>,
    /// The write policy's horizon the clients ran under (µs).
    pub horizon: i64,
    /// Every call, in the order they were recorded.
    pub calls: Vec<Call>,
}

/// One call.
#[derive(Debug, Clone)]
pub struct Call {
    /// The client that made it (an index of [`History::skews`]); the
    /// emulator's restart is made by no client: `usize::MAX`.
    pub client: usize,
    /// When it was invoked and when it returned (µs, true clock).
    pub invoked: i64,
    /// When it returned.
    pub returned: i64,
    /// What it asked.
    pub op: Op,
    /// What it got.
    pub outcome: Outcome,
}

/// What a call asked. Expiries are the instants the client asked for or
/// was told, as numbers on its own clock (µs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// `insert_if_absent_with(.ttl(ttl))` of lease `lease` for `holder`.
    Acquire {
        /// The lease.
        lease: usize,
        /// This acquisition's token.
        holder: String,
    },
    /// `put_if(HOLDER == holder)` with a fresh TTL.
    Renew {
        /// The lease.
        lease: usize,
        /// The token.
        holder: String,
    },
    /// `delete_if(HOLDER == holder)`.
    Release {
        /// The lease.
        lease: usize,
        /// The token.
        holder: String,
    },
    /// `get` of register `reg`.
    Read {
        /// The register.
        reg: usize,
    },
    /// `insert_if_absent` of register `reg` at `version`, expiring at
    /// `expires`.
    Insert {
        /// The register.
        reg: usize,
        /// The version written.
        version: i64,
        /// Its expiry.
        expires: i64,
    },
    /// `put_if(VERSION == expect)` writing `version`, expiring at
    /// `expires`.
    PutIf {
        /// The register.
        reg: usize,
        /// The version the condition expects.
        expect: i64,
        /// The version written.
        version: i64,
        /// Its expiry.
        expires: i64,
    },
    /// `retime(Retime::At(expires))`.
    Retime {
        /// The register.
        reg: usize,
        /// The new expiry.
        expires: i64,
    },
    /// `increment(by 1)` of counter `counter`, a new window lasting
    /// `window` µs.
    Increment {
        /// The counter.
        counter: usize,
        /// A new window's length.
        window: i64,
    },
    /// The emulator killed and started again (an in-memory store: every
    /// row is lost), its tables made again.
    Restart,
}

/// What a call got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A lease acquired, or renewed, until `expires` (the holder's clock).
    Holds {
        /// The expiry.
        expires: i64,
    },
    /// Not acquired (another holds it), or not renewed (not the holder).
    Refused,
    /// A release: whether it deleted the lease.
    Released(bool),
    /// A register read: its version and expiry, if live.
    Value(Option<(i64, i64)>),
    /// A conditional register write applied (a retime: to this expiry).
    Applied,
    /// A conditional register write not applied; for an insert, the live
    /// register it found.
    NotApplied(Option<(i64, i64)>),
    /// An increment: the count and the window's expiry (the server's
    /// clock, the true one).
    Counted {
        /// The counter's value after it.
        value: i64,
        /// Its window's expiry.
        expires: i64,
    },
    /// Done (the restart).
    Done,
    /// The call failed: a write may or may not have been applied.
    Failed(String),
}

impl Call {
    /// Whether the call ended in an error.
    #[must_use]
    pub fn failed(&self) -> bool {
        matches!(self.outcome, Outcome::Failed(_))
    }
}

impl fmt::Display for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = |t: i64| t / 1_000;
        write!(
            f,
            "client {} [{} ms, {} ms] {:?} -> {:?}",
            self.client,
            ms(self.invoked),
            ms(self.returned),
            self.op,
            self.outcome
        )
    }
}
