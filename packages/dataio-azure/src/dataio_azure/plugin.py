"""Entry-point module of dataio-azure: az:// declared as an ObjectStorePlugin (credentials: _credentials.py)."""

from __future__ import annotations

from dataio.plugins import ObjectStorePlugin

from . import __version__, _credentials

SCHEMES = {"az": "Azure Blob Storage (az://container/path, az://container@account/path)"}

PLUGIN = ObjectStorePlugin("dataio-azure", __version__, schemes=SCHEMES, native_module="dataio_azure._native",
                           resolve=_credentials.resolve)  # the endpoint: _credentials.py (it may come from a connection string)
dataio_register_backends = PLUGIN.dataio_register_backends
dataio_register_capabilities = PLUGIN.dataio_register_capabilities
