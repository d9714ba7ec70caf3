"""The conformance suites, shipped so every plugin can run them against its
own server (the extra ``dataio[testing]``, installed from the wheelhouse with
``pip install --find-links wheelhouse/ 'dataio[testing]'``, brings pytest,
which they run under).

Subclass :class:`BackendConformance` in a test module and give it a
``base_uri`` fixture returning an empty, writable prefix ending in ``/``::

    import pytest
    from dataio.testing import BackendConformance

    class TestMyStore(BackendConformance):
        @pytest.fixture
        def base_uri(self, my_server):
            return f"mystore://bucket/{uuid.uuid4().hex}/"

The other suites follow the same pattern: :class:`PluginConformance` (the
plugin is found through its entry point and reports honestly: class
attributes, no fixture), :class:`FormatsConformance` (the format helpers
and the image pipeline on the plugin's scheme: a ``root`` fixture) and
:class:`ObjectStoreConformance` (typed errors, secrets kept out of every
message, tuning options: for plugins built on
:class:`dataio.plugins.ObjectStorePlugin`).

One skip policy everywhere: a test is skipped only when the backend
*declares* it cannot do the thing (its capabilities lack ``write``,
``delete``, ``list`` or ``ranged_read``), or when hardware is absent (a GPU,
an RDMA NIC), and the skip message says so. A test dependency or emulator the
package declares is required: :func:`require` imports one and fails the test
when it is missing, since a missing one is a broken environment, not a
reason to pass.

One suite a file: ``backend`` (:class:`BackendConformance`), ``formats``
(:class:`FormatsConformance`), ``plugin`` (:class:`PluginConformance`),
``objstore`` (:class:`ObjectStoreConformance`), ``ops``
(:class:`OpConformance`: a plugin's decoder or transform), and ``helpers``
(:func:`require`, :data:`QUICK_RETRIES`, :func:`assert_no_secret`,
:func:`pipeline_images`). Only the suites import pytest, and only when one of
their names is first used: ``import dataio.testing`` alone imports none of
them. :class:`PythonBackend` and :class:`PythonWriter`, the contract of a
pure-Python backend, live in :mod:`dataio.hookspecs` beside the hooks and are
re-exported here.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from dataio.hookspecs import PythonBackend, PythonWriter

if TYPE_CHECKING:
    from .backend import BackendConformance
    from .formats import FormatsConformance
    from .helpers import QUICK_RETRIES, assert_no_secret, pipeline_images, require
    from .objstore import ObjectStoreConformance
    from .ops import OpConformance
    from .plugin import PluginConformance

__all__ = [
    "BackendConformance",
    "FormatsConformance",
    "ObjectStoreConformance",
    "OpConformance",
    "PluginConformance",
    "PythonBackend",
    "PythonWriter",
    "QUICK_RETRIES",
    "assert_no_secret",
    "pipeline_images",
    "require",
]

# Where each name lives; its module is imported on the name's first use.
_LAZY = {
    "BackendConformance": "backend",
    "FormatsConformance": "formats",
    "ObjectStoreConformance": "objstore",
    "OpConformance": "ops",
    "PluginConformance": "plugin",
    "QUICK_RETRIES": "helpers",
    "assert_no_secret": "helpers",
    "pipeline_images": "helpers",
    "require": "helpers",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
