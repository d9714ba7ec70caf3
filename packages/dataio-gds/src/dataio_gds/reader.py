"""Reading safetensors checkpoints into device memory: the device reader
this plugin registers for ``"cuda"``.

Two paths, chosen per file and reported by ``dataio.gds_info()["path"]``
(the reader's ``info()``):

* ``gds`` — each shard's data section is read by cuFile straight into one
  device buffer, in 64 MB chunks on several threads; tensors are views of it
  (a tensor whose offset is not aligned to its dtype is copied on the device);
* ``staged`` — pinned host buffers, filled with ``dataio.fetch_into`` and
  copied to the device asynchronously, double-buffered so reads and copies
  overlap. Used when cuFile is missing or fails, and for remote URIs.

Everything about a file's layout comes from the core's public
``SafetensorsFile.layout()``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from dataio.formats.safetensors import SafetensorsFile, SafetensorsLayout

log = logging.getLogger("dataio.gds")


def _views(buf: Any, layout: SafetensorsLayout, device: str) -> dict[str, Any]:
    import torch

    out = {}
    for name, t in layout.tensors.items():
        dtype = t.dtype.torch_dtype()
        raw = buf[t.begin : t.end]
        if t.begin % t.dtype.itemsize:
            raw = raw.clone()
        out[name] = raw.view(dtype).reshape(t.shape) if t.nbytes else torch.empty(t.shape, dtype=dtype, device=device)
    return out


def read_gds(layout: SafetensorsLayout, device: str) -> dict[str, Any]:
    import torch

    from .cufile import CuFile

    lib = CuFile.get()
    if layout.local_path is None:
        raise OSError(f"{layout.uri}: GPUDirect Storage reads local files only")
    buf = torch.empty(layout.data_size, dtype=torch.uint8, device=device)
    if layout.data_size:
        lib.read(layout.local_path, buf.data_ptr(), layout.data_size, layout.data_offset)
    return _views(buf, layout, device)


def read_staged(layout: SafetensorsLayout, device: str, chunk: int = 32 << 20) -> dict[str, Any]:
    import torch

    import dataio

    data_len = layout.data_size
    buf = torch.empty(data_len, dtype=torch.uint8, device=device)
    stream = torch.cuda.Stream(device=device)
    pinned = [torch.empty(chunk, dtype=torch.uint8).pin_memory() for _ in range(2)]
    events: list[torch.cuda.Event | None] = [None, None]
    for i, off in enumerate(range(0, data_len, chunk)):
        n = min(chunk, data_len - off)
        slot = i % 2
        previous = events[slot]
        if previous is not None:
            previous.synchronize()
        dataio.fetch_into(layout.uri, pinned[slot].numpy(), offset=layout.data_offset + off, size=n)
        with torch.cuda.stream(stream):
            buf[off : off + n].copy_(pinned[slot][:n], non_blocking=True)
            ev = torch.cuda.Event()
            ev.record(stream)
            events[slot] = ev
    stream.synchronize()
    return _views(buf, layout, device)


class GdsReader:
    """The ``dataio.hookspecs.DeviceReader`` of this plugin. Building it loads
    nothing; cuFile is opened on the first read."""

    def __init__(self) -> None:
        #: The path the last file took: "gds", "staged", or None before any read.
        self.last_path: str | None = None

    def read_safetensors(self, files: Sequence[str], device: str) -> dict[str, Any]:
        """Every tensor of ``files`` on ``device`` (GDS first, staged on failure)."""
        out: dict[str, Any] = {}
        for uri in files:
            layout = SafetensorsFile(uri).layout()
            try:
                tensors = read_gds(layout, device)
                self.last_path = "gds"
            except OSError as e:
                log.debug("GDS read of %s failed (%s); staging through pinned host memory", uri, e)
                tensors = read_staged(layout, device)
                self.last_path = "staged"
            log.debug("read %s to %s via %s", uri, device, self.last_path)
            out.update(tensors)
        return out

    def info(self) -> Mapping[str, Any]:
        return {"path": self.last_path}


#: The one reader of this process (what the plugin registers).
READER = GdsReader()


def read_into_device(files: Sequence[str], device: str) -> dict[str, Any]:
    """Every tensor of ``files`` on ``device`` (GDS first, staged on failure)."""
    return READER.read_safetensors(files, device)
