"""BERT in PyTorch, written so every intermediate comes back as a return value.

Module attribute names are the Hugging Face checkpoint keys (`bert.embeddings.word_embeddings`,
`bert.encoder.layer.N.attention.self.query`, `cls.predictions.transform.dense`, ...), so a checkpoint
loads with a strict `load_state_dict` after the short rename table in `bert_core.loading`.

Dimensions: B = batch, S = sequence length, H = hidden size, N = heads, D = head size (H / N),
L = layers, I = intermediate size, V = vocabulary size.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..config import BertConfig
from . import fused
from .packed import PackedLinear, pack_linears, unpack_linears


def _gelu_tanh_formula(x: Tensor) -> Tensor:
    # transformers' "gelu_new" spells the tanh approximation out; keep the same arithmetic order for parity.
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def _gelu_fast(x: Tensor) -> Tensor:
    return 0.5 * x * (1.0 + torch.tanh(x * 0.7978845608 * (1.0 + 0.044715 * x * x)))


ACTIVATIONS = {
    "gelu": F.gelu,
    "gelu_new": _gelu_tanh_formula,
    "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "gelu_fast": _gelu_fast,
    "relu": F.relu,
    "silu": F.silu,
    "swish": F.silu,
    "tanh": torch.tanh,
}


def _project(layer: nn.Linear | PackedLinear, x: Tensor, residual: Tensor | None = None) -> Tensor:
    """x (M, in) -> (M, out), plus residual (M, out) when given. A plain Linear runs the reference's own calls
    (addmm, then add_: bit-identical to it); a packed one runs oneDNN on its pre-packed weight, the residual
    add fused in (see packed.py)."""
    if type(layer) is nn.Linear:
        out = torch.addmm(layer.bias, x, layer.weight.t())
        return out if residual is None else out.add_(residual)
    return layer(x) if residual is None else layer.forward_add(x, residual)


def _project_act(layer: nn.Linear | PackedLinear, x: Tensor, act_name: str) -> Tensor:
    """act(x W^T + b) for the FFN's first matmul: fused into the packed call for the erf GELU (BERT's own)."""
    if act_name == "gelu" and isinstance(layer, PackedLinear):
        return layer.forward_gelu(x)
    return ACTIVATIONS[act_name](_project(layer, x))


def _layer_norm(
    norm: nn.LayerNorm, x: Tensor, fast: bool, out: Tensor | None = None, residual: Tensor | None = None
) -> Tensor:
    """norm(x + residual) (residual (M, H) or None) for x (M, H), into out when given; out=x asks for it in
    place where that is possible (without a residual the library path returns a new tensor instead). Callers
    use the returned tensor. With fast, the fused kernel (fused.py) does it where it loads, adding the residual
    as it reads and writing into out directly. Otherwise the reference's own calls: add, then F.layer_norm."""
    if fast:
        target = torch.empty_like(x) if out is None else out
        if fused.layer_norm(x, norm.weight, norm.bias, norm.eps, target, residual):
            return target
    if residual is not None:
        x = x + residual
    result = F.layer_norm(x, norm.normalized_shape, norm.weight, norm.bias, norm.eps)
    return result if out is None or out is x else out.copy_(result)


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
    hidden_states: tuple[Tensor, ...]  # L + 1 tensors (B, S, H); [0] is the embedding output
    attentions: tuple[Tensor, ...]  # L tensors (B, N, S, S): softmax probabilities, rows sum to 1
    pooled: Tensor | None  # (B, H), or None when the checkpoint has no pooler
    # (L, B, N, S, S): the same probabilities as one tensor, when the inference path wrote them straight into
    # one buffer (`attentions` are then views of it); None on the autograd path.
    attention_stack: Tensor | None = None
    # (L + 1, B, S, H): likewise for the hidden states on the inference path; None on the autograd path.
    hidden_stack: Tensor | None = None

    @property
    def last_hidden_state(self) -> Tensor:
        return self.hidden_states[-1]


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
        normalized = self.LayerNorm(summed)
        return EmbeddingOutput(word, segment, position, summed, normalized)


