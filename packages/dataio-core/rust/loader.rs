//! The loader as Python sees it: compile a plan, start a native loader over
//! a Python record source, and take batches (GIL released while waiting).

use crate::dlpack::PyTensor;
use crate::errors::{to_pyerr, IntoPy};
use crate::handles::PyHandle;
use crate::shards::PyShardSet;
use crate::source::{PyOps, PyPlannedSource, PySource};
use dataio_engine::order::{Hosts, Rank};
use dataio_engine::plan::{self, Plan, Shape};
use dataio_engine::runtime::planner::{self, Planner};
use dataio_engine::runtime::RecordSource;
use dataio_engine::runtime::{Batch, Loader, Next, Options, PlanOptions, SlotValue};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A compiled, validated plan.
#[pyclass(module = "dataio._native", name = "CompiledPlan", frozen)]
pub struct CompiledPlan {
    pub inner: Arc<Plan>,
}

#[pymethods]
impl CompiledPlan {
    #[getter]
    fn signature(&self) -> &str {
        &self.inner.signature
    }
    /// Record fields the native side reads.
    #[getter]
    fn fields(&self) -> Vec<String> {
        self.inner.fields.clone()
    }
    #[getter]
    fn prefetch(&self) -> usize {
        self.inner.prefetch
    }
    /// (kind, size or key, drop_last)
    #[getter]
    fn shape(&self) -> (String, Option<usize>, Option<String>, bool) {
        match &self.inner.shape {
            Shape::Batch { size, drop_last } => ("batch".into(), Some(*size), None, *drop_last),
            Shape::GroupBy { key, .. } => ("group_by".into(), None, Some(key.clone()), false),
        }
    }
    /// Per slot: (name, static per-sample shape or None, dtype or None).
    #[allow(clippy::type_complexity)] // the tuple is what Python receives
    fn slots(&self) -> Vec<(String, Option<Vec<usize>>, Option<&'static str>)> {
        self.inner.slots.iter().map(|s| (s.name.clone(), s.static_shape.clone(), s.dtype.map(|d| d.name()))).collect()
    }
}

/// The built-in ops' parameters as JSON (see `dataio._ops`).
#[pyfunction]
pub fn op_table() -> String {
    plan::ops::op_table().to_string()
}

#[pyfunction]
pub fn compile_plan(py: Python<'_>, json: &str) -> PyResult<CompiledPlan> {
    plan::compile(json).map(|p| CompiledPlan { inner: Arc::new(p) }).map_py(py)
}

/// One finished batch, still in engine form.
#[pyclass(module = "dataio._native", name = "RawBatch")]
pub struct RawBatch {
    inner: Option<Batch>,
}

impl RawBatch {
    /// Takes one slot's value out (the packer's token slot), natively.
    pub(crate) fn take_slot(&mut self, name: &str) -> Option<SlotValue> {
        let slots = &mut self.inner.as_mut()?.slots;
        let i = slots.iter().position(|(n, _)| n == name)?;
        Some(slots.remove(i).1)
    }
}

#[pymethods]
impl RawBatch {
    #[getter]
    fn keys(&self) -> Vec<String> {
        self.inner.as_ref().map(|b| b.keys.clone()).unwrap_or_default()
    }
    #[getter]
    fn indices(&self) -> Vec<u64> {
        self.inner.as_ref().map(|b| b.indices.clone()).unwrap_or_default()
    }
    #[getter]
    fn seq(&self) -> u64 {
        self.inner.as_ref().map(|b| b.seq).unwrap_or_default()
    }
    #[getter]
    fn end_position(&self) -> u64 {
        self.inner.as_ref().map(|b| b.end_position).unwrap_or_default()
    }
    /// Row errors (skip mode), as dataio.errors.RowError instances.
    fn errors(&self, py: Python<'_>) -> Vec<Py<PyAny>> {
        let Some(b) = &self.inner else { return vec![] };
        b.errors.iter().map(|e| to_pyerr(py, clone_row_error(e)).into_value(py).into_any()).collect()
    }
    /// `context=` values, aligned with keys.
    fn contexts(&self, py: Python<'_>) -> Vec<Py<PyAny>> {
        let Some(b) = &self.inner else { return vec![] };
        b.contexts
            .iter()
            .map(|c| match c.as_ref().and_then(|c| c.downcast_ref::<PyHandle>()) {
                Some(o) => o.clone_ref(py),
                None => py.None(),
            })
            .collect()
    }
    /// Takes the slots out: name -> Tensor, or list of Tensor/None.
    fn take_slots<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new(py);
        let Some(b) = &mut self.inner else { return Ok(out) };
        for (name, value) in std::mem::take(&mut b.slots) {
            match value {
                SlotValue::Stacked(t) => out.set_item(name, PyTensor { inner: t })?,
                SlotValue::List(items) => {
                    let list = PyList::empty(py);
                    for item in items {
                        match item {
                            Some(t) => list.append(Py::new(py, PyTensor { inner: t })?)?,
                            None => list.append(py.None())?,
                        }
                    }
                    out.set_item(name, list)?;
                }
            }
        }
        Ok(out)
    }
}

