//! [`ConnectionBuilder`]: every setting of a [`Connection`](crate::Connection) a production
//! deployment needs (app profile, endpoints, credentials, TLS roots,
//! connection pool, HTTP/2 keep-alive, default timeouts), and the rules that
//! keep them safe (no credentials over plaintext).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::client::retry::RetryPolicy;
use crate::model::error::{self, BadAddress, BoxError, Error, NoCredentials, Result};
use crate::wire::cause::Cause;
use tonic::transport::Channel;

use crate::wire::channel::{
    endpoint, ChannelConfig, DataChannel, KeepAlive, CLOUD_CONNECTIONS, DATA_ENDPOINT,
};
use crate::wire::tokens::{GcpAuth, TokenSource, Tokens};

/// Where a connection's access tokens come from.
///
/// ```no_run
/// use bigtable_ttl::Credentials;
///
/// let adc = Credentials::application_default();
/// let key = Credentials::key_file("/etc/secrets/bigtable-sa.json");
/// # let _ = (adc, key);
/// ```
#[derive(Clone)]
pub struct Credentials(Source);

#[derive(Clone)]
enum Source {
    ApplicationDefault,
    KeyFile(PathBuf),
    Tokens(Arc<dyn TokenSource>),
    None,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Source::ApplicationDefault => f.write_str("Credentials::application_default()"),
            Source::KeyFile(path) => write!(f, "Credentials::key_file({path:?})"),
            Source::Tokens(_) => f.write_str("Credentials::token_source(..)"),
            Source::None => f.write_str("Credentials::none()"),
        }
    }
}

impl Credentials {
    /// Application default credentials (`GOOGLE_APPLICATION_CREDENTIALS`,
    /// gcloud's user credentials, or the metadata server), as every Google
    /// client finds them. The default toward an `https://` endpoint.
    #[must_use]
    pub fn application_default() -> Self {
        Self(Source::ApplicationDefault)
    }

    /// The service-account key file (JSON) at `path`, read by
    /// [`ConnectionBuilder::connect`].
    #[must_use]
    pub fn key_file(path: impl Into<PathBuf>) -> Self {
        Self(Source::KeyFile(path.into()))
    }

    /// Tokens from `source` (workload identity federation, a token
    /// broker, a test stand-in): any [`TokenSource`]. Its tokens are kept
    /// while more than a minute of them is left; [`TokenSource`] shows
    /// the few lines that turn a `gcp_auth` provider into one.
    #[must_use]
    pub fn token_source(source: Arc<dyn TokenSource>) -> Self {
        Self(Source::Tokens(source))
    }

    /// No credentials: requests carry no `authorization` header (an
    /// emulator, or a proxy that authenticates for you).
    #[must_use]
    pub fn none() -> Self {
        Self(Source::None)
    }

    async fn resolve(&self) -> Result<Option<Tokens>> {
        match &self.0 {
            Source::ApplicationDefault => gcp_auth::provider()
                .await
                .map(|provider| Some(Tokens::new(Arc::new(GcpAuth(provider)))))
                .map_err(|e| no_default_credentials(&e)),
            Source::KeyFile(path) => gcp_auth::CustomServiceAccount::from_file(path)
                .map(|account| Some(Tokens::new(Arc::new(GcpAuth(Arc::new(account))))))
                .map_err(|e| {
                    Error::from(error::Connect {
                        target: format!("service-account key file {}", path.display()),
                        source: Box::new(Cause::of(&e)),
                    })
                }),
            Source::Tokens(source) => Ok(Some(Tokens::new(source.clone()))),
            Source::None => Ok(None),
        }
    }

    fn is_none(&self) -> bool {
        matches!(self.0, Source::None)
    }
}

/// The error of a search for application default credentials that
/// failed: when none was found anywhere, one that says where they were
/// looked for and what to do (`BIGTABLE_EMULATOR_HOST` among it).
fn no_default_credentials(e: &gcp_auth::Error) -> Error {
    let cause = Cause::of(e);
    Error::from(error::Connect {
        target: "application default credentials".to_owned(),
        source: match e {
            gcp_auth::Error::NoAuthMethod(..) => Box::new(NoCredentials(Box::new(cause))),
            _ => Box::new(cause),
        },
    })
}

