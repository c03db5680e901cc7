"""Scaled dot-product self-attention, once, for every path (exact or packed weights; inference or autograd).

Dimensions: B = batch, S = sequence length, H = hidden size, N = heads, D = head size (H / N).
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor


class AttentionOutput(NamedTuple):
    context: Tensor  # (B, S, H): each head's weighted sum of values, heads side by side
    probs: Tensor  # (B, N, S, S): softmax probabilities, rows sum to 1 (before dropout and head mask)
    # With details=True only (None otherwise): the per-head queries, keys and values (B, N, S, D) and the
    # scaled scores q.k / sqrt(D) before the mask and softmax (B, N, S, S).
    queries: Tensor | None = None
    keys: Tensor | None = None
    values: Tensor | None = None
    scores: Tensor | None = None


def attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    num_heads: int,
    additive_mask: Tensor | None = None,
    head_mask: Tensor | None = None,
    *,
    head_major_keys: bool = False,
    dropout: torch.nn.Dropout | None = None,
    probs_out: Tensor | None = None,
    details: bool = False,
) -> AttentionOutput:
    """softmax(q k^T / sqrt(D) + mask) v per head, for q, k, v (B, S, H) already projected.

    additive_mask (B, 1, 1, S): 0 for real keys, the most negative float for padding. head_mask (N,) or (B, N):
    1 keeps a head, 0 zeroes its output (its probabilities are still returned); (B, N) gives every row of the
    batch its own heads, so one call can ablate a different head per row. probs_out (B, N, S, S): where to write
    the probabilities without autograd (the caller's result stack), saving a copy of the largest tensor.

    head_major_keys copies K^T head-major, (B, N, D, S), before the score matmul. The packed path asks for it:
    as a transposed view MKL's score matmul had a long tail at 512 tokens (p90 ~5x its median). Exact mode
    keeps the reference's transposed view, which MKL rounds differently below ~12 tokens.
    """
    b, s, h = q.shape
    d = h // num_heads
    q, k, v = (x.view(b, s, num_heads, d).transpose(1, 2) for x in (q, k, v))  # (B, S, H) -> (B, N, S, D)
    kt = k.transpose(-1, -2)  # (B, N, D, S), a view
    if head_major_keys:
        kt = kt.contiguous()
    # In-place steps are safe under autograd too: a matmul's backward does not read its own output.
    in_place_out = probs_out if probs_out is not None and not torch.is_grad_enabled() else None
    if in_place_out is not None:
        scores = torch.matmul(q, kt, out=in_place_out).mul_(d**-0.5)
    else:
        scores = torch.matmul(q, kt) * (d**-0.5)  # (B, N, S, S)
    raw_scores = scores.clone() if details else None
    if additive_mask is not None:
        scores.add_(additive_mask)
    if in_place_out is not None:
        probs = torch.softmax(scores, dim=-1, out=scores)  # rows are independent, so in place is exact
    else:
        probs = torch.softmax(scores, dim=-1)
        if probs_out is not None:
            probs_out.copy_(probs)
    weights = probs if dropout is None else dropout(probs)
    if head_mask is not None:
        rows = head_mask.shape[0] if head_mask.dim() == 2 else 1
        weights = weights * head_mask.view(rows, num_heads, 1, 1)  # (N,) or (B, N) -> (1 or B, N, 1, 1)
    context = torch.matmul(weights, v)  # (B, N, S, D)
    context = context.transpose(1, 2).reshape(b, s, h)  # (B, N, S, D) -> (B, S, H)
    if not details:
        return AttentionOutput(context, probs)
    return AttentionOutput(context, probs, q, k, v, raw_scores)
