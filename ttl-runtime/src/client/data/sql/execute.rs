//! `ExecuteQuery`: one run of a prepared query, as rows, across as many
//! attempts as its retry budget allows. A broken stream is resumed from
//! the last resume token (what came after it is dropped and sent again);
//! a plan Bigtable says has expired is prepared again, but only before the
//! first token (after it, rows of the old plan are out, and the new plan's
//! could differ); nothing else is retried but what Google's clients retry.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::client::failure::status_error;
use crate::client::read::ReadOptions;
use crate::client::retry::{retryable_status, Budget};
use crate::model::error::{Code, Error, Result};
use crate::model::proto::{
    execute_query_response::Response, ExecuteQueryRequest, ExecuteQueryResponse, Value,
};
use crate::model::sql_batch::BatchMerger;
use crate::model::sql_row::{malformed, rows_of, SqlColumn, SqlRow};
use crate::wire::builtin_metrics::{scoped, Method, Rpc};
use crate::wire::channel::{at_deadline, DataChannel};
use crate::wire::cookies::RoutingCookies;
use crate::wire::status::{code_of, not_sent, plan_expired, retry_delay};

use super::ended_code;
use super::prepare::{prepare_attempt, Plan, QueryText, SharedPlan};

/// Where one run of a query is.
pub(crate) struct Execution {
    pub(crate) channel: DataChannel,
    pub(crate) read: ReadOptions,
    pub(crate) text: Arc<QueryText>,
    /// The plan shared by every run of the prepared query: a refresh
    /// replaces it for later runs too.
    pub(crate) shared: Arc<SharedPlan>,
    /// The plan this run executes (`None`: not prepared yet).
    pub(crate) plan: Option<Plan>,
    /// Its generation in `shared`: a newer one there was made by another
    /// run.
    pub(crate) generation: u64,
    /// The parameters, each with its type.
    pub(crate) params: HashMap<String, Value>,
    /// The query's attempts and deadline, from its first poll.
    pub(crate) budget: Budget,
    /// Whether the stream was polled yet (the budget starts then).
    pub(crate) started: bool,
    pub(crate) max_rows: Option<usize>,
    /// The columns of the plan the rows come from, for the caller.
    pub(crate) columns: Arc<Mutex<Option<Arc<[SqlColumn]>>>>,
    /// Whether the plan must be made again before the next attempt (it
    /// expired), as opposed to made for the first time.
    pub(crate) refresh: bool,
    pub(crate) merger: BatchMerger,
    pub(crate) stream: Option<tonic::Streaming<ExecuteQueryResponse>>,
    pub(crate) cookies: RoutingCookies,
    /// When the current attempt's stream was opened, and the time it was
    /// given: a `CANCELLED` after that is the deadline (see [`at_deadline`]).
    pub(crate) attempt: (Instant, Duration),
    pub(crate) ready: VecDeque<SqlRow>,
    pub(crate) delivered: usize,
    pub(crate) done: bool,
    /// The `PrepareQuery` RPC under way (of the built-in metrics): its
    /// attempts are those a plan took to make.
    pub(crate) preparing: Option<Rpc>,
    /// The `ExecuteQuery` RPC, from the first time a stream was to be
    /// opened: a plan made again after that is a `PrepareQuery` of its own
    /// within it, as in Google's Java client.
    pub(crate) executing: Option<Rpc>,
}

impl Execution {
    /// The next row, `None` at the end; after an error, nothing more.
    pub(crate) async fn next_row(&mut self) -> Option<Result<SqlRow>> {
        if !self.started {
            self.started = true;
            self.budget = self.read.retry.start();
        }
        if let Some(rpc) = &mut self.executing {
            rpc.asked_again();
        }
        loop {
            if let Some(row) = self.ready.pop_front() {
                if let Some(rpc) = &mut self.executing {
                    rpc.handed_over();
                }
                return Some(Ok(row));
            }
            if self.done {
                return None;
            }
            if let Err(e) = self.step().await {
                self.done = true;
                self.stream = None;
                let code = ended_code(&e);
                for rpc in [&mut self.preparing, &mut self.executing]
                    .into_iter()
                    .flatten()
                {
                    rpc.ended(code);
                }
                return Some(Err(e));
            }
        }
    }

