"""dataio-text over S3 (moto): the tokenizer file comes from the store,
read once per process through dataio's backends."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import numpy as np
from conftest import S3Server

import dataio
from dataio.testing import require

sys.path.insert(0, str(Path(__file__).parents[2] / "dataio-text" / "tests"))


def test_a_tokenizer_file_in_the_store(s3: S3Server, tmp_path: Path) -> None:
    require("dataio_text", "the dataio-text plugin (packages/dataio-text, built by nox -s tests)")
    tokenizers = require("tokenizers", "dataio-text's test group")
    from test_tokenize import corpus, train

    local = train("bpe", tmp_path / "tokenizer.json")
    key = f"tok-{uuid.uuid4().hex[:8]}/tokenizer.json"
    s3.client.upload_file(str(local), s3.bucket, key)
    uri = f"s3://{s3.bucket}/{key}"
    texts = corpus(300, 11)
    recs = [{"key": f"t{i:03d}", "text": t} for i, t in enumerate(texts)]
    pipe = dataio.pipeline(dataio.slot("text", stack="never").tokenize(tokenizer=uri), dataio.batch(32))
    with pipe.bind(recs).run("numpy") as loader:
        got = {k: np.array(x).tolist() for b in loader for k, x in zip(b.keys, b["text"])}
    ref = tokenizers.Tokenizer.from_file(str(local))
    assert all(got[f"t{i:03d}"] == ref.encode(t).ids for i, t in enumerate(texts))


def test_jsonl_shards_in_the_store_tokenized_and_packed(s3: S3Server, tmp_path: Path) -> None:
    require("dataio_text", "the dataio-text plugin (packages/dataio-text, built by nox -s tests)")
    tokenizers = require("tokenizers", "dataio-text's test group")
    zstandard = require("zstandard", "the core's test group")
    import json
    from collections import Counter

    from test_tokenize import corpus, train

    local = train("bpe", tmp_path / "tokenizer.json")
    ref = tokenizers.Tokenizer.from_file(str(local))
    eos = ref.token_to_id("<|endoftext|>")
    prefix = f"web-{uuid.uuid4().hex[:8]}"
    s3.client.upload_file(str(local), s3.bucket, f"{prefix}/tokenizer.json")
    texts = [t for t in corpus(200, 13) if ref.encode(t).ids]
    for s in range(3):
        lines = "".join(json.dumps({"text": t}) + "\n" for t in texts[s::3])
        s3.client.put_object(Bucket=s3.bucket, Key=f"{prefix}/part-{s}.jsonl.zst",
                             Body=zstandard.ZstdCompressor().compress(lines.encode()))
    ds = dataio.jsonl_records(f"s3://{s3.bucket}/{prefix}/part-{{0..2}}.jsonl.zst", index_dir=tmp_path / "idx",
                              cache_dir=tmp_path / "cache")
    pipe = dataio.pipeline(dataio.slot("text").tokenize(tokenizer=f"s3://{s3.bucket}/{prefix}/tokenizer.json"),
                           dataio.pack("text", seq_len=64, batch_size=4, strategy="concat", window=32))
    got: Counter[int] = Counter()
    with pipe.bind(ds).run("numpy", seed=2) as loader:
        for b in loader:
            ids, doc = np.asarray(b["input_ids"]), np.asarray(b["document_ids"])
            got.update(int(t) for t in ids[doc >= 0])
    assert got == Counter(t for text in texts for t in [*ref.encode(text).ids, eos])


def test_csv_shards_in_the_store(s3: S3Server, tmp_path: Path) -> None:
    """csv_records over s3://: gzip shards listed by a glob, typed labels,
    every row once in an epoch, rows with quoted newlines intact."""
    import gzip

    prefix = "csv-shards"
    want = {}
    for s in range(3):
        lines = ["id,label,caption"]
        for i in range(7):
            n = s * 10 + i
            want[n] = f"row {n},\n\"quoted\""
            lines.append(f'{n},{n % 3},"row {n},\n""quoted"""')
        s3.client.put_object(Bucket=s3.bucket, Key=f"{prefix}/part-{s}.csv.gz",
                             Body=gzip.compress(("\n".join(lines) + "\n").encode()))
    ds = dataio.csv_records(f"s3://{s3.bucket}/{prefix}/part-*.csv.gz", columns={"id": int, "label": int},
                            index_dir=tmp_path / "idx", cache_dir=tmp_path / "cache")
    assert len(ds) == 21 and ds[8]["caption"] == want[11] and ds[8]["label"] == 2
    pipe = dataio.pipeline(dataio.slot("id").decode_bytes(), dataio.slot("caption", stack="never").decode_bytes(),
                           dataio.batch(5))
    with pipe.bind(ds).run("numpy", seed=1) as loader:
        got = {int(i): bytes(c).decode() for b in loader for i, c in zip(b["id"], b["caption"])}
    assert got == want
