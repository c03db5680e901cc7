"""Attention rollout (Abnar & Zuidema, 2020, "Quantifying Attention Flow in Transformers"): how much each input
token reaches each position at a layer, following attention through every layer below it.

One layer's map says little about the input: from layer 2 on, a position holds a mix of tokens, not a token.
Rollout multiplies the layers' maps, each made "residual-aware" first: the residual connection carries a
position's own vector past the attention, so half of each step is taken to be the identity.

Dimensions: L = layers, N = heads, S = sequence length.
"""

from __future__ import annotations

import numpy as np

from ..checks import head_mask_array
from ..errors import InputError
from ..results import Analysis


def _check_attentions(attentions, head_mask=None) -> tuple[np.ndarray, np.ndarray | None]:
    """(attentions as float64, the head mask to apply). An Analysis is read with its own head_mask: its
    attentions alone, passed without it, counted the heads the run had switched off. A head_mask given beside
    one must be that run's (as float32 holds it; a run with none is one of all ones)."""
    if isinstance(attentions, Analysis):
        run = attentions.head_mask
        if head_mask is not None:
            shape = attentions.attentions.shape[:2]
            given = head_mask_array(head_mask, shape)  # float32, as the run holds it
            ran = np.ones(shape, np.float32) if run is None else run
            if not np.array_equal(given, ran):
                raise InputError(
                    "head_mask differs from the one the analysis was run with: pass the analysis alone"
                )
        head_mask, attentions = run, attentions.attentions
    elif hasattr(attentions, "attentions") or hasattr(attentions, "hidden_states"):
        raise InputError(
            f"attentions must be an Analysis or a (layers, heads, S, S) array, got a {type(attentions).__name__}"
        )
    try:
        a = np.asarray(attentions, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"attentions must be a (layers, heads, S, S) array of numbers: {exc}") from exc
    if a.ndim != 4 or a.shape[-1] != a.shape[-2] or 0 in a.shape:
        raise InputError(f"attentions must be (layers, heads, S, S) with S >= 1, got shape {a.shape}")
    # NaN maps rolled out to NaN, and negative ones to rows that looked like distributions ([-0, 1])
    if not np.isfinite(a).all() or a.min() < 0:
        raise InputError("attentions must be finite and non-negative (attention probabilities)")
    return a, head_mask


def residual_attention(attentions, head_mask: np.ndarray | None = None) -> np.ndarray:
    """(L, N, S, S) -> (L, S, S) float64: 0.5 * mean over heads + 0.5 * I, each row renormalised to sum to 1.
    `attentions`: the maps, or an `Analysis`, read with the head_mask it was run with.

    head_mask: (L, N), 0 for a head switched off (`Analysis.head_mask`). Its probabilities are still in
    `Analysis.attentions`, but its output was zeroed, so here its map counts as zeros in the mean: a layer
    whose heads are all off passes each position on as itself. Rows of softmax maps already sum to 1, so the
    renormalisation matters only for such layers (or hand-edited maps), which then still give distributions.
    """
    a, head_mask = _check_attentions(attentions, head_mask)
    if head_mask is not None:
        a = a * head_mask_array(head_mask, a.shape[:2], np.float64)[:, :, None, None]
    mixed = 0.5 * a.mean(axis=1) + 0.5 * np.eye(a.shape[-1])  # (L, S, S)
    return mixed / mixed.sum(axis=-1, keepdims=True)


def attention_rollout(attentions, head_mask: np.ndarray | None = None) -> np.ndarray:
    """Rollout of every layer: (L, N, S, S) attention probabilities -> (L, S, S) float64. `attentions` may be
    an `Analysis`, read with its own head_mask (`attention_rollout(m.analyze(text))`).

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