    /// One move: make the plan, open a stream, or take one message.
    async fn step(&mut self) -> Result<()> {
        if self.plan.is_none() || self.refresh {
            return self.prepare().await;
        }
        let Some(stream) = self.stream.as_mut() else {
            return self.open().await;
        };
        let wait = self.read.idle_timeout.min(self.budget.remaining());
        let slot = match &self.executing {
            Some(rpc) => rpc.slot(),
            None => None,
        };
        let message = match tokio::time::timeout(wait, scoped(slot, stream.message())).await {
            Ok(message) => message,
            Err(_) => Err(tonic::Status::deadline_exceeded(format!(
                "no message from ExecuteQuery within {wait:?}"
            ))),
        };
        match message {
            Ok(Some(ExecuteQueryResponse {
                response: Some(Response::Results(part)),
            })) => {
                if let Some(rpc) = &mut self.executing {
                    rpc.first_response();
                }
                let values = self.merger.push(part).map_err(malformed)?;
                if let Some(values) = values {
                    self.deliver(values)?;
                }
                Ok(())
            }
            Ok(Some(ExecuteQueryResponse {
                response: Some(Response::Metadata(_)),
            })) => Err(malformed(
                "Expected results response, but received: METADATA",
            )),
            Ok(Some(ExecuteQueryResponse { response: None })) => Ok(()),
            Ok(None) => {
                self.merger.finish().map_err(malformed)?;
                self.done = true;
                self.stream = None;
                if let Some(rpc) = &mut self.executing {
                    rpc.ended(Code::Ok);
                }
                Ok(())
            }
            Err(status) => {
                self.cookies.learn(status.metadata());
                self.attempt_failed(status).await
            }
        }
    }

    /// Rows made final by a resume token, checked whole against the
    /// plan's columns and the row limit.
    fn deliver(&mut self, values: Vec<Value>) -> Result<()> {
        let Some(plan) = &self.plan else {
            return Err(malformed("rows came before the query was prepared"));
        };
        let rows = rows_of(values, &plan.columns)?;
        if let Some(limit) = self.max_rows {
            if self.delivered + rows.len() > limit {
                return Err(Error::QueryRowLimit { limit });
            }
        }
        self.delivered += rows.len();
        self.ready.extend(rows);
        Ok(())
    }

    /// Make the plan (the first time, or again when it expired), one
    /// attempt; or take the one another run of the query made meanwhile.
    async fn prepare(&mut self) -> Result<()> {
        let no_time = || not_sent("no time left for PrepareQuery before the deadline");
        if self.budget.expired() {
            return Err(self.error(no_time()));
        }
        let shared = self.shared.clone();
        let Ok(_making) = tokio::time::timeout(self.budget.remaining(), shared.making.lock()).await
        else {
            return Err(self.error(no_time()));
        };
        if let (Some(plan), generation) = shared.get() {
            if generation > self.generation && !plan.expired() {
                self.use_plan(plan, generation);
                return Ok(());
            }
        }
        if self.budget.expired() {
            return Err(self.error(no_time()));
        }
        let timeout = self.budget.attempt_timeout();
        let channel = &self.channel;
        let rpc = self
            .preparing
            .get_or_insert_with(|| channel.rpc(&self.text.instance, Method::PrepareQuery));
        match prepare_attempt(rpc, channel, &self.text, timeout).await {
            Ok(plan) => {
                let plan = plan?;
                if let Some(mut rpc) = self.preparing.take() {
                    rpc.ended(Code::Ok);
                }
                let generation = shared.set(plan.clone());
                self.use_plan(plan, generation);
                Ok(())
            }
            // A plan made again after it expired is retried whatever went
            // wrong, as Google's clients do: the query was fine a moment
            // ago. The first one only on what is worth retrying.
            Err(status) if self.refresh || query_retryable(&status) => {
                if self.budget.wait_after(&status).await {
                    Ok(())
                } else {
                    Err(self.error(status))
                }
            }
            Err(status) => Err(self.error(status)),
        }
    }

