"""Prediction heads, as tables: each head has a name, the checkpoint paths its modules live under, what it
reads and how it computes. `Network` is an architecture's encoder plus whichever heads its checkpoint has,
each at its own path, so a strict `load_state_dict` of the checkpoint works and the loader, `ModelInfo` and
the app read one list. Every architecture's table is here (`BERT_HEADS`, ...): its file in
`bert_core.checkpoints` points at it.

Dimensions: B = batch, H = hidden size, E = embedding size, V = vocabulary size, M = token rows asked about.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..config import BertConfig
from ..errors import MissingHeadError, ModelLoadError
from .activations import ACTIVATIONS
from .encoder import BertModel, Encoder, EncoderOutput
from .packed import PackedLinear, pack_linears, unpack_linears


def vocab_logits(h: Tensor, weight: Tensor, bias: Tensor | None, *, packed: bool) -> Tensor:
    """h (..., E) @ weight (V, E)^T + bias: the MLM heads' projection onto the vocabulary.

    Packed inference on CPU computes (V, E) @ (E, M) rather than (M, E) @ (E, V): for the few rows the app asks
    for (the [MASK] positions) MKL then streams the 94 MB table once as the large operand instead of re-packing
    it on every call, 2-6x faster (docs/benchmarks.md, section 2); no copy of the table is made. A single row
    would take the slower matrix-vector path, so it goes in twice. Logits move by ~1e-6, so this runs only where
    the weights are packed anyway: training, CUDA and exact mode get the reference's own projection, to the bit.
    """
    if torch.is_grad_enabled() or not packed:
        return F.linear(h, weight, bias)
    rows = h.reshape(-1, h.shape[-1])  # (..., E) -> (M, E)
    m = rows.shape[0]
    cols = torch.cat([rows, rows]) if m == 1 else rows
    if bias is None:
        logits = torch.mm(weight, cols.t()).t()[:m].contiguous()
    else:
        logits = torch.addmm(bias[:, None], weight, cols.t()).t()[:m].contiguous()
    return logits.view(*h.shape[:-1], logits.shape[-1])  # (M, V) -> (..., V)


class TiedLinear(nn.Module):
    """The vocabulary projection (E -> V) whose weight is the word-embedding table when tied (then kept out of
    this module's parameters, so no checkpoint key is duplicated and nothing loads a second copy over it), or
    a weight of its own when not."""

    def __init__(self, width: int, vocab_size: int, tied: nn.Embedding | None, *, bias: bool) -> None:
        super().__init__()
        if tied is not None:
            object.__setattr__(self, "_tied_embeddings", tied)
        else:
            self.weight = nn.Parameter(torch.empty(vocab_size, width))
        self.bias = nn.Parameter(torch.zeros(vocab_size)) if bias else None

    @property
    def tied(self) -> bool:
        return "_tied_embeddings" in self.__dict__

    @property
    def matrix(self) -> Tensor:
        return self._tied_embeddings.weight if self.tied else self.weight  # (V, E)


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
        return vocab_logits(
            h, self.decoder_weight, self.bias, packed=isinstance(self.transform.dense, PackedLinear)
        )


class RobertaLMHead(nn.Module):
    """RoBERTa's MLM head (`lm_head`): dense, GELU (always the erf form), LayerNorm, tied decoder + bias."""

    def __init__(self, config: BertConfig, tied: nn.Embedding | None) -> None:
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.layer_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.decoder = TiedLinear(config.hidden_size, config.vocab_size, tied, bias=False)
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))

    def forward(self, hidden: Tensor) -> Tensor:
        h = self.layer_norm(F.gelu(self.dense(hidden)))
        return vocab_logits(h, self.decoder.matrix, self.bias, packed=isinstance(self.dense, PackedLinear))


class AlbertMLMHead(nn.Module):
    """ALBERT's MLM head (`predictions`): dense H -> E, the config's activation, LayerNorm, tied decoder."""

    def __init__(self, config: BertConfig, tied: nn.Embedding | None) -> None:
        super().__init__()
        e = config.embedding_dim
        self.LayerNorm = nn.LayerNorm(e, eps=config.layer_norm_eps)
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))
        self.dense = nn.Linear(config.hidden_size, e)
        self.decoder = TiedLinear(e, config.vocab_size, tied, bias=False)
        self.activation = ACTIVATIONS[config.hidden_act]

    def forward(self, hidden: Tensor) -> Tensor:
        h = self.LayerNorm(self.activation(self.dense(hidden)))
        return vocab_logits(h, self.decoder.matrix, self.bias, packed=isinstance(self.dense, PackedLinear))


