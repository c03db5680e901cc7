"""Pre-training BERT from scratch: the objectives, a vocabulary trainer, a corpus generator, the loop.

Masking (`masking`) and pair construction (`pairs`) are numpy-only, so the app can show a masking draw
without torch; `train` imports torch and is loaded only when training.
"""

from .masking import (
    IGNORE_INDEX,
    MaskAction,
    MaskedSequence,
    MaskingConfig,
    StaticMasker,
    mask_tokens,
    ordinary_token_ids,
    replacement_token_ids,
    special_token_ids,
)
from .pairs import IS_NEXT, NOT_NEXT, SentencePair, nsp_pair, pair_from_two, sop_pair

__all__ = [
    "IGNORE_INDEX",
    "IS_NEXT",
    "NOT_NEXT",
    "MaskAction",
    "MaskedSequence",
    "MaskingConfig",
    "SentencePair",
    "StaticMasker",
    "mask_tokens",
    "nsp_pair",
    "ordinary_token_ids",
    "pair_from_two",
    "replacement_token_ids",
    "sop_pair",
    "special_token_ids",
]
