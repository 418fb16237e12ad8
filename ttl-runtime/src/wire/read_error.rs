//! Why a read failed, as the wire layer reports it.

/// Why a read failed: the server's status, or a response breaking the
/// `ReadRows` chunk protocol.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReadError {
    #[error("{0}")]
    Status(#[from] tonic::Status),
    #[error("malformed ReadRows response: {0}")]
    Protocol(String),
}
