"""safetensors: single files and Hugging Face-style sharded checkpoints.

Reading a local file maps it copy-on-write and returns tensors that are
views of the map (zero copy; pages come in as they are touched). Remote
files are read with ranged reads straight into the destination tensors, on
several threads. Every header is validated before any data is touched:
size limits, dtype names, shapes against byte ranges, ranges inside the
file, no overlaps or gaps.

Writing is atomic per file (temp + rename), shards are named and indexed the
way the Hugging Face ecosystem does (``model-00001-of-00003.safetensors`` and
``model.safetensors.index.json`` with ``metadata.total_size`` and
``weight_map``), and the index is written last.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import struct
import threading
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

from .. import _native
from .. import uri as _uri
from ..errors import CorruptDataError, InvalidArgumentError, NotFoundError
from ..io import exists, fetch_into, glob, head, read, writer

__all__ = [
    "write_safetensors",
    "read_safetensors",
    "open_safetensors",
    "SafetensorsFile",
    "SafetensorsLayout",
    "TensorLayout",
    "SafetensorsDType",
    "SAFETENSORS_DTYPES",
    "parse_size",
]

#: The largest header the ``safetensors`` crate reads (its own limit, from the native layer).
MAX_HEADER = _native.safetensors_max_header()
INDEX_NAME = "model.safetensors.index.json"
SINGLE_NAME = "model.safetensors"
_SHARD = re.compile(r"^model-\d{5}-of-\d{5}\.safetensors$")

# Engine dtypes numpy has no dtype for (ml_dtypes provides them).
_NOT_IN_NUMPY = frozenset({"bfloat16", "float8_e4m3fn", "float8_e5m2"})

#: dtype name -> (bytes per element, numpy name or None, torch attribute), from
#: the native layer: the safetensors crate's names and sizes of the engine's
#: dtypes (whose names are torch's).
DTYPES: dict[str, tuple[int, str | None, str]] = {
    name: (size, None if engine in _NOT_IN_NUMPY else engine, engine) for name, size, engine in _native.safetensors_dtypes()
}
_RAW = {1: "uint8", 2: "uint16"}


@dataclasses.dataclass(frozen=True)
class SafetensorsDType:
    """One dtype of the safetensors format: its name in headers (``"BF16"``),
    its size in bytes, and what it reads as: ``numpy_name`` (None where numpy
    has no such dtype: BF16 and the F8 types, which ``ml_dtypes`` provides)
    and ``torch_name`` (an attribute of ``torch``)."""

    name: str
    itemsize: int
    numpy_name: str | None
    torch_name: str

    def torch_dtype(self) -> Any:
        """The ``torch.dtype`` (imports torch)."""
        import torch

        return getattr(torch, self.torch_name)


#: Every safetensors dtype by its header name: the public view of the table
#: the reader and writer use.
SAFETENSORS_DTYPES: Mapping[str, SafetensorsDType] = MappingProxyType(
    {name: SafetensorsDType(name, size, numpy_name, torch_name) for name, (size, numpy_name, torch_name) in DTYPES.items()}
)


def parse_size(size: int | str) -> int:
    """``"5GB"``, ``"500MB"``, ``"2GiB"`` or an int number of bytes."""
    if isinstance(size, int) and not isinstance(size, bool):
        if size <= 0:
            raise InvalidArgumentError(f"max_shard_size must be positive, got {size}")
        return size
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?i?B)\s*", str(size), re.IGNORECASE)
    if not m:
        raise InvalidArgumentError(f"max_shard_size must be bytes or like '5GB'/'500MB', got {size!r}")
    value, unit = float(m.group(1)), m.group(2).upper()
    scale = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}[unit]
    return int(value * scale)


# -- header -------------------------------------------------------------------


class _Entry:
    __slots__ = ("name", "dtype", "shape", "begin", "end")

    def __init__(self, name: str, dtype: str, shape: list[int], begin: int, end: int) -> None:
        self.name, self.dtype, self.shape, self.begin, self.end = name, dtype, shape, begin, end

    @property
    def nbytes(self) -> int:
        return self.end - self.begin


@dataclasses.dataclass(frozen=True)
class TensorLayout:
    """Where one tensor's bytes lie. ``begin`` and ``end`` are offsets into the
    file's data section (add :attr:`SafetensorsLayout.data_offset` for file
    offsets); the bytes are little-endian, C-contiguous."""

    name: str
    dtype: SafetensorsDType
    shape: tuple[int, ...]
    begin: int
    end: int

    @property
    def nbytes(self) -> int:
        return self.end - self.begin


@dataclasses.dataclass(frozen=True)
class SafetensorsLayout:
    """The validated layout of one safetensors file: what a reader needs to
    place its bytes itself (into device memory, over another transport)
    without parsing the header again.

    ``data_offset`` is where the data section begins in the file (8 + the
    header's length) and ``data_size`` its length; ``local_path`` is the
    file's path when it is on the local filesystem, else None; ``tensors``
    maps names to :class:`TensorLayout` in header order."""

    uri: str
    size: int
    data_offset: int
    local_path: str | None
    tensors: Mapping[str, TensorLayout]
    metadata: Mapping[str, str]

    @property
    def data_size(self) -> int:
        return self.size - self.data_offset

    @classmethod
    def from_header(cls, prefix: bytes, size: int, uri: str, local_path: str | None = None) -> SafetensorsLayout:
        """Parses and validates a header fetched by other means: ``prefix`` is
        the file's first bytes (at least 8 + the header's length), ``size`` the
        whole file's size, ``uri`` what error messages name. Raises
        :class:`dataio.errors.CorruptDataError` on any inconsistency."""
        data_start, entries, meta = _parse_header(uri, prefix, size)
        return _layout(uri, size, data_start, local_path, entries, meta)


def _layout(
    uri: str, size: int, data_start: int, local_path: str | None, entries: Mapping[str, _Entry], meta: Mapping[str, str]
) -> SafetensorsLayout:
    tensors = {
        name: TensorLayout(name, SAFETENSORS_DTYPES[e.dtype], tuple(e.shape), e.begin, e.end) for name, e in entries.items()
    }
    return SafetensorsLayout(uri, size, data_start, local_path, MappingProxyType(tensors), MappingProxyType(dict(meta)))


def _parse_header(uri: str, prefix: bytes, file_size: int) -> tuple[int, dict[str, _Entry], dict[str, str]]:
    """Validates the header with the native layer (the ``safetensors`` crate's
    rules: size limit, dtypes, shapes against offsets, no gaps or overlaps,
    ranges inside the file); returns (data start, entries, metadata).
    Raises :class:`dataio.errors.CorruptDataError` naming ``uri``."""
    data_start, tensors, meta = _native.safetensors_header(uri, prefix, file_size)
    entries = {name: _Entry(name, dtype, shape, begin, end) for name, dtype, shape, begin, end in tensors}
    return data_start, entries, dict(meta)


# -- reading ------------------------------------------------------------------


def _framework(framework: str) -> str:
    if framework in ("torch", "pt", "pytorch"):
        return "torch"
    if framework in ("numpy", "np"):
        return "numpy"
    raise InvalidArgumentError(f"framework must be 'torch' or 'numpy', got {framework!r}")


def _torch_dtype(dtype: str) -> Any:
    return SAFETENSORS_DTYPES[dtype].torch_dtype()


def _numpy_dtype(dtype: str, uri: str) -> Any:
    import numpy as np

    name = DTYPES[dtype][1]
    if name is None:
        try:
            import ml_dtypes

            return np.dtype(getattr(ml_dtypes, DTYPES[dtype][2]))
        except ImportError:
            raise InvalidArgumentError(
                f"{uri}: numpy has no {dtype} dtype; read with framework='torch' or install ml_dtypes"
            ) from None
    return np.dtype(name).newbyteorder("<")


class SafetensorsFile:
    """One safetensors file: ``keys()``, ``metadata()``, ``read(key=...)`` and
    ``get_slice(key)[a:b]`` (reads only the rows asked for). A context manager."""

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self._local = _uri.local_path(uri)
        self._lock = threading.Lock()
        self._map: Any = None
        self._storage: Any = None
        meta = head(uri)  # typed errors: missing file, directory
        if meta.is_dir:
            raise InvalidArgumentError(f"{uri} is a directory; use read_safetensors() for checkpoint directories")
        size = meta.size
        if self._local is not None:
            with open(self._local, "rb") as f:
                prefix = f.read(8)
                prefix += f.read(_native.safetensors_header_len(uri, prefix, size))
        else:
            prefix = bytes(read(uri, 0, min(8, size)))
            prefix += bytes(read(uri, 8, _native.safetensors_header_len(uri, prefix, size)))
        self.size = size
        self._data_start, self._entries, self._meta = _parse_header(uri, prefix, size)

    def prefetch(self) -> None:
        """Asks the kernel to start reading the whole data section now
        (asynchronous readahead), so that cold pages arrive while earlier
        tensors are being used. Local files only; a no-op elsewhere."""
        if self._local is None or not hasattr(os, "posix_fadvise"):
            return
        fd = os.open(self._local, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, self._data_start, self.size - self._data_start, os.POSIX_FADV_WILLNEED)
        finally:
            os.close(fd)

    def layout(self) -> SafetensorsLayout:
        """Where everything lies in the file (data offset, local path, each
        tensor's dtype, shape and byte range), for readers that place the
        bytes themselves, such as a device reader plugin."""
        return _layout(self.uri, self.size, self._data_start, self._local, self._entries, self._meta)

    def keys(self) -> list[str]:
        return list(self._entries)

    def metadata(self) -> dict[str, str]:
        return dict(self._meta)

    def dtype(self, key: str) -> str:
        return self._entry(key).dtype

    def shape(self, key: str) -> list[int]:
        return list(self._entry(key).shape)

    def _entry(self, key: str) -> _Entry:
        try:
            return self._entries[key]
        except KeyError:
            raise NotFoundError(f"{self.uri}: no tensor {key!r} (it has {len(self._entries)}: {', '.join(list(self._entries)[:8])}…)") from None

    def _torch_storage(self) -> Any:
        import torch

        with self._lock:
            if self._storage is None:
                self._storage = torch.UntypedStorage.from_file(self._local, shared=False, nbytes=self.size)
            return self._storage

    def _numpy_map(self) -> Any:
        import numpy as np

        assert self._local is not None, "a memory map is made of local files only"
        with self._lock:
            if self._map is None:
                self._map = np.memmap(self._local, dtype=np.uint8, mode="c", shape=(self.size,))
            return self._map

    def read(self, key: str, framework: str = "torch", device: str | None = None) -> Any:
        """One tensor. Local files: a zero-copy (copy-on-write) view of the map."""
        fw = _framework(framework)
        e = self._entry(key)
        if device not in (None, "cpu"):
            from .. import gds

            return gds.read_tensor_to_device(self, key, device)
        if self._local is not None:
            return self._view(e, fw)
        out = self._empty(e, fw)
        self._fill(e, out, fw)
        return out

    def _view(self, e: _Entry, fw: str) -> Any:
        offset = self._data_start + e.begin
        if fw == "torch":
            import torch

            dtype = _torch_dtype(e.dtype)
            size = DTYPES[e.dtype][0]
            if offset % size:
                # Misaligned (a writer that did not pad the header): copy.
                data = bytearray(self._numpy_map()[offset : offset + e.nbytes])
                return torch.frombuffer(data, dtype=torch.uint8).view(dtype).reshape(e.shape) if e.nbytes else torch.empty(e.shape, dtype=dtype)
            t = torch.empty(0, dtype=dtype)
            t.set_(self._torch_storage(), offset // size, e.shape, _contiguous_strides(e.shape))
            return t
        import numpy as np

        return np.ndarray(e.shape, dtype=_numpy_dtype(e.dtype, self.uri), buffer=self._numpy_map(), offset=offset)

    def _empty(self, e: _Entry, fw: str) -> Any:
        if fw == "torch":
            import torch

            return torch.empty(e.shape, dtype=_torch_dtype(e.dtype))
        import numpy as np

        return np.empty(e.shape, dtype=_numpy_dtype(e.dtype, self.uri))

    def _fill(self, e: _Entry, out: Any, fw: str, begin: int = 0, end: int | None = None) -> None:
        """Reads bytes [begin, end) of tensor ``e`` straight into ``out``."""
        end = e.nbytes if end is None else end
        if end == begin:
            return
        fetch_into(self.uri, self._byte_view(out, fw), offset=self._data_start + e.begin + begin, size=end - begin)

    @staticmethod
    def _byte_view(out: Any, fw: str) -> Any:
        """A writable uint8 numpy view of a fresh tensor's bytes."""
        if fw == "torch":
            import torch

            return out.view(-1).view(torch.uint8).numpy() if out.dim() else out.reshape(1).view(torch.uint8).numpy()
        return out.reshape(-1).view("uint8")

    def get_slice(self, key: str) -> _Slice:
        """``get_slice(key)[a:b]`` reads rows ``a..b`` of the first axis only."""
        return _Slice(self, self._entry(key))

    def tensors(self, framework: str = "torch") -> dict[str, Any]:
        fw = _framework(framework)
        if self._local is not None:
            return {k: self._view(e, fw) for k, e in self._entries.items()}
        out = {k: self._empty(e, fw) for k, e in self._entries.items()}
        # One native call: neighbouring small tensors share a request, big ones
        # go out as parallel parts, each straight into its tensor.
        parts = [
            (self._data_start + self._entries[k].begin, self._byte_view(t, fw))
            for k, t in out.items()
            if self._entries[k].nbytes
        ]
        _native.fetch_ranges_into(self.uri, parts)
        return out

    def close(self) -> None:
        self._map = None
        self._storage = None

    def __enter__(self) -> SafetensorsFile:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"<dataio.SafetensorsFile {self.uri!r}: {len(self._entries)} tensors>"


def _contiguous_strides(shape: list[int]) -> list[int]:
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= max(d, 1)
    return list(reversed(strides))


class _Slice:
    def __init__(self, f: SafetensorsFile, e: _Entry) -> None:
        self._f, self._e = f, e

    @property
    def shape(self) -> list[int]:
        return list(self._e.shape)

    def __getitem__(self, index: Any) -> Any:
        e = self._e
        rest: tuple = ()
        if isinstance(index, tuple):
            index, rest = index[0], index[1:]
        if isinstance(index, int):
            index = slice(index, index + 1 if index != -1 else None)
            squeeze = True
        else:
            squeeze = False
        if not isinstance(index, slice) or index.step not in (None, 1) or not e.shape:
            raise InvalidArgumentError("get_slice supports a[start:stop] (and an int) on the first axis, then any numpy/torch indexing")
        start, stop, _ = index.indices(e.shape[0])
        stop = max(start, stop)
        row = e.nbytes // e.shape[0] if e.shape[0] else 0
        sub = _Entry(e.name, e.dtype, [stop - start, *e.shape[1:]], e.begin + start * row, e.begin + stop * row)
        out = self._f._empty(sub, "torch")
        if self._f._local is not None:
            out.copy_(self._f._view(sub, "torch"))
        else:
            self._f._fill(e, out, "torch", start * row, stop * row)
        if squeeze:
            out = out[0]
            return out[rest] if rest else out
        return out[(slice(None), *rest)] if rest else out


def open_safetensors(uri: str) -> SafetensorsFile:
    """Open one safetensors file (local, or any scheme with ranged reads)."""
    return SafetensorsFile(uri)


def _shard_files(path: str) -> list[str]:
    """The safetensors files of a file or a (sharded) checkpoint directory."""
    if path.endswith(".safetensors"):
        return [path]
    index = _uri.join(path, INDEX_NAME)
    if exists(index):
        try:
            weight_map = json.loads(read(index))["weight_map"]
        except (ValueError, KeyError, TypeError) as e:
            raise CorruptDataError(f"{index}: not a safetensors index ({e})") from None
        return [_uri.join(path, f) for f in dict.fromkeys(weight_map.values())]
    single = _uri.join(path, SINGLE_NAME)
    if exists(single):
        return [single]
    pattern = path.rstrip("/") + "/*.safetensors"
    files = glob(pattern)
    if not files:
        raise NotFoundError(f"{path}: no .safetensors files and no {INDEX_NAME}")
    return files


def read_safetensors(path: str, framework: str = "torch", device: str | None = None) -> dict[str, Any]:
    """All tensors of a file or a sharded checkpoint directory.

    Local files give zero-copy views of copy-on-write maps; remote files are
    read into fresh tensors with parallel ranged reads. ``device="cuda:N"``
    goes through GPUDirect Storage when available (see ``dataio.gds_info()``).
    """
    fw = _framework(framework)
    if device not in (None, "cpu"):
        from .. import gds

        return gds.read_safetensors_to_device(_shard_files(path), fw, device)
    out: dict[str, Any] = {}
    files = [SafetensorsFile(f) for f in _shard_files(path)]
    for f in files:
        f.prefetch()  # every shard's readahead runs in parallel with the first use
    for f in files:
        tensors = f.tensors(fw)
        dup = out.keys() & tensors.keys()
        if dup:
            raise CorruptDataError(f"{f.uri}: tensor {sorted(dup)[0]!r} also appears in another shard")
        out.update(tensors)
    return out


# -- writing ------------------------------------------------------------------


def _as_bytes(name: str, t: Any) -> tuple[str, list[int], Any]:
    """(dtype, shape, a contiguous uint8 buffer) of a torch tensor or numpy array."""
    mod = type(t).__module__
    if mod.startswith("torch"):
        import torch

        names = {getattr(torch, v[2], None): k for k, v in DTYPES.items() if getattr(torch, v[2], None) is not None}
        dtype = names.get(t.dtype)
        if dtype is None:
            raise InvalidArgumentError(f"tensor {name!r}: dtype {t.dtype} has no safetensors equivalent")
        c = t.detach().to("cpu").contiguous()
        shape = list(c.shape)
        flat = c.reshape(-1)
        raw = flat.view(torch.uint8) if flat.element_size() > 1 or flat.dtype != torch.uint8 else flat
        return dtype, shape, raw.numpy()
    import numpy as np

    a = np.asarray(t)
    kinds = {np.dtype(v[1]).newbyteorder("<"): k for k, v in DTYPES.items() if v[1] is not None}
    key = a.dtype.newbyteorder("<") if a.dtype.byteorder in ("=", "|", "<") else None
    dtype = kinds.get(key) if key is not None else None
    if dtype is None:
        if a.dtype.name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
            dtype = {"bfloat16": "BF16", "float8_e4m3fn": "F8_E4M3", "float8_e5m2": "F8_E5M2"}[a.dtype.name]
        else:
            raise InvalidArgumentError(f"tensor {name!r}: numpy dtype {a.dtype} has no safetensors equivalent")
    c = np.ascontiguousarray(a)
    return dtype, list(c.shape), c.reshape(-1).view(np.uint8)


def _write_file(uri: str, items: list[tuple[str, str, list[int], Any]], metadata: Mapping[str, str] | None) -> int:
    header: dict[str, Any] = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    offset = 0
    for name, dtype, shape, buf in items:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + buf.nbytes]}
        offset += buf.nbytes
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-(8 + len(raw)) % 8)
    with writer(uri) as w:
        w.write(struct.pack("<Q", len(raw)) + raw)
        for _, _, _, buf in items:
            if buf.nbytes:
                w.write(buf)
    return offset