class ElectraGeneratorPredictions(nn.Module):
    """ELECTRA generator's transform (`generator_predictions`): dense H -> E, GELU, LayerNorm."""

    def __init__(self, config: BertConfig, tied: nn.Embedding | None = None) -> None:
        super().__init__()
        self.LayerNorm = nn.LayerNorm(config.embedding_dim, eps=config.layer_norm_eps)
        self.dense = nn.Linear(config.hidden_size, config.embedding_dim)


class ElectraDiscriminatorPredictions(nn.Module):
    """ELECTRA discriminator's replaced-token detection (`discriminator_predictions`): one logit per token."""

    def __init__(self, config: BertConfig, tied: nn.Embedding | None = None) -> None:
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.dense_prediction = nn.Linear(config.hidden_size, 1)
        self.activation = ACTIVATIONS[config.hidden_act]

    def forward(self, hidden: Tensor) -> Tensor:
        return self.dense_prediction(self.activation(self.dense(hidden))).squeeze(-1)  # (..., H) -> (...)


class AlbertSOPHead(nn.Module):
    """ALBERT's sentence-order prediction (`sop_classifier`): pooled (B, H) -> (B, 2); index 0 = in order."""

    def __init__(self, config: BertConfig, tied: nn.Embedding | None = None) -> None:
        super().__init__()
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.classifier = nn.Linear(config.hidden_size, 2)

    def forward(self, pooled: Tensor) -> Tensor:
        return self.classifier(self.dropout(pooled))


def _distilbert_mlm(net: Network, hidden: Tensor) -> Tensor:
    # DistilBERT keeps its MLM head's three modules at the checkpoint's top level.
    h = net.vocab_layer_norm(ACTIVATIONS[net.config.hidden_act](net.vocab_transform(hidden)))
    projector = net.vocab_projector
    return vocab_logits(
        h, projector.matrix, projector.bias, packed=isinstance(net.vocab_transform, PackedLinear)
    )


def _electra_generator_mlm(net: Network, hidden: Tensor) -> Tensor:
    p = net.generator_predictions
    h = p.LayerNorm(F.gelu(p.dense(hidden)))
    lm = net.generator_lm_head
    return vocab_logits(h, lm.matrix, lm.bias, packed=isinstance(p.dense, PackedLinear))


def _module(path: str) -> Callable[[Network, Tensor], Tensor]:
    """The logits of a head that is one module at `path`."""
    return lambda net, vectors: net.get_submodule(path)(vectors)


@dataclass(frozen=True)
class Head:
    name: str  # what the API, ModelInfo and the app call it
    # checkpoint path (= module path in the network) -> builder (config, tied word embeddings or None)
    modules: Mapping[str, Callable[[BertConfig, nn.Embedding | None], nn.Module]]
    logits: Callable[[Network, Tensor], Tensor]  # (network, what it reads) -> logits
    # "tokens": any token vectors (..., H); "pooled": the pooled vector (B, H); "sequence": the whole last
    # hidden state (B, S, H), for heads that read its first token themselves (RoBERTa's classifier)
    reads: str
    label: str  # short name for people: "MLM"
    description: str  # what it does: "masked-word prediction"
    hint: str  # which checkpoints have it, for the message when one is missing
    # A fine-tuned task head: present only when config.json's "architectures" names a class ending so, since
    # sequence and token classifiers share the key names (`classifier.*`).
    trained_as: str | None = None

    @property
    def path(self) -> str:
        return next(iter(self.modules))


class FirstTokenClassifier(nn.Module):
    """RoBERTa's and ELECTRA's sentence classifier (`classifier`): the first token's vector through dense,
    an activation (tanh for RoBERTa, GELU for ELECTRA) and out_proj. (B, S, H) -> (B, labels)."""

    def __init__(self, config: BertConfig, activation: str) -> None:
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.out_proj = nn.Linear(config.hidden_size, config.num_labels)
        self.activation = ACTIVATIONS[activation]

    def forward(self, sequence: Tensor) -> Tensor:
        return self.out_proj(self.activation(self.dense(sequence[:, 0])))


