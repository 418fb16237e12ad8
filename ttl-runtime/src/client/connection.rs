//! Connecting to Bigtable: the data calls the library makes (`MutateRow`,
//! `MutateRows`, `ReadRows`) on a channel of our own (the `wire` layer),
//! tables and GC rules through the generated admin client.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use googleapis_tonic_google_bigtable_admin_v2::google::bigtable::admin::v2::bigtable_table_admin_client::BigtableTableAdminClient;
use tonic::transport::Channel;

use crate::client::builder::{AdminTarget, Parts, ADMIN_ENDPOINT};
pub use crate::client::builder::{ConnectionBuilder, Credentials};
use crate::client::layouts::{Layouts, Registration};
use crate::client::retry::RetryPolicy;
use crate::model::error::{self, Error, Result};
use crate::model::schema::Schema;
use crate::wire::cause::{no_answer, Unreachable};
use crate::wire::channel::{DataChannel, DATA_ENDPOINT};
use crate::wire::status::cause_under_code;
use crate::wire::tokens::Tokens;

/// The generated admin client, on a plain tonic channel.
pub(crate) type AdminClient = BigtableTableAdminClient<Channel>;

const ADMIN_SCOPE: &str = "https://www.googleapis.com/auth/bigtable.admin.table";

/// A connection to one Bigtable instance, shared by every [`crate::Table`]
/// opened on it. Cheap to clone.
///
/// ```no_run
/// # async fn run() -> bigtable_ttl::Result<()> {
/// // BIGTABLE_EMULATOR_HOST set: the emulator; otherwise Cloud Bigtable with
/// // application default credentials.
/// let conn = bigtable_ttl::Connection::connect("my-project", "my-instance").await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Connection {
    // One pointer: every call's handle clones the connection, and the
    // admin client alone is several reference counts.
    shared: Arc<Shared>,
}

#[derive(Clone)]
struct Shared {
    /// Every data call the library makes (see [`crate::wire::channel`]).
    channel: DataChannel,
    admin: AdminClient,
    admin_target: AdminTarget,
    /// Timeouts and retries of every admin call.
    admin_retry: RetryPolicy,
    /// Timeouts and retries tables start with for reads and writes.
    retry: RetryPolicy,
    tokens: Option<Tokens>,
    project: Arc<str>,
    instance: Arc<str>,
    target: Arc<str>,
    /// The structs tables were opened for, to refuse two that would write
    /// the same cells (see [`crate::client::layouts`]).
    layouts: Arc<Layouts>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("project", &self.shared.project)
            .field("instance", &self.shared.instance)
            .field("target", &self.shared.target)
            .finish_non_exhaustive()
    }
}

impl Connection {
    /// Connect to `projects/{project}/instances/{instance}`: the emulator at
    /// `BIGTABLE_EMULATOR_HOST` when set, as every Google client does, else
    /// Cloud Bigtable with application default credentials. The same as
    /// `Connection::builder(project, instance).connect()`; the builder has
    /// every other setting.
    ///
    /// # Errors
    /// [`Error::Connect`] when credentials cannot be found or the endpoint is invalid.
    pub async fn connect(project: &str, instance: &str) -> Result<Self> {
        Self::builder(project, instance).connect().await
    }

