"""``python -m dataio convert SRC DEST``: raw data to shards with their index.

SRC is one of three things, told apart by its form:

* **an image folder** (a local directory, or a URI ending in ``/``): every
  image file below it (``.jpg``, ``.jpeg``, ``.png``, ``.webp``, ``.bmp``,
  ``.gif``, ``.tif``, ``.tiff``); ``class/xxx.jpg`` gives the class index of
  ``class`` among the sorted class folders as ``.cls`` (no class folders:
  no ``.cls``);
* **a URL list** (``.parquet``, ``.csv``, ``.tsv``, ``.jsonl``, also gzipped):
  one URL per row in ``--url-field`` (default ``url``) and an optional
  caption in ``--caption-field`` (default ``caption``, written as ``.txt``).
  The URLs are fetched by dataio's backends (http(s) through dataio-http,
  where internal addresses are refused unless ``--allow-private``); a row
  that fails (status, timeout, refused address, robots, not an image) is
  skipped and counted by reason in the report;
* **existing shards** (``.tar``, ``.tfrecord``, brace ranges and globs, or a
  ``shardindex.json``): the image member (``jpg``, ``jpeg``, ``png``,
  ``webp``) re-encoded, ``cls`` and ``txt`` members carried over.

Images are decoded, resized (``--resize-short``), encoded as JPEG at
``--quality`` and written by :func:`dataio.write_shards` (resumable: rerun
the same command after a crash).
"""

from __future__ import annotations

import argparse
import os
import posixpath
from typing import Any

from .errors import InvalidArgumentError

IMAGE_EXTS = (".jpg", ".jpeg", ".png", ".webp", ".bmp", ".gif", ".tif", ".tiff")
_URL_LISTS = (".parquet", ".csv", ".tsv", ".jsonl", ".csv.gz", ".tsv.gz", ".jsonl.gz", ".jsonl.zst")
_SHARDS = (".tar", ".tar.gz", ".tgz", ".tfrecord", ".tfrecord.gz", ".json")


def _is_folder(src: str) -> bool:
    return src.endswith("/") or os.path.isdir(src)


def folder_records(src: str) -> list[dict[str, Any]]:
    """The images below ``src``, sorted, with their class folder's index."""
    from .io import ls

    root = src.rstrip("/")
    if "://" in src:
        files = [u for u in ls(root + "/", recursive=True) if u.lower().endswith(IMAGE_EXTS)]
        rel = [u[len(root) + 1 :] if u.startswith(root + "/") else u.rsplit("/", 1)[-1] for u in files]
    else:
        files, rel = [], []
        for dirpath, dirs, names in os.walk(root):
            dirs.sort()
            for n in sorted(names):
                if n.lower().endswith(IMAGE_EXTS):
                    p = os.path.join(dirpath, n)
                    files.append(p)
                    rel.append(os.path.relpath(p, root).replace(os.sep, "/"))
    if not files:
        raise InvalidArgumentError(f"{src}: no image files ({', '.join(IMAGE_EXTS)}) below it")
    order = sorted(range(len(files)), key=lambda i: rel[i])
    classes = sorted({posixpath.dirname(r) for r in rel if "/" in r})
    index = {c: i for i, c in enumerate(classes)}
    out = []
    for i in order:
        r = rel[i]
        rec: dict[str, Any] = {"image": files[i], "key": posixpath.splitext(r)[0]}
        if classes:
            rec["cls"] = index.get(posixpath.dirname(r), -1)
        out.append(rec)
    return out


def _image_member(first: dict[str, Any]) -> str:
    for ext in ("jpg", "jpeg", "png", "webp"):
        if ext in first:
            return ext
    raise InvalidArgumentError(f"these shards' samples hold no image member (jpg, jpeg, png, webp): {sorted(first)}")


