"""Datasets in shards: WebDataset tar (written by webdataset's TarWriter),
TFRecord (ours, read back by the `tfrecord` package) and parquet written by
Hugging Face `datasets`, as sized sources that shuffle, shard by rank,
resume and cache like lists of files."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

import dataio

wds = pytest.importorskip("webdataset", reason="webdataset is in the test group")


def jpeg(value: int, size: tuple[int, int] = (24, 32)) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(np.full((*size, 3), value % 251, np.uint8)).save(buf, "JPEG", quality=95)
    return buf.getvalue()


def write_shards(folder: Path, counts: list[int], *, gz: bool = False, corrupt: set[int] = frozenset()) -> list[str]:
    """WebDataset shards; sample n (storage order) has key s{shard}/{n:06d}
    and a JPEG whose every pixel is n % 251 (corrupt ones: garbage bytes)."""
    uris, n = [], 0
    for s, count in enumerate(counts):
        path = folder / f"train-{s:04d}.tar{'.gz' if gz else ''}"
        with wds.TarWriter(str(path), compress=gz) as w:
            for _ in range(count):
                data = b"\xff\xd8 not a jpeg" if n in corrupt else jpeg(n)
                w.write({"__key__": f"s{s:04d}/{n:06d}", "jpg": data, "cls": str(n).encode()})
                n += 1
        uris.append(str(path))
    return uris


PIPE = dataio.pipeline(
    dataio.slot("jpg").decode_image(mode="rgb"),
    dataio.slot("cls").decode_bytes(),
    dataio.batch(8),
)


def ids(batch: Any) -> list[int]:
    return [int(k.split("/")[1]) for k in batch.keys]


def epoch(records: Any, **run: Any) -> list[int]:
    with PIPE.bind(records).run("numpy", **run) as loader:
        out = []
        for b in loader:
            got = ids(b)
            # The bytes are the sample's own: pixel value and label match the key.
            assert b["jpg"][:, 0, 0, 0].tolist() == [n % 251 for n in got]
            out += got
        return out


@pytest.fixture
def cache_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "dataio-cache"
    monkeypatch.setenv("DATAIO_CACHE_DIR", str(root))
    return root


@pytest.fixture
def shards(tmp_path: Path, cache_env: Path) -> list[str]:
    return write_shards(tmp_path, [23, 17, 30, 0, 11, 19, 25, 15])


N = 23 + 17 + 30 + 11 + 19 + 25 + 15


def test_every_sample_once_shuffled_per_seed_and_epoch(shards: list[str]) -> None:
    recs = dataio.tar_records(shards, shuffle_window=32)
    assert len(recs) == N and recs.counts == [23, 17, 30, 0, 11, 19, 25, 15]
    storage = epoch(recs)
    assert storage == list(range(N))
    with PIPE.bind(recs).run("numpy", seed=5) as loader:
        e0 = [n for b in loader for n in ids(b)]
        e1 = [n for b in loader for n in ids(b)]
    assert sorted(e0) == sorted(e1) == storage
    assert e0 != storage and e1 != e0
    assert epoch(recs, seed=5) == e0  # deterministic in (seed, epoch)
    assert epoch(recs, seed=6) != e0
    # Batches mix shards, and the shuffle is not storage order in disguise.
    shard_of = np.repeat(np.arange(8), recs.counts)
    mixed = np.mean([len({shard_of[n] for n in e0[i : i + 8]}) for i in range(0, N, 8)])
    assert mixed >= 2.0, mixed
    rho = np.corrcoef(np.arange(N), np.array(e0))[0, 1]
    assert abs(rho) < 0.9, rho


def test_a_wider_spread_mixes_more_shards_and_keeps_every_sample_once(tmp_path: Path, cache_env: Path) -> None:
    # 24 shards of 20, windows of 40: one after another a window spans 2-3
    # shards; a spread of k reads about k windows' worth side by side.
    folder = tmp_path / "wide"
    folder.mkdir()
    urls = write_shards(folder, [20] * 24)
    shard_of = np.repeat(np.arange(24), 20)
    mixed = {}
    for spread in (1, 2, 4):
        recs = dataio.tar_records(urls, shuffle_window=40, shuffle_spread=spread)
        assert recs.shuffle_spread == spread
        order = epoch(recs, seed=3)
        assert sorted(order) == list(range(480)), spread
        assert epoch(recs, seed=3) == order  # deterministic
        windows = [order[i : i + 40] for i in range(0, 480, 40)]
        mixed[spread] = np.mean([len({shard_of[n] for n in w}) for w in windows])
    assert mixed[1] <= 3.0 and mixed[2] >= 1.8 * mixed[1] and mixed[4] >= 3.5 * mixed[1], mixed
    assert dataio.tar_records(urls).shuffle_spread == 2  # the default
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(dataio.errors.InvalidArgumentError, match="shuffle_spread"):
            dataio.tar_records(urls, shuffle_spread=bad)


def test_a_source_declaring_counts_and_window_only_still_orders_in_shards(tmp_path: Path) -> None:
    # A layout of two items (sources written before the spread) is read as spread 1.
    class Pairs:
        counts = [10, 10, 10]

        def __len__(self) -> int:
            return 30

        def __getitem__(self, i: int) -> dict[str, Any]:
            return {"key": str(i), "cls": str(i).encode()}

        def _dataio_layout(self) -> tuple[list[int], int]:
            return self.counts, 10

    pipe = dataio.pipeline(dataio.slot("cls").decode_bytes(), dataio.batch(5))
    with pipe.bind(Pairs()).run("numpy", seed=1) as loader:
        order = [int(k) for b in loader for k in b.keys]
    assert sorted(order) == list(range(30))
    windows = [set(order[i : i + 10]) for i in range(0, 30, 10)]
    # Spread 1 with windows of one shard: each window is one whole shard.
    assert all(w in ({*range(0, 10)}, {*range(10, 20)}, {*range(20, 30)}) for w in windows), windows


def test_a_checkpoint_resumes_only_over_the_same_shard_order(shards: list[str]) -> None:
    from dataio.errors import CheckpointError

    def state_after_two(recs: Any) -> dict[str, Any]:
        with PIPE.bind(recs).run("numpy", seed=4) as loader:
            it = iter(loader)
            next(it), next(it)
            return loader.state_dict()

    spread2 = dataio.tar_records(shards, shuffle_window=32)
    spread1 = dataio.tar_records(shards, shuffle_window=32, shuffle_spread=1)
    state = state_after_two(spread2)
    assert state["shard_order"] == [{"window": 32, "spread": 2}]
    with PIPE.bind(spread1).run("numpy", seed=4) as loader, pytest.raises(CheckpointError, match="spread"):
        loader.load_state_dict(state)
    # A state from before the spread (no shard_order) was a spread-1 order:
    # refused over spread 2, naming the way out, and exact over spread 1.
    old = {k: v for k, v in state_after_two(spread1).items() if k != "shard_order"}
    with PIPE.bind(spread2).run("numpy", seed=4) as loader, pytest.raises(CheckpointError, match="shuffle_spread=1"):
        loader.load_state_dict(old)
    whole = epoch(spread1, seed=4)
    with PIPE.bind(spread1).run("numpy", seed=4) as loader:
        loader.load_state_dict(old)
        rest = [n for b in loader for n in ids(b)]
    assert rest == whole[16:]


def test_names_lists_globs_and_brace_ranges_alike(tmp_path: Path, shards: list[str]) -> None:
    brace = dataio.tar_records(str(tmp_path / "train-{0000..0007}.tar"))
    glob = dataio.tar_records(str(tmp_path / "train-*.tar"))
    listed = dataio.tar_records(shards)
    assert brace.shards == glob.shards == listed.shards == shards
    assert dataio.formats.shards.expand_shards("x/{a,b}-{08..10}.tar") == ["x/a-08.tar", "x/a-09.tar", "x/a-10.tar", "x/b-08.tar", "x/b-09.tar", "x/b-10.tar"]
    with pytest.raises(FileNotFoundError, match="nothing-"):
        dataio.tar_records(str(tmp_path / "nothing-*.tar"))


def test_the_record_layout_is_webdatasets(shards: list[str]) -> None:
    recs = dataio.tar_records(shards)
    r = recs[24]
    assert r["key"] == r["__key__"] == "s0001/000024"
    assert r["__url__"] == shards[1]
    assert r["cls"] == b"24" and r["jpg"][:2] == b"\xff\xd8"
    # The same samples webdataset itself reads from the same shards.
    theirs = [(s["__key__"], s["cls"]) for s in wds.WebDataset(shards, shardshuffle=False)]
    assert theirs == [(recs[i]["key"], recs[i]["cls"]) for i in range(N)]


def test_ranks_are_disjoint_with_equal_batch_counts(shards: list[str]) -> None:
    recs = dataio.tar_records(shards, shuffle_window=16)
    got, counts = [], []
    for rank in range(3):
        with PIPE.bind(recs).run("numpy", seed=2, shard={"id": rank, "of": 3, "pad": True}) as loader:
            counts.append(len(loader))
            mine = [n for b in loader for n in ids(b)]
        got.append(mine)
    assert len(set(counts)) == 1 and len({len(g) for g in got}) == 1
    everything = [n for g in got for n in g]
    assert set(everything) == set(range(N))
    assert len(everything) - N < 3  # pad repeats at most world - 1 samples
    no_pad = [epoch(recs, seed=2, shard={"id": r, "of": 3}) for r in range(3)]
    assert sorted(n for g in no_pad for n in g) == list(range(N))


@pytest.mark.parametrize("cut", [1, 4, 9])
def test_resume_mid_epoch_equals_an_uninterrupted_epoch(shards: list[str], cut: int) -> None:
    recs = dataio.tar_records(shards, shuffle_window=24)
    with PIPE.bind(recs).run("numpy", seed=9, epoch=1) as loader:
        full = [ids(b) for b in loader]
    with PIPE.bind(recs).run("numpy", seed=9, epoch=1) as loader:
        it = iter(loader)
        for _ in range(cut):
            next(it)
        state = json.loads(json.dumps(loader.state_dict()))
    assert len(json.dumps(state)) < 512
    with PIPE.bind(dataio.tar_records(shards, shuffle_window=24)).run("numpy", seed=9) as loader:
        loader.load_state_dict(state)
        rest = [ids(b) for b in loader]
    assert rest == full[cut:]


def test_elastic_resume_two_ranks_to_three(shards: list[str]) -> None:
    recs = dataio.tar_records(shards, shuffle_window=16)
    seen, states = [], []
    for rank in range(2):
        with PIPE.bind(recs).run("numpy", seed=4, shard={"id": rank, "of": 2, "pad": False}) as loader:
            it = iter(loader)
            for _ in range(3):
                seen += ids(next(it))
            states.append(loader.state_dict())
    for rank in range(3):
        with PIPE.bind(recs).run("numpy", seed=4, shard={"id": rank, "of": 3, "pad": False}) as loader:
            loader.load_state_dict(states[0])
            seen += [n for b in loader for n in ids(b)]
    assert sorted(seen) == list(range(N))


def test_gzip_shards_and_kept_indexes(tmp_path: Path, cache_env: Path) -> None:
    uris = write_shards(tmp_path, [9, 12, 7], gz=True)
    recs = dataio.tar_records(str(tmp_path / "train-{0000..0002}.tar.gz"))
    assert recs.counts == [9, 12, 7]
    assert sorted(epoch(recs, seed=1)) == list(range(28))
    kept = list((cache_env / "index").glob("*.json"))
    assert len(kept) == 3
    # A changed shard is indexed again, not trusted.
    write_shards(tmp_path, [9, 13, 7], gz=True)
    assert dataio.tar_records(uris).counts == [9, 13, 7]


def test_a_corrupt_sample_is_skipped_and_named(tmp_path: Path, cache_env: Path) -> None:
    uris = write_shards(tmp_path, [10, 10], corrupt={13})
    recs = dataio.tar_records(uris)
    delivered, errors = [], []
    with PIPE.bind(recs).run("numpy", seed=3, on_failure="skip") as loader:
        for b in loader:
            delivered += ids(b)
            errors += b.errors
    assert sorted(delivered) == [n for n in range(20) if n != 13]
    (err,) = errors
    assert isinstance(err, dataio.errors.RowError)
    text = str(err)
    assert uris[1] in text and "s0001/000013" in text and "jpg" in text and "decode_image" in text, text
    with pytest.raises(dataio.errors.RowError, match="s0001/000013"):
        epoch(recs, seed=3)


def test_missing_truncated_and_changed_shards_are_typed_errors(tmp_path: Path, cache_env: Path) -> None:
    uris = write_shards(tmp_path, [10, 10])
    with pytest.raises(FileNotFoundError, match="train-0009.tar"):
        dataio.tar_records([*uris, str(tmp_path / "train-0009.tar")])
    data = Path(uris[1]).read_bytes()
    bad = tmp_path / "bad.tar"
    bad.write_bytes(data[: len(data) // 2 + 100])
    with pytest.raises(dataio.errors.CorruptDataError, match="bad.tar"):
        dataio.tar_records([uris[0], str(bad)])
    recs = dataio.tar_records(uris)
    # The shard is replaced after it was indexed: reading it says so.
    Path(uris[1]).write_bytes(data[:-1024] + b"\0" * 2048)
    with pytest.raises(dataio.errors.CorruptDataError, match="changed since it was indexed"):
        epoch(recs, seed=1)


def test_tfrecord_shards_ours_read_by_theirs_and_shuffled(tmp_path: Path, cache_env: Path) -> None:
    tfrecord = pytest.importorskip("tfrecord", reason="the tfrecord package is in the test group")
    uris = []
    n = 0
    for s, count in enumerate([12, 5, 9]):
        path = tmp_path / f"part-{s}.tfrecord{'.gz' if s == 2 else ''}"
        examples = [{"key": f"s{s}/{n + i:06d}", "jpg": jpeg(n + i), "cls": n + i} for i in range(count)]
        dataio.write_tfrecord(str(path), examples, gzip_compress=s == 2)
        n += count
        uris.append(str(path))
    # The reference reader reads what we wrote.
    theirs = [int(r["cls"][0]) for r in tfrecord.tfrecord_loader(uris[0], None, {"cls": "int", "key": "byte"})]
    assert theirs == list(range(12))
    recs = dataio.tfrecord_records(str(tmp_path / "part-*"))
    assert recs.counts == [12, 5, 9]
    pipe = dataio.pipeline(dataio.slot("jpg").decode_image(mode="rgb"), dataio.slot("cls").decode_bytes(), dataio.batch(4))
    with pipe.bind(recs).run("numpy", seed=7) as loader:
        rows = [(k, int(c), int(px)) for b in loader for k, c, px in zip(b.keys, b["cls"], b["jpg"][:, 0, 0, 0])]
    assert sorted(c for _, c, _ in rows) == list(range(26))
    assert [c for _, c, _ in rows] != list(range(26))
    assert all(int(k.split("/")[1]) == c and px == c % 251 for k, c, px in rows)


def test_hugging_face_parquet_with_an_image_column(tmp_path: Path, cache_env: Path) -> None:
    datasets = pytest.importorskip("datasets", reason="datasets is in the test group")
    features = datasets.Features({"image": datasets.Image(), "label": datasets.Value("int64")})
    total = 0
    for f, count in enumerate([10, 7, 12]):
        images = [Image.open(io.BytesIO(jpeg(total + i))) for i in range(count)]
        ds = datasets.Dataset.from_dict({"image": images, "label": list(range(total, total + count))}, features=features)
        ds.to_parquet(str(tmp_path / f"train-{f:05d}-of-00003.parquet"), batch_size=4)
        total += count
    # Images stored by path only resolve against the parquet file's folder.
    (tmp_path / "imgs").mkdir()
    paths = []
    for i in range(3):
        (tmp_path / "imgs" / f"{i}.jpg").write_bytes(jpeg(200 + i))
        paths.append(f"imgs/{i}.jpg")
    import pyarrow as pa
    import pyarrow.parquet as pq

    struct = pa.array([{"bytes": None, "path": p} for p in paths], type=pa.struct([("bytes", pa.binary()), ("path", pa.string())]))
    pq.write_table(pa.table({"image": struct, "label": [200, 201, 202]}), str(tmp_path / "train-paths.parquet"))
    recs = dataio.parquet_records(str(tmp_path / "train-*.parquet"), key="label", shuffle_window=6)
    assert len(recs) == total + 3
    assert recs._dataio_layout()[0][:3] == [4, 4, 2]  # row groups are the unit read
    pipe = dataio.pipeline(dataio.slot("image").decode_image(mode="rgb"), dataio.slot("label").decode_bytes(), dataio.batch(5))
    with pipe.bind(recs).run("numpy", seed=11) as loader:
        rows = [(int(lab), int(px)) for b in loader for lab, px in zip(b["label"], b["image"][:, 0, 0, 0])]
    labels = [lab for lab, _ in rows]
    assert sorted(labels) == [*range(total), 200, 201, 202]
    assert labels != sorted(labels)
    assert all(px == lab % 251 for lab, px in rows)
    # The same {bytes, path} values in a plain list of records decode too.
    plain = [{"image": {"bytes": jpeg(7), "path": "x.jpg"}}, {"image": {"bytes": None, "path": str(tmp_path / "imgs" / "1.jpg")}}]
    one = dataio.pipeline(dataio.slot("image").decode_image(mode="rgb"), dataio.batch(2))
    (b,) = list(one.bind(plain).run("numpy"))
    assert b["image"][:, 0, 0, 0].tolist() == [7, 201]


def test_loader_stats_report_the_source(shards: list[str]) -> None:
    recs = dataio.tar_records(shards)
    with PIPE.bind(recs).run("numpy", seed=1) as loader:
        for _ in loader:
            pass
        stats = loader.stats()
        report = str(loader.report())
    assert stats["source"]["shards"] == 8 and stats["source"]["shards_opened"] >= 7
    assert "shards: 8 in the source" in report
