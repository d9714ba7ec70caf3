//! The engine's rules, for the Python modules that would otherwise write them
//! a second time: URI parsing (`dataio.uri`), the safetensors header
//! (`dataio.formats.safetensors`) and shard ranges (`dataio.loader`). One
//! language for each rule: the engine and the `safetensors` crate decide,
//! this file converts their answers.

use crate::buffers::ReadBuffer;
use crate::errors::IntoPy;
use dataio_engine::base::error::Error;
use dataio_engine::io::uri::{self, Target};
use dataio_engine::kernels::formats::safetensors_header as header;
use dataio_engine::order::{HostOrder, Hosts, Layout, Rank};
use pyo3::prelude::*;

// -- URIs ---------------------------------------------------------------------

/// The scheme of `uri`, lower-case (`"file"` for `file://`), or None for a
/// plain path; raises what the IO layer raises for a URI it refuses.
#[pyfunction]
pub fn uri_scheme(py: Python<'_>, uri: &str) -> PyResult<Option<String>> {
    uri::parse(uri).map_py(py)?;
    Ok(uri::scheme_of(uri).map(str::to_ascii_lowercase))
}

/// The local path the IO layer reads for `uri` (a plain path, or the path of
/// a `file://` URI), or None for a URI a backend serves.
#[pyfunction]
pub fn uri_local_path(py: Python<'_>, uri: &str) -> PyResult<Option<String>> {
    Ok(match uri::parse(uri).map_py(py)? {
        Target::Local(path) => Some(path.to_string_lossy().into_owned()),
        Target::Remote { .. } => None,
    })
}

// -- shards -------------------------------------------------------------------

/// Raises unless rank `id` of a world of `of` is one the engine runs
/// (`Rank::check`). Python ints outside u64 are out of every range.
#[pyfunction]
pub fn shard_check(py: Python<'_>, id: i128, of: i128) -> PyResult<()> {
    let shard = Rank { id: u64::try_from(id).unwrap_or(u64::MAX), of: u64::try_from(of).unwrap_or(0), pad: false };
    shard
        .check()
        .map_err(|e| match e {
            // A rank outside u64 was checked as u64::MAX: name the one the caller gave.
            Error::InvalidArgument(msg) if u64::try_from(id).is_err() => {
                Error::InvalidArgument(msg.replacen(&u64::MAX.to_string(), &id.to_string(), 1))
            }
            e => e,
        })
        .map_py(py)
}

/// Records rank `id` of a world of `of` gets out of `n` (`Rank::count`).
#[pyfunction]
pub fn shard_count(id: u64, of: u64, pad: bool, n: u64) -> u64 {
    Rank { id, of, pad }.count(n)
}

/// The host-partitioned order of a sharded source for one rank (see
/// `dataio_engine::order`): `(records this rank reads, per
/// canonical partition what is consumed once every rank has read
/// `position` records)`. What `Loader.__len__` and `state_dict()` report.
#[pyfunction]
#[pyo3(signature = (counts, window, spread, seed, epoch, id, of, pad, hosts, canonical_hosts, offsets, position))]
#[allow(clippy::too_many_arguments)]
pub fn host_order(
    py: Python<'_>,
    counts: Vec<u64>,
    window: u64,
    spread: u64,
    seed: Option<u64>,
    epoch: u64,
    id: u64,
    of: u64,
    pad: bool,
    hosts: u64,
    canonical_hosts: u64,
    offsets: Vec<u64>,
    position: u64,
) -> PyResult<(u64, Vec<u64>)> {
    let layout = Layout::new(counts, window).with_spread(spread);
    let order = HostOrder::new(
        &layout,
        seed,
        epoch,
        Rank { id, of, pad },
        Hosts { count: hosts, canonical: canonical_hosts },
        &offsets,
    )
    .map_py(py)?;
    Ok((order.count(), order.progress(position)))
}

// -- safetensors --------------------------------------------------------------

/// `(safetensors name, bytes per element, engine dtype name)` of every dtype
/// dataio reads and writes in safetensors files.
#[pyfunction]
pub fn safetensors_dtypes() -> Vec<(String, usize, &'static str)> {
    header::dtypes()
}

/// The largest safetensors header the crate reads, in bytes.
#[pyfunction]
pub fn safetensors_max_header() -> u64 {
    header::max_header()
}

/// The header's length from a file's first 8 bytes (`prefix`) and its size:
/// how many bytes to fetch for :func:`safetensors_header`.
#[pyfunction]
pub fn safetensors_header_len(py: Python<'_>, uri: &str, prefix: &Bound<'_, PyAny>, file_size: u64) -> PyResult<u64> {
    let held = ReadBuffer::get(prefix)?;
    header::header_len(uri, held.as_slice(), file_size).map_py(py)
}

/// Parses and validates a safetensors header: `prefix` holds the file's first
/// `8 + header length` bytes (or more), `file_size` the whole file's size.
/// Returns `(data offset, [(name, dtype, shape, begin, end)] in header order,
/// [(key, value)] of __metadata__)`; raises CorruptDataError naming `uri`.
#[pyfunction]
pub fn safetensors_header(
    py: Python<'_>,
    uri: &str,
    prefix: &Bound<'_, PyAny>,
    file_size: u64,
) -> PyResult<header::Layout> {
    let held = ReadBuffer::get(prefix)?;
    let bytes = held.as_slice();
    py.detach(|| header::header_layout(uri, bytes, file_size)).map_py(py)
}
