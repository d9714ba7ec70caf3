//! Python record sources and plugin ops, adapted to the engine's traits.
//! A source takes the GIL once per chunk of records, converts only the
//! fields the plan reads, and lets go.

use crate::errors::from_pyerr;
use bytes::Bytes;
use dataio_engine::base::tensor::{DType, Tensor};
use dataio_engine::order::{Layout, MixSpec, Part, Stop};
use dataio_engine::runtime::slot::ExternalOps;
use dataio_engine::runtime::{PlannedBatch, PlannedRow, PlannedSource, Record, RecordSource, Value};
use dataio_engine::{Error, Result};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyMemoryView, PyString};
use serde_json::{Map, Value as Json};
use std::sync::Arc;

use crate::handles::PyHandle;

/// Keeps a Python `bytes` alive and lends its memory (immutable, so it can
/// be read without the GIL).
struct PyBytesOwner {
    _obj: PyHandle,
    ptr: *const u8,
    len: usize,
}

// SAFETY: a bytes object's buffer is immutable and lives as long as the
// object, which we hold; a PyHandle may be dropped from any thread (the
// decref waits for the GIL, fork-safely: handles.rs).
unsafe impl Send for PyBytesOwner {}
// SAFETY: as for `Send` above: the buffer is immutable.
unsafe impl Sync for PyBytesOwner {}

impl AsRef<[u8]> for PyBytesOwner {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: see the Send impl.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

fn to_value(v: &Bound<'_, PyAny>) -> PyResult<Value> {
    if v.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(s) = v.cast::<PyString>() {
        return Ok(Value::Str(s.to_str()?.to_string()));
    }
    if let Ok(b) = v.cast::<PyBytes>() {
        let data = b.as_bytes();
        let owner = PyBytesOwner { ptr: data.as_ptr(), len: data.len(), _obj: PyHandle::new(b.clone().unbind()) };
        return Ok(Value::Bytes(Bytes::from_owner(owner)));
    }
    if v.is_instance_of::<pyo3::types::PyBool>() {
        return Ok(Value::Bool(v.extract()?));
    }
    if v.is_instance_of::<pyo3::types::PyInt>() {
        return Ok(Value::Int(v.extract()?));
    }
    if v.is_instance_of::<pyo3::types::PyFloat>() {
        return Ok(Value::Float(v.extract()?));
    }
    if v.is_instance_of::<PyByteArray>() || v.is_instance_of::<PyMemoryView>() {
        let held = crate::buffers::ReadBuffer::get(v)?;
        return Ok(Value::Bytes(Bytes::copy_from_slice(held.as_slice())));
    }
    // A Hugging Face `Image`/`Audio` value: {"bytes": ..., "path": ...}:
    // the embedded bytes when present, else the path.
    if let Ok(d) = v.cast::<PyDict>() {
        if d.contains("bytes")? || d.contains("path")? {
            if let Some(b) = d.get_item("bytes")?.filter(|b| !b.is_none()) {
                return to_value(&b);
            }
            if let Some(p) = d.get_item("path")?.filter(|p| !p.is_none()) {
                return to_value(&p);
            }
            return Ok(Value::Null);
        }
    }
    // os.PathLike, numpy scalars and the like.
    if v.hasattr("__fspath__")? {
        return Ok(Value::Str(v.call_method0("__fspath__")?.extract()?));
    }
    if let Ok(i) = v.extract::<i64>() {
        return Ok(Value::Int(i));
    }
    if let Ok(f) = v.extract::<f64>() {
        return Ok(Value::Float(f));
    }
    if let Ok(held) = crate::buffers::ReadBuffer::get(v) {
        return Ok(Value::Bytes(Bytes::copy_from_slice(held.as_slice())));
    }
    Ok(Value::Str(v.str()?.to_string()))
}

/// Runs `f` holding the GIL, or fails when the interpreter is shutting down
/// (a coordinator thread must never wait for a GIL that finalization will
/// not give back, nor attach after it: pyo3 panics there).
fn attached<R>(f: impl for<'py> FnOnce(Python<'py>) -> Result<R>) -> Result<R> {
    Python::try_attach(f).unwrap_or_else(|| {
        Err(Error::invalid("the Python interpreter is shutting down: the loader stops (close it before exit)"))
    })
}