def _distilbert_first_token(net: Network, sequence: Tensor) -> Tensor:
    # DistilBERT's classifiers: pre_classifier on the first token, ReLU, classifier. (B, S, H) -> (B, out)
    return net.classifier(F.relu(net.pre_classifier(sequence[:, 0])))


class SequenceSummary(nn.Module):
    """ELECTRA's multiple-choice summary (`sequence_summary`): the first token's vector through `summary` and
    the config's summary_activation, as `FirstTokenClassifier` but under transformers' names for this head,
    and without an output layer (the head's `classifier` follows it). (B, S, H) -> (B, H).

    transformers' ElectraSequenceSummary also offers "last" and "mean", which read padding positions as well
    (so a choice's score would depend on the other choices' lengths); a checkpoint asking for them, or for an
    activation this project does not compute, is refused rather than summarised another way.
    """

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        if config.summary_type != "first":
            raise ModelLoadError(
                f"config key 'summary_type' = {config.summary_type!r}: BERTScope's ELECTRA multiple-choice head "
                "summarises the first token only ('first', ELECTRA's default)"
            )
        if config.summary_use_proj is not True:
            raise ModelLoadError(
                f"config key 'summary_use_proj' = {config.summary_use_proj!r}: BERTScope's ELECTRA multiple-choice "
                "head has the projection ELECTRA's default (true) gives it"
            )
        name = config.summary_activation
        if name and name not in ACTIVATIONS:  # "linear", as in transformers, is none
            raise ModelLoadError(
                f"config key 'summary_activation' = {name!r} is not supported "
                f"(supported: {', '.join(ACTIVATIONS)}, or null for none)"
            )
        self.summary = nn.Linear(config.hidden_size, config.hidden_size)
        self.activation = ACTIVATIONS[name] if name else nn.Identity()

    def forward(self, sequence: Tensor) -> Tensor:
        return self.activation(self.summary(sequence[:, 0]))


def _electra_choice(net: Network, sequence: Tensor) -> Tensor:
    return net.classifier(net.sequence_summary(sequence))


def _linear_to(width: Callable[[BertConfig], int]) -> Callable[[BertConfig, nn.Embedding | None], nn.Module]:
    return lambda config, _: nn.Linear(config.hidden_size, width(config))


def _labels(config: BertConfig) -> int:
    return config.num_labels


def _task_heads(
    classify: Head | None = None, choice: Head | None = None, pooled_classifier: bool = True
) -> dict[str, Head]:
    """The four fine-tuning heads; `classifier` and `qa_outputs` are the checkpoint names in every family."""
    heads = {
        "classify": classify
        or Head(
            "classify",
            {"classifier": _linear_to(_labels)},
            _module("classifier"),
            "pooled" if pooled_classifier else "tokens",
            "classifier",
            "sentence classification",
            "load a *ForSequenceClassification checkpoint",
            "ForSequenceClassification",
        ),
        "tag": Head(
            "tag",
            {"classifier": _linear_to(_labels)},
            _module("classifier"),
            "tokens",
            "tagger",
            "token classification",
            "load a *ForTokenClassification checkpoint",
            "ForTokenClassification",
        ),
        "qa": Head(
            "qa",
            # (..., H) -> (..., 2): start and end logits
            {"qa_outputs": _linear_to(lambda c: 2)},
            _module("qa_outputs"),
            "tokens",
            "QA",
            "question answering",
            "load a *ForQuestionAnswering checkpoint",
            "ForQuestionAnswering",
        ),
        "choice": choice
        or Head(
            "choice",
            {"classifier": _linear_to(lambda c: 1)},
            _module("classifier"),
            "pooled",
            "multiple choice",
            "multiple choice",
            "load a *ForMultipleChoice checkpoint",
            "ForMultipleChoice",
        ),
    }
    return heads


def _first_token_classify(activation: str) -> Head:
    return Head(
        "classify",
        {"classifier": lambda config, _: FirstTokenClassifier(config, activation)},
        _module("classifier"),
        "sequence",
        "classifier",
        "sentence classification",
        "load a *ForSequenceClassification checkpoint",
        "ForSequenceClassification",
    )


