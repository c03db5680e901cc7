"""bert_core: a faithful, self-contained BERT with every intermediate exposed, and a numpy analysis API.

import bert_core
m = bert_core.load_pretrained("path/or/hub-id")
r = m.analyze("The bank by the river.")
"""

from .analysis import BertScopeModel
from .checkpoints import load_pretrained
from .config import BertConfig
from .errors import BertScopeError, InputError, MissingHeadError, ModelLoadError
from .pieces import PieceStyle
from .results import Analysis, EmbeddingComponents, MaskPrediction, MlmScores, ModelInfo, Vectors
from .tokenizer import Encoding, WordPieceTokenizer

__all__ = [
    "Analysis",
    "BertConfig",
    "BertScopeError",
    "BertScopeModel",
    "EmbeddingComponents",
    "Encoding",
    "InputError",
    "MaskPrediction",
    "MissingHeadError",
    "MlmScores",
    "ModelInfo",
    "PieceStyle",
    "ModelLoadError",
    "Vectors",
    "WordPieceTokenizer",
    "load_pretrained",
]
