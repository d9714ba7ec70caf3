"""dataio plugin: http:// and https://.

The data path is native (``dataio_http._native``, reqwest with rustls, in
dataio-objstore's ``http`` module); this package registers the two schemes
with the options ``dataio.configure_http`` set.
"""

__version__ = "0.1.0"

from dataio_http import _native as _native


def stats() -> dict[str, int]:
    """Responses by status class (``2xx`` ... ``5xx``), ``retries``,
    ``refused`` URLs (internal addresses), ``robots_refused`` and body
    ``bytes``, summed over this process's http(s) backends."""
    return dict(_native.stats())


__all__ = ["__version__", "stats"]