/// The settings of a [`Connection`](crate::Connection), from
/// [`Connection::builder`](crate::Connection::builder); nothing
/// is sent before the first call.
///
/// Left alone, it connects as
/// [`Connection::connect`](crate::Connection::connect) does: the emulator at
/// `BIGTABLE_EMULATOR_HOST` when that is set, else Cloud Bigtable with
/// application default credentials.
///
/// ```no_run
/// use std::time::Duration;
/// use bigtable_ttl::retry::RetryPolicy;
/// use bigtable_ttl::{Connection, Credentials};
///
/// # async fn run() -> bigtable_ttl::Result<()> {
/// let conn = Connection::builder("my-project", "my-instance")
///     .app_profile("batch-jobs")
///     .data_endpoint("https://us-east1-bigtable.googleapis.com")
///     .credentials(Credentials::key_file("/etc/secrets/bigtable-sa.json"))
///     .pool_size(8)
///     .keep_alive(Duration::from_secs(20), Duration::from_secs(5))
///     .retry(RetryPolicy::default().with_attempt_timeout(Duration::from_secs(5)))
///     .connect()
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct ConnectionBuilder {
    project: String,
    instance: String,
    app_profile: String,
    emulator: Option<String>,
    data_endpoint: Option<String>,
    admin_endpoint: Option<String>,
    credentials: Option<Credentials>,
    extra_roots: Vec<Vec<u8>>,
    pool_size: Option<usize>,
    keep_alive: KeepAlive,
    retry: RetryPolicy,
    admin_retry: RetryPolicy,
    #[cfg(feature = "opentelemetry")]
    meter_provider: Option<crate::wire::builtin_metrics::Provider>,
}

/// Cloud Bigtable's global admin endpoint.
pub(crate) const ADMIN_ENDPOINT: &str = "https://bigtableadmin.googleapis.com";

/// What a connection is made of, once the builder has checked its settings.
/// (The connection itself is assembled in `connection.rs`, which names this
/// module and not the other way round.)
pub(crate) struct Parts {
    pub(crate) channel: DataChannel,
    pub(crate) admin: Channel,
    pub(crate) admin_target: AdminTarget,
    pub(crate) tokens: Option<Tokens>,
    pub(crate) project: String,
    pub(crate) instance: String,
    pub(crate) target: String,
    pub(crate) retry: RetryPolicy,
    pub(crate) admin_retry: RetryPolicy,
}

/// Where admin calls go, for the errors of connections never made: the
/// address (`host:port`), and whether it is an emulator no admin call has
/// reached yet (see [`crate::wire::cause::Unreachable`]).
#[derive(Debug, Clone)]
pub(crate) struct AdminTarget {
    pub(crate) address: Arc<str>,
    pub(crate) emulator: bool,
    pub(crate) reached: Arc<std::sync::atomic::AtomicBool>,
}

impl AdminTarget {
    fn new(uri: &str, emulator: bool) -> Self {
        let address = uri.split_once("://").map_or(uri, |(_, rest)| rest);
        Self {
            address: address.trim_end_matches('/').into(),
            emulator,
            reached: Arc::default(),
        }
    }
}

/// Where a connection goes, once the settings and the environment are read.
#[derive(Debug, PartialEq, Eq)]
enum Target {
    Emulator(String),
    Endpoints { data: String, admin: String },
}

impl ConnectionBuilder {
    pub(crate) fn new(project: &str, instance: &str) -> Self {
        Self {
            project: project.to_owned(),
            instance: instance.to_owned(),
            app_profile: String::new(),
            emulator: None,
            data_endpoint: None,
            admin_endpoint: None,
            credentials: None,
            extra_roots: Vec::new(),
            pool_size: None,
            keep_alive: KeepAlive::default(),
            retry: RetryPolicy::default(),
            admin_retry: RetryPolicy::default(),
            #[cfg(feature = "opentelemetry")]
            meter_provider: None,
        }
    }

