"""bert_core: a faithful, self-contained BERT with every intermediate exposed, and a numpy analysis API.

import bert_core
m = bert_core.load_pretrained("path/or/hub-id")
r = m.analyze("The bank by the river.")
"""

from typing import TYPE_CHECKING

from .config import BertConfig
from .errors import BertScopeError, InputError, MissingHeadError, ModelLoadError
from .interpret import (
    HeadRoles,
    LayerTrajectory,
    RoleStability,
    TokenMap,
    attention_flow,
    attention_rollout,
    cosine_matrix,
    head_roles,
    layer_trajectory,
    role_stability,
    token_pca,
)
from .pieces import PieceStyle
from .results import (
    PLL_SCORINGS,
    Analysis,
    AttentionDetails,
    Attribution,
    EmbeddingComponents,
    Entity,
    HeadImportance,
    LabRecipe,
    LogitLens,
    MaskPrediction,
    MlmScores,
    ModelInfo,
    PseudoLogLikelihood,
    ValueWeightedAttention,
    Vectors,
    WordVectors,
)
from .tokenizer import Encoding, WordPieceTokenizer

if TYPE_CHECKING:
    from .analysis import BertScopeModel
    from .checkpoints import load_pretrained


def __getattr__(name: str):
    # The model and its loader bring torch (seconds and hundreds of MB to import); the rest of the package is
    # numpy and tokenizers. Imported on first use, so the interpret functions, the result types and the
    # pre-training page's masking draws do not pay for torch, and the app's modules import without it.
    if name == "BertScopeModel":
        from .analysis import BertScopeModel

        return BertScopeModel
    if name == "load_pretrained":
        from .checkpoints import load_pretrained

        return load_pretrained
    if name in ("checkpoints", "modeling", "analysis", "analysis_passes", "tasks", "finetuning"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'bert_core' has no attribute {name!r}")


__all__ = [
    "PLL_SCORINGS",
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
    "LabRecipe",
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
    "WordVectors",
    "attention_flow",
    "attention_rollout",
    "cosine_matrix",
    "head_roles",
    "layer_trajectory",
    "load_pretrained",
    "role_stability",
    "token_pca",
]
