"""The pipeline DSL: an immutable, picklable plan built from stages.

    pipe = dataio.pipeline(
        dataio.map(lambda r: {"image": r["path"], "label": r["class_id"]}),
        dataio.slot("image").decode_image(mode="rgb").resize_short(256)
            .center_crop(h=224, w=224).normalize("imagenet"),
        dataio.slot("label").decode_bytes(),
        dataio.batch(64, drop_last=True, prefetch=4),
    )

Building a pipeline does no work; it validates everything it can (one shape
stage, known ops, parameter types, a decoder per slot) and raises
:class:`dataio.errors.PlanError` naming the stage. ``bind(records).run(...)``
starts the native runtime.
"""

from __future__ import annotations

import hashlib
import json
import keyword
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from . import _native
from . import transforms as T
from ._ops import BUILTIN_OPS
from ._ops_generated import SlotOps
from ._plugins import BUILTIN, host, tensor_words
from .cond import Pred
from .contract import COLLATE_KEY, EpochJob
from .errors import PlanError
from .jax import JaxLoader
from .loader import Loader, epoch_job
from .packing import DEFAULT_WINDOW, PackSpec, check_slot, make_spec
from .transforms import Op, plugin_package_hint, plugin_signature, positional_params

if TYPE_CHECKING:
    from .contract import Executor
    from .errors import RowError

__all__ = [
    "Slot",
    "Map",
    "BatchStage",
    "Pipeline",
    "BoundPipeline",
    "slot",
    "map",
    "batch",
    "collate",
    "group_by",
    "pack",
    "pipeline",
]


class _Frozen:
    __slots__ = ()

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable; its methods return new objects")

    def _set(self, **kw: Any) -> None:
        for k, v in kw.items():
            object.__setattr__(self, k, v)


class _Branch(_Frozen):
    __slots__ = ("pred", "then_ops", "otherwise_ops")
    pred: Pred
    then_ops: tuple[Op | _Branch, ...]
    otherwise_ops: tuple[Op | _Branch, ...]

    def __init__(self, pred: Pred, then_ops: tuple[Op | _Branch, ...], otherwise_ops: tuple[Op | _Branch, ...]) -> None:
        self._set(pred=pred, then_ops=then_ops, otherwise_ops=otherwise_ops)

    def to_json(self) -> dict[str, Any]:
        return {
            "op": "when",
            "pred": self.pred.to_json(),
            "then": [o.to_json() for o in self.then_ops],
            "otherwise": [o.to_json() for o in self.otherwise_ops],
        }

    def __repr__(self) -> str:
        then = ", ".join(repr(o) for o in self.then_ops)
        other = ", ".join(repr(o) for o in self.otherwise_ops)
        return f"when({self.pred!r}).then({then}).otherwise({other})"

    def __reduce__(self) -> Any:
        return (_Branch, (self.pred, self.then_ops, self.otherwise_ops))


def _as_ops(ops: tuple[Any, ...], where: str) -> tuple[Op | _Branch, ...]:
    out: list[Op | _Branch] = []
    for o in ops:
        if isinstance(o, Slot):
            out.extend(o.ops)
        elif isinstance(o, (Op, _Branch)):
            out.append(o)
        else:
            raise PlanError(f"{where}: expected ops from dataio.transforms, got {o!r}")
    for o in out:
        if isinstance(o, Op) and o.kind == "decode":
            raise PlanError(f"{where}: a branch cannot decode ({o.name}); the slot's decoder comes first")
    return tuple(out)


class _When(_Frozen):
    __slots__ = ("_slot", "_pred")
    _slot: Slot
    _pred: Pred

    def __init__(self, slot: Slot, pred: Pred) -> None:
        self._set(_slot=slot, _pred=pred)

    def then(self, *ops: Any) -> _Then:
        return _Then(self._slot, self._pred, _as_ops(ops, f"slot {self._slot.name!r}, when(...).then"))


class _Then(_Frozen):
    __slots__ = ("_slot", "_pred", "_ops")
    _slot: Slot
    _pred: Pred
    _ops: tuple[Op | _Branch, ...]

    def __init__(self, slot: Slot, pred: Pred, ops: tuple[Op | _Branch, ...]) -> None:
        self._set(_slot=slot, _pred=pred, _ops=ops)

    def otherwise(self, *ops: Any) -> Slot:
        other = _as_ops(ops, f"slot {self._slot.name!r}, when(...).otherwise")
        return self._slot._append(_Branch(self._pred, self._ops, other))

    def end(self) -> Slot:
        """Close the branch with nothing on the other side."""
        return self.otherwise()


