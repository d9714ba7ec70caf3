"""Entry-point module of dataio-gds: the device reader for ``"cuda"`` (which
``dataio.read_safetensors(..., device="cuda:N")`` uses) and its report row."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dataio.hookspecs import CapabilityRegistrar, DeviceReaderRegistrar, hookimpl


@hookimpl
def dataio_register_device_readers(register: DeviceReaderRegistrar) -> None:
    from .reader import READER  # cheap: cuFile and torch load on the first read

    register("cuda", READER, description="GPUDirect Storage (cuFile) into device memory; pinned-host staging otherwise")


def report() -> Mapping[str, Any]:
    from .cufile import probe

    p = probe()
    if p["available"]:
        nvidia_fs = "present" if p["nvidia_fs"] else "absent (compat mode)"
        return {"status": "ok", "detail": f"cuFile {p.get('version') or '?'} at {p['path']}; nvidia-fs {nvidia_fs}"}
    return {"status": "unavailable", "detail": p["reason"]}


@hookimpl
def dataio_register_capabilities(register: CapabilityRegistrar) -> None:
    register("dataio-gds", report)