    /// Run `plan` (of `generation`) from the next attempt on.
    fn use_plan(&mut self, plan: Plan, generation: u64) {
        *self
            .columns
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(plan.columns.clone());
        self.plan = Some(plan);
        self.generation = generation;
        self.refresh = false;
    }

    /// Open an attempt's stream, from the last resume token if any.
    async fn open(&mut self) -> Result<()> {
        if self.executing.is_none() {
            self.executing = Some(self.channel.rpc(&self.text.instance, Method::ExecuteQuery));
        }
        if self.budget.expired() {
            let status = not_sent("no time left for ExecuteQuery before the deadline");
            return Err(self.error(status));
        }
        let Some(plan) = &self.plan else {
            return Ok(());
        };
        if self.merger.resume_token().is_none() && plan.expired() {
            self.refresh = true;
            return Ok(());
        }
        let request = ExecuteQueryRequest {
            instance_name: self.text.instance.to_string(),
            prepared_query: plan.id.clone(),
            params: self.params.clone(),
            resume_token: self
                .merger
                .resume_token()
                .map(<[u8]>::to_vec)
                .unwrap_or_default(),
            ..ExecuteQueryRequest::default()
        };
        let timeout = self.budget.remaining().max(Duration::from_millis(1));
        self.attempt = (Instant::now(), timeout);
        let slot = self.executing.as_mut().and_then(|rpc| {
            rpc.attempt_started();
            rpc.slot()
        });
        match scoped(
            slot,
            self.channel
                .execute_query(request, timeout, &mut self.cookies),
        )
        .await
        {
            Ok(stream) => {
                self.stream = Some(stream);
                Ok(())
            }
            Err(status) => self.attempt_failed(status).await,
        }
    }

    /// An attempt ended with `status`: prepare again, resume, or give up.
    async fn attempt_failed(&mut self, status: tonic::Status) -> Result<()> {
        let status = at_deadline(status, self.attempt.0, self.attempt.1);
        if let Some(rpc) = &mut self.executing {
            rpc.attempt_ended(code_of(&status));
        }
        self.stream = None;
        self.merger.restart();
        if plan_expired(&status) {
            if self.merger.resume_token().is_some() {
                return Err(malformed(format!(
                    "Unexpected plan refresh attempt after first token: Bigtable said the plan expired ({}) after rows of it were handed out",
                    status.message()
                )));
            }
            self.refresh = true;
            return if self
                .budget
                .wait_for(&"the query's plan expired", Some(Duration::ZERO))
                .await
            {
                Ok(())
            } else {
                Err(self.error(status))
            };
        }
        if query_retryable(&status) && self.budget.wait_after(&status).await {
            tracing::debug!(%status, "resuming ExecuteQuery");
            return Ok(());
        }
        Err(self.error(status))
    }

    fn error(&self, status: tonic::Status) -> Error {
        status_error(&self.text.instance, None, status, Some(&self.budget))
    }
}

/// Whether a failed `PrepareQuery` or `ExecuteQuery` attempt is retried:
/// on the codes Google's Java client retries for queries (`UNAVAILABLE`,
/// `DEADLINE_EXCEEDED`, `ABORTED`: the server's word for a client too slow
/// to read), a transport failure, or a status asking for a retry
/// (`RetryInfo`); not on `RESOURCE_EXHAUSTED` alone, which the library's
/// reads retry but Google's clients do not retry for queries.
pub(crate) fn query_retryable(status: &tonic::Status) -> bool {
    retryable_status(status)
        && (code_of(status) != Code::ResourceExhausted || retry_delay(status).is_some())
}