/// Records from a Python sequence (sized) or iterator (one pass).
pub struct PySource {
    obj: Py<PyAny>,
    iter: Option<Py<PyAny>>,
    len: Option<u64>,
    fields: Vec<String>,
    /// Applied to every raw record first (the plan's record maps).
    prepare: Option<Py<PyAny>>,
    /// `context=`: computed per record, carried to `batch.context`.
    context: Option<Py<PyAny>>,
    /// Planning for another process: each record carries its raw Python
    /// object (before record maps) as its context, to be shipped as it is.
    keep_raw: bool,
    /// A sharded source's layout (`_dataio_layout()`: counts per shard, window).
    layout: Option<Layout>,
    /// A mixed source's spec (`_dataio_mix()`).
    mix: Option<MixSpec>,
}

/// The spec `dataio.mix` describes itself with (`MixedRecords._dataio_mix`):
/// `(lens, layouts, weights, stop_kind, stop_n)`.
pub fn mix_spec(obj: &Bound<'_, PyAny>) -> PyResult<Option<MixSpec>> {
    let Ok(f) = obj.getattr("_dataio_mix") else { return Ok(None) };
    #[allow(clippy::type_complexity)]
    let (lens, layouts, weights, kind, n): (Vec<u64>, Vec<Option<(Vec<u64>, u64, u64)>>, Vec<f64>, String, u64) =
        f.call0()?.extract()?;
    Ok(Some(make_mix_spec(lens, layouts, weights, &kind, n)?))
}

pub fn make_mix_spec(
    lens: Vec<u64>,
    layouts: Vec<Option<(Vec<u64>, u64, u64)>>,
    weights: Vec<f64>,
    kind: &str,
    n: u64,
) -> PyResult<MixSpec> {
    let stop = match kind {
        "first_exhausted" => Stop::FirstExhausted,
        "all_exhausted" => Stop::AllExhausted,
        "samples" => Stop::Samples(n),
        other => {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "stop must be 'first_exhausted', 'all_exhausted' or a number of samples, got {other:?}"
            )))
        }
    };
    let parts = lens
        .into_iter()
        .zip(layouts.into_iter().chain(std::iter::repeat(None)))
        .map(|(len, l)| Part {
            len,
            layout: l.map(|(counts, window, spread)| Layout::new(counts, window).with_spread(spread)),
        })
        .collect();
    Ok(MixSpec { parts, weights, stop })
}

impl PySource {
    pub fn new(
        py: Python<'_>,
        obj: Py<PyAny>,
        sized: bool,
        fields: Vec<String>,
        prepare: Option<Py<PyAny>>,
        context: Option<Py<PyAny>>,
    ) -> PyResult<Self> {
        let len = if sized { Some(obj.bind(py).len()? as u64) } else { None };
        let layout = match obj.bind(py).getattr("_dataio_layout") {
            Ok(f) if sized => {
                // (counts, window) or (counts, window, spread): see dataio.contract.layout_of.
                let got = f.call0()?;
                let (counts, window, spread): (Vec<u64>, u64, u64) = match got.extract() {
                    Ok(t) => t,
                    Err(_) => {
                        let (c, w): (Vec<u64>, u64) = got.extract()?;
                        (c, w, 1)
                    }
                };
                Some(Layout::new(counts, window).with_spread(spread))
            }
            _ => None,
        };
        let mix = if sized { mix_spec(obj.bind(py))? } else { None };
        Ok(PySource { obj, iter: None, len, fields, prepare, context, keep_raw: false, layout, mix })
    }

    /// A source for planning only: records keep their raw object (see `keep_raw`).
    pub fn for_planning(self) -> Self {
        PySource { keep_raw: true, context: None, ..self }
    }

