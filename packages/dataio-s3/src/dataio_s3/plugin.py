"""Entry-point module of dataio-s3: s3:// and r2:// declared as an ObjectStorePlugin (credentials: _credentials.py)."""

from __future__ import annotations

from dataio.plugins import ObjectStorePlugin

from . import __version__, _credentials

SCHEMES = {"s3": "Amazon S3 and S3-compatible stores (custom endpoints)", "r2": "Cloudflare R2 (configure_endpoint('r2', url))"}
TUNING = {"virtual_hosted_style_request": "address buckets as bucket.host instead of host/bucket"}

PLUGIN = ObjectStorePlugin("dataio-s3", __version__, schemes=SCHEMES, native_module="dataio_s3._native",
                           resolve=_credentials.resolve, endpoint_option="aws_endpoint", tuning=TUNING)
dataio_register_backends = PLUGIN.dataio_register_backends
dataio_register_capabilities = PLUGIN.dataio_register_capabilities
