//! The `CloudBigtableV2TestProxy` service: clients by id, each a
//! [`Connection`] to the suite's fake server, and every data RPC answered by
//! the matching call of [`RawTable`]; `ExecuteQuery` by [`Sql::query`],
//! which prepares the suite's query with its parameters' types, as
//! Google's proxies do.
//!
//! Results always carry the library's outcome as a status; a gRPC error of
//! the proxy itself means the suite asked for something the proxy cannot do
//! (an unknown client id, a missing request).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use bigtable_ttl::data::{Query, RawTable, Sql, SqlRow};
use bigtable_ttl::read::ReadOptions;
use bigtable_ttl::retry::RetryPolicy;
use bigtable_ttl::{Code, Connection};
use futures_util::TryStreamExt as _;
use tonic::{Request, Response, Status};

use crate::convert;
use crate::pb;
use crate::pb::cloud_bigtable_v2_test_proxy_server::CloudBigtableV2TestProxy;
use crate::status;
use googleapis_tonic_google_bigtable_v2::google::bigtable::v2::mutate_rows_response::Entry as EntryResult;
use googleapis_tonic_google_bigtable_v2::google::bigtable::v2::{
    CheckAndMutateRowResponse, Value as ProtoValue,
};

/// One client the suite created.
#[derive(Clone)]
struct Client {
    conn: Connection,
    read: ReadOptions,
    write: RetryPolicy,
    /// Closed clients take no new call; calls under way finish.
    closed: bool,
}

impl Client {
    /// The raw table `table_name` (`projects/…/tables/ID`) names.
    fn table(&self, table_name: &str) -> RawTable {
        let id = table_name
            .rsplit_once("/tables/")
            .map_or(table_name, |(_, id)| id);
        RawTable::new(&self.conn, id)
            .with_read_options(self.read)
            .with_write_retry(self.write)
    }
}

/// The proxy's clients by id.
#[derive(Default)]
pub(crate) struct Proxy {
    clients: Mutex<HashMap<String, Client>>,
}

impl Proxy {
    /// The open client `id`, or the proxy's error.
    fn client(&self, id: &str) -> Result<Client, Status> {
        let clients = self.clients.lock().expect("no panic holds the lock");
        match clients.get(id) {
            None => Err(Status::not_found(format!("no client {id}"))),
            Some(client) => Ok(client.clone()),
        }
    }
}

/// The timeouts of a client whose every operation must end within
/// `timeout`: its attempts too, and no retry past it.
fn policies(timeout: Option<Duration>) -> (ReadOptions, RetryPolicy) {
    let mut retry = RetryPolicy::default();
    let mut read = ReadOptions::default();
    if let Some(timeout) = timeout {
        retry = retry
            .with_deadline(timeout)
            .with_attempt_timeout(retry.attempt_timeout.min(timeout));
        read = read.with_idle_timeout(read.idle_timeout.min(timeout));
    }
    (read.with_retry(retry), retry)
}

/// The suite's inner request, or the proxy's error for a missing one.
fn inner<T>(request: Option<T>) -> Result<T, Status> {
    request.ok_or_else(|| Status::invalid_argument("the inner request is missing"))
}

/// The error for a call on a closed client: the library is not asked.
fn closed() -> pb::rpc::Status {
    status::with(Code::FailedPrecondition, "the client is closed")
}

/// The error for a request the library's types cannot hold (see
/// [`convert`]): the library is not asked.
fn refused(problem: String) -> pb::rpc::Status {
    status::with(Code::InvalidArgument, problem)
}

#[tonic::async_trait]
impl CloudBigtableV2TestProxy for Proxy {
    async fn create_client(
        &self,
        request: Request<pb::CreateClientRequest>,
    ) -> Result<Response<pb::CreateClientResponse>, Status> {
        let request = request.into_inner();
        if request.client_id.is_empty() || request.data_target.is_empty() {
            return Err(Status::invalid_argument(
                "client_id and data_target are required",
            ));
        }
        let timeout = match request.per_operation_timeout {
            None => None,
            Some(d) => Some(
                Duration::try_from(d)
                    .map_err(|e| Status::invalid_argument(format!("per_operation_timeout: {e}")))?,
            ),
        };
        let (read, write) = policies(timeout);
        let conn = Connection::builder(&request.project_id, &request.instance_id)
            .emulator(request.data_target.clone())
            .app_profile(request.app_profile_id.clone())
            .retry(write)
            .connect()
            .await
            .map_err(|e| {
                Status::invalid_argument(format!("connecting to {}: {e}", request.data_target))
            })?;
        let mut clients = self.clients.lock().expect("no panic holds the lock");
        if clients.contains_key(&request.client_id) {
            return Err(Status::already_exists(format!(
                "client {} exists",
                request.client_id
            )));
        }
        clients.insert(
            request.client_id,
            Client {
                conn,
                read,
                write,
                closed: false,
            },
        );
        Ok(Response::new(pb::CreateClientResponse {}))
    }

