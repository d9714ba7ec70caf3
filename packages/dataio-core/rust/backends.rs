//! The three kinds of backend the registry accepts, as Python sees them:
//! the core's own native backends ([`NativeBackend`]), a plugin's native
//! table in a `dataio.backend.v1` capsule, and any Python object with the
//! documented methods ([`PyBackend`], which takes the GIL per call).

use crate::errors::{from_pyerr, IntoPy};
use async_trait::async_trait;
use bytes::Bytes;
use dataio_engine::io::abi_backend::{AbiBackend, AbiBackendRef};
use dataio_engine::io::backend::{Backend, Capabilities, ObjectMeta, ObjectWriter, PutResult};
use dataio_engine::io::registry;
use dataio_engine::{Error, Result};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyCapsule, PyDict};
use std::sync::Arc;

/// An opaque handle to a backend implemented inside the core.
#[pyclass(module = "dataio._native", name = "NativeBackend", frozen)]
pub struct NativeBackend {
    pub inner: Arc<dyn Backend>,
}

#[pymethods]
impl NativeBackend {
    #[getter]
    fn name(&self) -> String {
        self.inner.name().to_string()
    }
    #[getter]
    fn capabilities(&self) -> Vec<&'static str> {
        self.inner.capabilities().names()
    }
    fn __repr__(&self) -> String {
        format!("<dataio native backend {:?}>", self.inner.name())
    }
}

/// The core's local-file backend, for the built-in plugin to register.
#[pyfunction]
pub fn local_backend() -> NativeBackend {
    NativeBackend { inner: Arc::new(dataio_engine::io::local::LocalBackend) }
}

/// An in-memory backend exported through the v1 C ABI and handed over in a
/// capsule, exactly as a plugin's native module would. For tests of the ABI.
#[pyfunction]
pub fn _abi_memory_backend(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    let table = dataio_abi::export(dataio_engine::io::testing::MemExport::default());
    // SAFETY: the name is a static C string; the pointer is a fresh table
    // whose ownership passes to whoever adopts the capsule (documented ABI).
    unsafe {
        let cap = pyo3::ffi::PyCapsule_New(table as *mut std::ffi::c_void, dataio_abi::CAPSULE_NAME.as_ptr(), None);
        Bound::from_owned_ptr_or_err(py, cap)
    }
}

/// Marks a capsule whose table now belongs to dataio.
static ADOPTED: u8 = 0;

/// Turns whatever a registration produced into an engine backend.
pub fn adopt(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<Arc<dyn Backend>> {
    if let Ok(native) = obj.cast::<NativeBackend>() {
        return Ok(native.get().inner.clone());
    }
    if let Ok(capsule) = obj.cast::<PyCapsule>() {
        return adopt_capsule(py, capsule);
    }
    Ok(Arc::new(PyBackend::new(py, obj.clone().unbind())?))
}

fn adopt_capsule(py: Python<'_>, capsule: &Bound<'_, PyCapsule>) -> PyResult<Arc<dyn Backend>> {
    // SAFETY: the capsule's name pointer is a NUL-terminated string owned by the live capsule.
    let name = capsule.name()?.map(|n| unsafe { n.as_cstr() }.to_string_lossy().into_owned()).unwrap_or_default();
    if name.as_bytes() != dataio_abi::CAPSULE_NAME.to_bytes() {
        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "backend capsule is named {name:?}; dataio expects {:?}",
            dataio_abi::CAPSULE_NAME
        )));
    }
    let adopted = &ADOPTED as *const u8 as *mut std::ffi::c_void;
    // SAFETY: reading and setting the context pointer of a live capsule.
    unsafe {
        if pyo3::ffi::PyCapsule_GetContext(capsule.as_ptr()) == adopted {
            return Err(pyo3::exceptions::PyValueError::new_err("this backend capsule was already registered once"));
        }
    }
    let table = capsule.pointer_checked(Some(dataio_abi::CAPSULE_NAME))?.as_ptr() as *mut dataio_abi::BackendV1;
    // SAFETY: a capsule of this name holds a `BackendV1*` whose ownership
    // passes to dataio (docs/plugins.md); `from_raw` checks the handshake.
    let backend = unsafe { AbiBackend::from_raw(table) }.map_py(py)?;
    // SAFETY: as above; marks the capsule so it cannot be adopted twice.
    unsafe { pyo3::ffi::PyCapsule_SetContext(capsule.as_ptr(), adopted) };
    Ok(Arc::new(AbiBackendRef(Arc::new(backend))))
}

/// A Python object implementing the backend protocol (see docs/plugins.md).
pub struct PyBackend {
    obj: Py<PyAny>,
    name: String,
    caps: Capabilities,
}

