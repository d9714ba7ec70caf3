"""dataio.pack over tokenized text: jsonl and parquet shards, the
tokenizer's own end token, exact resume over shards, the errors of a
tokenizer without an end token."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_tokenize import corpus, train
from tokenizers import Tokenizer

import dataio
from dataio.errors import InvalidArgumentError


def pieces_of(b: Any) -> list[list[int]]:
    """Each document piece of a packed batch, row by row."""
    ids, doc = np.asarray(b["input_ids"]), np.asarray(b["document_ids"])
    out = []
    for row, d in zip(ids, doc):
        for k in range(int(d.max()) + 1 if (d >= 0).any() else 0):
            out.append(row[d == k].tolist())
    return out


def write_jsonl_zst(tmp_path: Path, texts: list[str], shards: int) -> str:
    import zstandard

    for s in range(shards):
        lines = "".join(json.dumps({"text": t}) + "\n" for t in texts[s::shards])
        (tmp_path / f"web-{s}.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(lines.encode()))
    return str(tmp_path / f"web-{{0..{shards - 1}}}.jsonl.zst")


def test_best_fit_over_jsonl_shards_with_the_tokenizers_end_token(tmp_path: Path) -> None:
    path = train("bpe", tmp_path / "tok.json")
    ref = Tokenizer.from_file(str(path))
    eos = ref.token_to_id("<|endoftext|>")
    texts = [t for t in corpus(400, 9) if ref.encode(t).ids]
    ds = dataio.jsonl_records(write_jsonl_zst(tmp_path, texts, 4), index_dir=tmp_path / "idx")
    pipe = dataio.pipeline(dataio.slot("text").tokenize(tokenizer=str(path), dtype="int32"),
                           dataio.pack("text", seq_len=128, batch_size=4, window=64))
    with pipe.bind(ds).run("numpy", seed=3) as loader:
        batches = []
        states = []
        for b in loader:
            batches.append(b)
            states.append(loader.state_dict())
        st = loader.stats()["pack"]
    pieces = [p for b in batches for p in pieces_of(b)]
    # Every text once, whole (none is over 128 tokens), each ending with the end token.
    assert all(p[-1] == eos for p in pieces)
    assert Counter(tuple(p[:-1]) for p in pieces) == Counter(tuple(ref.encode(t).ids) for t in texts)
    assert st["documents"] == len(texts) and st["split_documents"] == 0
    # Resume over the shard source from the middle of a block.
    k = len(batches) // 2
    with pipe.bind(ds).run("numpy", seed=3) as resumed:
        resumed.load_state_dict(json.loads(json.dumps(states[k])))
        rest = list(resumed)
    assert len(rest) == len(batches) - k - 1
    assert all(np.array_equal(np.asarray(x["input_ids"]), np.asarray(y["input_ids"])) for x, y in zip(rest, batches[k + 1:]))


def test_concat_over_parquet_text_is_the_token_stream(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = train("unigram", tmp_path / "tok.json")
    ref = Tokenizer.from_file(str(path))
    texts = corpus(150, 4)
    pq.write_table(pa.table({"text": texts, "n": list(range(len(texts)))}), tmp_path / "train-00000.parquet", row_group_size=40)
    ds = dataio.parquet_records(str(tmp_path / "train-00000.parquet"))
    pipe = dataio.pipeline(dataio.slot("text").tokenize(tokenizer=str(path)),
                           dataio.pack("text", seq_len=64, batch_size=2, strategy="concat", eos_token="<pad>", window=32))
    with pipe.bind(ds).run("numpy") as loader:
        flat = np.concatenate([np.asarray(b["input_ids"]).reshape(-1) for b in loader])
    pad = ref.token_to_id("<pad>")
    stream = [t for text in texts if ref.encode(text).ids for t in [*ref.encode(text).ids, pad]]
    assert flat[: len(stream)].tolist() == stream


def test_a_tokenizer_without_an_end_token_names_its_special_tokens(tmp_path: Path) -> None:
    path = train("wordpiece", tmp_path / "tok.json")
    recs = [{"text": t} for t in corpus(20, 2)]
    no_eos = dataio.pipeline(dataio.slot("text").tokenize(tokenizer=str(path)), dataio.pack("text", 32, 2))
    with pytest.raises(InvalidArgumentError, match=r"no end-of-text token.*\[SEP\]"):
        no_eos.bind(recs).run("numpy")
    with pytest.raises(InvalidArgumentError, match="'</s>' is not a token"):
        dataio.pipeline(dataio.slot("text").tokenize(tokenizer=str(path)),
                        dataio.pack("text", 32, 2, eos_token="</s>")).bind(recs).run("numpy")
    sep = Tokenizer.from_file(str(path)).token_to_id("[SEP]")
    named = dataio.pipeline(dataio.slot("text").tokenize(tokenizer=str(path), add_special_tokens=False),
                            dataio.pack("text", 32, 2, eos_token="[SEP]"))
    with named.bind(recs).run("numpy") as loader:
        b = next(iter(loader))
    assert all(p[-1] == sep for p in pieces_of(b)[:-1])
    with pytest.raises(dataio.errors.PlanError, match="must not be padded"):
        dataio.pipeline(dataio.slot("text").tokenize(tokenizer=str(path), max_length=8, padding="max_length"),
                        dataio.pack("text", 32, 2, eos_token=0))
