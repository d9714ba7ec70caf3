"""A latent cache read in the batches a sampler chose: ``decode_safetensors`` + ``group_by``.

Diffusion training often caches VAE latents in safetensors shards and lets a
sampler pick the batches (e.g. by aspect-ratio bucket). This script writes a
small cache with ``dataio.write_safetensors`` (two shards, the Hugging Face
layout), then runs the README's grouped-batch pipeline: a torch
``BatchSampler`` picks rows, ``dataio.from_sampler`` turns them into records
(and injects ``batch_id``), ``decode_safetensors(tensor_key=dataio.col(...))``
reads each row's tensor from its shard (zero-copy maps of the local files),
``group_by("batch_id")`` emits exactly the sampler's batches, and
``context=`` hands each row back on ``batch.context``.

    python examples/safetensors_latents.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import torch
from torch.utils.data import BatchSampler, RandomSampler

import dataio


def make_cache(root: Path, n: int = 96) -> list[dict]:
    """``n`` float16 latents of (4, 32, 32) in sharded safetensors; returns the row table."""
    gen = torch.Generator().manual_seed(0)
    rows = []
    for shard in range(2):
        latents = {f"img{shard}_{j:03d}": torch.randn(4, 32, 32, generator=gen).to(torch.float16) for j in range(n // 2)}
        path = root / f"latents-{shard}.safetensors"
        dataio.write_safetensors(str(path), latents, metadata={"vae": "example"})
        rows += [{"key": k, "cache_path": str(path), "tensor_key": k, "caption": f"caption of {k}"} for k in latents]
    return rows


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        rows = make_cache(Path(tmp))
        batch_sampler = BatchSampler(RandomSampler(rows, generator=torch.Generator().manual_seed(1)), batch_size=16, drop_last=False)

        sampled: list[list[str]] = []

        class SampledRows:
            """What a Dataset would do: the sampler's index lists as lists of rows."""

            def __iter__(self):
                for idx in batch_sampler:
                    sampled.append([rows[i]["key"] for i in idx])
                    yield [rows[i] for i in idx]

        pipe = dataio.pipeline(
            dataio.slot("latent").decode_safetensors(tensor_key=dataio.col("tensor_key")),
            dataio.group_by("batch_id", prefetch=4),
        )

        records = dataio.from_sampler(
            SampledRows(),
            lambda row: {
                "key": row["key"],
                "latent": row["cache_path"],
                "tensor_key": row["tensor_key"],
                "_row": row,
            },
        )

        reference = {}
        for shard in sorted({r["cache_path"] for r in rows}):
            reference.update(dataio.read_safetensors(shard, framework="torch"))

        seen = []
        with pipe.bind(records).run("torch", concurrency=128, context=lambda r: r["_row"]) as loader:
            for batch in loader:
                latents = batch["latent"]
                context = batch.context  # list[dict] aligned with batch.keys
                assert latents.shape == (len(batch), 4, 32, 32) and latents.dtype == torch.float16
                for key, row, latent in zip(batch.keys, context, latents):
                    assert row["key"] == key
                    assert torch.equal(latent, reference[key])
                seen.append(list(batch.keys))
            print(loader.report())
        assert seen == sampled, "group_by emits the sampler's batches, in its order"
        print(f"{len(seen)} batches, sizes {[len(b) for b in seen]}; first captions: {[c['caption'] for c in context[:2]]}")
    print("safetensors_latents: OK")


if __name__ == "__main__":
    main()