    /// Record Google's built-in client-side metrics
    /// ([`crate::telemetry::builtin`]) on `provider` rather than on the
    /// global meter provider as it is when the connection is made (feature
    /// `opentelemetry`).
    ///
    /// ```
    /// # #[cfg(feature = "opentelemetry")]
    /// # fn build(provider: std::sync::Arc<dyn opentelemetry::metrics::MeterProvider + Send + Sync>) {
    /// let builder = bigtable_ttl::Connection::builder("my-project", "my-instance")
    ///     .meter_provider(provider);
    /// # let _ = builder;
    /// # }
    /// ```
    #[cfg(feature = "opentelemetry")]
    #[cfg_attr(docsrs, doc(cfg(feature = "opentelemetry")))]
    pub fn meter_provider(
        mut self,
        provider: std::sync::Arc<dyn opentelemetry::metrics::MeterProvider + Send + Sync>,
    ) -> Self {
        self.meter_provider = Some(crate::wire::builtin_metrics::Provider(provider));
        self
    }

    /// Send every data request under the app profile `id`: in the request's
    /// `app_profile_id` field and in its `x-goog-request-params` routing
    /// header, as Google's clients do (Cloud Bigtable routes and prioritises
    /// by profile). Unset: the instance's default profile.
    pub fn app_profile(mut self, id: impl Into<String>) -> Self {
        self.app_profile = id.into();
        self
    }

    /// Use the emulator at `host` (`HOST:PORT`: `127.0.0.1:8086`,
    /// `[::1]:8086`, `bigtable:8086` in a docker-compose network) over
    /// plaintext, without credentials, whatever `BIGTABLE_EMULATOR_HOST` says.
    pub fn emulator(mut self, host: impl Into<String>) -> Self {
        self.emulator = Some(host.into());
        self
    }

    /// Send data calls to `uri` instead of `https://bigtable.googleapis.com`
    /// (a regional endpoint, Private Service Connect). `https://` is TLS;
    /// `http://` is plaintext and takes no credentials.
    pub fn data_endpoint(mut self, uri: impl Into<String>) -> Self {
        self.data_endpoint = Some(uri.into());
        self
    }

    /// Send admin calls (`ensure_schema`, `verify_schema`, the `ops`) to
    /// `uri` instead of `https://bigtableadmin.googleapis.com`.
    pub fn admin_endpoint(mut self, uri: impl Into<String>) -> Self {
        self.admin_endpoint = Some(uri.into());
        self
    }

    /// Where access tokens come from. Unset: application default
    /// credentials toward `https://` endpoints, none toward an emulator.
    pub fn credentials(mut self, credentials: Credentials) -> Self {
        self.credentials = Some(credentials);
        self
    }

    /// Trust the root certificate `pem` (PEM) besides the system's, for
    /// `https://` endpoints: a private CA in front of Private Service
    /// Connect, a test CA.
    pub fn tls_root_certificate(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.extra_roots.push(pem.into());
        self
    }

    /// Spread data calls over `connections` HTTP/2 connections, from 1 to
    /// [`ConnectionBuilder::MAX_POOL_SIZE`], taken in turn (each is opened
    /// at its first turn, so the first calls open them all; out of that range,
    /// [`Error::InvalidSetting`] from `connect`). Default: 4 toward Cloud
    /// Bigtable, 1 toward an emulator.
    pub fn pool_size(mut self, connections: usize) -> Self {
        self.pool_size = Some(connections);
        self
    }

    /// An HTTP/2 PING every `interval` on every connection, which is dropped
    /// (and made again on the next call) when a ping goes unanswered for
    /// `timeout`. Default: 30 s and 10 s. The interval is from
    /// [`ConnectionBuilder::MIN_KEEP_ALIVE_INTERVAL`] (10 s) to
    /// [`ConnectionBuilder::MAX_DURATION`] (24 h), the timeout from
    /// [`ConnectionBuilder::MIN_KEEP_ALIVE_TIMEOUT`] (1 s) to 24 h;
    /// [`Error::InvalidSetting`] from `connect` otherwise.
    pub fn keep_alive(mut self, interval: Duration, timeout: Duration) -> Self {
        self.keep_alive.interval = interval;
        self.keep_alive.timeout = timeout;
        self
    }

