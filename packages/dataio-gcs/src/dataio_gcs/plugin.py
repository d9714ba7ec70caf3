"""Entry-point module of dataio-gcs: gs:// declared as an ObjectStorePlugin (credentials: _credentials.py)."""

from __future__ import annotations

from dataio.plugins import ObjectStorePlugin

from . import __version__, _credentials

SCHEMES = {"gs": "Google Cloud Storage"}

PLUGIN = ObjectStorePlugin("dataio-gcs", __version__, schemes=SCHEMES, native_module="dataio_gcs._native",
                           resolve=_credentials.resolve, endpoint_option="google_base_url")
dataio_register_backends = PLUGIN.dataio_register_backends
dataio_register_capabilities = PLUGIN.dataio_register_capabilities
