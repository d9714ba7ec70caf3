"""``python -m dataio new-plugin NAME [--native] DIR``: a standalone op
plugin, ready to build, install, test and publish outside this repository.

The package it writes (``dataio-NAME``, module ``dataio_NAME``) has the
shape docs/plugins.md describes: ``pyproject.toml``, ``README.md``,
``LICENSE``, ``src/dataio_NAME/{__init__,plugin}.py``, a conformance test
under ``tests/``, and with ``--native`` a ``Cargo.toml`` and ``rust/lib.rs``.
Its two ops are a decoder ``decode_NAME(width, max_items)`` (little-endian
float32 records to float32 ``[N, width]``) and a transform ``NAME_center()``
that takes no parameters: replace them with yours.

The native variant depends on the op ABI crate ``dataio-abi`` through a
**vendored copy** (``vendor/dataio-abi``), written from the sources this
dataio was built with (``dataio._native.abi_crate_sources()``). That copy is
exactly the ABI the plugin will be loaded by, it needs no registry release
or git access to build, and its relative path keeps ``maturin sdist``
portable; every other dependency is a plain registry version. docs/arch.md
says why not a path into an installed dataio (absolute, machine-specific)
or a git source (needs the network, and may drift from the installed core).
"""

from __future__ import annotations

import argparse
import re
import tomllib
from pathlib import Path
from typing import Any

from .errors import InvalidArgumentError

NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "new-plugin",
        help="write a standalone op plugin package (a decoder and a transform) to build and publish",
        description=(
            "Writes the package dataio-NAME into DIR: a decoder decode_NAME and a parameterless transform "
            "NAME_center, as Python ops, or with --native as native ops declared once in Rust (op ABI v2) "
            "with the op ABI crate vendored. It builds and installs with `pip install DIR` (or `maturin develop` "
            "for --native) and its tests run the conformance suites."
        ),
    )
    p.add_argument("name", metavar="NAME", help="the plugin's short name: lowercase letters, digits and _ (e.g. pcd)")
    p.add_argument("dir", metavar="DIR", help="where to write the package (created; must be empty if it exists)")
    p.add_argument("--native", action="store_true", help="Rust ops behind the op ABI (built with maturin)")


def run(args: argparse.Namespace) -> int:
    written = write(args.name, Path(args.dir), native=args.native)
    print(f"wrote {len(written)} files of dataio-{args.name.replace('_', '-')} to {args.dir}")
    build = "maturin develop --uv  # or: pip install ." if args.native else "pip install -e ."
    print(f"next: cd {args.dir} && {build} && python -m pytest tests")
    return 0


def write(name: str, dest: Path, *, native: bool) -> list[Path]:
    """Writes the package; returns the files written. A bad name or a
    non-empty ``dest`` is an :class:`InvalidArgumentError`."""
    if not NAME.match(name):
        raise InvalidArgumentError(f"plugin name {name!r}: use lowercase letters, digits and _, starting with a letter")
    if dest.exists() and any(dest.iterdir()):
        raise InvalidArgumentError(f"{dest} is not empty; new-plugin writes a whole package into an empty directory")
    from . import __version__

    v = {
        "name": name,
        "dist": f"dataio-{name.replace('_', '-')}",
        "module": f"dataio_{name}",
        "Title": "".join(w.capitalize() for w in name.split("_")),
        "dataio_version": __version__,
    }
    files: dict[str, str] = {
        "README.md": README,
        "LICENSE": _license(),
        f"src/{v['module']}/__init__.py": INIT,
        f"tests/test_{name}_conformance.py": TESTS,
        ".gitignore": "target/\n__pycache__/\n*.so\n*.egg-info/\ndist/\n",
    }
    if native:
        files |= {
            "pyproject.toml": PYPROJECT_NATIVE,
            "Cargo.toml": CARGO_TOML,
            "rust/lib.rs": LIB_RS,
            f"src/{v['module']}/plugin.py": PLUGIN_NATIVE,
        }
    else:
        files |= {"pyproject.toml": PYPROJECT_PYTHON, f"src/{v['module']}/plugin.py": PLUGIN_PYTHON}
    written = []
    for rel, text in files.items():
        path = dest / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_fill(text, v, native) if rel != "LICENSE" else text)
        written.append(path)
    if native:
        written += _vendor_abi(dest / "vendor" / "dataio-abi", v)
    return written


def _fill(text: str, v: dict[str, str], native: bool) -> str:
    out = text
    for key, value in v.items():
        out = out.replace("{" + key + "}", value)
    out = out.replace("{kind}", "native (Rust, op ABI v2)" if native else "Python")
    out = out.replace("{native}", "True" if native else "False")
    if "{deps}" in out:
        out = out.replace("{deps}", dependency_lines(["pyo3", "serde", "schemars"]))
    return out


