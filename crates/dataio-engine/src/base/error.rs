//! The one error type of the engine. Every variant says what failed and where
//! (URI, byte range, record, slot, op); the Python layer maps each variant to
//! one class of the `dataio.DataioError` tree.

use std::fmt;

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Where in a pipeline a row-level failure happened.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RowContext {
    /// The record's key (its `key` field, or its index when it has none).
    pub key: String,
    /// Position of the record in the epoch's global order.
    pub index: u64,
    pub slot: String,
    pub op: String,
    /// The URI the slot read, when it read one.
    pub uri: Option<String>,
}

impl fmt::Display for RowContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "record {:?} (index {}), slot {:?}, op {}", self.key, self.index, self.slot, self.op)?;
        if let Some(uri) = &self.uri {
            write!(f, ", uri {uri}")?;
        }
        Ok(())
    }
}

/// The broad category an error belongs to; it decides the Python class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    NotFound,
    PermissionDenied,
    IsADirectory,
    NotADirectory,
    AlreadyExists,
    InvalidArgument,
    InvalidUri,
    UnsupportedScheme,
    OutOfRange,
    Corrupt,
    Decode,
    Plan,
    Io,
    Backend,
    Timeout,
    /// The connection to a store failed or was lost (transient).
    Connection,
    Cancelled,
    Row,
    Unsupported,
}

impl ErrorKind {
    pub const ALL: [ErrorKind; 19] = [
        ErrorKind::NotFound,
        ErrorKind::PermissionDenied,
        ErrorKind::IsADirectory,
        ErrorKind::NotADirectory,
        ErrorKind::AlreadyExists,
        ErrorKind::InvalidArgument,
        ErrorKind::InvalidUri,
        ErrorKind::UnsupportedScheme,
        ErrorKind::OutOfRange,
        ErrorKind::Corrupt,
        ErrorKind::Decode,
        ErrorKind::Plan,
        ErrorKind::Io,
        ErrorKind::Backend,
        ErrorKind::Timeout,
        ErrorKind::Connection,
        ErrorKind::Cancelled,
        ErrorKind::Row,
        ErrorKind::Unsupported,
    ];

    /// The kind's name across the binding: the Python class of an error is
    /// the one whose `kind` attribute says this (`dataio.errors.BY_KIND`).
    /// IO and backend failures are one kind there (a storage error).
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::NotFound => "not_found",
            ErrorKind::PermissionDenied => "permission_denied",
            ErrorKind::IsADirectory => "is_a_directory",
            ErrorKind::NotADirectory => "not_a_directory",
            ErrorKind::AlreadyExists => "already_exists",
            ErrorKind::InvalidArgument => "invalid_argument",
            ErrorKind::InvalidUri => "invalid_uri",
            ErrorKind::UnsupportedScheme => "unsupported_scheme",
            ErrorKind::OutOfRange => "out_of_range",
            ErrorKind::Corrupt => "corrupt",
            ErrorKind::Decode => "decode",
            ErrorKind::Plan => "plan",
            ErrorKind::Io | ErrorKind::Backend => "backend",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Connection => "connection",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Row => "row",
            ErrorKind::Unsupported => "unsupported",
        }
    }

    pub fn from_name(name: &str) -> Option<ErrorKind> {
        ErrorKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("not found: {uri}{}", suffix(detail))]
    NotFound { uri: String, detail: String },

    #[error("permission denied: {uri}{}", suffix(detail))]
    PermissionDenied { uri: String, detail: String },

    #[error("is a directory, not a file: {uri}")]
    IsADirectory { uri: String },

    #[error("not a directory: {uri}")]
    NotADirectory { uri: String },

    #[error("already exists: {uri}")]
    AlreadyExists { uri: String },

    #[error("{0}")]
    InvalidArgument(String),

    #[error("invalid URI {uri:?}: {reason}")]
    InvalidUri { uri: String, reason: String },

    #[error("no backend is registered for scheme {scheme:?} (in {uri:?}){}", hint.as_ref().map(|h| format!("; {h}")).unwrap_or_default())]
    UnsupportedScheme { scheme: String, uri: String, hint: Option<String> },

    #[error("{uri}: byte range [{offset}, {end}) lies beyond the end of the object ({len} bytes)", end = offset.saturating_add(*size))]
    OutOfRange { uri: String, offset: u64, size: u64, len: u64 },

    #[error("{uri}: corrupt {what}: {detail}")]
    Corrupt { uri: String, what: String, detail: String },

    #[error("{op}: cannot decode: {detail}")]
    Decode { op: String, detail: String },

    /// An encoder (`encode_image`) refused its input: a data error of the
    /// row, like [`Error::Decode`].
    #[error("{op}: cannot encode: {detail}")]
    Encode { op: String, detail: String },

    #[error("invalid plan: {0}")]
    Plan(String),

    #[error("{uri}: {source}")]
    Io {
        uri: String,
        #[source]
        source: std::io::Error,
    },

    #[error("{uri}: {detail}")]
    Backend { uri: String, detail: String, transient: bool },

    /// `seconds` is NaN where the limit is not known here (a plugin's).
    #[error("{what}{}", timed_out_after(*seconds))]
    Timeout { what: String, seconds: f64 },

    #[error("cancelled")]
    Cancelled,

    #[error("{uri}: {what} is not supported by this backend")]
    Unsupported { uri: String, what: String },

    #[error("{context}: {source}")]
    Row {
        context: Box<RowContext>,
        #[source]
        source: Box<Error>,
    },

    /// The store refused a byte range (a plugin that cannot say the length).
    #[error("{uri}: byte range not satisfiable: {detail}")]
    RangeNotSatisfiable { uri: String, detail: String },

    /// An error raised by foreign code (a Python backend or op); the binding
    /// layer stores its own exception object in `payload` and chains it as
    /// the cause of the dataio exception it raises.
    #[error("{}{message}", uri.as_ref().map(|u| format!("{u}: ")).unwrap_or_default())]
    Foreign { kind: ErrorKind, message: String, uri: Option<String>, payload: ForeignPayload },
}

