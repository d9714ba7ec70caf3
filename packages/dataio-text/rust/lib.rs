//! `dataio_text._native`: the `tokenize` op of the `dataio-text` crate as
//! an op-ABI capsule (`dataio.op.v2`, declared once in `dataio_text`); its
//! tokenizer file is read through the engine's backends when a plan is
//! prepared (any URI dataio reads: local, s3, gs, az, hf, http).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

dataio_abi::export_ops!(dataio_text::Tokenize);

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
    m.add_function(wrap_pyfunction!(ops, m)?)?;
    m.add_function(wrap_pyfunction!(preload, m)?)?;
    m.add_function(wrap_pyfunction!(clear_tokenizers, m)?)
}