def _license() -> str:
    from . import _native

    return dict(_native.abi_crate_sources())["LICENSE"]


def _workspace() -> dict[str, Any]:
    from . import _native

    return tomllib.loads(dict(_native.abi_crate_sources())["workspace/Cargo.toml"])["workspace"]


def _dep(table: dict[str, Any], name: str) -> str:
    """A dependency of the workspace table as a standalone TOML value."""
    spec = table["dependencies"][name]
    if isinstance(spec, str):
        return f'"{spec}"'
    parts = []
    for key, value in spec.items():
        if key == "path":
            continue
        if isinstance(value, bool):
            parts.append(f"{key} = {'true' if value else 'false'}")
        elif isinstance(value, list):
            parts.append(f"{key} = [{', '.join(repr(x).replace(chr(39), chr(34)) for x in value)}]")
        else:
            parts.append(f'{key} = "{value}"')
    return "{ " + ", ".join(parts) + " }"


def dependency_lines(names: list[str]) -> str:
    """``name = <version spec>`` lines for workspace dependencies, as the
    dataio this runs on was built with them."""
    ws = _workspace()
    return "\n".join(f"{n} = {_dep(ws, n)}" for n in names)


def _vendor_abi(dest: Path, v: dict[str, str]) -> list[Path]:
    """The dataio-abi crate, its manifest made standalone: the workspace's
    inherited fields and dependency versions written out."""
    from . import _native

    ws = _workspace()
    written = []
    for rel, text in _native.abi_crate_sources():
        if rel.startswith("workspace/"):
            continue
        if rel == "Cargo.toml":
            text = _standalone_manifest(text, ws)
        path = dest / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(path)
    return written


def _standalone_manifest(text: str, ws: dict[str, Any]) -> str:
    package = ws.get("package", {})
    out = []
    for line in text.splitlines():
        m = re.match(r"^([a-z_-]+)\.workspace\s*=\s*true\s*$", line)
        if m and m.group(1) in package:
            value = package[m.group(1)]
            out.append(f'{m.group(1)} = "{value}"')
        elif m:
            out.append(f"{m.group(1)} = {_dep(ws, m.group(1))}")
        elif line.strip() == "[lints]" or line.strip().startswith("workspace = true"):
            continue
        else:
            out.append(line)
    # Standalone: never part of the plugin's (or any enclosing) workspace.
    return "\n".join(out).rstrip() + "\n"


README = """# dataio-{name}

A plugin for [dataio](https://pypi.org/project/dataio/) adding {kind} ops:

* `decode_{name}(width=3, max_items=16777216)`: little-endian float32
  records of `width` values to a float32 `[N, width]` array;
* `{name}_center()`: subtracts each column's mean from a float32 `[N, W]`
  array.

```python
import dataio

pipe = dataio.pipeline(dataio.slot("points").decode_{name}(3).{name}_center(), dataio.batch(8))
```

## Develop

```
pip install -e .            # Python ops;  native: maturin develop --uv
python -m pytest tests      # dataio's conformance suites on each op
python -m dataio ops decode_{name} {name}_center
```

## Publish

Build wheels with `maturin build --release --zig --compatibility manylinux2014`
(native) or `python -m build` (Python), and upload them with `twine`. The
package pins the dataio it was generated against (`dataio=={dataio_version}`);
install dataio first or in the same command: the registry's unrelated
`dataio` project must never be picked.
"""

INIT = '''"""dataio-{name}: the ops decode_{name} and {name}_center for dataio
(registered through the ``dataio`` entry point: see plugin.py)."""

__version__ = "0.1.0"
'''

PYPROJECT_NATIVE = """[build-system]
requires = ["maturin>=1.9.4,<2"]
build-backend = "maturin"

[project]
name = "{dist}"
version = "0.1.0"
description = "dataio ops: decode_{name} and {name}_center (native)"
readme = "README.md"
license = "Apache-2.0"
requires-python = ">=3.11"
dependencies = ["dataio=={dataio_version}"]

[project.entry-points.dataio]
{name} = "{module}.plugin"

[tool.maturin]
module-name = "{module}._native"
python-source = "src"
manifest-path = "Cargo.toml"
features = ["pyo3/extension-module"]
"""

PYPROJECT_PYTHON = """[build-system]
requires = ["hatchling>=1.25"]
build-backend = "hatchling.build"

[project]
name = "{dist}"
version = "0.1.0"
description = "dataio ops: decode_{name} and {name}_center"
readme = "README.md"
license = "Apache-2.0"
requires-python = ">=3.11"
dependencies = ["dataio=={dataio_version}", "numpy"]

[project.entry-points.dataio]
{name} = "{module}.plugin"

[tool.hatch.build.targets.wheel]
packages = ["src/{module}"]
"""

