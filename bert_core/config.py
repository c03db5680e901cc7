"""BERT configuration: a frozen dataclass whose field names are the keys of a checkpoint's `config.json`."""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from .errors import ModelLoadError

# Activations we implement exactly as transformers' ACT2FN does; anything else is refused rather than
# silently approximated, because the views must show what the model really computes.
SUPPORTED_ACTIVATIONS = (
    "gelu",
    "gelu_new",
    "gelu_pytorch_tanh",
    "gelu_fast",
    "relu",
    "silu",
    "swish",
    "tanh",
    "gelu_accurate",
    "gelu_python",
    "quick_gelu",
    "mish",
    "linear",
)
SUPPORTED_POSITION_EMBEDDINGS = ("absolute",)

# Sanity bounds, checked before any tensor is allocated. They are generous (BERT-large is 1024 hidden,
# 24 layers, 16 heads, 30522 vocab) but stop a typo such as hidden_size=7680000 from eating the machine.
_BOUNDS: dict[str, tuple[int, int]] = {
    "vocab_size": (1, 1_000_000),
    "hidden_size": (1, 8192),
    "num_hidden_layers": (1, 96),
    "num_attention_heads": (1, 128),
    "intermediate_size": (1, 65536),
    "max_position_embeddings": (1, 8192),
    "type_vocab_size": (0, 64),
    "num_hidden_groups": (1, 96),
    "inner_group_num": (1, 8),
}
# An extra cap on the total parameter count of the embeddings and encoder (about 8 GB of fp32).
_MAX_PARAMETERS = 2_000_000_000
_PROBLEM_TYPES = (None, "single_label_classification", "multi_label_classification", "regression")
# Keys whose truth changes the computation in ways this encoder does not implement.
_REFUSED_FLAGS = ("is_decoder", "add_cross_attention")


