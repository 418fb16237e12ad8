//! Connecting to Bigtable: the data calls the library makes (`MutateRow`,
//! `MutateRows`, `ReadRows`) on a channel of our own (the `wire` layer),
//! tables and GC rules through the generated admin client, and a generated
//! data client over the same channel for the calls the library does not make
//! ([`Connection::data_client`]).

use std::sync::Arc;

use googleapis_tonic_google_bigtable_admin_v2::google::bigtable::admin::v2::bigtable_table_admin_client::BigtableTableAdminClient;
use tonic::transport::{Channel, ClientTlsConfig, Endpoint};

use crate::client::retry::RetryPolicy;
use crate::model::error::{BoxError, Error, Result};
use crate::proto::bigtable_client::BigtableClient;
use crate::wire::channel::DataChannel;
pub use crate::wire::service::DataService;

/// The generated Bigtable data client over the library's own channel
/// ([`Connection::data_client`]).
pub type DataClient = BigtableClient<DataService>;

/// The generated admin client, on a plain tonic channel.
pub(crate) type AdminClient = BigtableTableAdminClient<Channel>;

const ADMIN_ENDPOINT: &str = "https://bigtableadmin.googleapis.com";
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
    /// Every data call the library makes (see [`crate::wire::channel`]).
    channel: DataChannel,
    admin: AdminClient,
    /// Timeouts and retries of every admin call.
    admin_retry: RetryPolicy,
    tokens: Option<Arc<dyn gcp_auth::TokenProvider>>,
    project: String,
    instance: String,
    target: String,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("project", &self.project)
            .field("instance", &self.instance)
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

impl Connection {
    /// Connect to `projects/{project}/instances/{instance}`: the emulator at
    /// `BIGTABLE_EMULATOR_HOST` when set, as every Google client does, else
    /// Cloud Bigtable with application default credentials.
    ///
    /// # Errors
    /// [`Error::Connect`] when credentials cannot be found or the endpoint is invalid.
    pub async fn connect(project: &str, instance: &str) -> Result<Self> {
        match std::env::var("BIGTABLE_EMULATOR_HOST") {
            Ok(host) if !host.is_empty() => Self::emulator(&host, project, instance),
            _ => Self::cloud(project, instance).await,
        }
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
        let connect_error = |source: BoxError| Error::Connect {
            target: format!("emulator at {host:?}"),
            source,
        };
        check_emulator_host(host).map_err(|why| connect_error(why.into()))?;
        in_tokio_runtime().map_err(|why| connect_error(why.into()))?;
        let data_channel = DataChannel::emulator(host).map_err(connect_error)?;
        let channel = with_keep_alive(
            Endpoint::from_shared(format!("http://{host}")).map_err(|e| connect_error(e.into()))?,
        )
        .connect_lazy();
        Ok(Self {
            channel: data_channel,
            admin: BigtableTableAdminClient::new(channel),
            admin_retry: RetryPolicy::default(),
            tokens: None,
            project: project.to_owned(),
            instance: instance.to_owned(),
            target: format!("emulator at {host}"),
        })
    }

    /// Connect to Cloud Bigtable with application default credentials.
    ///
    /// # Errors
    /// [`Error::Connect`] when no credentials are found.
    pub async fn cloud(project: &str, instance: &str) -> Result<Self> {
        let connect_error = |source: BoxError| Error::Connect {
            target: "Cloud Bigtable".to_owned(),
            source,
        };
        let tokens = gcp_auth::provider()
            .await
            .map_err(|e| connect_error(e.into()))?;
        let data_channel = DataChannel::cloud(tokens.clone()).map_err(connect_error)?;
        let channel = with_keep_alive(
            Endpoint::from_static(ADMIN_ENDPOINT)
                .tls_config(ClientTlsConfig::new().with_native_roots())
                .map_err(|e| connect_error(e.into()))?,
        )
        .connect_lazy();
        Ok(Self {
            channel: data_channel,
            admin: BigtableTableAdminClient::new(channel),
            admin_retry: RetryPolicy::default(),
            tokens: Some(tokens),
            project: project.to_owned(),
            instance: instance.to_owned(),
            target: "Cloud Bigtable".to_owned(),
        })
    }

    /// The project id.
    #[must_use]
    pub fn project(&self) -> &str {
        &self.project
    }

    /// The instance id.
    #[must_use]
    pub fn instance(&self) -> &str {
        &self.instance
    }

    /// `projects/{project}/instances/{instance}`.
    #[must_use]
    pub fn instance_path(&self) -> String {
        format!("projects/{}/instances/{}", self.project, self.instance)
    }

    /// `projects/{project}/instances/{instance}/tables/{table}`.
    #[must_use]
    pub fn table_path(&self, table: &str) -> String {
        format!("{}/tables/{table}", self.instance_path())
    }

