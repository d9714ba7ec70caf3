"""Format helpers: safetensors (single and sharded), numpy, images, parquet,
TFRecord and tar shards. Every reader works on any URI scheme the IO layer
serves; local files are memory-mapped where that avoids a copy."""

from .csv import csv_records
from .image import read_image
from .jsonl import jsonl_records
from .numpy import read_numpy
from .parquet import parquet_records, read_parquet, scan_parquet
from .safetensors import (
    SAFETENSORS_DTYPES,
    SafetensorsDType,
    SafetensorsFile,
    SafetensorsLayout,
    TensorLayout,
    open_safetensors,
    read_safetensors,
    write_safetensors,
)
from .tar import tar_records
from .tfrecord import iter_tfrecord, tfrecord_records, write_tfrecord

__all__ = [
    "read_image",
    "read_numpy",
    "read_parquet",
    "scan_parquet",
    "parquet_records",
    "write_safetensors",
    "read_safetensors",
    "open_safetensors",
    "SafetensorsFile",
    "SafetensorsLayout",
    "TensorLayout",
    "SafetensorsDType",
    "SAFETENSORS_DTYPES",
    "iter_tfrecord",
    "tfrecord_records",
    "jsonl_records",
    "csv_records",
    "write_tfrecord",
    "tar_records",
]
