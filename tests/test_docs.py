"""The docs match the code.

* every public name in ``dataio.__all__``, every plugin hook in
  ``dataio.hookspecs`` (``dataio_register_*``) and every script under
  ``examples/`` is mentioned in the docs (README.md or docs/*.md): names in
  code (inline or in a block), examples by their path;
* the Python blocks of README.md and docs/formats.md run. The blocks of one
  file run in order in one fresh interpreter (like a notebook: a later block
  may use what an earlier one made), in an empty working folder. A block that
  cannot run here (it needs a cloud bucket, say) carries a
  ``<!-- not run: why -->`` line right above it; nothing else is skipped.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
RUN_BLOCKS_OF = [REPO / "README.md", REPO / "docs" / "formats.md"]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
INLINE = re.compile(r"`([^`\n]+)`")
NOT_RUN = re.compile(r"<!--\s*not run:(.*?)-->")


def docs_text() -> str:
    return "\n".join(p.read_text() for p in DOCS)


def code_text() -> str:
    """Everything in code: fenced blocks, indented command lines and inline spans."""
    text = docs_text()
    blocks = [m.group(2) for m in FENCE.finditer(text)]
    rest = FENCE.sub("", text)
    indented = [ln for ln in rest.splitlines() if ln.startswith("    ")]
    return "\n".join(blocks + indented + INLINE.findall(rest))


def mentioned(name: str, code: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", code) is not None


def test_every_public_name_is_documented() -> None:
    import dataio

    code = code_text()
    missing = [n for n in dataio.__all__ if not mentioned(n, code)]
    assert not missing, f"public names of dataio with no mention in README.md or docs/*.md: {missing}"


def test_every_hook_is_documented() -> None:
    from dataio import hookspecs

    hooks = [n for n in dir(hookspecs) if n.startswith("dataio_register_")]
    assert hooks, "dataio.hookspecs defines no dataio_register_* hook"
    code = code_text()
    missing = [h for h in hooks if not mentioned(h, code)]
    assert not missing, f"plugin hooks with no mention in the docs: {missing}"


def test_every_example_is_documented() -> None:
    text = docs_text()
    examples = sorted((REPO / "examples").glob("*.py"))
    assert examples
    missing = [p.name for p in examples if f"examples/{p.name}" not in text]
    assert not missing, f"examples not mentioned (as examples/NAME.py) in the docs: {missing}"


def python_blocks(path: Path) -> list[tuple[int, str, str | None]]:
    """(line, code, why not run) of each ```python block."""
    text = path.read_text()
    out = []
    for m in FENCE.finditer(text):
        if m.group(1) != "python":
            continue
        line = text.count("\n", 0, m.start()) + 1
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = NOT_RUN.search(before)
        out.append((line, m.group(2), marker.group(1).strip() if marker else None))
    return out


RUNNER = """
import json, sys, traceback
doc, blocks = json.load(open(sys.argv[1]))
ns = {"__name__": "__main__"}
for line, code in blocks:
    try:
        exec(compile(code, f"{doc}, block at line {line}", "exec"), ns)
    except BaseException:
        traceback.print_exc()
        print(f"FAILED: the block at {doc} line {line}")
        sys.exit(1)
    print(f"ran the block at line {line}", flush=True)
"""


@pytest.mark.parametrize("path", RUN_BLOCKS_OF, ids=[p.name for p in RUN_BLOCKS_OF])
def test_python_blocks_run(path: Path, tmp_path: Path) -> None:
    blocks = python_blocks(path)
    runnable = [(line, code) for line, code, why in blocks if why is None]
    assert runnable, f"{path.name} has no runnable python block"
    spec = tmp_path / "blocks.json"
    spec.write_text(json.dumps([str(path.relative_to(REPO)), runnable]))
    (tmp_path / "run_blocks.py").write_text(RUNNER)
    work = tmp_path / "work"
    work.mkdir()
    proc = subprocess.run([sys.executable, str(tmp_path / "run_blocks.py"), str(spec)], cwd=work, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, f"{path.name}: a python block failed:\n{(proc.stdout + proc.stderr)[-4000:]}"
    assert proc.stdout.count("ran the block at line") == len(runnable)


@pytest.mark.parametrize("path", RUN_BLOCKS_OF, ids=[p.name for p in RUN_BLOCKS_OF])
def test_blocks_not_run_say_why(path: Path) -> None:
    for line, _code, why in python_blocks(path):
        assert why is None or len(why) > 10, f"{path.name} line {line}: a block marked 'not run' must say why"