impl PyBackend {
    pub fn new(py: Python<'_>, obj: Py<PyAny>) -> PyResult<Self> {
        let b = obj.bind(py);
        for required in ["head", "read_range", "list", "exists"] {
            if !b.hasattr(required)? {
                return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                    "{} is not a dataio backend: it has no {required}() method",
                    b.repr()?
                )));
            }
        }
        let name = match b.getattr("name") {
            Ok(n) => {
                n.extract::<String>().unwrap_or_else(|_| b.get_type().name().map(|n| n.to_string()).unwrap_or_default())
            }
            Err(_) => b.get_type().name().map(|n| n.to_string()).unwrap_or_default(),
        };
        let mut caps = Capabilities {
            write: b.hasattr("open_writer")?,
            delete: b.hasattr("delete")?,
            list: true,
            ranged_read: true,
            // A Python call may wait on anything: never read inline.
            mapped: false,
        };
        if let Ok(declared) = b.getattr("capabilities") {
            if let Ok(set) = declared.extract::<Vec<String>>() {
                let has = |n: &str| set.iter().any(|s| s == n);
                caps = Capabilities {
                    write: has("write"),
                    delete: has("delete"),
                    list: has("list"),
                    ranged_read: has("ranged_read"),
                    mapped: false,
                };
            }
        }
        Ok(PyBackend { obj, name, caps })
    }

    fn call<T>(&self, uri: &str, f: impl FnOnce(Python<'_>, &Bound<'_, PyAny>) -> PyResult<T>) -> Result<T> {
        Python::attach(|py| f(py, self.obj.bind(py)).map_err(|e| from_pyerr(py, e, Some(uri))))
    }
}

/// Reads the metadata a Python backend returns (a mapping or an object with attributes).
pub fn meta_from_py(uri_default: &str, m: &Bound<'_, PyAny>) -> PyResult<ObjectMeta> {
    let get = |name: &str| -> PyResult<Option<Bound<'_, PyAny>>> {
        if let Ok(d) = m.cast::<PyDict>() {
            return d.get_item(name);
        }
        match m.getattr(name) {
            Ok(v) => Ok(Some(v)),
            Err(_) => Ok(None),
        }
    };
    fn opt(v: Option<Bound<'_, PyAny>>) -> Option<Bound<'_, PyAny>> {
        v.filter(|x| !x.is_none())
    }
    Ok(ObjectMeta {
        uri: match opt(get("uri")?) {
            Some(u) => u.extract()?,
            None => uri_default.to_string(),
        },
        size: opt(get("size")?).map(|v| v.extract()).transpose()?.unwrap_or(0),
        mtime: opt(get("mtime")?).map(|v| v.extract()).transpose()?,
        etag: opt(get("etag")?).map(|v| v.extract()).transpose()?,
        is_dir: opt(get("is_dir")?).map(|v| v.extract()).transpose()?.unwrap_or(false),
    })
}

fn bytes_of(obj: &Bound<'_, PyAny>) -> PyResult<Bytes> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(Bytes::copy_from_slice(b.as_bytes()));
    }
    let buf = crate::buffers::ReadBuffer::get(obj)?;
    Ok(Bytes::copy_from_slice(buf.as_slice()))
}

struct PyWriter {
    writer: Py<PyAny>,
    uri: String,
}

#[async_trait]
impl ObjectWriter for PyWriter {
    async fn write(&mut self, data: Bytes) -> Result<()> {
        Python::attach(|py| {
            self.writer
                .bind(py)
                .call_method1("write", (PyBytes::new(py, &data),))
                .map(|_| ())
                .map_err(|e| from_pyerr(py, e, Some(&self.uri)))
        })
    }
    async fn commit(self: Box<Self>) -> Result<PutResult> {
        Python::attach(|py| {
            let r = self.writer.bind(py).call_method0("commit").map_err(|e| from_pyerr(py, e, Some(&self.uri)))?;
            let etag = if r.is_none() { String::new() } else { r.str().map(|s| s.to_string()).unwrap_or_default() };
            Ok::<_, Error>(PutResult { etag, size: 0 })
        })
    }
    async fn abort(self: Box<Self>) -> Result<()> {
        Python::attach(|py| {
            self.writer.bind(py).call_method0("abort").map(|_| ()).map_err(|e| from_pyerr(py, e, Some(&self.uri)))
        })
    }
}