class Slot(_Frozen, SlotOps):
    """One output of the pipeline: reads record field ``field`` (default:
    the slot's name), decodes it, and transforms it. Methods return a new
    slot; the chain is the op order."""

    __slots__ = ("name", "field", "optional", "stack", "active", "ops")
    name: str
    field: str  # the record field read (default: the slot's name)
    optional: bool
    stack: str  # "auto" or "never"
    active: Pred | None
    ops: tuple[Op | _Branch, ...]

    def __init__(
        self,
        name: str,
        *,
        field: str | None = None,
        optional: bool = False,
        stack: str = "auto",
        active: Pred | None = None,
        ops: tuple[Op | _Branch, ...] = (),
    ) -> None:
        if not isinstance(name, str) or not name:
            raise PlanError("dataio.slot() needs a name")
        if stack not in ("auto", "never"):
            raise PlanError(f"slot {name!r}: stack must be 'auto' or 'never'")
        self._set(name=name, field=field or name, optional=bool(optional), stack=stack, active=active, ops=tuple(ops))

    def _append(self, o: Op | _Branch) -> Slot:
        if isinstance(o, Op) and o.kind == "decode" and self.ops:
            raise PlanError(f"slot {self.name!r}: {o.name} must be the first op (a slot has exactly one decoder)")
        if not self.ops and isinstance(o, Op) and o.kind != "decode":
            raise PlanError(f"slot {self.name!r} has no decoder: start it with {_decoders_list()} before {o.name}")
        return Slot(self.name, field=self.field, optional=self.optional, stack=self.stack, active=self.active, ops=(*self.ops, o))

    def _add(self, name: str, *args: Any, **kwargs: Any) -> Slot:
        """Appends ``dataio.transforms.<name>(*args, **kwargs)``; a parameter error names this slot."""
        try:
            o = getattr(T, name)(*args, **kwargs)
        except PlanError as e:
            raise PlanError(f"slot \"{self.name}\", {e}") from None
        return self._append(o)

    def apply(self, o: Op | str, **params: Any) -> Slot:
        """Append an op: a factory result, or a registered op by name,
        built-in or a plugin's (``apply("invert", amount=3)``); the
        parameters are checked now."""
        if isinstance(o, str):
            try:
                o = T.op(o, **params)
            except PlanError as e:
                raise PlanError(f"slot \"{self.name}\", {e}") from None
        elif params:
            raise PlanError("apply(op) takes parameters only with an op name")
        return self._append(o)

    def __getattr__(self, name: str) -> Callable[..., Slot]:
        """A plugin's op as a method: ``slot("x").decode_bytes().invert(amount=3)``
        is ``.apply("invert", amount=3)``; positional parameters bind in the
        order the op declared them (``tokenize("tokenizer.json")``). Names of
        the slot's own methods and attributes stay theirs: use ``apply`` for
        an op named like one."""
        if name.startswith("_"):
            raise AttributeError(name)
        spec = host.op(name)  # loads plugins; a PluginError when two registered the name
        if spec is None and plugin_package_hint(name):
            raise PlanError(f"slot \"{self.name}\": op {name!r} {plugin_package_hint(name)}{host.failed_note()}")
        if spec is None or spec.plugin == BUILTIN:
            raise AttributeError(
                f"'Slot' object has no attribute {name!r}, and no installed plugin registers an op of that name "
                f"(dataio.plugins.list_ops() lists the ops)"
            )

        def plugin_op(*args: Any, **params: Any) -> Slot:
            try:
                params = positional_params(spec, args, params)
            except PlanError as e:
                raise PlanError(f"slot \"{self.name}\", {e}") from None
            return self.apply(name, **params)

        plugin_op.__name__ = plugin_op.__qualname__ = name
        plugin_op.__doc__ = spec.description or f"The op {name!r} of plugin {spec.plugin!r}."
        plugin_op.__signature__ = plugin_signature(spec)  # type: ignore[attr-defined]
        return plugin_op

    def __dir__(self) -> Iterable[str]:
        plugin_ops = [n for n, spec in host.ops().items() if spec.plugin != BUILTIN and _method_name(n)]
        return sorted({*super().__dir__(), *plugin_ops})

    def active_when(self, pred: Pred) -> Slot:
        """Gate the slot on a field predicate, checked before any read."""
        if not isinstance(pred, Pred):
            raise PlanError(f"slot {self.name!r}: active_when takes a dataio.cond predicate")
        if pred.uses_shape:
            raise PlanError(f"slot {self.name!r}: active_when runs before any read, so it can test fields (cond.col), not shapes")
        if not self.optional:
            raise PlanError(f"slot {self.name!r}: active_when needs dataio.slot({self.name!r}, optional=True)")
        return Slot(self.name, field=self.field, optional=True, stack=self.stack, active=pred, ops=self.ops)

    def when(self, pred: Pred) -> _When:
        """Branch on a predicate after decode: ``.when(p).then(ops...).otherwise(ops...)``."""
        if not isinstance(pred, Pred):
            raise PlanError(f"slot {self.name!r}: when() takes a dataio.cond predicate")
        if not self.ops:
            raise PlanError(f"slot {self.name!r}: branches come after the decoder")
        return _When(self, pred)

    # The shorthands of the built-in ops (slot.resize(...)) come from SlotOps,
    # generated from the op table into _ops_generated.py.

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "field": self.field,
            "optional": self.optional,
            "stack": self.stack,
            "active_when": self.active.to_json() if self.active is not None else None,
            "ops": [o.to_json() for o in self.ops],
        }

    def __repr__(self) -> str:
        head = f"slot({self.name!r}" + (f", field={self.field!r}" if self.field != self.name else "") + (", optional=True" if self.optional else "") + ")"
        gate = f".active_when({self.active!r})" if self.active is not None else ""
        return head + gate + "".join(_chain_repr(o) for o in self.ops)

    def __reduce__(self) -> Any:
        return (_rebuild_slot, (self.name, self.field, self.optional, self.stack, self.active, self.ops))


