"""BERT (google-research/bert, HF `BertModel`, `BertForMaskedLM`, `BertForPreTraining`, ...): key names,
config and tokenizer. Everything else is the shared encoder's default, because BERT is where it comes from.
"""

from __future__ import annotations

import re

from ..config import BertConfig
from ..modeling.encoder import BertModel
from ..modeling.heads import BERT_HEADS
from ..pieces import WORDPIECE
from ..tokenizer import WordPieceTokenizer
from .architecture import Architecture, StateDict


def rename_keys(state: StateDict, tie_word_embeddings: bool) -> StateDict:
    """Map the checkpoint's names onto this package's module names (which are HF's).

    Handles: a `module.` prefix (DataParallel), a missing `bert.` prefix (BertModel checkpoints), legacy
    `LayerNorm.gamma/beta`, the duplicated `cls.predictions.decoder.bias`, a tied decoder weight, and the
    `position_ids` buffer older checkpoints carry.
    """
    out: StateDict = {}
    for key, value in state.items():
        key = key.removeprefix("module.")
        if not key.startswith(("bert.", "cls.")):
            key = "bert." + key
        key = re.sub(r"LayerNorm\.gamma$", "LayerNorm.weight", key)
        key = re.sub(r"LayerNorm\.beta$", "LayerNorm.bias", key)
        if key.endswith(("embeddings.position_ids", "embeddings.token_type_ids")):
            continue  # index buffers, not weights
        out[key] = value
    decoder_bias = out.pop("cls.predictions.decoder.bias", None)
    if decoder_bias is not None:
        # transformers' head adds decoder.bias; the two keys are one tied tensor in most checkpoints, but an
        # untied transformers 5 checkpoint can hold different values, and then decoder.bias is the one used.
        out["cls.predictions.bias"] = decoder_bias
    if tie_word_embeddings:
        out.pop("cls.predictions.decoder.weight", None)
    return out


BERT = Architecture(
    model_type="bert",
    name="BERT",
    base_prefix="bert",
    encoder=BertModel,
    heads=BERT_HEADS,
    read_config=BertConfig.from_dict,
    rename_keys=rename_keys,
    read_tokenizer=lambda directory, max_length: WordPieceTokenizer.from_directory(
        directory, max_length=max_length
    ),
    piece_style=WORDPIECE,
)
