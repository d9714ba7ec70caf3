//! URI parsing: a scheme (`s3://bucket/key`) or a local path (`/a/b`, `rel/b`,
//! `file:///a/b`). Only the scheme is interpreted here; the rest belongs to the
//! backend that owns the scheme.

use crate::base::error::{Error, Result};
use std::path::PathBuf;

/// A URI split into the part the core understands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A path on the local filesystem.
    Local(PathBuf),
    /// An object behind a scheme-owning backend. `scheme` is lower-case.
    Remote { scheme: String },
}

/// Splits `uri` into its target, refusing malformed input with a message that
/// says what is wrong.
pub fn parse(uri: &str) -> Result<Target> {
    let bad = |reason: &str| Error::InvalidUri { uri: uri.to_string(), reason: reason.to_string() };
    if uri.is_empty() {
        return Err(bad("empty URI"));
    }
    if uri.contains('\0') {
        return Err(bad("contains a NUL byte"));
    }
    match scheme_of(uri) {
        None => {
            if uri.contains("://") {
                return Err(bad("the scheme must start with a letter and hold only letters, digits, '+', '-' or '.'"));
            }
            Ok(Target::Local(PathBuf::from(uri)))
        }
        Some(scheme) => {
            let scheme = scheme.to_ascii_lowercase();
            let rest = &uri[scheme.len() + 3..];
            if scheme == "file" {
                let path = rest.strip_prefix("localhost").unwrap_or(rest);
                if !path.starts_with('/') {
                    return Err(bad("file:// URIs take an absolute path (file:///abs/path)"));
                }
                return Ok(Target::Local(PathBuf::from(path)));
            }
            if rest.is_empty() {
                return Err(bad("nothing after the scheme"));
            }
            Ok(Target::Remote { scheme })
        }
    }
}

/// The scheme of `uri` when it has a well-formed one (`s3` for `s3://b/k`).
pub fn scheme_of(uri: &str) -> Option<&str> {
    let idx = uri.find("://")?;
    let scheme = &uri[..idx];
    let mut chars = scheme.chars();
    let first = chars.next()?;
    if !first.is_ascii_alphabetic() {
        return None;
    }
    if chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')) {
        Some(scheme)
    } else {
        None
    }
}

/// Splits `scheme://bucket/key` into `(bucket, key)`; the key may be empty.
pub fn bucket_and_key(uri: &str) -> Result<(&str, &str)> {
    let scheme =
        scheme_of(uri).ok_or_else(|| Error::InvalidUri { uri: uri.into(), reason: "missing scheme".into() })?;
    let rest = &uri[scheme.len() + 3..];
    let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
    if bucket.is_empty() {
        return Err(Error::InvalidUri { uri: uri.into(), reason: "missing bucket/container name".into() });
    }
    Ok((bucket, key))
}

/// Joins a directory-like URI and a child name with exactly one `/`.
pub fn join(base: &str, child: &str) -> String {
    if base.ends_with('/') {
        format!("{base}{child}")
    } else {
        format!("{base}/{child}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_paths_and_file_uris() {
        assert_eq!(parse("/a/b").unwrap(), Target::Local("/a/b".into()));
        assert_eq!(parse("rel/b").unwrap(), Target::Local("rel/b".into()));
        assert_eq!(parse("file:///a/b").unwrap(), Target::Local("/a/b".into()));
        assert_eq!(parse("file://localhost/a").unwrap(), Target::Local("/a".into()));
        assert!(parse("file://rel").is_err());
    }

    #[test]
    fn remote_schemes_are_lowercased() {
        assert_eq!(parse("S3://b/k").unwrap(), Target::Remote { scheme: "s3".into() });
        assert_eq!(parse("hf://datasets/a/b@main/x").unwrap(), Target::Remote { scheme: "hf".into() });
    }

    #[test]
    fn malformed_uris_are_refused_with_a_reason() {
        for bad in ["", "s3://", "1x://a", "://a", "a b://c", "x\0y"] {
            let err = parse(bad).unwrap_err();
            assert!(matches!(err, Error::InvalidUri { .. }), "{bad:?} -> {err}");
        }
    }

    #[test]
    fn bucket_and_key_split() {
        assert_eq!(bucket_and_key("s3://b/k/x").unwrap(), ("b", "k/x"));
        assert_eq!(bucket_and_key("s3://b").unwrap(), ("b", ""));
        assert!(bucket_and_key("s3:///k").is_err());
    }
}