CARGO_TOML = """[package]
name = "{dist}-native"
description = "The native module of {dist}"
version = "0.1.0"
edition = "2021"
license = "Apache-2.0"
publish = false

[lib]
name = "{module}_native"
path = "rust/lib.rs"
crate-type = ["cdylib"]

[dependencies]
# The op ABI, vendored from the dataio this package was generated with:
# the ABI version is checked again when the plugin loads.
dataio-abi = { path = "vendor/dataio-abi" }
{deps}

# A package of its own, not a member of any enclosing workspace.
[workspace]
"""

LIB_RS = """//! `{module}._native`: the plugin's ops, each declared once (name, doc,
//! parameters) as a `dataio_abi::ops::Op`. dataio registers whatever
//! `export_ops!` lists; runs them on its CPU pool without the GIL.

use dataio_abi::ops::{kind, Call, NoParams, Op, Output};
use dataio_abi::{status, AbiError};
use pyo3::prelude::*;
use serde::Deserialize;

/// The parameters of decode_{name}: defaults here, help in the field docs.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
struct DecodeParams {
    /// Values per record.
    #[schemars(range(min = 1, max = 4096))]
    width: u32,
    /// More records than this fail the row (untrusted input: bound what you allocate).
    #[schemars(range(min = 1))]
    max_items: u64,
}

impl Default for DecodeParams {
    fn default() -> Self {
        DecodeParams { width: 3, max_items: 1 << 24 }
    }
}

struct Decode;

impl Op for Decode {
    const NAME: &'static str = "decode_{name}";
    const DOC: &'static str = "Little-endian float32 records of width values to float32 [N, width].";
    const KIND: u32 = kind::DECODE;
    const OUTPUT_DTYPE: &'static str = "float32";
    const OUTPUT_NDIM: i32 = 2;
    type Params = DecodeParams;

    fn run(&self, p: &DecodeParams, call: &Call<'_>, out: &mut Output<'_>) -> Result<(), AbiError> {
        let record = 4 * p.width as usize;
        if call.data.is_empty() || call.data.len() % record != 0 {
            let msg = format!("{} bytes are not whole records of {} float32 values", call.data.len(), p.width);
            return Err(AbiError::new(status::CORRUPT, msg));
        }
        let n = (call.data.len() / record) as u64;
        if n > p.max_items {
            let msg = format!("{n} records are over max_items={}", p.max_items);
            return Err(AbiError::new(status::INVALID_ARGUMENT, msg));
        }
        let dst = out.alloc("float32", &[n, p.width as u64])?;
        for (d, s) in dst.chunks_exact_mut(4).zip(call.data.chunks_exact(4)) {
            let v = f32::from_le_bytes([s[0], s[1], s[2], s[3]]);
            d.copy_from_slice(&v.to_ne_bytes());
        }
        Ok(())
    }
}

struct Center;

impl Op for Center {
    const NAME: &'static str = "{name}_center";
    const DOC: &'static str = "Subtracts each column's mean from a float32 [N, W] array.";
    const KIND: u32 = kind::TRANSFORM;
    const OUTPUT_DTYPE: &'static str = "float32";
    const OUTPUT_NDIM: i32 = 2;
    const INPUT_DTYPE: &'static str = "float32"; // dataio refuses any other input before run
    const INPUT_NDIM: i32 = 2;
    type Params = NoParams;

    fn run(&self, _: &NoParams, call: &Call<'_>, out: &mut Output<'_>) -> Result<(), AbiError> {
        let t = call.input.as_ref().ok_or_else(|| AbiError::new(status::INVALID_ARGUMENT, "no input tensor"))?;
        if t.shape[0] == 0 {
            return Err(AbiError::new(status::INVALID_ARGUMENT, "needs at least one row"));
        }
        let w = t.shape[1] as usize;
        let vals: Vec<f32> = t.data.chunks_exact(4).map(|b| f32::from_ne_bytes([b[0], b[1], b[2], b[3]])).collect();
        let mut mean = vec![0f64; w];
        for row in vals.chunks_exact(w.max(1)) {
            for (m, &v) in mean.iter_mut().zip(row) {
                *m += v as f64;
            }
        }
        mean.iter_mut().for_each(|m| *m /= t.shape[0] as f64);
        let dst = out.alloc("float32", &t.shape)?;
        for (i, (d, &v)) in dst.chunks_exact_mut(4).zip(&vals).enumerate() {
            d.copy_from_slice(&((v as f64 - mean[i % w.max(1)]) as f32).to_ne_bytes());
        }
        Ok(())
    }
}

dataio_abi::export_ops!(Decode, Center);

#[pymodule(gil_used = false, name = "_native")]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(ops, m)?)
}
"""