@dataclass(frozen=True)
class BertConfig:
    vocab_size: int = 30522  # rows of the word-embedding table and of the MLM decoder
    hidden_size: int = 768  # width of every token vector (H)
    num_hidden_layers: int = 12  # transformer layers (L)
    num_attention_heads: int = 12  # heads per layer; hidden_size must be a multiple of it
    intermediate_size: int = 3072  # width of the feed-forward inner layer
    hidden_act: str = "gelu"  # feed-forward (and MLM transform) activation, a transformers ACT2FN name
    hidden_dropout_prob: float = 0.1  # used only in training
    attention_probs_dropout_prob: float = 0.1  # used only in training
    max_position_embeddings: int = 512  # positions the model knows; longer inputs are truncated
    type_vocab_size: int = 2  # segment ids (A = 0, B = 1); 0 = no segment embeddings (DistilBERT)
    initializer_range: float = 0.02  # std of the normal init used when training from scratch
    layer_norm_eps: float = 1e-12
    pad_token_id: int = 0
    position_embedding_type: str = "absolute"
    model_type: str = "bert"
    architectures: tuple[str, ...] = ()  # informational: which HF class saved the checkpoint
    # Width of the embedding tables (E) when it differs from hidden_size (ALBERT, ELECTRA): the embedding output
    # is then projected to H before the first layer. None = hidden_size.
    embedding_size: int | None = None
    # The first position id (RoBERTa: pad_token_id + 1, from fairseq); positions run from it up, skipping
    # any <pad> (bert_core.tokenizer.position_ids).
    position_offset: int = 0
    # ALBERT: layers share weights in num_hidden_groups groups of inner_group_num layers each.
    num_hidden_groups: int = 1
    inner_group_num: int = 1
    # A fine-tuned head's classes, by index (config.json's id2label; transformers writes LABEL_0, LABEL_1 when
    # it has no names), and what its outputs mean: "single_label_classification" (softmax),
    # "multi_label_classification" (a sigmoid per label) or "regression"; None = decided by the label count.
    id2label: tuple[str, ...] = ()
    problem_type: str | None = None
    # ELECTRA's multiple-choice head (transformers' ElectraSequenceSummary): which token it summarises and the
    # activation after its projection (None or "": none). ElectraConfig's defaults; read by that head only.
    summary_type: str = "first"
    summary_activation: str | None = "gelu"
    summary_use_proj: bool = True  # a projection before the activation

    @property
    def head_size(self) -> int:
        return self.hidden_size // self.num_attention_heads

    @property
    def num_labels(self) -> int:
        return len(self.id2label) if self.id2label else 2

    @property
    def task_kind(self) -> str:
        """What a classifier's outputs mean: "single_label_classification", "multi_label_classification" or
        "regression" (one output and no problem_type, as transformers decides)."""
        if self.problem_type is not None:
            return self.problem_type
        return "regression" if self.num_labels == 1 else "single_label_classification"

    @property
    def embedding_dim(self) -> int:
        """E: the width of the embedding tables (H unless the architecture factorises them)."""
        return self.hidden_size if self.embedding_size is None else self.embedding_size

    @property
    def max_tokens(self) -> int:
        """The longest input, with specials: the positions left after the offset."""
        return self.max_position_embeddings - self.position_offset

    def parameter_estimate(self) -> int:
        """Parameters of embeddings + encoder + pooler, computed from the sizes alone."""
        h, i, e = self.hidden_size, self.intermediate_size, self.embedding_dim
        emb = (self.vocab_size + self.max_position_embeddings + self.type_vocab_size) * e + 2 * e
        layer = 4 * (h * h + h) + 2 * h * i + i + h + 4 * h
        return emb + self.num_hidden_layers * layer + h * h + h

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        for key, (lo, hi) in _BOUNDS.items():
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ModelLoadError(f"config key {key!r} must be an integer, got {value!r}")
            if not lo <= value <= hi:
                raise ModelLoadError(
                    f"config key {key!r} = {value} is outside the supported range [{lo}, {hi}]"
                )
        if self.hidden_size % self.num_attention_heads:
            raise ModelLoadError(
                f"config key 'hidden_size' = {self.hidden_size} is not divisible by "
                f"'num_attention_heads' = {self.num_attention_heads}"
            )
        if self.embedding_size is not None and (
            isinstance(self.embedding_size, bool)
            or not isinstance(self.embedding_size, int)
            or not 1 <= self.embedding_size <= 8192
        ):
            raise ModelLoadError(
                f"config key 'embedding_size' = {self.embedding_size!r} must be an integer in [1, 8192]"
            )
        if self.num_hidden_layers % self.num_hidden_groups:
            raise ModelLoadError(
                f"config key 'num_hidden_groups' = {self.num_hidden_groups} does not divide "
                f"'num_hidden_layers' = {self.num_hidden_layers}: every group must serve the same number of layers"
            )
        if (
            isinstance(self.position_offset, bool)
            or not isinstance(self.position_offset, int)
            or not 0 <= self.position_offset < self.max_position_embeddings - 2
        ):
            if self.position_offset == 0:  # BERT's positions count from 0: only the table is too small
                raise ModelLoadError(
                    f"config key 'max_position_embeddings' = {self.max_position_embeddings} is too small: a "
                    "start token, one piece and an end token need 3 positions"
                )
            raise ModelLoadError(
                f"the first position id ({self.position_offset!r}, from 'pad_token_id') leaves no room in "
                f"'max_position_embeddings' = {self.max_position_embeddings}"
            )
        if self.problem_type not in _PROBLEM_TYPES:
            raise ModelLoadError(
                f"config key 'problem_type' = {self.problem_type!r} is not one of {', '.join(map(str, _PROBLEM_TYPES))}"
            )
        if not isinstance(self.summary_type, str) or not isinstance(
            self.summary_activation, (str, type(None))
        ):
            raise ModelLoadError(
                f"config keys 'summary_type' and 'summary_activation' must be names, got {self.summary_type!r} "
                f"and {self.summary_activation!r}"
            )
        if not isinstance(self.summary_use_proj, bool):
            raise ModelLoadError(
                f"config key 'summary_use_proj' must be true or false, got {self.summary_use_proj!r}"
            )
        if self.hidden_act not in SUPPORTED_ACTIVATIONS:
            raise ModelLoadError(
                f"config key 'hidden_act' = {self.hidden_act!r} is not supported "
                f"(supported: {', '.join(SUPPORTED_ACTIVATIONS)})"
            )
        if self.position_embedding_type not in SUPPORTED_POSITION_EMBEDDINGS:
            raise ModelLoadError(
                f"config key 'position_embedding_type' = {self.position_embedding_type!r} is not supported "
                f"(supported: {', '.join(SUPPORTED_POSITION_EMBEDDINGS)})"
            )
        for key in (
            "layer_norm_eps",
            "hidden_dropout_prob",
            "attention_probs_dropout_prob",
            "initializer_range",
        ):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ModelLoadError(f"config key {key!r} must be a finite number, got {value!r}")
            if value < 0:
                raise ModelLoadError(f"config key {key!r} must not be negative, got {value!r}")
        if not 0 <= self.pad_token_id < self.vocab_size:
            raise ModelLoadError(
                f"config key 'pad_token_id' = {self.pad_token_id} is not a valid id for vocab_size {self.vocab_size}"
            )
        if self.parameter_estimate() > _MAX_PARAMETERS:
            raise ModelLoadError(
                f"config describes about {self.parameter_estimate():,} parameters, more than the "
                f"{_MAX_PARAMETERS:,} BERTScope will allocate; check the sizes in config.json"
            )

    # -- (de)serialisation ---------------------------------------------------------------------------

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BertConfig:
        if not isinstance(data, dict):
            raise ModelLoadError(f"config must be a JSON object, got {type(data).__name__}")
        # A decoder BERT (BertLMHeadModel) masks attention causally and may cross-attend: a different
        # computation from the encoder built here, so drawing its attention as ours would show maps it never
        # computed. Refused rather than silently run as an encoder.
        for key in _REFUSED_FLAGS:
            if data.get(key):
                raise ModelLoadError(
                    f"config key {key!r} is true: this is a decoder BERT (causal attention), which BERTScope "
                    "does not model; it analyses BERT encoders"
                )
        known = {f.name for f in fields(cls)}
        kwargs: dict[str, Any] = {}
        for key, value in data.items():
            if key not in known:
                continue  # HF configs carry many keys (torch_dtype, transformers_version, ...) we don't use
            if key == "architectures":
                if value is not None and not (
                    isinstance(value, list) and all(isinstance(v, str) for v in value)
                ):
                    raise ModelLoadError(f"config key 'architectures' must be a list of names, got {value!r}")
                value = tuple(value or ())
            if key == "pad_token_id" and value is None:
                value = 0
            if key == "id2label":
                value = _label_names(value)
            kwargs[key] = value
        try:
            return cls(**kwargs)
        except TypeError as exc:  # pragma: no cover - dataclass rejects nothing else, but be explicit
            raise ModelLoadError(f"config cannot be read: {exc}") from exc

    @classmethod
    def from_json(cls, path: str | Path) -> BertConfig:
        return cls.from_dict(read_json(path))

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["architectures"] = list(self.architectures)
        data["id2label"] = {str(i): name for i, name in enumerate(self.id2label)}
        # The fields other architectures add stay out of a BERT's config.json while they hold their defaults.
        for key in (
            "embedding_size",
            "position_offset",
            "num_hidden_groups",
            "inner_group_num",
            "id2label",
            "problem_type",
            "summary_type",
            "summary_activation",
            "summary_use_proj",
        ):
            if getattr(self, key) == getattr(BertConfig, key):
                del data[key]
        return data


def read_json(path: str | Path) -> Any:
    """A config.json's content; ModelLoadError naming the file when it is missing, unreadable or not JSON."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ModelLoadError(f"no config.json in {path.parent}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ModelLoadError(f"cannot read {path}: {exc}") from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ModelLoadError(
            f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}"
        ) from exc


def _label_names(value: Any) -> tuple[str, ...]:
    """config.json's id2label ({"0": "NEG", "1": "POS"}) as names by index; ModelLoadError when the ids are not
    0..n-1."""
    if value is None:
        return ()
    if not isinstance(value, dict):
        raise ModelLoadError(f"config key 'id2label' must map class ids to names, got {value!r}")
    try:
        by_id = {int(k): str(v) for k, v in value.items()}
    except (TypeError, ValueError) as exc:
        raise ModelLoadError(f"config key 'id2label' has a class id that is not an integer: {exc}") from exc
    if sorted(by_id) != list(range(len(by_id))):
        raise ModelLoadError(
            f"config key 'id2label' must number its classes 0..{len(by_id) - 1}, got {sorted(by_id)}"
        )
    return tuple(by_id[i] for i in range(len(by_id)))
