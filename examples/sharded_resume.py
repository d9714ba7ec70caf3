"""Sharded, shuffled, random-augmented — and resumed mid-epoch bit for bit.

Two ranks (run here one after the other, as ``shard={"id": rank, "of": 2}``
would in two processes) each read their disjoint shard of a seeded shuffle,
with random crops and flips. Each rank stops after a few batches, saves
``loader.state_dict()`` as JSON (small: no per-record lists), and a fresh
loader — a new pipeline object, as after a restart — resumes with
``load_state_dict``. The resumed batches must equal, bit for bit, those of
an uninterrupted run: the shuffle is a keyed permutation and every random op
draws from streams keyed by (seed, epoch, record, op), never by timing.

    python examples/sharded_resume.py
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import torch
from PIL import Image

import dataio

WORLD = 2
SEED = 42


def make_records(root: Path, n: int = 90) -> list[dict]:
    rng = np.random.default_rng(0)
    records = []
    for i in range(n):
        path = root / f"{i:03d}.jpg"
        h, w = int(rng.integers(96, 200)), int(rng.integers(96, 200))
        Image.fromarray(rng.integers(0, 255, (h, w, 3), dtype=np.uint8)).save(path, quality=90)
        records.append({"key": f"k{i:03d}", "image": str(path), "label": i % 10})
    return records


def build_pipeline() -> dataio.Pipeline:
    return dataio.pipeline(
        dataio.slot("image").decode_image(mode="rgb").random_resized_crop(h=64, w=64).hflip(p=0.5).normalize("imagenet"),
        dataio.slot("label").decode_bytes(),
        dataio.batch(8, prefetch=2),
    )


def run(records: list[dict], rank: int, stop_after: int | None = None, state: dict | None = None):
    """Batches of one rank's epoch; with ``stop_after``: the first ones and the state after them."""
    loader = build_pipeline().bind(records).run("torch", shard={"id": rank, "of": WORLD, "pad": True}, seed=SEED, concurrency=16)
    with loader:
        if state is not None:
            loader.load_state_dict(state)
        out = []
        for batch in loader:
            out.append((list(batch.keys), batch["image"], batch["label"]))
            if stop_after is not None and len(out) == stop_after:
                return out, loader.state_dict()
        return out, None


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        records = make_records(Path(tmp))
        seen: list[str] = []
        for rank in range(WORLD):
            reference, _ = run(records, rank)
            first, state = run(records, rank, stop_after=3)
            saved = Path(tmp) / f"loader-rank{rank}.json"
            saved.write_text(json.dumps(state))  # what a training checkpoint stores
            print(f"rank {rank}: {len(reference)} batches; stopped after 3; state {saved.stat().st_size} bytes: {state}")

            rest, _ = run(records, rank, state=json.loads(saved.read_text()))
            resumed = first + rest
            assert len(resumed) == len(reference)
            for (k1, img1, lab1), (k2, img2, lab2) in zip(resumed, reference):
                assert k1 == k2 and torch.equal(img1, img2) and torch.equal(lab1, lab2), "the resumed run differs"
            seen += [k for keys, _, _ in reference for k in keys]
        # pad=True: every rank gets the same number of batches; together they
        # cover every record (padding repeats a few when the world size does not divide it).
        assert set(seen) == {r["key"] for r in records}
        print(f"{WORLD} ranks resumed bit for bit; {len(seen)} samples seen for {len(records)} records")
    print("sharded_resume: OK")


if __name__ == "__main__":
    main()
