//! GoogleSQL for Bigtable: queries over an instance's tables, prepared
//! (`PrepareQuery`) and run (`ExecuteQuery`), their rows as typed values.
//!
//! A query is prepared once with the types of its parameters
//! ([`Sql::prepare`]), then run as often as needed with values bound to
//! them ([`PreparedQuery::bind`], [`Sql::execute`]); [`Sql::query`] does
//! both in one call. Like every read of the raw layer, a query sees every
//! cell Bigtable holds: expired cells that garbage collection has not yet
//! removed included (see the raw data layer guide).
//!
//! What happens when something fails:
//!
//! * `PrepareQuery` is retried on the codes Google's Java client retries
//!   for queries (`UNAVAILABLE`, `DEADLINE_EXCEEDED`, `ABORTED`), transport
//!   failures and any status with `RetryInfo`; not on `RESOURCE_EXHAUSTED`
//!   alone, which [`RawTable::read_rows`] retries.
//! * `ExecuteQuery` is retried on the same, resumed from the last resume
//!   token: rows come once each, none lost. What the server sent after
//!   that token is dropped (it sends it again).
//! * A plan Bigtable says expired (`FAILED_PRECONDITION`,
//!   `PREPARED_QUERY_EXPIRED`), or past the time it said it holds, is
//!   prepared again and the query re-run, if no row has come yet; after
//!   the first resume token that is an [`Error::QueryResponse`] (the new
//!   plan's rows could differ from those handed out). A failed re-prepare
//!   counts as a failed attempt and is retried.
//! * An answer that cannot be read (no column, a checksum that does not
//!   match, a batch past 256 MiB that no checksum closes, a value of the
//!   wrong type or outside GoogleSQL's ranges, an incomplete row) is an
//!   [`Error::QueryResponse`], never retried; no row of the batch at fault
//!   is handed out.
//! * The read options' retry policy governs: its attempts and its
//!   deadline, which bounds the whole query (preparing included, for
//!   [`Sql::query`]); its idle timeout bounds the wait for each message.
//!
//! [`RawTable::read_rows`]: crate::data::RawTable::read_rows
//! [`Error::QueryResponse`]: crate::Error::QueryResponse

mod execute;
mod prepare;

use std::collections::{HashMap, VecDeque};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use futures_util::stream::BoxStream;
use futures_util::{Stream, StreamExt as _};

use crate::client::connection::Connection;
use crate::client::read::ReadOptions;
use crate::model::error::{self, Error, Result};
use crate::model::sql_batch::BatchMerger;
use crate::wire::channel::DataChannel;
use crate::wire::cookies::RoutingCookies;

pub use crate::model::sql_row::{SqlColumn, SqlRow};
pub use crate::model::sql_type::{SqlType, StructField};
pub use crate::model::sql_value::{FromSql, SqlValue};

use execute::Execution;
use prepare::{prepare_attempt, Plan, QueryText, SharedPlan};

use crate::model::error::Code;
use crate::wire::builtin_metrics::Method;
use crate::wire::status::code_of;

/// The `status` of a query's RPC (of the built-in metrics) that `error`
/// ended: its gRPC code; `CANCELLED` for an error of the library's own
/// (a row limit passed), which abandons the stream.
pub(crate) fn ended_code(error: &Error) -> Code {
    error.code().unwrap_or(Code::Cancelled)
}

/// A handle for GoogleSQL queries on a connection's instance. Cheap to
/// clone.
///
/// ```no_run
/// # async fn run(conn: bigtable_ttl::Connection) -> bigtable_ttl::Result<()> {
/// use bigtable_ttl::data::{Query, Sql, SqlType};
///
/// let sql = Sql::new(&conn);
/// let result = sql
///     .query(
///         Query::new("SELECT _key, e['kind'] AS kind FROM events WHERE _key >= @from LIMIT 10")
///             .param("from", "e#0001"),
///     )
///     .collect()
///     .await?;
/// for row in &result.rows {
///     let key: Vec<u8> = row.get("_key")?;
///     let kind: Option<Vec<u8>> = row.get("kind")?;
///     println!("{}: {:?}", key.escape_ascii(), kind);
/// }
/// // Prepared once, run with different values:
/// let by_key = sql
///     .prepare("SELECT * FROM events WHERE _key = @key", [("key", SqlType::String)])
///     .await?;
/// let rows = sql.execute(by_key.bind().set("key", "e#0002")?).collect().await?;
/// # let _ = rows;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Sql {
    channel: DataChannel,
    instance: Arc<str>,
    read: ReadOptions,
}

