"""The record workloads: bytes passthrough, a safetensors latent cache, parquet rows.

bytes        many small files (1..8 KiB) handed to torch as uint8 tensors
             dataio: ``slot("data").decode_bytes()``, ``batch(256)``
             torch:  DataLoader, ``open().read()`` per file, a list per batch
             threads: a ThreadPoolExecutor reading the files (no loader at all)
safetensors  a latent cache (float16 (4, 64, 64) tensors in safetensors shards),
             read in the batches a sampler chose (random across shards)
             dataio: ``decode_safetensors(tensor_key=dataio.col("tensor_key"))``
                     + ``group_by("batch_id")`` over ``dataio.from_sampler``
             torch:  DataLoader(batch_sampler=...) with ``safetensors.safe_open``
                     per sample, the default collate stacking them
parquet      rows of one parquet file (label int64, score float32, 128 token bytes)
             dataio: ``dataio.parquet_records`` + ``decode_bytes`` slots, ``batch(512)``
             torch:  pyarrow table + DataLoader whose dataset takes whole
                     batches (``__getitems__`` → ``Table.take`` → tensors)
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from . import datasets
from .harness import Cell, Unavailable
from .workloads import DataioCell, Workload

TORCH_HINT = "uv pip install torch==2.9.1"


def _as_list(batch: list[Any]) -> list[Any]:
    """DataLoader collate_fn: keep the samples as they are (variable sizes)."""
    return batch


def _as_is(batch: Any) -> Any:
    """DataLoader collate_fn for datasets that build whole batches themselves."""
    return batch


class _TorchLoaderCell(Cell):
    MODULES: tuple[str, ...] = ("torch", "torch.utils.data")
    HINT = TORCH_HINT

    def loader_args(self) -> dict[str, Any]:
        raise NotImplementedError

    def start(self) -> None:
        import torch

        pf = self.cfg["torch_prefetch_factor"]
        self.loader = torch.utils.data.DataLoader(num_workers=self.cores, pin_memory=False, persistent_workers=True, prefetch_factor=pf, **self.loader_args())
        self.info = {"num_workers": self.cores, "prefetch_factor": pf, "persistent_workers": True}

    def epoch(self) -> Iterator[Any]:
        yield from self.loader

    def close(self) -> None:
        it = getattr(self.loader, "_iterator", None)
        if it is not None:
            it._shutdown_workers()


# ----------------------------------------------------------------------------
# bytes passthrough
# ----------------------------------------------------------------------------


class _BytesCell(Cell):
    """A batch is a list of byte buffers; the digest is (bytes, sum of byte values) per sample."""

    def expected(self) -> int:
        return len(self.data["files"])

    def items(self, b: Any) -> list[Any]:
        return b

    def digest(self, b: Any) -> list[float]:
        import numpy as np

        total = sums = 0
        for item in self.items(b):
            arr = np.frombuffer(item, dtype=np.uint8) if isinstance(item, (bytes, bytearray, memoryview)) else item.numpy()
            total += arr.size
            sums += int(arr.sum(dtype=np.uint64))
        return [float(total), float(sums)]


class DataioBytes(DataioCell, _BytesCell):
    def pipeline(self) -> Any:
        import dataio

        return dataio.pipeline(dataio.slot("data").decode_bytes(), dataio.batch(self.batch, prefetch=self.cfg["prefetch"]))

    def records(self) -> Any:
        return [{"data": f} for f in self.data["files"]]

    def items(self, b: Any) -> list[Any]:
        return b["data"]

    def count(self, b: Any) -> int:
        return len(b)


class _FileBytes:
    """A map-style dataset: file i as a uint8 tensor."""

    def __init__(self, files: list[str]) -> None:
        self.files = files

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, i: int) -> Any:
        import torch

        with open(self.files[i], "rb") as f:
            return torch.frombuffer(bytearray(f.read()), dtype=torch.uint8)


class TorchBytes(_TorchLoaderCell, _BytesCell):
    LABEL = "torch DataLoader (open/read)"

    def loader_args(self) -> dict[str, Any]:
        return {"dataset": _FileBytes(self.data["files"]), "batch_size": self.batch, "shuffle": False, "collate_fn": _as_list}


class ThreadBytes(_BytesCell):
    LABEL = "Python threads (open/read)"
    USES_TORCH = False

    def start(self) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self.pool = ThreadPoolExecutor(self.cores)
        self.info = {"threads": self.cores}

    def epoch(self) -> Iterator[Any]:
        def read(path: str) -> bytes:
            with open(path, "rb") as f:
                return f.read()

        group: list[bytes] = []
        for data in self.pool.map(read, self.data["files"]):
            group.append(data)
            if len(group) == self.batch:
                yield group
                group = []
        if group:
            yield group

    def close(self) -> None:
        self.pool.shutdown()


class BytesWorkload(Workload):
    name = "bytes"
    title = "bytes passthrough"

    def candidates(self) -> dict[str, type[Cell]]:
        return {"dataio": DataioBytes, "torch": TorchBytes, "threads": ThreadBytes}

    def config(self, args: argparse.Namespace) -> dict[str, Any]:
        return {**super().config(args), "batch": args.batch or 256, "torch_prefetch_factor": args.torch_prefetch_factor}

    @contextmanager
    def prepared(self, args: argparse.Namespace, out: Path) -> Iterator[dict[str, Any]]:
        info = datasets.build_small_files(args.files, args.data_root)
        for p in info["paths"]:
            with open(p, "rb") as f:
                f.read()
        yield {"files": info["paths"], "bytes": info["bytes"]}

    def describe(self, data: dict[str, Any], cfg: dict[str, Any]) -> str:
        n = len(data["files"])
        return f"{n} files of 1–8 KiB ({data['bytes'] / 1e6:.1f} MB) read whole into uint8 tensors, batches of {cfg['batch']} (a list per batch: sizes vary)"


# ----------------------------------------------------------------------------
# safetensors latents + group_by
# ----------------------------------------------------------------------------


class _LatentCell(Cell):
    """A batch is a (B, 4, 64, 64) float16 tensor; the digest is (sum, sum of squares) per sample."""

    def expected(self) -> int:
        return sum(len(b) for b in self.data["batches"])

    def tensor(self, b: Any) -> Any:
        return b

    def count(self, b: Any) -> int:
        import torch

        x = self.tensor(b)
        shape = tuple(self.data["shape"])
        if not isinstance(x, torch.Tensor) or x.dtype != torch.float16 or tuple(x.shape[1:]) != shape:
            raise AssertionError(f"batch is {getattr(x, 'shape', type(x))} {getattr(x, 'dtype', '')}, expected (B, {shape}) float16")
        return int(x.shape[0])

    def digest(self, b: Any) -> list[float]:
        import torch

        x = self.tensor(b).to(torch.float64)
        return [float(x.sum()), float((x * x).sum())]


class DataioLatents(DataioCell, _LatentCell):
    def pipeline(self) -> Any:
        import dataio

        return dataio.pipeline(
            dataio.slot("latent").decode_safetensors(tensor_key=dataio.col("tensor_key")),
            dataio.group_by("batch_id", prefetch=self.cfg["prefetch"]),
        )

    def records(self) -> Any:
        import dataio

        rows = self.data["rows"]
        batches = [[rows[i] for i in idx] for idx in self.data["batches"]]
        # The README's recipe: a batch sampler's lists of rows, mapped to records.
        return dataio.from_sampler(batches, lambda row: {"key": row["key"], "latent": row["cache_path"], "tensor_key": row["tensor_key"]})

    def tensor(self, b: Any) -> Any:
        return b["latent"]


class _Latents:
    """A map-style dataset: sample i read with safetensors.safe_open."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> Any:
        from safetensors import safe_open

        row = self.rows[i]
        with safe_open(row["cache_path"], framework="pt") as f:
            return f.get_tensor(row["tensor_key"])


