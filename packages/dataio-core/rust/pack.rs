//! `Packer`: the engine's sequence packer ([`dataio_engine::runtime::pack`])
//! for `dataio.pack`. The loader hands it each block's engine batch, whose
//! token slot it takes natively (`feed_batch`; `feed` takes numpy arrays from
//! a batch executed elsewhere), and takes packed batches as engine tensors,
//! which it converts like any other slot.

use crate::dlpack::PyTensor;
use crate::errors::IntoPy;
use crate::loader::RawBatch;
use dataio_engine::base::tensor::{DType, Tensor};
use dataio_engine::runtime::pack::{Config, Documents, Packer, Strategy};
use dataio_engine::runtime::SlotValue;
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::sync::Mutex;

#[pyclass(module = "dataio._native", name = "Packer", frozen)]
pub struct PyPacker {
    inner: Mutex<Packer>,
}

impl PyPacker {
    fn with<T>(&self, f: impl FnOnce(&mut Packer) -> T) -> T {
        f(&mut self.inner.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// A document handed from Python (`Packer.feed`): an engine tensor as it
/// is, an int32 / int64 / uint32 buffer copied once into one.
fn document(item: &Bound<'_, PyAny>) -> PyResult<Option<Tensor>> {
    if item.is_none() {
        return Ok(None);
    }
    if let Ok(t) = item.cast::<PyTensor>() {
        return Ok(Some(t.get().inner.clone()));
    }
    let py = item.py();
    let ids: Vec<i64> = if let Ok(b) = PyBuffer::<i64>::get(item) {
        b.to_vec(py)?
    } else if let Ok(b) = PyBuffer::<i32>::get(item) {
        b.to_vec(py)?.into_iter().map(i64::from).collect()
    } else if let Ok(b) = PyBuffer::<u32>::get(item) {
        b.to_vec(py)?.into_iter().map(i64::from).collect()
    } else {
        return Err(PyTypeError::new_err(format!(
            "pack(): a document must be an int32/int64 array of token ids, got {}",
            item.get_type().name()?
        )));
    };
    tensor_of(py, DType::I64, vec![ids.len()], &ids).map(|t| Some(t.inner))
}

/// An engine tensor of `values` (one copy, into the tensor's own buffer).
fn tensor_of<T: Copy>(py: Python<'_>, dtype: DType, shape: Vec<usize>, values: &[T]) -> PyResult<PyTensor> {
    // SAFETY: plain integers viewed as their bytes (u8 has no alignment).
    let bytes = unsafe { std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), std::mem::size_of_val(values)) };
    Ok(PyTensor { inner: Tensor::from_bytes(dtype, shape, bytes).map_py(py)? })
}

/// Checks a packing's shape where `dataio.pack(...)` is written: the
/// engine's one check (`pack::Config::check_shape`).
#[pyfunction]
pub fn check_pack_shape(py: Python<'_>, seq_len: i64, batch_size: i64, strategy: &str) -> PyResult<()> {
    Strategy::parse(strategy).map_py(py)?;
    Config::check_shape(seq_len, batch_size).map_py(py)
}

#[pymethods]
impl PyPacker {
    #[new]
    #[pyo3(signature = (seq_len, batch_size, strategy, eos, pad, seed, epoch, keep_last, start, skip))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        seq_len: usize,
        batch_size: usize,
        strategy: &str,
        eos: Option<i64>,
        pad: i64,
        seed: Option<u64>,
        epoch: u64,
        keep_last: bool,
        start: u64,
        skip: (u64, u64),
    ) -> PyResult<Self> {
        let cfg = Config {
            seq_len,
            batch_size,
            strategy: Strategy::parse(strategy).map_py(py)?,
            eos,
            pad,
            seed,
            epoch,
            keep_last,
        };
        Ok(PyPacker { inner: Mutex::new(Packer::new(cfg, start, skip).map_py(py)?) })
    }