impl std::fmt::Debug for Sql {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sql")
            .field("instance", &self.instance)
            .field("read", &self.read)
            .finish_non_exhaustive()
    }
}

impl Sql {
    /// Queries on `conn`'s instance, under the connection's retries.
    #[must_use]
    pub fn new(conn: &Connection) -> Self {
        Self {
            channel: conn.data_channel().clone(),
            instance: conn.instance_path().into(),
            read: ReadOptions::default().with_retry(conn.retry()),
        }
    }

    /// The same handle with these timeouts and retries.
    #[must_use]
    pub fn with_read_options(mut self, options: ReadOptions) -> Self {
        self.read = options;
        self
    }

    /// `projects/{project}/instances/{instance}`.
    #[must_use]
    pub fn instance(&self) -> &str {
        &self.instance
    }

    /// `sql` prepared by Bigtable, its parameters (`@name` in the text)
    /// of the types `params` gives.
    ///
    /// # Errors
    /// [`Error::QueryParam`] for a parameter of a type a query cannot take
    /// (a `STRUCT`, a `MAP`), before anything is sent; [`Error::Server`]
    /// (a query Bigtable refuses: `INVALID_ARGUMENT`);
    /// [`Error::QueryResponse`] for a plan this library cannot read.
    pub async fn prepare<N: Into<String>>(
        &self,
        sql: &str,
        params: impl IntoIterator<Item = (N, SqlType)>,
    ) -> Result<PreparedQuery> {
        let param_types: HashMap<String, SqlType> =
            params.into_iter().map(|(n, t)| (n.into(), t)).collect();
        if let Some((name, problem)) = param_types
            .iter()
            .find_map(|(name, ty)| Some((name, ty.param_problem()?)))
        {
            return Err(Error::from(error::QueryParam {
                name: name.clone(),
                problem,
            }));
        }
        let text = Arc::new(QueryText {
            instance: self.instance.clone(),
            sql: sql.to_owned(),
            param_types,
        });
        let mut budget = self.read.retry.start();
        let mut rpc = self.channel.rpc(&self.instance, Method::PrepareQuery);
        loop {
            if budget.expired() {
                let status = crate::wire::status::not_sent(
                    "no time left for PrepareQuery before the deadline",
                );
                rpc.ended(code_of(&status));
                return Err(crate::client::failure::status_error(
                    &self.instance,
                    None,
                    status,
                    Some(&budget),
                ));
            }
            match prepare_attempt(&mut rpc, &self.channel, &text, budget.attempt_timeout()).await {
                Ok(plan) => {
                    let plan = plan.inspect_err(|e| rpc.ended(ended_code(e)))?;
                    rpc.ended(Code::Ok);
                    return Ok(PreparedQuery {
                        text,
                        plan: Arc::new(SharedPlan::of(plan)),
                    });
                }
                Err(status) => {
                    if !(execute::query_retryable(&status) && budget.wait_after(&status).await) {
                        rpc.ended(code_of(&status));
                        return Err(crate::client::failure::status_error(
                            &self.instance,
                            None,
                            status,
                            Some(&budget),
                        ));
                    }
                }
            }
        }
    }

    /// The rows of `bound`, as a stream, sent on first poll.
    #[must_use]
    pub fn execute(&self, bound: BoundQuery) -> QueryRows {
        let plan = bound.query.plan.get();
        let missing = bound
            .query
            .text
            .param_types
            .keys()
            .find(|name| !bound.values.contains_key(*name))
            .cloned();
        let refused = missing.map(|name| {
            Error::from(error::QueryParam {
            name,
            problem:
                "the query declares it and it was given no value; set it (SqlValue::Null for NULL)"
                    .to_owned(),
        })
        });
        self.run(
            bound.query.text,
            bound.query.plan,
            plan,
            bound.values,
            bound.max_rows,
            refused,
        )
    }

    /// `query` prepared and run, as a stream of rows, within one deadline.
    #[must_use]
    pub fn query(&self, query: Query) -> QueryRows {
        let text = Arc::new(QueryText {
            instance: self.instance.clone(),
            sql: query.sql,
            param_types: query
                .params
                .iter()
                .map(|(name, (ty, _))| (name.clone(), ty.clone()))
                .collect(),
        });
        let values = query.params.into_iter().map(|(n, (_, v))| (n, v)).collect();
        let refused = query
            .refused
            .map(|(name, problem)| Error::from(error::QueryParam { name, problem }));
        self.run(
            text,
            Arc::default(),
            (None, 0),
            values,
            query.max_rows,
            refused,
        )
    }

