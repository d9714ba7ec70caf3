"""dataio-rdma: one-sided RDMA over libfabric, exposed as ``dataio.rdma``.

    import dataio.rdma as rdma
    with rdma.serve(bind="0.0.0.0:0", buffer_size=1 << 20) as server:
        with rdma.connect(server.local_addr) as client:
            rdma.write(client, offset=0, data=b"hello rdma")
            assert rdma.read(client, offset=0, size=10) == b"hello rdma"

libfabric (``libfabric.so.1``) is opened with dlopen the first time it is
needed, so importing this package never fails for its absence; ``available()``,
``info()`` and ``diagnose()`` say what the host offers.
"""

from . import _api
from ._api import (  # noqa: F401 - re-exported: __all__ below takes _api.__all__
    DEFAULT_CHUNK_SIZE,
    DEFAULT_MAX_INFLIGHT,
    Client,
    Server,
    available,
    connect,
    diagnose,
    info,
    read,
    read_into,
    serve,
    serve_file,
    write,
)
from .errors import RdmaDisconnectedError, RdmaUnavailableError

__version__ = "0.1.0"
__all__ = ["__version__", "RdmaDisconnectedError", "RdmaUnavailableError", *_api.__all__]
