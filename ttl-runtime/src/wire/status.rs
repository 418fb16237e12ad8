//! gRPC statuses in the library's own terms: the [`Code`] of a tonic status.

use crate::model::error::Code;

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
