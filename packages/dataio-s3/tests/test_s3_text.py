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
