"""Entry-point module of dataio-text: the ``tokenize`` op."""

from __future__ import annotations

from typing import Any

from dataio.hookspecs import OpRegistrar, hookimpl

from . import _native

TOKENIZE_PARAMS: dict[str, Any] = {
    "tokenizer": str, "max_length": int, "truncation": bool, "padding": str, "add_special_tokens": bool,
    "dtype": str, "max_chars": int,
}


@hookimpl
def dataio_register_ops(register: OpRegistrar) -> None:
    _native.install_reader()
    register("tokenize", _native.op("tokenize"), kind="decode", params=TOKENIZE_PARAMS,
             description="Text (a string field, or UTF-8 bytes) to token ids, int64 [L] (int32 with dtype='int32'), "
                         "with the Hugging Face tokenizer.json at tokenizer= (any URI; loaded once per process); "
                         "max_length truncates, padding='max_length' pads to it.")
