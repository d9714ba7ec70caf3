"""dataio plugin: hf:// (Hugging Face Hub models, datasets, spaces)."""

__version__ = "0.1.0"