    fn convert(&self, py: Python<'_>, raw: Bound<'_, PyAny>, position: u64) -> Result<Record> {
        let wrap = |e: PyErr| from_pyerr(py, e, None);
        // A user function's exception is the user's to see, unchanged, with a note.
        let user = |e: PyErr, what: &str| {
            let note = format!("dataio: raised by the {what} function for the record at position {position}");
            let _ = e.value(py).call_method1("add_note", (note,));
            from_pyerr(py, e, None)
        };
        let raw_kept = self
            .keep_raw
            .then(|| Arc::new(PyHandle::new(raw.clone().unbind())) as dataio_engine::runtime::record::Context);
        let rec = match &self.prepare {
            Some(f) => f.bind(py).call1((raw,)).map_err(|e| user(e, "dataio.map record"))?,
            None => raw,
        };
        if self.keep_raw && self.fields.is_empty() {
            return Ok(Record { fields: Vec::new(), context: raw_kept, origin: None, broken: None });
        }
        let dict = rec.cast::<PyDict>().map_err(|_| {
            let ty = rec.get_type().name().map(|n| n.to_string()).unwrap_or_default();
            Error::invalid(format!(
                "record at position {position} is a {ty}, not a dict (map records to dicts with dataio.map)"
            ))
        })?;
        let mut fields = Vec::with_capacity(self.fields.len());
        for name in &self.fields {
            if let Some(v) = dict.get_item(name).map_err(wrap)? {
                let value = to_value(&v).map_err(|e| {
                    Error::invalid(format!("record at position {position}, field {name:?}: {}", e.value(py)))
                })?;
                fields.push((name.clone(), value));
            }
        }
        let context = match &self.context {
            Some(f) => {
                let c = f.bind(py).call1((dict,)).map_err(|e| user(e, "context="))?;
                Some(Arc::new(PyHandle::new(c.unbind())) as dataio_engine::runtime::record::Context)
            }
            None => raw_kept,
        };
        Ok(Record { fields, context, origin: None, broken: None })
    }
}

impl PySource {
    fn take_columns(&self, py: Python<'_>, obj: &Bound<'_, PyAny>, indices: &[u64]) -> Result<Vec<Record>> {
        let wrap = |e: PyErr| from_pyerr(py, e, None);
        let cols = obj.call_method1("_dataio_take", (indices.to_vec(), self.fields.clone())).map_err(wrap)?;
        let cols = cols.cast::<PyDict>().map_err(|_| Error::invalid("_dataio_take must return a dict of columns"))?;
        let mut records: Vec<Record> = (0..indices.len()).map(|_| Record::default()).collect();
        for name in &self.fields {
            let Some(col) = cols.get_item(name).map_err(wrap)? else { continue };
            for (row, v) in col.try_iter().map_err(wrap)?.enumerate() {
                let v = v.map_err(wrap)?;
                let value =
                    to_value(&v).map_err(|e| Error::invalid(format!("column {name:?}, row {row}: {}", e.value(py))))?;
                match records.get_mut(row) {
                    Some(r) => r.fields.push((name.clone(), value)),
                    None => return Err(Error::invalid(format!("column {name:?} has more rows than requested"))),
                }
            }
        }
        Ok(records)
    }
}

impl RecordSource for PySource {
    fn len(&self) -> Option<u64> {
        self.len
    }

    fn layout(&self) -> Option<Layout> {
        self.layout.clone()
    }

    fn mix(&self) -> Option<MixSpec> {
        self.mix.clone()
    }

    fn get(&mut self, indices: &[u64]) -> Result<Vec<Record>> {
        attached(|py| -> Result<_> {
            let obj = self.obj.bind(py);
            // Columnar sources hand over whole columns per chunk: no dict per row.
            if self.prepare.is_none()
                && self.context.is_none()
                && !self.keep_raw
                && obj.hasattr("_dataio_take").unwrap_or(false)
            {
                return self.take_columns(py, obj, indices);
            }
            indices
                .iter()
                .map(|&i| {
                    let raw = obj.get_item(i).map_err(|e| from_pyerr(py, e, None))?;
                    self.convert(py, raw, i)
                })
                .collect()
        })
    }

    fn next_chunk(&mut self, max: usize) -> Result<Vec<Record>> {
        attached(|py| -> Result<_> {
            if self.iter.is_none() {
                let it = self.obj.bind(py).try_iter().map_err(|e| from_pyerr(py, e, None))?;
                self.iter = Some(it.into_any().unbind());
            }
            let it = self.iter.as_ref().unwrap().bind(py);
            let mut out = Vec::with_capacity(max);
            for _ in 0..max {
                // SAFETY: `it` is an iterator object (from try_iter).
                match it.cast::<pyo3::types::PyIterator>().map_err(|e| Error::invalid(e.to_string()))?.clone().next() {
                    Some(Ok(raw)) => out.push(self.convert(py, raw, 0)?),
                    Some(Err(e)) => return Err(from_pyerr(py, e, None)),
                    None => break,
                }
            }
            Ok(out)
        })
    }

