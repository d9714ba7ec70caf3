//! From object_store errors to ABI status codes and messages that name the
//! scheme, bucket and key — and never a secret.

use dataio_abi::{status, AbiError};
use object_store::client::{HttpError, HttpErrorKind};
use std::sync::{Arc, RwLock};

/// Scrubs secrets out of messages: every credential value this backend was
/// given or fetched, and the query string of any URL (SAS tokens and
/// presigned signatures travel there).
#[derive(Debug, Clone, Default)]
pub struct Redactor(Arc<RwLock<Vec<String>>>);

impl Redactor {
    /// Remembers a secret value (values shorter than 4 bytes would scrub
    /// ordinary words, and are not worth a guess anyway).
    pub fn add(&self, secret: &str) {
        if secret.len() < 4 {
            return;
        }
        let mut v = self.0.write().unwrap_or_else(|p| p.into_inner());
        if !v.iter().any(|s| s == secret) {
            v.push(secret.to_string());
        }
    }

    pub fn clean(&self, msg: &str) -> String {
        let mut out = strip_url_queries(msg);
        for s in self.0.read().unwrap_or_else(|p| p.into_inner()).iter() {
            if out.contains(s.as_str()) {
                out = out.replace(s.as_str(), "***");
            }
        }
        out
    }
}

/// `https://h/p?sig=...&se=...` becomes `https://h/p?…`.
fn strip_url_queries(msg: &str) -> String {
    let mut out = String::with_capacity(msg.len());
    let mut rest = msg;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        let end = tail.find(|c: char| c.is_whitespace() || c == '"' || c == '\'' || c == '>').unwrap_or(tail.len());
        let url = &tail[..end];
        match url.find('?') {
            Some(q) => {
                out.push_str(&url[..q]);
                out.push_str("?…");
            }
            None => out.push_str(url),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// Where a request went, for messages.
pub(crate) struct Place<'a> {
    pub bucket_word: &'static str,
    pub bucket: &'a str,
    pub key: &'a str,
}

impl Place<'_> {
    fn describe(&self) -> String {
        if self.key.is_empty() {
            format!("{} {:?}", self.bucket_word, self.bucket)
        } else {
            format!("{} {:?}, key {:?}", self.bucket_word, self.bucket, self.key)
        }
    }
}

/// The HTTP status and transport failure somewhere in an error's chain.
fn classify(err: &(dyn std::error::Error + 'static)) -> (Option<u16>, Option<HttpErrorKind>) {
    let mut status = None;
    let mut kind = None;
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = cur {
        if let Some(h) = e.downcast_ref::<HttpError>() {
            kind = Some(h.kind());
        }
        if status.is_none() {
            let text = e.to_string();
            if let Some(i) = text.find("status code: ") {
                status = text[i + 13..].get(..3).and_then(|s| s.parse::<u16>().ok());
            }
        }
        cur = e.source();
    }
    (status, kind)
}

/// Maps an object_store error on `place` to a status and a clean message.
pub(crate) fn map(err: object_store::Error, place: &Place<'_>, redactor: &Redactor) -> AbiError {
    use object_store::Error as E;
    let text = err.to_string();
    let (http, kind) = classify(&err);
    if matches!(err, E::NotFound { .. }) || http == Some(404) {
        let what = if text.contains("NoSuchBucket")
            || text.contains("ContainerNotFound")
            || text.contains("bucket does not exist")
        {
            format!("no such {} {:?}", place.bucket_word, place.bucket)
        } else {
            format!("no such object ({})", place.describe())
        };
        return AbiError::new(status::NOT_FOUND, what);
    }
    let (code, what) = match &err {
        E::PermissionDenied { .. } => (status::PERMISSION_DENIED, "access denied"),
        E::Unauthenticated { .. } => (status::PERMISSION_DENIED, "the credentials were refused"),
        E::InvalidPath { .. } => (status::INVALID_ARGUMENT, "invalid object name"),
        E::NotSupported { .. } | E::NotImplemented { .. } => (status::UNSUPPORTED, "not supported by this store"),
        E::UnknownConfigurationKey { .. } => (status::INVALID_ARGUMENT, "bad configuration"),
        E::Precondition { .. } | E::NotModified { .. } | E::AlreadyExists { .. } => (status::BACKEND, "conflict"),
        _ => match (http, kind) {
            (Some(416), _) => (status::OUT_OF_RANGE, "byte range not satisfiable"),
            (Some(403), _) => (status::PERMISSION_DENIED, "access denied"),
            (Some(401), _) => (status::PERMISSION_DENIED, "the credentials were refused"),
            (Some(429), _) | (Some(500..=599), _) => {
                (status::TRANSIENT, "the store is unavailable or throttling (retries exhausted)")
            }
            (_, Some(HttpErrorKind::Timeout)) => (status::TIMEOUT, "request timed out (retries exhausted)"),
            (_, Some(HttpErrorKind::Connect | HttpErrorKind::Request | HttpErrorKind::Interrupted)) => {
                (status::TRANSIENT, "connection failed (retries exhausted)")
            }
            _ => (status::BACKEND, "request failed"),
        },
    };
    AbiError::new(code, redactor.clean(&format!("{what} ({}): {text}", place.describe())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_and_url_queries_are_scrubbed() {
        let r = Redactor::default();
        r.add("s3cr3t-key");
        let msg = r.clean("GET https://acct.blob.core.windows.net/c/k?sv=1&sig=abc%2F failed for s3cr3t-key, ok");
        assert_eq!(msg, "GET https://acct.blob.core.windows.net/c/k?… failed for ***, ok");
    }

    #[test]
    fn a_404_names_bucket_and_key() {
        let e = object_store::Error::NotFound { path: "a/b".into(), source: "404".into() };
        let place = Place { bucket_word: "bucket", bucket: "bkt", key: "a/b" };
        let a = map(e, &place, &Redactor::default());
        assert_eq!(a.status, status::NOT_FOUND);
        assert!(a.message.contains("\"bkt\"") && a.message.contains("\"a/b\""), "{}", a.message);
    }
}
