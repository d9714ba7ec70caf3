"""A plugin op's name is written once: in its declaration in Rust
(``const NAME: &'static str = "...";`` of a ``dataio_abi::ops::Op``).

Everything else that needs the name gets it from there: the Python side
registers what the native module declares (``NativeOpsPlugin``), verbs use
the constants the module exports, and the core looks an op up by what it
does, not by its name. Only the core's install-hint table
(``PLUGIN_PACKAGE_OPS``: which package to install for a missing op) names
ops of packages that may be absent. Tests and docs are not counted.

The count is of the name as a string literal (``"decode_video"`` or
``'decode_video'``) in the Rust and Python sources of the plugins and the
core; prose that mentions an op is not a second declaration.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DECLARATION = re.compile(r"""const\s+NAME\s*:\s*&'static\s+str\s*=\s*"([a-z_][a-z0-9_]*)"\s*;""")
TEMPLATE = REPO / "packages" / "dataio-core" / "tests" / "plugins" / "dataio-nativeops"


def sources() -> list[Path]:
    """The Rust and Python sources of the core, the plugins and the plugin
    template (which a newcomer copies), without tests, fuzz targets or docs."""
    roots = [
        *REPO.glob("crates/*/src"),
        *REPO.glob("packages/*/src"),
        *REPO.glob("packages/*/rust"),
        TEMPLATE / "src",
        TEMPLATE / "rust",
    ]
    out = []
    for root in roots:
        out += [p for p in root.rglob("*") if p.suffix in (".rs", ".py") and "tests" not in p.relative_to(root).parts]
    return sorted(out)


def code_of(path: Path, text: str) -> str:
    """What of ``text`` is code: Rust without comments and ``#[cfg(test)]``
    modules; Python's string constants other than docstrings, ``__all__``
    (names of functions, which may share an op's name: ``dataio.video_info``)
    and the install-hint table, one per line."""
    if path.suffix == ".rs":
        kept = []
        for line in text.splitlines():
            if line.strip() == "#[cfg(test)]":
                break
            kept.append("" if line.lstrip().startswith("//") else line)
        return "\n".join(kept)
    tree = ast.parse(text)
    skip: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            skip.add(id(body[0].value))  # a docstring
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id in ("PLUGIN_PACKAGE_OPS", "__all__") for t in targets):
            skip.update(id(n) for n in ast.walk(node))
    return "\n".join(
        repr(n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in skip
    )


def declared(files: dict[Path, str]) -> dict[str, list[Path]]:
    out: dict[str, list[Path]] = {}
    for path, text in files.items():
        if path.suffix == ".rs":
            for name in DECLARATION.findall(text):
                out.setdefault(name, []).append(path)
    return out


def literals(name: str, files: dict[Path, str]) -> list[str]:
    """Where ``name`` is written as a string literal: ``path`` each time."""
    pattern = re.compile(rf"""["']{re.escape(name)}["']""")
    return [str(path) for path, text in files.items() for _ in pattern.findall(text)]


def test_the_counter_finds_a_second_literal_and_skips_docs_tests_and_the_hint_table(tmp_path: Path) -> None:
    rs = tmp_path / "a.rs"
    rs.write_text(
        '/// const NAME: &\'static str = "decode_pcd";\nimpl Op for X {\n    const NAME: &\'static str = "decode_pcd";\n}\n'
        '#[cfg(test)]\nmod tests {\n    const X: &str = "decode_pcd";\n}\n'
    )
    py = tmp_path / "b.py"
    py.write_text(
        '"""Registers "decode_pcd"."""\nPLUGIN_PACKAGE_OPS = {\n    "decode_pcd": "dataio-pcd",\n}\n'
        '__all__ = ["decode_pcd"]\nregister(\'decode_pcd\')\n'
    )
    files = {p: code_of(p, p.read_text()) for p in (rs, py)}
    assert declared(files) == {"decode_pcd": [rs]}
    assert len(literals("decode_pcd", files)) == 2  # the declaration and the register() call only


def test_each_plugin_op_name_is_written_once_outside_tests_docs_and_the_hint_table() -> None:
    files = {p: code_of(p, p.read_text(errors="replace")) for p in sources()}
    names = declared(files)
    # Every shipped plugin's ops and the template's are declared in Rust.
    for op in ("decode_video", "decode_audio", "video_info", "tokenize", "decode_pgm", "native_invert"):
        assert op in names, f"{op} is not declared as a version 2 op (const NAME) anywhere"
    again = {name: hits for name in names if len(hits := literals(name, files)) != 1}
    assert not again, f"op names written more than once (declare them once, in Rust): {again}"
