"""Torch-free analyses over numpy results, one file each: rollout and flow, head roles, hidden-state geometry,
value-weighted attention's arithmetic. The ones that need the model (ablation, pseudo-likelihood, logit lens,
a layer's q/k/v) are `BertScopeModel` methods."""

from .flow import MAX_FLOW_TOKENS, attention_flow, max_flow_through_layers
from .hidden import LayerTrajectory, TokenMap, cosine_matrix, layer_trajectory, token_pca
from .roles import (
    BROAD_THRESHOLD,
    ROLE_THRESHOLD,
    ROLES,
    HeadRoles,
    RoleStability,
    head_roles,
    is_punctuation,
    role_stability,
)
from .rollout import attention_rollout, residual_attention
from .value_weighted import value_weighted_norms

__all__ = [
    "BROAD_THRESHOLD",
    "MAX_FLOW_TOKENS",
    "ROLES",
    "ROLE_THRESHOLD",
    "HeadRoles",
    "LayerTrajectory",
    "RoleStability",
    "TokenMap",
    "attention_flow",
    "attention_rollout",
    "cosine_matrix",
    "head_roles",
    "is_punctuation",
    "layer_trajectory",
    "max_flow_through_layers",
    "residual_attention",
    "role_stability",
    "token_pca",
    "value_weighted_norms",
]