def _distilbert_task(name: str, outputs: Callable[[BertConfig], int]) -> Head:
    sentence = name == "classify"
    return Head(
        name,
        {"pre_classifier": _linear_to(lambda c: c.hidden_size), "classifier": _linear_to(outputs)},
        _distilbert_first_token,
        "sequence",
        "classifier" if sentence else "multiple choice",
        "sentence classification" if sentence else "multiple choice",
        f"load a DistilBertFor{'SequenceClassification' if sentence else 'MultipleChoice'} checkpoint",
        "ForSequenceClassification" if sentence else "ForMultipleChoice",
    )


_MLM = ("mlm", "MLM", "masked-word prediction")
BERT_HEADS: dict[str, Head] = {
    "mlm": Head(
        "mlm",
        {"cls.predictions": BertLMPredictionHead},
        _module("cls.predictions"),
        "tokens",
        "MLM",
        "masked-word prediction",
        "load a BertForMaskedLM or BertForPreTraining checkpoint",
    ),
    "nsp": Head(
        "nsp",
        # (B, H) -> (B, 2); index 0 = IsNext, 1 = NotNext (BERT's convention)
        {"cls.seq_relationship": lambda config, _: nn.Linear(config.hidden_size, 2)},
        _module("cls.seq_relationship"),
        "pooled",
        "NSP",
        "next-sentence prediction",
        "load a BertForPreTraining or BertForNextSentencePrediction checkpoint",
    ),
}
BERT_HEADS.update(_task_heads())
HEADS = BERT_HEADS  # the default table: BERT's
ROBERTA_HEADS: dict[str, Head] = {
    "mlm": Head(
        "mlm",
        {"lm_head": RobertaLMHead},
        _module("lm_head"),
        "tokens",
        *_MLM[1:],
        "load a RobertaForMaskedLM checkpoint",
    ),
}
ROBERTA_HEADS.update(
    _task_heads(classify=_first_token_classify("tanh"))
)  # its multiple choice reads the pooler, as BERT's
DISTILBERT_HEADS: dict[str, Head] = {
    "mlm": Head(
        "mlm",
        {
            "vocab_transform": lambda c, _: nn.Linear(c.hidden_size, c.hidden_size),
            "vocab_layer_norm": lambda c, _: nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps),
            "vocab_projector": lambda c, tied: TiedLinear(c.hidden_size, c.vocab_size, tied, bias=True),
        },
        _distilbert_mlm,
        "tokens",
        *_MLM[1:],
        "load a DistilBertForMaskedLM checkpoint",
    ),
}
DISTILBERT_HEADS.update(
    _task_heads(
        classify=_distilbert_task("classify", _labels), choice=_distilbert_task("choice", lambda c: 1)
    )
)
ALBERT_HEADS: dict[str, Head] = {
    "mlm": Head(
        "mlm",
        {"predictions": AlbertMLMHead},
        _module("predictions"),
        "tokens",
        *_MLM[1:],
        "load an AlbertForMaskedLM or AlbertForPreTraining checkpoint",
    ),
    "sop": Head(
        "sop",
        {"sop_classifier": AlbertSOPHead},
        _module("sop_classifier"),
        "pooled",
        "SOP",
        "sentence-order prediction",
        "load an AlbertForPreTraining checkpoint",
    ),
}
ALBERT_HEADS.update(_task_heads())
ELECTRA_HEADS: dict[str, Head] = {
    "mlm": Head(
        "mlm",
        {
            "generator_predictions": ElectraGeneratorPredictions,
            "generator_lm_head": lambda c, tied: TiedLinear(c.embedding_dim, c.vocab_size, tied, bias=True),
        },
        _electra_generator_mlm,
        "tokens",
        *_MLM[1:],
        "load an ELECTRA generator (ElectraForMaskedLM) checkpoint",
    ),
    "rtd": Head(
        "rtd",
        {"discriminator_predictions": ElectraDiscriminatorPredictions},
        _module("discriminator_predictions"),
        "tokens",
        "RTD",
        "replaced-token detection",
        "load an ELECTRA discriminator (ElectraForPreTraining) checkpoint",
    ),
}
ELECTRA_HEADS.update(
    _task_heads(
        classify=_first_token_classify("gelu"),
        choice=Head(
            "choice",
            {
                "sequence_summary": lambda config, _: SequenceSummary(config),
                "classifier": _linear_to(lambda c: 1),
            },
            _electra_choice,
            "sequence",
            "multiple choice",
            "multiple choice",
            "load an ElectraForMultipleChoice checkpoint",
            "ForMultipleChoice",
        ),
    )
)

