//! `dataio_video._native`: the ops of the `dataio-video` crate as op-ABI
//! capsules (`dataio.op.v1`), one fresh table per registration.

use dataio_abi::ops::{export_op, OP_CAPSULE_NAME};
use dataio_video::ops::{DecodeAudio, DecodeVideo, VideoInfo};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// A fresh capsule holding the table of op `name`; dataio adopts it.
#[pyfunction]
fn op(py: Python<'_>, name: &str) -> PyResult<Py<PyAny>> {
    let table = match name {
        "decode_video" => export_op(DecodeVideo),
        "decode_audio" => export_op(DecodeAudio),
        "video_info" => export_op(VideoInfo),
        other => return Err(PyValueError::new_err(format!("dataio-video has no op {other:?}"))),
    };
    // SAFETY: the name is a static C string; the table's ownership passes to
    // whoever adopts the capsule (dataio, once).
    unsafe {
        let cap = pyo3::ffi::PyCapsule_New(table.cast(), OP_CAPSULE_NAME.as_ptr(), None);
        Ok(Bound::from_owned_ptr_or_err(py, cap)?.unbind())
    }
}

/// The FFmpeg libraries this module runs on: {"libavformat": "59.27.100", ...}.
#[pyfunction]
fn ffmpeg_versions() -> Vec<(&'static str, String)> {
    dataio_video::media::library_versions()
}

/// Forgets the cached per-file indexes (tests, and callers that rewrite files in place
/// without changing their size or version).
#[pyfunction]
fn clear_index_cache() {
    dataio_video::index::clear_cache()
}

#[pymodule(gil_used = false, name = "_native")]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(op, m)?)?;
    m.add_function(wrap_pyfunction!(ffmpeg_versions, m)?)?;
    m.add_function(wrap_pyfunction!(clear_index_cache, m)?)
}