    /// Whether idle connections are pinged too (default: yes, so a dead
    /// connection is found before a call waits on it).
    pub fn keep_alive_while_idle(mut self, while_idle: bool) -> Self {
        self.keep_alive.while_idle = while_idle;
        self
    }

    /// The timeouts and retries of reads and writes of every
    /// [`crate::Table`] opened on the connection (per attempt:
    /// [`RetryPolicy::attempt_timeout`]; in all:
    /// [`RetryPolicy::deadline`]); a table's own
    /// [`crate::Table::with_read_options`] or
    /// [`crate::Table::with_write_options`] still overrides them. Also the
    /// policy of the reads and writes of [`crate::ops`] and of
    /// [`crate::data::RawTable`] handles (see [`crate::retry`] for which
    /// policy governs which call).
    ///
    /// At least one attempt; the attempt timeout and the deadline from 1 ms
    /// to [`ConnectionBuilder::MAX_DURATION`] (24 h), the delays at most
    /// that; [`Error::InvalidSetting`] from `connect` otherwise. The same
    /// for [`ConnectionBuilder::admin_retry`].
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = policy;
        self
    }

    /// The timeouts and retries of admin calls
    /// ([`Connection::with_admin_retry`](crate::Connection::with_admin_retry)).
    pub fn admin_retry(mut self, policy: RetryPolicy) -> Self {
        self.admin_retry = policy;
        self
    }

    /// The most connections a pool may have
    /// ([`ConnectionBuilder::pool_size`]): what Google's Java client lets
    /// its channel pool grow to by default. Each connection carries about
    /// a hundred concurrent calls, so this is room for some 20,000.
    pub const MAX_POOL_SIZE: usize = 200;

    /// The shortest keep-alive interval: gRPC's own floor (grpc-go and
    /// grpc-java raise a shorter one to it), since servers close
    /// connections that ping more often than they allow.
    pub const MIN_KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(10);

    /// The shortest keep-alive timeout: a shorter wait would drop healthy
    /// connections on a busy network.
    pub const MIN_KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(1);

    /// The longest keep-alive interval or timeout, and the longest attempt
    /// timeout, deadline or delay of a retry policy: longer ones are
    /// forever in practice, and past what the timers can add to an instant.
    pub const MAX_DURATION: Duration = Duration::from_secs(24 * 60 * 60);

    /// Every setting within its range.
    ///
    /// # Errors
    /// [`Error::InvalidSetting`] for the first that is not.
    fn check_settings(&self) -> Result<()> {
        if let Some(pool) = self.pool_size {
            if !(1..=Self::MAX_POOL_SIZE).contains(&pool) {
                return Err(Error::from(error::InvalidSetting {
                    setting: "pool_size",
                    value: pool.to_string(),
                    allowed: format!("from 1 to {} connections", Self::MAX_POOL_SIZE),
                }));
            }
        }
        check_duration(
            "keep_alive.interval",
            self.keep_alive.interval,
            Self::MIN_KEEP_ALIVE_INTERVAL,
        )?;
        check_duration(
            "keep_alive.timeout",
            self.keep_alive.timeout,
            Self::MIN_KEEP_ALIVE_TIMEOUT,
        )?;
        for (policy, [attempts, attempt_timeout, deadline, initial_delay, max_delay]) in [
            (
                &self.retry,
                [
                    "retry.max_attempts",
                    "retry.attempt_timeout",
                    "retry.deadline",
                    "retry.initial_delay",
                    "retry.max_delay",
                ],
            ),
            (
                &self.admin_retry,
                [
                    "admin_retry.max_attempts",
                    "admin_retry.attempt_timeout",
                    "admin_retry.deadline",
                    "admin_retry.initial_delay",
                    "admin_retry.max_delay",
                ],
            ),
        ] {
            if policy.max_attempts == 0 {
                return Err(Error::from(error::InvalidSetting {
                    setting: attempts,
                    value: "0".to_owned(),
                    allowed: "at least 1 (the first attempt)".to_owned(),
                }));
            }
            let millisecond = Duration::from_millis(1);
            check_duration(attempt_timeout, policy.attempt_timeout, millisecond)?;
            check_duration(deadline, policy.deadline, millisecond)?;
            check_duration(initial_delay, policy.initial_delay, Duration::ZERO)?;
            check_duration(max_delay, policy.max_delay, Duration::ZERO)?;
        }
        Ok(())
    }

    /// The parts of the connection [`ConnectionBuilder::connect`] makes.
    pub(crate) async fn into_parts(self) -> Result<Parts> {
        self.check_settings()?;
        let env = std::env::var("BIGTABLE_EMULATOR_HOST").ok();
        let target = self.target(env.as_deref())?;
        let plaintext = match &target {
            Target::Emulator(host) => Some(format!("http://{host}")),
            Target::Endpoints { data, admin } => [data, admin]
                .into_iter()
                .find(|uri| uri.starts_with("http://"))
                .cloned(),
        };
        let tokens = match (&self.credentials, plaintext) {
            (Some(credentials), Some(endpoint)) if !credentials.is_none() => {
                return Err(Error::from(error::PlaintextWithCredentials { endpoint }));
            }
            (_, Some(_)) => None,
            (Some(credentials), None) => credentials.resolve().await?,
            (None, None) => Credentials::application_default().resolve().await?,
        };
        self.assemble(&target, tokens)
    }

    /// The parts of an emulator connection: no credentials, nothing to wait
    /// for.
    pub(crate) fn emulator_parts(self, host: &str) -> Result<Parts> {
        self.check_settings()?;
        let target = Target::Emulator(host.to_owned());
        check_target(&target)?;
        self.assemble(&target, None)
    }

    /// Where the settings (and, when they name no endpoint,
    /// `BIGTABLE_EMULATOR_HOST`, given as `env`) send the connection.
    fn target(&self, env: Option<&str>) -> Result<Target> {
        let target = if let Some(host) = &self.emulator {
            Target::Emulator(host.clone())
        } else if self.data_endpoint.is_some() || self.admin_endpoint.is_some() {
            Target::Endpoints {
                data: self
                    .data_endpoint
                    .clone()
                    .unwrap_or_else(|| DATA_ENDPOINT.to_owned()),
                admin: self
                    .admin_endpoint
                    .clone()
                    .unwrap_or_else(|| ADMIN_ENDPOINT.to_owned()),
            }
        } else {
            match env {
                Some(host) if !host.is_empty() => Target::Emulator(host.to_owned()),
                _ => Target::Endpoints {
                    data: DATA_ENDPOINT.to_owned(),
                    admin: ADMIN_ENDPOINT.to_owned(),
                },
            }
        };
        check_target(&target)?;
        Ok(target)
    }

    fn assemble(self, target: &Target, tokens: Option<Tokens>) -> Result<Parts> {
        let description = match target {
            Target::Emulator(host) => format!("emulator at {host}"),
            Target::Endpoints { data, .. } if data == DATA_ENDPOINT => "Cloud Bigtable".to_owned(),
            Target::Endpoints { data, .. } => format!("Bigtable at {data}"),
        };
        let connect_error = |source: BoxError| {
            Error::from(error::Connect {
                target: description.clone(),
                source: Box::new(Cause::of(&*source)),
            })
        };
        in_tokio_runtime().map_err(|why| connect_error(why.into()))?;
        let (data, admin, default_pool) = match target {
            Target::Emulator(host) => (format!("http://{host}"), format!("http://{host}"), 1),
            Target::Endpoints { data, admin } => (
                data.clone(),
                admin.clone(),
                if data.starts_with("https://") {
                    CLOUD_CONNECTIONS
                } else {
                    1
                },
            ),
        };
        let channel = DataChannel::new(ChannelConfig {
            endpoint: data,
            extra_roots: self.extra_roots.clone(),
            pool_size: self.pool_size.unwrap_or(default_pool),
            keep_alive: self.keep_alive,
            tokens: tokens.clone(),
            app_profile: self.app_profile,
            emulator: matches!(target, Target::Emulator(_)),
        })
        .map_err(connect_error)?;
        let admin_target = AdminTarget::new(&admin, matches!(target, Target::Emulator(_)));
        #[cfg(feature = "opentelemetry")]
        let channel = channel.with_meter_provider(self.meter_provider.as_ref());
        let admin_channel = endpoint(&admin, &self.extra_roots, self.keep_alive)
            .map_err(connect_error)?
            .connect_lazy();
        Ok(Parts {
            channel,
            admin: admin_channel,
            admin_target,
            tokens,
            project: self.project,
            instance: self.instance,
            target: description,
            retry: self.retry,
            admin_retry: self.admin_retry,
        })
    }
}

