//! `dataio_http._native`: hands dataio a `dataio.backend.v1` capsule for
//! `http://` and `https://`. The data path is `dataio_objstore::http`.

use pyo3::prelude::*;

#[pymodule(gil_used = false, name = "_native")]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    dataio_objstore::python::init_http_module(m)
}
