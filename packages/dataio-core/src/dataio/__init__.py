"""dataio: a Rust-backed data loader for ML training.

Declare a pipeline once; the native runtime fetches, decodes, transforms and
batches on shared worker pools and hands PyTorch zero-copy tensors. The same
plan and the same IO verbs run against local files and every URI scheme an
installed plugin serves.
"""

from __future__ import annotations

from . import batch_transforms, capabilities, cond, errors, executor, plugins, transforms
from ._native import __version__
from ._plugins import install_resolver as _install_resolver
from .config import configure_credentials, configure_endpoint, configure_http
from .errors import DataioError
from .formats import (
    csv_records,
    iter_tfrecord,
    jsonl_records,
    open_safetensors,
    parquet_records,
    read_image,
    read_numpy,
    read_parquet,
    read_safetensors,
    scan_parquet,
    tar_records,
    tfrecord_records,
    write_safetensors,
    write_tfrecord,
)
from .gds import gds_available, gds_info
from .hookspecs import hookimpl
from .io import (
    ObjectMeta,
    Reader,
    Writer,
    delete,
    exists,
    fetch_into,
    glob,
    head,
    ls,
    read,
    read_ranges,
    reader,
    write,
    writer,
)
from .loader import Batch, Loader, from_sampler, release_memory
from .mix import mix
from .pipeline import Pipeline, batch, collate, group_by, map, pack, pipeline, slot  # noqa: A004 - dataio.map is public
from .shard_writer import WriteReport, write_shards
from .transforms import col
from .video import read_audio, read_video, video_info

_install_resolver()


def _warn_if_jpeg_without_simd() -> None:
    # Only a build made with DATAIO_ALLOW_NO_SIMD=1 gets here (build.rs fails
    # the build otherwise): say so once, where the slowdown would be felt.
    from ._native import jpeg_simd

    if jpeg_simd() == "off":
        import warnings

        warnings.warn(
            "dataio was built without libjpeg-turbo's SIMD code (nasm was missing): JPEG decoding runs at about 0.6x "
            "speed; install nasm, run `cargo clean -p mozjpeg-sys` and rebuild (`python -m dataio` reports it)",
            RuntimeWarning,
            stacklevel=2,
        )


_warn_if_jpeg_without_simd()

__all__ = [
    "mix",
    "__version__",
    "errors",
    "DataioError",
    "hookimpl",
    "plugins",
    "capabilities",
    # pipelines
    "pipeline",
    "Pipeline",
    "slot",
    "map",
    "batch",
    "collate",
    "group_by",
    "pack",
    "col",
    "cond",
    "transforms",
    "batch_transforms",
    "executor",
    "from_sampler",
    "release_memory",
    "Batch",
    "Loader",
    "gds_available",
    "gds_info",
    # formats
    "read_numpy",
    "read_image",
    "read_parquet",
    "scan_parquet",
    "parquet_records",
    "iter_tfrecord",
    "tfrecord_records",
    "jsonl_records",
    "csv_records",
    "write_tfrecord",
    "write_shards",
    "WriteReport",
    "tar_records",
    "write_safetensors",
    "read_safetensors",
    "open_safetensors",
    # video and audio (the dataio-video plugin)
    "video_info",
    "read_video",
    "read_audio",
    # IO
    "ObjectMeta",
    "Reader",
    "Writer",
    "head",
    "read",
    "write",
    "exists",
    "delete",
    "ls",
    "glob",
    "fetch_into",
    "read_ranges",
    "reader",
    "writer",
    "configure_credentials",
    "configure_endpoint",
    "configure_http",
]
