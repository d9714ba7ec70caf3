//! `dataio_text._native`: the `tokenize` op of the `dataio-text` crate as
//! an op-ABI capsule, and the reader of tokenizer files it loads them with
//! (through `dataio.read`, so any URI dataio reads: local, s3, gs, az, hf).

use dataio_text::Tokenize;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::sync::Arc;

dataio_abi::export_ops!("dataio-text": "tokenize" => Tokenize);

/// Reads tokenizer files through `dataio.read` (taking the GIL once per file and process).
#[pyfunction]
fn install_reader() {
    dataio_text::set_fetcher(Arc::new(|uri: &str| {
        Python::attach(|py| -> PyResult<Vec<u8>> { py.import("dataio")?.call_method1("read", (uri,))?.extract() })
            .map_err(|e| format!("{uri}: reading the tokenizer file failed: {e}"))
    }));
}

/// Parses `data` as the tokenizer of `uri` and keeps it (a ValueError naming what is wrong).
#[pyfunction]
fn preload(py: Python<'_>, uri: &str, data: &[u8]) -> PyResult<()> {
    py.detach(|| dataio_text::preload(uri, data)).map_err(PyValueError::new_err)
}

/// Forgets the loaded tokenizers.
#[pyfunction]
fn clear_tokenizers() {
    dataio_text::clear()
}

#[pymodule(gil_used = false, name = "_native")]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(op, m)?)?;
    m.add_function(wrap_pyfunction!(install_reader, m)?)?;
    m.add_function(wrap_pyfunction!(preload, m)?)?;
    m.add_function(wrap_pyfunction!(clear_tokenizers, m)?)
}
