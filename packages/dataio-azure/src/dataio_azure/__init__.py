"""dataio plugin: az:// (Azure Blob Storage).

The data path is native (``dataio_azure._native``, built on the
``object_store`` crate); this package resolves credentials (shared key, SAS,
azure-identity's default chain) and registers the ``az`` scheme.
"""

from ._settings import configure

__version__ = "0.1.0"
__all__ = ["__version__", "configure"]
