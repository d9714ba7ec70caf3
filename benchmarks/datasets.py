"""Builds (or checks) the cached JPEG workload of the image benchmark.

A thin entry point of ``dataio.bench.datasets``, where the workloads' data
makers live (JPEGs cut from scikit-image's photographs, small files, a
safetensors latent cache, parquet rows).

    python benchmarks/datasets.py --images 2000            # builds/validates the cache
    python benchmarks/datasets.py --images 200 --root /tmp/imgs
"""

from __future__ import annotations

import sys
from pathlib import Path

try:
    from dataio.bench.datasets import *
    from dataio.bench.datasets import main
except ImportError:  # dataio is not installed here: the repo's
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "packages" / "dataio-core" / "src"))
    from dataio.bench.datasets import *
    from dataio.bench.datasets import main

if __name__ == "__main__":
    sys.exit(main())
