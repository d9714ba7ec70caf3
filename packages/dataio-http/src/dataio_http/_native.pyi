from collections.abc import Mapping
from typing import Any

__version__: str

def backend(scheme: str, options: Mapping[str, Any]) -> Any: ...
def stats() -> dict[str, int]: ...