    async fn close_client(
        &self,
        request: Request<pb::CloseClientRequest>,
    ) -> Result<Response<pb::CloseClientResponse>, Status> {
        let id = request.into_inner().client_id;
        let mut clients = self.clients.lock().expect("no panic holds the lock");
        let client = clients
            .get_mut(&id)
            .ok_or_else(|| Status::not_found(format!("no client {id}")))?;
        client.closed = true;
        Ok(Response::new(pb::CloseClientResponse {}))
    }

    async fn remove_client(
        &self,
        request: Request<pb::RemoveClientRequest>,
    ) -> Result<Response<pb::RemoveClientResponse>, Status> {
        let id = request.into_inner().client_id;
        let removed = self
            .clients
            .lock()
            .expect("no panic holds the lock")
            .remove(&id);
        match removed {
            Some(_) => Ok(Response::new(pb::RemoveClientResponse {})),
            None => Err(Status::not_found(format!("no client {id}"))),
        }
    }

    async fn read_row(
        &self,
        request: Request<pb::ReadRowRequest>,
    ) -> Result<Response<pb::RowResult>, Status> {
        let request = request.into_inner();
        let client = self.client(&request.client_id)?;
        if client.closed {
            return Ok(Response::new(pb::RowResult {
                status: Some(closed()),
                row: None,
            }));
        }
        let table = client.table(&request.table_name);
        let filter = match request.filter.map(convert::row_filter).transpose() {
            Ok(filter) => filter,
            Err(problem) => {
                return Ok(Response::new(pb::RowResult {
                    status: Some(refused(problem)),
                    row: None,
                }))
            }
        };
        let result = match table.read_row(request.row_key.as_bytes(), filter).await {
            Ok(row) => pb::RowResult {
                status: Some(status::ok()),
                row: row.map(convert::row),
            },
            Err(e) => pb::RowResult {
                status: Some(status::of(&e)),
                row: None,
            },
        };
        Ok(Response::new(result))
    }