    fn run(
        &self,
        text: Arc<QueryText>,
        shared: Arc<SharedPlan>,
        (plan, generation): (Option<Plan>, u64),
        values: HashMap<String, SqlValue>,
        max_rows: Option<usize>,
        refused: Option<Error>,
    ) -> QueryRows {
        let columns = Arc::new(Mutex::new(plan.as_ref().map(|p| p.columns.clone())));
        if let Some(error) = refused {
            return QueryRows {
                columns,
                rows: futures_util::stream::once(async move { Err(error) }).boxed(),
            };
        }
        let params = values
            .into_iter()
            .map(|(name, value)| {
                let mut proto = value.to_proto();
                proto.r#type = text.param_types.get(&name).map(SqlType::to_proto);
                (name, proto)
            })
            .collect();
        let execution = Execution {
            channel: self.channel.clone(),
            read: self.read,
            text,
            shared,
            plan,
            generation,
            params,
            budget: self.read.retry.start(),
            started: false,
            max_rows,
            columns: columns.clone(),
            refresh: false,
            merger: BatchMerger::default(),
            stream: None,
            cookies: RoutingCookies::default(),
            attempt: (std::time::Instant::now(), std::time::Duration::MAX),
            preparing: None,
            executing: None,
            ready: VecDeque::new(),
            delivered: 0,
            done: false,
        };
        let rows = futures_util::stream::unfold(execution, |mut execution| async move {
            execution.next_row().await.map(|row| (row, execution))
        })
        .boxed();
        QueryRows { columns, rows }
    }
}

/// A query Bigtable has planned ([`Sql::prepare`]): bind values to its
/// parameters to run it. Cheap to clone; when Bigtable says its plan
/// expired, a run prepares it again, for every later run too, and runs
/// finding it expired meanwhile wait for that one `PrepareQuery` instead
/// of sending their own (as Google's Java client shares one).
#[derive(Clone)]
pub struct PreparedQuery {
    text: Arc<QueryText>,
    plan: Arc<SharedPlan>,
}

impl std::fmt::Debug for PreparedQuery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedQuery")
            .field("sql", &self.text.sql)
            .field("params", &self.text.param_types)
            .finish_non_exhaustive()
    }
}

impl PreparedQuery {
    /// The query's text.
    #[must_use]
    pub fn sql(&self) -> &str {
        &self.text.sql
    }

    /// The columns of its result, as its current plan has them.
    #[must_use]
    pub fn columns(&self) -> Vec<SqlColumn> {
        self.plan
            .get()
            .0
            .map(|p| p.columns.to_vec())
            .unwrap_or_default()
    }

    /// A run of the query, its parameters not yet set.
    #[must_use]
    pub fn bind(&self) -> BoundQuery {
        BoundQuery {
            query: self.clone(),
            values: HashMap::new(),
            max_rows: None,
        }
    }
}

/// A [`PreparedQuery`] with values for its parameters, ready for
/// [`Sql::execute`].
#[derive(Debug, Clone)]
pub struct BoundQuery {
    query: PreparedQuery,
    values: HashMap<String, SqlValue>,
    max_rows: Option<usize>,
}

impl BoundQuery {
    /// The parameter `name` (without its `@`) set to `value`.
    ///
    /// # Errors
    /// [`Error::QueryParam`] when the query declared no such parameter, or
    /// declared it of another type, or for a value GoogleSQL cannot hold
    /// (a year outside 0001 to 9999, a leap second).
    pub fn set(mut self, name: &str, value: impl Into<SqlValue>) -> Result<Self> {
        let value = value.into();
        let Some(ty) = self.query.text.param_types.get(name) else {
            let mut declared: Vec<&str> = self
                .query
                .text
                .param_types
                .keys()
                .map(String::as_str)
                .collect();
            declared.sort_unstable();
            return Err(Error::from(error::QueryParam {
                name: name.to_owned(),
                problem: format!(
                    "the prepared query declares no such parameter (it declares: {})",
                    if declared.is_empty() {
                        "none".to_owned()
                    } else {
                        declared.join(", ")
                    }
                ),
            }));
        };
        if !value.fits(ty) {
            return Err(Error::from(error::QueryParam {
                name: name.to_owned(),
                problem: format!(
                    "the query declares it {ty}, and the value is {}",
                    value
                        .sql_type()
                        .map_or_else(|| "of another type".to_owned(), |t| t.to_string())
                ),
            }));
        }
        if let Some(problem) = value.param_problem() {
            return Err(Error::from(error::QueryParam {
                name: name.to_owned(),
                problem,
            }));
        }
        self.values.insert(name.to_owned(), value);
        Ok(self)
    }

