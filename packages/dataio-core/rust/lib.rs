//! `dataio._native`: the thin pyo3 layer over `dataio-engine`. It converts
//! types, releases the GIL around every blocking or heavy call, and nothing
//! more. The public API is the `dataio` package, which re-exports from here.

mod backends;
mod buffers;
mod delivery;
mod dlpack;
mod errors;
mod formats;
mod handles;
mod io;
mod kit;
mod loader;
mod pack;
mod report;
mod rules;
mod shards;
mod source;

use pyo3::prelude::*;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", dataio_engine::VERSION)?;
    m.add("ABI_VERSION", dataio_abi::ABI_VERSION)?;
    m.add("OP_ABI_VERSION", dataio_abi::ops::OP_ABI_VERSION)?;
    // Every op table version the engine loads (v1 still loads, v2 is what plugins write).
    m.add("OP_ABI_VERSIONS", (dataio_abi::ops::OP_ABI_VERSION, dataio_abi::ops::OP_ABI_V2))?;
    m.add("BACKEND_CAPSULE_NAME", dataio_abi::CAPSULE_NAME.to_str().unwrap_or_default())?;
    m.add_class::<io::ObjectMeta>()?;
    m.add_class::<io::Reader>()?;
    m.add_class::<io::Writer>()?;
    m.add_class::<io::ChunkIter>()?;
    m.add_class::<backends::NativeBackend>()?;
    m.add_class::<dlpack::PyTensor>()?;
    m.add_class::<loader::CompiledPlan>()?;
    m.add_class::<loader::RawBatch>()?;
    m.add_class::<loader::NativeLoader>()?;
    m.add_class::<loader::ObjectMetas>()?;
    m.add_class::<loader::BatchPlanner>()?;
    m.add_class::<shards::PyShardSet>()?;
    m.add_class::<delivery::DeliveryTracker>()?;
    m.add_class::<pack::PyPacker>()?;
    m.add_function(wrap_pyfunction!(pack::check_pack_shape, m)?)?;
    m.add_function(wrap_pyfunction!(shards::mix_plan, m)?)?;
    m.add_function(wrap_pyfunction!(loader::compile_plan, m)?)?;
    m.add_function(wrap_pyfunction!(loader::op_table, m)?)?;
    m.add_function(wrap_pyfunction!(dlpack::live_buffers, m)?)?;
    m.add_function(wrap_pyfunction!(dlpack::release_memory, m)?)?;
    m.add_function(wrap_pyfunction!(formats::decode_image, m)?)?;
    m.add_function(wrap_pyfunction!(formats::tfrecord_split, m)?)?;
    m.add_function(wrap_pyfunction!(formats::tfrecord_parse, m)?)?;
    m.add_function(wrap_pyfunction!(formats::tfrecord_crc, m)?)?;
    m.add_function(wrap_pyfunction!(io::head, m)?)?;
    m.add_function(wrap_pyfunction!(io::read, m)?)?;
    m.add_function(wrap_pyfunction!(io::fetch_into, m)?)?;
    m.add_function(wrap_pyfunction!(io::fetch_ranges_into, m)?)?;
    m.add_function(wrap_pyfunction!(io::read_ranges, m)?)?;
    m.add_function(wrap_pyfunction!(io::write, m)?)?;
    m.add_function(wrap_pyfunction!(io::exists, m)?)?;
    m.add_function(wrap_pyfunction!(io::delete, m)?)?;
    m.add_function(wrap_pyfunction!(io::ls, m)?)?;
    m.add_function(wrap_pyfunction!(io::glob, m)?)?;
    m.add_function(wrap_pyfunction!(io::reader, m)?)?;
    m.add_function(wrap_pyfunction!(io::writer, m)?)?;
    m.add_function(wrap_pyfunction!(backends::local_backend, m)?)?;
    m.add_function(wrap_pyfunction!(backends::_abi_memory_backend, m)?)?;
    m.add_function(wrap_pyfunction!(backends::register_backend, m)?)?;
    m.add_function(wrap_pyfunction!(backends::unregister_backend, m)?)?;
    m.add_function(wrap_pyfunction!(backends::register_native_op, m)?)?;
    m.add_function(wrap_pyfunction!(backends::native_op_declaration, m)?)?;
    m.add_function(wrap_pyfunction!(kit::abi_crate_sources, m)?)?;
    m.add_function(wrap_pyfunction!(io::call_native_op, m)?)?;
    m.add_function(wrap_pyfunction!(backends::unregister_native_op, m)?)?;
    m.add_function(wrap_pyfunction!(backends::native_ops, m)?)?;
    m.add_function(wrap_pyfunction!(backends::registered_schemes, m)?)?;
    m.add_function(wrap_pyfunction!(backends::set_scheme_resolver, m)?)?;
    m.add_function(wrap_pyfunction!(backends::backend_info, m)?)?;
    m.add_function(wrap_pyfunction!(report::cpu_features, m)?)?;
    m.add_function(wrap_pyfunction!(report::pool_info, m)?)?;
    m.add_function(wrap_pyfunction!(report::jpeg_simd, m)?)?;
    m.add_function(wrap_pyfunction!(report::install_hint, m)?)?;
    m.add_function(wrap_pyfunction!(report::shipped_schemes, m)?)?;
    m.add_function(wrap_pyfunction!(report::probe_libraries, m)?)?;
    m.add_function(wrap_pyfunction!(rules::uri_scheme, m)?)?;
    m.add_function(wrap_pyfunction!(rules::uri_local_path, m)?)?;
    m.add_function(wrap_pyfunction!(rules::shard_check, m)?)?;
    m.add_function(wrap_pyfunction!(rules::shard_count, m)?)?;
    m.add_function(wrap_pyfunction!(rules::host_order, m)?)?;
    m.add_function(wrap_pyfunction!(rules::safetensors_dtypes, m)?)?;
    m.add_function(wrap_pyfunction!(rules::safetensors_max_header, m)?)?;
    m.add_function(wrap_pyfunction!(rules::safetensors_header_len, m)?)?;
    m.add_function(wrap_pyfunction!(rules::safetensors_header, m)?)?;
    Ok(())
}
