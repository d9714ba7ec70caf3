//! The storage backend contract and the scheme registry.
//!
//! A backend owns one or more URI schemes and implements [`Backend`]. The core
//! ships the local-file backend; plugins add others, either natively (through
//! the C ABI in `dataio-abi`, adapted by [`crate::io::abi_backend`]) or in Python
//! (adapted by the binding layer). Everything above this module — the IO verbs,
//! the executor, the format readers — talks to `dyn Backend` only.

use crate::base::error::{Error, Result};
use async_trait::async_trait;
use bytes::Bytes;

/// What a `head` or a listing says about one object.
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectMeta {
    pub uri: String,
    pub size: u64,
    /// Seconds since the Unix epoch, when the store reports it.
    pub mtime: Option<f64>,
    pub etag: Option<String>,
    /// A directory (local) or a common prefix (object stores).
    pub is_dir: bool,
}

/// What a backend can do and what its reads cost. The conformance suite
/// skips exactly what a backend declares it cannot do; the IO verbs, the
/// ranged-read planner and the executor choose their read path from these
/// flags, never from a backend's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    pub write: bool,
    pub delete: bool,
    pub list: bool,
    pub ranged_read: bool,
    /// Reads are slices of memory the process can map (local files): a
    /// request costs nothing and completes without waiting on a network. So
    /// ranges are read exactly as asked (no coalescing, no parts), a whole
    /// object is read by its cheaply known size, and the executor reads
    /// inline on its CPU threads instead of on the IO runtime.
    pub mapped: bool,
}

impl Capabilities {
    /// Everything a remote object store offers.
    pub const ALL: Capabilities =
        Capabilities { write: true, delete: true, list: true, ranged_read: true, mapped: false };
    pub const READ_ONLY: Capabilities =
        Capabilities { write: false, delete: false, list: true, ranged_read: true, mapped: false };

    pub fn names(&self) -> Vec<&'static str> {
        let mut out = vec!["read", "head", "exists"];
        if self.ranged_read {
            out.push("ranged_read");
        }
        if self.list {
            out.extend(["list", "glob"]);
        }
        if self.write {
            out.extend(["write", "streaming_write"]);
        }
        if self.delete {
            out.push("delete");
        }
        if self.mapped {
            out.push("mapped");
        }
        out
    }
}

/// The result of a completed write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PutResult {
    /// A content-derived tag (local: BLAKE3 of the bytes; object stores: their ETag).
    pub etag: String,
    pub size: u64,
}

/// A streaming write in progress. Nothing is visible at the destination until
/// `commit`; `abort` (or dropping without commit) leaves no trace.
#[async_trait]
pub trait ObjectWriter: Send {
    async fn write(&mut self, data: Bytes) -> Result<()>;
    async fn commit(self: Box<Self>) -> Result<PutResult>;
    async fn abort(self: Box<Self>) -> Result<()>;
}

/// One storage backend. All methods take full URIs (`s3://bucket/key`).
///
/// Ranged reads are exact: a range that does not lie wholly inside the object
/// is an [`Error::OutOfRange`], never a short read.
#[async_trait]
pub trait Backend: Send + Sync + 'static {
    /// A short name for messages and the capability report ("local", "dataio-s3").
    fn name(&self) -> &str;
    fn capabilities(&self) -> Capabilities {
        Capabilities::ALL
    }
    async fn head(&self, uri: &str) -> Result<ObjectMeta>;
    async fn read_range(&self, uri: &str, offset: u64, size: u64) -> Result<Bytes>;
    async fn read_all(&self, uri: &str) -> Result<Bytes>;
    /// Fills `dst` from `offset`; returns the bytes written (always `dst.len()`).
    async fn read_into(&self, uri: &str, offset: u64, dst: &mut [u8]) -> Result<usize> {
        let bytes = self.read_range(uri, offset, dst.len() as u64).await?;
        dst[..bytes.len()].copy_from_slice(&bytes);
        Ok(bytes.len())
    }
    async fn put(&self, uri: &str, data: Bytes) -> Result<PutResult> {
        let mut w = self.open_writer(uri).await?;
        if let Err(e) = w.write(data).await {
            let _ = w.abort().await;
            return Err(e);
        }
        w.commit().await
    }
    async fn open_writer(&self, uri: &str) -> Result<Box<dyn ObjectWriter>>;
    /// Lists under `prefix`: direct children (with directories / common
    /// prefixes marked `is_dir`) or, when `recursive`, every object below.
    async fn list(&self, prefix: &str, recursive: bool) -> Result<Vec<ObjectMeta>>;
    async fn exists(&self, uri: &str) -> Result<bool>;
    async fn delete(&self, uri: &str) -> Result<()>;
}

