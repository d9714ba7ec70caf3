"""Language-model data from the Hub, as FineWeb-style repos lay it out: a
tokenizer.json in a model repo and parquet text shards in a dataset repo,
read through hf:// into tokenize and pack."""

from __future__ import annotations

import io
import sys
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

import dataio
from dataio.testing import require

sys.path.insert(0, str(Path(__file__).parents[2] / "dataio-text" / "tests"))


def test_parquet_text_shards_and_a_tokenizer_on_the_hub_pack(hf: Any, tmp_path: Path) -> None:
    require("dataio_text", "the dataio-text plugin (packages/dataio-text, built by nox -s tests)")
    tokenizers = require("tokenizers", "dataio-text's test group")
    pa = require("pyarrow", "the core's test group")
    import pyarrow.parquet as pq
    from test_tokenize import corpus, train

    tok_path = train("bpe", tmp_path / "tokenizer.json")
    ref = tokenizers.Tokenizer.from_file(str(tok_path))
    suffix = uuid.uuid4().hex[:8]
    hf.add_repo("model", f"org/lm-{suffix}", {"tokenizer.json": tok_path.read_bytes()})
    texts = [t for t in corpus(240, 21) if ref.encode(t).ids]
    files = {}
    for s in range(3):
        buf = io.BytesIO()
        pq.write_table(pa.table({"text": texts[s::3], "id": list(range(len(texts[s::3])))}), buf, row_group_size=25)
        files[f"data/CC-MAIN-2024/train-{s:05d}-of-00003.parquet"] = buf.getvalue()
    hf.add_repo("dataset", f"org/web-{suffix}", files)
    ds = dataio.parquet_records(f"hf://datasets/org/web-{suffix}/data/*/train-*.parquet", index_dir=tmp_path / "idx")
    assert len(ds) == len(texts)
    pipe = dataio.pipeline(dataio.slot("text").tokenize(tokenizer=f"hf://org/lm-{suffix}/tokenizer.json"),
                           dataio.pack("text", seq_len=96, batch_size=4, window=64))
    eos = ref.token_to_id("<|endoftext|>")
    pieces = []
    with pipe.bind(ds).run("numpy", seed=4) as loader:
        for b in loader:
            ids, doc = np.asarray(b["input_ids"]), np.asarray(b["document_ids"])
            for row, d in zip(ids, doc):
                for k in range(int(d.max()) + 1 if (d >= 0).any() else 0):
                    pieces.append(tuple(row[d == k].tolist()))
    # Every text's ids once, each followed by the tokenizer's end token;
    # documents longer than a row come in pieces, so compare the token counts.
    assert Counter(t for p in pieces for t in p) == Counter(
        t for text in texts for t in [*ref.encode(text).ids, eos])
    whole = [p for p in pieces if p[-1] == eos]
    assert len(whole) == len(texts)