fn clone_row_error(e: &dataio_engine::Error) -> dataio_engine::Error {
    use dataio_engine::Error as E;
    match e {
        E::Row { context, source } => E::Row { context: context.clone(), source: Box::new(clone_row_error(source)) },
        E::Foreign { kind, message, uri, payload } => {
            E::Foreign { kind: *kind, message: message.clone(), uri: uri.clone(), payload: payload.clone() }
        }
        other => E::Foreign {
            kind: other.kind(),
            message: other.to_string(),
            uri: other.uri().map(str::to_string),
            payload: dataio_engine::base::error::ForeignPayload(Arc::new(())),
        },
    }
}

/// The engine's source for `records`: a shard set natively (when no
/// Python runs per record), anything else through Python.
fn record_source(
    py: Python<'_>,
    records: Py<PyAny>,
    sized: bool,
    fields: Vec<String>,
    prepare: Option<Py<PyAny>>,
    context: Option<Py<PyAny>>,
) -> PyResult<Box<dyn RecordSource>> {
    if prepare.is_none() && context.is_none() && sized {
        let obj = records.bind(py);
        if let Ok(native) = obj.getattr("_dataio_native") {
            if let Ok(set) = native.cast::<PyShardSet>() {
                return Ok(Box::new(set.get().inner.source(fields)));
            }
        }
        // A mix reads each of its sources natively where it can.
        if let Some(spec) = crate::source::mix_spec(obj)? {
            let mut parts = Vec::new();
            for src in obj.getattr("sources")?.try_iter()? {
                parts.push(record_source(py, src?.unbind(), true, fields.clone(), None, None)?);
            }
            return Ok(Box::new(ConcatSource::new(parts, spec, fields)));
        }
    }
    Ok(Box::new(PySource::new(py, records, sized, fields, prepare, context)?))
}

/// A mix's sources end to end (record `base[s] + i` is record `i` of
/// source `s`; indices past the total are restarts and wrap), each read by
/// its own engine source.
struct ConcatSource {
    parts: Vec<Box<dyn RecordSource>>,
    bases: Vec<u64>,
    total: u64,
    spec: dataio_engine::order::MixSpec,
    /// Whether the plan reads `__source__` (the source's number).
    source_field: bool,
    /// Next record of a sequential read (group_by).
    cursor: u64,
}

impl ConcatSource {
    fn new(parts: Vec<Box<dyn RecordSource>>, spec: dataio_engine::order::MixSpec, fields: Vec<String>) -> Self {
        let mut bases = Vec::with_capacity(spec.parts.len());
        let mut total = 0;
        for p in &spec.parts {
            bases.push(total);
            total += p.len;
        }
        let source_field = fields.iter().any(|f| f == "__source__");
        ConcatSource { parts, bases, total, spec, source_field, cursor: 0 }
    }

    /// (source, record in it) of mixed record `i` (restarts wrap).
    fn locate(&self, i: u64) -> (usize, u64) {
        let i = if self.total == 0 { i } else { i % self.total };
        let part = self.bases.partition_point(|&b| b <= i).saturating_sub(1);
        let part = (part..self.parts.len()).find(|&p| self.spec.parts[p].len > 0).unwrap_or(part);
        (part, i - self.bases[part])
    }
}

impl RecordSource for ConcatSource {
    fn len(&self) -> Option<u64> {
        Some(self.total)
    }

