//! dataio-rdma errors as exceptions of the `dataio.errors` tree (plus the two
//! RDMA-specific classes of `dataio_rdma.errors`, which derive from it).

use dataio_rdma::{Error, ErrorKind};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

static CORE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
static OURS: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

fn class_of(kind: ErrorKind) -> (bool, &'static str) {
    // (defined by dataio_rdma.errors?, class name)
    match kind {
        ErrorKind::Unavailable => (true, "RdmaUnavailableError"),
        ErrorKind::Disconnected => (true, "RdmaDisconnectedError"),
        ErrorKind::InvalidArgument | ErrorKind::Closed => (false, "InvalidArgumentError"),
        ErrorKind::OutOfRange => (false, "OutOfRangeError"),
        ErrorKind::AccessDenied => (false, "AccessDeniedError"),
        ErrorKind::Timeout => (false, "TimeoutError"),
        ErrorKind::Fabric | ErrorKind::Protocol | ErrorKind::Io => (false, "StorageError"),
    }
}

fn build(py: Python<'_>, err: &Error) -> PyResult<PyErr> {
    let (ours, name) = class_of(err.kind());
    let module = if ours {
        OURS.get_or_try_init(py, || py.import("dataio_rdma.errors").map(Bound::unbind))?
    } else {
        CORE.get_or_try_init(py, || py.import("dataio.errors").map(Bound::unbind))?
    };
    let exc = module.bind(py).getattr(name)?.call1((err.to_string(),))?;
    if let Error::OutOfRange { offset, size, length, .. } = err {
        exc.setattr("offset", offset)?;
        exc.setattr("size", size)?;
        exc.setattr("length", length)?;
    }
    Ok(PyErr::from_value(exc))
}

pub fn to_pyerr(err: Error) -> PyErr {
    Python::attach(|py| {
        build(py, &err)
            .unwrap_or_else(|e| PyRuntimeError::new_err(format!("{err} (and building its exception failed: {e})")))
    })
}

pub trait MapPy<T> {
    fn map_py(self) -> PyResult<T>;
}

impl<T> MapPy<T> for Result<T, Error> {
    fn map_py(self) -> PyResult<T> {
        self.map_err(to_pyerr)
    }
}
