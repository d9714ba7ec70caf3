"""A string field under ``decode_bytes()``: the value itself unless it names
something to read (a URI with a scheme, or a path with a directory in it)."""

from __future__ import annotations

from pathlib import Path

import pytest

import dataio
from dataio import errors

PIPE = dataio.pipeline(dataio.slot("label").decode_bytes(), dataio.batch(4))


def _rows(records: list[dict], **run: object) -> list[bytes]:
    out: list[bytes] = []
    for b in PIPE.bind(records).run("numpy", **run):
        out.extend(bytes(x) for x in b["label"])
    return out


def test_labels_and_text_are_their_own_bytes() -> None:
    values = ["0", "1", "cat", "a cat on a mat", "ünïcode", "data.bin", "n01440764", "1.5e3", ""]
    records = [{"key": f"r{i}", "label": v} for i, v in enumerate(values)]
    assert _rows(records) == [v.encode() for v in values]


def test_paths_and_uris_are_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.bin").write_bytes(b"AAA")
    (tmp_path / "b.bin").write_bytes(b"BBB")
    monkeypatch.chdir(tmp_path)
    records = [
        {"key": "abs", "label": str(tmp_path / "b.bin")},
        {"key": "rel", "label": "sub/a.bin"},
        {"key": "dot", "label": "./b.bin"},
        {"key": "file", "label": (tmp_path / "sub" / "a.bin").as_uri()},
    ]
    assert _rows(records) == [b"BBB", b"AAA", b"BBB", b"AAA"]


def test_a_missing_path_names_the_field_read_as_a_uri(tmp_path: Path) -> None:
    with pytest.raises(errors.RowError) as info:
        _rows([{"key": "k0", "label": str(tmp_path / "nope.bin")}])
    msg = str(info.value)
    assert 'field "label" was read as a URI' in msg and "nope.bin" in msg, msg
    assert info.value.slot == "label" and info.value.cause_kind == "NotFoundError"


def test_skip_never_hands_over_a_batch_of_nothing(tmp_path: Path) -> None:
    # Every row missing: nothing is delivered (no empty batches), and the errors are kept.
    records = [{"key": f"k{i}", "label": str(tmp_path / f"missing{i}.bin")} for i in range(8)]
    with pytest.warns(RuntimeWarning, match="every row failed"):
        assert _rows(records, on_failure="skip") == []
