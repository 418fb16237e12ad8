//! gRPC statuses in the library's own terms: the [`Code`] of a tonic status.

use std::borrow::Borrow;
use std::error::Error as _;

use crate::model::error::{Cause, Code};

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
/// it (a status tonic made of one), each level once ([`Cause`]).
pub(crate) fn cause(status: impl Borrow<tonic::Status>) -> Cause {
    let status = status.borrow();
    Cause::new(
        format!("{}: {}", code_of(status), status.message()),
        status.source(),
    )
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
    Cause::new(text, status.source())
}

#[cfg(test)]
mod tests {
    use super::*;

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
