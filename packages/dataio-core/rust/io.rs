//! The flat IO verbs, `Reader` and `Writer`. Every verb resolves the backend
//! of its URI, releases the GIL, and runs the operation on the calling thread.

use crate::buffers::{ReadBuffer, WriteBuffer};
use crate::errors::IntoPy;
use bytes::Bytes;
use dataio_engine::host::pools;
use dataio_engine::io::archive;
use dataio_engine::io::backend::{self, Backend, ObjectMeta as Meta, ObjectWriter, ReadShape};
use dataio_engine::io::ranges::{self, RangePolicy};
use dataio_engine::io::registry;
use dataio_engine::Error;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::sync::{Arc, Mutex};

/// What `head`, `ls(detail=True)` and `glob(detail=True)` return.
#[pyclass(module = "dataio", name = "ObjectMeta", frozen, eq, skip_from_py_object)]
#[derive(Clone, PartialEq)]
pub struct ObjectMeta {
    #[pyo3(get)]
    uri: String,
    #[pyo3(get)]
    size: u64,
    /// Seconds since the Unix epoch, when known.
    #[pyo3(get)]
    mtime: Option<f64>,
    #[pyo3(get)]
    etag: Option<String>,
    #[pyo3(get)]
    is_dir: bool,
}

#[pymethods]
impl ObjectMeta {
    #[new]
    #[pyo3(signature = (uri, size=0, mtime=None, etag=None, is_dir=false))]
    fn new(uri: String, size: u64, mtime: Option<f64>, etag: Option<String>, is_dir: bool) -> Self {
        ObjectMeta { uri, size, mtime, etag, is_dir }
    }
    fn __repr__(&self) -> String {
        let kind = if self.is_dir { "dir" } else { "file" };
        let etag = self.etag.as_ref().map(|e| format!("{e:?}")).unwrap_or_else(|| "None".into());
        format!("ObjectMeta(uri={:?}, size={}, kind={kind}, etag={etag})", self.uri, self.size)
    }
    fn __reduce__(&self, py: Python<'_>) -> PyResult<(Py<PyAny>, Py<PyAny>)> {
        let cls = py.get_type::<ObjectMeta>().into_any().unbind();
        let args = (self.uri.clone(), self.size, self.mtime, self.etag.clone(), self.is_dir)
            .into_pyobject(py)?
            .into_any()
            .unbind();
        Ok((cls, args))
    }
}

impl From<Meta> for ObjectMeta {
    fn from(m: Meta) -> Self {
        ObjectMeta { uri: m.uri, size: m.size, mtime: m.mtime, etag: m.etag, is_dir: m.is_dir }
    }
}

fn resolve(py: Python<'_>, uri: &str) -> PyResult<Arc<dyn Backend>> {
    py.detach(|| registry::backend_for(uri)).map(|(b, _)| b).map_py(py)
}

fn non_negative(name: &str, v: i64) -> PyResult<u64> {
    u64::try_from(v).map_err(|_| PyValueError::new_err(format!("{name} must be >= 0, got {v}")))
}

/// Resolves the length to read: `size` when given, else the rest of the object.
/// The exact length of a ranged verb's read (a HEAD when `size` is not given).
fn span(py: Python<'_>, b: &Arc<dyn Backend>, uri: &str, offset: u64, size: Option<i64>) -> PyResult<u64> {
    let size = size.map(|s| non_negative("size", s)).transpose()?;
    py.detach(|| pools::block_on(backend::span_of(&**b, uri, offset, size))).map_py(py)
}

#[pyfunction]
pub fn head(py: Python<'_>, uri: &str) -> PyResult<ObjectMeta> {
    let b = resolve(py, uri)?;
    py.detach(|| pools::block_on(b.head(uri))).map(ObjectMeta::from).map_py(py)
}

