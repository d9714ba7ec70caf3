//! Shard sources (tar, TFRecord) as Python sees them: a sized, indexed set
//! of shards that the loader reads natively (see `dataio_engine::runtime::shards`).

use crate::errors::IntoPy;
use dataio_engine::runtime::shards::source::GivenCounts;
use dataio_engine::runtime::shards::{Format, ShardCache, ShardSet, ShardSetOptions};
use dataio_engine::runtime::Value;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::sync::atomic::Ordering;
use std::sync::Arc;

#[pyclass(module = "dataio._native", name = "ShardSet", frozen)]
pub struct PyShardSet {
    pub inner: Arc<ShardSet>,
}

pub fn value_to_py(py: Python<'_>, v: &Value) -> PyResult<Py<PyAny>> {
    Ok(match v {
        Value::Null => py.None(),
        Value::Bool(b) => b.into_pyobject(py)?.to_owned().into_any().unbind(),
        Value::Int(i) => i.into_pyobject(py)?.into_any().unbind(),
        Value::Float(f) => f.into_pyobject(py)?.into_any().unbind(),
        Value::Str(s) => s.into_pyobject(py)?.into_any().unbind(),
        Value::Bytes(b) => PyBytes::new(py, b).into_any().unbind(),
    })
}

#[pymethods]
impl PyShardSet {
    /// Counts the shards (or takes their counts from `counts`, or loads
    /// their kept counts), GIL released.
    /// `known`: (size, etag) per shard from a listing, or None to ask.
    /// `counts`, `sizes`, `counted_by`: per-shard samples and stored sizes
    /// from a shard index (its URI), which spare reading the shards to open.
    /// `before_counting(shards, bytes)`: called once, with the GIL, before
    /// shards are read whole to be counted (its errors are ignored).
    #[new]
    #[pyo3(signature = (format, uris, *, index_dir, known=None, gunzip=None, check_crc=true, window=8192, spread=2, cache_dir=None, cache_bytes=0, parallelism=8, counts=None, sizes=None, counted_by=None, before_counting=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        format: &str,
        uris: Vec<String>,
        index_dir: String,
        known: Option<Vec<Option<(u64, String)>>>,
        gunzip: Option<bool>,
        check_crc: bool,
        window: u64,
        spread: u64,
        cache_dir: Option<String>,
        cache_bytes: u64,
        parallelism: usize,
        counts: Option<Vec<u64>>,
        sizes: Option<Vec<Option<u64>>>,
        counted_by: Option<String>,
        before_counting: Option<Py<PyAny>>,
    ) -> PyResult<Self> {
        let csv = std::sync::Arc::new(
            dataio_engine::kernels::formats::csv::CsvSpec::parse(format.strip_prefix("csv:")).map_py(py)?,
        );
        let format = Format::parse(format).map_py(py)?;
        let cache = match cache_dir {
            Some(d) => Some(ShardCache::new(d, cache_bytes).map_py(py)?),
            None => None,
        };
        let opts = ShardSetOptions {
            format,
            gunzip,
            check_crc,
            window: window.max(1),
            spread: spread.max(1),
            index_dir: index_dir.into(),
            cache,
            parallelism,
            csv,
        };
        let given = counts.map(|counts| GivenCounts {
            source: counted_by.unwrap_or_else(|| "(a shard index)".to_string()),
            counts,
            sizes: sizes.unwrap_or_default(),
        });
        let note = |n: usize, bytes: u64| {
            if let Some(f) = &before_counting {
                Python::attach(|py| {
                    if let Err(e) = f.call1(py, (n, bytes)) {
                        e.write_unraisable(py, Some(f.bind(py)));
                    }
                });
            }
        };
        let inner =
            py.detach(|| ShardSet::open_with(uris, known.unwrap_or_default(), given, opts, &note)).map_py(py)?;
        Ok(PyShardSet { inner })
    }

    fn __len__(&self) -> usize {
        self.inner.len() as usize
    }

    #[getter]
    fn uris(&self) -> Vec<String> {
        self.inner.uris()
    }

    /// Samples per shard, in the order of `uris`.
    #[getter]
    fn counts(&self) -> Vec<u64> {
        self.inner.counts()
    }

    /// Stored bytes per shard (compressed, for gzip shards).
    #[getter]
    fn sizes(&self) -> Vec<u64> {
        self.inner.sizes()
    }

    /// The shard index the counts came from (its URI), or None.
    #[getter]
    fn counted_by(&self) -> Option<String> {
        self.inner.counted_by().map(str::to_string)
    }

    #[getter]
    fn window(&self) -> u64 {
        self.inner.options().window
    }

    #[getter]
    fn spread(&self) -> u64 {
        self.inner.options().spread
    }

    /// Record `index` as a dict of every member (bytes) plus `key`,
    /// `__key__` and `__url__` (tar) or its features (TFRecord).
    fn record<'py>(&self, py: Python<'py>, index: u64) -> PyResult<Bound<'py, PyDict>> {
        let set = self.inner.clone();
        let rec = py.detach(|| set.record(index)).map_py(py)?;
        let d = PyDict::new(py);
        for (k, v) in &rec.fields {
            d.set_item(k, value_to_py(py, v)?)?;
        }
        Ok(d)
    }

    /// Counters of this set and of its cache (this process's view).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        let (opened, read, prefetched) = self.inner.counter_values();
        d.set_item("shards", self.inner.counts().len())?;
        d.set_item("shards_opened", opened)?;
        d.set_item("shards_prefetched", prefetched)?;
        d.set_item("store_bytes_read", read)?;
        let (heads, gets, refetched, refetched_uris) = self.inner.requests();
        let requests = PyDict::new(py);
        requests.set_item("HEAD", heads)?;
        requests.set_item("GET", gets)?;
        d.set_item("requests", requests)?;
        d.set_item("shards_refetched", refetched)?;
        d.set_item("shards_kept_in_memory", self.inner.unparked())?;
        d.set_item("refetched_shards", refetched_uris)?;
        let (delivered, host) = self.inner.traffic();
        d.set_item("delivered_bytes", delivered)?;
        if let Some((added, served)) = host {
            d.set_item("host_cache_bytes_added", added)?;
            d.set_item("host_bytes_delivered", served)?;
        }
        if let Some(c) = &self.inner.options().cache {
            let s = &c.stats;
            d.set_item("cache_hits", s.hits.load(Ordering::Relaxed))?;
            d.set_item("cache_misses", s.misses.load(Ordering::Relaxed))?;
            d.set_item("cache_bytes_fetched", s.bytes_fetched.load(Ordering::Relaxed))?;
            d.set_item("cache_evictions", s.evictions.load(Ordering::Relaxed))?;
            d.set_item("cache_uncached", s.uncached.load(Ordering::Relaxed))?;
            d.set_item("cache_uncached_bytes", s.uncached_bytes.load(Ordering::Relaxed))?;
            d.set_item("cache_short_need", s.short_need.load(Ordering::Relaxed))?;
            d.set_item("cache_working_set", self.inner.working_set())?;
            d.set_item("cache_bytes_used", c.used().map_py(py)?)?;
            d.set_item("cache_budget", c.budget())?;
        }
        Ok(d)
    }
}

/// A mix's epoch length and, after `position` draws of mixed epoch
/// `epoch`, each source's (draws this epoch, own epoch).
#[pyfunction]
#[pyo3(signature = (lens, layouts, weights, stop_kind, stop_n, seed, epoch, position))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub fn mix_plan(
    py: Python<'_>,
    lens: Vec<u64>,
    layouts: Vec<Option<(Vec<u64>, u64, u64)>>,
    weights: Vec<f64>,
    stop_kind: &str,
    stop_n: u64,
    seed: Option<u64>,
    epoch: u64,
    position: u64,
) -> PyResult<(u64, Vec<(u64, u64)>)> {
    let spec = crate::source::make_mix_spec(lens, layouts, weights, stop_kind, stop_n)?;
    let order = dataio_engine::order::MixOrder::new(spec, seed, epoch).map_py(py)?;
    let len = order.len();
    Ok((len, order.progress(position.min(len))))
}