def _method_name(name: str) -> bool:
    """Whether ``slot.<name>(...)`` reaches plugin op ``name`` (not a slot method)."""
    return name.isidentifier() and not keyword.iskeyword(name) and not name.startswith("_") and not hasattr(Slot, name)


def _chain_repr(o: Op | _Branch) -> str:
    """One link of a slot's repr, as code that builds it again: a plugin op
    as ``.invert(...)``, or ``.apply("name", ...)`` when its name is not a
    usable method name."""
    if isinstance(o, Op) and o.name not in BUILTIN_OPS:
        if _method_name(o.name):
            return f".{o.name}({o.args_repr()})"
        return f".apply({', '.join([repr(o.name), *filter(None, [o.args_repr()])])})"
    return f".{o!r}"


def _rebuild_slot(name: str, field: str, optional: bool, stack: str, active: Pred | None, ops: tuple) -> Slot:
    return Slot(name, field=field, optional=optional, stack=stack, active=active, ops=ops)


class Map(_Frozen):
    """A Python function over records (before the shape stage) or batches (after).

    Record maps run in the loader's source thread, once per record, with the
    GIL: they cost about a microsecond each plus what the function does.
    Keep them to renaming and light arithmetic; heavy work belongs in ops."""

    __slots__ = ("fn",)
    fn: Callable[[Any], Any]

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        if not callable(fn):
            raise PlanError(f"dataio.map() takes a callable, got {fn!r}")
        self._set(fn=fn)

    def identity(self) -> str:
        fn = self.fn
        code = getattr(fn, "__code__", None)
        digest = hashlib.blake2b(code.co_code, digest_size=8).hexdigest() if code is not None else ""
        return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', type(fn).__name__)}:{digest}"

    def __repr__(self) -> str:
        return f"map({getattr(self.fn, '__qualname__', self.fn)!r})"

    def __reduce__(self) -> Any:
        return (Map, (self.fn,))