#[pyfunction]
#[pyo3(signature = (uri, offset=0, size=None))]
pub fn read<'py>(py: Python<'py>, uri: &str, offset: i64, size: Option<i64>) -> PyResult<Bound<'py, PyBytes>> {
    let offset = non_negative("offset", offset)?;
    let size = size.map(|s| non_negative("size", s)).transpose()?;
    let b = resolve(py, uri)?;
    let n = match py.detach(|| pools::block_on(backend::read_shape(&*b, uri, offset, size))).map_py(py)? {
        ReadShape::Whole => {
            let data = py.detach(|| pools::block_on(backend::read_whole(&*b, uri))).map_py(py)?;
            return Ok(PyBytes::new(py, &data));
        }
        ReadShape::Span(n) => n,
    };
    PyBytes::new_with(py, n as usize, |dst| {
        if dst.is_empty() {
            // Still check the range (e.g. offset past the end).
            return py.detach(|| pools::block_on(b.read_range(uri, offset, 0))).map(|_| ()).map_py(py);
        }
        py.detach(|| pools::block_on(b.read_into(uri, offset, dst))).map(|_| ()).map_py(py)
    })
}

#[pyfunction]
#[pyo3(signature = (uri, buf, offset=0, size=None))]
pub fn fetch_into(py: Python<'_>, uri: &str, buf: &Bound<'_, PyAny>, offset: i64, size: Option<i64>) -> PyResult<u64> {
    let offset = non_negative("offset", offset)?;
    let mut held = WriteBuffer::get(buf)?;
    let b = resolve(py, uri)?;
    let n = span(py, &b, uri, offset, size)?;
    if n as usize > held.len() {
        return Err(PyValueError::new_err(format!(
            "{uri}: the destination buffer holds {} bytes but {n} bytes are to be read; pass a larger buffer or size=",
            held.len()
        )));
    }
    let dst = &mut held.as_mut_slice()[..n as usize];
    if n == 0 {
        return Ok(0);
    }
    // A long remote read goes out as parallel parts (see `ranges`).
    let policy = RangePolicy::for_backend(&*b);
    py.detach(|| pools::block_on(ranges::read_ranges_into(&*b, uri, vec![(offset, dst)], &policy))).map_py(py)?;
    Ok(n)
}

/// The policy of a ranged verb: the backend's default, with `gap` and
/// `part_size` overriding it when given.
fn range_policy(b: &dyn Backend, gap: Option<i64>, part_size: Option<i64>) -> PyResult<RangePolicy> {
    let mut policy = RangePolicy::for_backend(b);
    if let Some(g) = gap {
        policy.gap = non_negative("gap", g)?;
        policy.coalesce = true;
    }
    if let Some(p) = part_size {
        let p = non_negative("part_size", p)?;
        if p == 0 {
            return Err(PyValueError::new_err("part_size must be > 0"));
        }
        policy.part = p;
        policy.coalesce = true;
    }
    Ok(policy)
}

/// Bytes objects of each `(offset, size)` range of one object, fetched in as
/// few requests as the coalescing policy allows.
#[pyfunction]
#[pyo3(signature = (uri, ranges, *, gap=None, part_size=None))]
pub fn read_ranges<'py>(
    py: Python<'py>,
    uri: &str,
    ranges: Vec<(i64, i64)>,
    gap: Option<i64>,
    part_size: Option<i64>,
) -> PyResult<Vec<Bound<'py, PyBytes>>> {
    let b = resolve(py, uri)?;
    let policy = range_policy(&*b, gap, part_size)?;
    let mut outs = Vec::with_capacity(ranges.len());
    let mut spans = Vec::with_capacity(ranges.len());
    for (o, n) in ranges {
        let (o, n) = (non_negative("offset", o)?, non_negative("size", n)?);
        let len = isize::try_from(n).map_err(|_| PyValueError::new_err(format!("size {n} is too large")))?;
        // SAFETY: a fresh, uninitialised bytes object; filled below before
        // any Python code can see it, and never resized.
        let obj = unsafe {
            let ptr = pyo3::ffi::PyBytes_FromStringAndSize(std::ptr::null(), len);
            Bound::from_owned_ptr_or_err(py, ptr)?.cast_into_unchecked::<PyBytes>()
        };
        // SAFETY: `obj` is the fresh bytes object just made; its buffer lives as long as it does (kept in `outs`).
        let data = unsafe { pyo3::ffi::PyBytes_AsString(obj.as_ptr()) } as usize;
        spans.push((o, data, n as usize));
        outs.push(obj);
    }
    // SAFETY: each pointer is the buffer of a distinct bytes object in `outs`,
    // alive until we return.
    let dsts: Vec<(u64, &mut [u8])> =
        spans.iter().map(|&(o, p, n)| (o, unsafe { std::slice::from_raw_parts_mut(p as *mut u8, n) })).collect();
    py.detach(|| pools::block_on(ranges::read_ranges_into(&*b, uri, dsts, &policy))).map_py(py)?;
    Ok(outs)
}

