"""Checkpoints: finding and reading files (files.py), one record per architecture (bert.py, ...), and
`load_pretrained` (load.py)."""

from .files import (
    complete_snapshot_in_cache,
    looks_like_hub_id,
    read_safetensors,
    read_state_dict,
    resolve_source,
)
from .load import ARCHITECTURES, config_file, load_pretrained

__all__ = [
    "ARCHITECTURES",
    "complete_snapshot_in_cache",
    "config_file",
    "load_pretrained",
    "looks_like_hub_id",
    "read_safetensors",
    "read_state_dict",
    "resolve_source",
]
