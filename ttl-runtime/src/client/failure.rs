//! How a call that failed becomes an [`Error::Server`]: the gRPC code to
//! branch on, the attempts made and the time they took, and the last
//! attempt's status as the error's source.

use crate::client::retry::Budget;
use crate::model::error::{self, BoxError, Code, Error};
use crate::wire::cause::reason_and_source;
use crate::wire::status::{cause_under_code, code_of};

/// The error ending a call on `table` (and `row_key`, where there is one)
/// with `source`, its code `code`, after the attempts `budget` counted
/// (one, when the call had no retry budget).
pub(crate) fn server_error(
    table: &str,
    row_key: Option<Vec<u8>>,
    code: Code,
    source: impl Into<BoxError>,
    budget: Option<&Budget>,
) -> Error {
    let (reason, source, unanswered) = reason_and_source(source.into());
    Error::from(error::Server {
        table: table.to_owned(),
        row_key,
        code,
        attempts: budget.map_or(1, Budget::attempts),
        elapsed: budget.map(Budget::elapsed).unwrap_or_default(),
        retries_exhausted: budget.is_some_and(Budget::exhausted),
        reason,
        source,
        unanswered,
    })
}

/// [`status_error`] of a call sent once, begun at `started`: its one
/// attempt and the time it really took.
pub(crate) fn one_attempt_error(
    table: &str,
    row_key: Option<Vec<u8>>,
    status: tonic::Status,
    started: std::time::Instant,
) -> Error {
    let mut error = status_error(table, row_key, status, None);
    if let Error::Server(e) = &mut error {
        e.elapsed = started.elapsed();
    }
    error
}

/// [`server_error`] for a tonic status, its message and transport failure
/// the cause.
pub(crate) fn status_error(
    table: &str,
    row_key: Option<Vec<u8>>,
    status: tonic::Status,
    budget: Option<&Budget>,
) -> Error {
    server_error(
        table,
        row_key,
        code_of(&status),
        cause_under_code(status),
        budget,
    )
}
