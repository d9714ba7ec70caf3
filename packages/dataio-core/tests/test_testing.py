"""dataio.testing: importing it costs no pytest, and every name it exported as
one module it still exports."""

from __future__ import annotations

from typing import Any

from conftest import run_python

import dataio.hookspecs
import dataio.testing

EXPORTS = [
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


def test_importing_dataio_testing_does_not_import_pytest() -> None:
    r = run_python(
        "import sys\n"
        "import dataio.testing\n"
        "from dataio.testing import PythonBackend, PythonWriter, QUICK_RETRIES, assert_no_secret, require\n"
        "print('pytest' in sys.modules)\n"
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"


def test_every_name_is_still_exported() -> None:
    assert sorted(dataio.testing.__all__) == sorted(EXPORTS)
    namespace: dict[str, Any] = {}
    exec("from dataio.testing import *", namespace)
    assert set(EXPORTS) <= set(namespace)
    assert namespace["ObjectStoreConformance"].__mro__[1:3] == (namespace["BackendConformance"], namespace["FormatsConformance"])


def test_the_backend_contract_lives_beside_the_hooks() -> None:
    assert dataio.testing.PythonBackend is dataio.hookspecs.PythonBackend
    assert dataio.testing.PythonWriter is dataio.hookspecs.PythonWriter