class BertSelfAttention(nn.Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.head_size = config.head_size
        self.query = nn.Linear(config.hidden_size, config.hidden_size)
        self.key = nn.Linear(config.hidden_size, config.hidden_size)
        self.value = nn.Linear(config.hidden_size, config.hidden_size)
        self.dropout = nn.Dropout(config.attention_probs_dropout_prob)

    def _split_heads(self, x: Tensor) -> Tensor:
        b, s, _ = x.shape
        return x.view(b, s, self.num_heads, self.head_size).transpose(1, 2)  # (B, N, S, D)

    def forward(
        self, hidden: Tensor, additive_mask: Tensor | None, head_mask: Tensor | None
    ) -> tuple[Tensor, Tensor]:
        """hidden (B, S, H); additive_mask (B, 1, 1, S) or None; head_mask (N,) or None.

        Returns the context (B, S, H) and the attention probabilities (B, N, S, S).
        """
        q = self._split_heads(self.query(hidden))
        k = self._split_heads(self.key(hidden))
        v = self._split_heads(self.value(hidden))
        scores = torch.matmul(q, k.transpose(-1, -2)) * (self.head_size**-0.5)  # (B, N, S, S)
        if additive_mask is not None:
            scores = scores + additive_mask
        probs = torch.softmax(scores, dim=-1)
        weights = self.dropout(probs)
        if head_mask is not None:
            # A switched-off head still has its probabilities computed (and returned); its output is zeroed.
            weights = weights * head_mask.view(1, -1, 1, 1)
        context = torch.matmul(weights, v)  # (B, N, S, D)
        b, _, s, _ = context.shape
        context = context.transpose(1, 2).reshape(b, s, self.num_heads * self.head_size)  # (B, S, H)
        return context, probs


class BertSelfOutput(nn.Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, context: Tensor, residual: Tensor) -> Tensor:
        return self.LayerNorm(self.dropout(self.dense(context)) + residual)


class BertAttention(nn.Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.self = BertSelfAttention(config)
        self.output = BertSelfOutput(config)

    def forward(
        self, hidden: Tensor, additive_mask: Tensor | None, head_mask: Tensor | None
    ) -> tuple[Tensor, Tensor]:
        context, probs = self.self(hidden, additive_mask, head_mask)
        return self.output(context, hidden), probs


class BertIntermediate(nn.Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        self.act_name = config.hidden_act
        self.act = ACTIVATIONS[config.hidden_act]

    def forward(self, hidden: Tensor) -> Tensor:
        return self.act(self.dense(hidden))  # (B, S, I)


class BertOutput(nn.Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(config.intermediate_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, intermediate: Tensor, residual: Tensor) -> Tensor:
        return self.LayerNorm(self.dropout(self.dense(intermediate)) + residual)


class BertLayer(nn.Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.attention = BertAttention(config)
        self.intermediate = BertIntermediate(config)
        self.output = BertOutput(config)

    def forward(
        self, hidden: Tensor, additive_mask: Tensor | None, head_mask: Tensor | None
    ) -> tuple[Tensor, Tensor]:
        attended, probs = self.attention(hidden, additive_mask, head_mask)
        return self.output(self.intermediate(attended), attended), probs

    def infer(
        self,
        hidden: Tensor,
        shape: tuple[int, int],
        additive_mask: Tensor | None,
        head_mask: Tensor | None,
        probs_out: Tensor,
        out: Tensor | None = None,
    ) -> Tensor:
        """The same layer for eval mode without autograd, with fewer and in-place tensor operations.

        hidden (B * S, H) with shape = (B, S); additive_mask (B, 1, 1, S) or None; head_mask (N,) or None.
        The attention probabilities are written into probs_out (B, N, S, S); the output (B * S, H) into out
        when given (which is then returned), else into a new tensor.
        Same arithmetic as `forward` (dropout is the identity in eval mode).
        """
        sa = self.attention.self
        # A fused (3H, H) QKV matmul was measured at ~0.4 % of the forward, not worth a second copy of the
        # weights or one shared between three modules (docs/benchmarks.md): three it is.
        q, k, v = (_project(m, hidden) for m in (sa.query, sa.key, sa.value))  # each (B * S, H)
        context = None
        # The fused kernels serve the packed path only: exact mode keeps the reference's own calls.
        fast = not isinstance(sa.key, nn.Linear) and hidden.device.type == "cpu"
        if fast and head_mask is None:
            context = self.fused_attention(q, k, v, shape, additive_mask, probs_out)
        if context is None:
            context = self.library_attention(q, k, v, shape, additive_mask, head_mask, probs_out)
        return self._after_attention(context, hidden, out, fast)

    def library_attention(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        shape: tuple[int, int],
        additive_mask: Tensor | None,
        head_mask: Tensor | None,
        probs_out: Tensor,
    ) -> Tensor:
        """Scores, softmax and context with torch's batched matmuls: q, k, v (B * S, H); additive_mask
        (B, 1, 1, S) or None; head_mask (N,) or None; probabilities written into probs_out (B, N, S, S).
        Returns the context (B * S, H)."""
        b, s = shape
        sa = self.attention.self
        n, d = sa.num_heads, sa.head_size
        packed = not isinstance(sa.key, nn.Linear)
        q, k, v = (x.view(b, s, n, d) for x in (q, k, v))  # (B * S, H) -> (B, S, N, D)
        context = torch.empty(b, n, s, d, dtype=q.dtype, device=q.device)
        scale = d**-0.5
        # Scaling inside the matmul saves a pass over the scores but rounds differently from the reference's
        # matmul-then-multiply unless the scale is a power of two (D = 64: 1/8), where both are exact.
        scale_in_matmul = math.frexp(scale)[0] == 0.5
        # Per row: the batched matmuls then run over the heads, writing straight into probs_out.
        # With pre-packed weights K^T is copied head-major, (N, D, S): as a transposed view MKL's score matmul
        # had a long tail at 512 tokens (p90 ~5x its median). Exact mode keeps the reference's transposed view,
        # because below ~12 tokens MKL rounds the two layouts differently (last-bit differences).
        for row in range(b):
            # q (S, N, D) -> (N, S, D), copied once (an S x H copy, cheap): the batched matmul on the strided
            # view ran ~30 % slower at 512 tokens. v reads fine strided.
            qr = q[row].transpose(0, 1).contiguous()
            if packed:
                kt = k[row].permute(1, 2, 0).contiguous()  # (N, D, S)
            else:
                kt = k[row].transpose(0, 1).contiguous().transpose(1, 2)  # (N, S, D) copy, viewed (N, D, S)
            vr = v[row].transpose(0, 1)
            scores = probs_out[row]  # (N, S, S)
            if scale_in_matmul:
                torch.baddbmm(scores, qr, kt, beta=0.0, alpha=scale, out=scores)
            else:
                torch.bmm(qr, kt, out=scores).mul_(scale)
            if additive_mask is not None:
                scores.add_(additive_mask[row])
            torch.softmax(scores, dim=-1, out=scores)  # in place: rows are independent
            weights = scores if head_mask is None else scores * head_mask.view(-1, 1, 1)
            torch.bmm(weights, vr, out=context[row])  # (N, S, D)
        return context.transpose(1, 2).reshape(b * s, n * d)  # (B, N, S, D) -> (B * S, H)

    def fused_attention(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        shape: tuple[int, int],
        additive_mask: Tensor | None,
        probs_out: Tensor,
    ) -> Tensor | None:
        """Scores, softmax and context in one kernel per sequence (fused.py); None where it does not apply.
        q, k, v (B * S, H); additive_mask (B, 1, 1, S) or None; probs_out (B, N, S, S). Returns (B * S, H)."""
        b, s = shape
        context = torch.empty_like(q)
        masks = None if additive_mask is None else additive_mask.reshape(b, s)  # (B, 1, 1, S) -> (B, S)
        n, d = self.attention.self.num_heads, self.attention.self.head_size
        for row in range(b):
            rows = slice(row * s, (row + 1) * s)
            mask = None if masks is None else masks[row]
            if not fused.attention(
                q[rows], k[rows], v[rows], mask, probs_out[row], context[rows], n, d**-0.5
            ):
                return None  # the library path then recomputes every row
        return context

    def _after_attention(self, context: Tensor, hidden: Tensor, out: Tensor | None, fast: bool) -> Tensor:
        """Output projection, residual, LayerNorm and the feed-forward block: context, hidden (B * S, H); the
        result goes into out (B * S, H) when given. fast: the fused LayerNorm where it loads, which also does
        the residual adds (then not fused into the matmuls, where they cost a little more)."""
        so = self.attention.output
        in_norm = fast and fused.kernel() is not None
        attended = _project(so.dense, context, None if in_norm else hidden)
        attended = _layer_norm(
            so.LayerNorm, attended, fast, out=attended, residual=hidden if in_norm else None
        )
        inner = _project_act(self.intermediate.dense, attended, self.intermediate.act_name)  # (B * S, I)
        result = _project(self.output.dense, inner, None if in_norm else attended)
        return _layer_norm(
            self.output.LayerNorm, result, fast, out=out, residual=attended if in_norm else None
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
        return torch.tanh(self.dense(sequence[:, 0]))  # (B, H) from the [CLS] vector


class BertModel(nn.Module):
    """Embeddings + encoder (+ pooler). Checkpoint prefix: `bert.`."""

    def __init__(self, config: BertConfig, *, add_pooler: bool = True) -> None:
        super().__init__()
        self.config = config
        self.embeddings = BertEmbeddings(config)
        self.encoder = BertEncoder(config)
        self.pooler = BertPooler(config) if add_pooler else None

    def forward(
        self,
        input_ids: Tensor,
        token_type_ids: Tensor | None = None,
        position_ids: Tensor | None = None,
        attention_mask: Tensor | None = None,
        head_mask: Tensor | None = None,
        *,
        keep_attentions: bool = True,
    ) -> EncoderOutput:
        """input_ids (B, S) int64; attention_mask (B, S) with 1 = real token, 0 = padding;
        head_mask (L, N) with 1 = keep, 0 = switch the head off.

        keep_attentions=False (inference only) reuses one (B, N, S, S) scratch buffer for every layer and
        returns no attentions: for callers that need only the vectors, at 1/L of the memory."""
        b, s = input_ids.shape
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        if position_ids is None:
            position_ids = torch.arange(s, device=input_ids.device).unsqueeze(0).expand(b, s)
        additive_mask = None
        if attention_mask is not None:
            # (B, S) -> (B, 1, 1, S): padding keys get the most negative float, as HF does, so their
            # softmax weight underflows to exactly zero.
            keep = attention_mask[:, None, None, :].to(torch.float32)
            additive_mask = (1.0 - keep) * torch.finfo(torch.float32).min

        emb = self.embeddings(input_ids, token_type_ids, position_ids)
        if not self.training and not torch.is_grad_enabled():
            return self._infer(emb, additive_mask, head_mask, keep_attentions)
        hidden = self.embeddings.dropout(emb.normalized)
        hidden_states = [hidden]
        attentions = []
        for index, layer in enumerate(self.encoder.layer):
            layer_mask = None if head_mask is None else head_mask[index]
            hidden, probs = layer(hidden, additive_mask, layer_mask)
            hidden_states.append(hidden)
            attentions.append(probs)
        pooled = self.pooler(hidden) if self.pooler is not None else None
        return EncoderOutput(emb, tuple(hidden_states), tuple(attentions), pooled)

    def _infer(
        self,
        emb: EmbeddingOutput,
        additive_mask: Tensor | None,
        head_mask: Tensor | None,
        keep_attentions: bool = True,
    ) -> EncoderOutput:
        """Eval mode without autograd: every layer writes its probabilities into one (L, B, N, S, S) buffer
        (or, without keep_attentions, all layers into the same (1, B, N, S, S) scratch buffer)."""
        b, s, h = emb.normalized.shape
        c = self.config
        layers = c.num_hidden_layers
        if keep_attentions:
            stack = _result_buffer((layers, b, c.num_attention_heads, s, s), emb.normalized)
        else:
            stack = torch.empty(
                1, b, c.num_attention_heads, s, s, dtype=emb.normalized.dtype, device=emb.normalized.device
            )
        hidden_stack = _result_buffer((layers + 1, b, s, h), emb.normalized)
        hidden_stack[0].copy_(emb.normalized)
        hidden = emb.normalized.reshape(b * s, h)
        for index, layer in enumerate(self.encoder.layer):
            layer_mask = None if head_mask is None else head_mask[index]
            hidden = layer.infer(
                hidden,
                (b, s),
                additive_mask,
                layer_mask,
                stack[index if keep_attentions else 0],
                out=hidden_stack[index + 1].view(b * s, h),  # (B, S, H) -> (B * S, H), a view
            )
        hidden_states = tuple(hidden_stack.unbind(0))
        pooled = self.pooler(hidden_states[-1]) if self.pooler is not None else None
        if not keep_attentions:
            return EncoderOutput(emb, hidden_states, (), pooled, None, hidden_stack)
        return EncoderOutput(emb, hidden_states, tuple(stack.unbind(0)), pooled, stack, hidden_stack)


class BertPredictionHeadTransform(nn.Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.act = ACTIVATIONS[config.hidden_act]
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, hidden: Tensor) -> Tensor:
        return self.LayerNorm(self.act(self.dense(hidden)))


def _add_decoder_bias(module: nn.Module, state_dict: dict, prefix: str, local_metadata: dict) -> None:
    if prefix + "bias" in state_dict:
        state_dict[prefix + "decoder.bias"] = state_dict[prefix + "bias"]


def _take_decoder_bias(module: nn.Module, state_dict: dict, prefix: str, *args: object) -> None:
    if prefix + "decoder.bias" in state_dict:
        state_dict[prefix + "bias"] = state_dict.pop(prefix + "decoder.bias")


class BertLMPredictionHead(nn.Module):
    """MLM head: transform, then a decoder whose weight is the word-embedding table (tied) plus a bias."""

    def __init__(self, config: BertConfig, word_embeddings: nn.Embedding | None) -> None:
        super().__init__()
        self.transform = BertPredictionHeadTransform(config)
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))
        self.tied = word_embeddings is not None
        if self.tied:
            # Keep the tied table out of this module's parameters, so the state dict has no duplicate key
            # and nothing can ever load a second copy over it.
            object.__setattr__(self, "_tied_embeddings", word_embeddings)
            self.decoder = None
        else:
            self.decoder = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
            # transformers' untied head stores its one bias under two names, `bias` and `decoder.bias`; the
            # state dict carries both, so it loads into transformers as it is, and loading takes either
            # (decoder.bias first, as the loader does for checkpoints).
            self.register_state_dict_post_hook(_add_decoder_bias)
            self.register_load_state_dict_pre_hook(_take_decoder_bias)

    @property
    def decoder_weight(self) -> Tensor:
        return self._tied_embeddings.weight if self.tied else self.decoder.weight  # (V, H)

    def forward(self, hidden: Tensor) -> Tensor:
        """hidden (..., H) -> logits (..., V)."""
        h = self.transform(hidden)
        if torch.is_grad_enabled() or not isinstance(self.transform.dense, PackedLinear):
            # training, CUDA, or exact mode: the reference's own projection, to the bit
            return F.linear(h, self.decoder_weight, self.bias)
        # Inference on CPU computes (V, H) @ (H, M) rather than (M, H) @ (H, V): for the few rows the app asks
        # for (the [MASK] positions) MKL then streams the 94 MB table once as the large operand instead of
        # re-packing it on every call, 2-6x faster (docs/benchmarks.md, section 2); no copy of the table is made.
        # A single row would take the slower matrix-vector path, so it goes in twice. Logits move by ~1e-6, so
        # this runs only where the weights are packed anyway (not in exact mode). rows (M, H) -> logits (M, V).
        rows = h.reshape(-1, h.shape[-1])
        m = rows.shape[0]
        cols = torch.cat([rows, rows]) if m == 1 else rows
        logits = torch.addmm(self.bias[:, None], self.decoder_weight, cols.t()).t()[:m].contiguous()
        return logits.view(*h.shape[:-1], logits.shape[-1])


class BertPreTrainingHeads(nn.Module):
    """Checkpoint prefix `cls.`: `predictions` (MLM) and `seq_relationship` (NSP), each optional."""

    def __init__(
        self, config: BertConfig, word_embeddings: nn.Embedding | None, *, mlm: bool, nsp: bool
    ) -> None:
        super().__init__()
        self.predictions = BertLMPredictionHead(config, word_embeddings) if mlm else None
        self.seq_relationship = nn.Linear(config.hidden_size, 2) if nsp else None


class BertForPreTraining(nn.Module):
    """The whole network: `bert` plus whichever heads the checkpoint has."""

    def __init__(
        self,
        config: BertConfig,
        *,
        pooler: bool = True,
        mlm: bool = True,
        nsp: bool = True,
        tie_word_embeddings: bool = True,
    ) -> None:
        super().__init__()
        if nsp and not pooler:
            raise ValueError("an NSP head needs the pooler")
        self.config = config
        self.bert = BertModel(config, add_pooler=pooler)
        tied = self.bert.embeddings.word_embeddings if tie_word_embeddings else None
        self.cls = BertPreTrainingHeads(config, tied, mlm=mlm, nsp=nsp)

    @property
    def has_mlm_head(self) -> bool:
        return self.cls.predictions is not None

    # -- packed weights (CPU inference) -----------------------------------------------------------------

    @property
    def is_packed(self) -> bool:
        return any(isinstance(m, PackedLinear) for m in self.modules())

    def pack_for_inference(self) -> int:
        """Hold every Linear weight in oneDNN's pre-packed layout instead of the dense one (CPU, fp32 only).

        Same memory, faster matmuls; outputs move in the last bits (packed.py says why). The state dict keeps
        its dense HF-named tensors, and `train()` unpacks first. Returns the number of layers packed."""
        if self.training:
            raise ValueError("pack_for_inference() is for eval mode: call .eval() first")
        # An untied decoder is read as a plain matrix (`decoder_weight`) at the [MASK] rows: packing it would
        # rebuild the dense (V, H) copy on every call.
        head = self.cls.predictions
        skip = frozenset() if head is None or head.decoder is None else frozenset({head.decoder})
        return pack_linears(self, skip)

    def unpack(self) -> int:
        """Back to plain `nn.Linear` layers with the identical dense weights (bit-identical to the reference)."""
        return unpack_linears(self)

    def train(self, mode: bool = True) -> BertForPreTraining:
        if mode:
            self.unpack()  # the packed layout has no backward and no optimiser state
        return super().train(mode)

    def _apply(self, fn, recurse=True):
        # .to(), .half(), .cuda(), ... : the packed layout is CPU fp32 only, so go back to dense layers first.
        self.unpack()
        return super()._apply(fn, recurse)

    def num_parameters(self) -> int:
        packed = sum(m.in_features * m.out_features for m in self.modules() if isinstance(m, PackedLinear))
        return packed + sum(p.numel() for p in self.parameters())

    @property
    def has_nsp_head(self) -> bool:
        return self.cls.seq_relationship is not None

    @property
    def has_pooler(self) -> bool:
        return self.bert.pooler is not None

    def forward(self, *args, **kwargs) -> EncoderOutput:
        return self.bert(*args, **kwargs)

    def mlm_logits(self, sequence: Tensor) -> Tensor:
        """sequence (..., H) -> (..., V). Pass only the rows you need: the V-wide projection is the costly part."""
        if self.cls.predictions is None:
            raise ValueError("this checkpoint has no MLM head")
        return self.cls.predictions(sequence)

    def nsp_logits(self, pooled: Tensor) -> Tensor:
        """pooled (B, H) -> (B, 2); index 0 = IsNext, 1 = NotNext (BERT's convention)."""
        if self.cls.seq_relationship is None:
            raise ValueError("this checkpoint has no NSP head")
        return self.cls.seq_relationship(pooled)
