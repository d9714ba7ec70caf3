"""jsonl_records: JSON Lines shards (plain, gzip, zstd) as an indexed,
sized record source with the shard sources' guarantees; bad lines named by
shard and line."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zstandard

import dataio


def write(path: Path, docs: list[dict[str, Any]], *, blank_every: int = 0, crlf: bool = False) -> Path:
    nl = "\r\n" if crlf else "\n"
    lines = []
    for i, d in enumerate(docs):
        lines.append(json.dumps(d, ensure_ascii=False))
        if blank_every and i % blank_every == blank_every - 1:
            lines.append("   ")
    data = (nl.join(lines) + nl).encode()
    if path.suffix == ".gz":
        data = gzip.compress(data)
    elif path.suffix == ".zst":
        data = zstandard.ZstdCompressor().compress(data)
    path.write_bytes(data)
    return path


def shards(tmp_path: Path, n: int = 4, per: int = 9, suffix: str = ".jsonl") -> list[dict[str, Any]]:
    docs = []
    for s in range(n):
        mine = [{"text": f"doc {s}-{i} 😀 數據", "i": s * 100 + i, "ok": i % 2 == 0, "x": i / 4,
                 "meta": {"id": s * 100 + i}} for i in range(per)]
        write(tmp_path / f"part-{s:02d}{suffix}", mine, blank_every=4, crlf=s % 2 == 1)
        docs += mine
    return docs


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz", ".jsonl.zst"])
def test_every_line_is_a_record_with_its_fields(tmp_path: Path, suffix: str) -> None:
    docs = shards(tmp_path, suffix=suffix)
    ds = dataio.jsonl_records(str(tmp_path / f"part-{{00..03}}{suffix}"), index_dir=tmp_path / "idx")
    assert len(ds) == len(docs) == 36
    got = [ds[i] for i in range(len(ds))]
    for d, r in zip(docs, got):
        assert r["text"] == d["text"] and r["i"] == d["i"] and r["ok"] is d["ok"] and r["x"] == d["x"]
        assert json.loads(r["meta"]) == d["meta"]
    # Keys name the shard and the line (blank lines count as lines).
    assert got[0]["key"].endswith("part-00" + suffix + "#L1") and got[4]["key"].endswith("#L6"), got[4]["key"]


def test_a_pipeline_epoch_is_every_line_once_and_resumes_exactly(tmp_path: Path) -> None:
    docs = shards(tmp_path, n=5, per=11)
    ds = dataio.jsonl_records(str(tmp_path / "part-*.jsonl"), shuffle_window=8, index_dir=tmp_path / "idx")
    pipe = dataio.pipeline(dataio.slot("meta", stack="never").decode_bytes(), dataio.batch(4))

    def ids(batches: Any) -> list[int]:
        return [json.loads(bytes(np.asarray(x)))["id"] for b in batches for x in b["meta"]]

    with pipe.bind(ds).run("numpy", seed=3) as loader:
        whole = ids(loader)
    assert sorted(whole) == sorted(d["i"] for d in docs) and whole != sorted(whole), "shuffled, each once"
    with pipe.bind(ds).run("numpy", seed=3) as loader:
        it = iter(loader)
        head = [next(it), next(it), next(it)]
        state = json.loads(json.dumps(loader.state_dict()))
    with pipe.bind(ds).run("numpy", seed=3) as loader:
        loader.load_state_dict(state)
        assert ids(head) + ids(loader) == whole
    # Two ranks: disjoint, together every line.
    parts = []
    for rank in range(2):
        with pipe.bind(ds).run("numpy", seed=3, shard={"id": rank, "of": 2}) as loader:
            parts.append(ids(loader))
    assert not set(parts[0]) & set(parts[1]) and sorted(parts[0] + parts[1]) == sorted(whole)


def test_a_bad_line_names_its_shard_and_line_and_skip_goes_on(tmp_path: Path) -> None:
    good = [{"meta": {"id": i}} for i in range(6)]
    write(tmp_path / "a.jsonl", good)
    bad = tmp_path / "b.jsonl"
    bad.write_text('{"meta": {"id": 10}}\n{"meta": {"id": 11}\n[1, 2, 3]\n{"meta": {"id": 13}}\n')
    ds = dataio.jsonl_records([str(tmp_path / "a.jsonl"), str(bad)], index_dir=tmp_path / "idx")
    assert len(ds) == 10
    pipe = dataio.pipeline(dataio.slot("meta", stack="never").decode_bytes(), dataio.batch(2))
    with pytest.raises(dataio.errors.RowError) as e:
        with pipe.bind(ds).run("numpy") as loader:
            list(loader)
    assert e.value.key.endswith("b.jsonl#L2") and e.value.uri == str(bad), e.value
    assert "corrupt jsonl: line 2: not JSON" in str(e.value), e.value
    with pipe.bind(ds).run("numpy", on_failure="skip") as loader:
        got = sorted(json.loads(bytes(np.asarray(x)))["id"] for b in loader for x in b["meta"])
        failed = loader.stats()["records_failed"]
    assert got == [0, 1, 2, 3, 4, 5, 10, 13] and failed == 2
    with pytest.raises(dataio.errors.DataioError, match="line 3: a JSON array where an object belongs"):
        ds[8]


def test_shards_written_by_datasets_to_json(tmp_path: Path) -> None:
    import datasets

    rows = {"text": [f"row {i} café 😀" for i in range(57)], "id": list(range(57)), "score": [i / 7 for i in range(57)]}
    for part in range(3):
        sub = {k: v[part::3] for k, v in rows.items()}
        datasets.Dataset.from_dict(sub).to_json(str(tmp_path / f"train-{part}.jsonl"))
    ds = dataio.jsonl_records(str(tmp_path / "train-*.jsonl"), index_dir=tmp_path / "idx")
    assert len(ds) == 57
    got = {r["id"]: r for r in (ds[i] for i in range(len(ds)))}
    assert sorted(got) == list(range(57))
    assert all(got[i]["text"] == rows["text"][i] and got[i]["score"] == pytest.approx(rows["score"][i]) for i in got)
