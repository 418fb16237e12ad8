//! gRPC statuses in the library's own terms: the [`Code`] of a tonic status,
//! and the retry delay a server asks for in it (`google.rpc.RetryInfo`).

use std::time::Duration;

use googleapis_tonic_google_bigtable_v2::google::rpc::{
    PreconditionFailure, RetryInfo, Status as RpcStatus,
};
use prost::Message as _;

use std::borrow::Borrow;
use std::error::Error as _;

use crate::model::error::Code;
use crate::wire::cause::Cause;

/// The `type_url` of a `google.rpc.RetryInfo` detail.
const RETRY_INFO_TYPE: &str = "type.googleapis.com/google.rpc.RetryInfo";

/// The delay before a retry that the server asked for in `status`
/// (a `google.rpc.RetryInfo` among the details of its
/// `grpc-status-details-bin`), if it did. Negative delays count as none.
pub(crate) fn retry_delay(status: &tonic::Status) -> Option<Duration> {
    if status.details().is_empty() {
        return None;
    }
    let details = RpcStatus::decode(status.details()).ok()?;
    let info = details
        .details
        .iter()
        .find(|any| any.type_url == RETRY_INFO_TYPE)?;
    let delay = RetryInfo::decode(info.value.as_slice()).ok()?.retry_delay?;
    let secs = u64::try_from(delay.seconds).ok()?;
    let nanos = u32::try_from(delay.nanos).ok()?;
    Some(Duration::new(secs, nanos))
}

/// The `type_url` of a `google.rpc.PreconditionFailure` detail.
const PRECONDITION_FAILURE_TYPE: &str = "type.googleapis.com/google.rpc.PreconditionFailure";

/// Whether `status` says a prepared GoogleSQL query's plan expired:
/// `FAILED_PRECONDITION` with a `google.rpc.PreconditionFailure` whose
/// violation is of type `PREPARED_QUERY_EXPIRED`.
pub(crate) fn plan_expired(status: &tonic::Status) -> bool {
    if code_of(status) != Code::FailedPrecondition || status.details().is_empty() {
        return false;
    }
    let Ok(details) = RpcStatus::decode(status.details()) else {
        return false;
    };
    details
        .details
        .iter()
        .filter(|any| any.type_url == PRECONDITION_FAILURE_TYPE)
        .filter_map(|any| PreconditionFailure::decode(any.value.as_slice()).ok())
        .any(|failure| {
            failure
                .violations
                .iter()
                .any(|v| v.r#type == "PREPARED_QUERY_EXPIRED")
        })
}

/// The [`Code`] of a tonic status. A request timeout that tonic enforces on
/// its side (the `grpc-timeout` this library sets on every attempt) comes
/// back as `CANCELLED` "Timeout expired": it is a deadline, and is reported
/// and retried as one.
pub(crate) fn code_of(status: &tonic::Status) -> Code {
    if status.code() == tonic::Code::Cancelled && status.message() == "Timeout expired" {
        return Code::DeadlineExceeded;
    }
    Code::from_i32(status.code().into())
}

/// `status` as a cause: `CODE: message`, then the transport failure under
/// it (a status tonic made of one), each level once ([`Cause`]); marked
/// unanswered when Bigtable did not send it ([`answered`]).
pub(crate) fn cause(status: impl Borrow<tonic::Status>) -> Cause {
    let status = status.borrow();
    let cause = Cause::new(
        format!("{}: {}", code_of(status), status.message()),
        status.source(),
    );
    if answered(status) || was_not_sent(status) {
        cause
    } else {
        cause.unanswered()
    }
}

/// Whether Bigtable sent `status` (a gRPC status in the answer's headers
/// or trailers), rather than the client making it of an attempt that
/// ended without one: a timeout ([`no_answer_within`]), a broken stream or
/// connection (tonic keeps the transport failure as the status's source),
/// a request never sent.
pub(crate) fn answered(status: &tonic::Status) -> bool {
    status.source().is_none()
}

/// The client's own timeout: no answer came within `timeout`.
#[derive(Debug)]
struct Unanswered;

impl std::fmt::Display for Unanswered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("no answer came")
    }
}

impl std::error::Error for Unanswered {}

