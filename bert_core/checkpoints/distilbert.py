"""DistilBERT (Sanh et al., 2019): six layers distilled from BERT-base. Same arithmetic as BERT's layers, its
own module names (`q_lin`, `sa_layer_norm`, `ffn.lin1`, `vocab_transform`, ...), no segment embeddings, no
pooler, no next-sentence prediction; WordPiece pieces as BERT's. `sinusoidal_pos_embds` checkpoints store
their (fixed) position table like a learned one, so they load the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..config import BertConfig
from ..errors import ModelLoadError
from ..modeling.heads import DISTILBERT_HEADS
from ..modeling.variants import DistilBertModel
from ..pieces import WORDPIECE
from .architecture import Architecture, rename_keys
from .bert import read_wordpiece

# DistilBERT's config.json keys -> BertConfig's
_KEYS = {
    "dim": "hidden_size",
    "n_layers": "num_hidden_layers",
    "n_heads": "num_attention_heads",
    "hidden_dim": "intermediate_size",
    "activation": "hidden_act",
    "dropout": "hidden_dropout_prob",
    "attention_dropout": "attention_probs_dropout_prob",
}
# transformers' DistilBertConfig reads these three under BERT's names too, and then the BERT name wins; the rest
# of BERT's names it ignores
_ALIASED = ("dim", "n_layers", "n_heads")
# DistilBertConfig's defaults where config.json leaves a key out (six layers, not BertConfig's twelve)
DEFAULTS = {"dim": 768, "n_layers": 6, "n_heads": 12, "hidden_dim": 3072, "activation": "gelu"}


def read_config(raw: Mapping[str, Any]) -> BertConfig:
    raw = {**DEFAULTS, **raw}
    data = {k: v for k, v in raw.items() if k not in _KEYS.values()}
    for theirs, ours in _KEYS.items():
        if theirs in raw:
            data[ours] = raw[ours] if theirs in _ALIASED and ours in raw else raw[theirs]
    if not isinstance(data["num_hidden_layers"], int) or not isinstance(data["hidden_size"], int):
        raise ModelLoadError("config keys 'n_layers' and 'dim' must be integers")
    # no segment table; DistilBERT's LayerNorms all use 1e-12
    data.update(type_vocab_size=0, layer_norm_eps=1e-12)
    return BertConfig.from_dict(data)


DISTILBERT = Architecture(
    model_type="distilbert",
    name="DistilBERT",
    base_prefix="distilbert",
    encoder=DistilBertModel,
    heads=DISTILBERT_HEADS,
    read_config=read_config,
    rename_keys=lambda state, tie: rename_keys(
        state,
        prefix="distilbert",
        head_roots=("vocab_transform.", "vocab_layer_norm.", "vocab_projector."),
        tied_weights=("vocab_projector.weight",),
        tie_word_embeddings=tie,
    ),
    read_tokenizer=read_wordpiece,
    piece_style=WORDPIECE,
    lacks=("segment embeddings", "pooler", "next-sentence prediction"),
)
