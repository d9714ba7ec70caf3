"""dataio plugin: one-sided RDMA transport over libfabric, exposed as dataio.rdma."""

__version__ = "0.1.0"
