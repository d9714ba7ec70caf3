"""dataio: a Rust-backed data loader for ML training.

Declare a pipeline once; the native runtime fetches, decodes, transforms and
batches on shared worker pools and hands PyTorch zero-copy tensors. The same
plan and the same IO verbs run against local files and every URI scheme an
installed plugin serves.
"""

from __future__ import annotations

from . import errors
from ._native import __version__
from ._plugins import install_resolver as _install_resolver
from .config import configure_credentials, configure_endpoint
from . import batch_transforms, capabilities, cond, plugins, transforms
from .errors import DataioError
from .gds import gds_available, gds_info
from .loader import Batch, Loader, from_sampler
from .pipeline import Pipeline, batch, collate, group_by, map, pipeline, slot
from .transforms import col
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
    reader,
    write,
    writer,
)

_install_resolver()

__all__ = [
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
    "col",
    "cond",
    "transforms",
    "batch_transforms",
    "from_sampler",
    "Batch",
    "Loader",
    "gds_available",
    "gds_info",
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
    "reader",
    "writer",
    "configure_credentials",
    "configure_endpoint",
]
