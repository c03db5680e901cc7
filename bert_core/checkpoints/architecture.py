"""What an architecture's checkpoints need that the shared code cannot know: one record per family.

Adding an architecture is one file in this package that builds an `Architecture`, plus its line in
`load.ARCHITECTURES`.
"""

from __future__ import annotations

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
    # (directory, max_length) -> the tokenizer (from the `tokenizers` library) this family uses
    read_tokenizer: Callable[[Path, int], Any]
    piece_style: PieceStyle  # how its pieces mark word boundaries, for display
    lacks: tuple[str, ...] = ()  # what it does without, compared with BERT, for the model card
