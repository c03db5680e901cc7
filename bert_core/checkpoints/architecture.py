"""What an architecture's checkpoints need that the shared code cannot know: one record per family.

Adding an architecture is one file in this package that builds an `Architecture`, plus its line in
`load.ARCHITECTURES`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from ..config import BertConfig
from ..modeling.encoder import Encoder
from ..modeling.heads import Head
from ..pieces import PieceStyle

StateDict = dict[str, torch.Tensor]


@dataclass(frozen=True)
class Architecture:
    model_type: str  # config.json's "model_type"
    name: str  # for people: "BERT"
    base_prefix: str  # where the encoder's weights live in a checkpoint with heads ("bert")
    encoder: type[Encoder]  # the module layout under that prefix
    heads: Mapping[str, Head]  # the heads its checkpoints may have (modeling/heads.py)
    # config.json (as a dict) -> the config the encoder is built from
    read_config: Callable[[Mapping[str, Any]], BertConfig]
    # (checkpoint state, tie_word_embeddings) -> the state under this package's module names
    rename_keys: Callable[[StateDict, bool], StateDict]
    # (directory, config) -> the tokenizer (on the `tokenizers` library) this family uses
    read_tokenizer: Callable[[Path, BertConfig], Any]
    piece_style: PieceStyle  # how its pieces mark word boundaries, for display
    lacks: tuple[str, ...] = ()  # what it does without, compared with BERT, for the model card


# Where every family's fine-tuning heads live (modeling/heads.py): never under the base prefix.
TASK_ROOTS = ("classifier.", "qa_outputs.", "pre_classifier.", "sequence_summary.")


def rename_keys(
    state: StateDict,
    *,
    prefix: str,
    head_roots: tuple[str, ...],
    tied_weights: tuple[str, ...] = (),
    bias_aliases: Mapping[str, str] | None = None,
    tie_word_embeddings: bool = True,
) -> StateDict:
    """The renames every family needs, onto this package's module names (which are the checkpoint's own).

    Handles: a `module.` prefix (DataParallel); a base-model checkpoint saved without `prefix.` (its keys
    gain it, unless they start with one of the heads' roots); legacy `LayerNorm.gamma/beta`; the index
    buffers older checkpoints carry; decoder weights that are the word-embedding table when tied (dropped);
    and a bias stored under a second name (`bias_aliases`: that name -> the one loaded, which it replaces).
    """
    out: StateDict = {}
    for key, value in state.items():
        key = key.removeprefix("module.")
        if not key.startswith((prefix + ".", *head_roots, *TASK_ROOTS)):
            key = f"{prefix}.{key}"
        key = re.sub(r"LayerNorm\.gamma$", "LayerNorm.weight", key)
        key = re.sub(r"LayerNorm\.beta$", "LayerNorm.bias", key)
        if key.endswith(("embeddings.position_ids", "embeddings.token_type_ids")):
            continue  # index buffers, not weights
        out[key] = value
    for alias, name in (bias_aliases or {}).items():
        value = out.pop(alias, None)
        if value is not None:
            # transformers' heads add the aliased bias; in most checkpoints both names hold one tied tensor,
            # but an untied transformers 5 checkpoint can hold different values, and then the alias is used.
            out[name] = value
    if tie_word_embeddings:
        for key in tied_weights:
            out.pop(key, None)
    return out
