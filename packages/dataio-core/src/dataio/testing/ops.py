"""The op suite: :class:`OpConformance`, what every plugin decoder and
transform must do in a pipeline, native (the op ABI) or Python."""

from __future__ import annotations

import io
import random
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pytest

__all__ = ["OpConformance"]


def _npy(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    return buf.getvalue()


class OpConformance:
    """A plugin op behaves as dataio's own ops do. Subclass it in a test
    module, set the class attributes and give it a ``samples`` fixture::

        class TestMyDecoder(OpConformance):
            op = "decode_pgm"
            kind = "decode"
            native = True
            params = {"max_pixels": 1 << 20}

            @pytest.fixture
            def samples(self):
                return [make_pgm(i) for i in range(12)]   # bytes (decoders) or arrays (transforms)

    What it checks: the op is registered under its name with its kind, and
    runs natively (never calling Python) when ``native``, through its
    Python function otherwise; outputs depend
    only on (seed, epoch, record) — the same under any concurrency and after
    a mid-epoch resume; hostile input (for a decoder: empty, truncated at
    every length up to 64 bytes, random bytes, a flipped byte; for a
    transform: arrays of other dtypes, sizes and ranks) either works or is a
    ``RowError`` naming the op and the record, never another exception, a
    crash or a hang; and
    ``on_failure="skip"`` delivers every other record; every output is what
    the op declares (``output``), and an input a transform does not declare
    it takes (``takes``) is a ``RowError`` naming it; a parameter of the
    wrong type or an unknown one is refused when the pipeline is written.

    A transform's samples reach it through ``decode_npy`` (each array saved
    as .npy), so it sees exactly those arrays."""

    op: str
    kind: str  # "decode" or "transform"
    native: bool = True
    params: Mapping[str, Any] = {}
    #: A value of the wrong type per declared parameter (default: a str, or an int for str parameters).
    wrong_params: Mapping[str, Any] | None = None

    # -- helpers ----------------------------------------------------------------

    def _slot(self, **params: Any) -> Any:
        import dataio

        s = dataio.slot("x") if self.kind == "decode" else dataio.slot("x").decode_npy()
        return s.apply(self.op, **{**self.params, **params})

    def _pipeline(self, batch: int = 4) -> Any:
        import dataio

        return dataio.pipeline(self._slot(), dataio.batch(batch))

    def _records(self, samples: Sequence[Any]) -> list[dict[str, Any]]:
        raw = [s if self.kind == "decode" else _npy(np.asarray(s)) for s in samples]
        return [{"key": f"s{i:04d}", "x": b} for i, b in enumerate(raw)]

    @staticmethod
    def _rows(pipe: Any, records: Any, **run: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        with pipe.bind(records).run("numpy", **run) as loader:
            for b in loader:
                value = b["x"]
                for i, k in enumerate(b.keys):
                    out[k] = np.array(value[i])
        return out

    @staticmethod
    def _same(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
        return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)

    def _hostile(self, samples: Sequence[Any]) -> Iterator[bytes]:
        if self.kind == "transform":
            # A transform meets arrays it did not ask for, through decode_npy.
            a = np.asarray(samples[0])
            for odd in (a.astype(np.float64) + 0.5, a.astype(np.int16) - 300, np.zeros((0,), a.dtype),
                        np.asarray(a.flat[0]), a.reshape(1, 1, 1, 1, -1)):
                yield _npy(odd)
            return
        first = samples[0]
        yield b""
        for n in range(1, min(64, len(first))):
            yield first[:n]
        rng = random.Random(0)
        for n in (1, 7, 64, 513):
            yield bytes(rng.randrange(256) for _ in range(n))
        if first:
            flipped = bytearray(first)
            flipped[len(flipped) // 2] ^= 0xFF
            yield bytes(flipped)

    # -- the suite ----------------------------------------------------------------

    def test_registered_under_its_name_with_its_kind(self) -> None:
        from dataio.plugins import list_ops

        spec = list_ops().get(self.op)
        assert spec is not None, f"op {self.op!r} is not registered (is its plugin installed?)"
        assert spec.kind == self.kind, spec
        assert spec.native == self.native, f"op {self.op!r}: native={spec.native}, expected {self.native}"

    def test_runs_natively_or_through_python_as_declared(self, samples: Sequence[Any], monkeypatch: pytest.MonkeyPatch) -> None:
        import dataio._opcall

        calls: list[str] = []
        python_path = dataio._opcall.call_plugin_op

        def counting(*args: Any) -> Any:
            calls.append(args[1])
            return python_path(*args)

        monkeypatch.setattr(dataio._opcall, "call_plugin_op", counting)
        got = self._rows(self._pipeline(), self._records(samples))
        assert len(got) == len(samples)
        if self.native:
            assert self.op not in calls, f"the native op {self.op!r} went through Python"
        else:
            assert self.op in calls, f"the Python op {self.op!r} never ran through its function"

    def test_every_call_is_held_to_what_the_op_declares(self, samples: Sequence[Any]) -> None:
        from dataio.errors import RowError
        from dataio.plugins import list_ops

        spec = list_ops()[self.op]
        dtype, ndim = spec.output.get("dtype"), spec.output.get("ndim")
        for key, a in self._rows(self._pipeline(), self._records(samples)).items():
            assert dtype in (None, a.dtype.name) and ndim in (None, a.ndim), (
                f"{key}: {self.op} returned {a.dtype} {list(a.shape)}, it declares {dict(spec.output)}"
            )
        if self.kind == "transform" and spec.takes:
            # An input it does not declare never reaches it: a row error naming the op.
            a = np.asarray(samples[0])
            if spec.takes.get("dtype") is not None:
                odd = a.astype(np.float64 if spec.takes["dtype"] != "float64" else np.float32)
            else:
                odd = a.reshape(1, *a.shape)
            with pytest.raises(RowError, match=f"{self.op} takes ") as e:
                self._rows(self._pipeline(batch=1), [{"key": "odd", "x": _npy(odd)}])
            assert e.value.op == self.op, e.value

    def test_outputs_depend_only_on_seed_epoch_and_record(self, samples: Sequence[Any]) -> None:
        pipe, records = self._pipeline(), self._records(samples)
        a = self._rows(pipe, records, seed=11, concurrency=1)
        assert len(a) == len(samples)
        assert self._same(a, self._rows(pipe, records, seed=11, concurrency=16)), "the output depends on concurrency"
        assert self._same(a, self._rows(pipe, records, seed=11)), "the output is not deterministic"

    def test_resume_mid_epoch_gives_the_same_outputs(self, samples: Sequence[Any]) -> None:
        pipe, records = self._pipeline(batch=2), self._records(samples)
        whole = self._rows(pipe, records, seed=5)
        seen: dict[str, Any] = {}
        with pipe.bind(records).run("numpy", seed=5) as loader:
            it = iter(loader)
            b = next(it)
            for i, k in enumerate(b.keys):
                seen[k] = np.array(b["x"][i])
            state = loader.state_dict()
        with pipe.bind(records).run("numpy", seed=5) as loader:
            loader.load_state_dict(state)
            for b in loader:
                for i, k in enumerate(b.keys):
                    assert k not in seen, f"{k} delivered twice across the resume"
                    seen[k] = np.array(b["x"][i])
        assert self._same(seen, whole)

    def test_hostile_input_is_a_row_error_naming_the_op_and_record(self, samples: Sequence[Any]) -> None:
        from dataio.errors import RowError

        pipe = self._pipeline(batch=1)
        for n, data in enumerate(self._hostile(samples)):
            record = {"key": f"hostile{n}", "x": data}
            try:
                self._rows(pipe, [record])
            except RowError as e:
                assert e.op == self.op and e.key == f"hostile{n}" and e.slot == "x", (e.op, e.key, e.slot, str(e))
            # Anything else (another exception, a crash, a hang) fails the test.

    def test_skip_delivers_every_other_record(self, samples: Sequence[Any]) -> None:
        records = self._records(samples)
        bad = list(records)
        bad.insert(1, {"key": "bad-empty", "x": b""})
        bad.insert(3, {"key": "bad-noise", "x": bytes(range(256)) * 3})
        with self._pipeline().bind(bad).run("numpy", on_failure="skip") as loader:
            keys = {k for b in loader for k in b.keys}
        assert {r["key"] for r in records} <= keys

    def test_ill_typed_and_unknown_parameters_are_refused_when_written(self) -> None:
        from dataio.errors import PlanError
        from dataio.plugins import list_ops

        declared = list_ops()[self.op].params
        wrong = dict(self.wrong_params or {})
        for name, types in declared.items():
            kinds = getattr(types, "types", None) or (types if isinstance(types, tuple) else (types,))
            wrong.setdefault(name, 3 if str in kinds else "not-a-number")
        for name, value in wrong.items():
            with pytest.raises(PlanError, match=name):
                self._slot(**{name: value})
        with pytest.raises(PlanError, match="no_such_parameter"):
            self._slot(no_such_parameter=1)
