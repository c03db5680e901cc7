"""Prediction heads, as a table: each head has a name, the checkpoint path it lives under, what it reads and
how it is built. `Network` is the encoder plus whichever heads a checkpoint has, each at its own path, so a
strict `load_state_dict` of the checkpoint works and the loader, `ModelInfo` and the app read one list.

Dimensions: B = batch, H = hidden size, V = vocabulary size, M = token rows asked about.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..config import BertConfig
from ..errors import MissingHeadError
from .activations import ACTIVATIONS
from .encoder import BertModel, EncoderOutput
from .packed import PackedLinear, pack_linears, unpack_linears


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


@dataclass(frozen=True)
class Head:
    name: str  # what the API, ModelInfo and the app call it
    path: str  # its module path in the network = its checkpoint key prefix
    reads: str  # "tokens": any token vectors (..., H); "pooled": the pooled vector (B, H)
    label: str  # short name for people: "MLM"
    description: str  # what it does: "masked-word prediction"
    hint: str  # which checkpoints have it, for the message when one is missing
    build: Callable[[BertConfig, nn.Embedding | None], nn.Module]  # (config, tied word embeddings) -> module


HEADS: dict[str, Head] = {
    head.name: head
    for head in (
        Head(
            "mlm",
            "cls.predictions",
            "tokens",
            "MLM",
            "masked-word prediction",
            "load a BertForMaskedLM or BertForPreTraining checkpoint",
            BertLMPredictionHead,
        ),
        Head(
            "nsp",
            "cls.seq_relationship",
            "pooled",
            "NSP",
            "next-sentence prediction",
            "load a BertForPreTraining or BertForNextSentencePrediction checkpoint",
            # (B, H) -> (B, 2); index 0 = IsNext, 1 = NotNext (BERT's convention)
            lambda config, _: nn.Linear(config.hidden_size, 2),
        ),
    )
}


class Network(nn.Module):
    """The encoder under its checkpoint prefix (`bert`) plus the named heads, each at its checkpoint path."""

    def __init__(
        self,
        config: BertConfig,
        heads: Sequence[str] = ("mlm", "nsp"),
        *,
        pooler: bool = True,
        tie_word_embeddings: bool = True,
    ) -> None:
        super().__init__()
        unknown = [name for name in heads if name not in HEADS]
        if unknown:
            raise ValueError(f"unknown heads {unknown}; known: {', '.join(HEADS)}")
        self.config = config
        self.bert = BertModel(config, add_pooler=pooler)
        self.head_names = tuple(name for name in HEADS if name in heads)  # in table order
        if not pooler and any(HEADS[name].reads == "pooled" for name in self.head_names):
            raise ValueError("a head that reads the pooled vector needs the pooler")
        tied = self.bert.embeddings.word_embeddings if tie_word_embeddings else None
        for name in self.head_names:
            parent_path, _, attribute = HEADS[name].path.rpartition(".")
            parent = self
            for part in parent_path.split(".") if parent_path else ():
                if not hasattr(parent, part):
                    parent.add_module(part, nn.Module())
                parent = getattr(parent, part)
            parent.add_module(attribute, HEADS[name].build(config, tied))

    @property
    def has_pooler(self) -> bool:
        return self.bert.pooler is not None

    def head(self, name: str) -> nn.Module:
        """The head module called `name`; MissingHeadError when this checkpoint has none."""
        if name not in HEADS:
            raise ValueError(f"unknown head {name!r}; known: {', '.join(HEADS)}")
        if name not in self.head_names:
            head = HEADS[name]
            raise MissingHeadError(
                f"this model has no {head.label} head ({head.description}): its checkpoint has no "
                f"{head.path} weights; {head.hint}"
            )
        return self.get_submodule(HEADS[name].path)

    def logits(self, name: str, vectors: Tensor) -> Tensor:
        """The head's logits for what it reads: token rows (..., H) -> (..., V) for "mlm", pooled (B, H) ->
        (B, 2) for "nsp". Pass only the rows you need: the V-wide projection is the costly part."""
        return self.head(name)(vectors)

    def forward(self, *args, **kwargs) -> EncoderOutput:
        return self.bert(*args, **kwargs)

    # -- the one speed choice: pre-packed weights (CPU inference) ------------------------------------------

    @property
    def is_packed(self) -> bool:
        return self.bert.packed

    def pack_weights(self) -> int:
        """Hold every Linear weight in oneDNN's pre-packed layout instead of the dense one (CPU, fp32 only).

        Same memory, faster matmuls; outputs move in the last bits (packed.py says why). The state dict keeps
        its dense HF-named tensors, and `train()` unpacks first. Returns the number of layers packed."""
        if self.training:
            raise ValueError("pack_weights() is for eval mode: call .eval() first")
        # An untied decoder is read as a plain matrix (`decoder_weight`) at the [MASK] rows: packing it would
        # rebuild the dense (V, H) copy on every call.
        decoder = getattr(self.head("mlm"), "decoder", None) if "mlm" in self.head_names else None
        count = pack_linears(self, frozenset() if decoder is None else frozenset({decoder}))
        self.bert.packed = count > 0
        return count

    def unpack_weights(self) -> int:
        """Back to plain `nn.Linear` layers with the identical dense weights (bit-identical to the reference)."""
        self.bert.packed = False
        return unpack_linears(self)

    def train(self, mode: bool = True) -> Network:
        if mode:
            self.unpack_weights()  # the packed layout has no backward and no optimiser state
        return super().train(mode)

    def _apply(self, fn, recurse=True):
        # .to(), .half(), .cuda(), ... : the packed layout is CPU fp32 only, so go back to dense layers first.
        self.unpack_weights()
        return super()._apply(fn, recurse)

    def num_parameters(self) -> int:
        packed = sum(m.in_features * m.out_features for m in self.modules() if isinstance(m, PackedLinear))
        return packed + sum(p.numel() for p in self.parameters())
