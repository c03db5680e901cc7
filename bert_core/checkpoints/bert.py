"""BERT (google-research/bert, HF `BertModel`, `BertForMaskedLM`, `BertForPreTraining`, ...): key names,
config and tokenizer. Everything else is the shared encoder's default, because BERT is where it comes from.
"""

from __future__ import annotations

from pathlib import Path

from ..config import BertConfig
from ..modeling.encoder import BertModel
from ..modeling.heads import BERT_HEADS
from ..pieces import WORDPIECE
from ..tokenizer import WordPieceTokenizer
from .architecture import Architecture, rename_keys


def read_wordpiece(directory: Path, config: BertConfig) -> WordPieceTokenizer:
    """BERT's WordPiece tokenizer (DistilBERT and ELECTRA use it too)."""
    return WordPieceTokenizer.from_directory(directory, max_length=config.max_tokens)


BERT = Architecture(
    model_type="bert",
    name="BERT",
    base_prefix="bert",
    encoder=BertModel,
    heads=BERT_HEADS,
    read_config=BertConfig.from_dict,
    rename_keys=lambda state, tie: rename_keys(
        state,
        prefix="bert",
        head_roots=("cls.",),
        tied_weights=("cls.predictions.decoder.weight",),
        bias_aliases={"cls.predictions.decoder.bias": "cls.predictions.bias"},
        tie_word_embeddings=tie,
    ),
    read_tokenizer=read_wordpiece,
    piece_style=WORDPIECE,
)
