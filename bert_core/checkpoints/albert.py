"""ALBERT (Lan et al., 2020): factorised embeddings (E, e.g. 128, projected to H), one set of layer weights
shared by all layers (in `num_hidden_groups` groups), SentencePiece pieces ("▁" marks a word start), and
sentence-order prediction (SOP) instead of next-sentence prediction.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..config import BertConfig
from ..errors import ModelLoadError
from ..modeling.heads import ALBERT_HEADS
from ..modeling.variants import AlbertModel
from ..pieces import PieceStyle
from ..tokenizer import PieceTokenizer
from .architecture import Architecture, rename_keys

# AlbertConfig's defaults where config.json leaves a key out (ALBERT-xxlarge's sizes, not BERT-base's)
DEFAULTS = {
    "vocab_size": 30000,
    "embedding_size": 128,
    "hidden_size": 4096,
    "num_attention_heads": 64,
    "intermediate_size": 16384,
    "hidden_act": "gelu_new",
    "hidden_dropout_prob": 0.0,  # what fine-tuning an ALBERT whose config leaves them out drops
    "attention_probs_dropout_prob": 0.0,
}


def read_config(raw: Mapping[str, Any]) -> BertConfig:
    config = BertConfig.from_dict({**DEFAULTS, **raw})
    if config.inner_group_num != 1:
        # Each run of a group would then be several layers deep; every public ALBERT uses 1.
        raise ModelLoadError(
            f"config key 'inner_group_num' = {config.inner_group_num}: BERTScope reads ALBERT checkpoints with "
            "one layer per group run (inner_group_num = 1)"
        )
    return config


ALBERT = Architecture(
    model_type="albert",
    name="ALBERT",
    base_prefix="albert",
    encoder=AlbertModel,
    heads=ALBERT_HEADS,
    read_config=read_config,
    rename_keys=lambda state, tie: rename_keys(
        state,
        prefix="albert",
        head_roots=("predictions.", "sop_classifier."),
        tied_weights=("predictions.decoder.weight",),
        bias_aliases={"predictions.decoder.bias": "predictions.bias"},
        tie_word_embeddings=tie,
    ),
    read_tokenizer=lambda directory, config: PieceTokenizer.from_directory(
        directory,
        model="Unigram",
        special_tokens={
            "unk_token": "<unk>",
            "sep_token": "[SEP]",
            "pad_token": "<pad>",
            "cls_token": "[CLS]",
            "mask_token": "[MASK]",
        },
        max_length=config.max_tokens,
    ),
    piece_style=PieceStyle(
        continuation_prefix=None, word_start_marker="▁", unk_token="<unk>", name="SentencePiece"
    ),
    # the architecture's, said of every checkpoint: "(it has sentence-order prediction)" was said of checkpoints
    # without that head too; the card's heads line names SOP where a checkpoint has it
    lacks=("next-sentence prediction",),
)
