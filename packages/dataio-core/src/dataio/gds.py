"""Device placement and GPUDirect Storage status.

The GPU paths live in a plugin (``dataio-gds``) that registers a device
reader for ``"cuda"`` through the ``dataio_register_device_readers`` hook;
this module finds it through the plugin registry only, reports what is
available, and refuses device requests clearly where CUDA is absent.
"""

from __future__ import annotations

from typing import Any

from .errors import InvalidArgumentError, UnsupportedOperationError
from .hookspecs import DeviceReader

__all__ = ["gds_available", "gds_info", "require_cuda", "to_device"]


def _cuda_reason() -> str | None:
    try:
        import torch
    except ImportError:
        return "torch is not installed (pip install 'torch>=2.1')"
    if not torch.cuda.is_available():
        return f"torch {torch.__version__} sees no CUDA device on this host"
    return None


def require_cuda(device: str) -> str:
    if not isinstance(device, str) or not device.startswith("cuda"):
        raise InvalidArgumentError(f"device must be 'cpu' or 'cuda[:N]', got {device!r}")
    reason = _cuda_reason()
    if reason is not None:
        raise UnsupportedOperationError(f"device={device!r} needs CUDA, but {reason}")
    return device


def to_device(slots: dict[str, Any], device: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in slots.items():
        if isinstance(v, list):
            out[k] = [None if t is None else t.pin_memory().to(device, non_blocking=True) for t in v]
        else:
            out[k] = v.pin_memory().to(device, non_blocking=True)
    return out


def gds_info() -> dict[str, Any]:
    """What GPUDirect Storage needs and what this host has."""
    from . import _native
    from .capabilities import nvidia_library_dirs

    libs = {lib["name"]: lib for lib in _native.probe_libraries(nvidia_library_dirs())}
    cufile, driver = libs.get("cufile", {}), libs.get("cuda-driver", {})
    reasons = []
    if not driver.get("found"):
        reasons.append(f"no CUDA driver ({driver.get('reason')})")
    if not cufile.get("found"):
        reasons.append(f"no cuFile library ({cufile.get('reason')}); pip install nvidia-cufile-cu12")
    cuda = _cuda_reason()
    if cuda is not None:
        reasons.append(cuda)
    reader = _cuda_reader()
    if reader is None:
        from .plugins import install_hint

        reasons.append("the dataio-gds plugin is not installed; install it with " + install_hint("dataio-gds"))
    return {
        "available": not reasons,
        "reason": "; ".join(reasons) if reasons else None,
        "cufile": cufile,
        "cuda_driver": driver,
        # The path the last device read took ("gds", "staged"), as the reader reports it; None before one.
        "path": reader.info().get("path") if reader is not None else None,
    }


def gds_available() -> bool:
    return bool(gds_info()["available"])


def _cuda_reader() -> DeviceReader | None:
    from ._plugins import host

    return host.device_reader("cuda")


def read_tensor_to_device(f: Any, key: str, device: str) -> Any:
    """One tensor of an open safetensors file, on ``device``."""
    require_cuda(device)
    host = f.read(key, framework="torch")
    return host.pin_memory().to(device, non_blocking=True)


def read_safetensors_to_device(files: list[str], framework: str, device: str) -> dict[str, Any]:
    """Every tensor of ``files`` on ``device``: through the device reader a
    plugin registered for CUDA (dataio-gds: GPUDirect Storage, or its own
    staging; the path taken is in ``gds_info()``), else pinned host staging
    with asynchronous copies."""
    require_cuda(device)
    if framework != "torch":
        raise InvalidArgumentError("device= placement needs framework='torch'")
    reader = _cuda_reader()
    if reader is not None:
        return reader.read_safetensors(files, device)
    from .formats.safetensors import SafetensorsFile

    out: dict[str, Any] = {}
    for uri in files:
        f = SafetensorsFile(uri)
        for key in f.keys():
            out[key] = read_tensor_to_device(f, key, device)
    return out