/// Fills each buffer of `parts` (`(offset, buffer)` pairs) from its offset of
/// one object, coalescing and splitting like `read_ranges`; returns the bytes
/// written.
#[pyfunction]
#[pyo3(signature = (uri, parts, *, gap=None, part_size=None))]
pub fn fetch_ranges_into(
    py: Python<'_>,
    uri: &str,
    parts: Vec<(i64, Bound<'_, PyAny>)>,
    gap: Option<i64>,
    part_size: Option<i64>,
) -> PyResult<u64> {
    let b = resolve(py, uri)?;
    let policy = range_policy(&*b, gap, part_size)?;
    let mut held = Vec::with_capacity(parts.len());
    for (o, buf) in &parts {
        held.push((non_negative("offset", *o)?, WriteBuffer::get(buf)?));
    }
    let total: u64 = held.iter().map(|(_, h)| h.len() as u64).sum();
    let dsts: Vec<(u64, &mut [u8])> = held.iter_mut().map(|(o, h)| (*o, h.as_mut_slice())).collect();
    py.detach(|| pools::block_on(ranges::read_ranges_into(&*b, uri, dsts, &policy))).map_py(py)?;
    Ok(total)
}

#[pyfunction]
pub fn write(py: Python<'_>, uri: &str, data: &Bound<'_, PyAny>) -> PyResult<String> {
    let held = ReadBuffer::get(data)?;
    let b = resolve(py, uri)?;
    let bytes = Bytes::copy_from_slice(held.as_slice());
    drop(held);
    py.detach(|| pools::block_on(b.put(uri, bytes))).map(|p| p.etag).map_py(py)
}

#[pyfunction]
pub fn exists(py: Python<'_>, uri: &str) -> PyResult<bool> {
    let b = resolve(py, uri)?;
    py.detach(|| pools::block_on(b.exists(uri))).map_py(py)
}

#[pyfunction]
pub fn delete(py: Python<'_>, uri: &str) -> PyResult<()> {
    let b = resolve(py, uri)?;
    py.detach(|| pools::block_on(b.delete(uri))).map_py(py)
}

#[pyfunction]
#[pyo3(signature = (uri, recursive=false))]
pub fn ls(py: Python<'_>, uri: &str, recursive: bool) -> PyResult<Vec<ObjectMeta>> {
    let b = resolve(py, uri)?;
    py.detach(|| pools::block_on(b.list(uri, recursive)))
        .map(|v| v.into_iter().map(ObjectMeta::from).collect())
        .map_py(py)
}

#[pyfunction]
pub fn glob(py: Python<'_>, pattern: &str) -> PyResult<Vec<ObjectMeta>> {
    let b = resolve(py, pattern)?;
    py.detach(|| pools::block_on(backend::glob(&*b, pattern)))
        .map(|v| v.into_iter().map(ObjectMeta::from).collect())
        .map_py(py)
}

/// A handle on one source: ranged and whole reads, gunzip, tar entries,
/// chunked iteration, and the buffer protocol (zero-copy over a local map).
#[pyclass(module = "dataio", name = "Reader", frozen)]
pub struct Reader {
    uri: String,
    /// The whole content once loaded (or from the start for derived readers).
    data: Mutex<Option<Bytes>>,
    /// Present for readers of a stored object; absent for derived ones.
    backend: Option<Arc<dyn Backend>>,
}

impl Reader {
    fn derived(uri: String, data: Bytes) -> Self {
        Reader { uri, data: Mutex::new(Some(data)), backend: None }
    }

    fn loaded(&self, py: Python<'_>) -> PyResult<Bytes> {
        if let Some(d) = self.data.lock().unwrap().as_ref() {
            return Ok(d.clone());
        }
        let b = self.backend.clone().expect("stored readers have a backend");
        let uri = self.uri.clone();
        let data = py.detach(|| pools::block_on(b.read_all(&uri))).map_py(py)?;
        *self.data.lock().unwrap() = Some(data.clone());
        Ok(data)
    }
}

#[pyfunction]
pub fn reader(py: Python<'_>, uri: &str) -> PyResult<Reader> {
    let b = resolve(py, uri)?;
    Ok(Reader { uri: uri.to_string(), data: Mutex::new(None), backend: Some(b) })
}

#[pymethods]
impl Reader {
    #[getter]
    fn uri(&self) -> &str {
        &self.uri
    }

    /// Size in bytes (a `head` for stored objects not read yet).
    #[getter]
    fn size(&self, py: Python<'_>) -> PyResult<u64> {
        if let Some(d) = self.data.lock().unwrap().as_ref() {
            return Ok(d.len() as u64);
        }
        let b = self.backend.clone().expect("stored readers have a backend");
        py.detach(|| pools::block_on(b.head(&self.uri))).map(|m| m.size).map_py(py)
    }

    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        self.size(py).map(|s| s as usize)
    }

    /// Bytes `[offset, offset + size)`; `size=None` reads to the end.
    #[pyo3(signature = (offset=0, size=None))]
    fn read<'py>(&self, py: Python<'py>, offset: i64, size: Option<i64>) -> PyResult<Bound<'py, PyBytes>> {
        let offset = non_negative("offset", offset)?;
        let loaded = self.data.lock().unwrap().clone();
        match (loaded, &self.backend) {
            (Some(d), _) => {
                let len = d.len() as u64;
                let size = match size {
                    Some(s) => non_negative("size", s)?,
                    None => len.checked_sub(offset).unwrap_or(u64::MAX),
                };
                match offset.checked_add(size) {
                    Some(end) if end <= len => Ok(PyBytes::new(py, &d[offset as usize..end as usize])),
                    _ => Err(crate::errors::to_pyerr(
                        py,
                        Error::OutOfRange {
                            uri: self.uri.clone(),
                            offset,
                            size: if size == u64::MAX { 0 } else { size },
                            len,
                        },
                    )),
                }
            }
            (None, Some(_)) => read(py, &self.uri, offset as i64, size),
            (None, None) => unreachable!("derived readers are loaded"),
        }
    }

    fn read_all<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let d = self.loaded(py)?;
        Ok(PyBytes::new(py, &d))
    }

    /// Fills `buf` from `offset`; returns the number of bytes written.
    #[pyo3(signature = (buf, offset=0))]
    fn read_into(&self, py: Python<'_>, buf: &Bound<'_, PyAny>, offset: i64) -> PyResult<u64> {
        let loaded = self.data.lock().unwrap().clone();
        match loaded {
            None => fetch_into(py, &self.uri, buf, offset, None),
            Some(d) => {
                let offset = non_negative("offset", offset)? as usize;
                let mut held = WriteBuffer::get(buf)?;
                let src = d.get(offset..).ok_or_else(|| {
                    crate::errors::to_pyerr(
                        py,
                        Error::OutOfRange {
                            uri: self.uri.clone(),
                            offset: offset as u64,
                            size: 0,
                            len: d.len() as u64,
                        },
                    )
                })?;
                if src.len() > held.len() {
                    return Err(PyValueError::new_err(format!(
                        "{}: the buffer holds {} bytes, {} are to be read",
                        self.uri,
                        held.len(),
                        src.len()
                    )));
                }
                held.as_mut_slice()[..src.len()].copy_from_slice(src);
                Ok(src.len() as u64)
            }
        }
    }

    /// A reader over the decompressed content of this gzip stream.
    #[pyo3(signature = (max_size=archive::DEFAULT_MAX_GUNZIP))]
    fn gunzip(&self, py: Python<'_>, max_size: u64) -> PyResult<Reader> {
        let d = self.loaded(py)?;
        let uri = self.uri.clone();
        let out = py.detach(|| archive::gunzip(&uri, &d, max_size)).map_py(py)?;
        Ok(Reader::derived(format!("{}|gunzip", self.uri), out))
    }

    /// A reader over one entry of this tar archive (a view, no copy).
    fn tar_entry(&self, py: Python<'_>, name: &str) -> PyResult<Reader> {
        let d = self.loaded(py)?;
        let uri = self.uri.clone();
        let entry = py.detach(|| archive::tar_entry(&uri, &d, name)).map_py(py)?;
        Ok(Reader::derived(format!("{}#{name}", self.uri), entry))
    }

    /// Names and sizes of the regular files in this tar archive, in order.
    fn tar_entries(&self, py: Python<'_>) -> PyResult<Vec<(String, u64)>> {
        let d = self.loaded(py)?;
        let uri = self.uri.clone();
        let entries = py.detach(|| archive::tar_entries(&uri, &d)).map_py(py)?;
        Ok(entries.into_iter().map(|e| (e.name, e.size)).collect())
    }

    /// (name, size, data offset) of every regular file, for slicing the
    /// reader's buffer without copying.
    fn tar_index(&self, py: Python<'_>) -> PyResult<Vec<(String, u64, u64)>> {
        let d = self.loaded(py)?;
        let uri = self.uri.clone();
        let entries = py.detach(|| archive::tar_entries(&uri, &d)).map_py(py)?;
        Ok(entries.into_iter().map(|e| (e.name, e.size, e.offset)).collect())
    }

    /// Iterates the content in chunks of `chunk_size` bytes.
    #[pyo3(signature = (chunk_size=8 << 20))]
    fn iter_chunks(slf: Bound<'_, Self>, chunk_size: usize) -> PyResult<ChunkIter> {
        if chunk_size == 0 {
            return Err(PyValueError::new_err("chunk_size must be > 0"));
        }
        let size = slf.get().size(slf.py())?;
        Ok(ChunkIter { reader: slf.unbind(), pos: Mutex::new(0), size, chunk: chunk_size as u64 })
    }

    fn __iter__(slf: Bound<'_, Self>) -> PyResult<ChunkIter> {
        Self::iter_chunks(slf, 8 << 20)
    }

    fn __repr__(&self) -> String {
        let state = if self.data.lock().unwrap().is_some() { "loaded" } else { "lazy" };
        format!("<dataio.Reader {:?} ({state})>", self.uri)
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        *self.data.lock().unwrap() = None;
        false
    }

    /// Read-only buffer over the whole content: for a large local file this is
    /// the memory map itself.
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut pyo3::ffi::Py_buffer,
        flags: std::os::raw::c_int,
    ) -> PyResult<()> {
        if flags & pyo3::ffi::PyBUF_WRITABLE != 0 {
            return Err(pyo3::exceptions::PyBufferError::new_err("dataio.Reader buffers are read-only"));
        }
        let data = slf.get().loaded(slf.py())?;
        // SAFETY: `data` is kept alive by the reader (stored in `self.data`,
        // which `__exit__` may clear). To stay valid even then, each view owns
        // a boxed clone of the Bytes handle in `internal`, freed on release.
        let holder = Box::into_raw(Box::new(data));
        // SAFETY: `view` is the Py_buffer Python passed in; `holder` stays alive until __releasebuffer__ frees it.
        let rc = unsafe {
            pyo3::ffi::PyBuffer_FillInfo(
                view,
                slf.as_ptr(),
                (*holder).as_ptr() as *mut _,
                (*holder).len() as isize,
                1,
                flags,
            )
        };
        if rc != 0 {
            // SAFETY: the fill failed, so nothing else took `holder`: it is freed once, here.
            drop(unsafe { Box::from_raw(holder) });
            return Err(PyErr::fetch(slf.py()));
        }
        // SAFETY: `view` was filled above; `internal` is ours to set.
        unsafe { (*view).internal = holder as *mut _ };
        Ok(())
    }

    unsafe fn __releasebuffer__(&self, view: *mut pyo3::ffi::Py_buffer) {
        // SAFETY: `internal` is the Box<Bytes> made in __getbuffer__.
        let holder = unsafe { (*view).internal } as *mut Bytes;
        if !holder.is_null() {
            // SAFETY: `holder` is the Box<Bytes> made in __getbuffer__, freed once (the view's last release).
            drop(unsafe { Box::from_raw(holder) });
        }
    }
}