def build(args: argparse.Namespace) -> tuple[Any, str]:
    """The bound pipeline and the destination the CLI's arguments ask for."""
    from . import formats
    from .pipeline import batch, pipeline, slot

    src: str = args.src
    low = src.lower()
    text_slot = None
    cls = False
    if _is_folder(src):
        records: Any = folder_records(src)
        image_field = "image"
        cls = "cls" in records[0]
    elif low.endswith(_URL_LISTS):
        if low.endswith(".parquet"):
            records = formats.parquet_records(src)
        elif low.endswith((".csv", ".csv.gz")):
            records = formats.csv_records(src)
        elif low.endswith((".tsv", ".tsv.gz")):
            records = formats.csv_records(src, delimiter="\t")
        else:
            records = formats.jsonl_records(src)
        image_field = args.url_field
        if len(records) and args.caption_field in records[0]:
            text_slot = args.caption_field
    elif low.endswith(_SHARDS) or "{" in src or "*" in src:
        records = formats.tfrecord_records(src) if ".tfrecord" in low else formats.tar_records(src, shuffle_window=1)
        first = records[0] if len(records) else {}
        image_field = _image_member(first)
        cls = "cls" in first
        text_slot = "txt" if "txt" in first else None
    else:
        raise InvalidArgumentError(
            f"{src}: not an image folder (a directory, or a URI ending in /), a URL list ({', '.join(_URL_LISTS)}) "
            f"or shards ({', '.join(_SHARDS)})"
        )
    image = slot("jpg", field=image_field).decode_image()
    if args.resize_short:
        image = image.resize_short(args.resize_short)
    stages: list[Any] = [image.encode_image("jpeg", quality=args.quality)]
    if cls:
        stages.append(slot("cls").decode_bytes())
    if text_slot:
        stages.append(slot("txt", field=text_slot, optional=True).decode_bytes())
    return pipeline(*stages, batch(16)).bind(records), args.dest


def add_parser(sub: Any) -> None:
    cv = sub.add_parser(
        "convert",
        help="convert an image folder, a URL list or shards into shards with their index",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    cv.add_argument("src", metavar="SRC", help="an image folder, a URL list (parquet/csv/jsonl) or shards")
    cv.add_argument("dest", metavar="DEST", help="the shards, numbered by one brace range: out/train-{000000..}.tar")
    cv.add_argument("--format", default=None, choices=["webdataset", "parquet", "tfrecord"], help="default: by DEST's extension")
    cv.add_argument("--resize-short", type=int, default=None, metavar="N", help="scale each image so its short side is N")
    cv.add_argument("--quality", type=int, default=90, metavar="Q", help="JPEG quality (default 90)")
    cv.add_argument("--samples-per-shard", type=int, default=1000, metavar="N")
    cv.add_argument("--max-shard-bytes", type=int, default=None, metavar="B")
    cv.add_argument("--url-field", default="url", help="a URL list's URL column (default url)")
    cv.add_argument("--caption-field", default="caption", help="a URL list's caption column, written as .txt (default caption)")
    cv.add_argument("--allow-private", action="store_true", help="let URLs reach loopback and private addresses")
    cv.add_argument("--seed", type=int, default=None, help="shuffle the samples with this seed (default: the source's order)")
    cv.add_argument("--no-resume", action="store_true", help="write every shard again, ignoring an earlier run")
    cv.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    from .config import configure_http
    from .shard_writer import FORMATS, write_shards

    if args.format is None:
        args.format = next((f for f, ext in FORMATS.items() if args.dest.lower().endswith(ext)), "webdataset")
    if args.allow_private:
        configure_http(allow_private=True)
    bound, dest = build(args)
    report = write_shards(
        bound,
        dest,
        format=args.format,
        samples_per_shard=args.samples_per_shard,
        max_shard_bytes=args.max_shard_bytes,
        resume=not args.no_resume,
        seed=args.seed,
        progress=False if args.quiet else None,
    )
    print(report)
    for e in report.errors[:5]:
        print(f"  skipped: {e}")
    if report.index:
        print(f"index: {report.index}")
    return 0
