"""dataio plugin: s3:// and S3-compatible stores (R2, custom endpoints)."""

__version__ = "0.1.0"
