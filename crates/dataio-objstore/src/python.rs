//! The pyo3 side every native cloud plugin shares: `backend(scheme, options,
//! refresh=None)` builds an [`ObjStoreBackend`] and hands it to dataio in a
//! `dataio.backend.v1` capsule. A plugin's module is one call to
//! [`init_module`].

#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
use crate::credentials::{Token, TokenSource};
#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
use crate::{Kind, ObjStoreBackend, StoreConfig};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict};
use std::collections::HashMap;
use std::sync::Arc;

/// A Python callable returning `{"key_id": ..., "secret_key": ..., "token":
/// ..., "expires_at": epoch_seconds_or_None}` (S3) or `{"bearer": ...,
/// "expires_at": ...}` (GCS, Azure). Called only when the cached credential
/// nears its expiry.
#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
struct PyTokenSource {
    func: Py<PyAny>,
}

#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
impl std::fmt::Debug for PyTokenSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PyTokenSource(..)")
    }
}

#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
impl TokenSource for PyTokenSource {
    fn fetch(&self) -> Result<Token, String> {
        Python::attach(|py| {
            let got = self.func.bind(py).call0().map_err(|e| format!("{}", e.value(py)))?;
            let dict = got.cast::<PyDict>().map_err(|_| "the credential callback must return a dict".to_string())?;
            let mut token = Token::default();
            for (k, v) in dict.iter() {
                let k: String = k.extract().map_err(|_| "credential keys must be str".to_string())?;
                if v.is_none() {
                    continue;
                }
                if k == "expires_at" {
                    token.expires_at = Some(v.extract::<f64>().map_err(|_| "expires_at must be a number".to_string())?);
                } else {
                    token
                        .fields
                        .insert(k, v.extract::<String>().map_err(|_| "credential values must be str".to_string())?);
                }
            }
            Ok(token)
        })
    }
}

fn option_text(v: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(b) = v.cast::<PyBool>() {
        return Ok(if b.is_true() { "true" } else { "false" }.to_string());
    }
    if let Ok(s) = v.extract::<String>() {
        return Ok(s);
    }
    if v.extract::<f64>().is_ok() {
        return Ok(v.str()?.to_string());
    }
    Err(PyTypeError::new_err("backend options must be str, bool or numbers"))
}

/// Builds the backend for `scheme` from `options` (object_store keys and
/// dataio's tuning keys) and an optional credential callback; returns the
/// capsule dataio adopts.
#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
#[pyfunction]
#[pyo3(pass_module, signature = (scheme, options, refresh=None))]
fn backend<'py>(
    module: &Bound<'py, PyModule>,
    scheme: &str,
    options: HashMap<String, Bound<'py, PyAny>>,
    refresh: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = module.py();
    let kind = match module.getattr("KIND")?.extract::<String>()?.as_str() {
        "s3" => Kind::S3,
        "gcs" => Kind::Gcs,
        _ => Kind::Azure,
    };
    let mut cfg = StoreConfig::new(kind, scheme);
    let mut keys: Vec<_> = options.into_iter().filter(|(_, v)| !v.is_none()).collect();
    keys.sort_by(|a, b| a.0.cmp(&b.0));
    for (k, v) in keys {
        let text = option_text(&v)?;
        cfg.set(&k, &text).map_err(PyValueError::new_err)?;
    }
    if let Some(func) = refresh {
        cfg.token_source = Some(Arc::new(PyTokenSource { func }));
    }
    let backend = py.detach(|| ObjStoreBackend::new(cfg)).map_err(|e| PyValueError::new_err(e.message))?;
    let table = dataio_abi::export(backend);
    // SAFETY: the name is a static C string; `table` is a fresh table whose
    // ownership passes to whoever adopts the capsule (docs/plugins.md).
    unsafe {
        let cap = pyo3::ffi::PyCapsule_New(table.cast(), dataio_abi::CAPSULE_NAME.as_ptr(), None);
        Bound::from_owned_ptr_or_err(py, cap)
    }
}

/// Fills a plugin's `_native` module: `KIND`, `backend()`.
#[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
pub fn init_module(m: &Bound<'_, PyModule>, kind: Kind) -> PyResult<()> {
    let name = match kind {
        Kind::S3 => "s3",
        Kind::Gcs => "gcs",
        Kind::Azure => "azure",
    };
    m.add("KIND", name)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(backend, m)?)?;
    Ok(())
}

/// The counters of every http(s) backend this module built (`stats()`).
#[cfg(feature = "http")]
static HTTP_STATS: std::sync::Mutex<Vec<Arc<crate::http::HttpStats>>> = std::sync::Mutex::new(Vec::new());

/// Builds the `http` or `https` backend from `options` (`configure_http`'s
/// keys as text); returns the capsule dataio adopts.
#[cfg(feature = "http")]
#[pyfunction]
#[pyo3(name = "backend", signature = (scheme, options))]
fn http_backend<'py>(
    py: Python<'py>,
    scheme: &str,
    options: HashMap<String, Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let mut cfg = crate::http::HttpConfig::default();
    let mut keys: Vec<_> = options.into_iter().filter(|(_, v)| !v.is_none()).collect();
    keys.sort_by(|a, b| a.0.cmp(&b.0));
    for (k, v) in keys {
        let text = option_text(&v)?;
        cfg.set(&k, &text).map_err(PyValueError::new_err)?;
    }
    let backend =
        py.detach(|| crate::http::HttpBackend::new(scheme, cfg)).map_err(|e| PyValueError::new_err(e.message))?;
    HTTP_STATS.lock().unwrap_or_else(|p| p.into_inner()).push(backend.stats());
    let table = dataio_abi::export(backend);
    // SAFETY: as in `backend`.
    unsafe {
        let cap = pyo3::ffi::PyCapsule_New(table.cast(), dataio_abi::CAPSULE_NAME.as_ptr(), None);
        Bound::from_owned_ptr_or_err(py, cap)
    }
}

/// Responses by status class, retries, refused URLs (internal addresses,
/// robots) and body bytes, summed over this process's http(s) backends.
#[cfg(feature = "http")]
#[pyfunction]
#[pyo3(name = "stats")]
fn http_stats(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    let all = HTTP_STATS.lock().unwrap_or_else(|p| p.into_inner());
    let mut sums: Vec<(&'static str, u64)> = Vec::new();
    for s in all.iter() {
        for (i, (k, v)) in s.snapshot().into_iter().enumerate() {
            match sums.get_mut(i) {
                Some(e) => e.1 += v,
                None => sums.push((k, v)),
            }
        }
    }
    if sums.is_empty() {
        sums = crate::http::HttpStats::default().snapshot();
    }
    for (k, v) in sums {
        d.set_item(k, v)?;
    }
    Ok(d)
}

/// Fills dataio-http's `_native` module: `backend()`, `stats()`.
#[cfg(feature = "http")]
pub fn init_http_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(http_backend, m)?)?;
    m.add_function(wrap_pyfunction!(http_stats, m)?)?;
    Ok(())
}