fn timed_out_after(seconds: f64) -> String {
    if seconds.is_finite() {
        format!(" timed out after {seconds:.1}s")
    } else {
        String::new()
    }
}

fn suffix(detail: &str) -> String {
    if detail.is_empty() {
        String::new()
    } else {
        format!(" ({detail})")
    }
}

/// An opaque, shareable payload carried through the engine unchanged.
#[derive(Clone)]
pub struct ForeignPayload(pub std::sync::Arc<dyn std::any::Any + Send + Sync>);

impl fmt::Debug for ForeignPayload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ForeignPayload(..)")
    }
}

impl Error {
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::NotFound { .. } => ErrorKind::NotFound,
            Error::PermissionDenied { .. } => ErrorKind::PermissionDenied,
            Error::IsADirectory { .. } => ErrorKind::IsADirectory,
            Error::NotADirectory { .. } => ErrorKind::NotADirectory,
            Error::AlreadyExists { .. } => ErrorKind::AlreadyExists,
            Error::InvalidArgument(_) => ErrorKind::InvalidArgument,
            Error::InvalidUri { .. } => ErrorKind::InvalidUri,
            Error::UnsupportedScheme { .. } => ErrorKind::UnsupportedScheme,
            Error::OutOfRange { .. } | Error::RangeNotSatisfiable { .. } => ErrorKind::OutOfRange,
            Error::Corrupt { .. } => ErrorKind::Corrupt,
            Error::Decode { .. } | Error::Encode { .. } => ErrorKind::Decode,
            Error::Plan(_) => ErrorKind::Plan,
            Error::Io { .. } => ErrorKind::Io,
            Error::Backend { .. } => ErrorKind::Backend,
            Error::Timeout { .. } => ErrorKind::Timeout,
            Error::Cancelled => ErrorKind::Cancelled,
            Error::Unsupported { .. } => ErrorKind::Unsupported,
            Error::Row { .. } => ErrorKind::Row,
            Error::Foreign { kind, .. } => *kind,
        }
    }

    pub fn invalid(msg: impl Into<String>) -> Self {
        Error::InvalidArgument(msg.into())
    }

    pub fn corrupt(uri: impl Into<String>, what: impl Into<String>, detail: impl fmt::Display) -> Self {
        Error::Corrupt { uri: uri.into(), what: what.into(), detail: detail.to_string() }
    }

    pub fn decode(op: impl Into<String>, detail: impl fmt::Display) -> Self {
        Error::Decode { op: op.into(), detail: detail.to_string() }
    }

    pub fn encode(op: impl Into<String>, detail: impl fmt::Display) -> Self {
        Error::Encode { op: op.into(), detail: detail.to_string() }
    }

    /// Maps an OS error on `uri` to the variant a caller can act on.
    pub fn from_io(uri: impl Into<String>, err: std::io::Error) -> Self {
        use std::io::ErrorKind as K;
        let uri = uri.into();
        match err.kind() {
            K::NotFound => Error::NotFound { uri, detail: String::new() },
            K::PermissionDenied | K::ReadOnlyFilesystem => Error::PermissionDenied { uri, detail: err.to_string() },
            K::IsADirectory => Error::IsADirectory { uri },
            K::NotADirectory => Error::NotADirectory { uri },
            K::AlreadyExists => Error::AlreadyExists { uri },
            _ => Error::Io { uri, source: err },
        }
    }

    /// Wraps this error with the row it happened in (idempotent: a row error
    /// keeps its first, innermost context).
    pub fn in_row(self, context: RowContext) -> Self {
        match self {
            Error::Row { .. } => self,
            other => Error::Row { context: Box::new(context), source: Box::new(other) },
        }
    }

    /// The row context, when this is a row error.
    pub fn row_context(&self) -> Option<&RowContext> {
        match self {
            Error::Row { context, .. } => Some(context),
            _ => None,
        }
    }

    /// The innermost cause of a row error (itself otherwise).
    pub fn root(&self) -> &Error {
        match self {
            Error::Row { source, .. } => source.root(),
            other => other,
        }
    }

    /// The URI this error names, when it names one.
    pub fn uri(&self) -> Option<&str> {
        match self {
            Error::NotFound { uri, .. }
            | Error::PermissionDenied { uri, .. }
            | Error::IsADirectory { uri }
            | Error::NotADirectory { uri }
            | Error::AlreadyExists { uri }
            | Error::InvalidUri { uri, .. }
            | Error::UnsupportedScheme { uri, .. }
            | Error::OutOfRange { uri, .. }
            | Error::RangeNotSatisfiable { uri, .. }
            | Error::Corrupt { uri, .. }
            | Error::Io { uri, .. }
            | Error::Backend { uri, .. }
            | Error::Unsupported { uri, .. } => Some(uri),
            Error::Row { context, source } => context.uri.as_deref().or_else(|| source.uri()),
            Error::Foreign { uri, .. } => uri.as_deref(),
            _ => None,
        }
    }

    /// Whether retrying the same request may succeed.
    pub fn is_transient(&self) -> bool {
        matches!(self, Error::Backend { transient: true, .. } | Error::Timeout { .. })
            || matches!(self, Error::Foreign { kind: ErrorKind::Timeout | ErrorKind::Connection, .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_map_to_actionable_variants() {
        let e = Error::from_io("/x", std::io::Error::from(std::io::ErrorKind::NotFound));
        assert_eq!(e.kind(), ErrorKind::NotFound);
        assert_eq!(e.uri(), Some("/x"));
        let e = Error::from_io("/y", std::io::Error::from(std::io::ErrorKind::PermissionDenied));
        assert_eq!(e.kind(), ErrorKind::PermissionDenied);
    }

    #[test]
    fn row_context_is_kept_once_and_names_everything() {
        let ctx = RowContext {
            key: "k1".into(),
            index: 7,
            slot: "image".into(),
            op: "decode_image".into(),
            uri: Some("/a.jpg".into()),
        };
        let e = Error::decode("decode_image", "not a JPEG").in_row(ctx.clone());
        let again = e.in_row(RowContext { key: "other".into(), ..ctx });
        let msg = again.to_string();
        assert!(
            msg.contains("\"k1\"") && msg.contains("image") && msg.contains("decode_image") && msg.contains("/a.jpg"),
            "{msg}"
        );
        assert_eq!(again.root().kind(), ErrorKind::Decode);
        assert_eq!(again.uri(), Some("/a.jpg"));
    }

    #[test]
    fn out_of_range_message_gives_the_range() {
        let e = Error::OutOfRange { uri: "f".into(), offset: 10, size: 5, len: 12 };
        assert_eq!(e.to_string(), "f: byte range [10, 15) lies beyond the end of the object (12 bytes)");
    }
}
