"""``python -m dataio``: print the capability report of this host.

``python -m dataio convert SRC DEST``: an image folder, a URL list or
shards into shards with their index (see ``dataio.convert``).

``python -m dataio index SHARDS... --out URI``: write a shard index of tar
shards (webdataset's ``wids-shard-index-v1``, as ``widsindex create`` writes
it), so that ``dataio.tar_records`` opens them on a fresh host without
reading them (see ``dataio.formats.shards``, "Sample counts")."""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed

from . import convert, new_plugin
from .capabilities import format_report, report


def _report(args: argparse.Namespace) -> int:
    from ._plugins import host

    r = report()
    # What is wrong with installed plugins (two claiming a scheme, a misspelled
    # hook, a wrong entry-point group): the others loaded, these say why not all.
    problems = host.problems()
    if args.json:
        r["plugin_problems"] = [
            {"kind": p.kind, "plugin": p.plugin, "package": p.package, "version": p.version, "message": p.message} for p in problems
        ]
        json.dump(r, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(format_report(r))
        if problems:
            print("\nplugin problems (the other plugins loaded; see docs/plugins.md):")
            for p in problems:
                print(f"  {p.kind}: {p}")
    return 0


def _index(args: argparse.Namespace) -> int:
    """Counts the shards on ``--jobs`` threads, each shard by the engine's own
    indexing (its member table, kept in the index store like any loader's),
    then writes the index at ``--out`` atomically through dataio's own write.
    The kept tables are what make a rerun resume: a shard counted before,
    unchanged since (same size and etag), is not read again."""
    from . import _native
    from .errors import InvalidArgumentError
    from .formats.shards import _expand, _known, _names_index, cache_root, shard_index_doc
    from .io import write

    out = args.out
    if not _names_index(out):
        raise InvalidArgumentError(f"--out must name a .json file (tar_records knows a shard index by it), got {out!r}")
    named = _expand(args.shards)
    shards = [u for u, _ in named]
    known = _known(named)
    index_dir = str(args.index_dir or cache_root() / "index")
    n = len(shards)
    counts: list[int] = [0] * n
    sizes: list[int | None] = [None] * n
    read = [False] * n
    failed: list[tuple[str, BaseException]] = []

    def count(i: int) -> None:
        def note(_shards: int, _nbytes: int) -> None:
            read[i] = True

        one = _native.ShardSet(
            "tar", [shards[i]], index_dir=index_dir, known=[known[i]], gunzip=args.gunzip, parallelism=1, before_counting=note
        )
        counts[i], sizes[i] = one.counts[0], one.sizes[0]

    say = (lambda *_: None) if args.quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))
    started = last = time.monotonic()
    pool = ThreadPoolExecutor(max_workers=max(1, args.jobs))
    try:
        futures = {pool.submit(count, i): i for i in range(n)}
        for done, f in enumerate(as_completed(futures), 1):
            if (e := f.exception()) is not None:
                failed.append((shards[futures[f]], e))
            now = time.monotonic()
            if now - last >= 2 or done == n:
                last = now
                say(f"counted {done}/{n} shards ({now - started:.0f} s)")
    except KeyboardInterrupt:
        pool.shutdown(wait=True, cancel_futures=True)
        say(f"interrupted: the shards counted so far are kept under {index_dir}; run the same command again to resume")
        return 130
    finally:
        pool.shutdown(wait=True)
    if failed:
        for uri, e in failed[:5]:
            print(f"{uri}: {type(e).__name__}: {e}", file=sys.stderr)
        print(
            f"{len(failed)} of {n} shards could not be counted; the others are kept under {index_dir}: "
            f"once fixed, run the same command again to count only what is left",
            file=sys.stderr,
        )
        return 1
    doc = shard_index_doc(out, shards, counts, sizes, name=args.name)
    write(out, json.dumps(doc, indent=2).encode() + b"\n")
    fresh = sum(read)
    print(
        f"wrote {out}: {n} shards, {sum(counts)} samples, {sum(s or 0 for s in sizes)} bytes "
        f"({fresh} counted now, {n - fresh} known from an earlier run); "
        f"open them with dataio.tar_records({out!r})"
    )
    return 0