/// `DEADLINE_EXCEEDED` for an attempt the client gave up on after
/// `timeout` without an answer, saying so (`message`), and marked as no
/// answer from Bigtable ([`answered`] is `false`).
pub(crate) fn no_answer_within(message: String) -> tonic::Status {
    let mut status = tonic::Status::deadline_exceeded(message);
    status.set_source(std::sync::Arc::new(Unanswered));
    status
}

/// The library cut a conditional write's attempt at its horizon.
#[derive(Debug)]
struct HorizonCut(Duration);

impl std::fmt::Display for HorizonCut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "cut by the library at the write's horizon, {:?} (WriteOptions::horizon)",
            self.0
        )
    }
}

impl std::error::Error for HorizonCut {}

/// `status` (an attempt that ended without an answer) as the library's own
/// cut at the write's horizon `horizon`.
pub(crate) fn cut_at_horizon(status: &tonic::Status, horizon: Duration) -> tonic::Status {
    let mut cut = tonic::Status::deadline_exceeded(format!(
        "no answer within the write's horizon, {horizon:?} ({})",
        status.message()
    ));
    cut.set_source(std::sync::Arc::new(HorizonCut(horizon)));
    cut
}

/// The horizon the library cut `status`'s attempt at ([`cut_at_horizon`]),
/// if it did.
pub(crate) fn horizon_of(status: &tonic::Status) -> Option<Duration> {
    status
        .source()
        .and_then(|source| source.downcast_ref::<HorizonCut>())
        .map(|cut| cut.0)
}

/// `status` as the cause of an error that already names its code: the
/// message (the code, when there is none), then the transport failure
/// under it, each level once.
pub(crate) fn cause_under_code(status: impl Borrow<tonic::Status>) -> Cause {
    let status = status.borrow();
    let text = if status.message().is_empty() {
        code_of(status).to_string()
    } else {
        status.message().to_owned()
    };
    let cause = Cause::new(text, status.source());
    if was_refused(status) {
        cause.refused()
    } else if was_not_sent(status) {
        cause.never_sent()
    } else if answered(status) {
        cause
    } else {
        cause.unanswered()
    }
}

/// Why a request was not sent: its call's deadline had passed, or no access
/// token came in time. The source of the status that says so, so that a
/// call never re-sent (a conditional write) is not taken for one whose
/// answer was lost.
#[derive(Debug)]
struct NotSent;

impl std::fmt::Display for NotSent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the request was not sent")
    }
}

impl std::error::Error for NotSent {}

/// `DEADLINE_EXCEEDED` for a request that was never sent, saying `why`.
pub(crate) fn not_sent(why: impl Into<String>) -> tonic::Status {
    let mut status = tonic::Status::deadline_exceeded(why);
    status.set_source(std::sync::Arc::new(NotSent));
    status
}

/// An answer that arrived and did not decode: the server applied the call.
#[derive(Debug)]
struct Undecodable;

impl std::fmt::Display for Undecodable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the answer arrived but does not decode")
    }
}

impl std::error::Error for Undecodable {}

/// `status` (a decoding failure) marked as an answer that arrived and did
/// not decode: see [`was_undecodable`].
pub(crate) fn undecodable(status: &tonic::Status) -> tonic::Status {
    let mut marked = tonic::Status::new(status.code(), status.message().to_owned());
    marked.set_source(std::sync::Arc::new(Undecodable));
    marked
}

/// Whether `status` is an answer that arrived and did not decode
/// ([`undecodable`]): the call was applied, its result is unknown.
pub(crate) fn was_undecodable(status: &tonic::Status) -> bool {
    status
        .source()
        .is_some_and(|source| source.downcast_ref::<Undecodable>().is_some())
}

/// Whether `status` ends a request the server refused before processing
/// any of it, which HTTP/2 guarantees (RFC 9113 §8.7): its stream reset
/// with `REFUSED_STREAM`, or above the last stream id of the `GOAWAY` that
/// closes its connection. Safe to send again, whatever the call.
pub(crate) fn was_refused(status: &tonic::Status) -> bool {
    let mut cause = status.source();
    while let Some(error) = cause {
        if let Some(h2) = error.downcast_ref::<h2::Error>() {
            return h2.is_remote()
                && (h2.is_go_away()
                    || (h2.is_reset() && h2.reason() == Some(h2::Reason::REFUSED_STREAM)));
        }
        cause = error.source();
    }
    false
}

