"""dataio plugin: GPUDirect Storage (cuFile) reads for device='cuda:N'."""

__version__ = "0.1.0"
