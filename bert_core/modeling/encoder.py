"""The encoder, read top to bottom: embeddings -> (projection) -> L x (self-attention, feed-forward) -> pooler.

Module attribute names are the Hugging Face checkpoint keys (`embeddings.word_embeddings`,
`encoder.layer.N.attention.self.query`, `pooler.dense`, ...), so a checkpoint loads with a strict
`load_state_dict` after its architecture's short rename table (`bert_core.checkpoints`). Every intermediate
comes back in the returned `EncoderOutput`; nothing is kept on the modules.

One forward (`Encoder.forward`) and one layer (`transformer_layer`) serve every architecture, training
(autograd, dropout), analysis with gradients (saliency) and plain inference. BERT's module layout is here;
what the variants change in it is in `variants.py`. The only speed choice is made once, at load time: the
Linear weights pre-packed for oneDNN (`packed.py`); the arithmetic below is the same either way.

Dimensions: B = batch, S = sequence length, H = hidden size, E = embedding size (H unless factorised),
N = heads, D = head size (H / N), L = layers, I = intermediate size, V = vocabulary size.
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
    """The input embedding taken apart; each (B, S, E)."""

    word: Tensor
    segment: Tensor | None  # None where the architecture has no segment (token type) embeddings
    position: Tensor
    summed: Tensor
    normalized: Tensor  # LayerNorm(summed), before dropout (and before any projection to H)


class EncoderOutput(NamedTuple):
    embeddings: EmbeddingOutput
    hidden_states: Tensor  # (L + 1, B, S, H); [0] is what the first layer receives (after any projection)
    attentions: Tensor | None  # (L, B, N, S, S) softmax probabilities; None when not kept
    pooled: Tensor | None  # (B, H), or None when the checkpoint has no pooler
    # The one layer asked for with `details_layer`: its queries, keys, values and raw scores.
    details: AttentionOutput | None = None

    @property
    def last_hidden_state(self) -> Tensor:
        return self.hidden_states[-1]  # (B, S, H)


class BertEmbeddings(nn.Module):
    """word + segment + position, then LayerNorm; E wide. (DistilBERT: no segment table.)"""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        e = config.embedding_dim
        self.word_embeddings = nn.Embedding(config.vocab_size, e, padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, e)
        if config.type_vocab_size:
            self.token_type_embeddings = nn.Embedding(config.type_vocab_size, e)
        else:
            self.token_type_embeddings = None
        self.LayerNorm = nn.LayerNorm(e, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(
        self, input_ids: Tensor, token_type_ids: Tensor, position_ids: Tensor, word: Tensor | None = None
    ) -> EmbeddingOutput:
        """word (B, S, E), when given, stands in for the table's rows (attribution interpolates it)."""
        if word is None:
            word = self.word_embeddings(input_ids)
        position = self.position_embeddings(position_ids)
        if self.token_type_embeddings is None:
            segment = None
            summed = word + position
        else:
            segment = self.token_type_embeddings(token_type_ids)
            # HF adds (word + segment) first, then position; same order keeps the sum bit-identical.
            summed = word + segment + position
        return EmbeddingOutput(word, segment, position, summed, self.LayerNorm(summed))


class LayerParts(NamedTuple):
    """The modules one transformer layer computes with, whatever the checkpoint calls them."""

    query: nn.Module
    key: nn.Module
    value: nn.Module
    num_heads: int
    probs_dropout: nn.Dropout | None  # on the attention probabilities (training only)
    attention_output: nn.Module  # the output projection of the heads' concatenated contexts
    attention_dropout: nn.Dropout | None
    attention_norm: nn.LayerNorm
    ffn_in: nn.Module  # H -> I
    activation: str  # a config hidden_act name
    ffn_out: nn.Module  # I -> H
    ffn_dropout: nn.Dropout | None
    output_norm: nn.LayerNorm


def _project_add_norm(
    dense: nn.Module, dropout: nn.Dropout | None, norm: nn.LayerNorm, x: Tensor, residual: Tensor
) -> Tensor:
    """LayerNorm(dropout(dense(x)) + residual) for x (M, in), residual (M, H). Without dropout the residual
    add rides in the matmul call (fused by oneDNN on packed weights; addmm then add_ otherwise, the
    reference's own rounding)."""
    if dropout is not None and dropout.training and dropout.p > 0:
        summed = dropout(linear(dense, x)) + residual
    else:
        summed = linear(dense, x, residual=residual)
    return F.layer_norm(summed, norm.normalized_shape, norm.weight, norm.bias, norm.eps)


def transformer_layer(
    parts: LayerParts,
    hidden: Tensor,
    additive_mask: Tensor | None,
    head_mask: Tensor | None = None,
    *,
    head_major_keys: bool = False,
    probs_out: Tensor | None = None,
    details: bool = False,
) -> tuple[Tensor, AttentionOutput]:
    """One post-LN layer: self-attention, then the feed-forward block, each with a residual and LayerNorm.
    hidden (B, S, H) -> (B, S, H), and the attention's output (see `attention`)."""
    b, s, h = hidden.shape
    x = hidden.reshape(b * s, h)  # (B, S, H) -> (B * S, H): one matmul per projection, as nn.Linear does
    q, k, v = (linear(m, x).view(b, s, h) for m in (parts.query, parts.key, parts.value))  # each (B, S, H)
    dropout = parts.probs_dropout
    att = attention(
        q,
        k,
        v,
        parts.num_heads,
        additive_mask,
        head_mask,
        head_major_keys=head_major_keys,
        dropout=dropout if dropout is not None and dropout.training else None,
        probs_out=probs_out,
        details=details,
    )
    context = att.context.view(b * s, h)  # (B, S, H) -> (B * S, H)
    attended = _project_add_norm(
        parts.attention_output, parts.attention_dropout, parts.attention_norm, context, x
    )  # (B * S, H)
    inner = linear(parts.ffn_in, attended, activation=parts.activation)  # (B * S, I)
    out = _project_add_norm(parts.ffn_out, parts.ffn_dropout, parts.output_norm, inner, attended)
    return out.view(b, s, h), att


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