#[async_trait]
impl Backend for PyBackend {
    fn name(&self) -> &str {
        &self.name
    }
    fn capabilities(&self) -> Capabilities {
        self.caps
    }
    async fn head(&self, uri: &str) -> Result<ObjectMeta> {
        self.call(uri, |_, b| meta_from_py(uri, &b.call_method1("head", (uri,))?))
    }
    async fn read_range(&self, uri: &str, offset: u64, size: u64) -> Result<Bytes> {
        let data = self.call(uri, |_, b| bytes_of(&b.call_method1("read_range", (uri, offset, size))?))?;
        if data.len() as u64 != size {
            return Err(Error::Backend {
                uri: uri.into(),
                detail: format!("backend {} returned {} bytes for a {size}-byte range", self.name, data.len()),
                transient: false,
            });
        }
        Ok(data)
    }
    async fn read_all(&self, uri: &str) -> Result<Bytes> {
        self.call(uri, |_, b| {
            if b.hasattr("read_all")? {
                bytes_of(&b.call_method1("read_all", (uri,))?)
            } else {
                let meta = meta_from_py(uri, &b.call_method1("head", (uri,))?)?;
                bytes_of(&b.call_method1("read_range", (uri, 0u64, meta.size))?)
            }
        })
    }
    async fn open_writer(&self, uri: &str) -> Result<Box<dyn ObjectWriter>> {
        if !self.caps.write {
            return Err(Error::Unsupported { uri: uri.into(), what: "writing".into() });
        }
        let writer = self.call(uri, |_, b| b.call_method1("open_writer", (uri,)).map(Bound::unbind))?;
        Ok(Box::new(PyWriter { writer, uri: uri.to_string() }))
    }
    async fn list(&self, prefix: &str, recursive: bool) -> Result<Vec<ObjectMeta>> {
        self.call(prefix, |_, b| {
            let it = b.call_method1("list", (prefix, recursive))?;
            let mut out = Vec::new();
            for m in it.try_iter()? {
                out.push(meta_from_py(prefix, &m?)?);
            }
            Ok(out)
        })
    }
    async fn exists(&self, uri: &str) -> Result<bool> {
        self.call(uri, |_, b| b.call_method1("exists", (uri,))?.is_truthy())
    }
    async fn delete(&self, uri: &str) -> Result<()> {
        if !self.caps.delete {
            return Err(Error::Unsupported { uri: uri.into(), what: "deleting".into() });
        }
        self.call(uri, |_, b| b.call_method1("delete", (uri,)).map(|_| ()))
    }
}

/// Registers a backend object for a scheme (the plugin registry calls this).
#[pyfunction]
pub fn register_backend(py: Python<'_>, scheme: &str, backend: &Bound<'_, PyAny>) -> PyResult<()> {
    let b = adopt(py, backend)?;
    registry::register(scheme, b);
    Ok(())
}

#[pyfunction]
pub fn unregister_backend(scheme: &str) -> bool {
    registry::unregister(scheme)
}

#[pyfunction]
pub fn registered_schemes() -> Vec<String> {
    registry::registered_schemes()
}

/// Installs the callable the engine asks for a backend when it meets a scheme
/// it has none for. The callable returns a backend object or None.
#[pyfunction]
#[pyo3(signature = (resolver))]
pub fn set_scheme_resolver(resolver: Option<Py<PyAny>>) {
    match resolver {
        None => registry::set_resolver(None),
        Some(f) => registry::set_resolver(Some(Arc::new(move |scheme: &str| {
            Python::attach(|py| {
                let r = f.bind(py).call1((scheme,)).map_err(|e| from_pyerr(py, e, None))?;
                if r.is_none() {
                    return Ok(None);
                }
                adopt(py, &r).map(Some).map_err(|e| from_pyerr(py, e, None))
            })
        }))),
    }
}

/// Capabilities of the backend serving `uri` (loading it if needed).
#[pyfunction]
pub fn backend_info(py: Python<'_>, uri: &str) -> PyResult<(String, Vec<&'static str>)> {
    let (b, _) = py.detach(|| registry::backend_for(uri)).map_py(py)?;
    Ok((b.name().to_string(), b.capabilities().names()))
}

// -- native ops (dataio_abi::ops) ---------------------------------------------

static OP_ADOPTED: u8 = 0;

