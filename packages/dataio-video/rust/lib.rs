//! `dataio_video._native`: the ops of the `dataio-video` crate as op-ABI
//! capsules (`dataio.op.v2`, each op declared once in `dataio_video::ops`).

use dataio_abi::ops::Op;
use dataio_video::ops::{DecodeAudio, DecodeVideo, VideoInfo};
use pyo3::prelude::*;

dataio_abi::export_ops!(DecodeVideo, DecodeAudio, VideoInfo);

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
    m.add_function(wrap_pyfunction!(ops, m)?)?;
    // The ops' names, for the verbs (read_video calls decode_video).
    m.add("DECODE_VIDEO", DecodeVideo::NAME)?;
    m.add("DECODE_AUDIO", DecodeAudio::NAME)?;
    m.add("VIDEO_INFO", VideoInfo::NAME)?;
    m.add_function(wrap_pyfunction!(ffmpeg_versions, m)?)?;
    m.add_function(wrap_pyfunction!(clear_index_cache, m)?)
}
