"""Batches into ``jax.Array``: dataio ``run("jax")`` against Grain and a torch
DataLoader + ``jax.device_put``, side by side in one run, equal cores.

    python benchmarks/jax.py [--quick] [--images 512] [--docs 1500] [--cores N]
                             [--repeat 2] [--step-ms 50] [--workloads image,text,wait]
                             [--rounds 1]

Every path ends with the batch on JAX's first device (``block_until_ready``)
in the training process:

* **image** — decode JPEG (RGB), random-resized-crop to 224x224 (scale
  0.08-1, ratio 3/4-4/3, bilinear), horizontal flip (p=0.5), ImageNet
  normalize, CHW float32, batches of 64, over the benchmark's cached JPEGs
  (``benchmarks/datasets.py``, natural photographs of mixed sizes):

  - dataio: the pipeline's ops, ``run("jax", seed=0)`` (its own device
    prefetch thread, ``prefetch_to_device=2``);
  - grain 0.2: ``MapDataset.source(paths).repeat(epochs).random_map(...)
    .batch(64).to_iter_dataset(...).mp_prefetch(cores workers)``, the ops
    in PIL + numpy (torchvision's RandomResizedCrop parameters), then
    ``jax.device_put`` per batch. One iterator over all epochs (no epoch
    boundary to drain: this favours grain); its read-ahead per worker
    capped at 2 batches on one thread (see ``ahead`` in ``main``);
  - torch: ``DataLoader(num_workers=cores, persistent_workers=True)`` with
    torchvision's ``RandomResizedCrop``, ``RandomHorizontalFlip``,
    ``ToTensor``, ``Normalize`` on PIL images, then ``jax.device_put`` of
    each batch's numpy view.

  Each path is one stream of ``--repeat + 1`` epochs: the *steady* rate
  counts after the first epoch (worker start-up, first reads), *end to end*
  from making the iterator to the last batch, *per CPU-second* the steady
  work over the CPU time of the path's processes (this one and its
  workers) in the same window, which a busy machine moves least.

* **text** — tokenize (a byte-level BPE of vocabulary 8,192, trained here on
  ``benchmarks/pack.py``'s synthetic web-like corpus) and best-fit pack into
  ``[8, 2048]`` int32 rows (end token per document): dataio ``pack(...,
  "best_fit")`` + ``run("jax")`` against grain's ``BestFitPackIterDataset``
  (64 bins, after a flat map cutting documents longer than a row, which
  grain's bin packer refuses; read-ahead capped at 32 documents) + ``batch``
  + ``mp_prefetch`` + ``device_put``. Both read the texts from memory.
  Steady and end to end as above; document tokens/s (padding not counted),
  each path checked to deliver every token once per epoch.

* **wait** — dataio's image pipeline under a simulated training step
  (``time.sleep(step_ms)`` per batch): the fraction of the wall time the
  step loop spends waiting for its next batch (``next()`` plus
  ``block_until_ready``), the first batch (start-up) left out, and how much
  of it fell on the steps that take an epoch's first batch.

``--rounds N`` runs every path N times, in turn, and reports medians.

Prints each rate and dataio's ratio to each peer (above 1: dataio is
faster). The results and the machine they came from are in
docs/benchmark.md ("JAX"). ``--quick`` is a smoke run (256 images, 600
documents, 2 epochs): its steady windows are a few batches, within what the
paths hold ahead, so its figures are not for quoting.
"""

from __future__ import annotations

import sys
from pathlib import Path

# This file is named jax.py: the folder it runs from must not shadow the real
# ``jax`` (nor in grain's or torch's worker processes, which inherit sys.path).
HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import importlib.util  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

REPO = HERE.parent
MEAN = np.asarray([0.485, 0.456, 0.406], np.float32)
STD = np.asarray([0.229, 0.224, 0.225], np.float32)
CROP = 224


