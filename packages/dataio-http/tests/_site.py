"""The folder nginx serves in the dataio-http tests: one file per verb test,
and a small dataset in every record-source format (WebDataset tar shards
with a shard index, parquet, JSON Lines, CSV) plus a short mp4 when the
ffmpeg CLI is there."""

from __future__ import annotations

import csv
import io
import json
import os
import random
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

TAR_SHARDS = 4
SAMPLES_PER_SHARD = 6
MEMBER_BYTES = 32 * 1024  # large beside a tar header (512 bytes), so header overhead is small
JSONL_SHARDS = CSV_SHARDS = 3


def tar_member(n: int, ext: str) -> bytes:
    """Member ``ext`` (``a`` or ``b``) of sample ``n``: its own bytes
    (incompressible, the same every call), so a mix-up shows."""
    return bytes([n, ord(ext)]) + random.Random(f"{n}.{ext}").randbytes(MEMBER_BYTES - 2)


def write_site(root: Path) -> None:
    (root / "a.bin").write_bytes(os.urandom(100_000))
    (root / "big.bin").write_bytes(os.urandom(12 * 1024 * 1024))  # > 8 MiB: fetch_into splits it into parts
    n = 0
    for s in range(TAR_SHARDS):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as t:
            for _ in range(SAMPLES_PER_SHARD):
                for ext in ("a", "b"):
                    body = tar_member(n, ext)
                    info = tarfile.TarInfo(f"{n:04d}.{ext}")
                    info.size = len(body)
                    t.addfile(info, io.BytesIO(body))
                n += 1
        (root / f"train-{s}.tar").write_bytes(buf.getvalue())
    # A shard index beside the shards: relative names, so it serves the
    # same shards over every scheme.
    subprocess.run([sys.executable, "-m", "dataio", "index", str(root / f"train-{{0..{TAR_SHARDS - 1}}}.tar"),
                    "--out", str(root / "shardindex.json")], check=True, capture_output=True)
    write_tables(root)
    if shutil.which("ffmpeg"):
        subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=duration=2:size=160x120:rate=25",
                        "-c:v", "libx264", "-g", "25", "-pix_fmt", "yuv420p", str(root / "clip.mp4")], check=True)


def write_tables(root: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"key": [f"k{i:03d}" for i in range(120)], "label": [i % 7 for i in range(120)],
                      "blob": [bytes([i]) * (i + 1) for i in range(120)]})
    pq.write_table(table, root / "data.parquet", row_group_size=16)
    for s in range(JSONL_SHARDS):
        lines = [json.dumps({"text": f"doc {s}-{i} 數據", "i": s * 100 + i}, ensure_ascii=False) for i in range(10)]
        (root / f"part-{s}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    for s in range(CSV_SHARDS):
        with open(root / f"part-{s}.csv", "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f, lineterminator="\n")  # CRLF rows are keyed one line early (reported)
            w.writerow(["word", "label"])
            for i in range(10):
                w.writerow([f"w{s}-{i}, quoted", s * 100 + i])