#[pyclass(module = "dataio._native", name = "ChunkIter")]
pub struct ChunkIter {
    reader: Py<Reader>,
    pos: Mutex<u64>,
    size: u64,
    chunk: u64,
}

#[pymethods]
impl ChunkIter {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }
    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let start = *self.pos.lock().unwrap();
        if start >= self.size {
            return Ok(None);
        }
        let n = self.chunk.min(self.size - start);
        let out = self.reader.bind(py).get().read(py, start as i64, Some(n as i64))?;
        *self.pos.lock().unwrap() = start + n;
        Ok(Some(out))
    }
}

/// A streaming write: nothing is visible until `close()`; an exception inside
/// the `with` block (or `abort()`) leaves nothing behind.
#[pyclass(module = "dataio", name = "Writer", frozen)]
pub struct Writer {
    uri: String,
    inner: Mutex<Option<Box<dyn ObjectWriter>>>,
    written: Mutex<u64>,
    etag: Mutex<Option<String>>,
}

#[pyfunction]
pub fn writer(py: Python<'_>, uri: &str) -> PyResult<Writer> {
    let b = resolve(py, uri)?;
    let w = py.detach(|| pools::block_on(b.open_writer(uri))).map_py(py)?;
    Ok(Writer { uri: uri.to_string(), inner: Mutex::new(Some(w)), written: Mutex::new(0), etag: Mutex::new(None) })
}