def _harness() -> Any:
    """``dataio_bench.datasets`` (the cached JPEG workload), from the repo's harness if it is not installed."""
    try:
        from dataio_bench import datasets
    except ImportError:
        sys.path.insert(0, str(REPO / "benchmarks" / "harness" / "src"))
        from dataio_bench import datasets
    return datasets


# -- the image ops in PIL + numpy (grain's workers) ---------------------------


def rrc_params(w: int, h: int, rng: Any, scale: tuple[float, float] = (0.08, 1.0),
               ratio: tuple[float, float] = (3 / 4, 4 / 3)) -> tuple[int, int, int, int]:
    """torchvision's ``RandomResizedCrop.get_params``: (left, top, width, height)."""
    area = w * h
    log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
    for _ in range(10):
        target = area * rng.uniform(*scale)
        aspect = math.exp(rng.uniform(*log_ratio))
        cw, ch = round(math.sqrt(target * aspect)), round(math.sqrt(target / aspect))
        if 0 < cw <= w and 0 < ch <= h:
            return int(rng.integers(0, w - cw + 1)), int(rng.integers(0, h - ch + 1)), cw, ch
    in_ratio = w / h
    if in_ratio < ratio[0]:
        cw, ch = w, round(w / ratio[0])
    elif in_ratio > ratio[1]:
        cw, ch = round(h * ratio[1]), h
    else:
        cw, ch = w, h
    return (w - cw) // 2, (h - ch) // 2, cw, ch


def pil_image(path: str, rng: np.random.Generator) -> np.ndarray:
    """Decode, random-resized-crop, flip, normalize: a (3, 224, 224) float32 array."""
    from PIL import Image

    with Image.open(path) as im:
        im = im.convert("RGB")
        left, top, cw, ch = rrc_params(im.width, im.height, rng)
        im = im.resize((CROP, CROP), Image.Resampling.BILINEAR, box=(left, top, left + cw, top + ch))
    a = np.asarray(im, np.float32)
    if rng.random() < 0.5:
        a = a[:, ::-1]
    a = (a * (1 / 255) - MEAN) / STD
    return np.ascontiguousarray(a.transpose(2, 0, 1))


class TorchFiles:
    """A map-style torch dataset of the files, torchvision transforms on PIL images."""

    def __init__(self, files: list[str]) -> None:
        self.files = files
        self.tf: Any = None

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, i: int) -> Any:
        from PIL import Image

        if self.tf is None:
            from torchvision import transforms as T

            self.tf = T.Compose([T.RandomResizedCrop(CROP, antialias=True), T.RandomHorizontalFlip(),
                                 T.ToTensor(), T.Normalize(MEAN.tolist(), STD.tolist())])
        with Image.open(self.files[i]) as im:
            return self.tf(im.convert("RGB"))


# -- text ---------------------------------------------------------------------


class Encode:
    """grain's map: text -> int32 tokens + the end token (the tokenizer loaded once per worker)."""

    def __init__(self, path: str, eos: int) -> None:
        self.path, self.eos, self.tok = path, eos, None

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "eos": self.eos, "tok": None}

    def __call__(self, text: str) -> dict[str, np.ndarray]:
        if self.tok is None:
            from tokenizers import Tokenizer

            self.tok = Tokenizer.from_file(self.path)
        return {"tokens": np.asarray([*self.tok.encode(text).ids, self.eos], np.int32)}


def split_rows(seq_len: int) -> Any:
    import grain.experimental as ge

    class Split(ge.FlatMapTransform):  # type: ignore[misc]
        """grain's bin packers take documents up to a row: cut longer ones (as dataio does)."""

        max_fan_out = 64

        def flat_map(self, el: dict[str, np.ndarray]) -> list[dict[str, np.ndarray]]:
            t = el["tokens"]
            return [{"tokens": t[i:i + seq_len]} for i in range(0, len(t), seq_len)]

    return Split()


