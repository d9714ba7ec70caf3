"""One language for each rule: dataio.uri, the safetensors header and the
shard ranges answer what the native layer answers, because they ask it."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pytest

import dataio
from dataio import _native, uri
from dataio.errors import CorruptDataError, InvalidArgumentError, InvalidURIError
from dataio.formats.safetensors import SAFETENSORS_DTYPES, SafetensorsLayout

# (uri, scheme, local path) or (uri, the error class) for what IO refuses.
URI_CASES: list[tuple[str, object, object]] = [
    ("1x://a", InvalidURIError, None),
    ("://a", InvalidURIError, None),
    ("a_b://c", InvalidURIError, None),
    ("file://rel", InvalidURIError, None),
    ("", InvalidURIError, None),
    ("file:///abs/x", "file", "/abs/x"),
    ("file://localhost/abs/x", "file", "/abs/x"),
    ("FILE:///abs/x", "file", "/abs/x"),
    ("s3://b/k", "s3", None),
    ("S3://b/k", "s3", None),
    ("rel/x", None, "rel/x"),
    ("/abs/x", None, "/abs/x"),
]


@pytest.mark.parametrize("u, expected_scheme, expected_path", URI_CASES)
def test_uri_helpers_agree_with_the_io_layer(u: str, expected_scheme: object, expected_path: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if isinstance(expected_scheme, type):
        for fn in (uri.scheme, uri.local_path, _native.exists, _native.head):
            with pytest.raises(expected_scheme):
                fn(u)
        return
    assert uri.scheme(u) == expected_scheme
    assert uri.local_path(u) == expected_path
    if expected_path is None:
        # A backend's URI: the IO layer asks the scheme's backend (none registered here).
        monkeypatch.setattr(dataio._plugins.host, "scheme_package", lambda s: None, raising=False)
        unknown = u.replace(u.split("://")[0], "nosuchscheme", 1)
        assert uri.local_path(unknown) is None
        with pytest.raises(dataio.errors.UnsupportedSchemeError, match="nosuchscheme"):
            _native.exists(unknown)
        return
    # A local path: the IO layer reads the same file uri.local_path names.
    monkeypatch.chdir(tmp_path)
    local = Path(tmp_path / expected_path.lstrip("/")) if expected_path.startswith("/") else tmp_path / expected_path
    probe = u.replace("/abs/x", f"{tmp_path}/abs/x") if expected_path.startswith("/") else u
    assert not _native.exists(probe)
    local.parent.mkdir(parents=True, exist_ok=True)
    local.write_bytes(b"hello")
    assert _native.exists(probe)
    assert Path(uri.local_path(probe)).resolve() == local.resolve()
    assert _native.head(probe).size == 5


def test_join_keeps_the_platform_rule_for_paths_and_one_slash_for_uris() -> None:
    assert uri.join("a/b", "c") == os.path.join("a/b", "c")
    assert uri.join("s3://b/k/", "c") == "s3://b/k/c"
    assert uri.join("file:///x", "c") == "file:///x/c"
    with pytest.raises(InvalidURIError):
        uri.join("1x://a", "c")


def test_safetensors_dtypes_are_the_crates_names_of_the_engines_dtypes() -> None:
    table = _native.safetensors_dtypes()
    assert len(table) == len(json.loads(_native.op_table())["dtypes"]) == len(SAFETENSORS_DTYPES)
    for name, size, engine in table:
        d = SAFETENSORS_DTYPES[name]
        assert (d.itemsize, d.torch_name) == (size, engine)


def _file(header: dict, data: bytes) -> bytes:
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + data


@pytest.mark.parametrize(
    "header, data, message",
    [
        ({"a": {"dtype": "F4", "shape": [2], "data_offsets": [0, 1]}}, b"\0", "unknown dtype 'F4'"),
        ({"a": {"dtype": "U8", "shape": [2], "data_offsets": [1, 3]}}, b"\0" * 3, "a gap of 1 bytes before tensor 'a'"),
        ({"a": {"dtype": "U8", "shape": [-1], "data_offsets": [0, 1]}}, b"\0", "shape must be a list of non-negative integers"),
        ({"a": {"dtype": "U8", "shape": [1], "data_offsets": [0]}}, b"\0", "data_offsets must be"),
        ({"__metadata__": {"k": 1}}, b"", "__metadata__ must map strings to strings"),
        ({"a": [1]}, b"", "entry is not an object"),
    ],
)
def test_the_crate_refuses_and_the_message_names_the_tensor(header: dict, data: bytes, message: str) -> None:
    raw = _file(header, data)
    with pytest.raises(CorruptDataError, match=message) as info:
        SafetensorsLayout.from_header(raw, len(raw), "mem://x.safetensors")
    assert "mem://x.safetensors" in str(info.value)


def test_a_valid_header_keeps_its_order_and_metadata() -> None:
    header = {"z": {"dtype": "U8", "shape": [1], "data_offsets": [2, 3]}, "__metadata__": {"format": "pt"}, "a": {"dtype": "BF16", "shape": [1], "data_offsets": [0, 2]}}
    raw = _file(header, b"\0" * 3)
    layout = SafetensorsLayout.from_header(raw, len(raw), "x")
    assert list(layout.tensors) == ["z", "a"] and dict(layout.metadata) == {"format": "pt"}
    assert layout.tensors["a"].dtype is SAFETENSORS_DTYPES["BF16"] and layout.data_offset == len(raw) - 3


@pytest.mark.parametrize("id_, of", [(0, 0), (0, -1), (4, 4), (-1, 2), (2**70, 3)])
def test_the_shard_range_rule_is_the_engines(id_: int, of: int) -> None:
    with pytest.raises(InvalidArgumentError, match=">= 1" if of < 1 else f"id {id_} is out of range"):
        _native.shard_check(id_, of)
    with pytest.raises(InvalidArgumentError):
        dataio.pipeline(dataio.slot("x").decode_bytes(), dataio.batch(1)).bind([{"x": b"1"}]).run("numpy", shard={"id": id_, "of": of})


@pytest.mark.parametrize("n", [0, 1, 7, 10])
@pytest.mark.parametrize("pad", [False, True])
def test_len_counts_this_ranks_records_the_way_the_engine_does(n: int, pad: bool) -> None:
    pipe = dataio.pipeline(dataio.slot("x").decode_bytes(), dataio.batch(2))
    for rank in range(3):
        loader = pipe.bind([{"x": b"1"}] * n).run("numpy", shard={"id": rank, "of": 3, "pad": pad})
        try:
            expected = -(-n // 3) if pad else max(0, -(-(n - rank) // 3))
            assert _native.shard_count(rank, 3, pad, n) == expected
            assert len(loader) == -(-expected // 2)
        finally:
            loader.close()