    fn rewind(&mut self) -> Result<()> {
        self.iter = None;
        Ok(())
    }
}

/// Batches planned by a trainer (`dataio.executor.run_planned`): a Python
/// iterable of `(seq, end_position, indices, positions, records)`.
pub struct PyPlannedSource {
    iter: Py<PyAny>,
    records: PySource,
}

impl PyPlannedSource {
    pub fn new(py: Python<'_>, planned: Py<PyAny>, records: PySource) -> PyResult<Self> {
        let iter = planned.bind(py).try_iter()?.into_any().unbind();
        Ok(PyPlannedSource { iter, records })
    }
}

impl PlannedSource for PyPlannedSource {
    fn next_planned(&mut self) -> Result<Option<PlannedBatch>> {
        attached(|py| -> Result<_> {
            let wrap = |e: PyErr| from_pyerr(py, e, None);
            let it = self.iter.bind(py).cast::<pyo3::types::PyIterator>().map_err(|e| Error::invalid(e.to_string()))?;
            let Some(item) = it.clone().next() else { return Ok(None) };
            let (seq, end_position, indices, positions, records): (
                u64,
                u64,
                Vec<u64>,
                Vec<u64>,
                Vec<Bound<'_, PyAny>>,
            ) = item.map_err(wrap)?.extract().map_err(|e: PyErr| {
                Error::invalid(format!(
                    "a planned batch is (seq, end_position, indices, positions, records): {}",
                    e.value(py)
                ))
            })?;
            if indices.len() != records.len() || positions.len() != records.len() {
                return Err(Error::invalid(format!(
                    "planned batch {seq}: {} indices, {} positions and {} records",
                    indices.len(),
                    positions.len(),
                    records.len()
                )));
            }
            let mut rows = Vec::with_capacity(records.len());
            for ((index, position), raw) in indices.into_iter().zip(positions).zip(records) {
                rows.push(PlannedRow { index, position, record: self.records.convert(py, raw, index)? });
            }
            Ok(Some(PlannedBatch { seq, rows, end_position }))
        })
    }
}

/// Plugin ops implemented in Python. `call(kind, name, payload, params)`
/// is a Python function of dataio's that does the numpy conversions.
pub struct PyOps {
    pub call: Py<PyAny>,
}

fn tensor_from_py(py: Python<'_>, r: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    let (dtype, shape, data): (String, Vec<usize>, Bound<'_, PyAny>) = r.extract()?;
    let held = crate::buffers::ReadBuffer::get(&data)?;
    let dtype = DType::parse(&dtype).map_err(|e| crate::errors::to_pyerr(py, e))?;
    Tensor::from_bytes(dtype, shape, held.as_slice()).map_err(|e| crate::errors::to_pyerr(py, e))
}

impl ExternalOps for PyOps {
    fn decode(&self, name: &str, data: &[u8], params: &Map<String, Json>) -> Result<Tensor> {
        attached(|py| -> Result<_> {
            let params = serde_json::to_string(params).unwrap_or_default();
            let r = self
                .call
                .bind(py)
                .call1(("decode", name, PyBytes::new(py, data), params))
                .map_err(|e| from_pyerr(py, e, None))?;
            tensor_from_py(py, &r).map_err(|e| from_pyerr(py, e, None))
        })
    }

    fn transform(&self, name: &str, input: Tensor, params: &Map<String, Json>) -> Result<Tensor> {
        attached(|py| -> Result<_> {
            let params = serde_json::to_string(params).unwrap_or_default();
            let payload = (input.dtype.name(), input.shape.clone(), PyBytes::new(py, input.bytes()));
            let r =
                self.call.bind(py).call1(("transform", name, payload, params)).map_err(|e| from_pyerr(py, e, None))?;
            tensor_from_py(py, &r).map_err(|e| from_pyerr(py, e, None))
        })
    }
}