class BatchStage(_Frozen):
    """The shape stage: how records become batches."""

    __slots__ = ("kind", "size", "drop_last", "key", "prefetch", "max_open_groups", "packing")
    kind: str  # "batch", "group_by", "collate" or "pack"
    size: int | None
    drop_last: bool
    key: str | None
    prefetch: int
    max_open_groups: int | None
    packing: PackSpec | None  # pack(): its parameters (size is its window of documents)

    def __init__(
        self,
        kind: str,
        *,
        size: int | None = None,
        drop_last: bool = False,
        key: str | None = None,
        prefetch: int = 2,
        max_open_groups: int | None = None,
        packing: PackSpec | None = None,
    ) -> None:
        if not isinstance(prefetch, int) or isinstance(prefetch, bool) or prefetch < 1:
            raise PlanError(f"{kind}(): prefetch must be a positive integer, got {prefetch!r}")
        if max_open_groups is not None and (not isinstance(max_open_groups, int) or isinstance(max_open_groups, bool) or max_open_groups < 1):
            raise PlanError(f"{kind}(): max_open_groups must be a positive integer, got {max_open_groups!r}")
        if kind == "pack" and packing is None:
            raise PlanError("a pack stage is made by dataio.pack()")
        if kind == "batch" and (not isinstance(size, int) or isinstance(size, bool) or size < 1):
            raise PlanError(f"batch(size): size must be a positive integer, got {size!r}")
        if kind == "group_by" and (not isinstance(key, str) or not key):
            raise PlanError("group_by(key): key must be a field name")
        if kind == "collate":
            # Each source item is one batch and its key never comes back:
            # a group is complete when the next item starts.
            max_open_groups = 1
        self._set(kind=kind, size=size, drop_last=bool(drop_last), key=key, prefetch=prefetch, max_open_groups=max_open_groups,
                  packing=packing)

    def to_json(self) -> dict[str, Any]:
        if self.kind == "pack":
            # The engine batches documents, a window at a time; the loader packs them.
            return {"kind": "batch", "size": self.size, "drop_last": False, "prefetch": self.prefetch}
        if self.kind == "batch":
            return {"kind": "batch", "size": self.size, "drop_last": self.drop_last, "prefetch": self.prefetch}
        out = {"kind": "group_by", "key": self.key if self.kind == "group_by" else COLLATE_KEY, "prefetch": self.prefetch}
        if self.max_open_groups is not None:
            out["max_open_groups"] = self.max_open_groups
        return out

    def __repr__(self) -> str:
        if self.packing is not None:
            return repr(self.packing)
        if self.kind == "batch":
            return f"batch({self.size}, drop_last={self.drop_last}, prefetch={self.prefetch})"
        if self.kind == "group_by":
            bound = f", max_open_groups={self.max_open_groups}" if self.max_open_groups is not None else ""
            return f"group_by({self.key!r}{bound}, prefetch={self.prefetch})"
        return f"collate(prefetch={self.prefetch})"

    def __reduce__(self) -> Any:
        return (_rebuild_stage, (self.kind, self.size, self.drop_last, self.key, self.prefetch, self.max_open_groups, self.packing))


def _rebuild_stage(kind: str, size: int | None, drop_last: bool, key: str | None, prefetch: int, max_open_groups: int | None = None,
                   packing: PackSpec | None = None) -> BatchStage:
    return BatchStage(kind, size=size, drop_last=drop_last, key=key, prefetch=prefetch, max_open_groups=max_open_groups, packing=packing)


def slot(name: str, optional: bool = False, *, field: str | None = None, stack: str = "auto") -> Slot:
    """A pipeline output named ``name`` reading record field ``field`` (default ``name``).

    ``optional=True`` allows the field to be missing or None (and gating with
    ``active_when``). ``stack="auto"`` stacks variable-shape samples into one
    tensor when a batch's samples agree; ``"never"`` always gives a list."""
    return Slot(name, field=field, optional=optional, stack=stack)


def map(fn: Callable[[Any], Any]) -> Map:  # noqa: A001 - the public name dataio.map, a record map
    """A record map (before the shape stage) or a batch map (after it)."""
    return Map(fn)


def batch(size: int, drop_last: bool = False, prefetch: int = 2) -> BatchStage:
    """Fixed-size batches in schedule order; the last may be short unless ``drop_last``."""
    return BatchStage("batch", size=size, drop_last=drop_last, prefetch=prefetch)


def collate(prefetch: int = 2) -> BatchStage:
    """Each item of the record source is already one batch (a list of records)."""
    return BatchStage("collate", prefetch=prefetch)


def group_by(key: str, prefetch: int = 2, *, max_open_groups: int | None = None) -> BatchStage:
    """One batch per distinct value of record field ``key``, emitted in the
    order each value first arrived (``a, b, a, c, b, a`` gives the batches
    ``a`` ×3, ``b`` ×2, ``c`` ×1).

    A group is held open until the records end or ``max_open_groups``
    (default 64) others are open, when the oldest is emitted; a record whose
    key belongs to a group emitted that way raises an error naming the key
    and this knob. Keys that arrive contiguously (``from_sampler``) can use
    ``max_open_groups=1``: each batch is emitted as soon as the next key starts."""
    return BatchStage("group_by", key=key, prefetch=prefetch, max_open_groups=max_open_groups)