    /// The settings of a connection to `projects/{project}/instances/{instance}`
    /// (app profile, endpoints, credentials, pool, keep-alive, timeouts),
    /// made by [`ConnectionBuilder::connect`].
    ///
    /// ```no_run
    /// # async fn run() -> bigtable_ttl::Result<()> {
    /// let conn = bigtable_ttl::Connection::builder("my-project", "my-instance")
    ///     .app_profile("serving")
    ///     .pool_size(8)
    ///     .connect()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn builder(project: &str, instance: &str) -> ConnectionBuilder {
        ConnectionBuilder::new(project, instance)
    }

    /// Connect to an emulator at `host` (`HOST:PORT`, as
    /// `BIGTABLE_EMULATOR_HOST` holds it: `127.0.0.1:8086`, `[::1]:8086`,
    /// `bigtable:8086`), without credentials. Nothing is sent until the
    /// first call. Must be called within a Tokio runtime.
    ///
    /// # Errors
    /// [`Error::Connect`] saying what is wrong when `host` is not
    /// `HOST:PORT`, or when called outside a Tokio runtime.
    pub fn emulator(host: &str, project: &str, instance: &str) -> Result<Self> {
        Ok(Self::from_parts(
            Self::builder(project, instance).emulator_parts(host)?,
        ))
    }

    /// Connect to Cloud Bigtable with application default credentials,
    /// whatever `BIGTABLE_EMULATOR_HOST` says.
    ///
    /// # Errors
    /// [`Error::Connect`] when no credentials are found.
    pub async fn cloud(project: &str, instance: &str) -> Result<Self> {
        Self::builder(project, instance)
            .data_endpoint(DATA_ENDPOINT)
            .admin_endpoint(ADMIN_ENDPOINT)
            .connect()
            .await
    }

    fn from_parts(parts: Parts) -> Self {
        let shared = Shared {
            channel: parts.channel,
            admin: AdminClient::new(parts.admin),
            admin_target: parts.admin_target,
            admin_retry: parts.admin_retry,
            retry: parts.retry,
            tokens: parts.tokens,
            project: parts.project.into(),
            instance: parts.instance.into(),
            target: parts.target.into(),
            layouts: Arc::default(),
        };
        Self {
            shared: Arc::new(shared),
        }
    }

    /// The timeouts and retries tables opened on this connection start with
    /// for reads and writes ([`ConnectionBuilder::retry`]).
    #[must_use]
    pub fn retry(&self) -> RetryPolicy {
        self.shared.retry
    }

    /// The app profile data requests are sent under (empty: the instance's
    /// default).
    #[must_use]
    pub fn app_profile(&self) -> &str {
        self.shared.channel.app_profile()
    }

    /// The project id.
    #[must_use]
    pub fn project(&self) -> &str {
        &self.shared.project
    }

    /// The instance id.
    #[must_use]
    pub fn instance(&self) -> &str {
        &self.shared.instance
    }

    /// `projects/{project}/instances/{instance}`.
    #[must_use]
    pub fn instance_path(&self) -> String {
        format!(
            "projects/{}/instances/{}",
            self.shared.project, self.shared.instance
        )
    }

    /// `projects/{project}/instances/{instance}/tables/{table}`.
    #[must_use]
    pub fn table_path(&self, table: &str) -> String {
        // Built on every single-row call: pieces pushed into one allocation
        // of the right size, not two `format!`s.
        let parts = [
            "projects/",
            self.shared.project.as_ref(),
            "/instances/",
            self.shared.instance.as_ref(),
            "/tables/",
            table,
        ];
        let mut path = String::with_capacity(parts.iter().map(|p| p.len()).sum());
        for part in parts {
            path.push_str(part);
        }
        path
    }

    /// Remember that struct `type_name` of `schema` is read and written on
    /// `table` through this connection (see [`crate::client::layouts`]).
    pub(crate) fn register(
        &self,
        table: &str,
        type_name: &'static str,
        schema: &'static Schema,
    ) -> Arc<Registration> {
        self.shared.layouts.register(table, type_name, schema)
    }

    /// Whether a struct with a live handle on `table` through this
    /// connection writes the row marker named `name` in `family`.
    pub(crate) fn knows_marker(&self, table: &str, family: &str, name: &[u8]) -> bool {
        self.shared.layouts.knows_marker(table, family, name)
    }

    /// Whether the reader of `table` with marker `own` meets the marker
    /// named `other` for the first time on this connection.
    pub(crate) fn first_warning(&self, table: &str, own: &'static [u8], other: &[u8]) -> bool {
        self.shared.layouts.first_warning(table, own, other)
    }

    pub(crate) fn data_channel(&self) -> &DataChannel {
        &self.shared.channel
    }

    pub(crate) fn admin_client(&self) -> AdminClient {
        self.shared.admin.clone()
    }

    /// The same connection with these timeouts and retries for admin calls
    /// (`ensure_schema`, `verify_schema`, `live_rules`, the `ops`): each
    /// attempt within [`RetryPolicy::attempt_timeout`], all of one call within
    /// [`RetryPolicy::deadline`]. The default is [`RetryPolicy::default`].
    #[must_use]
    pub fn with_admin_retry(mut self, policy: RetryPolicy) -> Self {
        Arc::make_mut(&mut self.shared).admin_retry = policy;
        self
    }

    /// The timeouts and retries of admin calls.
    #[must_use]
    pub fn admin_retry(&self) -> RetryPolicy {
        self.shared.admin_retry
    }

    /// An admin call's failed `status`, the admin address kept in its
    /// chain when no connection was made ([`Unreachable`]), so that its
    /// error names it and a first refusal by an emulator is not retried.
    pub(crate) fn admin_failure(&self, status: tonic::Status) -> tonic::Status {
        if no_answer(&status).is_none() {
            return status;
        }
        let target = &self.shared.admin_target;
        let mut failure = tonic::Status::new(status.code(), status.message());
        failure.set_source(Arc::new(Unreachable {
            address: target.address.to_string(),
            first: target.emulator && !target.reached.load(Ordering::Relaxed),
            source: Box::new(cause_under_code(status)),
        }));
        failure
    }

    /// An admin call was answered: the admin address is reached.
    pub(crate) fn admin_answered(&self) {
        self.shared
            .admin_target
            .reached
            .store(true, Ordering::Relaxed);
    }

    /// Wrap an admin request, with a bearer token on Cloud Bigtable.
    pub(crate) async fn admin_request<T>(&self, message: T) -> Result<tonic::Request<T>> {
        let mut request = tonic::Request::new(message);
        if let Some(tokens) = &self.shared.tokens {
            let token = tokens.secret(ADMIN_SCOPE).await.map_err(|source| {
                Error::from(error::Connect {
                    target: self.shared.target.to_string(),
                    source,
                })
            })?;
            let value = format!("Bearer {token}").parse().map_err(|e| {
                Error::from(error::Connect {
                    target: self.shared.target.to_string(),
                    source: format!("the access token is not a valid header: {e}").into(),
                })
            })?;
            request.metadata_mut().insert("authorization", value);
        }
        Ok(request)
    }
}

impl ConnectionBuilder {
    /// Make the connection. Nothing is sent until the first call; must be
    /// called within a Tokio runtime.
    ///
    /// # Errors
    /// [`Error::PlaintextWithCredentials`] when credentials were given for
    /// an `http://` endpoint or an emulator; [`Error::Connect`] when an
    /// endpoint or emulator host is invalid, credentials cannot be found or
    /// read, or it is called outside a Tokio runtime.
    pub async fn connect(self) -> Result<Connection> {
        Ok(Connection::from_parts(self.into_parts().await?))
    }
}