    /// Feeds the documents of the block at `block` covering `positions`
    /// schedule positions; `groups` (one per document) names a mix's
    /// source of each, for the token shares in `stats()`; `key` and `skip`
    /// are an elastic unit's (`Packer::feed_keyed`). For a batch executed
    /// away from the loader (numpy arrays); the loader's own batches go
    /// through `feed_batch`.
    #[pyo3(signature = (block, positions, docs, groups=None, key=None, skip=(0, 0)))]
    #[allow(clippy::too_many_arguments)]
    fn feed(
        &self,
        py: Python<'_>,
        block: u64,
        positions: u64,
        docs: &Bound<'_, PyList>,
        groups: Option<Vec<u32>>,
        key: Option<u64>,
        skip: (u64, u64),
    ) -> PyResult<()> {
        let items: Vec<Option<Tensor>> = docs.iter().map(|d| document(&d)).collect::<PyResult<_>>()?;
        py.detach(|| {
            let docs = Documents::of_tensors(items)?;
            self.with(|p| p.feed_documents(block, positions, &docs, groups.as_deref(), key.unwrap_or(block), skip))
        })
        .map_py(py)
    }

    /// `feed` of the documents in `slot` of an engine batch, taken out of
    /// it natively: no Python object is made per document, and an int64
    /// document (the tokenizer's output) is read where the engine put it.
    #[pyo3(signature = (block, positions, batch, slot, groups=None, key=None, skip=(0, 0)))]
    #[allow(clippy::too_many_arguments)]
    fn feed_batch(
        &self,
        py: Python<'_>,
        block: u64,
        positions: u64,
        mut batch: PyRefMut<'_, RawBatch>,
        slot: &str,
        groups: Option<Vec<u32>>,
        key: Option<u64>,
        skip: (u64, u64),
    ) -> PyResult<()> {
        let value = batch.take_slot(slot).unwrap_or(SlotValue::List(Vec::new()));
        py.detach(|| {
            let docs = Documents::of_slot(value)?;
            self.with(|p| p.feed_documents(block, positions, &docs, groups.as_deref(), key.unwrap_or(block), skip))
        })
        .map_py(py)
    }

    fn finish(&self) {
        self.with(Packer::finish)
    }

    fn has_batch(&self) -> bool {
        self.with(|p| p.has_batch())
    }

    /// `(block, a, b)`: the resume point after the batches taken so far.
    fn state(&self) -> (u64, u64, u64) {
        let o = self.with(|p| p.state());
        (o.block, o.a, o.b)
    }

    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.with(|p| p.stats().clone());
        let d = PyDict::new(py);
        d.set_item("documents", s.documents)?;
        d.set_item("tokens", s.tokens)?;
        d.set_item("padding_tokens", s.padding)?;
        d.set_item("sequences", s.sequences)?;
        d.set_item("split_documents", s.split)?;
        d.set_item("batches", s.batches)?;
        d.set_item("group_tokens", s.group_tokens.into_iter().collect::<Vec<_>>())?;
        Ok(d)
    }

    /// The next packed batch as a dict of engine tensors (and
    /// `max_seqlen`, an int), or None.
    fn next_batch<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(b) = py.detach(|| self.with(Packer::next_batch)) else { return Ok(None) };
        let shape = vec![b.rows, b.seq_len];
        let d = PyDict::new(py);
        d.set_item("input_ids", tensor_of(py, DType::I64, shape.clone(), &b.input_ids)?)?;
        d.set_item("labels", tensor_of(py, DType::I64, shape.clone(), &b.labels)?)?;
        d.set_item("position_ids", tensor_of(py, DType::I64, shape.clone(), &b.position_ids)?)?;
        d.set_item("document_ids", tensor_of(py, DType::I32, shape, &b.document_ids)?)?;
        d.set_item("cu_seqlens", tensor_of(py, DType::I32, vec![b.cu_seqlens.len()], &b.cu_seqlens)?)?;
        d.set_item("max_seqlen", b.max_seqlen)?;
        Ok(Some(d))
    }
}
