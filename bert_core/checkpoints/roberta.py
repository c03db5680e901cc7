"""RoBERTa (Liu et al., 2019): BERT's encoder trained longer on more text, with byte-level BPE pieces ("Ġ"
marks a leading space), no next-sentence prediction, a one-row segment table, and positions that start at
pad_token_id + 1 (fairseq's convention: 514 rows serve 512 tokens).
"""

from __future__ import annotations

import dataclasses

from ..config import BertConfig
from ..modeling.encoder import BertModel
from ..modeling.heads import ROBERTA_HEADS
from ..pieces import PieceStyle
from ..tokenizer import PieceTokenizer
from .architecture import Architecture, rename_keys

# RobertaConfig's defaults where config.json leaves a key out: a missing pad_token_id is 1 there, not BERT's 0,
# and positions are counted from it
DEFAULTS = {"pad_token_id": 1, "vocab_size": 50265}


def read_config(raw) -> BertConfig:
    config = BertConfig.from_dict({**DEFAULTS, **raw})
    return dataclasses.replace(config, position_offset=config.pad_token_id + 1)


ROBERTA = Architecture(
    model_type="roberta",
    name="RoBERTa",
    base_prefix="roberta",
    encoder=BertModel,
    heads=ROBERTA_HEADS,
    read_config=read_config,
    rename_keys=lambda state, tie: rename_keys(
        state,
        prefix="roberta",
        head_roots=("lm_head.",),
        tied_weights=("lm_head.decoder.weight",),
        bias_aliases={"lm_head.decoder.bias": "lm_head.bias"},
        tie_word_embeddings=tie,
    ),
    read_tokenizer=lambda directory, config: PieceTokenizer.from_directory(
        directory,
        model="BPE",
        special_tokens={
            "unk_token": "<unk>",
            "sep_token": "</s>",
            "pad_token": "<pad>",
            "cls_token": "<s>",
            "mask_token": "<mask>",
        },
        max_length=config.max_tokens,
        position_offset=config.position_offset,
    ),
    piece_style=PieceStyle(
        continuation_prefix=None,
        word_start_marker="Ġ",
        unk_token="<unk>",
        name="byte-level BPE",
        byte_level=True,
    ),
    lacks=("next-sentence prediction",),
)