# model_type -> its heads
HEAD_TABLES: dict[str, dict[str, Head]] = {
    "bert": BERT_HEADS,
    "roberta": ROBERTA_HEADS,
    "distilbert": DISTILBERT_HEADS,
    "albert": ALBERT_HEADS,
    "electra": ELECTRA_HEADS,
}


class Network(nn.Module):
    """An encoder under its checkpoint prefix (`bert`, `roberta`, ...) plus the named heads of its table,
    each at its checkpoint path."""

    def __init__(
        self,
        config: BertConfig,
        heads: Sequence[str] = ("mlm", "nsp"),
        *,
        pooler: bool = True,
        tie_word_embeddings: bool = True,
        base_prefix: str = "bert",
        encoder: type[Encoder] = BertModel,
        architecture: str = "bert",
    ) -> None:
        super().__init__()
        # The table is looked up by name rather than held: its builders are lambdas, which do not pickle.
        self.architecture = architecture
        head_table = self.head_table
        unknown = [name for name in heads if name not in head_table]
        if unknown:
            raise ValueError(f"unknown heads {unknown}; known: {', '.join(head_table)}")
        self.config = config
        self.base_prefix = base_prefix
        self.add_module(base_prefix, encoder(config, add_pooler=pooler))
        self.head_names = tuple(name for name in head_table if name in heads)  # in table order
        if not pooler and any(head_table[name].reads == "pooled" for name in self.head_names):
            raise ValueError("a head that reads the pooled vector needs the pooler")
        tied = self.base.embeddings.word_embeddings if tie_word_embeddings else None
        for name in self.head_names:
            for path, build in head_table[name].modules.items():
                parent_path, _, attribute = path.rpartition(".")
                parent = self
                for part in parent_path.split(".") if parent_path else ():
                    if not hasattr(parent, part):
                        parent.add_module(part, nn.Module())
                    parent = getattr(parent, part)
                parent.add_module(attribute, build(config, tied))

    @property
    def head_table(self) -> dict[str, Head]:
        return HEAD_TABLES[self.architecture]

    @property
    def base(self) -> Encoder:
        """The encoder, whatever its checkpoint prefix."""
        return getattr(self, self.base_prefix)

    @property
    def has_pooler(self) -> bool:
        return getattr(self.base, "pooler", None) is not None

    def head(self, name: str) -> nn.Module:
        """The head module called `name`; MissingHeadError when this checkpoint has none."""
        known = {name: head for table in HEAD_TABLES.values() for name, head in table.items()}
        known.update(self.head_table)
        if name not in known:
            raise ValueError(f"unknown head {name!r}; known: {', '.join(known)}")
        if name not in self.head_names:
            head = self.head_table.get(name, known[name])
            where = (
                f"its checkpoint has no {head.path} weights"
                if name in self.head_table
                else (
                    f"{'an' if self.config.model_type[:1] in 'aeiou' else 'a'} {self.config.model_type} model has none"
                )
            )
            # "no multiple choice head (multiple choice)" said its name twice
            described = f" ({head.description})" if head.description != head.label else ""
            raise MissingHeadError(f"this model has no {head.label} head{described}: {where}; {head.hint}")
        return self.get_submodule(self.head_table[name].path)

    def logits(self, name: str, vectors: Tensor) -> Tensor:
        """The head's logits for what it reads: token rows (..., H) -> (..., V) for "mlm", pooled (B, H) ->
        (B, 2) for "nsp". Pass only the rows you need: the V-wide projection is the costly part."""
        self.head(name)  # MissingHeadError when absent
        return self.head_table[name].logits(self, vectors)

    def forward(self, *args, **kwargs) -> EncoderOutput:
        return self.base(*args, **kwargs)

    # -- the one speed choice: pre-packed weights (CPU inference) ------------------------------------------

    @property
    def is_packed(self) -> bool:
        return self.base.packed

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
        self.base.packed = count > 0
        return count

    def unpack_weights(self) -> int:
        """Back to plain `nn.Linear` layers with the identical dense weights (bit-identical to the reference)."""
        self.base.packed = False
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
