"""dataio plugin: hf:// (Hugging Face Hub models, datasets, spaces).

``hf://org/model/path``, ``hf://datasets/org/name@revision/path``,
``hf://spaces/org/name/path``. A Python backend on ``huggingface_hub``:
ranged HTTP reads of resolve URLs, listings from the tree API, and writes and
deletes as commits (docs/arch.md says why this one is not native).
"""

__version__ = "0.1.0"
