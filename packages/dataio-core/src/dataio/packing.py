"""``dataio.pack``: tokenized documents into fixed-length training sequences.

The shape stage of a language-model pipeline::

    pipe = dataio.pipeline(
        dataio.slot("text").tokenize(tokenizer="hf://gpt2/tokenizer.json"),
        dataio.pack("text", seq_len=2048, batch_size=8),
    )

Each batch holds ``input_ids``, ``labels`` (next-token targets, ``-100``
across document boundaries and on padding), ``position_ids`` (restarting at
every document piece), ``document_ids`` (the piece's number within its row,
``-1`` on padding), ``cu_seqlens`` (int32 offsets of every piece in the
flattened batch, padding runs as pieces of their own, ending at
``batch_size * seq_len``: what flash-attention's varlen kernels take) and
``max_seqlen``; with ``segment_ids=True`` also ``segment_ids`` and
``positions`` (the conventions of JAX kernels, derived from
``document_ids`` and ``position_ids`` per batch). The packing runs natively (:mod:`dataio._native` ``Packer``);
this module holds the stage's parameters, resolves the end token and drives
the packer from the loader.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _native
from .errors import CheckpointError, InvalidArgumentError, PlanError

if TYPE_CHECKING:
    from .contract import EpochRun
    from .errors import RowError

STRATEGIES = ("best_fit", "concat")
# End-of-text tokens of the common tokenizer families, most specific first.
EOS_NAMES = ("<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>", "<|eos|>", "[EOS]", "<|end|>", "<|im_end|>")
DEFAULT_WINDOW = 1024


def _positive(name: str, v: Any, most: int | None = None) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 1 or (most is not None and v > most):
        bound = f" and at most {most}" if most is not None else ""
        raise PlanError(f"pack(): {name} must be a positive integer{bound}, got {v!r}")
    return v


@dataclass(frozen=True)
class PackSpec:
    """The parameters of a :func:`pack` stage (see there)."""

    slot: str
    seq_len: int
    batch_size: int
    strategy: str
    add_eos: bool
    eos_token: int | str | None
    pad_token: int | None
    window: int
    drop_last: bool
    balance: bool = True
    # Two more outputs derived from the packed ones: the packing and its
    # resume are the same, so neither this nor balance is in identity().
    segment_ids: bool = False

    def identity(self) -> str:
        return json.dumps(
            ["pack", self.slot, self.seq_len, self.batch_size, self.strategy, self.add_eos, self.eos_token,
             self.pad_token, self.window, self.drop_last]
        )

    def __repr__(self) -> str:
        return (f"pack({self.slot!r}, seq_len={self.seq_len}, batch_size={self.batch_size}, strategy={self.strategy!r}, "
                f"add_eos={self.add_eos}, window={self.window})")


def make_spec(
    slot: str, seq_len: int, batch_size: int, strategy: str, add_eos: bool, eos_token: int | str | None,
    pad_token: int | None, window: int, drop_last: bool, balance: bool = True, segment_ids: bool = False,
) -> PackSpec:
    if not isinstance(slot, str) or not slot:
        raise PlanError(f"pack(slot): slot must be the name of the tokenized slot, got {slot!r}")
    for name, v in (("seq_len", seq_len), ("batch_size", batch_size)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise PlanError(f"pack(): {name} must be an integer, got {v!r}")
    if not isinstance(strategy, str):
        raise PlanError(f"pack(): strategy must be one of {', '.join(map(repr, STRATEGIES))}, got {strategy!r}")
    try:  # the engine's one check of the shape and the strategy, now rather than at the first batch
        _native.check_pack_shape(seq_len, batch_size, strategy)
    except (ValueError, OverflowError) as e:
        raise PlanError(str(e)) from None
    _positive("window", window, 1 << 20)
    if eos_token is not None and (isinstance(eos_token, bool) or not isinstance(eos_token, (int, str))):
        raise PlanError(f"pack(): eos_token must be a token id, a token string or None, got {eos_token!r}")
    if pad_token is not None and (isinstance(pad_token, bool) or not isinstance(pad_token, int)):
        raise PlanError(f"pack(): pad_token must be a token id or None, got {pad_token!r}")
    return PackSpec(slot, seq_len, batch_size, strategy, bool(add_eos), eos_token, pad_token, window, bool(drop_last), bool(balance),
                    bool(segment_ids))


def check_slot(spec: PackSpec, slots: Any, batch_transforms: Any) -> Any:
    """The slots of a packing pipeline: the packed slot alone, as a list of
    documents (``stack="never"``). Raises :class:`PlanError` otherwise."""
    names = [s.name for s in slots]
    if spec.slot not in names:
        raise PlanError(f"pack({spec.slot!r}): the pipeline has no slot {spec.slot!r} (slots: {', '.join(names)})")
    others = [n for n in names if n != spec.slot]
    if others:
        raise PlanError(f"pack({spec.slot!r}) makes its batches from slot {spec.slot!r} alone; slots {others} would be dropped")
    if batch_transforms:
        raise PlanError(f"pack({spec.slot!r}): batch transforms do not apply to packed batches; use a batch map (dataio.map after the shape stage)")
    (s,) = slots
    tok = tokenize_op(s)
    if tok is not None and tok.params.get("padding") is not None:
        raise PlanError(f"pack({spec.slot!r}): the documents must not be padded; drop padding= from tokenize")
    if tok is not None and "dtype" in tok.params and tok.params["dtype"] not in ("int64", "int32", "uint32"):
        raise PlanError(f"pack({spec.slot!r}): tokenize dtype must be int64, int32 or uint32, got {tok.params['dtype']!r}")
    return [type(s)(s.name, field=s.field, optional=s.optional, stack="never", active=s.active, ops=s.ops)]


def tokenize_op(slot: Any) -> Any:
    """The slot's tokenizing op: the one that takes ``tokenizer=``."""
    for o in getattr(slot, "ops", ()):
        if "tokenizer" in (getattr(o, "params", None) or {}):
            return o
    return None


