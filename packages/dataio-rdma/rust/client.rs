//! `dataio_rdma.Client`: a connection to a server's region. Every transfer
//! runs with the GIL released.

use crate::buffers::Held;
use crate::errors::{to_pyerr, MapPy};
use crate::server::seconds;
use dataio_rdma::{Client, ConnectOptions, Error, Memory, Op};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

#[pyclass(module = "dataio_rdma", name = "Client", frozen)]
pub struct PyClient {
    inner: Client,
}

fn non_negative(name: &str, v: i64) -> PyResult<u64> {
    u64::try_from(v).map_err(|_| to_pyerr(Error::InvalidArgument(format!("{name} must be >= 0, got {v}"))))
}

/// An offset: any int in 0..2**64 (the region check rejects what is too far).
fn offset_arg(v: &Bound<'_, PyAny>) -> PyResult<u64> {
    if let Ok(n) = v.extract::<u64>() {
        return Ok(n);
    }
    match v.extract::<i64>() {
        Ok(n) => non_negative("offset", n),
        Err(_) => Err(to_pyerr(Error::InvalidArgument(format!("offset must be an int in [0, 2**64), got {v}")))),
    }
}

/// Connects to the server at "host:port" and runs the handshake.
#[pyfunction]
#[pyo3(signature = (addr, token=None, provider=None, cuda=false, chunk_size=dataio_rdma::client::DEFAULT_CHUNK_SIZE as i64, max_inflight=dataio_rdma::client::DEFAULT_MAX_INFLIGHT as i64, timeout=30.0))]
#[allow(clippy::too_many_arguments)]
pub fn connect(
    py: Python<'_>,
    addr: String,
    token: Option<Vec<u8>>,
    provider: Option<String>,
    cuda: bool,
    chunk_size: i64,
    max_inflight: i64,
    timeout: f64,
) -> PyResult<PyClient> {
    let opts = ConnectOptions {
        token,
        provider,
        cuda,
        chunk_size: usize::try_from(chunk_size).unwrap_or(0),
        max_inflight: usize::try_from(max_inflight).unwrap_or(0),
        timeout: seconds("timeout", timeout)?,
        ..Default::default()
    };
    let inner = py.detach(|| Client::connect(&addr, opts)).map_py()?;
    Ok(PyClient { inner })
}

impl PyClient {
    fn run(&self, py: Python<'_>, op: Op, ptr: usize, len: usize, mem: Memory, offset: u64) -> PyResult<usize> {
        let inner = &self.inner;
        // SAFETY: the caller holds the buffer (a held Py_buffer, or the
        // tensor object whose storage it passed) for the whole call.
        py.detach(|| unsafe { inner.transfer(op, ptr as *mut u8, len, mem, offset) }).map(|t| t.bytes).map_py()
    }
}

#[pymethods]
impl PyClient {
    /// `size` bytes at `offset` of the server's region.
    #[pyo3(signature = (offset, size))]
    fn read<'py>(&self, py: Python<'py>, offset: &Bound<'py, PyAny>, size: i64) -> PyResult<Bound<'py, PyBytes>> {
        let offset = offset_arg(offset)?;
        let size = non_negative("size", size)? as usize;
        let inner = &self.inner;
        PyBytes::new_with(py, size, |dst| py.detach(|| inner.read_into(dst, offset)).map(drop).map_py())
    }

    /// Fills `dst` (any writable contiguous buffer) from `offset`; with
    /// `size`, only its first `size` bytes. Returns the bytes read.
    #[pyo3(signature = (dst, offset, size=None))]
    fn read_into(
        &self,
        py: Python<'_>,
        dst: &Bound<'_, PyAny>,
        offset: &Bound<'_, PyAny>,
        size: Option<i64>,
    ) -> PyResult<usize> {
        let offset = offset_arg(offset)?;
        let held = Held::writable(dst)?;
        let len = match size {
            None => held.len(),
            Some(s) => {
                let s = non_negative("size", s)? as usize;
                if s > held.len() {
                    return Err(to_pyerr(Error::InvalidArgument(format!(
                        "size={s} but the destination holds {} bytes",
                        held.len()
                    ))));
                }
                s
            }
        };
        let n = self.run(py, Op::Read, held.ptr() as usize, len, Memory::Host, offset)?;
        drop(held);
        Ok(n)
    }

    /// Writes `data` (any contiguous bytes-like object) at `offset`.
    #[pyo3(signature = (data, offset))]
    fn write(&self, py: Python<'_>, data: &Bound<'_, PyAny>, offset: &Bound<'_, PyAny>) -> PyResult<usize> {
        let offset = offset_arg(offset)?;
        let held = Held::readable(data)?;
        let n = self.run(py, Op::Write, held.ptr() as usize, held.len(), Memory::Host, offset)?;
        drop(held);
        Ok(n)
    }

    /// Raw-pointer transfer for tensors (the Python wrapper keeps the tensor
    /// alive): `device` -1 for host memory, else the CUDA device index.
    #[pyo3(signature = (write, ptr, nbytes, offset, device))]
    fn _transfer_ptr(
        &self,
        py: Python<'_>,
        write: bool,
        ptr: usize,
        nbytes: i64,
        offset: &Bound<'_, PyAny>,
        device: i32,
    ) -> PyResult<usize> {
        let offset = offset_arg(offset)?;
        let len = non_negative("nbytes", nbytes)? as usize;
        if ptr == 0 && len > 0 {
            return Err(to_pyerr(Error::InvalidArgument("null buffer pointer".into())));
        }
        let mem = if device < 0 { Memory::Host } else { Memory::Cuda(device) };
        self.run(py, if write { Op::Write } else { Op::Read }, ptr, len, mem, offset)
    }

    /// Bytes in the server's region.
    #[getter]
    fn size(&self) -> u64 {
        self.inner.region().size
    }

    /// False for read-only (`serve_file`) regions.
    #[getter]
    fn writable(&self) -> bool {
        self.inner.region().writable()
    }

    #[getter]
    fn server_addr(&self) -> String {
        self.inner.server().to_string()
    }

    #[getter]
    fn provider(&self) -> &str {
        &self.inner.provider().provider
    }

    #[getter]
    fn domain(&self) -> &str {
        &self.inner.provider().domain
    }

    #[getter]
    fn chunk_size(&self) -> usize {
        self.inner.chunk_size()
    }

    #[getter]
    fn max_inflight(&self) -> usize {
        self.inner.options().max_inflight
    }

    #[getter]
    fn timeout(&self) -> f64 {
        self.inner.options().timeout.as_secs_f64()
    }

    #[getter]
    fn cuda(&self) -> bool {
        self.inner.options().cuda
    }

    #[getter]
    fn closed(&self) -> bool {
        self.inner.is_closed()
    }

    /// Why the connection broke (a failed transfer), or None.
    #[getter]
    fn broken(&self) -> Option<String> {
        self.inner.broken()
    }

    /// Releases the endpoint; the server sees the client leave.
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

    fn __repr__(&self) -> String {
        let state = if self.inner.is_closed() { ", closed" } else { "" };
        format!(
            "<dataio_rdma.Client to {} size={} provider={:?} chunk_size={} max_inflight={}{state}>",
            self.inner.server(),
            self.inner.region().size,
            self.inner.provider().provider,
            self.inner.chunk_size(),
            self.inner.options().max_inflight
        )
    }
}
