//! `dataio_rdma.Server`: a served region. Also a buffer-protocol object, so
//! the serving process can fill or inspect the region (`memoryview(server)`);
//! a view keeps the memory mapped even after `close()`.

use crate::errors::MapPy;
use dataio_rdma::{Region, ServeOptions, Server};
use pyo3::ffi;
use pyo3::prelude::*;
use std::os::raw::c_int;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

#[pyclass(module = "dataio_rdma", name = "Server", frozen)]
pub struct PyServer {
    inner: Server,
    region: Arc<Region>,
    local_addr: String,
}

pub fn seconds(name: &str, v: f64) -> PyResult<Duration> {
    if !(v.is_finite() && v > 0.0) {
        return Err(crate::errors::to_pyerr(dataio_rdma::Error::InvalidArgument(format!(
            "{name} must be a positive number of seconds, got {v}"
        ))));
    }
    Ok(Duration::from_secs_f64(v))
}

fn start(
    py: Python<'_>,
    opts: ServeOptions,
    region: impl FnOnce() -> dataio_rdma::Result<Region> + Send,
) -> PyResult<PyServer> {
    let server = py.detach(|| region().and_then(|r| Server::start(opts, r))).map_py()?;
    let region = Arc::clone(server.region());
    let local_addr = server.local_addr().to_string();
    Ok(PyServer { inner: server, region, local_addr })
}

fn options(bind: String, token: Option<Vec<u8>>, provider: Option<String>, timeout: f64) -> PyResult<ServeOptions> {
    Ok(ServeOptions { bind, token, provider, timeout: seconds("timeout", timeout)?, ..Default::default() })
}

/// Serves `buffer_size` zeroed bytes that clients may read and write.
#[pyfunction]
#[pyo3(signature = (bind, buffer_size, token=None, provider=None, timeout=30.0))]
pub fn serve(
    py: Python<'_>,
    bind: String,
    buffer_size: i64,
    token: Option<Vec<u8>>,
    provider: Option<String>,
    timeout: f64,
) -> PyResult<PyServer> {
    if buffer_size <= 0 {
        return Err(crate::errors::to_pyerr(dataio_rdma::Error::InvalidArgument(format!(
            "buffer_size must be positive, got {buffer_size}"
        ))));
    }
    let opts = options(bind, token, provider, timeout)?;
    start(py, opts, move || Region::anonymous(buffer_size as usize))
}

/// Serves the file at `path`, memory-mapped, read-only to clients.
#[pyfunction]
#[pyo3(signature = (path, bind, token=None, provider=None, timeout=30.0))]
pub fn serve_file(
    py: Python<'_>,
    path: PathBuf,
    bind: String,
    token: Option<Vec<u8>>,
    provider: Option<String>,
    timeout: f64,
) -> PyResult<PyServer> {
    let opts = options(bind, token, provider, timeout)?;
    start(py, opts, move || Region::file(&path))
}

#[pymethods]
impl PyServer {
    /// "host:port" for `connect`.
    #[getter]
    fn local_addr(&self) -> &str {
        &self.local_addr
    }

    /// Bytes served.
    #[getter]
    fn size(&self) -> usize {
        self.region.len()
    }

    /// True for `serve_file` regions: clients may only read.
    #[getter]
    fn readonly(&self) -> bool {
        self.region.read_only()
    }

    /// The served file, or None.
    #[getter]
    fn path(&self) -> Option<String> {
        self.region.path().map(|p| p.display().to_string())
    }

    /// The libfabric provider ("tcp;ofi_rxm", "efa", ...).
    #[getter]
    fn provider(&self) -> &str {
        &self.inner.provider().provider
    }

    /// The fabric domain (interface or device) the endpoint opened.
    #[getter]
    fn domain(&self) -> &str {
        &self.inner.provider().domain
    }

    /// Clients connected now.
    #[getter]
    fn clients(&self) -> usize {
        self.inner.clients()
    }

    #[getter]
    fn closed(&self) -> bool {
        self.inner.is_closed()
    }

    /// Disconnects every client and releases the endpoint and registration.
    fn close(&self, py: Python<'_>) {
        py.detach(|| self.inner.close());
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(&self, py: Python<'_>, _t: Py<PyAny>, _v: Py<PyAny>, _tb: Py<PyAny>) -> bool {
        self.close(py);
        false
    }

    fn __len__(&self) -> usize {
        self.region.len()
    }

    fn __repr__(&self) -> String {
        let what = match self.region.path() {
            Some(p) => format!("file={:?}", p.display().to_string()),
            None => format!("buffer_size={}", self.region.len()),
        };
        let state = if self.inner.is_closed() { ", closed" } else { "" };
        format!("<dataio_rdma.Server {} {what} provider={:?}{state}>", self.local_addr, self.inner.provider().provider)
    }

    unsafe fn __getbuffer__(slf: Bound<'_, Self>, view: *mut ffi::Py_buffer, flags: c_int) -> PyResult<()> {
        let region = Arc::clone(&slf.get().region);
        // SAFETY: `view` is the caller's Py_buffer; the memory stays mapped
        // while the view holds its Arc of the region (freed in
        // __releasebuffer__). FillInfo refuses writable requests on a
        // read-only region with BufferError.
        unsafe {
            if ffi::PyBuffer_FillInfo(
                view,
                slf.as_ptr(),
                region.as_ptr().cast(),
                region.len() as ffi::Py_ssize_t,
                region.read_only() as c_int,
                flags,
            ) != 0
            {
                return Err(PyErr::fetch(slf.py()));
            }
            (*view).internal = Box::into_raw(Box::new(region)).cast();
        }
        Ok(())
    }

    unsafe fn __releasebuffer__(&self, view: *mut ffi::Py_buffer) {
        // SAFETY: set by __getbuffer__ for this view, released once.
        unsafe {
            let internal = (*view).internal;
            if !internal.is_null() {
                drop(Box::from_raw(internal.cast::<Arc<Region>>()));
                (*view).internal = std::ptr::null_mut();
            }
        }
    }
}
