//! One store's clients: [`Inner`] holds a backend's configuration and one
//! object_store client per bucket (built on first use, rebuilt in a forked
//! child), and turns URIs, results and errors into the ABI's terms. Both the
//! request side ([`crate::backend`]) and the streaming writer
//! ([`crate::writer`]) work through it; it knows neither.

use crate::config::StoreConfig;
use crate::errors::{self, Place};
use dataio_abi::{status, AbiError, Meta};
use object_store::ObjectStore;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

struct Clients {
    pid: u32,
    by_bucket: HashMap<String, Arc<dyn ObjectStore>>,
}

pub(crate) struct Inner {
    pub(crate) cfg: StoreConfig,
    pub(crate) name: String,
    clients: Mutex<Clients>,
}

/// A parsed URI.
pub(crate) struct Target {
    pub(crate) bucket: String,
    /// Without leading or trailing `/`; empty for the bucket itself.
    pub(crate) key: String,
}

impl Inner {
    pub(crate) fn new(cfg: StoreConfig) -> Self {
        let name = cfg.kind.plugin().to_string();
        Inner { cfg, name, clients: Mutex::new(Clients { pid: std::process::id(), by_bucket: HashMap::new() }) }
    }

    pub(crate) fn target(&self, uri: &str) -> Result<Target, AbiError> {
        let bad =
            |why: &str| AbiError::new(status::INVALID_ARGUMENT, format!("invalid {} URI: {why}", self.cfg.scheme));
        let rest = match uri.find("://") {
            Some(i) if uri[..i].eq_ignore_ascii_case(&self.cfg.scheme) => &uri[i + 3..],
            _ => return Err(bad(&format!("expected {}://{}/key", self.cfg.scheme, self.cfg.kind.bucket_word()))),
        };
        let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err(bad(&format!("no {} name", self.cfg.kind.bucket_word())));
        }
        Ok(Target { bucket: bucket.to_string(), key: key.trim_matches('/').to_string() })
    }

    pub(crate) fn client(&self, bucket: &str) -> Result<Arc<dyn ObjectStore>, AbiError> {
        let mut clients = self.clients.lock().unwrap_or_else(|p| p.into_inner());
        let pid = std::process::id();
        if clients.pid != pid {
            // Inherited through fork: their connection pools belong to the
            // parent's runtime. Leak them rather than run their destructors.
            std::mem::forget(std::mem::take(&mut clients.by_bucket));
            clients.pid = pid;
        }
        if let Some(c) = clients.by_bucket.get(bucket) {
            return Ok(c.clone());
        }
        let c = self.cfg.build(bucket).map_err(|e| {
            let hint = if self.cfg.kind == crate::Kind::Azure && !bucket.contains('@') {
                " (name the storage account: configure_credentials(\"az\", account=...), AZURE_STORAGE_ACCOUNT_NAME, or az://container@account/path)"
            } else {
                ""
            };
            AbiError::new(
                status::INVALID_ARGUMENT,
                self.cfg.redactor.clean(&format!("cannot configure {} {bucket:?}: {e}{hint}", self.cfg.kind.bucket_word())),
            )
        })?;
        clients.by_bucket.insert(bucket.to_string(), c.clone());
        Ok(c)
    }

    pub(crate) fn uri_of(&self, bucket: &str, key: &str) -> String {
        format!("{}://{bucket}/{key}", self.cfg.scheme)
    }

    pub(crate) fn err(&self, t: &Target, e: object_store::Error) -> AbiError {
        let place = Place { bucket_word: self.cfg.kind.bucket_word(), bucket: &t.bucket, key: &t.key };
        errors::map(e, &place, &self.cfg.redactor)
    }

    pub(crate) fn meta(&self, bucket: &str, m: &object_store::ObjectMeta) -> Meta {
        Meta {
            uri: self.uri_of(bucket, m.location.as_ref()),
            size: m.size,
            mtime: Some(m.last_modified.timestamp_millis() as f64 / 1000.0),
            etag: m.e_tag.as_ref().map(|t| t.trim_matches('"').to_string()),
            is_dir: false,
        }
    }

    pub(crate) fn dir_meta(&self, bucket: &str, key: &str) -> Meta {
        Meta { uri: self.uri_of(bucket, key), is_dir: true, ..Default::default() }
    }
}
