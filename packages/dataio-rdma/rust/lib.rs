//! `dataio_rdma._native`: the pyo3 layer over the `dataio-rdma` crate. It
//! converts types, releases the GIL around every fabric call, and nothing
//! more; the public API is the `dataio_rdma` package (and `dataio.rdma`).

mod buffers;
mod client;
mod errors;
mod report;
mod server;

use pyo3::prelude::*;

#[pymodule(gil_used = false)]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("DEFAULT_CHUNK_SIZE", dataio_rdma::client::DEFAULT_CHUNK_SIZE)?;
    m.add("DEFAULT_MAX_INFLIGHT", dataio_rdma::client::DEFAULT_MAX_INFLIGHT)?;
    m.add_class::<server::PyServer>()?;
    m.add_class::<client::PyClient>()?;
    m.add_function(wrap_pyfunction!(server::serve, m)?)?;
    m.add_function(wrap_pyfunction!(server::serve_file, m)?)?;
    m.add_function(wrap_pyfunction!(client::connect, m)?)?;
    m.add_function(wrap_pyfunction!(report::info_json, m)?)?;
    m.add_function(wrap_pyfunction!(report::diagnose_json, m)?)?;
    m.add_function(wrap_pyfunction!(report::status, m)?)?;
    m.add_function(wrap_pyfunction!(report::hmem_offered, m)?)?;
    m.add_function(wrap_pyfunction!(report::live_registrations, m)?)?;
    Ok(())
}
