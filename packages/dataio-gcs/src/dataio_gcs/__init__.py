"""dataio plugin: gs:// (Google Cloud Storage)."""

__version__ = "0.1.0"