    /// Fail the run with [`Error::QueryRowLimit`] when the query returns
    /// more than `limit` rows: the rows of the batch that passes it are
    /// not handed out (those of earlier batches were).
    #[must_use]
    pub fn max_rows(mut self, limit: usize) -> Self {
        self.max_rows = Some(limit);
        self
    }
}

/// A query to prepare and run in one call ([`Sql::query`]): its text and
/// its parameters' values, each with a type.
#[derive(Debug, Clone)]
pub struct Query {
    sql: String,
    params: HashMap<String, (SqlType, SqlValue)>,
    max_rows: Option<usize>,
    /// The first parameter refused, and why: the run fails with it.
    refused: Option<(String, String)>,
}

impl Query {
    /// The query `sql`, without parameters.
    #[must_use]
    pub fn new(sql: impl Into<String>) -> Self {
        Self {
            sql: sql.into(),
            params: HashMap::new(),
            max_rows: None,
            refused: None,
        }
    }

    /// The parameter `name` (without its `@`) with `value`, of the type
    /// the value has. A `NULL`, or an array with no element that is not,
    /// has none: give it with [`Query::typed_param`] (running the query
    /// otherwise fails with [`Error::QueryParam`], as it does for a value
    /// a query cannot take: a `STRUCT`, a `MAP`, a year outside 0001 to
    /// 9999, a leap second).
    #[must_use]
    pub fn param(mut self, name: &str, value: impl Into<SqlValue>) -> Self {
        let value = value.into();
        match value.sql_type() {
            Some(ty) => self.insert(name, ty, value),
            None => self.refuse(name, "its value (NULL, or no element that is not) says no type; give it with typed_param"),
        }
        self
    }

    /// The parameter `name` (without its `@`) of type `ty`, with `value`
    /// (`SqlValue::Null` for `NULL`).
    #[must_use]
    pub fn typed_param(mut self, name: &str, ty: SqlType, value: impl Into<SqlValue>) -> Self {
        let value = value.into();
        if value.fits(&ty) {
            self.insert(name, ty, value);
        } else {
            let problem = format!(
                "declared {ty}, and the value is {}",
                value
                    .sql_type()
                    .map_or_else(|| "of another type".to_owned(), |t| t.to_string())
            );
            self.refuse(name, &problem);
        }
        self
    }

    /// Fail the run with [`Error::QueryRowLimit`] past `limit` rows (see
    /// [`BoundQuery::max_rows`]).
    #[must_use]
    pub fn max_rows(mut self, limit: usize) -> Self {
        self.max_rows = Some(limit);
        self
    }

    /// `name` of type `ty` with `value`, unless a query cannot take them.
    fn insert(&mut self, name: &str, ty: SqlType, value: SqlValue) {
        match ty.param_problem().or_else(|| value.param_problem()) {
            Some(problem) => self.refuse(name, &problem),
            None => {
                self.params.insert(name.to_owned(), (ty, value));
            }
        }
    }

    fn refuse(&mut self, name: &str, problem: &str) {
        if self.refused.is_none() {
            self.refused = Some((name.to_owned(), problem.to_owned()));
        }
    }
}

/// The rows of a query, in the order Bigtable returns them, as a stream;
/// [`QueryRows::collect`] gathers them with the result's columns.
pub struct QueryRows {
    columns: Arc<Mutex<Option<Arc<[SqlColumn]>>>>,
    rows: BoxStream<'static, Result<SqlRow>>,
}

impl std::fmt::Debug for QueryRows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueryRows")
            .field("columns", &self.columns())
            .finish_non_exhaustive()
    }
}

impl QueryRows {
    /// The columns of the result, once the query is prepared (`None`
    /// before). A plan made again before the first row may change them.
    #[must_use]
    pub fn columns(&self) -> Option<Vec<SqlColumn>> {
        self.columns
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_ref()
            .map(|c| c.to_vec())
    }

    /// Every row, with the result's columns.
    ///
    /// # Errors
    /// The first error of the stream: no row is returned with it.
    pub async fn collect(mut self) -> Result<QueryResult> {
        let mut rows = Vec::new();
        while let Some(row) = self.rows.next().await {
            rows.push(row?);
        }
        Ok(QueryResult {
            columns: self.columns().unwrap_or_default(),
            rows,
        })
    }
}

impl Stream for QueryRows {
    type Item = Result<SqlRow>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.rows.poll_next_unpin(cx)
    }
}

/// A query's whole result ([`QueryRows::collect`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct QueryResult {
    /// The result's columns.
    pub columns: Vec<SqlColumn>,
    /// Its rows, in order.
    pub rows: Vec<SqlRow>,
}
