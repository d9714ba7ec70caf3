"""dataio plugin: s3:// and S3-compatible stores (R2, custom endpoints).

The data path is native (``dataio_s3._native``, built on the ``object_store``
crate); this package resolves endpoints and credentials (botocore's default
chain for ``method="default"``) and registers the ``s3`` and ``r2`` schemes.
"""

__version__ = "0.1.0"  # before the import below: plugin.py reads it

from .plugin import PLUGIN

#: ``configure(scheme, **options)``: tuning options per scheme (retries,
#: timeouts, multipart part size), taking effect on the next use of the scheme.
configure = PLUGIN.configure
#: The keys ``configure`` accepts, with what they mean.
TUNING = PLUGIN.tuning

__all__ = ["__version__", "configure", "TUNING"]