PLUGIN_NATIVE = '''"""The entry point: registers the native ops from their declarations in rust/lib.rs."""

from dataio.plugins import NativeOpsPlugin

PLUGIN = NativeOpsPlugin("{module}._native")
dataio_register_ops = PLUGIN.dataio_register_ops
'''

PLUGIN_PYTHON = '''"""The entry point: the ops, as Python functions (the GIL is taken per call)."""

from typing import Any

import numpy as np

import dataio
from dataio.errors import CorruptDataError, InvalidArgumentError


def decode(data: bytes, width: int = 3, max_items: int = 1 << 24) -> np.ndarray:
    record = 4 * width
    if not data or len(data) % record:
        raise CorruptDataError(f"{len(data)} bytes are not whole records of {width} float32 values")
    if len(data) // record > max_items:
        raise InvalidArgumentError(f"{len(data) // record} records are over max_items={max_items}")
    return np.frombuffer(data, "<f4").reshape(-1, width).astype(np.float32)


def center(a: np.ndarray) -> np.ndarray:
    if not len(a):
        raise InvalidArgumentError("needs at least one row")
    return (a - a.mean(axis=0, dtype=np.float64)).astype(np.float32)


@dataio.hookimpl
def dataio_register_ops(register: Any) -> None:
    register("decode_{name}", decode, kind="decode", params={"width": int, "max_items": int},
             description="Little-endian float32 records of width values to float32 [N, width].",
             output={"dtype": "float32", "ndim": 2})
    register("{name}_center", center, kind="transform",
             description="Subtracts each column's mean from a float32 [N, W] array.",
             takes={"dtype": "float32", "ndim": 2}, output={"dtype": "float32", "ndim": 2})
'''

TESTS = '''"""dataio's conformance suites on each op, and one pipeline end to end."""

from __future__ import annotations

import io

import numpy as np
import pytest

import dataio
from dataio.testing import OpConformance, PluginConformance


def points(n: int, seed: int, width: int = 3) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, width)).astype("<f4")


class TestDecode(OpConformance):
    op = "decode_{name}"
    kind = "decode"
    native = {native}
    params = {"width": 3}

    @pytest.fixture
    def samples(self) -> list[bytes]:
        return [points(1 + i, i).tobytes() for i in range(12)]


class TestCenter(OpConformance):
    op = "{name}_center"
    kind = "transform"
    native = {native}

    @pytest.fixture
    def samples(self) -> list[np.ndarray]:
        return [points(2 + i, 100 + i).astype(np.float32) for i in range(12)]


class TestPlugin(PluginConformance):
    entry_point = "{name}"
    package = "{dist}"
    ops = ("decode_{name}", "{name}_center")


def test_a_pipeline_decodes_and_centers() -> None:
    arrays = [points(5, i) for i in range(8)]
    records = [{"key": f"r{i}", "x": a.tobytes()} for i, a in enumerate(arrays)]
    pipe = dataio.pipeline(dataio.slot("x", stack="never").decode_{name}(3).{name}_center(), dataio.batch(4))
    with pipe.bind(records).run("numpy") as loader:
        got = {k: np.asarray(x) for b in loader for k, x in zip(b.keys, b["x"])}
    for i, a in enumerate(arrays):
        np.testing.assert_allclose(got[f"r{i}"], a - a.mean(axis=0), rtol=1e-5, atol=1e-6)
    with pytest.raises(dataio.errors.PlanError, match="radius"):
        dataio.slot("x").decode_{name}().{name}_center(radius=2)


def test_an_input_the_op_does_not_take_is_refused() -> None:
    # Where the op before declares its output, when the pipeline is built:
    with pytest.raises(dataio.errors.PlanError, match="{name}_center: takes float32 with 2 dimensions, but decode_image"):
        dataio.pipeline(dataio.slot("x").decode_image().{name}_center(), dataio.batch(1))
    # Else before the op runs, naming what came (decode_npy's output varies):
    records = [{"key": "r0", "x": npy(np.zeros((2, 3, 4), np.float32))}]
    pipe = dataio.pipeline(dataio.slot("x", stack="never").decode_npy().{name}_center(), dataio.batch(1))
    with pytest.raises(dataio.errors.RowError, match=r"{name}_center takes float32 with 2 dimensions, got float32 \\[2, 3, 4\\]") as e:
        with pipe.bind(records).run("numpy") as loader:
            list(loader)
    assert e.value.op == "{name}_center"


def npy(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()
'''