class TorchLatents(_TorchLoaderCell, _LatentCell):
    LABEL = "torch DataLoader + safetensors"
    MODULES = ("torch", "torch.utils.data", "safetensors")
    HINT = "uv pip install torch==2.9.1 safetensors"

    def loader_args(self) -> dict[str, Any]:
        return {"dataset": _Latents(self.data["rows"]), "batch_sampler": self.data["batches"]}


class LatentWorkload(Workload):
    name = "safetensors"
    title = "safetensors latents (group_by)"

    def candidates(self) -> dict[str, type[Cell]]:
        return {"dataio": DataioLatents, "torch": TorchLatents}

    def config(self, args: argparse.Namespace) -> dict[str, Any]:
        return {**super().config(args), "batch": args.batch or 32, "torch_prefetch_factor": args.torch_prefetch_factor}

    @contextmanager
    def prepared(self, args: argparse.Namespace, out: Path) -> Iterator[dict[str, Any]]:
        import random

        info = datasets.build_latents(args.latents, args.data_root)
        rows = info["rows"]
        # A fixed random batch sampler: every candidate reads the same batches
        # in the same order, spread across the shards.
        order = list(range(len(rows)))
        random.Random(0).shuffle(order)
        batch = args.batch or 32
        batches = [order[i : i + batch] for i in range(0, len(order), batch)]
        for f in sorted({r["cache_path"] for r in rows}):
            with open(f, "rb") as fh:
                fh.read()
        yield {"rows": rows, "batches": batches, "shape": info["shape"], "bytes": info["bytes"], "files": len({r["cache_path"] for r in rows})}

    def describe(self, data: dict[str, Any], cfg: dict[str, Any]) -> str:
        shape = "×".join(map(str, data["shape"]))
        return (
            f"{len(data['rows'])} float16 latents of {shape} in {data['files']} safetensors shards ({data['bytes'] / 1e6:.0f} MB), "
            f"read in {len(data['batches'])} shuffled batches of {cfg['batch']} chosen by a sampler (group_by('batch_id'))"
        )


