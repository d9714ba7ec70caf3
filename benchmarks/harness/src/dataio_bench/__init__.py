"""The benchmark matrix: dataio against its peers, side by side, in one run.

The distribution ``dataio-bench`` (``benchmarks/harness``): a development
tool, never published and never part of the ``dataio`` wheel; ``nox -s
bench`` installs it (editable) with its peers.

``python -m dataio_bench`` (or ``nox -s bench``) runs every workload —
the image pipeline, bytes passthrough, safetensors latents with
``group_by``, parquet rows, remote reads from an S3 emulator — for dataio and
each peer that is installed, on the same data and the same pinned cores, for
a sweep of core counts, and writes a table, a CSV, a Markdown report and a
PNG chart to ``bench-out/``. ``--compare BASELINE.csv`` gates the run
against a stored baseline. ``docs/benchmark.md`` explains every column.

Modules: ``cli`` (the command), ``harness`` (how one cell is measured, in its
own process), ``workloads`` (the registry and what workloads share),
``image`` / ``bucket`` / ``records`` / ``remote`` (the candidates),
``nginx`` (the S3 workload's server), ``datasets`` (the data, cached),
``report`` (table, CSV, Markdown, chart), ``gate`` (the regression gate).
Nothing heavy is imported until a cell needs it.
"""

from .cli import main

__all__ = ["main"]
