"""dataio plugin: gs:// (Google Cloud Storage).

The data path is native (``dataio_gcs._native``, built on the
``object_store`` crate); this package resolves credentials with google-auth
and registers the ``gs`` scheme.
"""

__version__ = "0.1.0"  # before the import below: plugin.py reads it

from .plugin import PLUGIN

#: ``configure(scheme, **options)``: tuning options per scheme (retries,
#: timeouts, multipart part size), taking effect on the next use of the scheme.
configure = PLUGIN.configure
#: The keys ``configure`` accepts, with what they mean.
TUNING = PLUGIN.tuning

__all__ = ["__version__", "configure", "TUNING"]
