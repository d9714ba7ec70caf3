"""Entry-point module of dataio-text: the ``tokenize`` op."""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path
from typing import Any

from dataio.errors import PlanError
from dataio.plugins import NativeOpsPlugin

#: ``tokenize``, registered from its declaration in ``crates/dataio-text``
#: (``prepare`` below is the Python hook it names).
PLUGIN = NativeOpsPlugin("dataio_text._native")
dataio_register_ops = PLUGIN.dataio_register_ops


#: A Hub model name given where its tokenizer file was meant.
HF_EXAMPLE = "hf://openai-community/gpt2/tokenizer.json"


def prepare(params: dict[str, Any]) -> dict[str, Any]:
    """``tokenizer=`` as written to the URI the op reads: a
    ``tokenizers.Tokenizer`` (anything with ``to_str()``, the JSON of a
    ``tokenizer.json``) is written to a file of the cache, named by its
    content, and passed by path, so that the plan stays plain JSON and
    pickles; a path object becomes its string. A name that is neither a
    URI nor a file here (``"gpt2"``) is refused now, pointing at ``hf://``."""
    tok = params.get("tokenizer")
    if isinstance(tok, str):
        _check_not_a_model_name(tok)
    elif isinstance(tok, os.PathLike):
        params["tokenizer"] = os.fspath(tok)
    elif tok is not None and callable(getattr(tok, "to_str", None)):
        params["tokenizer"] = _tokenizer_file(tok)
    return params


def _check_not_a_model_name(tok: str) -> None:
    """A bare name such as ``"gpt2"`` or ``"org/model"`` (no scheme, no
    ``.json``, no such file here) is a model's name, not its tokenizer file."""
    if "://" in tok or tok.endswith(".json") or os.path.exists(tok):
        return
    guess = f"hf://{tok}/tokenizer.json" if tok.count("/") == 1 else f"hf://<org>/<model>/tokenizer.json, e.g. {HF_EXAMPLE}"
    raise PlanError(
        f"op tokenize: tokenizer file {tok!r} not found: tokenizer= is the URI of a tokenizer.json, not a model name; "
        f"a Hub model's tokenizer is read from its hf:// URI: {guess}"
    )


_write_lock = threading.Lock()


def _tokenizer_file(tok: Any) -> str:
    """The path of a cache file holding ``tok.to_str()``, written once per content."""
    text = tok.to_str()
    if not isinstance(text, str):
        raise PlanError(f"op tokenize: tokenizer= has a to_str() that returned {type(text).__name__}, not the tokenizer's JSON")
    data = text.encode()
    root = _cache_dir()
    path = root / f"{hashlib.sha256(data).hexdigest()[:32]}.json"
    with _write_lock:
        try:
            if path.read_bytes() == data:
                return str(path)
        except OSError:
            pass
        tmp = root / f".{path.stem}.{os.getpid()}.{threading.get_ident()}.tmp"
        tmp.write_bytes(data)
        os.replace(tmp, path)
    return str(path)


def _cache_dir() -> Path:
    """``$DATAIO_CACHE_DIR/tokenizers`` (default ``~/.cache/dataio/tokenizers``),
    private: a file others could replace would be tokenized with."""
    base = os.environ.get("DATAIO_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "dataio")
    root = Path(base) / "tokenizers"
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = root.stat()
    if st.st_uid != os.getuid() or st.st_mode & 0o022:
        raise PlanError(
            f"op tokenize: the tokenizer cache {root} is not private (owned by another user, or writable by others); "
            "set DATAIO_CACHE_DIR to a directory of your own"
        )
    return root