    async fn read_rows(
        &self,
        request: Request<pb::ReadRowsRequest>,
    ) -> Result<Response<pb::RowsResult>, Status> {
        let request = request.into_inner();
        let client = self.client(&request.client_id)?;
        if client.closed {
            return Ok(Response::new(pb::RowsResult {
                status: Some(closed()),
                rows: Vec::new(),
            }));
        }
        let read = inner(request.request)?;
        let table = client.table(&read.table_name);
        let cancel_after = usize::try_from(request.cancel_after_rows).unwrap_or(0);
        let read = match convert::read_rows(read) {
            Ok(read) => read,
            Err(problem) => {
                return Ok(Response::new(pb::RowsResult {
                    status: Some(refused(problem)),
                    rows: Vec::new(),
                }))
            }
        };
        let mut rows = std::pin::pin!(table.read_rows(read));
        let mut result = pb::RowsResult {
            status: Some(status::ok()),
            rows: Vec::new(),
        };
        loop {
            match rows.try_next().await {
                Ok(Some(row)) => {
                    result.rows.push(convert::row(row));
                    if cancel_after > 0 && result.rows.len() >= cancel_after {
                        // Dropping the stream cancels the read.
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    result.status = Some(status::of(&e));
                    break;
                }
            }
        }
        Ok(Response::new(result))
    }

    async fn mutate_row(
        &self,
        request: Request<pb::MutateRowRequest>,
    ) -> Result<Response<pb::MutateRowResult>, Status> {
        let request = request.into_inner();
        let client = self.client(&request.client_id)?;
        if client.closed {
            return Ok(Response::new(pb::MutateRowResult {
                status: Some(closed()),
            }));
        }
        let mutate = inner(request.request)?;
        let table = client.table(&mutate.table_name);
        let mutations = match convert::mutations(mutate.mutations) {
            Ok(mutations) => mutations,
            Err(problem) => {
                return Ok(Response::new(pb::MutateRowResult {
                    status: Some(refused(problem)),
                }))
            }
        };
        let status = match table.mutate_row(mutate.row_key, mutations).await {
            Ok(()) => Some(status::ok()),
            Err(e) => Some(status::of(&e)),
        };
        Ok(Response::new(pb::MutateRowResult { status }))
    }

    async fn bulk_mutate_rows(
        &self,
        request: Request<pb::MutateRowsRequest>,
    ) -> Result<Response<pb::MutateRowsResult>, Status> {
        let request = request.into_inner();
        let client = self.client(&request.client_id)?;
        if client.closed {
            return Ok(Response::new(pb::MutateRowsResult {
                status: Some(closed()),
                entries: Vec::new(),
            }));
        }
        let mutate = inner(request.request)?;
        let table = client.table(&mutate.table_name);
        let count = mutate.entries.len();
        let entries = match convert::entries(mutate.entries) {
            Ok(entries) => entries,
            Err(problem) => {
                return Ok(Response::new(pb::MutateRowsResult {
                    status: Some(refused(problem)),
                    entries: Vec::new(),
                }))
            }
        };
        let result = match table.mutate_rows(entries).await {
            // The call went through; each entry says how it fared.
            Ok(results) => pb::MutateRowsResult {
                status: Some(status::ok()),
                entries: results
                    .into_iter()
                    .filter_map(Result::err)
                    .map(|e| EntryResult {
                        index: i64::try_from(e.index).unwrap_or(i64::MAX),
                        status: Some(status::with(e.code, e.message)),
                    })
                    .collect(),
            },
            // The request failed as a whole: so did every entry.
            Err(e) => {
                let whole = status::of(&e);
                pb::MutateRowsResult {
                    entries: (0..count)
                        .map(|index| EntryResult {
                            index: i64::try_from(index).unwrap_or(i64::MAX),
                            status: Some(whole.clone()),
                        })
                        .collect(),
                    status: Some(whole),
                }
            }
        };
        Ok(Response::new(result))
    }

    async fn check_and_mutate_row(
        &self,
        request: Request<pb::CheckAndMutateRowRequest>,
    ) -> Result<Response<pb::CheckAndMutateRowResult>, Status> {
        let request = request.into_inner();
        let client = self.client(&request.client_id)?;
        if client.closed {
            return Ok(Response::new(pb::CheckAndMutateRowResult {
                status: Some(closed()),
                result: None,
            }));
        }
        let check = inner(request.request)?;
        let table = client.table(&check.table_name);
        let parts = check
            .predicate_filter
            .map(convert::row_filter)
            .transpose()
            .and_then(|predicate| {
                Ok((
                    predicate,
                    convert::mutations(check.true_mutations)?,
                    convert::mutations(check.false_mutations)?,
                ))
            });
        let (predicate, true_mutations, false_mutations) = match parts {
            Ok(parts) => parts,
            Err(problem) => {
                return Ok(Response::new(pb::CheckAndMutateRowResult {
                    status: Some(refused(problem)),
                    result: None,
                }))
            }
        };
        let result = match table
            .check_and_mutate_row(check.row_key, predicate, true_mutations, false_mutations)
            .await
        {
            Ok(matched) => pb::CheckAndMutateRowResult {
                status: Some(status::ok()),
                result: Some(CheckAndMutateRowResponse {
                    predicate_matched: matched,
                }),
            },
            Err(e) => pb::CheckAndMutateRowResult {
                status: Some(status::of(&e)),
                result: None,
            },
        };
        Ok(Response::new(result))
    }

    async fn sample_row_keys(
        &self,
        request: Request<pb::SampleRowKeysRequest>,
    ) -> Result<Response<pb::SampleRowKeysResult>, Status> {
        let request = request.into_inner();
        let client = self.client(&request.client_id)?;
        if client.closed {
            return Ok(Response::new(pb::SampleRowKeysResult {
                status: Some(closed()),
                samples: Vec::new(),
            }));
        }
        let sample = inner(request.request)?;
        let table = client.table(&sample.table_name);
        let result = match table.sample_row_keys().await {
            Ok(samples) => pb::SampleRowKeysResult {
                status: Some(status::ok()),
                samples: samples.into_iter().map(convert::sample).collect(),
            },
            Err(e) => pb::SampleRowKeysResult {
                status: Some(status::of(&e)),
                samples: Vec::new(),
            },
        };
        Ok(Response::new(result))
    }

    async fn read_modify_write_row(
        &self,
        request: Request<pb::ReadModifyWriteRowRequest>,
    ) -> Result<Response<pb::RowResult>, Status> {
        let request = request.into_inner();
        let client = self.client(&request.client_id)?;
        if client.closed {
            return Ok(Response::new(pb::RowResult {
                status: Some(closed()),
                row: None,
            }));
        }
        let rmw = inner(request.request)?;
        let table = client.table(&rmw.table_name);
        let rules = match convert::rules(rmw.rules) {
            Ok(rules) => rules,
            Err(problem) => {
                return Ok(Response::new(pb::RowResult {
                    status: Some(refused(problem)),
                    row: None,
                }))
            }
        };
        let result = match table.read_modify_write_row(rmw.row_key, rules).await {
            Ok(row) => pb::RowResult {
                status: Some(status::ok()),
                row: Some(convert::row(row)),
            },
            Err(e) => pb::RowResult {
                status: Some(status::of(&e)),
                row: None,
            },
        };
        Ok(Response::new(result))
    }

    async fn execute_query(
        &self,
        request: Request<pb::ExecuteQueryRequest>,
    ) -> Result<Response<pb::ExecuteQueryResult>, Status> {
        let request = request.into_inner();
        let client = self.client(&request.client_id)?;
        let failed = |status| pb::ExecuteQueryResult {
            status: Some(status),
            metadata: None,
            rows: Vec::new(),
        };
        if client.closed {
            return Ok(Response::new(failed(closed())));
        }
        let execute = inner(request.request)?;
        // The suite sends the query's text in the field Bigtable deprecated
        // for the prepared form: the proxy prepares it, as Google's do.
        #[allow(deprecated)]
        let text = execute.query;
        let query = match query_of(text, execute.params) {
            Ok(query) => query,
            Err(problem) => return Ok(Response::new(failed(refused(problem)))),
        };
        let sql = Sql::new(&client.conn).with_read_options(client.read);
        let result = match sql.query(query).collect().await {
            Ok(result) => {
                let answer = result
                    .columns
                    .iter()
                    .map(convert::column)
                    .collect::<Result<Vec<_>, String>>()
                    .and_then(|columns| Ok((columns, sql_rows(&result.rows)?)));
                match answer {
                    Ok((columns, rows)) => pb::ExecuteQueryResult {
                        status: Some(status::ok()),
                        metadata: Some(pb::ResultSetMetadata { columns }),
                        rows,
                    },
                    Err(problem) => failed(status::with(Code::Internal, problem)),
                }
            }
            Err(e) => failed(status::of(&e)),
        };
        Ok(Response::new(result))
    }
}

/// The suite's query and parameters (each `Value` carrying its type) as a
/// [`Query`], or why a parameter cannot be one.
fn query_of(sql: String, params: HashMap<String, ProtoValue>) -> Result<Query, String> {
    let mut query = Query::new(sql);
    for (name, value) in params {
        let Some(ty) = &value.r#type else {
            return Err(format!("parameter @{name} has no type"));
        };
        let ty = convert::sql_type(ty).map_err(|e| format!("parameter @{name}: {e}"))?;
        let value =
            convert::sql_value(&value, &ty).map_err(|e| format!("parameter @{name}: {e}"))?;
        query = query.typed_param(&name, ty, value);
    }
    Ok(query)
}

/// A query's rows as the suite's messages.
fn sql_rows(rows: &[SqlRow]) -> Result<Vec<pb::SqlRow>, String> {
    rows.iter()
        .map(|row| {
            Ok(pb::SqlRow {
                values: row
                    .values()
                    .iter()
                    .map(convert::sql_value_to_wire)
                    .collect::<Result<_, String>>()?,
            })
        })
        .collect()
}
