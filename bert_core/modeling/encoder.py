"""The BERT encoder, read top to bottom: embeddings -> L x (self-attention, feed-forward) -> pooler.

Module attribute names are the Hugging Face checkpoint keys (`embeddings.word_embeddings`,
`encoder.layer.N.attention.self.query`, `pooler.dense`, ...), so a checkpoint loads with a strict
`load_state_dict` after its architecture's short rename table (`bert_core.checkpoints`). Every intermediate
comes back in the returned `EncoderOutput`; nothing is kept on the modules.

One forward serves training (autograd, dropout), analysis with gradients (saliency) and plain inference. The
only speed choice is made once, at load time: `pack_weights()` holds the Linear weights pre-packed for oneDNN
(`packed.py`); the arithmetic below is the same either way.

Dimensions: B = batch, S = sequence length, H = hidden size, N = heads, D = head size (H / N),
L = layers, I = intermediate size, V = vocabulary size.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..config import BertConfig
from .attention import AttentionOutput, attention
from .packed import linear


def _result_buffer(shape: tuple[int, ...], like: Tensor) -> Tensor:
    """An uninitialised tensor for a large result the caller keeps (the attention and hidden-state stacks).

    On CPU it is allocated by numpy, which asks the kernel for transparent huge pages on large arrays: writing
    a fresh 151 MB attention stack (bert-base, 512 tokens) then takes ~10 ms of page faults instead of ~34 ms
    with 4 KB pages. The results become numpy arrays anyway, so nothing is copied later."""
    if like.device.type == "cpu" and like.dtype == torch.float32:
        return torch.from_numpy(np.empty(shape, dtype=np.float32))
    return torch.empty(shape, dtype=like.dtype, device=like.device)


class EmbeddingOutput(NamedTuple):
    """The input embedding taken apart; each (B, S, H)."""

    word: Tensor
    segment: Tensor
    position: Tensor
    summed: Tensor
    normalized: Tensor  # LayerNorm(summed), before dropout: what layer 0 receives in eval mode


class EncoderOutput(NamedTuple):
    embeddings: EmbeddingOutput
    hidden_states: Tensor  # (L + 1, B, S, H); [0] is what the first layer receives
    attentions: Tensor | None  # (L, B, N, S, S) softmax probabilities; None when not kept
    pooled: Tensor | None  # (B, H), or None when the checkpoint has no pooler
    # The one layer asked for with `details_layer`: its queries, keys, values and raw scores.
    details: AttentionOutput | None = None

    @property
    def last_hidden_state(self) -> Tensor:
        return self.hidden_states[-1]  # (B, S, H)


class BertEmbeddings(nn.Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.word_embeddings = nn.Embedding(
            config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id
        )
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids: Tensor, token_type_ids: Tensor, position_ids: Tensor) -> EmbeddingOutput:
        word = self.word_embeddings(input_ids)
        segment = self.token_type_embeddings(token_type_ids)
        position = self.position_embeddings(position_ids)
        # HF adds (word + segment) first, then position; same order keeps the sum bit-identical.
        summed = word + segment + position
        return EmbeddingOutput(word, segment, position, summed, self.LayerNorm(summed))


class BertSelfAttention(nn.Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.query = nn.Linear(config.hidden_size, config.hidden_size)
        self.key = nn.Linear(config.hidden_size, config.hidden_size)
        self.value = nn.Linear(config.hidden_size, config.hidden_size)
        self.dropout = nn.Dropout(config.attention_probs_dropout_prob)


class BertSelfOutput(nn.Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)


class BertAttention(nn.Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.self = BertSelfAttention(config)
        self.output = BertSelfOutput(config)


class BertIntermediate(nn.Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)


class BertOutput(nn.Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(config.intermediate_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)


def _project_add_norm(dense: nn.Module, dropout: nn.Dropout, norm: nn.LayerNorm, x: Tensor, residual: Tensor):
    """LayerNorm(dropout(dense(x)) + residual) for x (M, in), residual (M, H). Without dropout the residual
    add rides in the matmul call (fused by oneDNN on packed weights; addmm then add_ otherwise, the
    reference's own rounding)."""
    if dropout.training and dropout.p > 0:
        summed = dropout(linear(dense, x)) + residual
    else:
        summed = linear(dense, x, residual=residual)
    return F.layer_norm(summed, norm.normalized_shape, norm.weight, norm.bias, norm.eps)


class BertLayer(nn.Module):
    """Self-attention, then the feed-forward block, each with a residual connection and LayerNorm (post-LN)."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.attention = BertAttention(config)
        self.intermediate = BertIntermediate(config)
        self.output = BertOutput(config)
        self.activation = config.hidden_act

    def forward(
        self,
        hidden: Tensor,
        additive_mask: Tensor | None,
        head_mask: Tensor | None = None,
        *,
        head_major_keys: bool = False,
        probs_out: Tensor | None = None,
        details: bool = False,
    ) -> tuple[Tensor, AttentionOutput]:
        """hidden (B, S, H) -> (B, S, H) and the attention's output (see `attention`)."""
        b, s, h = hidden.shape
        x = hidden.reshape(b * s, h)  # (B, S, H) -> (B * S, H): one matmul per projection, as nn.Linear does
        sa = self.attention.self
        q, k, v = (linear(m, x).view(b, s, h) for m in (sa.query, sa.key, sa.value))  # each (B, S, H)
        att = attention(
            q,
            k,
            v,
            sa.num_heads,
            additive_mask,
            head_mask,
            head_major_keys=head_major_keys,
            dropout=sa.dropout if sa.dropout.training else None,
            probs_out=probs_out,
            details=details,
        )
        so = self.attention.output
        context = att.context.view(b * s, h)  # (B, S, H) -> (B * S, H)
        attended = _project_add_norm(so.dense, so.dropout, so.LayerNorm, context, x)  # (B * S, H)
        inner = linear(self.intermediate.dense, attended, activation=self.activation)  # (B * S, I)
        out = self.output
        result = _project_add_norm(out.dense, out.dropout, out.LayerNorm, inner, attended)
        return result.view(b, s, h), att


class BertEncoder(nn.Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.layer = nn.ModuleList(BertLayer(config) for _ in range(config.num_hidden_layers))


class BertPooler(nn.Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, sequence: Tensor) -> Tensor:
        return torch.tanh(linear(self.dense, sequence[:, 0]))  # (B, H) from the first token's vector


def additive_mask(attention_mask: Tensor | None) -> Tensor | None:
    """(B, S) with 1 = real token, 0 = padding -> (B, 1, 1, S): padding keys get the most negative float, as
    HF does, so their softmax weight underflows to exactly zero."""
    if attention_mask is None:
        return None
    keep = attention_mask[:, None, None, :].to(torch.float32)
    return (1.0 - keep) * torch.finfo(torch.float32).min


class BertModel(nn.Module):
    """Embeddings + encoder (+ pooler). Checkpoint prefix: `bert.`."""

    def __init__(self, config: BertConfig, *, add_pooler: bool = True) -> None:
        super().__init__()
        self.config = config
        self.embeddings = BertEmbeddings(config)
        self.encoder = BertEncoder(config)
        self.pooler = BertPooler(config) if add_pooler else None
        # Set where the Linear weights are packed (heads.Network.pack_weights): attention then copies K^T
        # head-major (see `attention`). Exact mode keeps the reference's calls throughout.
        self.packed = False

    def forward(
        self,
        input_ids: Tensor,
        token_type_ids: Tensor | None = None,
        position_ids: Tensor | None = None,
        attention_mask: Tensor | None = None,
        head_mask: Tensor | None = None,
        *,
        keep_attentions: bool = True,
        details_layer: int | None = None,
    ) -> EncoderOutput:
        """input_ids (B, S) int64; token_type_ids, position_ids (B, S) (default: zeros, 0..S-1);
        attention_mask (B, S) with 1 = real token, 0 = padding; head_mask (L, N) with 1 = keep, 0 = switch
        the head off, or (B, L, N) for a mask per row (ablating many heads in one batched call). keep_attentions=False returns no attention stack (1/L of the memory, for callers that
        need only vectors); details_layer asks one layer for its queries, keys, values and raw scores."""
        b, s = input_ids.shape
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        if position_ids is None:
            position_ids = torch.arange(s, device=input_ids.device).expand(b, s)
        mask = additive_mask(attention_mask)
        emb = self.embeddings(input_ids, token_type_ids, position_ids)
        hidden = self.embeddings.dropout(emb.normalized)  # (B, S, H)

        c = self.config
        hidden_states = _result_buffer((c.num_hidden_layers + 1, b, s, c.hidden_size), hidden)
        attentions = None
        if keep_attentions:
            attentions = _result_buffer((c.num_hidden_layers, b, c.num_attention_heads, s, s), hidden)
        hidden_states[0] = hidden
        details = None
        head_mask = _by_layer(head_mask)
        for index, layer in enumerate(self.encoder.layer):
            hidden, att = layer(
                hidden,
                mask,
                None if head_mask is None else head_mask[index],
                head_major_keys=self.packed,
                probs_out=None if attentions is None else attentions[index],
                details=index == details_layer,
            )
            hidden_states[index + 1] = hidden
            if index == details_layer:
                details = att
        pooled = self.pooler(hidden) if self.pooler is not None else None
        return EncoderOutput(emb, hidden_states, attentions, pooled, details)

    def run_layers(
        self,
        hidden: Tensor,
        start: int,
        attention_mask: Tensor | None = None,
        head_mask: Tensor | None = None,
    ) -> Tensor:
        """Layers start..L-1 only: hidden (B, S, H) is what layer `start` reads (`hidden_states[start]` of a
        forward) -> the last layer's output (B, S, H); nothing else is kept. For probes that change only the
        later layers (a head switched off in layer `start`), so the layers below are not run again for every
        row. attention_mask and head_mask (indexed by absolute layer) as in `forward`."""
        mask = additive_mask(attention_mask)
        head_mask = _by_layer(head_mask)
        for index in range(start, len(self.encoder.layer)):
            layer_mask = None if head_mask is None else head_mask[index]
            hidden, _ = self.encoder.layer[index](hidden, mask, layer_mask, head_major_keys=self.packed)
        return hidden


def _by_layer(head_mask: Tensor | None) -> Tensor | None:
    """A (L, N) or per-row (B, L, N) head mask, indexable by layer: [index] is (N,) or (B, N)."""
    if head_mask is None or head_mask.dim() == 2:
        return head_mask
    return head_mask.transpose(0, 1)  # (B, L, N) -> (L, B, N)