def pack(
    slot: str,
    seq_len: int,
    batch_size: int,
    strategy: str = "best_fit",
    add_eos: bool = True,
    eos_token: int | str | None = None,
    prefetch: int = 2,
    *,
    window: int = DEFAULT_WINDOW,
    pad_token: int | None = None,
    drop_last: bool = False,
    balance: bool = True,
    segment_ids: bool = False,
) -> BatchStage:
    """Packs the token documents of slot ``slot`` (a ``tokenize`` slot, or
    any slot of int token ids) into ``[batch_size, seq_len]`` batches of
    ``input_ids``, ``labels``, ``position_ids``, ``document_ids``,
    ``cu_seqlens`` and ``max_seqlen`` (see :mod:`dataio.packing`).

    * ``strategy="best_fit"`` places whole documents by best-fit decreasing
      over a block of ``window`` documents and pads the rest of each row;
      only documents longer than ``seq_len`` are split. ``"concat"``
      concatenates and cuts: no padding, documents split at row edges.
    * ``add_eos`` appends the end token to every document: ``eos_token``
      (an id or a token string), by default the tokenizer's own
      end-of-text token. Padding holds ``pad_token`` (default: the end
      token, else 0); its labels are -100 and its document_ids -1.
    * ``window``: documents per block (memory against padding: a larger
      window packs tighter); blocks are what a resume re-reads.
    * The last batch of an epoch is filled with empty rows unless
      ``drop_last``.
    * ``balance``: under ``torch.distributed`` with one loader per rank,
      every rank ends the epoch at the same batch count (a one-int gloo
      collective per batch, so ranks iterate together, as training does;
      see :class:`dataio.packing.Balancer`).
    * ``segment_ids=True`` adds ``segment_ids`` (int32, the piece's number
      in its row counted from 1, 0 on padding) and ``positions`` (int32,
      ``position_ids`` with 0 on padding): the packed-sequence inputs of
      JAX attention kernels (MaxText, splash attention).

    Packing is deterministic in (seed, epoch); ``state_dict()`` holds the
    block and what of it was delivered, so a resume continues with the next
    row without replaying the epoch."""
    spec = make_spec(slot, seq_len, batch_size, strategy, add_eos, eos_token, pad_token, window, drop_last, balance, segment_ids)
    return BatchStage("pack", size=spec.window, prefetch=prefetch, packing=spec)


