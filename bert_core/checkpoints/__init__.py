"""Checkpoints: finding and reading files (files.py), one record per architecture (bert.py, ...), and
`load_pretrained` (load.py)."""

from .files import looks_like_hub_id, read_safetensors, read_state_dict, resolve_source
from .load import ARCHITECTURES, load_pretrained

__all__ = [
    "ARCHITECTURES",
    "load_pretrained",
    "looks_like_hub_id",
    "read_safetensors",
    "read_state_dict",
    "resolve_source",
]