/// `value` of `setting` within `min..=`[`ConnectionBuilder::MAX_DURATION`].
///
/// # Errors
/// [`Error::InvalidSetting`] saying the range.
fn check_duration(setting: &'static str, value: Duration, min: Duration) -> Result<()> {
    let max = ConnectionBuilder::MAX_DURATION;
    if (min..=max).contains(&value) {
        return Ok(());
    }
    let human = humantime::format_duration;
    Err(Error::from(error::InvalidSetting {
        setting,
        value: human(value).to_string(),
        allowed: format!("from {} to {}", human(min), human(max)),
    }))
}

/// A typed error saying what is wrong with the host or endpoints of
/// `target`, before anything is built on them.
fn check_target(target: &Target) -> Result<()> {
    match target {
        Target::Emulator(host) => check_emulator_host(host).map_err(|why| {
            Error::from(error::Connect {
                target: format!("emulator at {host:?}"),
                source: Box::new(why),
            })
        }),
        Target::Endpoints { data, admin } => {
            for uri in [data, admin] {
                check_endpoint(uri).map_err(|why| {
                    Error::from(error::Connect {
                        target: format!("endpoint {uri:?}"),
                        source: Box::new(why),
                    })
                })?;
            }
            Ok(())
        }
    }
}

/// Why `uri` is not `https://HOST[:PORT]` or `http://HOST:PORT`, in words.
fn check_endpoint(uri: &str) -> std::result::Result<(), BadAddress> {
    const EXPECTED: &str =
        "expected https://HOST[:PORT] (TLS) or http://HOST:PORT (plaintext, an emulator)";
    let Some(rest) = uri
        .strip_prefix("https://")
        .or_else(|| uri.strip_prefix("http://"))
    else {
        return Err(bad("no https:// or http:// scheme", EXPECTED));
    };
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    if authority.is_empty() || authority.contains('/') {
        return Err(bad(format!("{authority:?} is not HOST[:PORT]"), EXPECTED));
    }
    uri.parse::<http::Uri>()
        .map_err(|e| bad(e.to_string(), EXPECTED))?;
    Ok(())
}

