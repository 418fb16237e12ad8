//! Why a read failed, as the wire layer reports it.

use crate::wire::cause::Cause;
use crate::wire::status::cause_under_code;

/// Why a read failed: the server's status, or a response breaking the
/// `ReadRows` chunk protocol.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReadError {
    #[error("{0}")]
    Status(#[from] tonic::Status),
    #[error("malformed ReadRows response: {0}")]
    Protocol(String),
}

impl ReadError {
    /// The cause of the error ending the read, which names the code.
    pub(crate) fn cause(&self) -> Cause {
        match self {
            ReadError::Status(status) => cause_under_code(status),
            ReadError::Protocol(_) => Cause::new(self.to_string(), None),
        }
    }
}
