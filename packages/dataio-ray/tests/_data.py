"""Data and pipelines the dataio-ray tests share. Ray workers import this
module by name (the conftest puts this folder on their PYTHONPATH), so the
record maps below travel to them by reference."""

from __future__ import annotations

import io
import os
import time
from typing import Any

import numpy as np

import dataio


def jpeg(i: int) -> bytes:
    """A small JPEG, different per i (sizes vary, so random crops vary)."""
    from PIL import Image

    h, w = 30 + (i % 5) * 7, 40 + (i % 3) * 9
    yy, xx = np.mgrid[0:h, 0:w]
    arr = np.stack([(xx * 5 + i) % 256, (yy * 3) % 256, (xx + yy + 7 * i) % 256], -1).astype(np.uint8)
    out = io.BytesIO()
    Image.fromarray(arr).save(out, format="JPEG", quality=90)
    return out.getvalue()


def make_records(n: int) -> list[dict[str, Any]]:
    return [{"key": f"r{i}", "image": jpeg(i), "label": i % 4, "bucket": "abc"[i % 3]} for i in range(n)]


def rename(record: dict[str, Any]) -> dict[str, Any]:
    """A record map (runs on the workers): the image under another field."""
    return {**record, "img": record["image"]}


def label_context(record: dict[str, Any]) -> tuple[str, int]:
    """A context= function (runs on the workers)."""
    return (record["key"], record["label"] * 10)


def worker_only_crash(record: dict[str, Any]) -> dict[str, Any]:
    """A record map that kills the worker process executing a record marked
    ``crash`` (and does nothing in the trainer): a batch that is lost every
    time it is computed."""
    if record.get("crash") and os.getpid() != int(os.environ.get("DATAIO_RAY_TEST_TRAINER_PID", "0")):
        os._exit(17)
    return record


def random_pipeline(shape: Any) -> dataio.Pipeline:
    """Random crops and flips keyed per record, a record map, a numeric slot,
    and (for batch()) a random batch transform keyed per batch."""
    stages: list[Any] = [
        dataio.map(rename),
        dataio.slot("image", field="img").decode_image().random_resized_crop(16, 16).hflip().normalize(),
        dataio.slot("label").decode_bytes(),
        shape,
    ]
    if shape.kind == "batch":
        stages.append(dataio.batch_transforms.mixup(alpha=0.4, num_classes=4))
    return dataio.pipeline(*stages)


def snapshot(batches: Any) -> list[tuple[Any, ...]]:
    """What must be equal between two runs: keys, indices, every slot's
    dtype, shape and bytes, the skipped rows and the contexts."""
    out = []
    for b in batches:
        slots = []
        for name in sorted(b.slots):
            v = b[name]
            if isinstance(v, list):
                slots.append((name, [None if x is None else (str(x.dtype), tuple(x.shape), np.asarray(x).tobytes()) for x in v]))
            else:
                a = np.asarray(v)
                slots.append((name, str(a.dtype), a.shape, a.tobytes()))
        errors = sorted((e.key, e.slot, e.op) for e in (b.errors or []))
        context = list(b.context) if b.context is not None else None
        out.append((list(b.keys), list(b.indices), slots, errors, context))
    return out


def hang_once_on_worker(record: dict[str, Any]) -> dict[str, Any]:
    """A record map that, the first time a worker executes a record marked
    ``hang`` (a path), writes the worker's pid there and waits to be killed;
    a later run of the record (the retry, or the trainer) passes through. The
    test kills that worker while its batch is in flight, at a moment it
    chooses."""
    flag = record.get("hang")
    if flag and os.getpid() != int(os.environ.get("DATAIO_RAY_TEST_TRAINER_PID", "0")):
        try:
            fd = os.open(flag, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return record
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        time.sleep(60)  # killed long before; the test fails if it was not
    return record
