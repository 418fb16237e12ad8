//! How the library's results become the `google.rpc.Status` every proxy
//! result carries: the gRPC code the library reports, and its whole error
//! chain as the message (the suite reads some of it: "increasing" in an
//! out-of-order error).

use bigtable_ttl::{Code, Error};

use crate::pb::rpc::Status;

/// `OK`, no message.
pub(crate) fn ok() -> Status {
    Status::default()
}

/// The status of `error`: its code (`UNKNOWN` for an error of the library
/// that carries none) and each level of its chain.
pub(crate) fn of(error: &Error) -> Status {
    Status {
        code: number(error.code().unwrap_or(Code::Unknown)),
        message: chain(error),
        details: Vec::new(),
    }
}

/// A status with `code` and `message`.
pub(crate) fn with(code: Code, message: impl Into<String>) -> Status {
    Status {
        code: number(code),
        message: message.into(),
        details: Vec::new(),
    }
}

/// `google.rpc.Code`'s number for `code`.
pub(crate) fn number(code: Code) -> i32 {
    (0..=16).find(|&n| Code::from_i32(n) == code).unwrap_or(2)
}

/// Each level of `error`'s chain, `: `-separated.
fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    std::iter::successors(Some(error), |e| e.source())
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_googles_numbers() {
        assert_eq!(number(Code::Ok), 0);
        assert_eq!(number(Code::DeadlineExceeded), 4);
        assert_eq!(number(Code::Unavailable), 14);
        assert_eq!(number(Code::Unauthenticated), 16);
    }
}