class BertLayer(nn.Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.attention = BertAttention(config)
        self.intermediate = BertIntermediate(config)
        self.output = BertOutput(config)
        self.activation = config.hidden_act

    @property
    def parts(self) -> LayerParts:
        sa, so = self.attention.self, self.attention.output
        return LayerParts(
            sa.query,
            sa.key,
            sa.value,
            sa.num_heads,
            sa.dropout,
            so.dense,
            so.dropout,
            so.LayerNorm,
            self.intermediate.dense,
            self.activation,
            self.output.dense,
            self.output.dropout,
            self.output.LayerNorm,
        )


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


class Encoder(nn.Module):
    """The one forward of every architecture. A subclass lays out the modules under the checkpoint's names
    and says, through `layer_parts`, `project` and `pool`, which module does what."""

    embeddings: nn.Module  # (input_ids, token_type_ids, position_ids) -> EmbeddingOutput

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.config = config
        # Set where the Linear weights are packed (heads.Network.pack_weights): attention then copies K^T
        # head-major (see `attention`). Exact mode keeps the reference's calls throughout.
        self.packed = False

    def layer_parts(self) -> list[LayerParts]:
        """The L layers in the order they run (ALBERT runs shared weights several times)."""
        raise NotImplementedError

    def project(self, embedded: Tensor) -> Tensor:
        """(B, S, E) -> (B, S, H): identity unless the embeddings are narrower than the layers."""
        return embedded

    def pool(self, last_hidden: Tensor) -> Tensor | None:
        """(B, S, H) -> (B, H), or None without a pooler."""
        return None

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
        word_embeddings: Tensor | None = None,
    ) -> EncoderOutput:
        """input_ids (B, S) int64; token_type_ids, position_ids (B, S) (default: zeros, and the positions as
        the architecture counts them); attention_mask (B, S) with 1 = real token, 0 = padding; head_mask
        (L, N) with 1 = keep, 0 = switch the head off, or (B, L, N) for a mask per row (ablating many heads in
        one batched call). keep_attentions=False returns no attention stack (1/L of the memory, for callers that
        need only vectors); details_layer asks one layer for its queries, keys, values and raw scores;
        word_embeddings (B, S, E) replaces the word-embedding lookup (for gradients with respect to it)."""
        b, s = input_ids.shape
        c = self.config
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        if position_ids is None and c.position_offset:  # counted as `bert_core.tokenizer.position_ids` counts
            real = (input_ids != c.position_offset - 1).long()
            position_ids = torch.cumsum(real, dim=1) * real + (c.position_offset - 1)
        elif position_ids is None:
            position_ids = torch.arange(s, device=input_ids.device).expand(b, s)
        mask = additive_mask(attention_mask)
        emb = self.embeddings(input_ids, token_type_ids, position_ids, word_embeddings)
        hidden = self.project(self.embeddings.dropout(emb.normalized))  # (B, S, E) -> (B, S, H)

        layers = self.layer_parts()
        hidden_states = _result_buffer((len(layers) + 1, b, s, c.hidden_size), hidden)
        attentions = None
        if keep_attentions:
            attentions = _result_buffer((len(layers), b, c.num_attention_heads, s, s), hidden)
        hidden_states[0] = hidden
        details = None
        head_mask = _by_layer(head_mask)
        for index, parts in enumerate(layers):
            hidden, att = transformer_layer(
                parts,
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
        return EncoderOutput(emb, hidden_states, attentions, self.pool(hidden), details)

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
        layers = self.layer_parts()
        for index in range(start, len(layers)):
            layer_mask = None if head_mask is None else head_mask[index]
            hidden, _ = transformer_layer(
                layers[index], hidden, mask, layer_mask, head_major_keys=self.packed
            )
        return hidden


class BertModel(Encoder):
    """BERT's layout (RoBERTa's and ELECTRA's too). Checkpoint prefix: `bert.` (`roberta.`, `electra.`)."""

    def __init__(self, config: BertConfig, *, add_pooler: bool = True) -> None:
        super().__init__(config)
        self.embeddings = BertEmbeddings(config)
        if config.embedding_dim != config.hidden_size:
            # ELECTRA: small embeddings, projected to the layers' width (transformers names it so)
            self.embeddings_project = nn.Linear(config.embedding_dim, config.hidden_size)
        self.encoder = BertEncoder(config)
        self.pooler = BertPooler(config) if add_pooler else None

    def layer_parts(self) -> list[LayerParts]:
        return [layer.parts for layer in self.encoder.layer]

    def project(self, embedded: Tensor) -> Tensor:
        if not hasattr(self, "embeddings_project"):
            return embedded
        b, s, e = embedded.shape
        return linear(self.embeddings_project, embedded.reshape(b * s, e)).view(
            b, s, -1
        )  # (B * S, E) -> (B, S, H)

    def pool(self, last_hidden: Tensor) -> Tensor | None:
        return None if self.pooler is None else self.pooler(last_hidden)


def _by_layer(head_mask: Tensor | None) -> Tensor | None:
    """A (L, N) or per-row (B, L, N) head mask, indexable by layer: [index] is (N,) or (B, N)."""
    if head_mask is None or head_mask.dim() == 2:
        return head_mask
    return head_mask.transpose(0, 1)  # (B, L, N) -> (L, B, N)
