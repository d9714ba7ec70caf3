"""dataio plugin: az:// (Azure Blob Storage)."""

__version__ = "0.1.0"
