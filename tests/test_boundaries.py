"""The plugin boundary, checked in the imports (AST, no import of anything).

* The core never imports a plugin: no ``import dataio_*`` /
  ``from dataio_* import``, no ``importlib.import_module("dataio_*")`` or
  ``__import__("dataio_*")``, anywhere under ``packages/dataio-core/src``
  (``if TYPE_CHECKING:`` blocks included). The core finds plugins through
  the registry only (``dataio.hookspecs``).
* A plugin never uses a private core name: in every plugin's ``src/`` (the
  packages under ``packages/`` and the test plugins the core's tests
  install), no ``dataio._x`` module, no ``from dataio... import _x``, and no
  ``_x`` attribute of something that comes from dataio (a dataio module, a
  name imported from one, what calling or entering such a name returns, a
  parameter annotated with such a name). What a plugin needs, the core offers
  publicly (``SafetensorsFile.layout()``, ``dataio.plugins``, the hooks).

Each check is tested on snippets first, so a checker that finds nothing
cannot pass by accident.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CORE_PYTHON = REPO / "packages" / "dataio-core" / "src"
PLUGIN_SOURCES = sorted(
    [
        *(p for p in REPO.glob("packages/dataio-*/src") if p != CORE_PYTHON),
        *REPO.glob("packages/dataio-core/tests/plugins/*/src"),
    ]
)


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _plugin_module(name: str | None) -> bool:
    return bool(name) and name.split(".")[0].startswith("dataio_")  # type: ignore[union-attr]


def _dataio_module(name: str | None) -> bool:
    return bool(name) and name.split(".")[0] == "dataio"  # type: ignore[union-attr]


def plugin_imports(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, what) of every import of a plugin package in ``tree``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _plugin_module(alias.name):
                    yield node.lineno, f"import {alias.name}"
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and _plugin_module(node.module):
                yield node.lineno, f"from {node.module} import ..."
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            first = node.args[0]
            literal = isinstance(first, ast.Constant) and isinstance(first.value, str)
            if name in ("import_module", "__import__") and literal and _plugin_module(first.value):
                yield node.lineno, f"{name}({first.value!r})"


def _root_name(node: ast.AST) -> str | None:
    """``a`` for ``a``, ``a.b.c``, ``a(...)``, ``a.b(...).c``, ``a[...]``."""
    while True:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Await):
            node = node.value
        else:
            return None


def _annotation_names(annotation: ast.AST | None) -> set[str]:
    if annotation is None:
        return set()
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval")
        except SyntaxError:
            return set()
    return {n.id for n in ast.walk(annotation) if isinstance(n, ast.Name)}


def _targets(node: ast.AST) -> Iterator[str]:
    """The names an assignment target binds (``a``, ``a, b``, ``*a``); an
    attribute or item target (``self.x = ...``) binds no name."""
    if isinstance(node, ast.Name):
        yield node.id
    elif isinstance(node, (ast.Tuple, ast.List)):
        for element in node.elts:
            yield from _targets(element)
    elif isinstance(node, ast.Starred):
        yield from _targets(node.value)


class _PrivateUse(ast.NodeVisitor):
    """Finds private dataio names, following which local names come from dataio."""

    def __init__(self) -> None:
        self.found: list[tuple[int, str]] = []
        self.scopes: list[set[str]] = [set()]

    def _from_dataio(self, node: ast.AST | None) -> bool:
        root = _root_name(node) if node is not None else None
        return root is not None and any(root in scope for scope in self.scopes)

    def _bind(self, target: ast.AST) -> None:
        self.scopes[-1].update(_targets(target))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if _dataio_module(alias.name):
                if any(_private(part) for part in alias.name.split(".")):
                    self.found.append((node.lineno, f"import {alias.name}"))
                self.scopes[-1].add(alias.asname or alias.name.split(".")[0])

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level or not _dataio_module(node.module):
            return
        assert node.module is not None
        if any(_private(part) for part in node.module.split(".")):
            self.found.append((node.lineno, f"from {node.module} import ..."))
        for alias in node.names:
            if _private(alias.name):
                self.found.append((node.lineno, f"from {node.module} import {alias.name}"))
            self.scopes[-1].add(alias.asname or alias.name)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if _private(node.attr) and self._from_dataio(node.value):
            self.found.append((node.lineno, ast.unparse(node)))
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        # getattr(x, "_name") is the same access spelled differently.
        if isinstance(node.func, ast.Name) and node.func.id in ("getattr", "setattr", "hasattr") and len(node.args) >= 2:
            name = node.args[1]
            literal = isinstance(name, ast.Constant) and isinstance(name.value, str)
            if literal and _private(name.value) and self._from_dataio(node.args[0]):
                self.found.append((node.lineno, ast.unparse(node)))
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        self.generic_visit(node)
        if self._from_dataio(node.value):
            for target in node.targets:
                self._bind(target)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.generic_visit(node)
        if self._from_dataio(node.value) or any(self._from_dataio(ast.Name(n)) for n in _annotation_names(node.annotation)):
            self._bind(node.target)

    def visit_With(self, node: ast.With) -> None:
        for item in node.items:
            self.visit(item.context_expr)
            if item.optional_vars is not None and self._from_dataio(item.context_expr):
                self._bind(item.optional_vars)
        for stmt in node.body:
            self.visit(stmt)

    def visit_For(self, node: ast.For) -> None:
        self.visit(node.iter)
        if self._from_dataio(node.iter):
            self._bind(node.target)
        for stmt in [*node.body, *node.orelse]:
            self.visit(stmt)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        params = set()
        args = node.args
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
            if arg is not None and any(self._from_dataio(ast.Name(n)) for n in _annotation_names(arg.annotation)):
                params.add(arg.arg)
        self.scopes.append(params)
        body = node.body if isinstance(node.body, list) else [node.body]
        for stmt in body:
            self.visit(stmt)
        self.scopes.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        for dec in node.decorator_list:
            self.visit(dec)
        self._function(node)

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._function(node)


def private_uses(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, what) of every use of a private dataio name in ``tree``."""
    visitor = _PrivateUse()
    visitor.visit(tree)
    return visitor.found


