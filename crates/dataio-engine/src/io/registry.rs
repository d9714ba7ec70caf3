//! Which backend serves a URI: the schemes registered by the binding layer
//! and plugins, the resolver that loads a plugin on a scheme's first use,
//! and the local backend as the fallback for `file`.
//!
//! Kept apart from [`super::backend`] (the contract) so that the contract
//! does not depend on its implementations: [`super::local`] and
//! [`super::abi_backend`] implement the contract, this module picks one.

use super::backend::Backend;
use super::local::LocalBackend;
use super::uri::{self, Target};
use crate::base::error::{Error, Result};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};

/// Called when a URI names a scheme with no backend yet; returns one (the
/// binding layer loads plugins here) or `None`.
pub type Resolver = dyn Fn(&str) -> Result<Option<Arc<dyn Backend>>> + Send + Sync;

struct Registry {
    backends: RwLock<HashMap<String, Arc<dyn Backend>>>,
    resolver: RwLock<Option<Arc<Resolver>>>,
}

fn registry() -> &'static Registry {
    static REG: OnceLock<Registry> = OnceLock::new();
    REG.get_or_init(|| Registry { backends: RwLock::new(HashMap::new()), resolver: RwLock::new(None) })
}

/// Registers `backend` for `scheme`, replacing any earlier one. Duplicate
/// detection between plugins happens in the plugin registry, which knows names.
pub fn register(scheme: &str, backend: Arc<dyn Backend>) {
    registry().backends.write().unwrap().insert(scheme.to_ascii_lowercase(), backend);
}

pub fn unregister(scheme: &str) -> bool {
    registry().backends.write().unwrap().remove(&scheme.to_ascii_lowercase()).is_some()
}

pub fn registered_schemes() -> Vec<String> {
    let mut v: Vec<String> = registry().backends.read().unwrap().keys().cloned().collect();
    v.sort();
    v
}

pub fn set_resolver(resolver: Option<Arc<Resolver>>) {
    *registry().resolver.write().unwrap() = resolver;
}

/// How to install `dist`, one of dataio's own distributions: the words after
/// "install it with" in an error saying it is missing. The one source of this
/// text (`dataio.plugins.install_hint` returns it through the binding).
pub fn install_words(dist: &str) -> String {
    format!(
        "`pip install --find-links wheelhouse/ {dist}`, wheelhouse/ built in a dataio clone by \
         `python3 -m nox -s wheels -- wheelhouse/` (dataio's packages are not on PyPI; see the README's Install section)"
    )
}

/// The URI schemes the backend plugins shipped with dataio serve, with the
/// distribution of each: what a scheme is known by before its plugin is
/// installed. The one table of them (Python's `dataio._plugins.SHIPPED_SCHEMES`
/// is read from it through the binding).
pub const SHIPPED_SCHEMES: &[(&str, &str)] = &[
    ("s3", "dataio-s3"),
    ("r2", "dataio-s3"),
    ("gs", "dataio-gcs"),
    ("az", "dataio-azure"),
    ("hf", "dataio-hf"),
    ("http", "dataio-http"),
    ("https", "dataio-http"),
];

/// Of [`SHIPPED_SCHEMES`], those that take no endpoint (`configure_endpoint`
/// refuses them): a URL names its own server.
pub const NO_ENDPOINT: &[&str] = &["http", "https"];

/// Other tools' names for those stores, which dataio does not serve: a URI
/// with one is refused with the spelling dataio takes.
pub const SCHEME_ALIASES: &[(&str, &str)] = &[
    ("s3a", "s3"),
    ("s3n", "s3"),
    ("gcs", "gs"),
    ("abfs", "az"),
    ("abfss", "az"),
    ("azure", "az"),
    ("wasb", "az"),
    ("wasbs", "az"),
];

/// What to do about a URI of `scheme` that no backend serves: install the
/// plugin that ships with dataio for it, or write the scheme dataio takes.
pub fn install_hint(scheme: &str) -> Option<String> {
    if let Some((_, dist)) = SHIPPED_SCHEMES.iter().find(|(s, _)| *s == scheme) {
        return Some(format!("install it with {}", install_words(dist)));
    }
    let (_, canon) = SCHEME_ALIASES.iter().find(|(s, _)| *s == scheme)?;
    let dist = SHIPPED_SCHEMES.iter().find(|(s, _)| s == canon).map(|(_, d)| *d).unwrap_or("");
    Some(format!("dataio names this store {canon}:// (write {canon}://bucket/key; {dist} serves it)"))
}

/// The backend serving `uri`, loading it through the resolver on first use.
pub fn backend_for(uri: &str) -> Result<(Arc<dyn Backend>, Target)> {
    let target = uri::parse(uri)?;
    let scheme = match &target {
        Target::Local(_) => "file".to_string(),
        Target::Remote { scheme } => scheme.clone(),
    };
    if let Some(b) = registry().backends.read().unwrap().get(&scheme) {
        return Ok((b.clone(), target));
    }
    // Every scheme, `file` included, is first offered to the resolver (the
    // plugin registry, where the core's own local backend registers too).
    let resolver = registry().resolver.read().unwrap().clone();
    if let Some(resolver) = resolver {
        if let Some(b) = resolver(&scheme)? {
            register(&scheme, b.clone());
            return Ok((b, target));
        }
    }
    if scheme == "file" {
        let local: Arc<dyn Backend> = Arc::new(LocalBackend);
        register("file", local.clone());
        return Ok((local, target));
    }
    Err(Error::UnsupportedScheme { hint: install_hint(&scheme), scheme, uri: uri.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_scheme_names_the_package_to_install() {
        let err = match backend_for("s3://bucket/key") {
            Err(e) => e,
            Ok(_) => panic!("no s3 backend expected"),
        };
        let msg = err.to_string();
        assert!(msg.contains("`pip install --find-links wheelhouse/ dataio-s3`"), "{msg}");
        let err = match backend_for("weird://x") {
            Err(e) => e,
            Ok(_) => panic!(),
        };
        assert!(matches!(err, Error::UnsupportedScheme { hint: None, .. }));
        let msg = match backend_for("s3a://bucket/key") {
            Err(e) => e.to_string(),
            Ok(_) => panic!(),
        };
        assert!(msg.contains("dataio names this store s3:// (write s3://bucket/key; dataio-s3 serves it)"), "{msg}");
    }

    #[test]
    fn every_alias_names_a_shipped_scheme() {
        for (alias, canon) in SCHEME_ALIASES {
            assert!(SHIPPED_SCHEMES.iter().any(|(s, _)| s == canon), "{alias} -> {canon}");
            assert!(!SHIPPED_SCHEMES.iter().any(|(s, _)| s == alias), "{alias}");
        }
    }
}