def pack_corpus(n: int) -> list[str]:
    spec = importlib.util.spec_from_file_location("dataio_bench_pack_script", HERE / "pack.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return list(module.corpus(n))


# -- measuring ----------------------------------------------------------------


def cpu_seconds() -> float:
    """CPU seconds (user + system) so far of this process and its child
    processes (grain's and torch's workers): the live ones, and the ones
    that ended and were waited for."""
    import resource

    import psutil

    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        r = resource.getrusage(who)
        total += r.ru_utime + r.ru_stime
    for p in psutil.Process().children(recursive=True):
        try:
            t = p.cpu_times()
        except psutil.Error:  # a worker that just ended (counted above once waited for)
            continue
        total += t.user + t.system
    return total


@dataclasses.dataclass
class Timing:
    rows: int  # rows (images, document tokens) of the whole stream
    steady_rows: int  # of them, after the first epoch's
    steady_s: float  # seconds from the end of the first epoch to the last batch
    total_s: float  # seconds from making the iterator (worker start-up included) to the last batch
    steady_cpu_s: float  # CPU seconds of every process of the path over the steady window

    @property
    def steady(self) -> float:
        return self.steady_rows / self.steady_s

    @property
    def end_to_end(self) -> float:
        return self.rows / self.total_s

    @property
    def per_cpu_second(self) -> float:
        return self.steady_rows / self.steady_cpu_s


def timed_stream(make: Callable[[], Iterator[Any]], rows: Callable[[Any], int], epoch_rows: int, all_rows: int) -> Timing:
    """Times one stream of batches, each waited for on the device (``rows``
    does): steady from the batch that ends the first epoch (``epoch_rows``
    rows: worker start-up and first reads are the warm-up) to the last
    (the one that reaches ``all_rows``), and end to end; the CPU time of the
    path's processes over the steady window beside it."""
    t_start = time.perf_counter()
    seen = 0
    t0 = t1 = 0.0
    c0 = c1 = 0.0
    steady = 0
    for b in make():
        r = rows(b)
        t1 = time.perf_counter()
        if seen >= epoch_rows:
            steady += r
        seen += r
        if not t0 and seen >= epoch_rows:
            t0, c0 = t1, cpu_seconds()
        if seen >= all_rows and not c1:
            c1 = cpu_seconds()  # at the last batch, while the workers still live
    assert steady > 0, "no batch after the first epoch: nothing to time"
    return Timing(seen, steady, t1 - t0, t1 - t_start, (c1 or cpu_seconds()) - c0)


def median_of(timings: list[Timing], key: Callable[[Timing], float]) -> float:
    return float(np.median([key(t) for t in timings]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="a smoke run (256 images, 600 documents, 2 epochs): figures not for quoting")
    ap.add_argument("--images", type=int, default=512, help="a multiple of --batch (default 512)")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--docs", type=int, default=1500)
    ap.add_argument("--seq-len", type=int, default=2048)
    ap.add_argument("--text-batch", type=int, default=8)
    ap.add_argument("--cores", type=int, default=0, help="worker processes of grain and torch (default: usable CPUs)")
    ap.add_argument("--repeat", type=int, default=2, help="epochs after the first, in the one stream of each path")
    ap.add_argument("--step-ms", type=float, default=50.0)
    ap.add_argument("--workloads", default="image,text,wait")
    ap.add_argument("--rounds", type=int, default=1,
                    help="rounds of every path, taken in turn (a busy machine's load moves); medians reported")
    args = ap.parse_args()
    if args.quick:
        args.images, args.docs, args.repeat = 256, 600, 1
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("RAYON_NUM_THREADS", "1")  # tokenizers' own threads: each path brings its parallelism
    datasets = _harness()
    cores = args.cores or datasets.usable_cpus()
    B = args.batch
    if args.images % B:
        raise SystemExit(f"--images must be a multiple of --batch ({B})")
    workloads = set(args.workloads.split(","))
    # Made (or found in the cache) before JAX starts its threads: the maker forks.
    files = datasets.build_images(args.images, quiet=True)[: args.images] if workloads & {"image", "wait"} else []

    import jax

    import dataio

    dev = jax.devices()[0]
    print(f"jax {jax.__version__} on {dev.platform} ({jax.device_count()} device(s)); {cores} cores for every path "
          f"({os.cpu_count()} CPUs on this machine)", flush=True)
    try:
        import grain
        from absl import flags

        if not flags.FLAGS.is_parsed():  # grain's workers read absl flags; this script has its own argparse
            flags.FLAGS(sys.argv[:1])
        have_grain = True
    except ImportError:
        have_grain = False
        print("grain: not installed (uv pip install grain==0.2.18): its rows are skipped")
    try:
        import torch

        have_torch = True
    except ImportError:
        have_torch = False
        print("torch: not installed: its row is skipped")
    results: dict[str, dict[str, float]] = {}

    def ahead(n: int) -> Any:
        """grain's read-ahead in each worker: ``n`` elements on one thread (its
        default, 500 on 16 threads, works through a whole short stream during
        the other worker's start-up, and the steady rate would time a drained
        buffer), about what torch's workers (prefetch_factor=2) and dataio
        (prefetch=2 + prefetch_to_device=2) hold."""
        return grain.ReadOptions(num_threads=1, prefetch_buffer_size=n)

    epochs = args.repeat + 1
    image_pipe = dataio.pipeline(
        dataio.slot("image").decode_image(mode="rgb").random_resized_crop(h=CROP, w=CROP).hflip(p=0.5).normalize("imagenet"),
        dataio.batch(B),
    )
    records = [{"image": f} for f in files]

    def image_rows(x: Any) -> int:
        assert isinstance(x, jax.Array) and x.dtype == np.float32 and x.shape == (B, 3, CROP, CROP), (type(x), x.shape)
        x.block_until_ready()
        return int(x.shape[0])

    if "image" in workloads:
        print(f"\n== image: {args.images} JPEGs, decode + random-resized-crop {CROP} + hflip + normalize, batches of {B}, "
              f"{epochs} epochs in one stream ==", flush=True)
        rates: dict[str, float] = {}
        rates_e2e: dict[str, float] = {}
        cpu_rates: dict[str, float] = {}

        def dataio_images() -> Iterator[Any]:
            with image_pipe.bind(records).run("jax", seed=0) as loader:
                for _ in range(epochs):
                    for b in loader:
                        yield b["image"]

        paths: list[tuple[str, Callable[[], Iterator[Any]]]] = [("dataio run('jax')", dataio_images)]
        if have_grain:
            def grain_images() -> Iterator[Any]:
                ds = (grain.MapDataset.source(files).repeat(epochs).random_map(pil_image, seed=0)
                      .batch(B, batch_fn=np.stack).to_iter_dataset(ahead(2))
                      .mp_prefetch(grain.MultiprocessingOptions(num_workers=cores)))
                for b in ds:
                    yield jax.device_put(b, dev)

            paths.append(("grain mp_prefetch + device_put", grain_images))
        if have_torch:
            def torch_images() -> Iterator[Any]:
                dl = torch.utils.data.DataLoader(TorchFiles(files), batch_size=B, num_workers=cores,
                                                 persistent_workers=True, multiprocessing_context="spawn")
                for _ in range(epochs):
                    for b in dl:
                        yield jax.device_put(b.numpy(), dev)
                it = getattr(dl, "_iterator", None)
                if it is not None:
                    it._shutdown_workers()

            paths.append(("torch DataLoader + device_put", torch_images))
        image_timings: dict[str, list[Timing]] = {name: [] for name, _ in paths}
        for _ in range(args.rounds):
            for name, fn in paths:
                t = timed_stream(fn, image_rows, args.images, epochs * args.images)
                assert t.rows == epochs * args.images, f"{name}: {t.rows} images"
                image_timings[name].append(t)
                print(f"{name:34s} {t.steady:8.1f} images/s steady   {t.end_to_end:8.1f} end to end   "
                      f"{t.per_cpu_second:7.1f} per CPU-second   "
                      f"({t.steady_rows} images in {t.steady_s:.2f} s after the first epoch; {t.total_s:.2f} s in all)", flush=True)
        for name, ts in image_timings.items():
            rates[name], rates_e2e[name] = median_of(ts, lambda t: t.steady), median_of(ts, lambda t: t.end_to_end)
            cpu_rates[name] = median_of(ts, lambda t: t.per_cpu_second)
        results["image"], results["image end to end"], results["image per CPU-second"] = rates, rates_e2e, cpu_rates

    if "text" in workloads:
        from tokenizers import Tokenizer, models, pre_tokenizers, trainers

        L, TB = args.seq_len, args.text_batch
        texts = pack_corpus(args.docs)
        tmp = Path(tempfile.mkdtemp(prefix="dataio-jaxbench-"))
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.train_from_iterator(texts[:1500], trainers.BpeTrainer(
            vocab_size=8192, special_tokens=["<|endoftext|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False))
        tok_path = str(tmp / "tokenizer.json")
        tok.save(tok_path)
        eos = tok.token_to_id("<|endoftext|>")
        want = sum(len(e.ids) + 1 for e in tok.encode_batch(texts))
        print(f"\n== text: {len(texts)} documents, {want:,} tokens with end tokens, best-fit packed into "
              f"[{TB}, {L}], {epochs} epochs in one stream ==", flush=True)
        text_pipe = dataio.pipeline(dataio.slot("text").tokenize(tokenizer=tok_path),
                                    dataio.pack("text", seq_len=L, batch_size=TB, strategy="best_fit"))
        text_records = [{"text": t} for t in texts]

        tally = {"real": 0, "pad": 0}

        def text_rows(b: Any, segments: str, real: Callable[[np.ndarray], np.ndarray]) -> int:
            for k in ("input_ids", "tokens"):
                if k in b:
                    b[k].block_until_ready()
            x = b[segments]
            assert isinstance(x, jax.Array) and x.shape == (TB, L), (type(x), getattr(x, "shape", None))
            seg = np.asarray(x)
            used = seg[real(seg).any(axis=1)]
            r = int(real(used).sum())
            tally["real"] += r
            tally["pad"] += used.size - r
            return r

        def dataio_text() -> Iterator[int]:
            with text_pipe.bind(text_records).run("jax", seed=0) as loader:
                for _ in range(epochs):
                    for b in loader:
                        yield text_rows(b, "document_ids", lambda s: s >= 0)

        text_paths: list[tuple[str, Callable[[], Iterator[int]]]] = [("dataio pack best_fit run('jax')", dataio_text)]
        if have_grain:
            import grain.experimental as ge

            def grain_text() -> Iterator[int]:
                ds = grain.MapDataset.source(texts).seed(0).shuffle().repeat(epochs).map(Encode(tok_path, eos))
                ds = ds.to_iter_dataset(ahead(32))  # documents: about two batches' tokens
                ds = ge.FlatMapIterDataset(ds, split_rows(L))
                ds = ge.BestFitPackIterDataset(ds, length_struct={"tokens": L}, num_packing_bins=64, seed=0)
                ds = ds.batch(TB).mp_prefetch(grain.MultiprocessingOptions(num_workers=cores))
                for b in ds:
                    if b["tokens"].shape[0] != TB:  # grain's last batch has the rows left, not TB
                        b = {k: np.concatenate([v, np.zeros((TB - v.shape[0], *v.shape[1:]), v.dtype)]) for k, v in b.items()}
                    yield text_rows(jax.device_put(b, dev), "tokens_segment_ids", lambda s: s > 0)

            text_paths.append(("grain BestFitPack + device_put", grain_text))
        rates, rates_e2e, cpu_rates = {}, {}, {}
        text_timings: dict[str, list[Timing]] = {name: [] for name, _ in text_paths}
        for _ in range(args.rounds):
            for name, run in text_paths:
                tally.update(real=0, pad=0)
                t = timed_stream(run, lambda r: r, want, want * epochs)
                if tally["real"] != want * epochs:
                    print(f"{name}: delivered {tally['real']:,} document tokens, expected {want * epochs:,}")
                text_timings[name].append(t)
                print(f"{name:34s} {t.steady / 1e6:8.3f} M tokens/s steady   {t.end_to_end / 1e6:8.3f} end to end   "
                      f"{t.per_cpu_second / 1e6:6.3f} M per CPU-second   "
                      f"padding {tally['pad'] / (tally['real'] + tally['pad']):6.2%}   "
                      f"({t.steady_s:.2f} s after the first epoch; {t.total_s:.2f} s in all)", flush=True)
        for name, ts in text_timings.items():
            rates[name], rates_e2e[name] = median_of(ts, lambda t: t.steady), median_of(ts, lambda t: t.end_to_end)
            cpu_rates[name] = median_of(ts, lambda t: t.per_cpu_second)
        results["text"], results["text end to end"], results["text per CPU-second"] = rates, rates_e2e, cpu_rates

    if "wait" in workloads:
        step = args.step_ms / 1000
        print(f"\n== wait: dataio's image pipeline under a {args.step_ms:g} ms step, {epochs} epoch(s) ==", flush=True)
        fracs: list[float] = []
        for _ in range(args.rounds):
            waits: list[float] = []
            epoch_start: list[bool] = []  # whether the step's batch is its epoch's first
            with image_pipe.bind(records).run("jax", seed=0) as loader:
                t_start = time.perf_counter()
                for _ in range(epochs):
                    it = iter(loader)
                    first = True
                    while True:
                        t0 = time.perf_counter()
                        try:
                            b = next(it)
                        except StopIteration:
                            break
                        b["image"].block_until_ready()
                        waits.append(time.perf_counter() - t0)
                        epoch_start.append(first)
                        first = False
                        time.sleep(step)
                total = time.perf_counter() - t_start
            steady = waits[1:]
            loop = sum(steady) + step * len(steady)
            at_starts = sum(w for w, f in zip(steady, epoch_start[1:]) if f)
            frac = sum(steady) / loop
            fracs.append(frac)
            print(f"first batch {waits[0] * 1e3:.0f} ms; after it, {len(steady)} steps: waiting {frac:.1%} of the step loop "
                  f"({at_starts / loop:.1%} at the {epochs - 1} epoch starts, {(sum(steady) - at_starts) / loop:.1%} within epochs; "
                  f"mean {np.mean(steady) * 1e3:.1f} ms, max {max(steady) * 1e3:.1f} ms per step); "
                  f"{len(waits) * B / total:.0f} images/s overall", flush=True)
        if "image" in results:
            rate = next(iter(results["image"].values()))
            print(f"dataio's steady image rate ({rate:.0f}/s) makes a batch of {B} in {B / rate * 1e3:.0f} ms: "
                  f"the step it keeps up with on {cores} cores (a shorter step waits for the difference, "
                  f"{max(0.0, 1 - step * rate / B):.1%} of its loop, however much is prefetched)", flush=True)
        results["wait"] = {"fraction": float(np.median(fracs))}

    print(f"\n== ratios (dataio / peer; above 1: dataio is faster){'; medians of ' + str(args.rounds) + ' rounds' if args.rounds > 1 else ''} ==")
    for w in ("image", "image end to end", "image per CPU-second", "text", "text end to end", "text per CPU-second"):
        rates = results.get(w, {})
        ours = next((r for n, r in rates.items() if n.startswith("dataio")), None)
        for name, r in rates.items():
            if ours is not None and not name.startswith("dataio"):
                print(f"{w:16s} dataio / {name}: {ours / r:.2f}x")
    if "wait" in results:
        print(f"{'wait':16s} {results['wait']['fraction']:.1%} of a {args.step_ms:g} ms step")


if __name__ == "__main__":
    main()