def _token_id(tok: dict[str, Any], token: str) -> int | None:
    for t in tok.get("added_tokens") or []:
        if t.get("content") == token:
            return int(t["id"])
    vocab = (tok.get("model") or {}).get("vocab")
    if isinstance(vocab, dict) and token in vocab:
        return int(vocab[token])
    if isinstance(vocab, list):  # Unigram: [[piece, score], ...]
        for i, entry in enumerate(vocab):
            if isinstance(entry, list) and entry and entry[0] == token:
                return i
    return None


def resolve_tokens(spec: PackSpec, slot: Any) -> tuple[int | None, int]:
    """(end token id or None, padding id) of a pack stage over ``slot``.

    ``eos_token=None`` takes the tokenizer's own end-of-text special token;
    a string is looked up in the tokenizer; an int is used as it is."""
    eos = spec.eos_token
    tok_json: dict[str, Any] | None = None
    op = tokenize_op(slot)

    def tokenizer() -> dict[str, Any]:
        nonlocal tok_json
        if tok_json is None:
            if op is None:
                raise InvalidArgumentError(
                    f"pack({spec.slot!r}): slot {spec.slot!r} is not tokenized here, so there is no tokenizer to take "
                    "the end token from: pass eos_token=<id> (or add_eos=False)"
                )
            from .io import read

            uri = str(op.params["tokenizer"])
            try:
                tok_json = json.loads(read(uri))
            except ValueError as e:
                raise InvalidArgumentError(f"pack({spec.slot!r}): the tokenizer {uri} is not JSON: {e}") from None
        return tok_json

    eos_id: int | None = None
    if spec.add_eos:
        if isinstance(eos, int):
            eos_id = eos
        elif isinstance(eos, str):
            eos_id = _token_id(tokenizer(), eos)
            if eos_id is None:
                raise InvalidArgumentError(f"pack({spec.slot!r}): eos_token {eos!r} is not a token of {op.params['tokenizer']}")
        else:
            tok = tokenizer()
            specials = [t.get("content") for t in tok.get("added_tokens") or [] if t.get("special")]
            for name in EOS_NAMES:
                if name in specials:
                    eos_id = _token_id(tok, name)
                    break
            if eos_id is None:
                raise InvalidArgumentError(
                    f"pack({spec.slot!r}): the tokenizer {op.params['tokenizer']} has no end-of-text token "
                    f"(its special tokens: {specials or 'none'}); pass eos_token= (an id or one of them) or add_eos=False"
                )
    pad = spec.pad_token if spec.pad_token is not None else (eos_id if eos_id is not None else 0)
    return eos_id, pad