    fn get(&mut self, indices: &[u64]) -> dataio_engine::Result<Vec<dataio_engine::runtime::Record>> {
        // Consecutive indices of one source are asked together, in order.
        let mut out = Vec::with_capacity(indices.len());
        let mut run: Vec<u64> = Vec::new();
        let mut run_part = usize::MAX;
        let flush =
            |part: usize, run: &mut Vec<u64>, parts: &mut Vec<Box<dyn RecordSource>>, out: &mut Vec<_>, tag: bool| {
                if run.is_empty() {
                    return Ok(());
                }
                let mut got: Vec<dataio_engine::runtime::Record> = parts[part].get(run)?;
                if tag {
                    for r in &mut got {
                        r.fields.push(("__source__".into(), dataio_engine::runtime::Value::Int(part as i64)));
                    }
                }
                out.extend(got);
                run.clear();
                Ok::<(), dataio_engine::Error>(())
            };
        for &i in indices {
            let (part, local) = self.locate(i);
            if part != run_part {
                if run_part != usize::MAX {
                    flush(run_part, &mut run, &mut self.parts, &mut out, self.source_field)?;
                }
                run_part = part;
            }
            run.push(local);
        }
        if run_part != usize::MAX {
            flush(run_part, &mut run, &mut self.parts, &mut out, self.source_field)?;
        }
        Ok(out)
    }

    fn next_chunk(&mut self, max: usize) -> dataio_engine::Result<Vec<dataio_engine::runtime::Record>> {
        let end = (self.cursor + max as u64).min(self.total);
        let indices: Vec<u64> = (self.cursor..end).collect();
        self.cursor = end;
        self.get(&indices)
    }

    fn rewind(&mut self) -> dataio_engine::Result<()> {
        self.cursor = 0;
        Ok(())
    }

    fn mix(&self) -> Option<dataio_engine::order::MixSpec> {
        Some(self.spec.clone())
    }

    /// Each source hears of its own records among those coming next, so a
    /// shard source inside a mix fetches ahead as it does alone.
    fn will_need(&mut self, indices: &[u64], soon: usize) {
        let mut per: Vec<(Vec<u64>, usize)> = vec![(Vec::new(), 0); self.parts.len()];
        for (n, &i) in indices.iter().enumerate() {
            let (part, local) = self.locate(i);
            per[part].0.push(local);
            if n < soon {
                per[part].1 += 1;
            }
        }
        for (part, (ids, soon)) in per.into_iter().enumerate() {
            if !ids.is_empty() {
                self.parts[part].will_need(&ids, soon);
            }
        }
    }
}

/// The sizes and versions of objects read by range, shared by a loader's
/// epochs (see `dataio_engine::runtime::ObjectMetas`).
#[pyclass(module = "dataio._native", name = "ObjectMetas")]
pub struct ObjectMetas {
    inner: Arc<dataio_engine::runtime::ObjectMetas>,
}

#[pymethods]
impl ObjectMetas {
    #[new]
    fn new() -> Self {
        ObjectMetas { inner: Default::default() }
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }
}

#[pyclass(module = "dataio._native", name = "NativeLoader")]
pub struct NativeLoader {
    inner: Mutex<Option<Loader>>,
    /// The process that started it: its threads exist only there.
    pid: u32,
}

/// The error of a loader used in a process forked after it started.
fn forked_error(py: Python<'_>, pid: u32) -> PyErr {
    to_pyerr(
        py,
        dataio_engine::Error::invalid(format!(
            "this loader was started in process {pid} and used in process {} after fork(): its threads do not exist \
         here. Create the loader in the process that iterates it (for a DataLoader worker: inside \
         IterableDataset.__iter__, or in worker_init_fn)",
            std::process::id()
        )),
    )
}

impl NativeLoader {
    fn forked(&self) -> bool {
        self.pid != std::process::id()
    }

    /// In a forked child the loader's threads are gone: joining them would
    /// wait forever, so its state is let go without running its drop.
    fn abandon(&self) {
        let taken = self.inner.lock().unwrap_or_else(|p| p.into_inner()).take();
        std::mem::forget(taken);
    }
}

impl Drop for NativeLoader {
    fn drop(&mut self) {
        if self.forked() {
            self.abandon();
        }
    }
}