    /// A generated Bigtable data client for requests on `table` that this
    /// library does not make, over the library's own channel: each request
    /// carries the table's routing header and, on Cloud Bigtable, a bearer
    /// token. Nothing it sends gets this library's guarantees (explicit
    /// timestamps, filtered reads): it is the escape hatch.
    ///
    /// ```no_run
    /// # async fn run(conn: bigtable_ttl::Connection) -> Result<(), Box<dyn std::error::Error>> {
    /// use bigtable_ttl::proto::SampleRowKeysRequest;
    ///
    /// let mut client = conn.data_client("clicks")?;
    /// let request = SampleRowKeysRequest {
    ///     table_name: conn.table_path("clicks"),
    ///     ..SampleRowKeysRequest::default()
    /// };
    /// let mut samples = client.sample_row_keys(request).await?.into_inner();
    /// while let Some(sample) = samples.message().await? {
    ///     println!("{:?} at {}", sample.row_key, sample.offset_bytes);
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::Connect`] when `table` makes no valid routing header.
    pub fn data_client(&self, table: &str) -> Result<DataClient> {
        let service = self
            .channel
            .service(&self.table_path(table))
            .map_err(|source| Error::Connect {
                target: self.target.clone(),
                source,
            })?;
        Ok(BigtableClient::new(service))
    }

    pub(crate) fn data_channel(&self) -> DataChannel {
        self.channel.clone()
    }

    pub(crate) fn admin_client(&self) -> AdminClient {
        self.admin.clone()
    }

    /// The same connection with these timeouts and retries for admin calls
    /// (`ensure_schema`, `verify_schema`, `live_rules`, the `ops`): each
    /// attempt within [`RetryPolicy::attempt_timeout`], all of one call within
    /// [`RetryPolicy::deadline`]. The default is [`RetryPolicy::default`].
    #[must_use]
    pub fn with_admin_retry(mut self, policy: RetryPolicy) -> Self {
        self.admin_retry = policy;
        self
    }

    /// The timeouts and retries of admin calls.
    #[must_use]
    pub fn admin_retry(&self) -> RetryPolicy {
        self.admin_retry
    }

    /// Wrap an admin request, with a bearer token on Cloud Bigtable.
    pub(crate) async fn admin_request<T>(&self, message: T) -> Result<tonic::Request<T>> {
        let mut request = tonic::Request::new(message);
        if let Some(tokens) = &self.tokens {
            let token = tokens
                .token(&[ADMIN_SCOPE])
                .await
                .map_err(|e| Error::Connect {
                    target: self.target.clone(),
                    source: e.into(),
                })?;
            let value =
                format!("Bearer {}", token.as_str())
                    .parse()
                    .map_err(|e| Error::Connect {
                        target: self.target.clone(),
                        source: format!("the access token is not a valid header: {e}").into(),
                    })?;
            request.metadata_mut().insert("authorization", value);
        }
        Ok(request)
    }
}

/// Why `host` is not `HOST:PORT`, in words.
fn check_emulator_host(host: &str) -> std::result::Result<(), String> {
    const EXPECTED: &str = "expected HOST:PORT, as in 127.0.0.1:8086 or [::1]:8086";
    if host.trim().is_empty() {
        return Err(format!("the emulator host is empty; {EXPECTED}"));
    }
    if host.contains("://") {
        return Err(format!("write the host without a scheme; {EXPECTED}"));
    }
    if host.chars().any(char::is_whitespace) {
        return Err(format!("the host contains white space; {EXPECTED}"));
    }
    let Some((name, port)) = host.rsplit_once(':') else {
        return Err(format!("no port; {EXPECTED}"));
    };
    match port.parse::<u16>() {
        Ok(p) if p > 0 => {}
        _ => {
            return Err(format!(
                "port {port:?} is not a number from 1 to 65535; {EXPECTED}"
            ))
        }
    }
    let bracketed = name.starts_with('[') && name.ends_with(']') && name.len() > 2;
    if name.is_empty() || (name.contains(':') && !bracketed) {
        return Err(format!(
            "{name:?} is not a host name or address (an IPv6 address goes in brackets); {EXPECTED}"
        ));
    }
    Ok(())
}

/// The channels spawn their connection tasks on the current Tokio runtime.
fn in_tokio_runtime() -> std::result::Result<(), &'static str> {
    tokio::runtime::Handle::try_current()
        .map(|_| ())
        .map_err(|_| "Connection::emulator must be called within a Tokio runtime")
}

/// HTTP/2 keep-alive on the admin channel, as on the data channel: a
/// connection that stops answering pings is dropped within a minute.
fn with_keep_alive(endpoint: Endpoint) -> Endpoint {
    endpoint
        .http2_keep_alive_interval(std::time::Duration::from_secs(30))
        .keep_alive_timeout(std::time::Duration::from_secs(10))
        .keep_alive_while_idle(true)
}
