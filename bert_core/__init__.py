"""bert_core: a faithful, self-contained BERT with every intermediate exposed, and a numpy analysis API.

import bert_core
m = bert_core.load_pretrained("path/or/hub-id")
r = m.analyze("The bank by the river.")
"""

from .analysis import BertScopeModel
from .checkpoints import load_pretrained
from .config import BertConfig
from .errors import BertScopeError, InputError, MissingHeadError, ModelLoadError
from .interpret import (
    HeadRoles,
    LayerTrajectory,
    RoleStability,
    TokenMap,
    attention_flow,
    attention_rollout,
    head_roles,
    layer_trajectory,
    role_stability,
    token_pca,
)
from .pieces import PieceStyle
from .results import (
    Analysis,
    AttentionDetails,
    Attribution,
    EmbeddingComponents,
    Entity,
    HeadImportance,
    LogitLens,
    MaskPrediction,
    MlmScores,
    ModelInfo,
    PseudoLogLikelihood,
    ValueWeightedAttention,
    Vectors,
)
from .tokenizer import Encoding, WordPieceTokenizer

__all__ = [
    "Analysis",
    "Attribution",
    "Entity",
    "AttentionDetails",
    "BertConfig",
    "BertScopeError",
    "BertScopeModel",
    "EmbeddingComponents",
    "Encoding",
    "HeadImportance",
    "HeadRoles",
    "InputError",
    "LayerTrajectory",
    "LogitLens",
    "MaskPrediction",
    "MissingHeadError",
    "MlmScores",
    "ModelInfo",
    "PieceStyle",
    "ModelLoadError",
    "PseudoLogLikelihood",
    "RoleStability",
    "TokenMap",
    "ValueWeightedAttention",
    "Vectors",
    "WordPieceTokenizer",
    "attention_flow",
    "attention_rollout",
    "head_roles",
    "layer_trajectory",
    "load_pretrained",
    "role_stability",
    "token_pca",
]
