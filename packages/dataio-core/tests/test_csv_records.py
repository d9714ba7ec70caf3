"""csv_records: CSV shards (plain, gzip, other delimiters) as an indexed,
sized record source with the shard sources' guarantees; typed columns;
bad rows named by shard, line and column."""

from __future__ import annotations

import csv
import gzip
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dataio
from dataio.errors import CorruptDataError, InvalidArgumentError, RowError


def write(path: Path, header: list[str], rows: list[list[Any]], *, delimiter: str = ",", crlf: bool = False) -> Path:
    buf = io.StringIO()
    w = csv.writer(buf, delimiter=delimiter, lineterminator="\r\n" if crlf else "\n")
    w.writerow(header)
    w.writerows(rows)
    data = buf.getvalue().encode()
    path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)
    return path


def shards(tmp_path: Path, n: int = 4, per: int = 9, suffix: str = ".csv") -> list[list[Any]]:
    rows = []
    for s in range(n):
        mine = [[f"img/{s}-{i}.jpg", s * 100 + i, i / 4, "yes" if i % 2 else "no",
                 f"a caption, with \"quotes\"\nand a newline {s}-{i} 數據"] for i in range(per)]
        write(tmp_path / f"part-{s:02d}{suffix}", ["path", "label", "score", "ok", "caption"], mine, crlf=s % 2 == 1)
        rows += mine
    return rows


@pytest.mark.parametrize("suffix", [".csv", ".csv.gz"])
def test_every_row_is_a_record_with_typed_columns(tmp_path: Path, suffix: str) -> None:
    rows = shards(tmp_path, suffix=suffix)
    ds = dataio.csv_records(str(tmp_path / f"part-{{00..03}}{suffix}"), columns={"label": int, "score": float, "ok": "bool"},
                            index_dir=tmp_path / "idx")
    assert len(ds) == len(rows) == 36
    for want, got in zip(rows, ds):
        assert got["path"] == want[0] and got["label"] == want[1] and got["score"] == want[2]
        assert got["ok"] is (want[3] == "yes") and got["caption"] == want[4]
    # Untyped, every field is its text; keys name the shard and the line (a quoted newline spans two).
    plain = dataio.csv_records(str(tmp_path / f"part-00{suffix}"), index_dir=tmp_path / "idx")
    assert plain[1]["label"] == "1" and plain[1]["score"] == "0.25"
    assert plain[0]["key"].endswith(f"part-00{suffix}#L2") and plain[1]["key"].endswith("#L4"), plain[1]["key"]


def test_a_pipeline_epoch_is_every_row_once_and_resumes_exactly(tmp_path: Path) -> None:
    rows = shards(tmp_path, n=5, per=11)
    ds = dataio.csv_records(str(tmp_path / "part-*.csv"), columns={"label": int}, shuffle_window=8,
                            index_dir=tmp_path / "idx")
    pipe = dataio.pipeline(dataio.slot("label").decode_bytes(), dataio.batch(4))

    def labels(batches: Any) -> list[int]:
        return [int(np.asarray(x)) for b in batches for x in b["label"]]

    with pipe.bind(ds).run("numpy", seed=3) as loader:
        whole = labels(loader)
    assert sorted(whole) == sorted(r[1] for r in rows) and whole != sorted(whole), "shuffled, each once"
    with pipe.bind(ds).run("numpy", seed=3) as loader:
        it = iter(loader)
        head = [next(it), next(it), next(it)]
        state = json.loads(json.dumps(loader.state_dict()))
    with pipe.bind(ds).run("numpy", seed=3) as loader:
        loader.load_state_dict(state)
        assert labels(head) + labels(loader) == whole
    parts = []
    for rank in range(2):
        with pipe.bind(ds).run("numpy", seed=3, shard={"id": rank, "of": 2}) as loader:
            parts.append(labels(loader))
    assert not set(parts[0]) & set(parts[1]) and sorted(parts[0] + parts[1]) == sorted(whole)


def test_paths_in_a_column_feed_a_decoder(tmp_path: Path) -> None:
    for i in range(3):
        (tmp_path / f"{i}.bin").write_bytes(bytes([i]) * (i + 1))
    write(tmp_path / "files.tsv", ["file", "label"], [[str(tmp_path / f"{i}.bin"), i] for i in range(3)], delimiter="\t")
    ds = dataio.csv_records(str(tmp_path / "files.tsv"), delimiter="\t", columns={"label": int}, index_dir=tmp_path / "idx")
    pipe = dataio.pipeline(dataio.slot("file", stack="never").decode_bytes(), dataio.slot("label").decode_bytes(),
                           dataio.batch(3))
    with pipe.bind(ds).run("numpy") as loader:
        b = next(iter(loader))
    got = {int(lab): bytes(np.asarray(f)) for f, lab in zip(b["file"], b["label"])}
    assert got == {i: bytes([i]) * (i + 1) for i in range(3)}


def test_a_bad_row_names_its_shard_line_and_column_and_skip_goes_on(tmp_path: Path) -> None:
    write(tmp_path / "a.csv", ["label", "x"], [[i, "ok"] for i in range(6)])
    bad = tmp_path / "b.csv"
    bad.write_text("label,x\n10,ok\ncat,ok\n12\n13,ok\n,empty\n")
    ds = dataio.csv_records([str(tmp_path / "a.csv"), str(bad)], columns={"label": int}, index_dir=tmp_path / "idx")
    assert len(ds) == 11
    pipe = dataio.pipeline(dataio.slot("x", stack="never").decode_bytes(), dataio.slot("label", optional=True).decode_bytes(),
                           dataio.batch(2))
    with pytest.raises(RowError) as e:
        with pipe.bind(ds).run("numpy") as loader:
            list(loader)
    assert e.value.key.endswith("b.csv#L3") and e.value.uri == str(bad), e.value
    assert 'line 3, column "label": "cat" is not an integer' in str(e.value), e.value
    with pipe.bind(ds).run("numpy", on_failure="skip") as loader:
        got = sorted(bytes(np.asarray(x)).decode() for b in loader for x in b["x"])
        failed = loader.stats()["records_failed"]
    assert failed == 2 and got.count("ok") == 8 and "empty" in got
    with pytest.raises(CorruptDataError, match="line 4: 1 fields where the header has 2 columns"):
        ds[8]
    assert ds[10]["label"] is None


def test_bad_arguments_and_headers(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="column 'y'"):
        dataio.csv_records(str(tmp_path / "x.csv"), columns={"y": list})
    with pytest.raises(InvalidArgumentError, match="delimiter"):
        dataio.csv_records(str(tmp_path / "x.csv"), delimiter=";;")
    dup = tmp_path / "dup.csv"
    dup.write_text("a,b,a\n1,2,3\n")
    with pytest.raises(CorruptDataError, match="names column \"a\" twice"):
        dataio.csv_records(str(dup), index_dir=tmp_path / "idx")


def test_crlf_rows_keep_their_line_numbers(tmp_path: Path) -> None:
    # Python's csv.writer ends rows with CRLF: keys and errors name the same lines as with LF.
    for name, end in (("lf.csv", "\n"), ("crlf.csv", "\r\n")):
        (tmp_path / name).write_bytes(end.join(["word,label", "x,1", "y,2", "z,w"]).encode() + end.encode())
        ds = dataio.csv_records(str(tmp_path / name), columns={"label": int}, index_dir=tmp_path / "idx")
        assert [ds[i]["key"].rsplit("#", 1)[1] for i in range(2)] == ["L2", "L3"], name
        with pytest.raises(CorruptDataError, match="line 4"):
            ds[2]
