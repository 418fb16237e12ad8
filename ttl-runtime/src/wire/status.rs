//! gRPC statuses in the library's own terms: the [`Code`] of a tonic status.

use crate::model::error::Code;

/// The [`Code`] of a tonic status.
pub(crate) fn code_of(status: &tonic::Status) -> Code {
    Code::from_i32(status.code().into())
}
