"""The functions of ``dataio.rdma``: thin wrappers over the native module
that normalize arguments and pass torch tensors by pointer."""

from __future__ import annotations

import importlib.util
import json
import sys
from typing import Any

from dataio.errors import InvalidArgumentError

from . import _native
from ._native import Client, Server

__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "DEFAULT_MAX_INFLIGHT",
    "Client",
    "Server",
    "available",
    "connect",
    "diagnose",
    "info",
    "read",
    "read_into",
    "serve",
    "serve_file",
    "write",
]

DEFAULT_CHUNK_SIZE: int = _native.DEFAULT_CHUNK_SIZE
DEFAULT_MAX_INFLIGHT: int = _native.DEFAULT_MAX_INFLIGHT


def _token(token: str | bytes | None) -> bytes | None:
    if token is None:
        return None
    if isinstance(token, str):
        return token.encode()
    if isinstance(token, (bytes, bytearray, memoryview)):
        return bytes(token)
    raise TypeError(f"token must be str or bytes, got {type(token).__name__}")


def _provider(provider: str | None) -> str | None:
    if provider is None or provider == "":
        return None
    if not isinstance(provider, str):
        raise TypeError(f"provider must be a libfabric provider name such as 'tcp;ofi_rxm', got {type(provider).__name__}")
    return provider


def serve(
    bind: str = "0.0.0.0:0",
    buffer_size: int = 1 << 20,
    *,
    token: str | bytes | None = None,
    provider: str | None = None,
    timeout: float = 30.0,
) -> Server:
    """Serves ``buffer_size`` zeroed bytes that clients may read and write.

    ``bind`` is the "host:port" of the handshake listener; the fabric endpoint
    opens on the same host (a wildcard host leaves the interface to the
    provider) and ``server.local_addr`` is the address to give ``connect``.
    ``token`` makes clients present the same value. ``provider`` names a
    libfabric provider exactly ("tcp;ofi_rxm", "sockets", "efa", ...); by
    default ``FI_PROVIDER`` restricts the choice and hardware providers are
    preferred over the software ones. ``memoryview(server)`` is the region.
    """
    return _native.serve(bind, int(buffer_size), _token(token), _provider(provider), float(timeout))


def serve_file(
    path: Any,
    bind: str = "0.0.0.0:0",
    *,
    token: str | bytes | None = None,
    provider: str | None = None,
    timeout: float = 30.0,
) -> Server:
    """Serves the file at ``path``, memory-mapped (pages load on demand, so a
    file bigger than RAM works) and read-only: clients' writes are refused
    before they are posted, and the registration grants only remote reads."""
    return _native.serve_file(path, bind, _token(token), _provider(provider), float(timeout))


def connect(
    addr: str,
    cuda: bool = False,
    *,
    token: str | bytes | None = None,
    provider: str | None = None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    max_inflight: int = DEFAULT_MAX_INFLIGHT,
    timeout: float = 30.0,
) -> Client:
    """Connects to the server at ``addr`` ("host:port").

    Transfers are split into ``chunk_size`` segments with up to
    ``max_inflight`` posted at once. ``timeout`` bounds connecting, the
    handshake, and any wait for a completion; a transfer that fails (the
    server went away, the timeout passed) raises and breaks the connection.
    ``cuda=True`` asks the provider for FI_HMEM so CUDA tensors can be read
    into directly (see ``diagnose()``).
    """
    return _native.connect(
        addr, _token(token), _provider(provider), bool(cuda), int(chunk_size), int(max_inflight), float(timeout)
    )


def _tensor(obj: Any) -> tuple[int, int, int] | None:
    """(pointer, bytes, device) of a torch tensor (device -1: host memory)."""
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(obj, torch.Tensor):
        return None
    if not obj.is_contiguous():
        raise InvalidArgumentError("the tensor must be contiguous (call .contiguous() first)")
    if obj.device.type == "cpu":
        device = -1
    elif obj.device.type == "cuda":
        device = obj.device.index if obj.device.index is not None else torch.cuda.current_device()
    else:
        raise InvalidArgumentError(f"tensors on {obj.device} are not supported: use a CPU or CUDA tensor")
    return obj.data_ptr(), obj.numel() * obj.element_size(), device


def read_into(client: Client, dst: Any, offset: int = 0, *, size: int | None = None) -> int:
    """Fills ``dst`` from ``offset`` of the server's region, straight into its
    memory (it is registered with the fabric; no intermediate copy): a
    bytearray, numpy array, mmap, memoryview, or torch tensor (a CUDA tensor
    when connected with ``cuda=True``). ``size`` fills only a prefix.
    Returns the bytes read."""
    tensor = _tensor(dst)
    if tensor is None:
        return client.read_into(dst, offset, size)
    ptr, nbytes, device = tensor
    if size is not None:
        if not 0 <= size <= nbytes:
            raise InvalidArgumentError(f"size={size} but the tensor holds {nbytes} bytes")
        nbytes = size
    # `dst` stays referenced by this frame for the whole call.
    return client._transfer_ptr(False, ptr, nbytes, offset, device)


def read(client: Client, offset: int = 0, size: int | None = None) -> bytes:
    """``size`` bytes at ``offset`` (default: to the end of the region)."""
    if size is None:
        size = max(client.size - offset, 0)
    return client.read(offset, size)


def write(client: Client, offset: int = 0, data: Any = None) -> int:
    """Writes ``data`` (bytes-like, numpy array, or torch tensor) at
    ``offset``; its memory is the RMA source, no copy. Returns the bytes
    written."""
    if data is None:
        raise TypeError("write() needs data=")
    tensor = _tensor(data)
    if tensor is None:
        return client.write(data, offset)
    ptr, nbytes, device = tensor
    return client._transfer_ptr(True, ptr, nbytes, offset, device)


def info() -> dict[str, Any]:
    """libfabric (path, versions) and every provider that offers one-sided
    RMA on a reliable-datagram endpoint, with its capabilities;
    ``"available"`` is True when one of them is RDMA hardware."""
    result: dict[str, Any] = json.loads(_native.info_json())
    return result


def available() -> bool:
    """True when an RDMA hardware provider (efa, verbs, cxi, ...) offers
    one-sided RMA here. False does not mean dataio.rdma cannot run: the
    tcp;ofi_rxm and sockets providers work as slow fallbacks."""
    return bool(info()["available"])


def _cuda_buffer() -> tuple[Any, str | None]:
    """A small CUDA tensor to try registering, or why there is none."""
    if importlib.util.find_spec("torch") is None:
        return None, "torch is not installed, so there is no CUDA buffer to register"
    import torch

    if not torch.cuda.is_available():
        return None, f"torch {torch.__version__} sees no CUDA device on this host"
    return torch.empty(1 << 20, dtype=torch.uint8, device="cuda"), None


def diagnose() -> dict[str, Any]:
    """Runs the real opens and reports why plain RMA and HMEM (GPUDirect)
    would or would not work here; ``["summary"]`` is a list of lines.

    Plain RMA: a 64 KiB server on this host, a client, a write and a read
    back, through the selected provider. HMEM: fi_getinfo with FI_HMEM, then
    the registration of a real CUDA allocation (when torch sees a GPU)."""
    # Allocating a CUDA buffer means importing torch (seconds): only when a
    # provider offers FI_HMEM at all.
    buf, note = _cuda_buffer() if _native.hmem_offered() else (None, None)
    if buf is None:
        raw = _native.diagnose_json(None, 0, 0, note)
    else:
        raw = _native.diagnose_json(buf.data_ptr(), buf.numel(), buf.device.index or 0, None)
    result: dict[str, Any] = json.loads(raw)
    return result
