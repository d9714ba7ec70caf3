"""dataio.write_shards: a bound pipeline's samples written as WebDataset,
parquet and TFRecord shards, read back by the producers' own libraries
(webdataset, wids, pyarrow, datasets, tfrecord) and by dataio; resumed after
a kill -9 into the same bytes as an uninterrupted run."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

import dataio
from dataio.errors import InvalidArgumentError

N = 40
BROKEN = {5, 17, 30}


def _jpeg(i: int) -> bytes:
    rng = np.random.default_rng(i)
    h, w = 60 + i % 7 * 10, 80 + i % 5 * 10
    y, x = np.mgrid[0:h, 0:w]
    px = np.stack([x * 3 + i, y * 3, (x + y) + 2 * i], -1) % 256 + rng.integers(0, 8, (h, w, 3))
    buf = io.BytesIO()
    Image.fromarray(px.clip(0, 255).astype(np.uint8)).save(buf, format="JPEG", quality=92)
    return buf.getvalue()


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("images")
    for i in range(N):
        (root / f"{i:04d}.jpg").write_bytes(b"not a jpeg" if i in BROKEN else _jpeg(i))
    return root


def _records(folder: Path) -> list[dict[str, object]]:
    return [{"image": str(folder / f"{i:04d}.jpg"), "cls": i % 4, "txt": f"photo {i}", "key": f"s{i:04d}"} for i in range(N)]


def _pipe(fmt: str = "png") -> dataio.Pipeline:
    return dataio.pipeline(
        dataio.slot("image").decode_image().resize_short(32).encode_image(fmt),
        dataio.slot("cls").decode_bytes(),
        dataio.slot("txt").decode_bytes(),
        dataio.batch(4),
    )


SURVIVORS = [f"s{i:04d}" for i in range(N) if i not in BROKEN]


def _expected_pixels(folder: Path) -> dict[str, np.ndarray]:
    pipe = dataio.pipeline(dataio.slot("image").decode_image().resize_short(32), dataio.batch(4))
    out = {}
    for b in pipe.bind(_records(folder)).run("numpy", on_failure="skip"):
        out.update(zip(b.keys, b["image"]))
    return out


def test_webdataset_shards_read_back_by_webdataset_wids_and_dataio(folder: Path, tmp_path: Path) -> None:
    import wids
    from webdataset import WebDataset

    report = dataio.write_shards(_pipe().bind(_records(folder)), str(tmp_path / "train-{000000..}.tar"), samples_per_shard=8)
    assert report.samples == len(SURVIVORS) and report.failed == {"DecodeError": len(BROKEN)}
    assert [Path(s).name for s in report.shards] == [f"train-{i:06d}.tar" for i in range(5)]
    assert sorted(e.key for e in report.errors) == [f"s{i:04d}" for i in sorted(BROKEN)]
    assert all(e.slot == "image" and e.uri and e.uri.endswith(".jpg") for e in report.errors)
    pixels = _expected_pixels(folder)

    # webdataset: every surviving sample once, members named by slot.
    seen = []
    for s in WebDataset([str(p) for p in report.shards], shardshuffle=False):
        seen.append(s["__key__"])
        np.testing.assert_array_equal(np.asarray(Image.open(io.BytesIO(s["png"]))), pixels[s["__key__"]])
        i = int(s["__key__"][1:])
        assert (s["cls"], s["txt"]) == (str(i % 4).encode(), f"photo {i}".encode())
    assert seen == SURVIVORS

    # wids through the written index.
    index = json.loads(Path(report.index or "").read_text())
    assert index["__kind__"] == "wids-shard-index-v1"
    assert [e["nsamples"] for e in index["shardlist"]] == [8, 8, 8, 8, 5]
    ds = wids.ShardListDataset(report.index)
    assert len(ds) == len(SURVIVORS)
    assert [ds[i]["__key__"] for i in range(len(ds))] == SURVIVORS

    # dataio reads them back through the index, opening no shard to count.
    back = dataio.pipeline(dataio.slot("png").decode_image(), dataio.slot("cls").decode_bytes(), dataio.batch(8))
    got = {}
    for b in back.bind(dataio.tar_records(report.index)).run("numpy"):
        got.update({k: (px, int(bytes(c))) for k, px, c in zip(b.keys, b["png"], b["cls"])})
    assert sorted(got) == SURVIVORS
    for k, (px, c) in got.items():
        np.testing.assert_array_equal(px, pixels[k])
        assert c == int(k[1:]) % 4


def test_parquet_and_tfrecord_read_by_their_libraries(folder: Path, tmp_path: Path) -> None:
    import datasets
    import pyarrow.parquet as pq
    from tfrecord.reader import tfrecord_loader

    rep = dataio.write_shards(_pipe("jpeg").bind(_records(folder)), str(tmp_path / "p-{00..}.parquet"), samples_per_shard=16)
    assert rep.index is None and len(rep.shards) == 3
    table = pq.read_table(rep.shards[0])
    assert table.column_names == ["key", "jpg", "cls", "txt"]
    ds = datasets.load_dataset("parquet", data_files=rep.shards, split="train")
    assert ds["key"] == SURVIVORS and ds["cls"] == [int(k[1:]) % 4 for k in SURVIVORS]
    assert ds["txt"][0] == "photo 0"
    assert Image.open(io.BytesIO(ds[0]["jpg"])).format == "JPEG"

    rep = dataio.write_shards(_pipe("webp").bind(_records(folder)), str(tmp_path / "t-{00..}.tfrecord"), samples_per_shard=16)
    keys, pixels = [], _expected_pixels(folder)
    for shard in rep.shards:
        for ex in tfrecord_loader(shard, None, {"key": "byte", "webp": "byte", "cls": "int", "txt": "byte"}):
            key = bytes(ex["key"]).decode()
            keys.append(key)
            assert int(ex["cls"][0]) == int(key[1:]) % 4
            np.testing.assert_array_equal(np.asarray(Image.open(io.BytesIO(bytes(ex["webp"])))), pixels[key])
    assert keys == SURVIVORS


def test_a_seed_shuffles_deterministically_and_max_shard_bytes_splits(folder: Path, tmp_path: Path) -> None:
    a = dataio.write_shards(_pipe().bind(_records(folder)), str(tmp_path / "a/x-{0..}.tar"), samples_per_shard=10, seed=7)
    b = dataio.write_shards(_pipe().bind(_records(folder)), str(tmp_path / "b/x-{0..}.tar"), samples_per_shard=10, seed=7)
    assert [Path(p).read_bytes() for p in a.shards] == [Path(p).read_bytes() for p in b.shards]
    from webdataset import WebDataset

    keys = [s["__key__"] for s in WebDataset(a.shards, shardshuffle=False)]
    assert sorted(keys) == SURVIVORS and keys != SURVIVORS

    cap = 8 * 1024
    c = dataio.write_shards(_pipe().bind(_records(folder)), str(tmp_path / "c/x-{000..}.tar"), samples_per_shard=100, max_shard_bytes=cap)
    assert len(c.shards) > 2
    # Each shard but the last stays under the cap (a lone sample over it would still be written).
    sizes = [os.path.getsize(p) for p in c.shards]
    counts = [len(list(WebDataset([p], shardshuffle=False))) for p in c.shards]
    assert sum(counts) == len(SURVIVORS) and all(s <= cap + 10240 for s in sizes), (sizes, counts)


def test_arguments_and_changed_runs_are_refused(folder: Path, tmp_path: Path) -> None:
    bound = _pipe().bind(_records(folder))
    with pytest.raises(InvalidArgumentError, match="one brace range"):
        dataio.write_shards(bound, str(tmp_path / "x.tar"))
    with pytest.raises(InvalidArgumentError, match="not the extension"):
        dataio.write_shards(bound, str(tmp_path / "x-{0..}.tar"), format="parquet")
    with pytest.raises(InvalidArgumentError, match="ends at 1"):
        dataio.write_shards(bound, str(tmp_path / "y-{0..1}.tar"), samples_per_shard=5)
    dest = str(tmp_path / "z-{00..}.tar")
    first = dataio.write_shards(bound, dest, samples_per_shard=10)
    with pytest.raises(InvalidArgumentError, match="samples_per_shard"):
        dataio.write_shards(bound, dest, samples_per_shard=12)
    again = dataio.write_shards(bound, dest, samples_per_shard=12, resume=False)
    assert len(again.shards) == 4 and again.kept == 0
    # A complete run rerun writes nothing and reports what stands.
    done = dataio.write_shards(bound, dest, samples_per_shard=12)
    assert (done.kept, done.samples, done.shards) == (4, 0, again.shards)
    assert first.failed == done.failed == {"DecodeError": 3}


_WRITER = textwrap.dedent(
    """
    import sys, time
    import dataio
    sys.path.insert(0, {tests!r})
    from test_write_shards import _pipe, _records
    from pathlib import Path

    def slow(r):
        time.sleep(0.02)
        return r

    records = _records(Path({folder!r})) * 6
    records = [dict(r, key=f"{{r['key']}}-{{i}}") for i, r in enumerate(records)]
    pipe = _pipe()
    pipe = dataio.pipeline(dataio.map(slow), *pipe.slots, dataio.batch(4))
    r = dataio.write_shards(pipe.bind(records), {dest!r}, samples_per_shard=10, seed=3)
    print(r)
    """
)


def _run_writer(folder: Path, dest: str) -> subprocess.Popen[bytes]:
    code = _WRITER.format(tests=str(Path(__file__).parent), folder=str(folder), dest=dest)
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_kill_9_mid_write_then_rerun_gives_the_uninterrupted_shards(folder: Path, tmp_path: Path) -> None:
    ref = _run_writer(folder, str(tmp_path / "ref/w-{0000..}.tar"))
    out, err = ref.communicate(timeout=300)
    assert ref.returncode == 0, err.decode()[-2000:]
    want = {p.name: p.read_bytes() for p in (tmp_path / "ref").glob("w-*.tar")}
    assert len(want) == 23  # 240 records, 18 broken: 222 samples

    dest = tmp_path / "run"
    proc = _run_writer(folder, str(dest / "w-{0000..}.tar"))
    manifest = dest / "w.tar.manifest.json"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if manifest.exists() and len(json.loads(manifest.read_text() or "{}").get("shards", [])) >= 5:
            break
        time.sleep(0.02)
    assert proc.poll() is None, "the writer finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    # Whatever stands under a shard's final name is that shard, whole.
    standing = {p.name: p.read_bytes() for p in dest.glob("w-*.tar")}
    assert 5 <= len(standing) < len(want)
    assert all(want[name] == data for name, data in standing.items())
    assert not (dest / "shardindex.json").exists()

    rerun = _run_writer(folder, str(dest / "w-{0000..}.tar"))
    out, err = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, err.decode()[-2000:]
    assert "kept from an earlier run" in out.decode()
    got = {p.name: p.read_bytes() for p in dest.glob("w-*.tar")}
    assert got == want
    assert (dest / "shardindex.json").read_bytes() == (tmp_path / "ref/shardindex.json").read_bytes()


def test_member_headers_are_tarfiles_own_bytes() -> None:
    import tarfile

    from dataio.shard_writer import _member_header

    names = ["c03/000123.jpg", "a" * 100, "x.cls", "é.txt", "a" * 101, "k/" + "b" * 90 + ".jpg"]
    for name, size in zip(names, [12345, 5, 0, 3, 7, 99_999_999]):
        info = tarfile.TarInfo(name)
        info.size, info.mtime, info.mode = size, 0, 0o644
        assert _member_header(name, size) == info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape"), name


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.binary(max_size=300), st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.sampled_from(
        ["__kind__", "fingerprint", "shards", "name", "samples", "end", "bytes", "end_keys", "failed"]), c, max_size=6),
    max_leaves=20).map(lambda d: json.dumps(d).encode())))
def test_a_damaged_manifest_is_a_typed_error_never_a_crash(data: bytes) -> None:
    from dataio.errors import CorruptDataError
    from dataio.shard_writer import parse_manifest

    try:
        doc = parse_manifest("out/x.tar.manifest.json", data)
    except CorruptDataError as e:
        assert "x.tar.manifest.json" in str(e) and "resume=False" in str(e)
    else:
        assert isinstance(doc["shards"], list)


def test_a_damaged_manifest_stops_a_resume_naming_it(folder: Path, tmp_path: Path) -> None:
    from dataio.errors import CorruptDataError

    dest = str(tmp_path / "m-{0..}.tar")
    dataio.write_shards(_pipe().bind(_records(folder)), dest, samples_per_shard=10)
    (tmp_path / "m.tar.manifest.json").write_text('{"__kind__": "dataio-write-manifest-v1", "fingerprint": {}, "shards": [{"name": 3}]}')
    with pytest.raises(CorruptDataError, match="entry 0 of the write manifest"):
        dataio.write_shards(_pipe().bind(_records(folder)), dest, samples_per_shard=10)
    again = dataio.write_shards(_pipe().bind(_records(folder)), dest, samples_per_shard=10, resume=False)
    assert again.samples == len(SURVIVORS)


def test_convert_an_image_folder_with_class_folders(tmp_path: Path) -> None:
    from webdataset import WebDataset

    src = tmp_path / "photos"
    for c, cls in enumerate(["cat", "dog", "eel"]):
        (src / cls).mkdir(parents=True)
        for i in range(4):
            (src / cls / f"{cls}.{i}.jpg").write_bytes(_jpeg(10 * c + i))
    (src / "dog" / "notes.txt").write_text("not an image: not listed")
    dest = tmp_path / "out" / "f-{00..}.tar"
    done = subprocess.run([sys.executable, "-m", "dataio", "convert", str(src), str(dest), "--resize-short", "24",
                           "--samples-per-shard", "5", "--quiet"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "wrote 12 samples in 3 shards" in done.stdout, done.stdout
    samples = list(WebDataset(sorted(str(p) for p in (tmp_path / "out").glob("f-*.tar")), shardshuffle=False))
    assert [s["__key__"] for s in samples] == [f"{c}/{c}_{i}" for c in ("cat", "dog", "eel") for i in range(4)]
    assert [int(s["cls"]) for s in samples] == [0] * 4 + [1] * 4 + [2] * 4
    assert all(min(Image.open(io.BytesIO(s["jpg"])).size) == 24 for s in samples)