#[pymethods]
impl NativeLoader {
    /// `planned=True`: `records` is an iterable of planned batches
    /// `(seq, end_position, indices, positions, records)` (see
    /// `dataio.executor.run_planned`), executed as they are.
    #[new]
    #[pyo3(signature = (plan, records, *, sized, planned=false, prepare=None, context=None, ops=None, concurrency=16, completion_order=false, skip_errors=false, seed=None, epoch=0, shard_id=0, shard_of=1, pad=false, start=0, global_offset=0, hosts=1, canonical_hosts=1, partition_offsets=None, prefetch=None, metas=None, skip_ends=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        plan: &CompiledPlan,
        records: Py<PyAny>,
        sized: bool,
        planned: bool,
        prepare: Option<Py<PyAny>>,
        context: Option<Py<PyAny>>,
        ops: Option<Py<PyAny>>,
        concurrency: usize,
        completion_order: bool,
        skip_errors: bool,
        seed: Option<u64>,
        epoch: u64,
        shard_id: u64,
        shard_of: u64,
        pad: bool,
        start: u64,
        global_offset: u64,
        hosts: u64,
        canonical_hosts: u64,
        partition_offsets: Option<Vec<u64>>,
        prefetch: Option<usize>,
        metas: Option<PyRef<'_, ObjectMetas>>,
        skip_ends: Option<Vec<u64>>,
    ) -> PyResult<Self> {
        let mut skip_ends = skip_ends.unwrap_or_default();
        skip_ends.sort_unstable();
        let opts = Options {
            plan: PlanOptions {
                seed,
                epoch,
                shard: Rank { id: shard_id, of: shard_of, pad },
                start,
                global_offset,
                hosts: Hosts { count: hosts, canonical: canonical_hosts },
                partition_offsets: partition_offsets.unwrap_or_default(),
            },
            concurrency: concurrency.max(1),
            completion_order,
            skip_errors,
            prefetch,
            metas: metas.map(|m| m.inner.clone()),
            skip_ends,
        };
        let external = ops.map(|call| Arc::new(PyOps { call }) as Arc<dyn dataio_engine::runtime::slot::ExternalOps>);
        let fields = plan.inner.fields.clone();
        let plan = plan.inner.clone();
        let loader = if planned {
            let rows = PySource::new(py, py.None(), false, fields, prepare, context)?;
            let source = PyPlannedSource::new(py, records, rows)?;
            py.detach(|| Loader::start_planned(plan, Box::new(source), opts, external)).map_py(py)?
        } else {
            let source = record_source(py, records, sized, fields, prepare, context)?;
            py.detach(|| Loader::start(plan, source, opts, external)).map_py(py)?
        };
        Ok(NativeLoader { inner: Mutex::new(Some(loader)), pid: std::process::id() })
    }

    /// The next batch, or None at the end of the epoch.
    fn next_batch(&self, py: Python<'_>) -> PyResult<Option<RawBatch>> {
        if self.forked() {
            return Err(forked_error(py, self.pid));
        }
        loop {
            let result = py.detach(|| {
                let mut guard = self.inner.lock().unwrap();
                match guard.as_mut() {
                    Some(l) => l.next(Duration::from_millis(100)).map(Some),
                    None => Ok(None),
                }
            });
            match result.map_py(py)? {
                None => return Err(PyRuntimeError::new_err("the loader is closed")),
                Some(Next::Batch(b)) => return Ok(Some(RawBatch { inner: Some(b) })),
                Some(Next::End) => return Ok(None),
                Some(Next::Timeout) => py.check_signals()?,
            }
        }
    }

    fn close(&self, py: Python<'_>) {
        if self.forked() {
            return self.abandon();
        }
        let taken = self.inner.lock().unwrap().take();
        if let Some(mut l) = taken {
            py.detach(move || l.close());
        }
        crate::handles::drain(py);
    }

    #[getter]
    fn closed(&self) -> bool {
        self.inner.lock().unwrap().as_ref().is_none_or(|l| l.is_closed())
    }

    #[getter]
    fn position(&self) -> u64 {
        self.inner.lock().unwrap().as_ref().map(|l| l.position()).unwrap_or(0)
    }

    /// End positions of batches delivered past `position` (completion order).
    #[getter]
    fn ahead_ends(&self) -> Vec<u64> {
        self.inner.lock().unwrap().as_ref().map(|l| l.ahead_ends()).unwrap_or_default()
    }

    #[getter]
    fn rank_count(&self) -> Option<u64> {
        self.inner.lock().unwrap().as_ref().and_then(|l| l.rank_count())
    }

    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        let guard = self.inner.lock().unwrap();
        let Some(l) = guard.as_ref() else { return Ok(d) };
        let s = l.stats();
        d.set_item("records_admitted", s.records_admitted)?;
        d.set_item("records_done", s.records_done)?;
        d.set_item("records_failed", s.records_failed)?;
        d.set_item("bytes_read", s.bytes_read)?;
        d.set_item("fetch_seconds", s.fetch_seconds)?;
        d.set_item("decode_seconds", s.decode_seconds)?;
        d.set_item("source_seconds", s.source_seconds)?;
        d.set_item("consumer_wait_seconds", s.consumer_wait_seconds)?;
        d.set_item("batches_built", s.batches_built)?;
        d.set_item("batches_delivered", s.batches_delivered)?;
        d.set_item("records_in_flight", s.records_in_flight)?;
        d.set_item("batches_in_window", s.batches_in_window)?;
        d.set_item("batches_ready", s.batches_ready)?;
        d.set_item("elapsed_seconds", s.elapsed_seconds)?;
        if !s.part_reads.is_empty() {
            // A mix: per source, records read and the seconds their reads took.
            d.set_item("source_reads", s.part_reads)?;
        }
        Ok(d)
    }
}

