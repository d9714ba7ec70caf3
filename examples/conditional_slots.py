"""Slot-local conditionals: an optional slot gated before any read, and a shape branch after decode.

Records carry an image and, for some of them, a segmentation mask. The
``mask`` slot is ``optional=True`` and ``active_when(c.col("mask_id").is_not_null())``:
the predicate is evaluated natively on the record before anything is read,
so rows without a mask cost no read and come back as ``None``. The ``image``
slot branches on the decoded shape: tall images are center-cropped, the
others resized, so every row ends up 256x256 and the batch is one tensor.
Both predicates are part of the plan signature (a checkpoint of this plan
does not resume another).

    python examples/conditional_slots.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import torch
from PIL import Image

import dataio
from dataio import cond as c


def make_records(root: Path, n: int = 40) -> list[dict]:
    rng = np.random.default_rng(0)
    records = []
    for i in range(n):
        h, w = (int(rng.integers(300, 480)), 300) if i % 3 == 0 else (int(rng.integers(160, 250)), 220)
        image = root / f"img{i:03d}.jpg"
        Image.fromarray(rng.integers(0, 255, (h, w, 3), dtype=np.uint8)).save(image, quality=90)
        rec = {"key": f"r{i:03d}", "image": str(image), "mask_id": None, "mask": None}
        if i % 2 == 0:  # half the rows have a mask
            mask = root / f"mask{i:03d}.png"
            Image.fromarray((rng.random((h, w)) > 0.5).astype(np.uint8) * 255).save(mask)
            rec.update(mask_id=i, mask=str(mask))
        records.append(rec)
    return records


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        records = make_records(Path(tmp))

        pipe = dataio.pipeline(
            dataio.slot("image")
                .decode_image(mode="rgb")
                .when(c.shape(axis=0).gt(256))
                .then(dataio.transforms.center_crop(h=256, w=256))
                .otherwise(dataio.transforms.resize(h=256, w=256)),
            dataio.slot("mask", optional=True)
                .active_when(c.col("mask_id").is_not_null())
                .decode_image(mode="gray"),
            dataio.batch(16),
        )
        print(pipe.describe())

        by_key = {r["key"]: r for r in records}
        masks = 0
        with pipe.bind(records).run("torch") as loader:
            for batch in loader:
                images = batch["image"]
                assert isinstance(images, torch.Tensor) and images.shape[1:] == (256, 256, 3), images.shape
                for key, mask in zip(batch.keys, batch["mask"]):
                    rec = by_key[key]
                    if rec["mask_id"] is None:
                        assert mask is None, "an inactive slot yields None and reads nothing"
                    else:
                        h = Image.open(rec["mask"]).size[1]
                        assert mask.shape[0] == h and mask.shape[-1] == 1, mask.shape
                        masks += 1
                print(f"batch of {len(batch)}: image {tuple(images.shape)}, masks present {sum(m is not None for m in batch['mask'])}")
            stats = loader.stats()
        print(f"{masks} masks decoded for {len(records)} records; {stats['bytes_read']:,} bytes read")
    print("conditional_slots: OK")


if __name__ == "__main__":
    main()