/// Returns the prefix of a glob pattern that holds no wildcard, cut back to
/// the last `/`, and whether matching needs a recursive listing.
pub fn glob_base(pattern: &str) -> (&str, bool) {
    let first_meta = pattern.find(['*', '?', '[', '{']).unwrap_or(pattern.len());
    let base_end = pattern[..first_meta].rfind('/').map(|i| i + 1).unwrap_or(0);
    let rest = &pattern[base_end..];
    (&pattern[..base_end], rest.contains('/') || rest.contains("**"))
}

/// Expands a glob (`*` within one path segment, `**` across segments, `?`,
/// `[..]`, `{a,b}`) against any backend that can list. Sorted.
pub async fn glob(backend: &dyn Backend, pattern: &str) -> Result<Vec<ObjectMeta>> {
    let (base, recursive) = glob_base(pattern);
    if base.len() == pattern.len() {
        // No wildcard: the pattern names one object.
        return Ok(match backend.head(pattern).await {
            Ok(meta) if !meta.is_dir => vec![meta],
            Ok(_) => vec![],
            Err(e) if e.kind() == crate::base::error::ErrorKind::NotFound => vec![],
            Err(e) => return Err(e),
        });
    }
    let matcher = globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|e| Error::invalid(format!("bad glob pattern {pattern:?}: {e}")))?
        .compile_matcher();
    let listing = match backend.list(if base.is_empty() { "." } else { base }, recursive).await {
        Ok(v) => v,
        Err(e) if e.kind() == crate::base::error::ErrorKind::NotFound => return Ok(vec![]),
        Err(e) => return Err(e),
    };
    let mut out: Vec<ObjectMeta> =
        listing.into_iter().filter(|m| !m.is_dir && matcher.is_match(display_path(base, &m.uri))).collect();
    out.sort_by(|a, b| a.uri.cmp(&b.uri));
    Ok(out)
}

/// Listing a relative base (`""`) yields `./x` paths on some backends; match
/// them as the user wrote the pattern.
fn display_path<'a>(base: &str, uri: &'a str) -> &'a str {
    if base.is_empty() {
        uri.strip_prefix("./").unwrap_or(uri)
    } else {
        uri
    }
}

/// How a read of `[offset, offset + size)` (`size` None: to the end) goes out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadShape {
    /// The whole object in one request, no HEAD first (a HEAD per object
    /// doubled the per-object cost of small reads from an object store).
    Whole,
    /// Exactly this many bytes from the offset.
    Span(u64),
}

/// The read policy of the IO verbs: a whole object from a backend whose
/// requests cost something is one GET; anything else is an exact span (its
/// length from a HEAD when not given).
pub async fn read_shape(b: &dyn Backend, uri: &str, offset: u64, size: Option<u64>) -> Result<ReadShape> {
    if offset == 0 && size.is_none() && !b.capabilities().mapped {
        return Ok(ReadShape::Whole);
    }
    span_of(b, uri, offset, size).await.map(ReadShape::Span)
}

/// The exact length of `[offset, offset + size)`, from a HEAD when `size` is
/// not given (the rest of the object).
pub async fn span_of(b: &dyn Backend, uri: &str, offset: u64, size: Option<u64>) -> Result<u64> {
    if let Some(s) = size {
        return Ok(s);
    }
    let meta = b.head(uri).await?;
    if meta.is_dir {
        return Err(Error::IsADirectory { uri: uri.to_string() });
    }
    if offset > meta.size {
        return Err(Error::OutOfRange { uri: uri.to_string(), offset, size: 0, len: meta.size });
    }
    Ok(meta.size - offset)
}

/// The whole object; a missing one that is a prefix (object stores) or a
/// directory says so.
pub async fn read_whole(b: &dyn Backend, uri: &str) -> Result<Bytes> {
    match b.read_all(uri).await {
        Err(e) if e.kind() == crate::base::error::ErrorKind::NotFound => match b.head(uri).await {
            Ok(meta) if meta.is_dir => Err(Error::IsADirectory { uri: uri.to_string() }),
            _ => Err(e),
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_base_finds_the_static_prefix() {
        assert_eq!(glob_base("s3://b/x/*.jpg"), ("s3://b/x/", false));
        assert_eq!(glob_base("s3://b/**/*.st"), ("s3://b/", true));
        assert_eq!(glob_base("/d/a*/b.txt"), ("/d/", true));
        assert_eq!(glob_base("*.txt"), ("", false));
    }
}