class Pipeline(_Frozen):
    """An immutable plan. ``bind(records)`` attaches a record source."""

    __slots__ = ("record_maps", "slots", "shape", "batch_maps", "batch_transforms", "_compiled")
    record_maps: tuple[Map, ...]
    slots: tuple[Slot, ...]
    shape: BatchStage
    batch_maps: tuple[Map, ...]
    batch_transforms: tuple[Any, ...]
    _compiled: _native.CompiledPlan | None

    def __init__(self, *stages: Any) -> None:
        record_maps: list[Map] = []
        slots: list[Slot] = []
        batch_maps: list[Map] = []
        batch_transforms: list[Any] = []
        # Batch transforms a decoder implies (decode_audio(duration=) pads
        # its rows and adds <slot>_lengths): first, unless the pipeline
        # names the same transform of the same slot itself.
        implied: list[Any] = []
        shape: BatchStage | None = None
        for i, stage in enumerate(stages):
            where = f"pipeline stage {i}"
            if isinstance(stage, Map):
                (batch_maps if shape is not None else record_maps).append(stage)
            elif isinstance(stage, Slot):
                if shape is not None:
                    raise PlanError(f"{where} (slot {stage.name!r}): slots come before the shape stage {shape!r}")
                if not stage.ops:
                    raise PlanError(f"{where} (slot {stage.name!r}) has no decoder: start it with {_decoders_list()}")
                added, transforms = _with_companions(stage)
                for s in added:
                    if any(other.name == s.name for other in slots):
                        raise PlanError(f"{where}: two slots are named {s.name!r}")
                    slots.append(s)
                implied.extend(transforms)
            elif isinstance(stage, BatchStage):
                if shape is not None:
                    raise PlanError(f"{where}: a pipeline has exactly one shape stage; {shape!r} came first, then {stage!r}")
                shape = stage
            elif getattr(stage, "_dataio_batch_transform", False):
                if shape is None:
                    raise PlanError(f"{where}: batch transforms come after the shape stage")
                batch_transforms.append(stage)
            elif isinstance(stage, (Op, Pred)):
                raise PlanError(f"{where}: {stage!r} is an op; put it in a slot chain (dataio.slot(...).apply(op))")
            else:
                raise PlanError(f"{where}: {stage!r} is not a pipeline stage (map, slot, batch/collate/group_by/pack)")
        if not slots:
            raise PlanError("a pipeline needs at least one slot")
        own = {(t.name, t.params.get("slot")) for t in batch_transforms}
        batch_transforms[:0] = [t for t in implied if (t.name, t.params.get("slot")) not in own]
        for s in slots:
            _check_plugin_ops(s)
        if shape is None:
            raise PlanError("a pipeline needs exactly one shape stage: batch(), collate(), group_by() or pack()")
        if shape.packing is not None:
            slots = check_slot(shape.packing, slots, batch_transforms)
        self._set(
            record_maps=tuple(record_maps),
            slots=tuple(slots),
            shape=shape,
            batch_maps=tuple(batch_maps),
            batch_transforms=tuple(batch_transforms),
            _compiled=None,
        )
        self.compiled()  # native validation now, not at the first batch

    def op_names(self) -> set[str]:
        """The names of every op the slots use (both branches of a ``cond``)."""
        return _op_names(self.slots)

    def to_json(self) -> dict[str, Any]:
        builtin = set(BUILTIN_OPS)
        external = sorted({name for name in _op_names(self.slots) if name not in builtin and host.op(name) is not None})
        return {
            "version": 1,
            "slots": [s.to_json() for s in self.slots],
            "shape": self.shape.to_json(),
            "batch_ops": [t.to_json() for t in self.batch_transforms],
            "external_ops": external,
        }

    def compiled(self) -> _native.CompiledPlan:
        compiled = self._compiled
        if compiled is None:
            try:
                compiled = _native.compile_plan(json.dumps(self.to_json()))
            except ValueError as e:
                raise PlanError(str(e)) from None
            object.__setattr__(self, "_compiled", compiled)
        return compiled

    def record_map_fn(self) -> Callable[[Any], Any] | None:
        """The record maps chained into one function (``None`` when there are
        none): what planning and execution run on each raw record."""
        maps = [m.fn for m in self.record_maps]
        if not maps:
            return None

        def prepare(record: Any) -> Any:
            for fn in maps:
                record = fn(record)
            return record

        return prepare

    @property
    def signature(self) -> str:
        """Stable across processes: the native plan's hash plus the identities of the maps."""
        parts = [self.compiled().signature, *(m.identity() for m in self.record_maps), "|", *(m.identity() for m in self.batch_maps)]
        if self.shape.packing is not None:
            parts.append(self.shape.packing.identity())
        return hashlib.blake2b("\n".join(parts).encode(), digest_size=16).hexdigest()

    def describe(self) -> str:
        lines = [f"pipeline {self.signature[:12]}"]
        for m in self.record_maps:
            lines.append(f"  {m!r}")
        static = {name: (shape, dtype) for name, shape, dtype in self.compiled().slots()}
        for s in self.slots:
            shape, dtype = static[s.name]
            out = f"{dtype}{list(shape)}" if shape else (f"{dtype}[variable]" if dtype else "variable")
            lines.append(f"  {s!r}  -> {out}")
            lines += [f"      {line}" for line in _defaults_taken(s.ops)]
        lines.append(f"  {self.shape!r}")
        for t in self.batch_transforms:
            lines.append(f"  {t!r}")
        for m in self.batch_maps:
            lines.append(f"  {m!r} (on batches)")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.describe()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Pipeline) and other.signature == self.signature

    def __hash__(self) -> int:
        return hash(self.signature)

    def __reduce__(self) -> Any:
        return (Pipeline, (*self.record_maps, *self.slots, self.shape, *self.batch_transforms, *self.batch_maps))

    def bind(self, records: Iterable[Any]) -> BoundPipeline:
        """Attach a record source: a sequence (len + indexing: shuffle, shard
        padding and resume by index) or any iterable of dicts."""
        return BoundPipeline(self, records)


def _defaults_taken(ops: Iterable[Op | _Branch]) -> list[str]:
    """For describe(): each op's parameters left at their defaults, with the
    values they take (``resize_short: interpolation='bilinear', ...``)."""
    from .plugins import list_ops

    specs = list_ops()
    lines: list[str] = []
    for o in ops:
        if isinstance(o, _Branch):
            lines += _defaults_taken((*o.then_ops, *o.otherwise_ops))
            continue
        spec = specs.get(o.name)
        if spec is None:
            continue
        taken = [
            f"{name}={getattr(p, 'default', None)!r}"
            for name, p in spec.params.items()
            if name not in o.params and getattr(p, "default", None) is not None
        ]
        if taken:
            lines.append(f"{o.name} defaults: {', '.join(taken)}")
    return lines