impl Writer {
    fn closed_error(&self) -> PyErr {
        PyValueError::new_err(format!("{}: the writer is already closed", self.uri))
    }

    fn push(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<u64> {
        let held = ReadBuffer::get(data)?;
        let bytes = Bytes::copy_from_slice(held.as_slice());
        drop(held);
        let n = bytes.len() as u64;
        let mut guard = self.inner.lock().unwrap();
        let w = guard.as_mut().ok_or_else(|| self.closed_error())?;
        let result = py.detach(|| pools::block_on(w.write(bytes)));
        if let Err(e) = result {
            // A failed write poisons the object: abort so nothing partial appears.
            if let Some(w) = guard.take() {
                let _ = py.detach(|| pools::block_on(w.abort()));
            }
            return Err(crate::errors::to_pyerr(py, e));
        }
        *self.written.lock().unwrap() += n;
        Ok(n)
    }
}

#[pymethods]
impl Writer {
    #[getter]
    fn uri(&self) -> &str {
        &self.uri
    }
    #[getter]
    fn closed(&self) -> bool {
        self.inner.lock().unwrap().is_none()
    }
    /// Bytes written so far.
    #[getter]
    fn bytes_written(&self) -> u64 {
        *self.written.lock().unwrap()
    }
    /// The committed object's tag, after `close()`.
    #[getter]
    fn etag(&self) -> Option<String> {
        self.etag.lock().unwrap().clone()
    }

