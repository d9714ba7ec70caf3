"""dataio plugin: gs:// (Google Cloud Storage).

The data path is native (``dataio_gcs._native``, built on the
``object_store`` crate); this package resolves credentials with google-auth
and registers the ``gs`` scheme.
"""

from ._settings import configure

__version__ = "0.1.0"
__all__ = ["__version__", "configure"]