class Balancer:
    """Equal batch counts across the ranks of a ``torch.distributed`` job:
    before each packed batch the ranks agree (one int, ``MIN``, on a gloo
    group of their own) whether every one of them has a batch; at the first
    "no" every rank ends its epoch. Ranks pack their own documents, so
    their batch counts differ; this ends each epoch at the shortest rank's,
    as ``drop_last`` would; a rank that had more says so in
    ``stats()["pack"]["balance_ended_early"]``."""

    def __init__(self) -> None:
        import torch
        import torch.distributed as dist

        self._torch = torch
        self._dist = dist
        self._group = dist.new_group(backend="gloo")

    @staticmethod
    def wanted(spec: PackSpec, shard: Mapping[str, Any]) -> bool:
        """Under an initialized ``torch.distributed`` whose world is the shard's."""
        if not spec.balance or shard.get("of", 1) <= 1 or "torch.distributed" not in sys.modules:
            return False
        dist = sys.modules["torch.distributed"]
        return bool(dist.is_available() and dist.is_initialized() and dist.get_world_size() == shard["of"])

    def exchange(self, mine: bool, state: tuple[int, int, int]) -> tuple[bool, list[list[int]]]:
        """Whether every rank has a batch, and every rank's resume point
        after it (what an elastic resume needs): one all_gather of 4 ints."""
        torch, dist = self._torch, self._dist
        t = torch.tensor([int(mine), *state], dtype=torch.int64)
        out = [torch.zeros_like(t) for _ in range(dist.get_world_size(self._group))]
        dist.all_gather(out, t, group=self._group)
        return all(int(o[0]) for o in out), [[int(x) for x in o[1:].tolist()] for o in out]


