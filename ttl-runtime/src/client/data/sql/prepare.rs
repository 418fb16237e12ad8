//! `PrepareQuery`: a GoogleSQL query planned by Bigtable, its plan (an
//! opaque id, the result's columns, how long it holds) checked before use.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::model::error::Result;
use crate::model::proto::{prepare_query_request::DataFormat, PrepareQueryRequest, ProtoFormat};
use crate::model::sql_row::{columns_of, SqlColumn};
use crate::model::sql_type::SqlType;
use crate::wire::builtin_metrics::{status_of, Rpc};
use crate::wire::channel::DataChannel;

/// A plan Bigtable made for a query.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// What `ExecuteQuery` names the plan by.
    pub(crate) id: Vec<u8>,
    /// The columns of its result.
    pub(crate) columns: Arc<[SqlColumn]>,
    /// When Bigtable stops taking it (`None`: it did not say).
    pub(crate) valid_until: Option<SystemTime>,
}

impl Plan {
    /// Whether the plan is past the time Bigtable said it holds.
    pub(crate) fn expired(&self) -> bool {
        self.valid_until.is_some_and(|t| t <= SystemTime::now())
    }
}

/// The plan every run of one prepared query uses, and the lock a run
/// holds while it makes the plan again: runs that find the plan expired
/// meanwhile wait for that one `PrepareQuery` and take its plan, as runs
/// of one query share one in Google's Java client, instead of each
/// preparing its own.
#[derive(Debug, Default)]
pub(crate) struct SharedPlan {
    /// The plan, and how many plans were made before it (0: none yet).
    current: std::sync::Mutex<(Option<Plan>, u64)>,
    /// Held by the run making the plan.
    pub(crate) making: futures_util::lock::Mutex<()>,
}

impl SharedPlan {
    /// A query already planned.
    pub(crate) fn of(plan: Plan) -> Self {
        Self {
            current: std::sync::Mutex::new((Some(plan), 1)),
            making: futures_util::lock::Mutex::default(),
        }
    }

    /// The plan and its generation.
    pub(crate) fn get(&self) -> (Option<Plan>, u64) {
        self.current
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// `plan` is the query's plan from now on; its generation.
    pub(crate) fn set(&self, plan: Plan) -> u64 {
        let mut current = self
            .current
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        current.1 += 1;
        current.0 = Some(plan);
        current.1
    }
}

/// The query text and its parameters' types: what a plan is made of.
#[derive(Debug)]
pub(crate) struct QueryText {
    pub(crate) instance: Arc<str>,
    pub(crate) sql: String,
    pub(crate) param_types: HashMap<String, SqlType>,
}

/// One `PrepareQuery` attempt within `timeout`: the plan, or the status
/// that ended the attempt (outer `Err`); an answer that cannot be used (no
/// column, an unknown type) is the inner `Err`, never retried.
pub(crate) async fn prepare_once(
    channel: &DataChannel,
    text: &QueryText,
    timeout: Duration,
) -> std::result::Result<Result<Plan>, tonic::Status> {
    let request = PrepareQueryRequest {
        instance_name: text.instance.to_string(),
        query: text.sql.clone(),
        param_types: text
            .param_types
            .iter()
            .map(|(name, ty)| (name.clone(), ty.to_proto()))
            .collect(),
        data_format: Some(DataFormat::ProtoFormat(ProtoFormat::default())),
        ..PrepareQueryRequest::default()
    };
    let response = channel.prepare_query(request, timeout).await?;
    Ok(columns_of(response.metadata.as_ref()).map(|columns| Plan {
        id: response.prepared_query,
        columns,
        valid_until: response.valid_until.and_then(|t| {
            let nanos = u32::try_from(t.nanos).ok()?;
            let secs = u64::try_from(t.seconds).ok()?;
            SystemTime::UNIX_EPOCH.checked_add(Duration::new(secs, nanos))
        }),
    }))
}

/// [`prepare_once`] as an attempt of `rpc`, the `PrepareQuery` RPC of the
/// built-in metrics.
pub(crate) async fn prepare_attempt(
    rpc: &mut Rpc,
    channel: &DataChannel,
    text: &QueryText,
    timeout: Duration,
) -> std::result::Result<Result<Plan>, tonic::Status> {
    rpc.attempt_started();
    let answer = rpc.within(prepare_once(channel, text, timeout)).await;
    rpc.attempt_ended(status_of(&answer));
    answer
}