def write_safetensors(
    path: str,
    state_dict: Mapping[str, Any],
    max_shard_size: int | str = "5GB",
    metadata: Mapping[str, str] | None = None,
) -> list[str]:
    """Write ``state_dict`` as one ``.safetensors`` file (``path`` ends in
    ``.safetensors``) or as a checkpoint directory: ``model.safetensors`` when
    it fits in one shard, else ``model-0000i-of-0000N.safetensors`` plus
    ``model.safetensors.index.json``. Each file appears atomically; the index
    comes last, so a reader never sees an index naming missing shards.
    Returns the URIs written."""
    if not isinstance(state_dict, Mapping):
        raise InvalidArgumentError("state_dict must be a mapping of names to tensors")
    limit = parse_size(max_shard_size)
    items = []
    for name, t in state_dict.items():
        if not isinstance(name, str):
            raise InvalidArgumentError(f"tensor names must be strings, got {name!r}")
        if name == "__metadata__":
            raise InvalidArgumentError("'__metadata__' is reserved; pass metadata=")
        items.append((name, *_as_bytes(name, t)))
    if path.endswith(".safetensors"):
        _write_file(path, items, metadata)
        return [path]
    shards: list[list[tuple[str, str, list[int], Any]]] = [[]]
    size = 0
    for item in items:
        nbytes = item[3].nbytes
        if shards[-1] and size + nbytes > limit:
            shards.append([])
            size = 0
        shards[-1].append(item)
        size += nbytes
    written: list[str] = []
    from .._progress import Progress

    with Progress(len(shards), "writing shards", "shard") as bar:
        if len(shards) == 1:
            uri = _uri.join(path, SINGLE_NAME)
            _write_file(uri, shards[0], metadata)
            written.append(uri)
            bar.update()
        else:
            weight_map: dict[str, str] = {}
            total = 0
            n = len(shards)
            for i, shard in enumerate(shards, 1):
                name = f"model-{i:05d}-of-{n:05d}.safetensors"
                total += _write_file(_uri.join(path, name), shard, metadata)
                weight_map.update({item[0]: name for item in shard})
                written.append(_uri.join(path, name))
                bar.update()
            index = {"metadata": {"total_size": total, **({k: v for k, v in metadata.items()} if metadata else {})}, "weight_map": weight_map}
            index_uri = _uri.join(path, INDEX_NAME)
            with writer(index_uri) as w:
                w.write(json.dumps(index, indent=2, sort_keys=True).encode())
            written.append(index_uri)
    _remove_stale_shards(path, written)
    return written


def _remove_stale_shards(path: str, written: list[str]) -> None:
    local = _uri.local_path(path)
    if local is None or not os.path.isdir(local):
        return
    keep = {os.path.basename(w) for w in written}
    for name in os.listdir(local):
        if _SHARD.match(name) and name not in keep:
            os.remove(os.path.join(local, name))
    if SINGLE_NAME not in keep and INDEX_NAME in keep and os.path.exists(os.path.join(local, SINGLE_NAME)):
        os.remove(os.path.join(local, SINGLE_NAME))
    if INDEX_NAME not in keep and os.path.exists(os.path.join(local, INDEX_NAME)):
        os.remove(os.path.join(local, INDEX_NAME))