/// Why `host` is not `HOST:PORT`, in words.
pub(crate) fn check_emulator_host(host: &str) -> std::result::Result<(), BadAddress> {
    const EXPECTED: &str = "expected HOST:PORT, as in 127.0.0.1:8086 or [::1]:8086";
    if host.trim().is_empty() {
        return Err(bad("the emulator host is empty", EXPECTED));
    }
    if host.contains("://") {
        return Err(bad("write the host without a scheme", EXPECTED));
    }
    if host.chars().any(char::is_whitespace) {
        return Err(bad("the host contains white space", EXPECTED));
    }
    let Some((name, port)) = host.rsplit_once(':') else {
        return Err(bad("no port", EXPECTED));
    };
    match port.parse::<u16>() {
        Ok(p) if p > 0 => {}
        _ => {
            return Err(bad(
                format!("port {port:?} is not a number from 1 to 65535"),
                EXPECTED,
            ))
        }
    }
    let bracketed = name.starts_with('[') && name.ends_with(']') && name.len() > 2;
    if name.is_empty() || (name.contains(':') && !bracketed) {
        return Err(bad(
            format!("{name:?} is not a host name or address (an IPv6 address goes in brackets)"),
            EXPECTED,
        ));
    }
    Ok(())
}

/// A [`BadAddress`]: `problem`, with the form `expected`.
fn bad(problem: impl Into<String>, expected: &'static str) -> BadAddress {
    BadAddress {
        problem: problem.into(),
        expected,
    }
}

