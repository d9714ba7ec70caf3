"""The JAX side of test_jax.py, run in fresh interpreters (JAX's device count
is fixed at its first import): ``python _jax_worker.py SCENARIO [ARGS]``,
prints one JSON line of results. Under ``multi`` two such processes join one
``jax.distributed`` job on 127.0.0.1, 4 CPU devices each."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import numpy as np

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

GLOBAL_BATCH = 16
N = 100  # 6 full global batches (drop_last), 50 records per process of two


def records() -> list[dict[str, Any]]:
    from _imaging import npy_bytes

    return [{"key": f"r{i:03d}", "x": npy_bytes(np.full((4, 4), i, np.float32) + np.arange(16, dtype=np.float32).reshape(4, 4) / 100),
             "label": i} for i in range(N)]


def pipe() -> Any:
    import dataio

    return dataio.pipeline(dataio.slot("x").decode_npy(), dataio.slot("label").decode_bytes(),
                           dataio.batch(GLOBAL_BATCH, drop_last=True))


def numpy_batches(seed: int = 7) -> list[dict[str, np.ndarray]]:
    with pipe().bind(records()).run("numpy", seed=seed) as loader:
        return [{k: np.asarray(v) for k, v in b.items()} for b in loader]


def data_sharding() -> Any:
    import jax
    from jax.sharding import NamedSharding, PartitionSpec

    return NamedSharding(jax.make_mesh((len(jax.devices()),), ("data",)), PartitionSpec("data"))


def shards_of(arr: Any) -> list[tuple[int, list[Any]]]:
    """(first global row, values) of each shard this process addresses."""
    return sorted((s.index[0].start or 0, np.asarray(s.data).tolist()) for s in arr.addressable_shards)


def single() -> dict[str, Any]:
    import jax

    import dataio

    out: dict[str, Any] = {"devices": len(jax.devices())}
    ref = numpy_batches()
    # Default device, zero-copy where JAX aliases the host buffer: a batch
    # map sees the host batch (the engine's buffer) before it is put.
    host_ptrs: list[int] = []

    def note(b: Any) -> Any:
        host_ptrs.append(b["x"].ctypes.data)
        return b

    p = dataio.pipeline(*pipe().slots, pipe().shape, dataio.map(note))
    with p.bind(records()).run("jax", seed=7) as loader:
        got = list(loader)
        stats = loader.stats()
    out["plain_equal"] = len(got) == len(ref) and all(
        np.array_equal(np.asarray(g["x"]), r["x"]) and np.array_equal(np.asarray(g["label"]), r["label"]) for g, r in zip(got, ref))
    out["plain_type"] = type(got[0]["x"]).__name__
    out["plain_device"] = str(next(iter(got[0]["x"].devices())))
    out["zero_copy"] = [g["x"].unsafe_buffer_pointer() == p for g, p in zip(got, host_ptrs)]
    out["keys_host"] = isinstance(got[0].keys, list) and got[0].keys == [f"r{int(v):03d}" for v in ref[0]["label"]]
    out["transfer_seconds"] = stats["device_transfer_seconds"]
    # Global arrays over 8 devices: the requested sharding, the numpy values.
    sharding = data_sharding()
    with pipe().bind(records()).run("jax", seed=7, sharding=sharding) as loader:
        got = list(loader)
    out["sharded_equal"] = len(got) == len(ref) and all(
        np.array_equal(np.asarray(g["x"]), r["x"]) and np.array_equal(np.asarray(g["label"]), r["label"]) for g, r in zip(got, ref))
    out["sharded_as_asked"] = all(g["x"].sharding == sharding and len(g["x"].addressable_shards) == 8 for g in got)
    # Exact resume with batches prefetched past the step.
    with pipe().bind(records()).run("jax", seed=7, sharding=sharding, prefetch_to_device=3) as loader:
        it = iter(loader)
        first = [next(it) for _ in range(2)]
        state = loader.state_dict()
    with pipe().bind(records()).run("jax", seed=7, sharding=sharding) as loader:
        loader.load_state_dict(json.loads(json.dumps(state)))
        rest = list(loader)
    out["resume_position"] = state["position"]
    out["resume_exact"] = [np.asarray(b["label"]).tolist() for b in first + rest] == [r["label"].tolist() for r in ref]
    return out


class CountingExecutor:
    """The local executor, noting each job's epoch and how many batches the
    consumer had taken when it started."""

    def __init__(self) -> None:
        from dataio.executor import LocalExecutor

        self.local = LocalExecutor()
        self.starts: list[tuple[int, int]] = []
        self.taken = 0

    def start(self, job: Any) -> Any:
        self.starts.append((job.epoch, self.taken))
        return self.local.start(job)


def epochs() -> dict[str, Any]:
    """Epochs back to back: the next epoch's run starts while the step still
    holds the last batches of the one before, and a set_epoch in between
    gets the epoch asked for."""
    import time

    def labels(loader: Any, ex: CountingExecutor | None = None, step: float = 0.0) -> list[list[int]]:
        out = []
        for b in loader:
            out.append(np.asarray(b["label"]).tolist())
            if ex is not None:
                ex.taken += 1
            time.sleep(step)
        return out

    with pipe().bind(records()).run("numpy", seed=7) as loader:
        ref = [labels(loader) for _ in range(2)]
        loader.set_epoch(5)
        ref5 = labels(loader)
    ex = CountingExecutor()
    with pipe().bind(records()).run("jax", seed=7, executor=ex) as loader:
        got = [labels(loader, ex, step=0.05) for _ in range(2)]
        ex.taken = 0
        loader.set_epoch(5)
        got5 = labels(loader, ex)
    return {"same_epochs": got == ref and got5 == ref5, "starts": ex.starts, "per_epoch": len(ref[0])}


def documents() -> list[dict[str, Any]]:
    from _imaging import npy_bytes

    rng = np.random.default_rng(0)
    return [{"key": f"d{i}", "ids": npy_bytes(1000 * (i + 1) + np.arange(1, int(rng.integers(1, 40)) + 1, dtype=np.int64))}
            for i in range(60)]


def packed() -> dict[str, Any]:
    import dataio

    docs = documents()
    p = dataio.pipeline(dataio.slot("ids").decode_npy(), dataio.pack("ids", 32, 8, eos_token=0, window=16, segment_ids=True))
    with p.bind(docs).run("numpy", seed=1) as loader:
        ref = list(loader)
    with p.bind(docs).run("jax", seed=1, sharding=data_sharding()) as loader:
        got = list(loader)
    ok = len(got) == len(ref) > 0
    for g, r in zip(got, ref):
        seg, pos = np.asarray(g["segment_ids"]), np.asarray(g["positions"])
        doc = r["document_ids"]
        ok = ok and seg.dtype == np.int32 and pos.dtype == np.int32
        ok = ok and np.array_equal(seg, doc + 1) and np.array_equal(pos, np.where(doc >= 0, r["position_ids"], 0))
        ok = ok and np.array_equal(np.asarray(g["input_ids"]), r["input_ids"]) and isinstance(g["cu_seqlens"], np.ndarray)
        # A new segment starts exactly where position 0 is, on real tokens.
        ok = ok and np.array_equal((np.diff(seg, axis=1) != 0) & (seg[:, 1:] > 0), (pos[:, 1:] == 0) & (seg[:, 1:] > 0))
    return {"packed_ok": bool(ok), "batches": len(got)}


def multi(rank: int, port: int, ckpt: str) -> dict[str, Any]:
    import jax

    jax.distributed.initialize(f"127.0.0.1:{port}", num_processes=2, process_id=rank)
    import orbax.checkpoint as ocp

    import dataio
    import dataio.jax as djax

    out: dict[str, Any] = {"process": jax.process_index(), "devices": len(jax.devices()), "local": len(jax.local_devices())}
    ref = numpy_batches()  # the one-process run, computed here too
    sharding = data_sharding()
    loader = pipe().bind(records()).run("jax", seed=7, sharding=sharding)
    out["shard"] = loader.state_dict()["shard"]
    out["len"] = len(loader)
    seen: list[list[tuple[int, list[Any]]]] = []
    mgr = ocp.CheckpointManager(ckpt, options=ocp.CheckpointManagerOptions(enable_async_checkpointing=False))
    for step, batch in enumerate(loader):
        assert batch["label"].shape == (GLOBAL_BATCH,)
        seen.append(shards_of(batch["label"]))
        if step == 2:
            mgr.save(step, args=ocp.args.Composite(params=ocp.args.StandardSave({"w": np.arange(3.0)}),
                                                   loader=djax.CheckpointSave(loader)))
            mgr.wait_until_finished()
    out["batches"] = len(seen)
    # This process's rows of each global batch: the one-process batch's rows
    # of this rank (ranks interleave over the epoch's order).
    rows = GLOBAL_BATCH // 2
    want = [r["label"].reshape(rows, 2)[:, rank].tolist() for r in ref]
    out["own_rows"] = all(sum((v for _, v in s), []) == w for s, w in zip(seen, want))
    out["addressed"] = sorted({start for s in seen for start, _ in s})
    # Exact resume through the checkpoint, in a new loader.
    again = pipe().bind(records()).run("jax", seed=7, sharding=sharding)
    restored = mgr.restore(2, args=ocp.args.Composite(loader=djax.CheckpointRestore(again)))
    out["restored_same_loader"] = restored["loader"] is again
    rest = [shards_of(b["label"]) for b in again]
    out["resume_exact"] = rest == seen[3:]
    again.close()
    loader.close()
    mgr.close()
    # pack(): each process packs its own documents; the key-value balancer
    # ends every process's epoch at the same batch.
    p = dataio.pipeline(dataio.slot("ids").decode_npy(), dataio.pack("ids", 32, 8, eos_token=0, window=8, segment_ids=True))
    with p.bind(documents()).run("jax", seed=1, sharding=sharding) as packed_loader:
        packed_batches = [b["segment_ids"].shape for b in packed_loader]
        out["pack_balance"] = packed_loader.stats()["pack"].get("balance_ended_early")
    out["packed_batches"] = len(packed_batches)
    out["packed_global"] = all(s == (8, 32) for s in packed_batches)
    return out


def elastic(ckpt: str) -> dict[str, Any]:
    import orbax.checkpoint as ocp

    import dataio.jax as djax

    ref = numpy_batches()
    loader = pipe().bind(records()).run("jax", seed=7, sharding=data_sharding())
    mgr = ocp.CheckpointManager(ckpt)
    mgr.restore(2, args=ocp.args.Composite(loader=djax.CheckpointRestore(loader)))
    rest = [np.asarray(b["label"]).tolist() for b in loader]
    loader.close()
    # The two processes delivered batches 0..2 of the global order: the rest
    # is batches 3.. of the one-process run, row for row.
    return {"elastic_exact": rest == [r["label"].tolist() for r in ref[3:]], "rest": len(rest)}


def main() -> None:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    scenario = sys.argv[1]
    if scenario == "single":
        result = single()
    elif scenario == "packed":
        result = packed()
    elif scenario == "epochs":
        result = epochs()
    elif scenario == "multi":
        result = multi(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
    else:
        result = elastic(sys.argv[2])
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