def _ops(args: argparse.Namespace) -> int:
    """Every op a pipeline can name (the core's and the installed plugins'),
    each with its parameters: type, default and help, as the op declares them."""
    from ._ops import Param
    from ._plugins import tensor_words
    from .plugins import list_ops

    ops = list_ops()
    names = args.names or sorted(ops)
    unknown = [n for n in names if n not in ops]
    if unknown:
        print(f"no op named {', '.join(unknown)}; known: {', '.join(sorted(ops))}", file=sys.stderr)
        return 2
    for name in names:
        spec = ops[name]
        where = "dataio" if spec.plugin.startswith("dataio.") or spec.plugin.startswith("<") else spec.plugin
        print(f"{name}  [{spec.kind}, {where}, {'native' if spec.native else 'python'}]")
        if spec.description:
            print(f"    {spec.description}")
        shapes = [f"{what} {tensor_words(d)}" for what, d in (("takes", spec.takes), ("gives", spec.output)) if d]
        if shapes:
            print(f"    {'; '.join(shapes)}")
        for key, p in spec.params.items():
            if isinstance(p, Param):
                types = " | ".join(repr(c) for c in p.choices) if p.choices else " | ".join(t.__name__ for t in p.types)
                default = "required" if p.required else f"default {p.default!r}"
                print(f"    {key}: {types}, {default}" + (f" — {p.doc}" if p.doc else ""))
            else:
                declared = p if isinstance(p, tuple) else (p,)
                print(f"    {key}: {' | '.join(getattr(t, '__name__', str(t)) for t in declared)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dataio", description="What dataio can do on this host.")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    sub = parser.add_subparsers(dest="command", metavar="{index,convert,ops,new-plugin}")
    ix = sub.add_parser(
        "index",
        help="write a shard index (wids-shard-index-v1) of tar shards",
        description=(
            "Counts the samples of tar shards, in parallel, and writes a wids-shard-index-v1 JSON (webdataset's "
            "shard index) at --out, on any backend, atomically. Shard URLs are written relative to the index's "
            "folder when they lie below it, absolute otherwise. Interrupted, the same command resumes: shards "
            "counted before are not read again. dataio.tar_records(OUT) then opens the shards without reading them."
        ),
    )
    ix.add_argument("shards", nargs="+", metavar="SHARDS", help="shard URIs, globs or brace ranges (train-{0000..0099}.tar)")
    ix.add_argument("--out", required=True, help="where to write the index, a .json URI (e.g. s3://bucket/train/shardindex.json)")
    ix.add_argument("--jobs", type=int, default=8, help="shards read at once (each is held in memory while counted; default 8)")
    ix.add_argument("--name", default=None, help="the dataset's name, written as the index's \"name\"")
    ix.add_argument("--index-dir", default=None, help="where counts are kept between runs (default: the loader's, $DATAIO_CACHE_DIR/index)")
    gz = ix.add_mutually_exclusive_group()
    gz.add_argument("--gunzip", dest="gunzip", action="store_const", const=True, default=None, help="gunzip every shard")
    gz.add_argument("--no-gunzip", dest="gunzip", action="store_const", const=False, help="gunzip none (default: by the name)")
    ix.add_argument("--quiet", action="store_true", help="no progress on stderr")
    convert.add_parser(sub)
    ops = sub.add_parser("ops", help="list the ops a pipeline can name, with their parameters' types, defaults and help")
    ops.add_argument("names", nargs="*", metavar="OP", help="only these ops")
    new_plugin.add_parser(sub)
    args = parser.parse_args(argv)
    if args.command == "new-plugin":
        return new_plugin.run(args)
    if args.command == "ops":
        return _ops(args)
    if args.command == "convert":
        return convert.run(args)
    if args.command == "index":
        return _index(args)
    return _report(args)


if __name__ == "__main__":
    sys.exit(main())