# ----------------------------------------------------------------------------
# parquet rows
# ----------------------------------------------------------------------------

PARQUET_COLUMNS = ["key", "label", "score", "tokens"]


class _RowsCell(Cell):
    """A batch is a dict label (int64 B), score (B), tokens (uint8 B×128); the digest sums each."""

    def expected(self) -> int:
        return int(self.data["rows"])

    def columns(self, b: Any) -> tuple[Any, Any, Any]:
        return b["label"], b["score"], b["tokens"]

    def count(self, b: Any) -> int:
        import torch

        label, score, tokens = self.columns(b)
        n = int(label.shape[0])
        if not (isinstance(tokens, torch.Tensor) and tokens.dtype == torch.uint8 and tuple(tokens.shape) == (n, self.data["token_bytes"]) and score.shape[0] == n):
            raise AssertionError(f"batch columns are label {tuple(label.shape)}, score {tuple(score.shape)}, tokens {getattr(tokens, 'shape', type(tokens))}")
        return n

    def digest(self, b: Any) -> list[float]:
        import torch

        label, score, tokens = self.columns(b)
        return [float(label.sum()), float(score.to(torch.float64).sum()), float(tokens.sum(dtype=torch.int64))]


class DataioParquet(DataioCell, _RowsCell):
    def pipeline(self) -> Any:
        import dataio

        return dataio.pipeline(
            dataio.slot("label").decode_bytes(),
            dataio.slot("score").decode_bytes(),
            dataio.slot("tokens").decode_bytes(),
            dataio.batch(self.batch, prefetch=self.cfg["prefetch"]),
        )

    def records(self) -> Any:
        import dataio

        return dataio.parquet_records(self.data["path"], columns=PARQUET_COLUMNS, key="key")


class _ArrowRows:
    """A map-style dataset over a pyarrow table that takes whole batches at once."""

    def __init__(self, path: str) -> None:
        import pyarrow.parquet as pq

        self.table = pq.read_table(path, columns=PARQUET_COLUMNS)

    def __len__(self) -> int:
        return self.table.num_rows

    def __getitems__(self, indices: list[int]) -> dict[str, Any]:
        import numpy as np
        import pyarrow as pa
        import torch

        t = self.table.take(pa.array(indices, type=pa.int64()))
        tokens = t.column("tokens").combine_chunks()
        n = len(tokens)
        offsets = np.frombuffer(tokens.buffers()[1], dtype=np.int32)[tokens.offset : tokens.offset + n + 1]
        flat = np.frombuffer(tokens.buffers()[2], dtype=np.uint8)[offsets[0] : offsets[-1]]
        return {
            "label": torch.from_numpy(t.column("label").to_numpy()),
            "score": torch.from_numpy(t.column("score").to_numpy()),
            "tokens": torch.from_numpy(flat.reshape(n, -1).copy()),
        }

    def __getitem__(self, i: int) -> dict[str, Any]:
        return self.__getitems__([i])


class TorchParquet(_TorchLoaderCell, _RowsCell):
    LABEL = "pyarrow + torch DataLoader"
    MODULES = ("torch", "torch.utils.data", "pyarrow", "pyarrow.parquet")
    HINT = "uv pip install torch==2.9.1 pyarrow"

    def start(self) -> None:
        self.dataset = _ArrowRows(self.data["path"])
        super().start()

    def loader_args(self) -> dict[str, Any]:
        return {"dataset": self.dataset, "batch_size": self.batch, "shuffle": False, "collate_fn": _as_is}


class ParquetWorkload(Workload):
    name = "parquet"
    title = "parquet rows"

    def candidates(self) -> dict[str, type[Cell]]:
        return {"dataio": DataioParquet, "torch": TorchParquet}

    def config(self, args: argparse.Namespace) -> dict[str, Any]:
        return {**super().config(args), "batch": args.batch or 512, "torch_prefetch_factor": args.torch_prefetch_factor}

    @contextmanager
    def prepared(self, args: argparse.Namespace, out: Path) -> Iterator[dict[str, Any]]:
        try:
            info = datasets.build_parquet(args.rows, args.data_root)
        except ImportError as e:
            raise Unavailable(f"the parquet workload needs pyarrow ({e})") from e
        yield {"path": info["path"], "rows": info["rows"], "bytes": info["bytes"], "token_bytes": 128}

    def describe(self, data: dict[str, Any], cfg: dict[str, Any]) -> str:
        return (
            f"{data['rows']:,} rows of one parquet file ({data['bytes'] / 1e6:.1f} MB; key, label int64, score float32, "
            f"tokens 128 bytes) into label/score/tokens tensors, batches of {cfg['batch']}"
        )
