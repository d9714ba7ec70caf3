"""dataio plugin: s3:// and S3-compatible stores (R2, custom endpoints).

The data path is native (``dataio_s3._native``, built on the ``object_store``
crate); this package resolves endpoints and credentials (botocore's default
chain for ``method="default"``) and registers the ``s3`` and ``r2`` schemes.
"""

from ._settings import configure

__version__ = "0.1.0"
__all__ = ["__version__", "configure"]
