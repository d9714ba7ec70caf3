"""Reading safetensors checkpoints into device memory.

Two paths, chosen per call and reported by ``dataio.gds_info()["path"]``:

* ``gds`` — each shard's data section is read by cuFile straight into one
  device buffer, in 64 MB chunks on several threads; tensors are views of it
  (a tensor whose offset is not aligned to its dtype is copied on the device);
* ``staged`` — pinned host buffers, filled with ``dataio.fetch_into`` and
  copied to the device asynchronously, double-buffered so reads and copies
  overlap. Used when cuFile is missing or fails, and for remote URIs.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger("dataio.gds")
last_path: str | None = None


def _views(buf: Any, f: Any, device: str) -> dict[str, Any]:
    import torch

    from dataio.formats.safetensors import DTYPES, _torch_dtype

    out = {}
    for name, e in f._entries.items():
        dtype = _torch_dtype(e.dtype)
        size = DTYPES[e.dtype][0]
        raw = buf[e.begin : e.end]
        if e.begin % size:
            raw = raw.clone()
        out[name] = raw.view(dtype).reshape(e.shape) if e.nbytes else torch.empty(e.shape, dtype=dtype, device=device)
    return out


def read_gds(f: Any, device: str) -> dict[str, Any]:
    import torch

    from .cufile import CuFile

    lib = CuFile.get()
    local = f._local
    if local is None:
        raise OSError(f"{f.uri}: GPUDirect Storage reads local files only")
    data_len = f.size - f._data_start
    buf = torch.empty(data_len, dtype=torch.uint8, device=device)
    if data_len:
        lib.read(local, buf.data_ptr(), data_len, f._data_start)
    return _views(buf, f, device)


def read_staged(f: Any, device: str, chunk: int = 32 << 20) -> dict[str, Any]:
    import torch

    import dataio

    data_len = f.size - f._data_start
    buf = torch.empty(data_len, dtype=torch.uint8, device=device)
    stream = torch.cuda.Stream(device=device)
    pinned = [torch.empty(chunk, dtype=torch.uint8).pin_memory() for _ in range(2)]
    events = [None, None]
    for i, off in enumerate(range(0, data_len, chunk)):
        n = min(chunk, data_len - off)
        slot = i % 2
        if events[slot] is not None:
            events[slot].synchronize()
        dataio.fetch_into(f.uri, pinned[slot].numpy(), offset=f._data_start + off, size=n)
        with torch.cuda.stream(stream):
            buf[off : off + n].copy_(pinned[slot][:n], non_blocking=True)
            ev = torch.cuda.Event()
            ev.record(stream)
            events[slot] = ev
    stream.synchronize()
    return _views(buf, f, device)


def read_into_device(files: list[str], device: str) -> dict[str, Any]:
    """Every tensor of ``files`` on ``device`` (GDS first, staged on failure)."""
    global last_path
    from dataio.formats.safetensors import SafetensorsFile

    out: dict[str, Any] = {}
    for uri in files:
        f = SafetensorsFile(uri)
        try:
            tensors = read_gds(f, device)
            last_path = "gds"
        except OSError as e:
            log.debug("GDS read of %s failed (%s); staging through pinned host memory", uri, e)
            tensors = read_staged(f, device)
            last_path = "staged"
        log.debug("read %s to %s via %s", uri, device, last_path)
        out.update(tensors)
    return out
