//! `dataio_gcs._native`: hands dataio a `dataio.backend.v1` capsule for the
//! gcs stores. Everything but the module definition lives in `dataio-objstore`.

use pyo3::prelude::*;

#[pymodule(gil_used = false, name = "_native")]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    dataio_objstore::python::init_module(m, dataio_objstore::Kind::Gcs)
}
