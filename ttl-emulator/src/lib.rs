//! Google's Bigtable emulator, started on a free loopback port: the test
//! tooling of `bigtable-ttl`'s tests, examples and benchmarks (not part of
//! the library).
//!
//! The emulator runs under a tiny `sh` watchdog that holds a pipe from this
//! process: when this process exits for any reason, even `SIGKILL`, the pipe
//! closes and the watchdog kills the emulator. No emulator outlives its test.
// No function of the library over about 100 lines without a reason
// stated next to it (the workspace allows long tests and `quote!` impls).
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

use std::io::Write as _;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Where the Google Cloud CLI's Debian package installs the emulator: looked
/// at after `$BIGTABLE_EMULATOR_BIN` and before `PATH`.
const DEBIAN_EMULATOR_PATH: &str =
    "/usr/lib/google-cloud-sdk/platform/bigtable-emulator/cbtemulator";

/// How to get the emulator, printed whenever it is missing.
pub const INSTALL_HINT: &str = "install Google's Bigtable emulator: `apt-get install \
google-cloud-cli-bigtable-emulator` (Google Cloud CLI's apt repository) or `gcloud components \
install bigtable`; or point BIGTABLE_EMULATOR_BIN at a cbtemulator binary, or \
BIGTABLE_EMULATOR_HOST at a running emulator on loopback";

/// Why the emulator could not be used.
#[derive(Debug, thiserror::Error)]
pub enum EmulatorError {
    /// No emulator binary.
    #[error("Bigtable emulator not found (looked at {looked_at}); {INSTALL_HINT}")]
    NotInstalled {
        /// The paths tried.
        looked_at: String,
    },
    /// It did not start or did not listen in time.
    #[error("Bigtable emulator did not start: {0}")]
    Start(String),
    /// `BIGTABLE_EMULATOR_HOST` points somewhere other than loopback.
    #[error("BIGTABLE_EMULATOR_HOST={0} is not a loopback address; tests only talk to an emulator on this machine (127.0.0.1, localhost or [::1])")]
    NotLoopback(String),
}

/// A running emulator this process started; stopped when dropped.
#[derive(Debug)]
pub struct Emulator {
    host: String,
    watchdog: Child,
    lifeline: Option<ChildStdin>,
}

impl Emulator {
    /// Start the emulator on a free loopback port and wait until it listens.
    ///
    /// The binary is `$BIGTABLE_EMULATOR_BIN`, else where the Debian package puts it,
    /// else `cbtemulator` on `PATH`.
    ///
    /// # Errors
    /// [`EmulatorError::NotInstalled`] with install instructions, or
    /// [`EmulatorError::Start`].
    pub fn start() -> Result<Self, EmulatorError> {
        let binary = find_binary()?;
        let mut last_error = String::new();
        // A freed port can be taken again before the emulator binds it: retry.
        for _ in 0..5 {
            match Self::start_on(&binary, free_port()?) {
                Ok(emulator) => return Ok(emulator),
                Err(e) => last_error = e.to_string(),
            }
        }
        Err(EmulatorError::Start(last_error))
    }

