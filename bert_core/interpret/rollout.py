"""Attention rollout (Abnar & Zuidema, 2020, "Quantifying Attention Flow in Transformers"): how much each input
token reaches each position at a layer, following attention through every layer below it.

One layer's map says little about the input: from layer 2 on, a position holds a mix of tokens, not a token.
Rollout multiplies the layers' maps, each made "residual-aware" first: the residual connection carries a
position's own vector past the attention, so half of each step is taken to be the identity.

Dimensions: L = layers, N = heads, S = sequence length.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError


def _check_attentions(attentions: np.ndarray) -> np.ndarray:
    if hasattr(attentions, "attentions"):  # an Analysis, which head_roles and layer_trajectory do take
        raise InputError("pass the analysis's attentions (and its head_mask), not the Analysis itself")
    try:
        a = np.asarray(attentions, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"attentions must be a (layers, heads, S, S) array of numbers: {exc}") from exc
    if a.ndim != 4 or a.shape[-1] != a.shape[-2] or 0 in a.shape:
        raise InputError(f"attentions must be (layers, heads, S, S) with S >= 1, got shape {a.shape}")
    return a


def residual_attention(attentions: np.ndarray, head_mask: np.ndarray | None = None) -> np.ndarray:
    """(L, N, S, S) -> (L, S, S) float64: 0.5 * mean over heads + 0.5 * I, each row renormalised to sum to 1.

    head_mask: (L, N), 0 for a head switched off (`Analysis.head_mask`). Its probabilities are still in
    `Analysis.attentions`, but its output was zeroed, so here its map counts as zeros in the mean: a layer
    whose heads are all off passes each position on as itself. Rows of softmax maps already sum to 1, so the
    renormalisation matters only for such layers (or hand-edited maps), which then still give distributions.
    """
    a = _check_attentions(attentions)
    if head_mask is not None:
        keep = np.asarray(head_mask, dtype=np.float64)
        if keep.shape != a.shape[:2]:
            raise InputError(f"head_mask must be (layers, heads) = {a.shape[:2]}, got shape {keep.shape}")
        a = a * keep[:, :, None, None]
    mixed = 0.5 * a.mean(axis=1) + 0.5 * np.eye(a.shape[-1])  # (L, S, S)
    return mixed / mixed.sum(axis=-1, keepdims=True)


def attention_rollout(attentions: np.ndarray, head_mask: np.ndarray | None = None) -> np.ndarray:
    """Rollout of every layer: (L, N, S, S) attention probabilities -> (L, S, S) float64.

    Row l is A_l @ ... @ A_0 with A the residual-aware maps (`residual_attention`, which takes the run's
    head_mask): entry [l, i, j] is how much input token j contributes to position i after layer l (0-based).
    Each row sums to 1.
    """
    mixed = residual_attention(attentions, head_mask)
    rolled = np.empty_like(mixed)
    rolled[0] = mixed[0]
    for layer in range(1, len(mixed)):
        rolled[layer] = mixed[layer] @ rolled[layer - 1]
    return rolled
