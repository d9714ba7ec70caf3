"""Datasets in shards: naming them, and the sized source over them.

Shards are named one way on every backend: a URI, a list of URIs, a glob
(``s3://b/train-*.tar``) or WebDataset's brace ranges
(``s3://b/train-{0000..0999}.tar``, also lists ``{a,b}``), mixed freely.

:class:`ShardRecords` is what ``tar_records`` and ``tfrecord_records``
return: a sized sequence of samples over a native shard set. The loader reads
it natively (no Python per sample); its epoch order is a keyed permutation of
the shards with a shuffle of samples inside a window of ``shuffle_window``
samples (see ``docs/arch.md``, "Datasets in shards"), so each shard is read
once per epoch, front to back, while batches mix the shards of the window.

Indexes are kept under ``index_dir`` (default ``$DATAIO_CACHE_DIR/index``,
``~/.cache/dataio/shards/index``), keyed by URI, size and etag (or mtime):
a second epoch or a restarted job does not index again. Remote shards are
kept in a local cache (``cache_dir``, default ``$DATAIO_CACHE_DIR/cache``)
within ``cache_bytes``; the ranks of one host share it when they point at
the same directory. Both directories are created private (0700); one that
another user owns or can write (or a file in it) is refused with an
``AccessDeniedError`` naming it, its owner and mode, since hits and kept
indexes are used without asking the store.
"""

from __future__ import annotations

import json
import logging
import os
import posixpath
import re
import shlex
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import _native
from .. import uri as _uri
from ..errors import CorruptDataError, DataioError, InvalidArgumentError, InvalidURIError
from ..io import glob, ls, read, write

__all__ = [
    "expand_shards",
    "ShardRecords",
    "shard_set",
    "cache_root",
    "DEFAULT_SHUFFLE_WINDOW",
    "ShardIndexFile",
    "read_shard_index",
    "shard_index_doc",
    "WIDS_KIND",
    "SHARD_INDEX_NAME",
]

log = logging.getLogger("dataio")

#: Samples shuffled together (a window of the shard-ordered stream).
DEFAULT_SHUFFLE_WINDOW = 8192
#: Windows each shard's samples are spread over: a window mixes this many
#: times the shards it would if shards were read one after another.
DEFAULT_SHUFFLE_SPREAD = 2
#: The cache budget when none is given: this much, at most half the free disk.
DEFAULT_CACHE_BYTES = 64 << 30

_RANGE = re.compile(r"\{(\d+)\.\.(\d+)\}")
_LIST = re.compile(r"\{([^{}]*,[^{}]*)\}")


def _braces(spec: str) -> list[str]:
    """Expands the leftmost brace group first, as a shell does."""
    ranges, lists = _RANGE.search(spec), _LIST.search(spec)
    m = min((x for x in (ranges, lists) if x), key=lambda x: x.start(), default=None)
    if m is None:
        return [spec]
    head, tail = spec[: m.start()], spec[m.end() :]
    if m is lists:
        return [out for alt in m.group(1).split(",") for out in _braces(head + alt + tail)]
    lo, hi = m.group(1), m.group(2)
    if int(hi) < int(lo):
        raise InvalidArgumentError(f"shard range {m.group(0)} in {spec!r} runs backwards")
    width = len(lo) if lo.startswith("0") or len(lo) == len(hi) else 0
    return [out for i in range(int(lo), int(hi) + 1) for out in _braces(head + str(i).zfill(width) + tail)]


