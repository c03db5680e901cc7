"""Value-weighted attention (Kobayashi et al., 2020, "Attention is Not Only a Weight"): the size of what token j
actually adds to token i's update, ||alpha_ij f(x_j)||, rather than the weight alpha_ij alone.

f(x_j) is token j's vector after the head's value projection (its bias included, as in the paper's f) and the
head's slice of the attention output projection (without its bias, which is added once, not per token): the
part of the layer's output that comes from j. In bert-base, heads that pile weight on [SEP] or [CLS] usually
do so with small f vectors there, so their value-weighted maps are much fainter than their weights (Kobayashi
et al.; not so in every model).

This file combines the per-token transformed vectors with the attention weights; the model computes them
(`BertScopeModel.value_weighted_attention`). Summing over heads takes the norm of the summed vectors, as the
paper does, which needs only the Gram matrix of the heads' f vectors per token, never the (N, S, S, H) stack.

Dimensions: L = layers, N = heads, S = sequence length, H = hidden size.
"""

from __future__ import annotations

import numpy as np


def value_weighted_norms(
    attentions: np.ndarray, value_gram: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """attentions (L, N, S, S) and value_gram (L, S, N, N) with [l, j, h, g] = <f_h(x_j), f_g(x_j)> ->
    (per_head (L, N, S, S), summed (L, S, S), value_norms (L, N, S)), all float64:

    per_head[l, h, i, j] = ||alpha^h_ij f_h(x_j)|| = alpha^h_ij ||f_h(x_j)||
    summed[l, i, j] = ||sum_h alpha^h_ij f_h(x_j)||
    value_norms[l, h, j] = ||f_h(x_j)||
    """
    alpha = np.asarray(attentions, dtype=np.float64)
    gram = np.asarray(value_gram, dtype=np.float64)
    value_norms = np.sqrt(np.clip(np.einsum("ljhh->lhj", gram), 0.0, None))  # the Gram diagonal, (L, N, S)
    per_head = alpha * value_norms[:, :, None, :]  # (L, N, S, S) * (L, N, 1, S)
    # ||sum_h a_h f_h||^2 = sum_{h,g} a_h a_g <f_h, f_g>, for every (i, j) at once
    squared = np.einsum("lhij,ljhg,lgij->lij", alpha, gram, alpha)
    return per_head, np.sqrt(np.clip(squared, 0.0, None)), value_norms