/// The channels spawn their connection tasks on the current Tokio runtime.
fn in_tokio_runtime() -> std::result::Result<(), &'static str> {
    tokio::runtime::Handle::try_current()
        .map(|_| ())
        .map_err(|_| "a Connection must be made within a Tokio runtime")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn builder() -> ConnectionBuilder {
        ConnectionBuilder::new("p", "i")
    }

    /// What the credential search answers where there are none (no key
    /// file, no gcloud login, no metadata server, no gcloud), made here:
    /// the real search would ask metadata.google.internal, off this
    /// machine. The message says where credentials were looked for and
    /// what to do, `BIGTABLE_EMULATOR_HOST` among it; the search's own
    /// reason stays the cause, once.
    #[test]
    fn no_credentials_says_where_it_looked_and_what_to_do() {
        let none = gcp_auth::Error::NoAuthMethod(
            Box::new(gcp_auth::Error::Str("gcloud not found")),
            Box::new(gcp_auth::Error::Str("no metadata server")),
            Box::new(gcp_auth::Error::Str(
                "no application default credentials file",
            )),
        );
        let err = no_default_credentials(&none);
        let message = err.to_string();
        for says in [
            "no Google Cloud credentials found",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "~/.config/gcloud/application_default_credentials.json",
            "metadata server",
            "gcloud auth application-default login",
            "BIGTABLE_EMULATOR_HOST=HOST:PORT",
        ] {
            assert!(message.contains(says), "{says:?} missing: {message}");
        }
        let cause = std::error::Error::source(&err).unwrap().to_string();
        assert_eq!(cause, "no available authentication method found");
        // Another failure of the search (a key file that does not parse)
        // is told as it is.
        let broken = gcp_auth::Error::Str("invalid key file");
        let err = no_default_credentials(&broken);
        assert!(
            err.to_string().contains("application default credentials")
                && !err.to_string().contains("BIGTABLE_EMULATOR_HOST"),
            "{err}"
        );
    }

    #[test]
    fn the_emulator_host_comes_from_the_environment_unless_an_endpoint_is_named() {
        // A host name, as in a docker-compose network: parsed, never dialled.
        assert_eq!(
            builder().target(Some("bigtable:8086")).unwrap(),
            Target::Emulator("bigtable:8086".into())
        );
        assert_eq!(
            builder().target(Some("")).unwrap(),
            Target::Endpoints {
                data: DATA_ENDPOINT.into(),
                admin: ADMIN_ENDPOINT.into()
            }
        );
        assert_eq!(
            builder()
                .data_endpoint("https://us-east1-bigtable.googleapis.com")
                .target(Some("bigtable:8086"))
                .unwrap(),
            Target::Endpoints {
                data: "https://us-east1-bigtable.googleapis.com".into(),
                admin: ADMIN_ENDPOINT.into()
            }
        );
        assert_eq!(
            builder()
                .emulator("[::1]:9000")
                .target(Some("bigtable:8086"))
                .unwrap(),
            Target::Emulator("[::1]:9000".into())
        );
        let bad = builder().target(Some("bigtable")).unwrap_err().to_string();
        assert!(bad.contains("emulator at \"bigtable\""), "{bad}");
    }

    #[test]
    fn endpoints_must_have_a_scheme_and_no_path() {
        for good in [
            "https://bigtable.googleapis.com",
            "https://localhost:8443/",
            "http://bigtable:8086",
        ] {
            assert!(check_endpoint(good).is_ok(), "{good}");
        }
        for bad in [
            "bigtable.googleapis.com",
            "grpc://x:1",
            "https://",
            "https://x/v2",
        ] {
            let why = check_endpoint(bad).unwrap_err();
            assert!(
                why.expected.contains("expected https://HOST"),
                "{bad}: {why}"
            );
        }
    }
}
