//! Facts for the capability report (`python -m dataio`).

use dataio_engine::host::{pools, probe};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;

#[pyfunction]
pub fn cpu_features() -> Vec<&'static str> {
    probe::cpu_features()
}

/// How to install one of dataio's distributions (the engine's words).
#[pyfunction]
pub fn install_hint(dist: &str) -> String {
    dataio_engine::io::registry::install_words(dist)
}

/// The schemes served by the backend plugins that ship with dataio, with
/// each one's distribution, and other tools' names for those stores with
/// the scheme dataio takes (the engine's tables).
#[pyfunction]
#[allow(clippy::type_complexity)]
pub fn shipped_schemes() -> (Vec<(&'static str, &'static str)>, Vec<(&'static str, &'static str)>, Vec<&'static str>) {
    use dataio_engine::io::registry::{NO_ENDPOINT, SCHEME_ALIASES, SHIPPED_SCHEMES};
    (SHIPPED_SCHEMES.to_vec(), SCHEME_ALIASES.to_vec(), NO_ENDPOINT.to_vec())
}

/// Whether the JPEG decoder was built with SIMD: "on", "off" or "unknown".
#[pyfunction]
pub fn jpeg_simd() -> &'static str {
    probe::JPEG_SIMD
}

/// (cpu_threads, io_threads, started)
#[pyfunction]
pub fn pool_info() -> (usize, usize, bool) {
    let (cpu, io) = pools::configured_sizes();
    (cpu, io, pools::started())
}

/// dlopen probes for CUDA, nvJPEG, cuFile and libfabric.
#[pyfunction]
#[pyo3(signature = (extra_dirs=Vec::new()))]
pub fn probe_libraries(py: Python<'_>, extra_dirs: Vec<PathBuf>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    let found = py.detach(|| probe::probe_all(&extra_dirs));
    found
        .into_iter()
        .map(|p| {
            let d = PyDict::new(py);
            d.set_item("name", p.name)?;
            d.set_item("found", p.found)?;
            d.set_item("path", p.path)?;
            d.set_item("version", p.version)?;
            d.set_item("reason", p.reason)?;
            Ok(d)
        })
        .collect()
}
