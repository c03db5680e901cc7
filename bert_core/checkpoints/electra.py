"""ELECTRA (Clark et al., 2020): BERT's encoder, trained as a discriminator that says, per token, whether a
small generator replaced it (replaced-token detection, RTD); the generator is a small MLM. Embeddings may be
narrower than the layers (projected by `embeddings_project`); no pooler; WordPiece pieces as BERT's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..config import BertConfig
from ..modeling.encoder import BertModel
from ..modeling.heads import ELECTRA_HEADS
from ..pieces import WORDPIECE
from .architecture import Architecture, rename_keys
from .bert import read_wordpiece

# ElectraConfig's defaults where config.json leaves a key out (a small discriminator's, not BERT-base's): a
# missing embedding_size is 128, and a missing head count 4
DEFAULTS = {"embedding_size": 128, "hidden_size": 256, "num_attention_heads": 4, "intermediate_size": 1024}


def read_config(raw: Mapping[str, Any]) -> BertConfig:
    raw = {**DEFAULTS, **raw}
    config = BertConfig.from_dict(raw)
    if config.embedding_size == config.hidden_size:
        # transformers builds no projection then; neither do we
        return BertConfig.from_dict({**raw, "embedding_size": None})
    return config


ELECTRA = Architecture(
    model_type="electra",
    name="ELECTRA",
    base_prefix="electra",
    encoder=BertModel,
    heads=ELECTRA_HEADS,
    read_config=read_config,
    rename_keys=lambda state, tie: rename_keys(
        state,
        prefix="electra",
        head_roots=("generator_predictions.", "generator_lm_head.", "discriminator_predictions."),
        tied_weights=("generator_lm_head.weight",),
        tie_word_embeddings=tie,
    ),
    read_tokenizer=read_wordpiece,
    piece_style=WORDPIECE,
    lacks=("pooler", "next-sentence prediction"),
)
