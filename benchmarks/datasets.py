"""Builds (or checks) the cached JPEG workload of the image benchmark.

A thin entry point of ``dataio_bench.datasets`` (the harness,
``benchmarks/harness``), where the workloads' data makers live (JPEGs cut
from scikit-image's photographs, small files, a safetensors latent cache,
parquet rows).

    python benchmarks/datasets.py --images 2000            # builds/validates the cache
    python benchmarks/datasets.py --images 200 --root /tmp/imgs
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

try:
    from dataio_bench.datasets import *  # noqa: F403 - this script re-exports the harness module
    from dataio_bench.datasets import main
except ImportError:  # the harness is not installed here: the repo's (and its dataio, if none is)
    REPO = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(REPO / "benchmarks" / "harness" / "src"))
    if importlib.util.find_spec("dataio") is None:
        sys.path.insert(1, str(REPO / "packages" / "dataio-core" / "src"))
    from dataio_bench.datasets import *  # noqa: F403 - this script re-exports the harness module
    from dataio_bench.datasets import main

if __name__ == "__main__":
    sys.exit(main())