    fn write(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<u64> {
        self.push(py, data)
    }

    /// Writes every chunk of an iterable; returns the total bytes written.
    fn write_chunks(&self, py: Python<'_>, chunks: &Bound<'_, PyAny>) -> PyResult<u64> {
        let mut total = 0;
        for chunk in chunks.try_iter()? {
            match chunk {
                Ok(c) => total += self.push(py, &c)?,
                Err(e) => {
                    self.abort(py)?;
                    return Err(e);
                }
            }
        }
        Ok(total)
    }

    /// Commits the object; returns its etag. Idempotent.
    fn close(&self, py: Python<'_>) -> PyResult<Option<String>> {
        let Some(w) = self.inner.lock().unwrap().take() else {
            return Ok(self.etag.lock().unwrap().clone());
        };
        let put = py.detach(|| pools::block_on(w.commit())).map_py(py)?;
        *self.etag.lock().unwrap() = Some(put.etag.clone());
        Ok(Some(put.etag))
    }

    /// Drops everything written; the destination is left as it was.
    fn abort(&self, py: Python<'_>) -> PyResult<()> {
        if let Some(w) = self.inner.lock().unwrap().take() {
            py.detach(|| pools::block_on(w.abort())).map_py(py)?;
        }
        Ok(())
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    #[pyo3(signature = (exc_type, _exc, _tb))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: &Bound<'_, PyAny>,
        _exc: &Bound<'_, PyAny>,
        _tb: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        if exc_type.is_none() {
            self.close(py)?;
        } else {
            self.abort(py)?;
        }
        Ok(false)
    }

    fn __repr__(&self) -> String {
        let state = if self.closed() { "closed" } else { "open" };
        format!("<dataio.Writer {:?} ({state}, {} bytes)>", self.uri, self.bytes_written())
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        // Never commit implicitly: an unclosed writer is abandoned.
        if let Some(w) = self.inner.get_mut().ok().and_then(Option::take) {
            let _ = pools::block_on(w.abort());
        }
    }
}

/// Runs native decoder `name` (a plugin's, see `register_native_op`) once on
/// the object at `uri`, read by range as a loader would: the verbs plugins
/// build on their decoders (`dataio.read_video`). Returns (dtype, shape,
/// bytes, bytes fetched).
#[pyfunction]
#[pyo3(signature = (name, uri, params="{}", seed=None, epoch=0, index=0))]
#[allow(clippy::type_complexity)]
pub fn call_native_op<'py>(
    py: Python<'py>,
    name: &str,
    uri: &str,
    params: &str,
    seed: Option<u64>,
    epoch: u64,
    index: u64,
) -> PyResult<(String, Vec<usize>, Bound<'py, PyBytes>, u64)> {
    use dataio_engine::runtime::native_ops::{self, CallKey, StoreObject};
    let op = native_ops::get(name).ok_or_else(|| {
        PyValueError::new_err(format!("no native op {name:?} is registered (is its plugin installed?)"))
    })?;
    let params: serde_json::Map<String, serde_json::Value> = serde_json::from_str(params)
        .map_err(|e| PyValueError::new_err(format!("op {name}: params must be a JSON object: {e}")))?;
    let b = resolve(py, uri)?;
    let (size, version) = py.detach(|| StoreObject::head(&*b, uri)).map_py(py)?;
    let fetched = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let count = fetched.clone();
    let counted = Arc::new(move |n: u64| {
        count.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    });
    let object = StoreObject::new(b.clone(), uri.to_string(), size, version, counted);
    let key = CallKey { seed, epoch, index, stream: 0 };
    let t = py
        .detach(|| {
            let prepared = op.prepare(&params)?;
            if op.reads_ranges() {
                prepared.decode_ranged(None, &object, key, uri)
            } else {
                let data = pools::block_on(b.read_all(uri))?;
                fetched.fetch_add(data.len() as u64, std::sync::atomic::Ordering::Relaxed);
                prepared.decode(&data, key, uri)
            }
        })
        .map_err(|e| naming_the_object(e, uri))
        .map_py(py)?;
    let fetched = fetched.load(std::sync::atomic::Ordering::Relaxed);
    Ok((t.dtype.name().to_string(), t.shape.clone(), PyBytes::new(py, t.bytes()), fetched))
}

/// A verb decodes one object, with no record to name: an op's refusal
/// (which names the op, not the data) gains the object's URI.
fn naming_the_object(e: Error, uri: &str) -> Error {
    match e {
        Error::Decode { op, detail } if !detail.contains(uri) => {
            Error::Decode { op, detail: format!("{uri}: {detail}") }
        }
        Error::InvalidArgument(msg) if !msg.contains(uri) => Error::InvalidArgument(format!("{uri}: {msg}")),
        other => other,
    }
}