    /// Start the emulator on loopback port `port` (to restart one on the
    /// port a killed one used, so clients reconnect to it), retrying for a
    /// few seconds while the port is still being released.
    ///
    /// # Errors
    /// As [`Emulator::start`].
    pub fn start_on_port(port: u16) -> Result<Self, EmulatorError> {
        let binary = find_binary()?;
        let mut last_error = String::new();
        for _ in 0..20 {
            match Self::start_on(&binary, port) {
                Ok(emulator) => return Ok(emulator),
                Err(e) => last_error = e.to_string(),
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        Err(EmulatorError::Start(last_error))
    }

    fn start_on(binary: &Path, port: u16) -> Result<Self, EmulatorError> {
        // `read` returns when our end of the pipe closes, i.e. when this
        // process is gone; then the emulator goes too. The shell waits for
        // it to exit, so `stop` returns once its port and memory are free
        // (a next emulator, or a benchmark, does not share the machine with
        // one still tearing down).
        let script = r#"trap 'kill $pid 2>/dev/null' EXIT; "$0" -host 127.0.0.1 -port "$1" >/dev/null 2>&1 & pid=$!; read _ignored; kill $pid 2>/dev/null; wait $pid"#;
        let mut watchdog = Command::new("sh")
            .arg("-c")
            .arg(script)
            .arg(binary)
            .arg(port.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| EmulatorError::Start(format!("spawning sh: {e}")))?;
        let lifeline = watchdog.stdin.take();
        let mut emulator = Self {
            host: format!("127.0.0.1:{port}"),
            watchdog,
            lifeline,
        };
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return Ok(emulator);
            }
            if let Ok(Some(status)) = emulator.watchdog.try_wait() {
                return Err(EmulatorError::Start(format!(
                    "emulator exited ({status}) before listening on {addr}"
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        emulator.stop();
        Err(EmulatorError::Start(format!(
            "nothing listened on {addr} within 20 s"
        )))
    }

    /// `127.0.0.1:PORT`, the value for `BIGTABLE_EMULATOR_HOST`.
    #[must_use]
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The loopback port it listens on.
    #[must_use]
    pub fn port(&self) -> u16 {
        self.host
            .rsplit_once(':')
            .and_then(|(_, p)| p.parse().ok())
            .unwrap_or_default()
    }

    /// Stop the emulator now, as a crash would: its data is gone and
    /// connections to it fail. (Dropping it does the same.)
    pub fn kill(&mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        if let Some(mut lifeline) = self.lifeline.take() {
            let _ = lifeline.write_all(b"\n");
        }
        let _ = self.watchdog.wait();
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        self.stop();
    }
}

fn find_binary() -> Result<PathBuf, EmulatorError> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(bin) = std::env::var_os("BIGTABLE_EMULATOR_BIN") {
        candidates.push(bin.into());
    }
    candidates.push(DEBIAN_EMULATOR_PATH.into());
    if let Some(path) = std::env::var_os("PATH") {
        candidates.extend(std::env::split_paths(&path).map(|dir| dir.join("cbtemulator")));
    }
    candidates
        .iter()
        .find(|p| p.is_file())
        .cloned()
        .ok_or_else(|| EmulatorError::NotInstalled {
            looked_at: candidates
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
        })
}

fn free_port() -> Result<u16, EmulatorError> {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| EmulatorError::Start(format!("no free loopback port: {e}")))
}

/// Whether `host` (`HOST:PORT`) names this machine.
#[must_use]
pub fn is_loopback(host: &str) -> bool {
    let name = host
        .rsplit_once(':')
        .map_or(host, |(name, _)| name)
        .trim_start_matches('[')
        .trim_end_matches(']');
    name == "localhost"
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The emulator for this process: the one at `BIGTABLE_EMULATOR_HOST` when
/// set (it must be on loopback), else one started once and shared by every
/// caller in the process, stopped when the process exits.
///
/// # Errors
/// As [`Emulator::start`], or [`EmulatorError::NotLoopback`].
pub fn shared_host() -> Result<String, EmulatorError> {
    static SHARED: OnceLock<Result<Emulator, String>> = OnceLock::new();
    if let Ok(host) = std::env::var("BIGTABLE_EMULATOR_HOST") {
        if !host.is_empty() {
            if !is_loopback(&host) {
                return Err(EmulatorError::NotLoopback(host));
            }
            return Ok(host);
        }
    }
    match SHARED.get_or_init(|| Emulator::start().map_err(|e| e.to_string())) {
        Ok(emulator) => Ok(emulator.host().to_owned()),
        Err(e) => Err(EmulatorError::Start(e.clone())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_are_recognised() {
        assert!(is_loopback("127.0.0.1:9000"));
        assert!(is_loopback("localhost:9000"));
        assert!(is_loopback("[::1]:9000"));
        assert!(!is_loopback("10.0.0.1:9000"));
        assert!(!is_loopback("bigtable.example.com:443"));
    }
}