/// Plans an epoch without executing it: iterates
/// `(seq, end_position, indices, positions, raw_records)` in submit order
/// (see `dataio.executor.EpochJob.plan`). The raw records are the source's
/// objects before record maps; maps run only where the shape stage needs a
/// field (the `group_by` key).
#[pyclass(module = "dataio._native", name = "BatchPlanner")]
pub struct BatchPlanner {
    inner: Mutex<Box<dyn Planner>>,
    rank_count: Option<u64>,
}

#[pymethods]
impl BatchPlanner {
    #[new]
    #[pyo3(signature = (plan, records, *, sized, prepare=None, seed=None, epoch=0, shard_id=0, shard_of=1, pad=false, start=0, global_offset=0, hosts=1, canonical_hosts=1, partition_offsets=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        plan: &CompiledPlan,
        records: Py<PyAny>,
        sized: bool,
        prepare: Option<Py<PyAny>>,
        seed: Option<u64>,
        epoch: u64,
        shard_id: u64,
        shard_of: u64,
        pad: bool,
        start: u64,
        global_offset: u64,
        hosts: u64,
        canonical_hosts: u64,
        partition_offsets: Option<Vec<u64>>,
    ) -> PyResult<Self> {
        let opts = PlanOptions {
            seed,
            epoch,
            shard: Rank { id: shard_id, of: shard_of, pad },
            start,
            global_offset,
            hosts: Hosts { count: hosts, canonical: canonical_hosts },
            partition_offsets: partition_offsets.unwrap_or_default(),
        };
        // Formation reads only the group key; batch() reads nothing.
        let (fields, prepare) = match &plan.inner.shape {
            Shape::GroupBy { key, .. } => (vec![key.clone(), "key".to_string()], prepare),
            Shape::Batch { .. } => (Vec::new(), None),
        };
        let source = PySource::new(py, records, sized, fields, prepare, None)?.for_planning();
        let planner = planner::planner(&plan.inner, Box::new(source), &opts).map_py(py)?;
        let rank_count = planner.rank_count();
        Ok(BatchPlanner { inner: Mutex::new(planner), rank_count })
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[allow(clippy::type_complexity)] // the tuple is what Python receives
    fn __next__(&self, py: Python<'_>) -> PyResult<Option<(u64, u64, Vec<u64>, Vec<u64>, Vec<Py<PyAny>>)>> {
        crate::handles::drain(py); // the records of batches before, let go by the workers
        let next = py.detach(|| self.inner.lock().unwrap().next()).map_py(py)?;
        let Some(b) = next else { return Ok(None) };
        let mut indices = Vec::with_capacity(b.rows.len());
        let mut positions = Vec::with_capacity(b.rows.len());
        let mut records = Vec::with_capacity(b.rows.len());
        for r in b.rows {
            indices.push(r.index);
            positions.push(r.position);
            let raw = r.record.context.as_ref().and_then(|c| c.downcast_ref::<PyHandle>());
            records.push(raw.map(|o| o.clone_ref(py)).unwrap_or_else(|| py.None()));
        }
        Ok(Some((b.seq, b.end_position, indices, positions, records)))
    }

    /// Records this rank gets this epoch (sized sources with batch()).
    #[getter]
    fn rank_count(&self) -> Option<u64> {
        self.rank_count
    }
}
