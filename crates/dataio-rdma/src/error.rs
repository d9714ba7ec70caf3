//! The crate's one error type. Each variant picks the `dataio.errors` class
//! the Python layer raises; messages name what failed and where, never the
//! shared token.

/// Which `dataio.errors` class an error becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// libfabric could not be loaded, or no provider matches.
    Unavailable,
    InvalidArgument,
    OutOfRange,
    AccessDenied,
    Timeout,
    /// The peer went away, or the connection broke earlier.
    Disconnected,
    /// A libfabric call failed.
    Fabric,
    /// The handshake peer is not a dataio-rdma server or client.
    Protocol,
    /// The handle was closed.
    Closed,
    Io,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Unavailable(String),
    #[error("{0}")]
    InvalidArgument(String),
    #[error("{message}")]
    OutOfRange { message: String, offset: u64, size: u64, length: u64 },
    #[error("{0}")]
    AccessDenied(String),
    #[error("{0}")]
    Timeout(String),
    #[error("{0}")]
    Disconnected(String),
    #[error("{0}")]
    Fabric(String),
    #[error("{0}")]
    Protocol(String),
    #[error("{0}")]
    Closed(String),
    #[error("{0}")]
    Io(String),
}

impl Error {
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Unavailable(_) => ErrorKind::Unavailable,
            Error::InvalidArgument(_) => ErrorKind::InvalidArgument,
            Error::OutOfRange { .. } => ErrorKind::OutOfRange,
            Error::AccessDenied(_) => ErrorKind::AccessDenied,
            Error::Timeout(_) => ErrorKind::Timeout,
            Error::Disconnected(_) => ErrorKind::Disconnected,
            Error::Fabric(_) => ErrorKind::Fabric,
            Error::Protocol(_) => ErrorKind::Protocol,
            Error::Closed(_) => ErrorKind::Closed,
            Error::Io(_) => ErrorKind::Io,
        }
    }

    /// The same error with `context: ` in front of its message.
    pub fn context(self, context: &str) -> Error {
        let wrap = |m: String| format!("{context}: {m}");
        match self {
            Error::Unavailable(m) => Error::Unavailable(wrap(m)),
            Error::InvalidArgument(m) => Error::InvalidArgument(wrap(m)),
            Error::OutOfRange { message, offset, size, length } => {
                Error::OutOfRange { message: wrap(message), offset, size, length }
            }
            Error::AccessDenied(m) => Error::AccessDenied(wrap(m)),
            Error::Timeout(m) => Error::Timeout(wrap(m)),
            Error::Disconnected(m) => Error::Disconnected(wrap(m)),
            Error::Fabric(m) => Error::Fabric(wrap(m)),
            Error::Protocol(m) => Error::Protocol(wrap(m)),
            Error::Closed(m) => Error::Closed(wrap(m)),
            Error::Io(m) => Error::Io(wrap(m)),
        }
    }

    /// An IO error of the handshake socket, as the matching kind.
    pub fn from_io(what: &str, e: std::io::Error) -> Error {
        use std::io::ErrorKind as K;
        match e.kind() {
            K::WouldBlock | K::TimedOut => Error::Timeout(format!("{what}: timed out")),
            K::UnexpectedEof | K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe => {
                Error::Disconnected(format!("{what}: the peer closed the connection ({e})"))
            }
            K::ConnectionRefused => Error::Disconnected(format!("{what}: connection refused ({e})")),
            _ => Error::Io(format!("{what}: {e}")),
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;
