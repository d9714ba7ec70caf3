"""Image pipeline benchmark: dataio against its peers, side by side, in one run.

A thin entry point of ``python -m dataio_bench`` (the harness lives in
``benchmarks/harness/``), kept for its defaults: the
image workload only, all usable CPUs, 2000 images, 3 timed epochs, the report
as ``bench-out/image_pipeline.{csv,md,json,png}``. Every option of
``python -m dataio_bench`` may follow and overrides these.

    .venv-bench/bin/python benchmarks/image_pipeline.py                     # all usable CPUs
    .venv-bench/bin/python benchmarks/image_pipeline.py --cores 1           # single core
    .venv-bench/bin/python benchmarks/image_pipeline.py --cores all,1 --only dataio,torch,decode-only

See docs/benchmark.md for what each column means.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

try:
    from dataio_bench import main
except ImportError:  # the harness is not installed here: the repo's (and, if there is no dataio, the repo's
    # with the extension a dev build left beside it)
    sys.path.insert(0, str(REPO / "benchmarks" / "harness" / "src"))
    if importlib.util.find_spec("dataio") is None:
        sys.path.insert(1, str(REPO / "packages" / "dataio-core" / "src"))
    from dataio_bench import main

DEFAULTS = [
    "--workloads", "image", "--cores", "all", "--images", "2000", "--epochs", "3",
    "--report-name", "image_pipeline", "--out", str(REPO / "bench-out"),
]  # fmt: skip

if __name__ == "__main__":
    sys.exit(main([*DEFAULTS, *sys.argv[1:]]))
