//! The gRPC status codes Bigtable answers with, and codec errors.

use std::fmt;

/// A gRPC status code, as Bigtable answers it (the codes of
/// `google.rpc.Code`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Code {
    /// Not an error.
    Ok,
    /// The call was cancelled.
    Cancelled,
    /// An unknown error (also any code this library does not know).
    Unknown,
    /// The request is invalid.
    InvalidArgument,
    /// The deadline passed before the call finished.
    DeadlineExceeded,
    /// The table (or instance) does not exist.
    NotFound,
    /// What was to be created exists.
    AlreadyExists,
    /// The credentials lack a permission.
    PermissionDenied,
    /// Throttled or out of quota: wait and retry.
    ResourceExhausted,
    /// The system is not in a state the call needs.
    FailedPrecondition,
    /// Aborted, usually by a conflict.
    Aborted,
    /// Out of the valid range.
    OutOfRange,
    /// Not implemented by the server (the emulator lacks some calls).
    Unimplemented,
    /// An internal error.
    Internal,
    /// The service is unavailable or the connection failed.
    Unavailable,
    /// Unrecoverable data loss.
    DataLoss,
    /// No valid credentials.
    Unauthenticated,
}

impl Code {
    /// Whether the code says the request may succeed if sent again (for
    /// an idempotent request): `UNAVAILABLE`, `DEADLINE_EXCEEDED`,
    /// `ABORTED`, and `RESOURCE_EXHAUSTED` (Bigtable's answer when it
    /// throttles a client: waiting and retrying is what it asks for).
    #[must_use]
    pub fn is_transient(self) -> bool {
        matches!(
            self,
            Code::Unavailable | Code::DeadlineExceeded | Code::Aborted | Code::ResourceExhausted
        )
    }

    /// The code numbered `code` in `google.rpc.Code` ([`Code::Unknown`] for
    /// a number it does not define).
    #[must_use]
    pub fn from_i32(code: i32) -> Self {
        const CODES: [Code; 17] = [
            Code::Ok,
            Code::Cancelled,
            Code::Unknown,
            Code::InvalidArgument,
            Code::DeadlineExceeded,
            Code::NotFound,
            Code::AlreadyExists,
            Code::PermissionDenied,
            Code::ResourceExhausted,
            Code::FailedPrecondition,
            Code::Aborted,
            Code::OutOfRange,
            Code::Unimplemented,
            Code::Internal,
            Code::Unavailable,
            Code::DataLoss,
            Code::Unauthenticated,
        ];
        usize::try_from(code)
            .ok()
            .and_then(|i| CODES.get(i).copied())
            .unwrap_or(Code::Unknown)
    }

    /// The code's name as gRPC spells it (`UNAVAILABLE`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Ok => "OK",
            Code::Cancelled => "CANCELLED",
            Code::Unknown => "UNKNOWN",
            Code::InvalidArgument => "INVALID_ARGUMENT",
            Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
            Code::NotFound => "NOT_FOUND",
            Code::AlreadyExists => "ALREADY_EXISTS",
            Code::PermissionDenied => "PERMISSION_DENIED",
            Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
            Code::FailedPrecondition => "FAILED_PRECONDITION",
            Code::Aborted => "ABORTED",
            Code::OutOfRange => "OUT_OF_RANGE",
            Code::Unimplemented => "UNIMPLEMENTED",
            Code::Internal => "INTERNAL",
            Code::Unavailable => "UNAVAILABLE",
            Code::DataLoss => "DATA_LOSS",
            Code::Unauthenticated => "UNAUTHENTICATED",
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a value could not be turned into cell bytes or back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CodecError {
    /// A fixed-width value had the wrong number of bytes.
    #[error("expected {expected} bytes, found {actual}")]
    WrongWidth {
        /// Bytes the type needs.
        expected: usize,
        /// Bytes the cell holds.
        actual: usize,
    },
    /// A `String` field's cell is not UTF-8.
    #[error("cell is not valid UTF-8: {0}")]
    InvalidUtf8(String),
    /// A `bool` cell holds something other than 0 or 1.
    #[error("expected a boolean byte 0 or 1, found {0}")]
    InvalidBool(u8),
    /// A timestamp value outside chrono's range.
    #[error("timestamp {0} µs is out of range")]
    TimestampOutOfRange(i64),
    /// A required column is absent from a row that has other live cells.
    #[error("required column is missing")]
    Missing,
    /// The row is live by the struct's marker alone, and the marker's
    /// fingerprint says its writer shares none of this struct's column or
    /// map names (see `crate::liveness`): another struct writing the same
    /// marker (two structs of one name in two programs), or a version of
    /// this struct whose every column has changed since. The row is not
    /// read as this struct's; the column named is the marker.
    #[error(
        "the row marker's writer shares none of this struct's column or map names: another \
         struct writing the same marker (give one of the two its own with \
         #[bigtable(marker = \"...\")]), or an earlier version of this struct whose columns \
         have all changed since (keep one of their names, with #[bigtable(column = \"...\")])"
    )]
    WrittenByAnotherStruct,
    /// The JSON codec failed.
    #[error("JSON: {0}")]
    Json(String),
    /// A cell of a `#[derive(CellCodec)]` enum holds a name or number that
    /// is none of its variants: written by a newer version of the enum, or
    /// by hand. Add the variant (or a `rename`), or rewrite the cell.
    #[error("`{enum_name}` has no variant stored as {value}; add one (or a `rename`) to the enum, or rewrite the cell")]
    UnknownVariant {
        /// The enum.
        enum_name: &'static str,
        /// The stored value: a quoted, escaped name or a number.
        value: String,
    },
    /// A user codec's own error.
    #[error("{0}")]
    Custom(String),
}
