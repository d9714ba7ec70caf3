"""A training-style worker launched by torchrun in the distributed tests.

Each rank iterates its shard of a shared record list and writes what it saw
(and, when asked, a checkpoint) to an output folder. Killing is simulated by
a hard exit right after the checkpoint is written, like a crashed node.
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np
import torch
import torch.distributed as dist

import dataio


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--records", type=int, default=103)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--pad", action="store_true")
    ap.add_argument("--stop-after", type=int, default=None, help="checkpoint after N batches and exit hard")
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--pack", action="store_true", help="pack documents whose lengths differ by rank")
    args = ap.parse_args()

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.pack:
        pack(args, rank, world)
        return
    records = [{"key": f"r{i}", "x": np.full(3, i, dtype=np.int64).tobytes()} for i in range(args.records)]
    pipe = dataio.pipeline(dataio.slot("x").decode_bytes(), dataio.batch(args.batch, prefetch=2))
    loader = pipe.bind(records).run("torch", shard={"id": rank, "of": world, "pad": args.pad}, seed=42)
    state_path = os.path.join(args.out, f"state-{rank}.json")
    if args.resume:
        # Elastic-safe: any rank's state carries the global position.
        candidates = sorted(f for f in os.listdir(args.out) if f.startswith("state-"))
        with open(os.path.join(args.out, candidates[0])) as f:
            loader.load_state_dict(json.load(f))
    seen = []
    batches = 0
    for batch in loader:
        seen.extend(batch.keys)
        batches += 1
        # A collective per step, as in training: ranks must agree on step counts.
        dist.all_reduce(torch.ones(1))
        if args.stop_after is not None and batches == args.stop_after:
            with open(state_path, "w") as f:
                json.dump(loader.state_dict(), f)
            with open(os.path.join(args.out, f"seen-{rank}.json"), "w") as f:
                json.dump({"keys": seen, "batches": batches}, f)
            os._exit(0)
    tag = "resumed" if args.resume else "seen"
    with open(os.path.join(args.out, f"{tag}-{rank}.json"), "w") as f:
        json.dump({"keys": seen, "batches": batches, "len": len(loader)}, f)
    dist.destroy_process_group()


def pack(args: argparse.Namespace, rank: int, world: int) -> None:
    """Rank r gets records r, r + world, ...: even records are long
    documents, so rank 0 has many more tokens than rank 1."""
    def npy(a: np.ndarray) -> bytes:
        import io

        buf = io.BytesIO()
        np.save(buf, a)
        return buf.getvalue()

    records = [{"key": f"d{i}", "ids": npy(1000 * (i + 1) + np.arange(1, (60 if i % 2 == 0 else 6) + 1))}
               for i in range(args.records)]
    pipe = dataio.pipeline(dataio.slot("ids").decode_npy(),
                           dataio.pack("ids", seq_len=32, batch_size=2, strategy="concat", eos_token=0, window=8))
    batches, tokens = 0, []
    with pipe.bind(records).run("torch", shard={"id": rank, "of": world}) as loader:
        if args.resume:
            # Any rank's state holds every old rank's point (the balancer shares them).
            with open(os.path.join(args.out, "state-0.json")) as f:
                loader.load_state_dict(json.load(f))
        for _epoch in range(1 if args.resume or args.stop_after else 2):
            for b in loader:
                batches += 1
                ids = b["input_ids"][b["document_ids"] >= 0]
                tokens.extend(int(t) for t in ids if t != 0)
                dist.all_reduce(torch.ones(1))  # a training step's collective: counts must agree
                if args.stop_after is not None and batches == args.stop_after:
                    with open(os.path.join(args.out, f"state-{rank}.json"), "w") as f:
                        json.dump(loader.state_dict(), f)
                    with open(os.path.join(args.out, f"packseen-{rank}.json"), "w") as f:
                        json.dump({"batches": batches, "tokens": tokens}, f)
                    os._exit(0)
        stats = loader.stats()["pack"]
    tag = "packresumed" if args.resume else "pack"
    with open(os.path.join(args.out, f"{tag}-{rank}.json"), "w") as f:
        json.dump({"batches": batches, "tokens": tokens, "ended_early": stats["balance_ended_early"]}, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
