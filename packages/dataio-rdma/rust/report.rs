//! Host report: `info()`, `diagnose()`, the plugin's status row, and the
//! live-registration counter the tests watch.

use dataio_rdma::diagnose::{self, CudaProbe};
use dataio_rdma::fabric::{self, Query};
use pyo3::prelude::*;

/// `info()` as JSON text (the Python side parses it).
#[pyfunction]
pub fn info_json(py: Python<'_>) -> String {
    py.detach(|| diagnose::info().to_string())
}

/// `diagnose()` as JSON text; `cuda_ptr`/`cuda_len`/`cuda_device` name a
/// CUDA allocation to try registering, `cuda_note` says why there is none.
#[pyfunction]
#[pyo3(signature = (cuda_ptr=None, cuda_len=0, cuda_device=0, cuda_note=None))]
pub fn diagnose_json(
    py: Python<'_>,
    cuda_ptr: Option<u64>,
    cuda_len: usize,
    cuda_device: i32,
    cuda_note: Option<String>,
) -> String {
    let probe = cuda_ptr.map(|ptr| CudaProbe { ptr, len: cuda_len, device: cuda_device });
    py.detach(|| diagnose::diagnose(probe, cuda_note.as_deref()).to_string())
}

/// (usable, detail): libfabric loads and a provider offers RMA.
#[pyfunction]
pub fn status(py: Python<'_>) -> (bool, String) {
    py.detach(|| {
        let lib = match fabric::library() {
            Ok(lib) => lib,
            Err(e) => return (false, e.to_string()),
        };
        match fabric::select(&Query::rma()) {
            Ok(p) => {
                let kind = if p.is_hardware() { "RDMA hardware" } else { "software fallback, no RDMA hardware" };
                (
                    true,
                    format!(
                        "libfabric {}: {} on {} ({kind})",
                        fabric::version_string(lib.runtime_version),
                        p.provider,
                        p.domain
                    ),
                )
            }
            Err(e) => (false, e.to_string()),
        }
    })
}

/// Whether any provider answers fi_getinfo(FI_RMA | FI_HMEM): only then is a
/// CUDA buffer worth allocating for `diagnose`.
#[pyfunction]
pub fn hmem_offered(py: Python<'_>) -> bool {
    py.detach(|| fabric::select(&Query { hmem: true, ..Query::rma() }).is_ok())
}

/// Memory registrations alive in this process.
#[pyfunction]
pub fn live_registrations() -> usize {
    dataio_rdma::live_registrations()
}
