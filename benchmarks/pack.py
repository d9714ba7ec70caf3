"""Tokenize-and-pack throughput for language-model batches, side by side in
one run, equal cores.

    python benchmarks/pack.py [--docs 6000] [--seq-len 2048] [--batch 8] [--cores 2]
                              [--source jsonl,parquet] [--repeat 2]

A byte-level BPE tokenizer (vocabulary 8,192) is trained on a synthetic
corpus of documents whose lengths follow a log-normal law (median about 300
words, a long tail to 6,000: web text), written as 8 zstd jsonl shards
and as 8 parquet files (``--source``), then every path reads the shards,
tokenizes all documents, appends the end token and packs them into
``[batch, seq_len]`` batches with positions restarting per document and
next-token labels:

* dataio: ``jsonl_records`` / ``parquet_records`` over the shards,
  ``slot("text").tokenize(...)`` + ``dataio.pack(..., "best_fit")``
  and ``"concat"`` (native tokenizer and packer on the engine's pool);
* grain 0.2: ``MapDataset.map(encode)`` + ``experimental.BestFitPackIterDataset``
  or ``FirstFitPackIterDataset`` (over 64 bins, after a flat map that cuts
  documents longer than a row, which grain's bin packers refuse) /
  ``ConcatThenSplitIterDataset`` + ``batch``, ``mp_prefetch`` with
  ``cores`` worker processes, over the texts read from the shards before
  the timing (grain has no jsonl or parquet source: this favours grain);
* a torchtitan-style Python packer: a torch ``DataLoader`` over an
  ``IterableDataset`` whose ``cores`` workers each read their share of the
  shards (zstd + ``json.loads`` per line, or pyarrow), encode per sample and
  concat-pack in Python (positions and labels in numpy).

Prints document tokens delivered per second (padding not counted), the
padding fraction of the rows that hold documents, and dataio's ratio to each
peer (above 1: dataio is faster). Each path is checked to deliver every
document token once before its timing counts.
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np


def corpus(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    base = ("the a of to and in model data loader train token shard batch text web page news code "
            "über naïve café 数据 東京 😀 running quickly 2024 3.14 don't").split()
    words = base + [f"w{i}" for i in range(3000)]
    weights = [1 / (i + 1) for i in range(len(words))]
    out = []
    for _ in range(n):
        k = max(5, min(6000, int(rng.lognormvariate(5.7, 1.0))))
        out.append(" ".join(rng.choices(words, weights, k=k)) + ".")
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=6000)
    ap.add_argument("--seq-len", type=int, default=2048)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--source", default="jsonl,parquet", help="shard formats to read, of jsonl,parquet")
    args = ap.parse_args()
    os.environ["RAYON_NUM_THREADS"] = "1"  # tokenizers' own threads: each path brings its parallelism
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    import dataio

    L, B, cores = args.seq_len, args.batch, args.cores
    texts = corpus(args.docs)
    tmp = Path(tempfile.mkdtemp())
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.train_from_iterator(texts[:1500], trainers.BpeTrainer(
        vocab_size=8192, special_tokens=["<|endoftext|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False))
    path = tmp / "tokenizer.json"
    tok.save(str(path))
    eos = tok.token_to_id("<|endoftext|>")
    want_tokens = sum(len(e.ids) + 1 for e in tok.encode_batch(texts))
    print(f"{len(texts)} documents, {want_tokens:,} tokens with end tokens, rows of {L}, batches of {B}, {cores} cores",
          flush=True)
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq
    import zstandard

    shards = 8
    for s in range(shards):
        part = texts[s::shards]
        lines = "".join(json.dumps({"text": t}, ensure_ascii=False) + "\n" for t in part).encode()
        (tmp / f"web-{s}.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(lines))
        pq.write_table(pa.table({"text": part}), tmp / f"web-{s}.parquet", row_group_size=256)

    def read_shard(source: str, s: int) -> list[str]:
        if source == "jsonl":
            raw = zstandard.ZstdDecompressor().decompressobj().decompress((tmp / f"web-{s}.jsonl.zst").read_bytes())
            return [json.loads(line)["text"] for line in raw.decode().splitlines() if line.strip()]
        return pq.read_table(tmp / f"web-{s}.parquet", columns=["text"]).column("text").to_pylist()

    def dataio_run(source: str, strategy: str) -> Callable[[], tuple[int, int, int]]:
        pipe = dataio.pipeline(dataio.slot("text").tokenize(tokenizer=str(path)),
                               dataio.pack("text", seq_len=L, batch_size=B, strategy=strategy))
        if source == "jsonl":
            ds: Any = dataio.jsonl_records(str(tmp / f"web-{{0..{shards - 1}}}.jsonl.zst"), index_dir=tmp / "idx",
                                           cache=False)
        else:
            ds = dataio.parquet_records(str(tmp / "web-*.parquet"), index_dir=tmp / "idx")

        def run() -> tuple[int, int, int]:
            real = pad = 0
            with pipe.bind(ds).run("numpy", seed=0) as loader:
                for b in loader:
                    d = b["document_ids"]
                    used = d[(d >= 0).any(axis=1)]
                    real += int((used >= 0).sum())
                    pad += int((used < 0).sum())
            return real, pad, 0
        return run

    def grain_run(source: str, strategy: str) -> Callable[[], tuple[int, int, int]]:
        import grain
        import grain.experimental as ge

        def encode(t: str) -> dict[str, np.ndarray]:
            return {"tokens": np.asarray([*tok.encode(t).ids, eos], np.int32)}

        class Split(ge.FlatMapTransform):  # type: ignore[misc]
            """Best-fit packing in grain takes only documents up to a row: cut longer ones (as dataio does)."""

            max_fan_out = 64

            def flat_map(self, el: dict[str, np.ndarray]) -> list[dict[str, np.ndarray]]:
                t = el["tokens"]
                return [{"tokens": t[i:i + L]} for i in range(0, len(t), L)]

        read = [t for s in range(shards) for t in read_shard(source, s)]

        def run() -> tuple[int, int, int]:
            ds = grain.MapDataset.source(read).seed(0).shuffle().map(encode).to_iter_dataset()
            if strategy in ("best_fit", "first_fit"):
                packer = ge.BestFitPackIterDataset if strategy == "best_fit" else ge.FirstFitPackIterDataset
                ds = ge.FlatMapIterDataset(ds, Split())
                ds = packer(ds, length_struct={"tokens": L}, num_packing_bins=64, seed=0)
            else:
                ds = ge.ConcatThenSplitIterDataset(ds, length_struct={"tokens": L})
            ds = ds.batch(B).mp_prefetch(grain.MultiprocessingOptions(num_workers=cores))
            real = pad = 0
            for b in ds:
                seg = np.asarray(b["tokens_segment_ids"])
                used = seg[(seg > 0).any(axis=1)]
                real += int((used > 0).sum())
                pad += int((used == 0).sum())
            return real, pad, 0
        return run

    def dataloader_run(source: str) -> tuple[int, int, int]:
        import torch

        class Packed(torch.utils.data.IterableDataset):  # type: ignore[type-arg]
            def __iter__(self) -> Iterator[dict[str, Any]]:
                info = torch.utils.data.get_worker_info()
                wid, nw = (info.id, info.num_workers) if info else (0, 1)
                t = Tokenizer.from_file(str(path))
                buf: list[int] = []
                pos: list[int] = []
                for text in (t for s in range(wid, shards, nw) for t in read_shard(source, s)):
                    ids = [*t.encode(text).ids, eos]
                    buf.extend(ids)
                    pos.extend(range(len(ids)))
                    while len(buf) >= L:
                        yield row(buf[:L], pos[:L])
                        buf, pos = buf[L:], pos[L:]
                if buf:
                    yield row(buf + [eos] * (L - len(buf)), pos + [-1] * (L - len(pos)))

        def row(ids: list[int], pos: list[int]) -> dict[str, Any]:
            a = np.asarray(ids, np.int64)
            p = np.asarray(pos, np.int64)
            labels = np.append(a[1:], -100)
            labels[np.append(p[1:] == 0, True)] = -100
            labels[p < 0] = -100
            return {"input_ids": a, "position_ids": np.maximum(p, 0), "labels": labels, "real": p >= 0}

        dl = torch.utils.data.DataLoader(Packed(), batch_size=B, num_workers=cores)
        real = pad = 0
        for b in dl:
            r = b["real"].numpy()
            used = r[r.any(axis=1)]
            real += int(used.sum())
            pad += int((~used).sum())
        return real, pad, 0

    try:
        import grain  # noqa: F401

        have_grain = True
    except ImportError:
        have_grain = False
        print("grain: not installed (pip install grain==0.2.18); its rows are skipped")
    for source in args.source.split(","):
        print(f"\n== from {source} shards ==", flush=True)
        paths: list[tuple[str, Callable[[], tuple[int, int, int]]]] = [
            ("dataio pack best_fit", dataio_run(source, "best_fit")),
            ("dataio pack concat", dataio_run(source, "concat")),
            ("DataLoader + encode + concat", lambda source=source: dataloader_run(source)),  # type: ignore[misc]
        ]
        if have_grain:
            paths += [("grain BestFitPack", grain_run(source, "best_fit")), ("grain FirstFitPack", grain_run(source, "first_fit")),
                      ("grain ConcatThenSplit", grain_run(source, "concat"))]
        measure(paths, want_tokens, args.repeat)


def measure(paths: list[tuple[str, Callable[[], tuple[int, int, int]]]], want_tokens: int, repeat: int) -> None:
    results: dict[str, float] = {}
    for name, fn in paths:
        real, pad, _ = fn()  # warm, and the check
        if real != want_tokens:
            print(f"{name}: delivered {real:,} document tokens, expected {want_tokens:,}")
        best = None
        for _ in range(repeat):
            t0 = time.perf_counter()
            fn()
            dt = time.perf_counter() - t0
            best = dt if best is None else min(best, dt)
        assert best is not None
        results[name] = real / best
        print(f"{name:32s} {real / best / 1e6:7.2f} M tokens/s   padding {pad / (real + pad):6.2%}   "
              f"(best of {repeat}: {best:.2f} s)", flush=True)
    for ours in ("dataio pack best_fit", "dataio pack concat"):
        for name, rate in results.items():
            if not name.startswith("dataio"):
                print(f"{ours} / {name}: {results[ours] / rate:.2f}x")


if __name__ == "__main__":
    main()