/// Whether `status` says its request was never sent, or never processed:
/// [`not_sent`], a connection that could not be opened (refused, or no
/// such address), a stream the server refused ([`was_refused`]): nothing
/// of the request was applied, so the call is safe to send again, never
/// an unknown outcome.
pub(crate) fn was_not_sent(status: &tonic::Status) -> bool {
    if was_refused(status) {
        return true;
    }
    let mut cause = status.source();
    while let Some(error) = cause {
        if error.downcast_ref::<NotSent>().is_some() {
            return true;
        }
        if error.downcast_ref::<std::io::Error>().is_some_and(|io| {
            matches!(
                io.kind(),
                std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::AddrNotAvailable
            )
        }) {
            return true;
        }
        cause = error.source();
    }
    false
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn with_details(code: tonic::Code, details: &RpcStatus) -> tonic::Status {
        tonic::Status::with_details(code, "scripted", details.encode_to_vec().into())
    }

    fn precondition(violation: &str) -> RpcStatus {
        use googleapis_tonic_google_bigtable_v2::google::rpc::precondition_failure::Violation;
        let failure = PreconditionFailure {
            violations: vec![Violation {
                r#type: violation.to_owned(),
                ..Violation::default()
            }],
        };
        RpcStatus {
            code: 9,
            message: "failed precondition".into(),
            details: vec![prost_types::Any {
                type_url: PRECONDITION_FAILURE_TYPE.into(),
                value: failure.encode_to_vec(),
            }],
        }
    }

    #[test]
    fn an_expired_plan_is_told_from_other_failed_preconditions() {
        let expired = precondition("PREPARED_QUERY_EXPIRED");
        assert!(plan_expired(&with_details(
            tonic::Code::FailedPrecondition,
            &expired
        )));
        // The same detail under another code, another violation, no detail.
        assert!(!plan_expired(&with_details(
            tonic::Code::Unavailable,
            &expired
        )));
        let other = precondition("SOMETHING_ELSE");
        assert!(!plan_expired(&with_details(
            tonic::Code::FailedPrecondition,
            &other
        )));
        assert!(!plan_expired(&tonic::Status::failed_precondition(
            "no details"
        )));
    }

    /// A status whose details carry `RetryInfo { retry_delay }`.
    pub(crate) fn with_retry_info(code: tonic::Code, delay: Duration) -> tonic::Status {
        let info = RetryInfo {
            retry_delay: Some(prost_types::Duration {
                seconds: i64::try_from(delay.as_secs()).unwrap(),
                nanos: i32::try_from(delay.subsec_nanos()).unwrap(),
            }),
        };
        let details = RpcStatus {
            code: code as i32,
            message: "retry later".into(),
            details: vec![prost_types::Any {
                type_url: RETRY_INFO_TYPE.into(),
                value: info.encode_to_vec(),
            }],
        };
        tonic::Status::with_details(code, "retry later", details.encode_to_vec().into())
    }

    #[test]
    fn the_servers_retry_delay_is_read_from_the_details() {
        let status = with_retry_info(tonic::Code::Unavailable, Duration::from_millis(2500));
        assert_eq!(retry_delay(&status), Some(Duration::from_millis(2500)));
        assert_eq!(retry_delay(&tonic::Status::unavailable("down")), None);
        let garbage = tonic::Status::with_details(tonic::Code::Unavailable, "x", vec![0xff].into());
        assert_eq!(retry_delay(&garbage), None);
    }

    #[test]
    fn a_request_never_sent_says_so_and_is_a_deadline() {
        let status = not_sent("no time left");
        assert!(was_not_sent(&status));
        assert_eq!(code_of(&status), Code::DeadlineExceeded);
        assert_eq!(
            cause(&status).to_string(),
            "DEADLINE_EXCEEDED: no time left"
        );
        assert!(!was_not_sent(&tonic::Status::deadline_exceeded("lost")));
    }

    #[test]
    fn tonics_own_timeout_is_a_deadline() {
        assert_eq!(
            code_of(&tonic::Status::cancelled("Timeout expired")),
            Code::DeadlineExceeded
        );
        assert_eq!(
            code_of(&tonic::Status::cancelled("by the caller")),
            Code::Cancelled
        );
        assert_eq!(
            code_of(&tonic::Status::unavailable("down")),
            Code::Unavailable
        );
    }
}
