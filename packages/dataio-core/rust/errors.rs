//! Engine errors to Python exceptions of the `dataio.errors` tree, and back
//! for exceptions raised by Python backends and ops.

use dataio_engine::base::error::{ErrorKind, ForeignPayload};
use dataio_engine::Error;
use pyo3::exceptions::{
    PyConnectionError, PyFileNotFoundError, PyIsADirectoryError, PyNotADirectoryError, PyPermissionError,
    PyTimeoutError, PyValueError,
};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyDict;
use std::sync::Arc;

static ERRORS_MODULE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

fn errors_module(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    Ok(ERRORS_MODULE.get_or_try_init(py, || py.import("dataio.errors").map(Bound::unbind))?.bind(py))
}

/// The `dataio.errors` class of an engine error kind: the class whose `kind`
/// attribute names it (`dataio.errors.BY_KIND`), so the Python tree is the one
/// place a kind's class is written down.
fn class_of<'py>(py: Python<'py>, kind: ErrorKind) -> PyResult<Bound<'py, PyAny>> {
    let by_kind = errors_module(py)?.getattr("BY_KIND")?;
    match by_kind.get_item(kind.name()) {
        Ok(cls) => Ok(cls),
        Err(_) => errors_module(py)?.getattr("StorageError"),
    }
}

/// Builds the Python exception for an engine error.
pub fn to_pyerr(py: Python<'_>, err: Error) -> PyErr {
    // One of our own exceptions raised in Python code (a plugin, the
    // registry) travels back unchanged.
    if let Error::Foreign { payload, uri, .. } = &err {
        if let Some(e) = payload.0.downcast_ref::<PyErr>() {
            // Ours, or raised by user code (no URI: not a storage backend):
            // the same exception comes back.
            if is_ours(py, e) || uri.is_none() {
                return e.clone_ref(py);
            }
        }
    }
    match build(py, &err) {
        Ok(e) => e,
        Err(fallback) => fallback,
    }
}

fn build(py: Python<'_>, err: &Error) -> PyResult<PyErr> {
    let kind = err.kind();
    let cls = class_of(py, kind)?;
    let attrs = PyDict::new(py);
    if let Some(uri) = err.uri() {
        attrs.set_item("uri", uri)?;
    }
    if let Error::Row { context, source } = err {
        attrs.set_item("key", &context.key)?;
        attrs.set_item("index", context.index)?;
        attrs.set_item("slot", &context.slot)?;
        attrs.set_item("op", &context.op)?;
        attrs.set_item("cause_kind", class_of(py, source.root().kind())?.getattr("__name__")?)?;
        attrs.set_item("cause", source.to_string())?;
        if let Error::Foreign { payload, .. } = source.root() {
            if let Some(e) = payload.0.downcast_ref::<PyErr>() {
                attrs.set_item("__cause__", e.clone_ref(py).into_value(py))?;
            }
        }
    }
    if let Error::OutOfRange { offset, size, len, .. } = err {
        attrs.set_item("offset", offset)?;
        attrs.set_item("size", size)?;
        attrs.set_item("length", len)?;
    }
    if let Error::Backend { transient, .. } = err {
        attrs.set_item("transient", transient)?;
    }
    if let Error::Foreign { payload, .. } = err {
        if let Some(e) = payload.0.downcast_ref::<PyErr>() {
            attrs.set_item("__cause__", e.clone_ref(py).into_value(py))?;
        }
    }
    let exc = cls.call1((err.to_string(),))?;
    for (k, v) in attrs.iter() {
        exc.setattr(k.extract::<String>()?.as_str(), v)?;
    }
    Ok(PyErr::from_value(exc))
}

/// Extension trait: `result.py_err(py)?` in binding code.
pub trait IntoPy<T> {
    fn map_py(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> IntoPy<T> for Result<T, Error> {
    fn map_py(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| to_pyerr(py, e))
    }
}

/// Wraps an exception from Python code (a backend or op) so it can travel
/// through the engine and come out unchanged.
pub fn from_pyerr(py: Python<'_>, err: PyErr, uri: Option<&str>) -> Error {
    let kind = if err.is_instance_of::<PyFileNotFoundError>(py) {
        ErrorKind::NotFound
    } else if err.is_instance_of::<PyPermissionError>(py) {
        ErrorKind::PermissionDenied
    } else if err.is_instance_of::<PyIsADirectoryError>(py) {
        ErrorKind::IsADirectory
    } else if err.is_instance_of::<PyNotADirectoryError>(py) {
        ErrorKind::NotADirectory
    } else if err.is_instance_of::<PyTimeoutError>(py) {
        ErrorKind::Timeout
    } else if err.is_instance_of::<PyConnectionError>(py) {
        ErrorKind::Connection
    } else if err.is_instance_of::<PyValueError>(py) {
        ErrorKind::InvalidArgument
    } else {
        ErrorKind::Backend
    };
    let message = err.value(py).str().map(|s| s.to_string()).unwrap_or_else(|_| "<unprintable exception>".into());
    let name = err.get_type(py).name().map(|n| n.to_string()).unwrap_or_default();
    if is_ours(py, &err) {
        let kind = kind_of_dataio(py, &err).unwrap_or(kind);
        return Error::Foreign { kind, message, uri: None, payload: ForeignPayload(Arc::new(err)) };
    }
    Error::Foreign {
        kind,
        message: format!("{name}: {message}"),
        uri: uri.map(str::to_string),
        payload: ForeignPayload(Arc::new(err)),
    }
}

fn is_ours(py: Python<'_>, err: &PyErr) -> bool {
    errors_module(py)
        .and_then(|m| m.getattr("DataioError"))
        .map(|base| err.value(py).is_instance(&base).unwrap_or(false))
        .unwrap_or(false)
}

/// The kind of an exception that is already one of ours: its class's (or
/// an ancestor's) `kind` attribute.
fn kind_of_dataio(py: Python<'_>, err: &PyErr) -> Option<ErrorKind> {
    let name: String = err.value(py).getattr("kind").ok()?.extract().ok()?;
    ErrorKind::from_name(&name)
}
