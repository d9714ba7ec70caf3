"""``python -m dataio.demo``: the main job of the README.

Until the pipeline engine lands, it prints the capability report and makes an
IO round trip through the flat verbs.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

import dataio
from dataio.capabilities import format_report, report


def main() -> int:
    print(format_report(report()))
    with tempfile.TemporaryDirectory() as tmp:
        uri = os.path.join(tmp, "demo", "payload.bin")
        payload = os.urandom(8 << 20)
        t0 = time.perf_counter()
        etag = dataio.write(uri, payload)
        back = dataio.read(uri)
        dt = time.perf_counter() - t0
        assert back == payload
        print(f"\nIO round trip: wrote and read {len(payload) >> 20} MiB in {dt * 1000:.1f} ms (etag {etag[:12]}…)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