def _check_plugin_ops(s: Slot) -> None:
    """Plugin ops built as ``Op(name, params)`` skipped the checks of
    ``transforms.op``: check them here, where the pipeline is built. And
    each op against what the op before it declares it outputs: an image op
    after a plugin op that gives no image, a plugin transform after an op
    that gives another tensor than it declares it takes."""

    def walk(ops: Iterable[Op | _Branch]) -> None:
        before: tuple[str, Mapping[str, Any]] | None = None  # the op before and its declared output
        for o in ops:
            if isinstance(o, _Branch):
                walk(o.then_ops)
                walk(o.otherwise_ops)
                before = None
            elif o.name not in BUILTIN_OPS:
                try:
                    spec = T.plugin_op_spec(o.name)
                    T.check_plugin_params(spec, o.params)
                except PlanError as e:
                    raise PlanError(f"slot \"{s.name}\", {e}") from None
                if before is not None and spec.takes:
                    _check_declared_input(s.name, o.name, spec.takes, *before)
                before = (o.name, spec.output) if spec.output else None
            else:
                if before is not None and o.name in IMAGE_OPS and before[0] not in BUILTIN_OPS:
                    _check_image_input(s.name, o.name, *before)
                output = _builtin_output(o, before[1] if before else {})
                before = (o.name, output) if output else None

    walk(s.ops)


#: Built-in ops that take a uint8 image [H, W, C] (or a clip [T, H, W, C]).
IMAGE_OPS = frozenset({
    "resize", "resize_short", "resize_long", "center_crop", "crop", "random_crop", "random_resized_crop",
    "hflip", "vflip", "normalize", "to_chw", "encode_image",
})

#: Built-in image ops whose output keeps the uint8 image's rank (3, or 4 for a clip).
_GEOMETRY_OPS = IMAGE_OPS - {"normalize", "to_chw", "encode_image"}


def _builtin_output(o: Op, before: Mapping[str, Any]) -> dict[str, Any]:
    """What a built-in op is known to output, as a plugin declares it
    (``{}``: not known here, and nothing after it is checked)."""
    ndim = before.get("ndim")
    if o.name == "decode_image":
        return {"dtype": "uint8", "ndim": 3}
    if o.name in _GEOMETRY_OPS:
        return {"dtype": "uint8", "ndim": ndim}
    if o.name == "normalize":
        return {"dtype": "float32", "ndim": 4 if o.params.get("layout") == "CTHW" else ndim}
    if o.name == "to_chw":
        return {"dtype": before.get("dtype"), "ndim": ndim}
    if o.name == "cast" and isinstance(o.params.get("dtype"), str):
        return {"dtype": o.params["dtype"], "ndim": ndim}
    return {}


def _check_image_input(slot: str, op: str, plugin_op: str, output: Mapping[str, Any]) -> None:
    """An image op after a plugin op that declares an output it cannot take
    (a float32 [N, 3] point cloud) is refused where the pipeline is built."""
    dtype, ndim = output.get("dtype"), output.get("ndim")
    if (dtype is not None and dtype != "uint8") or (ndim is not None and ndim not in (3, 4)):
        raise PlanError(
            f"slot \"{slot}\", op {op}: needs a uint8 image [H, W, C] (or a clip [T, H, W, C]), but {plugin_op} "
            f"before it declares {tensor_words(output)}; cast or convert first"
        )


def _check_declared_input(slot: str, op: str, takes: Mapping[str, Any], op_before: str, gives: Mapping[str, Any]) -> None:
    """A plugin transform that declares what it takes, after an op whose
    output is known not to be that, is refused where the pipeline is built."""
    clash = [
        key for key in ("dtype", "ndim")
        if takes.get(key) is not None and gives.get(key) is not None and takes[key] != gives[key]
    ]
    if clash:
        raise PlanError(
            f"slot \"{slot}\", op {op}: takes {tensor_words(takes)}, but {op_before} before it gives "
            f"{tensor_words(gives)}; cast or convert first"
        )


def _op_names(slots: Iterable[Slot]) -> set[str]:
    names: set[str] = set()

    def walk(ops: Iterable[Op | _Branch]) -> None:
        for o in ops:
            if isinstance(o, _Branch):
                walk(o.then_ops)
                walk(o.otherwise_ops)
            else:
                names.add(o.name)

    for s in slots:
        walk(s.ops)
    return names


