//! Format helpers the Python `dataio.formats` modules call: image decode
//! through the pipeline's decoders, and TFRecord framing/parsing.

use crate::buffers::ReadBuffer;
use crate::dlpack::PyTensor;
use crate::errors::IntoPy;
use dataio_engine::kernels::formats::tfrecord::{self, Feature};
use dataio_engine::plan;
use dataio_engine::runtime::slot::{run_slot, Dest, SampleKey, SlotInput, SlotOut};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

/// Decodes one image with the pipeline's decoder (EXIF orientation applied).
#[pyfunction]
#[pyo3(signature = (data, mode="rgb", max_pixels=None, apply_exif_orientation=true))]
pub fn decode_image(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    mode: &str,
    max_pixels: Option<u64>,
    apply_exif_orientation: bool,
) -> PyResult<PyTensor> {
    let held = ReadBuffer::get(data)?;
    let bytes = bytes::Bytes::copy_from_slice(held.as_slice());
    drop(held);
    // The decode_image op's own parameters (and defaults: see plan::ops).
    let mut params = serde_json::Map::new();
    params.insert("mode".into(), mode.into());
    params.insert("apply_exif_orientation".into(), apply_exif_orientation.into());
    if let Some(n) = max_pixels {
        params.insert("max_pixels".into(), n.into());
    }
    let json = serde_json::json!({
        "version": 1,
        "slots": [{"name": "image", "ops": [{"op": "decode_image", "params": params}]}],
        "shape": {"kind": "batch", "size": 1},
    });
    let compiled = plan::compile(&json.to_string()).map_py(py)?;
    let slot = &compiled.slots[0];
    let out = py
        .detach(|| {
            run_slot(
                slot,
                SlotInput::Data(bytes),
                &Default::default(),
                SampleKey { seed: 0, epoch: 0, index: 0, slot: 0 },
                None,
                Dest { row: None, expect_shape: None },
            )
        })
        .map_py(py)?;
    match out {
        SlotOut::Tensor(t) => Ok(PyTensor { inner: t }),
        SlotOut::Written => unreachable!("no row was given"),
    }
}

/// Payload (offset, length) of every record of a TFRecord file.
#[pyfunction]
#[pyo3(signature = (uri, data, check_crc=true))]
pub fn tfrecord_split(
    py: Python<'_>,
    uri: &str,
    data: &Bound<'_, PyAny>,
    check_crc: bool,
) -> PyResult<Vec<(usize, usize)>> {
    let held = ReadBuffer::get(data)?;
    let slice = held.as_slice();
    py.detach(|| tfrecord::split_records(uri, slice, check_crc)).map_py(py)
}

/// Parses records `spans` of `data` as tf.train.Example into dicts of lists.
#[pyfunction]
pub fn tfrecord_parse<'py>(
    py: Python<'py>,
    uri: &str,
    data: &Bound<'py, PyAny>,
    spans: Vec<(usize, usize)>,
    first_index: usize,
) -> PyResult<Bound<'py, PyList>> {
    let held = ReadBuffer::get(data)?;
    let buf = held.as_slice();
    let out = PyList::empty(py);
    for (i, (off, len)) in spans.into_iter().enumerate() {
        let rec = buf
            .get(off..off.saturating_add(len))
            .ok_or_else(|| pyo3::exceptions::PyValueError::new_err("span outside the buffer"))?;
        let parsed = tfrecord::parse_example(uri, first_index + i, rec).map_py(py)?;
        let d = PyDict::new(py);
        for (name, feature) in parsed {
            let list = match feature {
                Feature::Bytes(v) => PyList::new(py, v.into_iter().map(|b| PyBytes::new(py, b)))?,
                Feature::Float(v) => PyList::new(py, v)?,
                Feature::Int64(v) => PyList::new(py, v)?,
            };
            d.set_item(name, list)?;
        }
        out.append(d)?;
    }
    Ok(out)
}

/// TFRecord's masked CRC32C of `data` (for writers).
#[pyfunction]
pub fn tfrecord_crc(data: &Bound<'_, PyAny>) -> PyResult<u32> {
    let held = ReadBuffer::get(data)?;
    Ok(tfrecord::masked_crc(held.as_slice()))
}
