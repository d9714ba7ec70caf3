"""Loader behaviour: delivery order, closing mid-epoch, record sources,
len(), group_by + from_sampler with context, optional slots and the README's
shape-driven branch."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from _imaging import (
    RESAMPLE_TOL,
    assert_close,
    decode_one,
    live_buffers,
    natural_image,
    pil_decode,
    pil_resize,
    png,
    rows,
    run_all,
    safetensors_bytes,
    tv_center_crop,
)

import dataio
from dataio import _native
from dataio import cond as c
from dataio.errors import InvalidArgumentError


def settle(target: int | None = None, timeout: float = 10.0) -> int:
    """The live engine buffer count once it stops moving or reaches `target`
    (in-flight tasks of a closed loader may still be unwinding)."""
    deadline = time.monotonic() + timeout
    last, stable = live_buffers()[0], 0
    while time.monotonic() < deadline:
        if target is not None and last == target:
            return last
        time.sleep(0.01)
        now = _native.live_buffers()[0]
        stable = stable + 1 if now == last else 0
        last = now
        if target is None and stable >= 5:
            return last
    return last


@pytest.fixture(scope="module")
def image_files(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("loader-images")
    paths = []
    for i in range(8):
        p = root / f"{i}.png"
        p.write_bytes(png(natural_image(30 + 3 * i, 40, seed=300 + i)))
        paths.append(p)
    return paths


def small_pipe(batch: int = 4, **kw: Any) -> dataio.Pipeline:
    return dataio.pipeline(dataio.slot("image").decode_image().resize(h=16, w=16), dataio.batch(batch, **kw))


def recs(files: list[Path], n: int) -> list[dict[str, Any]]:
    return [{"key": f"r{i:03d}", "image": str(files[i % len(files)])} for i in range(n)]


# ---------------------------------------------------------------------------
# delivery order


def test_submit_order_is_the_record_order(image_files: list[Path]) -> None:
    records = recs(image_files, 30)
    batches = run_all(small_pipe(4), records, concurrency=32)
    assert [len(b) for b in batches] == [4] * 7 + [2]
    assert [k for b in batches for k in b.keys] == [r["key"] for r in records]
    assert [i for b in batches for i in b.indices] == list(range(30))


def test_completion_order_yields_every_batch(image_files: list[Path]) -> None:
    records = recs(image_files, 50)
    ref = rows(run_all(small_pipe(4), records), "image")
    for concurrency in (1, 7, 64):
        batches = run_all(small_pipe(4), records, concurrency=concurrency, order="completion")
        keys = [k for b in batches for k in b.keys]
        assert Counter(keys) == Counter(r["key"] for r in records), "completion order lost or repeated a record"
        assert sorted(len(b) for b in batches) == [2] + [4] * 12
        # each batch is still a contiguous run of the schedule
        for b in batches:
            assert b.indices == list(range(b.indices[0], b.indices[0] + len(b)))
        got = rows(batches, "image")
        for k in ref:
            np.testing.assert_array_equal(got[k], ref[k])


def test_drop_last(image_files: list[Path]) -> None:
    records = recs(image_files, 10)
    with small_pipe(4, drop_last=True).bind(records).run("numpy") as loader:
        assert len(loader) == 2
        batches = list(loader)
    assert [b.keys for b in batches] == [[r["key"] for r in records[:4]], [r["key"] for r in records[4:8]]]


# ---------------------------------------------------------------------------
# closing


def test_breaking_out_of_the_with_block_closes_and_frees(image_files: list[Path]) -> None:
    base = settle()
    records = recs(image_files, 400)
    with small_pipe(4, prefetch=2).bind(records).run("torch", concurrency=8) as loader:
        for i, b in enumerate(loader):  # noqa: B007 - b outlives the loop, deleted below
            if i == 2:
                break
    del b
    stats = loader.stats()
    assert stats["records_admitted"] < len(records), "closing did not stop admission: the whole epoch was read"
    assert stats["batches_built"] < 100
    assert settle(base) == base, "closing mid-epoch leaked engine buffers"
    with pytest.raises(InvalidArgumentError):
        iter(loader)


def test_close_without_a_with_block(image_files: list[Path]) -> None:
    base = settle()
    loader = small_pipe(2).bind(recs(image_files, 200)).run("numpy", concurrency=4)
    it = iter(loader)
    first = next(it)
    assert len(first) == 2
    loader.close()
    loader.close()  # idempotent
    assert settle() > base, "a delivered batch stays valid after close"
    np.testing.assert_array_equal(first["image"][0], decode_one(dataio.slot("image").decode_image().resize(h=16, w=16), str(image_files[0])))
    del first, it
    assert settle(base) == base


def test_dropping_an_unfinished_loader_frees_everything(image_files: list[Path]) -> None:
    base = settle()
    loader = small_pipe(2).bind(recs(image_files, 200)).run("torch", concurrency=4)
    it = iter(loader)
    next(it)
    del it, loader
    assert settle(base) == base


def test_a_loader_runs_epoch_after_epoch(image_files: list[Path]) -> None:
    records = recs(image_files, 9)
    with small_pipe(4).bind(records).run("numpy") as loader:
        e0 = [k for b in loader for k in b.keys]
        e1 = [k for b in loader for k in b.keys]
        assert loader.epoch == 2
    assert e0 == e1 == [r["key"] for r in records]


# ---------------------------------------------------------------------------
# record sources


def test_generators_are_unsized_sources(image_files: list[Path]) -> None:
    def gen() -> Iterator[dict[str, Any]]:
        for i in range(11):
            yield {"key": f"g{i}", "image": str(image_files[i % 8])}

    with small_pipe(4).bind(gen()).run("numpy") as loader:
        with pytest.raises(TypeError):
            len(loader)
        batches = list(loader)
    assert [b.keys for b in batches] == [[f"g{i}" for i in range(j, min(j + 4, 11))] for j in (0, 4, 8)]
    # a generator is one pass; an unsized source cannot be shuffled
    with pytest.raises(ValueError):
        small_pipe(4).bind(gen()).run("numpy", seed=3)


def test_len_of_sized_sources(image_files: list[Path]) -> None:
    for n, size, drop, expect in [(10, 4, False, 3), (10, 4, True, 2), (8, 4, False, 2), (8, 4, True, 2), (3, 4, True, 0), (0, 4, False, 0)]:
        with small_pipe(size, drop_last=drop).bind(recs(image_files, n)).run("numpy") as loader:
            assert len(loader) == expect, (n, size, drop)
            assert len(list(loader)) == expect
    with small_pipe(4).bind(recs(image_files, 10)).run("numpy", shard={"id": 1, "of": 3}) as loader:
        assert len(loader) == 1  # records 1, 4, 7
        assert [k for b in loader for k in b.keys] == ["r001", "r004", "r007"]


def test_bytes_paths_and_pathlib_fields(image_files: list[Path]) -> None:
    p = image_files[2]
    records = [
        {"key": "str", "image": str(p)},
        {"key": "pathlib", "image": p},
        {"key": "bytes", "image": p.read_bytes()},
        {"key": "bytearray", "image": bytearray(p.read_bytes())},
        {"key": "memoryview", "image": memoryview(p.read_bytes())},
        {"key": "file-uri", "image": p.as_uri()},
    ]
    got = rows(run_all(small_pipe(6), records), "image")
    ref = got["str"]
    assert ref.shape == (16, 16, 3)
    for k in got:
        np.testing.assert_array_equal(got[k], ref, err_msg=k)


def test_any_sequence_and_records_with_extra_fields(image_files: list[Path]) -> None:
    class Table:
        """A sized, indexable source that is not a list."""

        def __init__(self, n: int) -> None:
            self.n = n
            self.fetched: list[int] = []

        def __len__(self) -> int:
            return self.n

        def __getitem__(self, i: int) -> dict[str, Any]:
            if not 0 <= i < self.n:
                raise IndexError(i)
            self.fetched.append(i)
            return {"key": f"t{i}", "image": str(image_files[i % 8]), "unused": object(), "caption": "x" * i}

    table = Table(10)
    with small_pipe(4).bind(table).run("numpy", seed=1) as loader:
        assert len(loader) == 3
        keys = [k for b in loader for k in b.keys]
    assert sorted(keys) == sorted(f"t{i}" for i in range(10)) and keys != sorted(keys, key=lambda k: int(k[1:]))
    assert sorted(table.fetched) == list(range(10))


def test_keys_default_to_the_record_index(image_files: list[Path]) -> None:
    records = [{"image": str(image_files[i % 8])} for i in range(5)]
    batches = run_all(small_pipe(5), records)
    assert batches[0].keys == ["0", "1", "2", "3", "4"]
    assert batches[0].indices == [0, 1, 2, 3, 4]


def test_a_batch_gives_its_slots_as_a_plain_dict(image_files: list[Path]) -> None:
    pipe = dataio.pipeline(
        dataio.slot("image").decode_image().resize(h=16, w=16),
        dataio.slot("raw", field="image", stack="never").decode_bytes(),
        dataio.batch(3),
    )
    (b, _) = run_all(pipe, recs(image_files, 5))
    d = b.to_dict()
    assert type(d) is dict and list(d) == ["image", "raw"] and b.keys == ["r000", "r001", "r002"]
    assert d["image"] is b["image"] and d["raw"] is b["raw"]  # the same tensors, not copies
    d["extra"] = 1
    del d["image"]
    assert list(b) == ["image", "raw"]  # a new dict: the batch keeps its slots


def test_non_dict_records_fail_clearly(image_files: list[Path]) -> None:
    with pytest.raises(ValueError, match="dict"):
        run_all(small_pipe(2), [str(image_files[0]), str(image_files[1])])


# ---------------------------------------------------------------------------
# group_by + from_sampler (the README's example)


@pytest.fixture(scope="module")
def latents(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict[str, Any]], dict[tuple[str, str], np.ndarray]]:
    root = tmp_path_factory.mktemp("latents")
    table: list[dict[str, Any]] = []
    values: dict[tuple[str, str], np.ndarray] = {}
    for f in range(5):
        tensors = {f"t{j}": (np.arange(2 * 4 * 4, dtype=np.float32).reshape(2, 4, 4) + 100 * f + j) for j in range(3)}
        path = root / f"cache{f}.safetensors"
        path.write_bytes(safetensors_bytes(tensors))
        for name, arr in tensors.items():
            values[(str(path), name)] = arr
            table.append({"key": f"f{f}-{name}", "cache_path": str(path), "tensor_key": name, "caption": f"c{f}{name}"})
    return table, values


def test_group_by_with_from_sampler_and_context(latents: tuple[list[dict[str, Any]], dict[tuple[str, str], np.ndarray]]) -> None:
    from torch.utils.data import BatchSampler, RandomSampler

    table, values = latents

    class Rows:
        """The sampler yields indices; map them to rows, as a Dataset would."""

        def __init__(self, sampler: BatchSampler) -> None:
            self.sampler = sampler

        def __iter__(self) -> Iterator[list[dict[str, Any]]]:
            for idx in self.sampler:
                yield [table[i] for i in idx]

    gen = torch.Generator().manual_seed(0)
    batch_sampler = BatchSampler(RandomSampler(range(len(table)), generator=gen), batch_size=4, drop_last=False)
    expected_groups = [[table[i]["key"] for i in idx] for idx in BatchSampler(RandomSampler(range(len(table)), generator=torch.Generator().manual_seed(0)), batch_size=4, drop_last=False)]

    # -- the README -----------------------------------------------------------
    pipe = dataio.pipeline(
        dataio.slot("latent").decode_safetensors(tensor_key=dataio.col("tensor_key")),
        dataio.group_by("batch_id", prefetch=4),
    )

    records = dataio.from_sampler(
        Rows(batch_sampler),
        lambda row: {
            "key": row["key"],
            "latent": row["cache_path"],
            "tensor_key": row["tensor_key"],
            "_row": row,
        },
    )

    got_groups = []
    with pipe.bind(records).run("torch", concurrency=128,
                                context=lambda r: r["_row"]) as loader:
        for batch in loader:
            latents = batch["latent"]
            rows_ = batch.context  # list[dict] aligned with batch.keys
    # -------------------------------------------------------------------------
            got_groups.append(list(batch.keys))
            assert isinstance(latents, torch.Tensor) and tuple(latents.shape) == (len(batch), 2, 4, 4)
            assert isinstance(rows_, list) and len(rows_) == len(batch.keys)
            for k, row, lat in zip(batch.keys, rows_, latents):
                assert row["key"] == k, "context is not aligned with keys"
                assert row is table[[t["key"] for t in table].index(k)], "context is the record's own _row object"
                np.testing.assert_array_equal(lat.numpy(), values[(row["cache_path"], row["tensor_key"])])
    assert got_groups == expected_groups, "one batch per sampler batch, in sampler order"


def test_from_sampler_without_record_fn_and_group_by_any_key(latents: tuple[list[dict[str, Any]], dict[tuple[str, str], np.ndarray]]) -> None:
    table, _ = latents
    sampler = [[{"key": r["key"], "latent": r["cache_path"], "tensor_key": r["tensor_key"]} for r in table[i : i + 5]] for i in range(0, len(table), 5)]
    pipe = dataio.pipeline(dataio.slot("latent").decode_safetensors(tensor_key=dataio.col("tensor_key")), dataio.group_by("batch_id"))
    batches = run_all(pipe, dataio.from_sampler(sampler), "numpy")
    assert [b.keys for b in batches] == [[r["key"] for r in group] for group in sampler]
    assert all(b.context is None for b in batches)
    # group_by any field: contiguous runs of equal values
    runs = [{"key": r["key"], "latent": r["cache_path"], "tensor_key": r["tensor_key"], "file": r["cache_path"]} for r in table]
    pipe = dataio.pipeline(dataio.slot("latent").decode_safetensors(tensor_key=dataio.col("tensor_key")), dataio.group_by("file"))
    batches = run_all(pipe, runs, "numpy")
    assert [len(b) for b in batches] == [3] * 5
    with pytest.raises(ValueError):
        run_all(pipe, runs, "numpy", seed=1)  # group_by keeps arrival order


def test_collate_takes_the_source_batches_as_they_are(image_files: list[Path]) -> None:
    groups = [[{"key": f"g{g}-{i}", "image": str(image_files[(g + i) % 8])} for i in range(n)] for g, n in enumerate([3, 1, 5])]
    pipe = dataio.pipeline(dataio.slot("image").decode_image().resize(h=8, w=8), dataio.collate())
    batches = run_all(pipe, groups, "torch")
    assert [b.keys for b in batches] == [[r["key"] for r in grp] for grp in groups]
    assert [tuple(b["image"].shape) for b in batches] == [(3, 8, 8, 3), (1, 8, 8, 3), (5, 8, 8, 3)]


def test_context_with_plain_batches(image_files: list[Path]) -> None:
    records = [{"key": f"k{i}", "image": str(image_files[i % 8]), "meta": {"i": i}} for i in range(7)]
    batches = run_all(small_pipe(3), records, context=lambda r: (r["key"], r["meta"]["i"] * 2))
    for b in batches:
        assert b.context == [(k, int(k[1:]) * 2) for k in b.keys]


# ---------------------------------------------------------------------------
# optional slots


def test_optional_slot_gated_by_a_field_predicate(tmp_path: Path) -> None:
    imgs, masks, records = {}, {}, []
    for i in range(9):
        ip = tmp_path / f"img{i}.png"
        a = natural_image(20 + i, 24, seed=i)
        ip.write_bytes(png(a))
        imgs[f"k{i}"] = a
        rec: dict[str, Any] = {"key": f"k{i}", "image": str(ip)}
        if i % 3 != 0:
            mp = tmp_path / f"mask{i}.png"
            m = natural_image(20 + i, 24, seed=50 + i, channels=1)
            mp.write_bytes(png(m))
            masks[f"k{i}"] = m
            rec["mask"], rec["mask_id"] = str(mp), i
        elif i == 3:
            rec["mask"], rec["mask_id"] = str(tmp_path / "would-fail.png"), None  # gated off: never read
        records.append(rec)

    # -- the README -----------------------------------------------------------
    pipe = dataio.pipeline(
        dataio.slot("image").decode_image(mode="rgb"),
        dataio.slot("mask", optional=True)
            .active_when(c.col("mask_id").is_not_null())
            .decode_image(mode="gray"),
        dataio.batch(32),
    )
    # -------------------------------------------------------------------------
    (b,) = run_all(pipe, records, "numpy")
    assert b.keys == [r["key"] for r in records] and not b.errors
    assert isinstance(b["mask"], list) and len(b["mask"]) == 9
    for k, img, mask in zip(b.keys, b["image"], b["mask"]):
        np.testing.assert_array_equal(img, imgs[k])
        if k in masks:
            assert mask is not None and mask.shape == masks[k].shape + (1,)
            np.testing.assert_array_equal(mask[..., 0], masks[k])
        else:
            assert mask is None, f"{k}: an inactive optional slot must give None"


def test_optional_fixed_shape_slot_and_missing_fields(image_files: list[Path]) -> None:
    records = [{"key": "a", "image": str(image_files[0]), "thumb": str(image_files[1])}, {"key": "b", "image": str(image_files[2])}, {"key": "c", "image": str(image_files[3]), "thumb": None}]
    pipe = dataio.pipeline(
        dataio.slot("image").decode_image().resize(h=8, w=8),
        dataio.slot("thumb", optional=True).decode_image().resize(h=4, w=6).normalize("unit"),
        dataio.batch(3),
    )
    for output in ("torch", "numpy"):
        (b,) = run_all(pipe, records, output)
        assert tuple(b["image"].shape) == (3, 8, 8, 3)
        thumbs = b["thumb"]
        assert isinstance(thumbs, list) and [t is None for t in thumbs] == [False, True, True]
        assert tuple(thumbs[0].shape) == (3, 4, 6)
        ref = pil_resize(pil_decode(image_files[1].read_bytes()), 4, 6)
        np.testing.assert_allclose(np.asarray(thumbs[0]), np.transpose(ref, (2, 0, 1)) / 255.0, atol=RESAMPLE_TOL["max"] / 255 + 1e-6)
    # all present: one stacked tensor again
    (b,) = run_all(pipe, [records[0], records[0]], "torch")
    assert isinstance(b["thumb"], torch.Tensor) and tuple(b["thumb"].shape) == (2, 3, 4, 6)


# ---------------------------------------------------------------------------
# the README's shape-driven branch


def test_shape_branch_center_crops_tall_images_and_resizes_the_rest() -> None:
    shapes = {"tall": (600, 530), "tall-narrow": (700, 300), "short": (300, 400), "edge": (512, 700), "just-tall": (513, 520)}
    sources = {k: natural_image(*s, seed=i) for i, (k, s) in enumerate(shapes.items())}
    records = [{"key": k, "image": png(a)} for k, a in sources.items()]

    pipe = dataio.pipeline(
        dataio.slot("image")
            .decode_image(mode="rgb")
            .when(c.shape(axis=0).gt(512))
            .then(dataio.transforms.center_crop(h=512, w=512))
            .otherwise(dataio.transforms.resize(h=512, w=512)),
        dataio.batch(8),
    )
    (b,) = run_all(pipe, records, "numpy")
    assert isinstance(b["image"], np.ndarray) and b["image"].shape == (5, 512, 512, 3), "both branches give 512x512: one stacked tensor"
    got = dict(zip(b.keys, b["image"]))
    for k, a in sources.items():
        if a.shape[0] > 512:
            assert_close(got[k], tv_center_crop(a, 512, 512), mean=0, max=0, what=f"{k}: center_crop branch")
        else:
            assert_close(got[k], pil_resize(a, 512, 512), **RESAMPLE_TOL, what=f"{k}: resize branch")


def test_branches_on_width_combined_predicates_and_end() -> None:
    wide, tall, square = natural_image(40, 90, seed=1), natural_image(90, 40, seed=2), natural_image(50, 50, seed=3)
    records = [{"key": "wide", "image": png(wide)}, {"key": "tall", "image": png(tall)}, {"key": "square", "image": png(square)}]
    pipe = dataio.pipeline(
        dataio.slot("image").decode_image()
            .when(c.shape(axis=1).gt(60) | c.shape(axis=0).gt(60)).then(dataio.transforms.hflip(p=1.0)).end()
            .when(c.shape(axis=-1).eq(3) & ~c.col("key").eq("square")).then(dataio.transforms.vflip(p=1.0)).otherwise(),
        dataio.batch(3),
    )
    got = rows(run_all(pipe, records), "image")
    np.testing.assert_array_equal(got["wide"], wide[::-1, ::-1])
    np.testing.assert_array_equal(got["tall"], tall[::-1, ::-1])
    np.testing.assert_array_equal(got["square"], square)


# ---------------------------------------------------------------------------
# seeded shuffle and shards


def keys_of(batches: list[dataio.Batch]) -> list[str]:
    return [k for b in batches for k in b.keys]


def test_seeded_shuffle_is_a_deterministic_permutation(image_files: list[Path]) -> None:
    records = recs(image_files, 40)
    natural = [r["key"] for r in records]
    a = keys_of(run_all(small_pipe(8), records, seed=3))
    b = keys_of(run_all(small_pipe(8), records, seed=3, concurrency=1, order="completion"))
    c_ = keys_of(run_all(small_pipe(8), records, seed=4))
    assert sorted(a) == natural and a != natural
    assert sorted(b) == sorted(a) and a == keys_of(run_all(small_pipe(5), records, seed=3))
    assert c_ != a and sorted(c_) == natural
    with small_pipe(8).bind(records).run("numpy", seed=3) as loader:
        e0, e1 = keys_of(list(loader)), keys_of(list(loader))
    assert e0 == a and e1 != e0 and sorted(e1) == natural


@pytest.mark.parametrize("seed", [None, 9])
def test_shards_partition_the_records(image_files: list[Path], seed: int | None) -> None:
    records = recs(image_files, 23)
    parts = [keys_of(run_all(small_pipe(4), records, seed=seed, shard={"id": r, "of": 3})) for r in range(3)]
    assert sorted(k for p in parts for k in p) == [r["key"] for r in records], "each record goes to exactly one rank"
    padded = [keys_of(run_all(small_pipe(4), records, seed=seed, shard={"id": r, "of": 3, "pad": True})) for r in range(3)]
    assert [len(p) for p in padded] == [8, 8, 8], "pad=True gives every rank the same count"
    assert {k for p in padded for k in p} == {r["key"] for r in records}
    for r in range(3):
        with small_pipe(4).bind(records).run("numpy", seed=seed, shard={"id": r, "of": 3, "pad": True}) as loader:
            assert len(loader) == 2


def test_stack_never_and_stack_auto(image_files: list[Path]) -> None:
    same = [{"key": f"s{i}", "image": str(image_files[0])} for i in range(3)]
    mixed = [{"key": f"m{i}", "image": str(image_files[i])} for i in range(3)]
    auto = dataio.pipeline(dataio.slot("image").decode_image(), dataio.batch(3))
    never = dataio.pipeline(dataio.slot("image", stack="never").decode_image(), dataio.batch(3))
    (b,) = run_all(auto, same, "torch")
    assert isinstance(b["image"], torch.Tensor) and b["image"].shape[0] == 3, "equal shapes stack"
    (b,) = run_all(auto, mixed, "torch")
    assert isinstance(b["image"], list) and [tuple(t.shape) for t in b["image"]] == [(30, 40, 3), (33, 40, 3), (36, 40, 3)]
    (b,) = run_all(never, same, "torch")
    assert isinstance(b["image"], list) and len(b["image"]) == 3


def test_batch_maps_run_on_batches(image_files: list[Path]) -> None:
    def add_count(batch: dataio.Batch) -> dataio.Batch:
        batch["count"] = len(batch)
        batch["mean"] = batch["image"].float().mean().item()
        return batch

    p = dataio.pipeline(dataio.slot("image").decode_image().resize(h=4, w=4), dataio.batch(4), dataio.map(add_count))
    batches = run_all(p, recs(image_files, 10), "torch")
    assert [b["count"] for b in batches] == [4, 4, 2]
    assert all(b["mean"] == pytest.approx(b["image"].float().mean().item()) for b in batches)
