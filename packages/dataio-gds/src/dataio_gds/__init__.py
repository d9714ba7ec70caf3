"""dataio plugin: GPUDirect Storage (cuFile) reads for ``device="cuda:N"``.

``dataio.read_safetensors(path, framework="torch", device="cuda:0")`` uses
this plugin when it is installed (it registers a device reader for
``"cuda"``): cuFile straight into device memory when the library loads,
pinned-host staging with overlapping copies otherwise.
"""

from .reader import GdsReader, read_into_device

__version__ = "0.1.0"
__all__ = ["GdsReader", "read_into_device"]
