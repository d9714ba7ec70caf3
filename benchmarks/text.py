"""Tokenization throughput, side by side in one run, equal cores.

    python benchmarks/text.py [--docs 40000] [--captions 200000] [--cores 2] [--workload all|mixed|captions]

A byte-level BPE tokenizer (vocabulary 8,192) is trained on a synthetic
corpus of captions and short documents (words drawn from a Zipf law over a
word list with CJK, accents and emoji). Two workloads:

* ``mixed``: captions to short documents (8 to 300 words), ids of any
  length; most tokens are in the longer texts, so every path spends its time
  in the same Rust BPE;
* ``captions``: image captions as text-to-image training has them (4 to 30
  words, LAION-like), tokenized CLIP-style to ``[B, 77]`` (truncation,
  ``padding="max_length"``, pad id 0): per sample the BPE work is small and
  what a path does around it shows.

Each workload's texts are tokenized by:

* dataio: ``slot("text").tokenize(tokenizer=...)`` in a pipeline over
  in-memory records with the default ``concurrency`` (records in flight:
  ``concurrency=cores`` kept only 2 short captions in flight and ran at 77%
  of this); the native op on the engine's CPU pool, no GIL;
* tokenizers' own ``Tokenizer.encode_batch`` (its Rust threads, limited to
  the same cores with ``RAYON_NUM_THREADS``), in batches of 256;
* the common way: ``tokenizer.encode(text)`` per sample in a torch
  ``DataLoader`` with ``cores`` workers and batch size 256;
* the commonest way: ``tokenizer(text)["input_ids"]`` per sample, the
  ``transformers`` fast tokenizer over the same file
  (``PreTrainedTokenizerFast(tokenizer_file=...)``), in the same
  DataLoader (when ``transformers`` is installed).

Prints tokens/s (text tokens; padding not counted) for each and dataio's
ratio to each peer (above 1: dataio is faster); on ``captions`` every path
returns ``[B, 77]`` int64 (a tensor from the DataLoaders' default collate). Every path's ids are checked equal to tokenizers' on the first
texts before timing.
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np


def corpus(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    base = ("the a of to and in video frame audio caption model data loader train token shard batch image "
            "über naïve café 数据 加载 東京 😀 👍 running quickly 2024 3.14 don't").split()
    words = base + [f"w{i}" for i in range(2000)]
    weights = [1 / (i + 1) for i in range(len(words))]
    out = []
    for _ in range(n):
        k = rng.choice([8, 12, 20, 40, 120, 300])  # captions to short documents
        out.append(" ".join(rng.choices(words, weights, k=k)) + rng.choice([".", "!", "", " 😀"]))
    return out


def captions(n: int, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    base = ("a the of with on in photo picture close up view red blue green white black dog cat man woman "
            "street city beach mountain sunset car house tree flowers food table logo vector 4k hd "
            "über café 東京 😀").split()
    words = base + [f"w{i}" for i in range(2000)]
    weights = [1 / (i + 1) for i in range(len(words))]
    return [" ".join(rng.choices(words, weights, k=min(30, max(4, int(rng.lognormvariate(2.3, 0.5))))))
            for _ in range(n)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=40000)
    ap.add_argument("--captions", type=int, default=200000)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--workload", choices=["all", "mixed", "captions"], default="all")
    args = ap.parse_args()
    os.environ["RAYON_NUM_THREADS"] = str(args.cores)
    os.environ["TOKENIZERS_PARALLELISM"] = "true"
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tmp = Path(tempfile.mkdtemp())
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.train_from_iterator(corpus(5000) + captions(5000, seed=7), trainers.BpeTrainer(
        vocab_size=8192, special_tokens=["<pad>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False))
    path = tmp / "tokenizer.json"
    tok.save(str(path))
    assert tok.token_to_id("<pad>") == 0
    if args.workload in ("all", "mixed"):
        print(f"== mixed: {args.docs:,} captions and short documents, ids of any length", flush=True)
        bench(args, path, corpus(args.docs), None)
    if args.workload in ("all", "captions"):
        print(f"== captions: {args.captions:,} image captions, CLIP-style [B, 77] (truncated, padded)", flush=True)
        bench(args, path, captions(args.captions), 77)


def bench(args: Any, path: Path, texts: list[str], fixed: int | None) -> None:
    """Times every path over `texts`; `fixed`: truncate and pad to that length."""
    from tokenizers import Tokenizer

    import dataio

    def configured() -> Any:
        t = Tokenizer.from_file(str(path))
        if fixed:
            t.enable_truncation(fixed)
            t.enable_padding(length=fixed, pad_id=0, pad_token="<pad>")
        return t

    tok = configured()
    records = [{"key": f"d{i}", "text": t} for i, t in enumerate(texts)]
    kw: dict[str, Any] = {"max_length": fixed, "padding": "max_length"} if fixed else {}
    slot = dataio.slot("text", stack="auto" if fixed else "never").tokenize(tokenizer=str(path), **kw)
    pipe = dataio.pipeline(slot, dataio.batch(256))

    def count(x: Any) -> int:
        return int((np.asarray(x) != 0).sum()) if fixed else len(x)

    def run_dataio() -> int:
        n = 0
        with pipe.bind(records).run("torch" if fixed else "numpy") as loader:
            for b in loader:
                n += int((b["text"] != 0).sum()) if fixed else sum(len(x) for x in b["text"])
        return n

    def run_encode_batch() -> int:
        n = 0
        for i in range(0, len(texts), 256):
            enc = tok.encode_batch(texts[i:i + 256])
            if fixed:
                n += count(np.array([e.ids for e in enc], dtype=np.int64))
            else:
                n += sum(len(e.ids) for e in enc)
        return n

    def loader_of(get: Any) -> Any:
        import torch

        class Texts(torch.utils.data.Dataset):
            def __init__(self) -> None:
                self.tok: Any = None

            def __len__(self) -> int:
                return len(texts)

            def __getitem__(self, i: int) -> Any:
                return get(self, i)

        collate = None if fixed else list
        return torch.utils.data.DataLoader(Texts(), batch_size=256, num_workers=args.cores, collate_fn=collate)

    def encode_item(ds: Any, i: int) -> Any:
        import torch

        if ds.tok is None:
            ds.tok = configured()
        ids = ds.tok.encode(texts[i]).ids
        return torch.tensor(ids) if fixed else ids

    def hf_item(ds: Any, i: int) -> Any:
        if ds.tok is None:
            from transformers import PreTrainedTokenizerFast

            ds.tok = PreTrainedTokenizerFast(tokenizer_file=str(path), pad_token="<pad>")
        if fixed:
            return ds.tok(texts[i], max_length=fixed, padding="max_length", truncation=True,
                          return_tensors="pt")["input_ids"][0]
        return ds.tok(texts[i])["input_ids"]

    def run_loader(get: Any) -> Any:
        def run() -> int:
            if fixed:
                return sum(int((b != 0).sum()) for b in loader_of(get))
            return sum(len(x) for b in loader_of(get) for x in b)
        return run

    # The same ids everywhere, before any timing.
    with pipe.bind(records[:300]).run("numpy") as loader:
        ours = {k: np.asarray(x).tolist() for b in loader for k, x in zip(b.keys, b["text"])}
    assert all(ours[f"d{i}"] == tok.encode(texts[i]).ids for i in range(300)), "dataio's ids differ"
    try:
        import transformers  # noqa: F401

        has_hf = True
        hf = type("D", (), {"tok": None})()
        assert all((hf_item(hf, i).tolist() if fixed else hf_item(hf, i)) == ours[f"d{i}"] for i in range(300)), \
            "transformers' ids differ"
    except ImportError:
        has_hf = False
        print("transformers is not installed: the tokenizer(text) row is skipped")

    results = {}
    paths = [("dataio tokenize", run_dataio), ("tokenizers encode_batch", run_encode_batch),
             ("DataLoader + encode per sample", run_loader(encode_item))]
    if has_hf:
        paths.append(("DataLoader + tokenizer(text) (transformers)", run_loader(hf_item)))
    for name, fn in paths:
        fn()  # warm: load the tokenizer, start workers once
        best = None
        for _ in range(3):
            t = time.perf_counter()
            tokens = fn()
            dt = time.perf_counter() - t
            best = dt if best is None else min(best, dt)
        results[name] = tokens / best
        print(f"{name:44s} {tokens / best / 1e6:8.2f} M tokens/s  {len(texts) / best / 1e3:8.1f} k texts/s "
              f"({tokens:,} tokens, best of 3: {best:.2f} s)", flush=True)
    ours_rate = results["dataio tokenize"]
    for name, rate in results.items():
        if name != "dataio tokenize":
            print(f"dataio / {name}: {ours_rate / rate:.2f}x")


if __name__ == "__main__":
    main()