def python_files(root: Path) -> list[Path]:
    return sorted(p for p in [*root.rglob("*.py"), *root.rglob("*.pyi")] if "__pycache__" not in p.parts)


# -- the checkers catch what they are meant to catch -----------------------------


@pytest.mark.parametrize(
    "code",
    [
        "import dataio_rdma",
        "import dataio_gds.reader as r",
        "from dataio_gds import reader",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from dataio_rdma import serve",
        "import importlib\ndef f():\n    return importlib.import_module('dataio_rdma')",
        "m = __import__('dataio_s3')",
    ],
)
def test_the_core_check_finds_plugin_imports(code: str) -> None:
    assert list(plugin_imports(ast.parse(code)))


@pytest.mark.parametrize(
    "code",
    ["import dataio", "from dataio import hookspecs", "from . import _native", "x = 'dataio_rdma'", "import importlib\nimportlib.import_module(name)"],
)
def test_the_core_check_passes_what_is_no_plugin_import(code: str) -> None:
    assert not list(plugin_imports(ast.parse(code)))


@pytest.mark.parametrize(
    "code",
    [
        "import dataio._native",
        "from dataio import _native",
        "from dataio._plugins import host",
        "from dataio.formats.safetensors import DTYPES, _torch_dtype",
        "import dataio\nx = dataio._native.backend_info('a')",
        "import dataio.formats.safetensors as st\nst._parse_header(b'', 0, '')",
        "from dataio.formats.safetensors import SafetensorsFile\ndef f(uri):\n    f = SafetensorsFile(uri)\n    return f._entries",
        "import dataio\nwith dataio.open_safetensors('x') as f:\n    f._local",
        "from dataio.formats.safetensors import SafetensorsFile\ndef g(f: SafetensorsFile):\n    return f._data_start",
        "from dataio.formats.safetensors import SafetensorsFile\ndef g(f: 'SafetensorsFile | None'):\n    return f._data_start",
        "import dataio\nfor m in dataio.ls('x'):\n    m._raw",
        "import dataio\ngetattr(dataio, '_native')",
    ],
)
def test_the_plugin_check_finds_private_dataio_names(code: str) -> None:
    assert private_uses(ast.parse(code))


@pytest.mark.parametrize(
    "code",
    [
        "import dataio\ndataio.read('x')",
        "from dataio.formats.safetensors import SafetensorsFile\nf = SafetensorsFile('x')\nf.layout().data_offset",
        "from . import _native\n_native.status()",
        "class A:\n    def f(self):\n        return self._x",
        "def f(client):\n    return client._transfer_ptr",  # the plugin's own object
        "from dataio.executor import EpochJob\nclass R:\n    def __init__(self, job: EpochJob):\n        self._options = job.run_options()\n        self._options.clear()",
        "import dataio\nx = dataio.__version__",
    ],
)
def test_the_plugin_check_passes_public_names(code: str) -> None:
    assert not private_uses(ast.parse(code))


# -- the boundary itself ------------------------------------------------------------


def test_the_core_imports_no_plugin() -> None:
    files = python_files(CORE_PYTHON)
    assert files, f"no Python files under {CORE_PYTHON}"
    found = [
        f"{path.relative_to(REPO)}:{line}: {what}"
        for path in files
        for line, what in plugin_imports(ast.parse(path.read_text(), str(path)))
    ]
    assert not found, "the core imports plugins (find them through dataio.hookspecs instead):\n" + "\n".join(found)


def test_plugins_use_no_private_dataio_name() -> None:
    assert len(PLUGIN_SOURCES) >= 6, PLUGIN_SOURCES  # s3, gcs, azure, hf, gds, rdma at least
    found = [
        f"{path.relative_to(REPO)}:{line}: {what}"
        for src in PLUGIN_SOURCES
        for path in python_files(src)
        for line, what in private_uses(ast.parse(path.read_text(), str(path)))
    ]
    assert not found, "plugins use private dataio names (ask the core for a public one):\n" + "\n".join(found)