def _with_companions(slot: Slot) -> tuple[list[Slot], list[Any]]:
    """``slot`` and the slots its plugin decoder adds beside it, and the
    batch transforms it implies (the op's ``companions``:
    ``decode_video(audio=True)`` adds ``<slot>_audio``; ``decode_audio``
    with a ``duration`` adds ``pad_to_longest`` of its slot)."""
    first = slot.ops[0] if slot.ops else None
    if not isinstance(first, Op) or first.name in BUILTIN_OPS:
        return [slot], []
    spec = host.op(first.name)
    if spec is None or spec.companions is None:
        return [slot], []
    try:
        params, extra = spec.companions(slot.name, dict(first.params))
        main = T.op(first.name, **params)
        transforms = [e for e in extra if getattr(e, "_dataio_batch_transform", False)]
        added = [
            Slot(name, field=slot.field, optional=slot.optional, stack=slot.stack, active=slot.active,
                 ops=(T.op(op, **op_params),))
            for name, op, op_params in (e for e in extra if not getattr(e, "_dataio_batch_transform", False))
        ]
    except PlanError as e:
        raise PlanError(f"slot \"{slot.name}\", {e}") from None
    own = Slot(slot.name, field=slot.field, optional=slot.optional, stack=slot.stack, active=slot.active,
               ops=(main, *slot.ops[1:]))
    return [own, *added], transforms


def pipeline(*stages: Any) -> Pipeline:
    """Build a plan from stages: record maps, slots, one shape stage, then batch transforms and batch maps."""
    return Pipeline(*stages)


def _decoders_list() -> str:
    """The decoders a slot may start with: the built-in ones, then those the
    installed plugins register (``decode_video() (dataio-video)``)."""
    builtin = ["decode_image()", "decode_bytes()", "decode_npy()", "decode_safetensors()"]
    plugins = sorted(f"{n}() ({s.plugin})" for n, s in host.ops().items() if s.kind == "decode" and s.plugin != BUILTIN)
    names = builtin + plugins
    return ", ".join(names[:-1]) + " or " + names[-1]


class BoundPipeline:
    """A pipeline with its records; ``run(...)`` starts a loader."""

    def __init__(self, pipe: Pipeline, records: Iterable[Any]) -> None:
        self.pipeline = pipe
        self.records = records

    def run(
        self,
        output: str = "torch",
        *,
        concurrency: int | str = "auto",
        order: str = "submit",
        on_failure: str = "raise",
        log_errors: bool | Callable[[RowError], Any] = False,
        seed: int | None = None,
        shard: dict[str, Any] | None = None,
        context: Callable[[Any], Any] | None = None,
        device: str | None = None,
        epoch: int = 0,
        prefetch: int | None = None,
        executor: str | Executor | None = None,
        sharding: Any = None,
        devices: Any = None,
        prefetch_to_device: int = 2,
    ) -> Loader:
        """Start the runtime. See :class:`dataio.loader.Loader` for the options;
        ``run("jax", ...)`` gives a :class:`dataio.jax.JaxLoader`."""
        return (JaxLoader if output == "jax" else Loader)(
            self,
            output,
            concurrency=concurrency,
            order=order,
            on_failure=on_failure,
            log_errors=log_errors,
            seed=seed,
            shard=shard,
            context=context,
            device=device,
            epoch=epoch,
            prefetch=prefetch,
            executor=executor,
            sharding=sharding,
            devices=devices,
            prefetch_to_device=prefetch_to_device,
        )

    def epoch_job(
        self,
        *,
        concurrency: int | str = "auto",
        order: str = "submit",
        on_failure: str = "raise",
        log_errors: bool | Callable[[RowError], Any] = False,
        seed: int | None = None,
        shard: dict[str, Any] | None = None,
        context: Callable[[Any], Any] | None = None,
        device: str | None = None,
        epoch: int = 0,
        prefetch: int | None = None,
    ) -> EpochJob:
        """The :class:`~dataio.contract.EpochJob` of the first epoch that
        ``run(**options)`` would start, without starting anything: for an
        executor that is not a loader's (``dataio_ray.to_dataset``). The
        options are checked as ``run()`` checks them; ``log_errors`` and
        ``device`` act on delivery only and leave the job as it is."""
        return epoch_job(
            self,
            concurrency=concurrency,
            order=order,
            on_failure=on_failure,
            log_errors=log_errors,
            seed=seed,
            shard=shard,
            context=context,
            device=device,
            epoch=epoch,
            prefetch=prefetch,
        )

    def __repr__(self) -> str:
        return f"<bound {self.pipeline.signature[:12]} over {type(self.records).__name__}>"
