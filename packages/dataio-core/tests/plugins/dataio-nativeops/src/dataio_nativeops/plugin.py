"""Registers the native ops of ``dataio_nativeops._native`` from their own
declarations in Rust (names, docs, parameters): nothing is written twice."""

from dataio.plugins import NativeOpsPlugin

PLUGIN = NativeOpsPlugin("dataio_nativeops._native")
dataio_register_ops = PLUGIN.dataio_register_ops
