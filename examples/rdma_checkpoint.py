"""Checkpoint transfer over one-sided RDMA: serve a safetensors file, pull its tensors.

Requires the dataio-rdma plugin (``dataio.plugins.install_hint`` says how to
install it) and libfabric (``libfabric1``). On a host without an RDMA NIC
the ``tcp;ofi_rxm`` or ``sockets`` providers run the same code as slow
functional fallbacks, so this script runs on a laptop, on loopback.

A producer writes a checkpoint with ``dataio.write_safetensors`` and serves
the file read-only with ``rdma.serve_file``; a consumer connects, reads the
safetensors header (8-byte length + JSON) with ``rdma.read``, then pulls each
tensor's byte range straight into a preallocated array with
``rdma.read_into`` — no protocol beyond the file format itself. It also
round-trips a scratch buffer through ``rdma.serve`` / ``rdma.write`` /
``rdma.read`` and prints ``rdma.diagnose()``'s summary.

    python examples/rdma_checkpoint.py
"""

# requires-plugin: dataio-rdma

from __future__ import annotations

import json
import struct
import sys
import tempfile
from pathlib import Path

import numpy as np

import dataio

DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "U8": np.uint8}


def plugin_status(name: str) -> tuple[str, str]:
    row = next((r for r in dataio.capabilities.report()["plugins"] if r["name"] == name), None)
    return ("not installed", "install it with " + dataio.plugins.install_hint(name)) if row is None else (row["status"], row["detail"])


def main() -> int:
    status, detail = plugin_status("dataio-rdma")
    if status != "ok":
        print(f"rdma_checkpoint.py needs the dataio-rdma plugin, which reports itself {status!r}: {detail}", file=sys.stderr)
        return 2
    import dataio.rdma as rdma

    print(f"rdma.available() = {rdma.available()} (False: no RDMA NIC here, a TCP fallback provider carries the transfer)")
    for line in rdma.diagnose()["summary"]:
        print(f"  {line}")

    # A scratch buffer: one-sided write, then read back.
    with rdma.serve(bind="127.0.0.1:0", buffer_size=1 << 20) as server, rdma.connect(server.local_addr) as client:
        rdma.write(client, offset=0, data=b"hello rdma")
        assert rdma.read(client, offset=0, size=10) == b"hello rdma"
    print("scratch buffer: write + read OK")

    rng = np.random.default_rng(0)
    state = {
        "embed.weight": rng.standard_normal((512, 64)).astype(np.float32),
        "layer0.weight": rng.standard_normal((64, 64)).astype(np.float16),
        "layer0.bias": rng.standard_normal(64).astype(np.float32),
        "step": np.array([12000], dtype=np.int64),
    }
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.safetensors"
        dataio.write_safetensors(str(path), state, metadata={"format": "np"})

        # producer: serve the file read-only; consumer: pull tensor ranges.
        with rdma.serve_file(str(path), bind="127.0.0.1:0") as server, rdma.connect(server.local_addr) as client:
            (header_len,) = struct.unpack("<Q", rdma.read(client, offset=0, size=8))
            header = json.loads(rdma.read(client, offset=8, size=header_len))
            base = 8 + header_len
            got = {}
            for name, entry in header.items():
                if name == "__metadata__":
                    continue
                begin, end = entry["data_offsets"]
                dst = np.empty(entry["shape"], dtype=DTYPES[entry["dtype"]])
                assert dst.nbytes == end - begin
                rdma.read_into(client, dst, offset=base + begin)  # lands in dst, no intermediate copy
                got[name] = dst
        for name, want in state.items():
            np.testing.assert_array_equal(got[name], want)
        total = sum(a.nbytes for a in got.values())
        print(f"pulled {len(got)} tensors ({total:,} bytes) over RDMA from a served safetensors file; metadata {header.get('__metadata__')}")
    print("rdma_checkpoint: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