def gather_states(states: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One state from the states every rank of a packed loader saved at the
    same step (rank order), which a loader with another world size can
    resume from exactly: each rank's frontier goes under
    ``state["pack"]["ranks"]``. Under ``torch.distributed`` with ``balance``
    every rank's ``state_dict()`` already holds them."""
    if not states:
        raise CheckpointError("gather_states needs the state of every rank")
    ranks = []
    for r, st in enumerate(states):
        shard = st.get("shard") or {}
        if shard.get("id") != r or shard.get("of") != len(states) or "pack" not in st:
            raise CheckpointError(f"state {r} is not rank {r} of {len(states)} of a pack() loader (shard {shard})")
        if st.get("epoch") != states[0].get("epoch") or st.get("signature") != states[0].get("signature"):
            raise CheckpointError("the states are of different epochs or pipelines")
        ranks.append([int(st["position"]), *(int(x) for x in st["pack"]["skip"])])
    out = {**states[0], "pack": {**states[0]["pack"], "ranks": ranks}}
    return out


def elastic_units(frontiers: Sequence[Sequence[int]], counts: Sequence[int], window: int, rank: int,
                  world: int) -> Iterator[tuple[int, int, tuple[int, int]]]:
    """The units rank ``rank`` of ``world`` packs after an elastic resume:
    (old rank, block start, skip), in its order. A unit is one block of one
    old rank's remaining schedule (from its frontier); the units of all old
    ranks, ordered by (block, old rank), are dealt round robin."""
    if not frontiers:
        return
    u = 0
    first = min(f[0] for f in frontiers) // window * window
    for k in range(first, max(counts, default=0), window):
        for r, (pos, a, b) in enumerate(frontiers):
            if k < pos or k >= counts[r]:
                continue
            if u % world == rank:
                yield r, k, ((a, b) if k == pos else (0, 0))
            u += 1


class ElasticRuns:
    """An :class:`EpochRun` over elastic units: each unit is one block of an
    old rank's schedule, run on its own (``start`` makes the run of old rank
    ``r`` from position ``k``) and read for one batch. ``position`` counts
    this rank's units times the window; ``unit`` is the (key, skip) of the
    last unit read, for the packer."""

    def __init__(self, start: Callable[[int, int], EpochRun], units: Iterator[tuple[int, int, tuple[int, int]]],
                 window: int, first_unit: int) -> None:
        self._start = start
        self._units = units
        self._window = window
        self._done = 0
        for _ in range(first_unit):  # units delivered before a resume of this elastic epoch
            next(self._units, None)
            self._done += 1
        self.unit: tuple[int, tuple[int, int]] = (0, (0, 0))
        self._stats: dict[str, Any] = {}

    @property
    def position(self) -> int:
        return self._done * self._window

    def next_batch(self) -> Any:
        nxt = next(self._units, None)
        if nxt is None:
            return None
        r, k, skip = nxt
        run = self._start(r, k)
        try:
            raw = run.next_batch()
        finally:
            self._stats = run.stats()
            run.close()
        self._done += 1
        self.unit = (k, skip)
        return raw

    def stats(self) -> dict[str, Any]:
        return dict(self._stats)

    def close(self) -> None:
        self._units = iter(())


def segments_of(document_ids: Any, position_ids: Any) -> dict[str, np.ndarray]:
    """``segment_ids`` (int32: the piece's number in its row from 1, 0 on
    padding) and ``positions`` (int32: ``position_ids``, 0 on padding) of
    a packed batch, as MaxText and splash attention take them; one
    vectorized pass over the batch."""
    doc = np.from_dlpack(document_ids)
    real = doc >= 0
    return {
        "segment_ids": (doc + 1).astype(np.int32, copy=False),
        "positions": np.where(real, np.from_dlpack(position_ids), 0).astype(np.int32, copy=False),
    }


class PackedRun:
    """Drives a :class:`_native.Packer` from an epoch's runs of document
    blocks (one block per internal batch of ``window`` records)."""

    def __init__(self, spec: PackSpec, eos: int | None, pad: int, seed: int | None, epoch: int, start: int,
                 skip: tuple[int, int], sources_of: Any = None) -> None:
        self.spec = spec
        self.packer = _native.Packer(spec.seq_len, spec.batch_size, spec.strategy, eos, pad, seed, epoch,
                                     not spec.drop_last, start, skip)
        self.fed = start
        self.done = False
        self.errors: list[RowError] = []
        self.sources_of = sources_of
        self.balancer: Balancer | None = None
        self.balanced_end = False
        self.balance_ended_early = False
        # Every rank's resume point after the last batch (from the balancer).
        self.ranks: list[list[int]] | None = None

    def next(self, run: EpochRun) -> tuple[dict[str, Any], list[RowError]] | None:
        """The next packed batch (native tensors, ``max_seqlen`` an int) and
        the row errors of the documents skipped since the last one; with a
        balancer, None once any rank has none."""
        if self.balanced_end:
            return None
        got = self._next(run)
        if self.balancer is None:
            return got
        block, (a, b) = self.state()
        all_have, self.ranks = self.balancer.exchange(got is not None, (block, a, b))
        if not all_have:
            self.balanced_end = True
            # What this rank had left is not packed to be counted: it
            # reports that it ended early (its documents come next epoch).
            self.balance_ended_early = got is not None
            return None
        return got

    def _next(self, run: EpochRun) -> tuple[dict[str, Any], list[RowError]] | None:
        packer = self.packer
        while not packer.has_batch():
            if self.done:
                return None
            raw = run.next_batch()
            if raw is None:
                packer.finish()
                self.done = True
                continue
            position = run.position
            self.errors.extend(raw.errors())
            groups = [int(g) for g in self.sources_of(raw.indices)] if self.sources_of is not None else None
            unit = getattr(run, "unit", None)
            # An elastic unit is another rank's block, keyed where it was read.
            key, skip = unit if unit is not None else (None, (0, 0))
            if isinstance(raw, _native.RawBatch):
                # The engine's batch: the packer takes the token slot out
                # natively, with no Python object per document.
                packer.feed_batch(self.fed, position - self.fed, raw, self.spec.slot, groups, key, skip)
            else:  # executed elsewhere (numpy arrays)
                docs = raw.take_slots().get(self.spec.slot, [])
                if not isinstance(docs, list):  # one document per row, stacked: rows of equal length
                    docs = list(docs)
                packer.feed(self.fed, position - self.fed, docs, groups, key, skip)
            self.fed = position
        out = packer.next_batch()
        assert out is not None, "has_batch() said there is one"
        if self.spec.segment_ids:
            out.update(segments_of(out["document_ids"], out["position_ids"]))
        errors, self.errors = self.errors, []
        return out, errors

    def state(self) -> tuple[int, tuple[int, int]]:
        block, a, b = self.packer.state()
        return int(block), (int(a), int(b))

    def stats(self) -> dict[str, Any]:
        st = dict(self.packer.stats())
        delivered = st["sequences"] * self.spec.seq_len
        st["padding_fraction"] = st["padding_tokens"] / delivered if delivered else 0.0
        if self.balancer is not None:
            st["balance_ended_early"] = self.balance_ended_early
        groups = st.pop("group_tokens")
        if self.sources_of is not None:
            total = sum(n for _, n in groups)
            st["source_tokens"] = {int(s): int(n) for s, n in groups}
            st["source_token_shares"] = {int(s): n / total for s, n in groups} if total else {}
        return st