/// The op table pointer in `capsule` and its ABI version (1 or 2, by the
/// capsule's name).
fn op_table_of(capsule: &Bound<'_, PyAny>, name: &str) -> PyResult<(*mut std::ffi::c_void, u32)> {
    use dataio_abi::ops::{OP_CAPSULE_NAME, OP_V2_CAPSULE_NAME};
    let capsule = capsule.cast::<PyCapsule>().map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err(format!(
            "op {name}: a native op is a capsule named 'dataio.op.v2' (or 'dataio.op.v1')"
        ))
    })?;
    // SAFETY: the capsule's name pointer is a NUL-terminated string owned by the live capsule.
    let cname = capsule.name()?.map(|n| unsafe { n.as_cstr() }.to_string_lossy().into_owned()).unwrap_or_default();
    let (cname_c, version) = if cname.as_bytes() == OP_V2_CAPSULE_NAME.to_bytes() {
        (OP_V2_CAPSULE_NAME, 2)
    } else if cname.as_bytes() == OP_CAPSULE_NAME.to_bytes() {
        (OP_CAPSULE_NAME, 1)
    } else {
        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "op {name}: the capsule is named {cname:?}; dataio expects \"dataio.op.v2\" (or \"dataio.op.v1\")"
        )));
    };
    let adopted = &OP_ADOPTED as *const u8 as *mut std::ffi::c_void;
    // SAFETY: reading the context pointer of a live capsule.
    if unsafe { pyo3::ffi::PyCapsule_GetContext(capsule.as_ptr()) } == adopted {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "op {name}: this capsule was already registered once; make a new one per registration"
        )));
    }
    Ok((capsule.pointer_checked(Some(cname_c))?.as_ptr(), version))
}

/// What the version 2 op table in `capsule` declares: `(name, kind, flags,
/// doc, params JSON, hooks JSON, output JSON)`; the Python side registers the
/// op from it (`dataio.plugins.NativeOpsPlugin`).
#[pyfunction]
#[allow(clippy::type_complexity)]
pub fn native_op_declaration(
    py: Python<'_>,
    capsule: &Bound<'_, PyAny>,
) -> PyResult<(String, &'static str, u32, String, String, String, String)> {
    let (table, version) = op_table_of(capsule, "?")?;
    if version != 2 {
        return Err(pyo3::exceptions::PyTypeError::new_err(
            "a dataio.op.v1 capsule declares nothing: register it with its name, kind and params",
        ));
    }
    // SAFETY: a dataio.op.v2 capsule holds an `OpV2*`, alive while the capsule is.
    let d = unsafe { dataio_engine::runtime::native_ops::declaration(table.cast()) }.map_py(py)?;
    let kind = if d.kind == dataio_abi::ops::kind::DECODE { "decode" } else { "transform" };
    Ok((d.name, kind, d.flags, d.doc, d.params, d.hooks, d.output))
}

/// Adopts the op table in `capsule` (named `dataio.op.v2`, or `dataio.op.v1`)
/// as native op `name` (`kind`: "decode" or "transform"): it then runs on
/// the CPU pool without the GIL wherever a plan names it. A capsule is
/// adopted once; its table belongs to the core from then on.
#[pyfunction]
pub fn register_native_op(py: Python<'_>, name: &str, capsule: &Bound<'_, PyAny>, kind: &str) -> PyResult<()> {
    let decode = match kind {
        "decode" => true,
        "transform" => false,
        other => {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "op {name}: kind must be 'decode' or 'transform', got {other:?}"
            )))
        }
    };
    let (table, version) = op_table_of(capsule, name)?;
    if version == 2 {
        // SAFETY: a dataio.op.v2 capsule holds an `OpV2*`, alive while the capsule is.
        let d = unsafe { dataio_engine::runtime::native_ops::declaration(table.cast()) }.map_py(py)?;
        if (d.kind == dataio_abi::ops::kind::DECODE) != decode {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "op {name}: registered as kind={kind:?} but its table declares the other kind"
            )));
        }
        // SAFETY: ownership of the table passes to dataio (docs/plugins.md).
        unsafe { dataio_engine::runtime::native_ops::register_v2(name, table.cast()) }.map_py(py)?;
    } else {
        // SAFETY: a capsule of this name holds an `OpV1*` whose ownership
        // passes to dataio (docs/plugins.md); `register` checks the handshake.
        unsafe { dataio_engine::runtime::native_ops::register(name, decode, table.cast()) }.map_py(py)?;
    }
    let adopted = &OP_ADOPTED as *const u8 as *mut std::ffi::c_void;
    // SAFETY: marks the live capsule so it cannot be adopted twice (and so
    // its destructor leaves the table to the core).
    unsafe { pyo3::ffi::PyCapsule_SetContext(capsule.as_ptr(), adopted) };
    Ok(())
}

/// Forgets native op `name`.
#[pyfunction]
pub fn unregister_native_op(name: &str) -> bool {
    dataio_engine::runtime::native_ops::unregister(name)
}

/// The native ops registered in this process.
#[pyfunction]
pub fn native_ops() -> Vec<String> {
    dataio_engine::runtime::native_ops::names()
}