def expand_shards(spec: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> list[str]:
    """The shard URIs ``spec`` names, in order: brace ranges and lists
    expanded, globs matched (sorted) on their backend, lists concatenated.
    A glob that matches nothing is an error naming it."""
    return [u for u, _ in _expand(spec)]


def _expand(spec: Any, lists: list[int] | None = None) -> list[tuple[str, Any]]:
    """(uri, listing metadata or None) per shard; ``lists[0]`` counts the
    listings of a store it made (one per remote glob)."""
    items = [spec] if isinstance(spec, (str, os.PathLike)) else list(spec)
    out: list[tuple[str, Any]] = []
    for item in items:
        for one in _braces(os.fspath(item)):
            if any(c in one for c in "*?["):
                # A shard index written beside the shards is no shard,
                # whatever the glob (``train/*``).
                found = [m for m in glob(one, detail=True) if posixpath.basename(m.uri) != SHARD_INDEX_NAME]
                if lists is not None and _uri.local_path(one) is None:
                    lists[0] += 1
                if not found:
                    raise FileNotFoundError(f"no shard matches {one!r}")
                out.extend((m.uri, m) for m in found)
            else:
                out.append((one, None))
    if not out:
        raise InvalidArgumentError("a shard source needs at least one shard")
    return out


#: Remote shards named one by one in a folder holding at least this many are
#: looked up with one listing of the folder instead of a request each.
_LIST_FROM = 8


def _known(shards: list[tuple[str, Any]], lists: list[int] | None = None) -> list[tuple[int, str] | None]:
    """(size, etag) of remote shards from listings, so opening a set of many
    shards costs a few listings, not a request per shard. Local shards and
    objects without an etag are asked one by one (a stat, or a head)."""
    metas = {u: m for u, m in shards if m is not None}
    folders: dict[str, list[str]] = {}
    for u, m in shards:
        if m is None and _uri.local_path(u) is None and "/" in u:
            folders.setdefault(u.rsplit("/", 1)[0] + "/", []).append(u)
    for folder, members in folders.items():
        if len(members) >= _LIST_FROM:
            try:
                if lists is not None:
                    lists[0] += 1
                metas.update((m.uri, m) for m in ls(folder, detail=True))
            except (OSError, InvalidArgumentError):
                pass  # asked one by one below
    out: list[tuple[int, str] | None] = []
    for u, _ in shards:
        m = metas.get(u)
        local = _uri.local_path(u) is not None
        out.append((int(m.size), str(m.etag)) if m is not None and m.etag and not local and not m.is_dir else None)
    return out


#: The ``__kind__`` of webdataset's shard index (``widsindex create``).
WIDS_KIND = "wids-shard-index-v1"
#: The name a shard index is looked for under, in the shards' common folder,
#: and written under by ``write_index=True``: ``widsindex create``'s default
#: output name. Not ``index.json``, which Streaming and LitData write in
#: their own formats into the same kind of folder.
SHARD_INDEX_NAME = "shardindex.json"
#: Remote shards counted by reading them whole from this many on are worth a
#: warning that says how to write an index instead.
_WARN_FROM = 8


def _split(uri: str) -> tuple[str | None, str]:
    """(scheme, rest) of a remote URI, or (None, absolute path) of a local one."""
    path = _uri.local_path(uri)
    if path is not None:
        return None, os.path.abspath(path)
    scheme, _, rest = uri.partition("://")
    return scheme, rest


def _folder(uri: str) -> str:
    """The folder ``uri`` sits in, in the URI's own form."""
    scheme, rest = _split(uri)
    if scheme is None:
        return os.path.dirname(rest)
    return f"{scheme}://{posixpath.dirname(rest)}"


def _under(folder: str, url: str) -> str:
    """``url`` from a shard index, resolved against the index's ``folder`` the
    way wids does: a URL with a scheme stands as it is; an absolute path keeps
    the folder's scheme and bucket; anything else is joined and normalized."""
    if _uri.scheme(url) is not None:
        return url
    scheme, rest = _split(folder)
    if scheme is None:
        return os.path.normpath(os.path.join(rest, url))
    if url.startswith("/"):
        return f"{scheme}://{rest.split('/', 1)[0]}{url}"
    return f"{scheme}://{posixpath.normpath(posixpath.join(rest, url))}"


def _key(uri: str) -> str:
    """What two names of one shard have in common (local: the absolute path)."""
    scheme, rest = _split(uri)
    return rest if scheme is None else f"{scheme}://{rest}"


def _relative(folder: str, uri: str) -> str:
    """``uri`` relative to ``folder`` when it lies below it, else absolute."""
    scheme, rest = _split(uri)
    fscheme, frest = _split(folder)
    if scheme != fscheme:
        return uri
    if scheme is None:
        return os.path.relpath(rest, frest).replace(os.sep, "/") if rest.startswith(frest.rstrip(os.sep) + os.sep) else rest
    return rest[len(frest) + 1 :] if rest.startswith(frest.rstrip("/") + "/") else uri


def _common_folder(uris: Sequence[str]) -> str | None:
    """The deepest folder holding every shard (same scheme and bucket), or None."""
    parts = [_split(u) for u in uris]
    schemes = {scheme for scheme, _ in parts}
    if len(schemes) != 1:
        return None
    (scheme,) = schemes
    if scheme is None:
        return os.path.commonpath([os.path.dirname(p) for _, p in parts])
    folders = [posixpath.dirname(p).split("/") for _, p in parts]
    common: list[str] = []
    for segs in zip(*folders):
        if len(set(segs)) != 1:
            break
        common.append(segs[0])
    if not common or not common[0]:
        return None  # different buckets
    return f"{scheme}://{'/'.join(common)}"


@dataclass(frozen=True)
class ShardIndexFile:
    """A ``wids-shard-index-v1`` file as read: its URI, its size in bytes,
    and per shard the URL resolved against the index's folder (or the
    index's ``base``), ``nsamples`` and ``filesize`` (None when absent)."""

    uri: str
    nbytes: int
    urls: list[str]
    counts: list[int]
    sizes: list[int | None]

    def lookup(self, shards: Sequence[str]) -> tuple[list[int], list[int | None]] | None:
        """Counts and sizes of ``shards`` in their order, or None when the
        index lacks one of them."""
        at = {_key(u): i for i, u in enumerate(self.urls)}
        found = [at.get(_key(u)) for u in shards]
        if any(i is None for i in found):
            return None
        return [self.counts[i] for i in found if i is not None], [self.sizes[i] for i in found if i is not None]


def _is_wids(doc: Any) -> bool:
    if not isinstance(doc, dict) or not isinstance(doc.get("shardlist"), list):
        return False
    kind = doc.get("__kind__")
    return kind == WIDS_KIND or (kind is None and doc.get("wids_version") == 1)


def parse_shard_index(uri: str, data: bytes) -> ShardIndexFile:
    """Checks and resolves the bytes of a shard index read from ``uri``.
    Keys other than ``url``, ``nsamples``, ``filesize`` (``md5sum``, ``name``,
    ``info``, ...) are accepted and ignored."""
    try:
        doc = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise CorruptDataError(f"{uri}: the shard index is not JSON ({type(e).__name__}: {e})") from None
    if not _is_wids(doc):
        kind = doc.get("__kind__") if isinstance(doc, dict) else type(doc).__name__
        raise InvalidArgumentError(
            f"{uri} is not a {WIDS_KIND} shard index (its __kind__ is {kind!r}); write one with "
            f"`python -m dataio index SHARDS --out {uri}` or webdataset's `widsindex create`"
        )
    if "datasets" in doc:
        raise InvalidArgumentError(
            f"{uri}: a shard index of several datasets (\"datasets\") is not read; open each with "
            "tar_records and combine them with dataio.mix"
        )
    folder = _folder(uri)
    base = doc.get("base")
    if isinstance(base, str) and base:
        try:
            folder = _under(folder, base)
        except InvalidURIError as e:
            raise CorruptDataError(f"{uri}: the shard index's \"base\" is not a URI ({e})") from None
    urls: list[str] = []
    counts: list[int] = []
    sizes: list[int | None] = []
    for n, entry in enumerate(doc["shardlist"]):
        url = entry.get("url") if isinstance(entry, dict) else None
        count = entry.get("nsamples") if isinstance(entry, dict) else None
        size = entry.get("filesize") if isinstance(entry, dict) else None
        if not isinstance(url, str) or not url or not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise CorruptDataError(f"{uri}: shard {n} of the shard index needs a \"url\" and an \"nsamples\" >= 0, got {entry!r}")
        try:
            urls.append(_under(folder, url))
        except InvalidURIError as e:
            raise CorruptDataError(f"{uri}: shard {n} of the shard index has a \"url\" that is not a URI ({e})") from None
        counts.append(count)
        sizes.append(size if isinstance(size, int) and not isinstance(size, bool) and size >= 0 else None)
    if not urls:
        raise InvalidArgumentError(f"{uri}: the shard index lists no shard")
    return ShardIndexFile(uri, len(data), urls, counts, sizes)


def read_shard_index(uri: str | os.PathLike[str]) -> ShardIndexFile:
    """Reads a ``wids-shard-index-v1`` file (one request, on any backend)."""
    uri = os.fspath(uri)
    return parse_shard_index(uri, read(uri))


def shard_index_doc(
    index_uri: str, shards: Sequence[str], counts: Sequence[int], sizes: Sequence[int | None], *, name: str | None = None
) -> dict[str, Any]:
    """The ``wids-shard-index-v1`` document for ``shards`` as it would be
    written at ``index_uri``: URLs relative to its folder where the shards
    lie below it, absolute otherwise; ``filesize`` where known."""
    folder = _folder(index_uri)
    entries: list[dict[str, Any]] = []
    for u, n, size in zip(shards, counts, sizes, strict=True):
        entry: dict[str, Any] = {"url": _relative(folder, u), "nsamples": int(n)}
        if size is not None:
            entry["filesize"] = int(size)
        entries.append(entry)
    doc: dict[str, Any] = {"__kind__": WIDS_KIND, "wids_version": 1, "shardlist": entries}
    if name:
        doc["name"] = name
    return doc


def _human(nbytes: int) -> str:
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if nbytes >= scale:
            return f"{nbytes / scale:,.1f} {unit}"
    return f"{nbytes} bytes"


def _spec_words(spec: Any, shards: Sequence[str]) -> str:
    """How the warning names the shards on a command line."""
    if isinstance(spec, (str, os.PathLike)):
        return shlex.quote(os.fspath(spec))
    if len(shards) <= 3:
        return " ".join(shlex.quote(u) for u in shards)
    folder = _common_folder(shards)
    suffix = os.path.commonprefix([u[::-1] for u in shards])[::-1]
    suffix = suffix[suffix.find(".") :] if "." in suffix else ""
    return shlex.quote(f"{folder}/*{suffix}") if folder else "SHARDS..."


def _find_index(shards: Sequence[str]) -> ShardIndexFile | None:
    """``shardindex.json`` in the shards' common folder, when it is a shard
    index that lists every one of them (one request; anything else: None)."""
    folder = _common_folder(shards)
    if folder is None:
        return None
    uri = _uri.join(folder, SHARD_INDEX_NAME)
    try:
        found = read_shard_index(uri)
    except FileNotFoundError:
        return None
    except (DataioError, OSError, ValueError) as e:
        log.debug("dataio: %s is not used as a shard index: %s", uri, e)
        return None
    if found.lookup(shards) is None:
        log.debug("dataio: %s does not list every shard; counting them", uri)
        return None
    return found


def _write_back(shards: Sequence[str], counts: Sequence[int], sizes: Sequence[int | None]) -> str | None:
    """Writes a shard index of ``shards`` as ``shardindex.json`` in their
    common folder, so the next fresh host opens them without reading them.
    An existing shard index there is merged into (its other shards kept);
    any other file there is left alone; a store that refuses the write (read
    only, no permission) is no error. Returns the URI written, or None."""
    folder = _common_folder(shards)
    if folder is None:
        log.debug("dataio: no shard index written: the shards share no folder")
        return None
    uri = _uri.join(folder, SHARD_INDEX_NAME)
    try:
        existing = read(uri)
    except FileNotFoundError:
        existing = None
    except (DataioError, OSError) as e:
        log.debug("dataio: no shard index written at %s: %s", uri, e)
        return None
    merged = dict(zip(shards, zip(counts, sizes, strict=True), strict=True))
    if existing is not None:
        try:
            old = parse_shard_index(uri, existing)
        except (DataioError, ValueError):
            log.debug("dataio: %s exists and is not a %s shard index: left alone", uri, WIDS_KIND)
            return None
        ours = {_key(u) for u in shards}
        kept = {u: (n, size) for u, n, size in zip(old.urls, old.counts, old.sizes, strict=True) if _key(u) not in ours}
        merged = {**kept, **merged}
    doc = shard_index_doc(uri, list(merged), [n for n, _ in merged.values()], [s for _, s in merged.values()])
    try:
        write(uri, json.dumps(doc, indent=2).encode() + b"\n")
    except (DataioError, OSError, ValueError) as e:
        log.debug("dataio: could not write the shard index %s (the shards were counted; nothing else changes): %s", uri, e)
        return None
    log.debug("dataio: wrote the shard index %s (%d shards)", uri, len(merged))
    return uri


def cache_root() -> Path:
    """Where shard indexes and the shard cache live by default."""
    env = os.environ.get("DATAIO_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "dataio" / "shards"


def _budget(cache_dir: Path, cache_bytes: int | None) -> int:
    if cache_bytes is not None:
        if not isinstance(cache_bytes, int) or isinstance(cache_bytes, bool) or cache_bytes <= 0:
            raise InvalidArgumentError(f"cache_bytes must be a positive number of bytes, got {cache_bytes!r}")
        return cache_bytes
    # Private, as the engine makes it (it refuses one others can write).
    cache_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    return min(DEFAULT_CACHE_BYTES, shutil.disk_usage(cache_dir).free // 2)


def check_shuffle(window: Any, spread: Any) -> None:
    """Refuses a shuffle window or spread that is not a positive int."""
    for name, v, what in (("shuffle_window", window, "number of samples"), ("shuffle_spread", spread, "number of windows")):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise InvalidArgumentError(f"{name} must be a positive {what}, got {v!r}")


def _names_index(spec: Any) -> bool:
    """Whether ``spec`` is one URI of a JSON file: a shard index, not a shard."""
    if not isinstance(spec, (str, os.PathLike)):
        return False
    path = os.fspath(spec).split("?", 1)[0].split("#", 1)[0]
    return path.endswith(".json") and not any(c in path for c in "*?[{")


def shard_set(
    fmt: str,
    uris: Any,
    *,
    gunzip: bool | None = None,
    check_crc: bool = True,
    shuffle_window: int = DEFAULT_SHUFFLE_WINDOW,
    shuffle_spread: int = DEFAULT_SHUFFLE_SPREAD,
    cache: bool = True,
    cache_dir: str | os.PathLike[str] | None = None,
    cache_bytes: int | None = None,
    index_dir: str | os.PathLike[str] | None = None,
    index: str | os.PathLike[str] | None = None,
    write_index: bool = False,
) -> ShardRecords:
    check_shuffle(shuffle_window, shuffle_spread)
    if index is None and _names_index(uris):
        index, uris = uris, None
    given = read_shard_index(index) if index is not None else None
    lists = [0]
    named = _expand(uris, lists) if uris is not None else [(u, None) for u in (given.urls if given else [])]
    shards = [u for u, _ in named]
    if given is not None and given.lookup(shards) is None:
        missing = [u for u in shards if given.lookup([u]) is None]
        raise InvalidArgumentError(
            f"the shard index {given.uri} does not list {len(missing)} of the {len(shards)} shards, "
            f"e.g. {', '.join(missing[:3])}; write it again over these shards (`python -m dataio index`)"
        )
    found = given if given is not None else _find_index(shards)
    root = cache_root()
    index_path = Path(index_dir) if index_dir is not None else root / "index"
    remote = any(_uri.local_path(u) is None for u in shards)
    cdir = (Path(cache_dir) if cache_dir is not None else root / "cache") if cache and remote else None
    common: dict[str, Any] = dict(
        index_dir=str(index_path),
        known=_known(named, lists),
        gunzip=gunzip,
        check_crc=check_crc,
        window=shuffle_window,
        spread=shuffle_spread,
        cache_dir=str(cdir) if cdir is not None else None,
        cache_bytes=_budget(cdir, cache_bytes) if cdir is not None else 0,
    )

    def before_counting(n: int, nbytes: int) -> None:
        # Said once, before the first shard is read, where it costs most:
        # remote shards, every fresh host, more than a handful; for tar, the
        # format a shard index (and `python -m dataio index`) is written for.
        if fmt != "tar" or not remote or n < _WARN_FROM:
            return
        out = _uri.join(_common_folder(shards) or "DIR", SHARD_INDEX_NAME)
        log.warning(
            "dataio: reading %d %s shards whole (%s) to count their samples before the first batch, since no shard "
            "index covers them; every fresh host does this again. Write one once: `python -m dataio index %s --out %s` "
            "(found there by name next time, or pass index=%r), or pass write_index=True to have this run write it",
            n, fmt, _human(nbytes), _spec_words(uris, shards), out, out,
        )

    native = None
    if found is not None:
        counts, sizes = found.lookup(shards) or ([], [])
        try:
            native = _native.ShardSet(fmt, shards, counts=counts, sizes=sizes, counted_by=found.uri, **common)
        except CorruptDataError as e:
            if given is not None:
                raise
            # A shard index found by name that no longer fits the shards is
            # not the user's word: count them instead, as without one.
            log.debug("dataio: the shard index %s is stale (%s); counting the shards", found.uri, e)
            found = None
    if native is None:
        native = _native.ShardSet(fmt, shards, before_counting=before_counting, **common)
        if write_index:
            _write_back(shards, list(native.counts), list(native.sizes))
    # A copy opened elsewhere (a worker process, Ray) takes its counts from
    # the same index, found by name or given, so both see one layout.
    args = (fmt, shards, gunzip, check_crc, shuffle_window, shuffle_spread, cache, cache_dir, cache_bytes, index_dir, found.uri if found else None)
    return ShardRecords(native, args, index_bytes=found.nbytes if found is not None else 0, lists=lists[0])


class ShardRecords(Sequence[dict[str, Any]]):
    """A sized, indexed source over shards (see the module docstring).

    ``len()`` is the number of samples; ``records[i]`` is sample ``i`` in
    storage order as a dict (for inspection; the loader does not go through
    it). ``shards`` and ``counts`` describe the shards; ``shard_index`` is the
    shard index the counts came from (None when the shards were counted);
    ``stats()`` counts shards opened, bytes read from the store (shards, and
    the shard index) and the cache's hits, misses, bytes fetched and
    evictions."""

    def __init__(self, native: Any, args: tuple[Any, ...], *, index_bytes: int = 0, lists: int = 0) -> None:
        self._dataio_native = native
        self._args = args
        self._index_bytes = index_bytes
        self._lists = lists

    def __len__(self) -> int:
        return len(self._dataio_native)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        if not isinstance(i, int):
            raise TypeError(f"shard records are indexed by int, not {type(i).__name__}")
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"sample {i} is out of range ({n} samples)")
        return self._dataio_native.record(i)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for i in range(len(self)):
            yield self._dataio_native.record(i)

    def _dataio_layout(self) -> tuple[list[int], int, int]:
        return list(self._dataio_native.counts), int(self._dataio_native.window), int(self._dataio_native.spread)

    def _dataio_source_stats(self) -> dict[str, Any]:
        """The native counters, and ``requests`` to the store by kind since
        the source opened: ``HEAD`` (a shard's identity: at most one per
        remote shard per epoch), ``GET`` (a shard read whole) and ``LIST``
        (the listings that named the shards, when the source opened)."""
        out = {**self._dataio_native.stats(), "index_bytes_read": self._index_bytes}
        out["requests"] = {**out.get("requests", {}), "LIST": self._lists}
        return out

    @property
    def shards(self) -> list[str]:
        return list(self._dataio_native.uris)

    @property
    def counts(self) -> list[int]:
        return list(self._dataio_native.counts)

    @property
    def sizes(self) -> list[int]:
        """Stored bytes per shard (compressed, for gzip shards)."""
        return list(self._dataio_native.sizes)

    @property
    def shard_index(self) -> str | None:
        """The URI of the shard index the counts came from, or None."""
        return self._dataio_native.counted_by

    @property
    def shuffle_window(self) -> int:
        return int(self._dataio_native.window)

    @property
    def shuffle_spread(self) -> int:
        return int(self._dataio_native.spread)

    def stats(self) -> dict[str, Any]:
        return self._dataio_source_stats()

    def __reduce__(self) -> Any:
        fmt, shards, *rest = self._args
        return (_reopen, (fmt, shards, *rest))

    def __repr__(self) -> str:
        return f"<dataio shard records: {len(self)} samples in {len(self.counts)} {self._args[0]} shards>"


def _reopen(fmt: str, shards: list[str], gunzip: Any, check_crc: bool, window: int, spread: int, cache: bool, cache_dir: Any, cache_bytes: Any, index_dir: Any, index: Any = None) -> ShardRecords:
    return shard_set(fmt, shards, gunzip=gunzip, check_crc=check_crc, shuffle_window=window, shuffle_spread=spread, cache=cache, cache_dir=cache_dir, cache_bytes=cache_bytes, index_dir=index_dir, index=index)
