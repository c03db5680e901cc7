"""Pre-train a small BERT from scratch: masked language modelling plus NSP (or SOP), then save it.

The loop is the one in the BERT paper at toy scale: AdamW (no weight decay on biases and LayerNorm),
learning rate warmed up linearly then decayed linearly to zero, gradients clipped to a maximum norm, and a
checkpoint written every so often as a Hugging Face directory (config.json, model.safetensors, vocab.txt, and
tokenizer.json where the tokenizer reads typographic marks as ASCII) that `bert_core.load_pretrained` reads
back. A run stopped half-way therefore still leaves a usable model, and
each checkpoint but the last also holds what `resume` needs to go on from it (training_state.pt): the run
resumed ends with the very weights it would have had uninterrupted.

Dimensions: B = batch, S = padded sequence length, P = chosen (masked) positions in the batch, V = vocab.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import re
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..checks import check_seed, counted
from ..config import BertConfig
from ..modeling.heads import Network
from ..tokenizer import WordPieceTokenizer
from .masking import IGNORE_INDEX, MaskingConfig, StaticMasker, mask_tokens, replacement_token_ids
from .pairs import nsp_pair, pair_starts, sop_pair, truncate_pair
from .vocab import train_tokenizer

log = logging.getLogger(__name__)

PRETRAINING_INFO_FILE = "pretraining.json"
FINETUNING_INFO_FILE = "finetuning.json"
LAB_INFO_FILES = (PRETRAINING_INFO_FILE, FINETUNING_INFO_FILE)
PAIR_TASKS = ("nsp", "sop", "none")
MASKING_MODES = ("dynamic", "static")
SAVE_DTYPES = {"float32": torch.float32, "float16": torch.float16}
# Files an earlier run (or another tool) may have left in a checkpoint directory that `save_checkpoint` may
# not write (tokenizer.json: only for a tokenizer with ASCII twins). Left in place they would win over what
# it writes: the loader prefers tokenizer.json (and
# special_tokens_map.json) to vocab.txt, and a weight index or shards to model.safetensors.
STALE_CHECKPOINT_FILES = (
    "tokenizer.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
    "model.safetensors.index.json",
)
# What resuming needs beyond the weights: Adam's moments, the schedule's step, every random generator's state,
# the float32 weights (a float16 model.safetensors has lost bits) and the corpus's fingerprint. Written with each
# checkpoint but the last, which removes it: a finished model is not carrying three times its size.
TRAINING_STATE_FILE = "training_state.pt"
TRAINING_STATE_VERSION = 1
LAB_RECORDS = (*LAB_INFO_FILES, TRAINING_STATE_FILE)  # moved into a checkpoint directory after the weights


class CheckpointWriteError(OSError):
    """A checkpoint could not be written (a full disk, a directory taken away); the one written before it, if
    any, is left as it was."""


STALE_SHARD = re.compile(r"(model|pytorch_model)-\d+-of-\d+\.(safetensors|bin)")


DEFAULT_WARMUP_STEPS = 200  # the most a run warms up for by default (a tenth of its steps when shorter)


def config_dict(config: Any) -> dict[str, Any]:
    """A lab's configuration as its checkpoint's JSON holds it: numpy numbers as Python's (an np.int64 seed or
    epochs, accepted, failed at the save after training) and adam_betas as a list."""
    data = {k: v.item() if isinstance(v, np.generic) else v for k, v in asdict(config).items()}
    data["adam_betas"] = list(config.adam_betas)
    return data


@dataclass(frozen=True)
class TrainingConfig:
    # -- the model ------------------------------------------------------------------------------------
    vocab_size: int = 4000  # target size for the WordPiece trainer; the corpus may yield fewer pieces
    min_frequency: int = 2  # a merge must occur this often to enter the vocabulary
    hidden_size: int = 192
    num_hidden_layers: int = 4
    num_attention_heads: int = 4
    intermediate_size: int = 768
    max_position_embeddings: int = 128  # also the longest training sequence
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    initializer_range: float = 0.02  # std of BERT's truncated-normal-like init (plain normal here)
    # -- the data -------------------------------------------------------------------------------------
    max_segment_sentences: int = 2  # segments A and B hold 1..this many consecutive sentences each
    pair_task: str = "nsp"  # "nsp" (BERT), "sop" (ALBERT) or "none" (MLM only, RoBERTa-style)
    masking: str = "dynamic"  # "dynamic": fresh draw every use (RoBERTa); "static": fixed copies (BERT)
    static_duplicates: int = 10  # static masking: distinct corruptions per sequence (BERT's dupe_factor)
    mlm_probability: float = 0.15
    mask_fraction: float = 0.8
    random_fraction: float = 0.1
    # -- the optimisation -----------------------------------------------------------------------------
    steps: int = 2000
    batch_size: int = 64
    learning_rate: float = 1e-3
    # Linear warm-up (step 1 at 1/warmup_steps of the peak), then decay to 0 at `steps`. None: a tenth of the
    # steps, at most 200 (a fixed 200 would be longer than a short run).
    warmup_steps: int | None = None
    weight_decay: float = 0.01
    adam_betas: tuple[float, float] = (0.9, 0.98)
    adam_eps: float = 1e-6
    max_grad_norm: float = 1.0
    bf16: bool = False  # bfloat16 autocast for the forward pass: ~2x faster on CPUs with AVX512-BF16 / AMX
    # -- bookkeeping ----------------------------------------------------------------------------------
    seed: int = 0
    checkpoint_every: int = 500  # steps between checkpoints (0: only at the end)
    eval_sequences: int = 256  # fixed sequences whose loss is reported before and after training
    save_dtype: str = "float32"  # "float16" halves the file; the loader casts back to float32

    def __post_init__(self) -> None:
        if self.pair_task not in PAIR_TASKS:
            raise ValueError(f"pair_task must be one of {PAIR_TASKS}, got {self.pair_task!r}")
        if self.masking not in MASKING_MODES:
            raise ValueError(f"masking must be one of {MASKING_MODES}, got {self.masking!r}")
        if self.save_dtype not in SAVE_DTYPES:
            raise ValueError(f"save_dtype must be one of {tuple(SAVE_DTYPES)}, got {self.save_dtype!r}")
        check_seed(self.seed)
        if self.hidden_size < 1:  # before intermediate_size, which the CLI derives from it (4 x 0 was named)
            raise ValueError(f"hidden_size must be at least 1, got {self.hidden_size}")
        for name in ("steps", "batch_size", "max_segment_sentences", "static_duplicates", "eval_sequences"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.warmup_steps is None:
            object.__setattr__(self, "warmup_steps", min(DEFAULT_WARMUP_STEPS, self.steps // 10))
        for name in ("warmup_steps", "checkpoint_every"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative, got {getattr(self, name)}")
        if problem := warmup_problem(self.warmup_steps, self.steps):
            raise ValueError(problem)
        if self.max_position_embeddings < 8:
            raise ValueError(
                f"max_position_embeddings must be at least 8, got {self.max_position_embeddings}"
            )
        if not 0 < self.learning_rate < math.inf:  # NaN and inf fail too (NaN was found only by torch's Adam)
            raise ValueError(f"learning_rate must be a positive number, got {self.learning_rate}")
        # A negative decay grows the weights and a norm of 0 or less clips nothing sensible; with no token
        # chosen there is no MLM loss to learn from (it trained on 0.000).
        if not self.weight_decay >= 0:
            raise ValueError(f"weight_decay must not be negative, got {self.weight_decay}")
        if not self.max_grad_norm > 0:
            raise ValueError(f"max_grad_norm must be positive, got {self.max_grad_norm}")
        if not self.mlm_probability > 0:
            raise ValueError(f"mlm_probability must be more than 0, got {self.mlm_probability}")
        if self.intermediate_size < 1:
            raise ValueError(f"intermediate_size must be at least 1, got {self.intermediate_size}")
        MaskingConfig(self.mlm_probability, self.mask_fraction, self.random_fraction)  # raises if invalid

    @property
    def masking_config(self) -> MaskingConfig:
        return MaskingConfig(self.mlm_probability, self.mask_fraction, self.random_fraction)

    def bert_config(self, vocab_size: int, pad_token_id: int = 0) -> BertConfig:
        return BertConfig(
            vocab_size=vocab_size,
            pad_token_id=pad_token_id,
            hidden_size=self.hidden_size,
            num_hidden_layers=self.num_hidden_layers,
            num_attention_heads=self.num_attention_heads,
            intermediate_size=self.intermediate_size,
            hidden_dropout_prob=self.hidden_dropout_prob,
            attention_probs_dropout_prob=self.attention_probs_dropout_prob,
            max_position_embeddings=self.max_position_embeddings,
            initializer_range=self.initializer_range,
            # MLM only: no pooler nor pair head, which transformers' BertForPreTraining would make up at random
            architectures=("BertForMaskedLM",) if self.pair_task == "none" else ("BertForPreTraining",),
        )

    def to_dict(self) -> dict[str, Any]:
        return config_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainingConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown training option(s): {', '.join(unknown)}")
        data = dict(data)
        if "adam_betas" in data:
            data["adam_betas"] = tuple(data["adam_betas"])
        return cls(**data)


@dataclass(frozen=True)
class StepStats:
    step: int  # 1-based: optimisation steps done
    total_steps: int
    loss: float  # mlm_loss + pair_loss
    mlm_loss: float  # mean cross-entropy (nats) over the chosen positions of the batch
    pair_loss: float | None  # NSP/SOP cross-entropy, None when pair_task is "none"
    pair_accuracy: float | None
    learning_rate: float
    grad_norm: float  # before clipping
    elapsed_s: float


@dataclass
class TrainingResult:
    network: Network
    tokenizer: WordPieceTokenizer
    bert_config: BertConfig
    history: list[StepStats] = field(default_factory=list)
    eval_before: dict[str, float] = field(default_factory=dict)  # {"mlm_loss": .., "pair_loss": ..}
    eval_after: dict[str, float] = field(default_factory=dict)
    checkpoints: list[Path] = field(default_factory=list)
    stopped_at: int | None = None  # the step a `stop` request ended the run at (its checkpoint holds it)


# -- data -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Batch:
    """One padded batch; all tensors on CPU."""

    input_ids: torch.Tensor  # (B, S) int64, corrupted
    token_type_ids: torch.Tensor  # (B, S) int64
    attention_mask: torch.Tensor  # (B, S) int64, 1 = real token
    mlm_labels: torch.Tensor  # (B, S) int64, IGNORE_INDEX where no prediction is asked for
    pair_labels: torch.Tensor | None  # (B,) int64


class PretrainingData:
    """Tokenised documents and the recipe that turns a (document, sentence) start into a training sequence."""

    def __init__(
        self, documents: Sequence[Sequence[str]], tokenizer: WordPieceTokenizer, config: TrainingConfig
    ):
        self.config = config
        self.tokenizer = tokenizer
        backend = tokenizer.backend
        flat = [s for doc in documents for s in doc]
        encoded = backend.encode_batch(flat, add_special_tokens=False)
        ids = iter([list(e.ids) for e in encoded])
        # Documents of token-id sentences; empty sentences (nothing left after normalising) are dropped.
        self.documents: list[list[list[int]]] = []
        for doc in documents:
            sentences = [s for s in (next(ids) for _ in doc) if s]
            if sentences:
                self.documents.append(sentences)
        # A line longer than a whole sequence is only ever trained on in part: a corpus of one paragraph per line
        # (a common slip: the lab reads a sentence a line) trained on each paragraph's start without a word
        room = config.max_position_embeddings - (2 if config.pair_task == "none" else 3)
        long = sum(len(s) > room for doc in self.documents for s in doc)
        if long:
            log.warning(
                "%s of the corpus %s longer than a whole training sequence (%d pieces with --max-positions %d): "
                "only part of each is ever trained on (the corpus is read as one sentence a line, documents "
                "between blank lines)",
                counted(long, "line"),
                "is" if long == 1 else "are",
                room,
                config.max_position_embeddings,
            )
        if config.pair_task != "none":
            # NSP's negatives come from another document; SOP swaps two segments of one
            if config.pair_task == "nsp" and len(self.documents) < 2:
                raise ValueError(
                    "next sentence prediction needs at least two documents (documents are separated by blank "
                    "lines); or train the MLM alone with 'pair_task' = 'none'"
                )
            self.starts = pair_starts(self.documents)
        else:
            self.starts = np.asarray(
                [(d, s) for d, doc in enumerate(self.documents) for s in range(len(doc))], dtype=np.int64
            )
        if len(self.starts) == 0:
            raise ValueError("the corpus holds no usable sentences")
        self.cls_id = _require(tokenizer.cls_token_id, "[CLS]")
        self.sep_id = _require(tokenizer.sep_token_id, "[SEP]")
        self.mask_id = _require(tokenizer.mask_token_id, "[MASK]")
        self.pad_id = tokenizer.pad_token_id or 0
        self.random_ids = replacement_token_ids(tokenizer)  # no special token, no [UNK]
        self.static = StaticMasker(config.seed, config.static_duplicates)
        self.visits = np.zeros(len(self.starts), dtype=np.int64)

    @property
    def num_sentences(self) -> int:
        return sum(len(d) for d in self.documents)

    def sequence(
        self, index: int, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """Build the uncorrupted sequence for start `index`: (ids (S,), types (S,), specials (S,), pair label)."""
        cfg = self.config
        doc, start = (int(x) for x in self.starts[index])
        budget = cfg.max_position_embeddings - 3
        if cfg.pair_task == "none":
            n = int(rng.integers(1, cfg.max_segment_sentences + 1))
            a = [t for s in self.documents[doc][start : start + n] for t in s][
                : cfg.max_position_embeddings - 2
            ]
            ids = [self.cls_id, *a, self.sep_id]
            types = [0] * len(ids)
            label = -1
        else:
            build = nsp_pair if cfg.pair_task == "nsp" else sop_pair
            pair = build(self.documents, doc, start, rng, max_segment=cfg.max_segment_sentences)
            a = [t for s in pair.a for t in s]
            b = [t for s in pair.b for t in s]
            truncate_pair(a, b, budget, rng)
            ids = [self.cls_id, *a, self.sep_id, *b, self.sep_id]
            types = [0] * (len(a) + 2) + [1] * (len(b) + 1)
            label = pair.label
        ids_arr = np.asarray(ids, dtype=np.int64)
        # By id, not by position: a "[MASK]" or "[CLS]" typed literally in the corpus becomes that special id
        # and must not be chosen for prediction either.
        specials = np.isin(ids_arr, [self.cls_id, self.sep_id, self.mask_id, self.pad_id])
        return ids_arr, np.asarray(types, dtype=np.int64), specials, label

    def example(
        self, index: int, rng: np.random.Generator, *, static: bool | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """One corrupted example: (ids, types, MLM labels, pair label).

        Static masking (the config's choice unless `static` says otherwise) re-derives the pair and the
        corruption from (seed, index, visit), ignoring `rng`.
        """
        use_static = self.config.masking == "static" if static is None else static
        if use_static:
            rng = self.static.generator(index, int(self.visits[index]))
            self.visits[index] += 1
        ids, types, specials, label = self.sequence(index, rng)
        masked = mask_tokens(
            ids,
            specials,
            mask_token_id=self.mask_id,
            random_token_ids=self.random_ids,
            rng=rng,
            config=self.config.masking_config,
        )
        return masked.input_ids, types, masked.labels, label

    def batch(self, indices: Sequence[int], rng: np.random.Generator, *, static: bool | None = None) -> Batch:
        examples = [self.example(int(i), rng, static=static) for i in indices]
        longest = max(len(e[0]) for e in examples)
        n = len(examples)
        ids = np.full((n, longest), self.pad_id, dtype=np.int64)
        types = np.zeros((n, longest), dtype=np.int64)
        mask = np.zeros((n, longest), dtype=np.int64)
        labels = np.full((n, longest), IGNORE_INDEX, dtype=np.int64)
        for row, (e_ids, e_types, e_labels, _) in enumerate(examples):
            length = len(e_ids)
            ids[row, :length] = e_ids
            types[row, :length] = e_types
            mask[row, :length] = 1
            labels[row, :length] = e_labels
        pair = None
        if self.config.pair_task != "none":
            pair = torch.as_tensor([e[3] for e in examples], dtype=torch.long)
        return Batch(
            torch.from_numpy(ids),
            torch.from_numpy(types),
            torch.from_numpy(mask),
            torch.from_numpy(labels),
            pair,
        )


def _require(token_id: int | None, name: str) -> int:
    if token_id is None:
        raise ValueError(f"the vocabulary has no {name} token, which pre-training needs")
    return token_id


# -- model ------------------------------------------------------------------------------------------------


def init_bert_weights(network: nn.Module, initializer_range: float) -> None:
    """BERT's initialisation: N(0, initializer_range) for weights, zero biases, LayerNorm (1, 0).

    PyTorch's default init (Kaiming-uniform Linear, N(0, 1) Embedding) is far too large for a transformer
    with a tied output layer: the MLM logits start huge and the first steps are wasted undoing it.
    """
    for module in network.modules():
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=initializer_range)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=initializer_range)
            if module.padding_idx is not None:
                with torch.no_grad():
                    module.weight[module.padding_idx].zero_()
        elif isinstance(module, nn.LayerNorm):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)
    if "mlm" in getattr(network, "head_names", ()):
        nn.init.zeros_(network.head("mlm").bias)


def build_network(bert_config: BertConfig, config: TrainingConfig) -> Network:
    with_pair = config.pair_task != "none"
    # MLM only: no pooler either, so no untrained pooler weights end up in the checkpoint.
    network = Network(bert_config, ("mlm", "nsp") if with_pair else ("mlm",), pooler=with_pair)
    init_bert_weights(network, config.initializer_range)
    return network


def step_memory(bert_config: BertConfig, config: TrainingConfig) -> int:
    """About how many bytes one training step holds at its peak, at the longest sequences: each layer's
    activations kept for the backward pass (Korthikanti et al., 2022, count s*b*h*(34 + 5*a*s/h) bytes at 16
    bits; twice that in float32) and the MLM head's logits at the masked positions (the logits, their softmax
    and its gradient). An estimate for refusing a step that cannot fit, not a measurement."""
    b, s = config.batch_size, bert_config.max_position_embeddings
    h, a = bert_config.hidden_size, bert_config.num_attention_heads
    layers = bert_config.num_hidden_layers * b * s * h * (34 + 5 * a * s / h) * 2
    logits = 3 * 4 * b * s * config.mlm_probability * bert_config.vocab_size
    return int(layers + logits)


def available_memory() -> int | None:
    """Bytes this machine can still give a process without swapping (Linux's MemAvailable), or None."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def memory_problem(bert_config: BertConfig, config: TrainingConfig) -> str | None:
    """Why a step of this size may not fit in this machine's memory, or None: a --batch-size of 100,000 was
    killed by the kernel for want of memory (23 GB taken), with no word, once the vocabulary was trained. The
    worst case (every sequence as long as the model reads; batches are padded to their longest), activations
    only; where /proc/meminfo shows a host's memory and not a container's limit, it can miss."""
    needed, free = step_memory(bert_config, config), available_memory()
    if free is None or needed <= free:
        return None
    return (
        f"batch_size {config.batch_size} could need about {needed / 2**30:.1f} GB for one step, once a batch's "
        f"sequences reach {bert_config.max_position_embeddings} pieces, more than the {free / 2**30:.1f} GB free "
        "here: lower it, or the model's maximum positions"
    )


def compute_losses(network: Network, batch: Batch) -> tuple[torch.Tensor, torch.Tensor | None, float | None]:
    """(MLM loss, pair loss or None, pair accuracy or None) for one batch."""
    # No attention stack: the losses never read it, and under autograd it would be a second copy of every map.
    out = network(
        batch.input_ids, batch.token_type_ids, attention_mask=batch.attention_mask, keep_attentions=False
    )
    chosen = batch.mlm_labels != IGNORE_INDEX  # (B, S)
    # The V-wide projection only at the P chosen positions: most of the MLM head's cost is saved.
    logits = network.logits("mlm", out.last_hidden_state[chosen])  # (P, V)
    targets = batch.mlm_labels[chosen]
    mlm = F.cross_entropy(logits, targets) if len(targets) else logits.sum() * 0.0
    if batch.pair_labels is None:
        return mlm, None, None
    pair_logits = network.logits("nsp", out.pooled)  # (B, 2)
    pair = F.cross_entropy(pair_logits, batch.pair_labels)
    accuracy = float((pair_logits.argmax(-1) == batch.pair_labels).float().mean())
    return mlm, pair, accuracy


def evaluate(network: Network, batches: Sequence[Batch]) -> dict[str, float]:
    """Mean losses over fixed batches, in eval mode (no dropout), without building a graph."""
    was_training = network.training
    network.eval()
    totals: dict[str, list[float]] = {"mlm_loss": [], "pair_loss": [], "pair_accuracy": []}
    with torch.inference_mode():
        for batch in batches:
            mlm, pair, accuracy = compute_losses(network, batch)
            totals["mlm_loss"].append(float(mlm))
            if pair is not None:
                totals["pair_loss"].append(float(pair))
                totals["pair_accuracy"].append(float(accuracy))
    network.train(was_training)
    return {k: float(np.mean(v)) for k, v in totals.items() if v}


def optimizer_and_schedule(
    network: nn.Module, config: Any, *, warmup_steps: int, total_steps: int
) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.LambdaLR]:
    """AdamW as BERT uses it, and its learning rate warmed up then decayed (`warmup_then_decay`). `config` is
    either lab's (TrainingConfig, FinetuneConfig): its learning_rate, weight_decay, adam_betas, adam_eps."""
    # As in BERT: biases and LayerNorm gains are not pulled towards zero. Found by the module's type, not its
    # name: DistilBERT's sa_layer_norm and ALBERT's full_layer_layer_norm were decayed by a name test.
    norms = {
        id(p) for m in network.modules() if isinstance(m, nn.LayerNorm) for p in m.parameters(recurse=False)
    }
    decay, no_decay = [], []
    for name, param in network.named_parameters():
        (no_decay if name.endswith("bias") or id(param) in norms else decay).append(param)
    groups = [
        {"params": decay, "weight_decay": config.weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(
        groups, lr=config.learning_rate, betas=config.adam_betas, eps=config.adam_eps
    )
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: warmup_then_decay(step, warmup_steps, total_steps)
    )
    return optimizer, schedule


def warmup_problem(warmup_steps: int, total_steps: int) -> str | None:
    """Why a warm-up cannot be used for a run of `total_steps`: longer than the run, the rate would never reach
    its peak, nor decay (both labs check it, each when it knows its step count)."""
    if warmup_steps > total_steps:
        return f"the warm-up (--warmup, {warmup_steps} steps) is longer than the run ({total_steps} steps)"
    return None


def warmup_then_decay(step: int, warmup_steps: int, total_steps: int) -> float:
    """Multiplier of the peak learning rate before step `step` (0-based): linear warm-up over `warmup_steps`,
    then linear decay to zero at `total_steps`."""
    if warmup_steps and step < warmup_steps:
        return (step + 1) / warmup_steps
    return max(0.0, (total_steps - step) / max(1, total_steps - warmup_steps))


ADVICE = "lower --lr or raise --warmup and try again"


def optimizer_step(
    network: nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
    loss: torch.Tensor,
    *,
    max_grad_norm: float,
    step: int,
) -> tuple[float, float, float]:
    """Backpropagate `loss`, clip the gradients and step the optimiser and the schedule: (the loss, the gradient
    norm before clipping, the learning rate this step used). A loss that is not finite raises
    FloatingPointError before any weight changes, so the last checkpoint stays good."""
    value = float(loss.detach())
    if not math.isfinite(value):
        raise FloatingPointError(f"the loss became {value} at step {step}; {ADVICE}")
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    grad_norm = float(torch.nn.utils.clip_grad_norm_(network.parameters(), max_grad_norm))
    lr = optimizer.param_groups[0]["lr"]
    optimizer.step()
    scheduler.step()
    return value, grad_norm, lr


def check_finite(network: nn.Module, losses: dict[str, float], when: str, advice: str) -> None:
    """Raise FloatingPointError where the weights, or the losses measured with them (named as the message
    names them: {"the held-out loss": 0.69}), are no longer finite.
    `optimizer_step` checks each loss before its update, but the update itself can break the weights (the
    last one most of all, which no later loss sees): a run of --lr 1e30 reported "done ... MLM loss 4.661 -> nan
    (accuracy 54%)", an argmax over NaN scores, and left a checkpoint that predicted NaN everywhere."""
    broken = next((name for name, p in network.named_parameters() if not bool(torch.isfinite(p).all())), None)
    bad = {k: v for k, v in losses.items() if not math.isfinite(v)}
    if broken is None and not bad:
        return
    what = (
        f"the weights ({broken}, and maybe others) are no longer finite"
        if broken is not None
        else " and ".join(f"{k} is {v}" for k, v in bad.items())
    )
    raise FloatingPointError(f"{when}, {what}: the updates broke the model; {advice}")


# -- saving -----------------------------------------------------------------------------------------------


def save_checkpoint(
    directory: str | Path,
    network: Network,
    tokenizer: WordPieceTokenizer,
    bert_config: BertConfig,
    *,
    save_dtype: str = "float32",
    info: dict[str, Any] | None = None,
    training_state: dict[str, Any] | None = None,
) -> Path:
    """Write a Hugging Face checkpoint directory that `load_pretrained` (and transformers) can read, and with
    `training_state`, the TRAINING_STATE_FILE that `resume` reads (staged with the weights)."""
    # The tied MLM decoder is not in the state dict (it *is* the word-embedding table), so no key is duplicated.
    state = checkpoint_state(network, save_dtype)
    tied = "mlm" not in network.head_names or network.head("mlm").tied
    if not tied and "cls.predictions.bias" in state:
        # An untied head's state dict names one bias twice (transformers reads decoder.bias); safetensors
        # refuses two names for one storage, so the second name gets its own copy.
        state["cls.predictions.decoder.bias"] = state["cls.predictions.bias"].clone()
    config = bert_config.to_dict()
    config["tie_word_embeddings"] = tied
    config["torch_dtype"] = save_dtype

    def files(staging: Path) -> None:
        # vocab.txt + tokenizer_config.json, and tokenizer.json only where the normaliser reads typographic
        # marks as ASCII, which the other two cannot say. The loader rebuilds a normaliser it recognises with
        # the current code either way, so neither freezes this version's normaliser into the checkpoint.
        tokenizer.save(staging, tokenizer_json=False)
        if info is not None:
            (staging / PRETRAINING_INFO_FILE).write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
        if training_state is not None:
            torch.save(training_state, staging / TRAINING_STATE_FILE)

    return write_checkpoint(directory, state, config, files=files)


def checkpoint_state(network: nn.Module, save_dtype: str = "float32") -> dict[str, torch.Tensor]:
    """The network's state dict as CPU tensors of the storage type (a key of SAVE_DTYPES)."""
    dtype = SAVE_DTYPES[save_dtype]
    return {k: v.detach().to("cpu", dtype).contiguous() for k, v in network.state_dict().items()}


def write_checkpoint(
    directory: str | Path,
    state: dict[str, torch.Tensor],
    config: dict[str, Any],
    *,
    files: Callable[[Path], None] | None = None,
) -> Path:
    """Write model.safetensors, config.json and whatever `files(staging_directory)` adds (tokenizer, lab
    metadata) into `directory`, removing files an earlier checkpoint left there that would win over these.

    Files are first written to a temporary directory beside the target and then moved in one by one, so a
    reader (or a crash) never sees a half-written model.safetensors.
    """
    from safetensors import SafetensorError
    from safetensors.torch import save_file

    directory = Path(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=directory, prefix=".partial-") as tmp:
            tmp_dir = Path(tmp)
            save_file(state, str(tmp_dir / "model.safetensors"), metadata={"format": "pt"})
            (tmp_dir / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
            if files is not None:
                files(tmp_dir)
            written = {item.name for item in tmp_dir.iterdir()}
            # Leftovers that would win over these files go first; the lab's records move in last, and the
            # earlier ones this save does not replace go only after that: a stop between two moves leaves
            # records that describe files still there (the earlier training_state.pt was deleted first, and a
            # run stopped then could not be resumed).
            _remove_stale_files(directory, written, STALE_CHECKPOINT_FILES, shards=True)
            for item in sorted(tmp_dir.iterdir(), key=lambda item: item.name in LAB_RECORDS):
                item.chmod(0o644)  # mkdtemp's files are private; a checkpoint is meant to be shared
                os.replace(item, directory / item.name)
            _remove_stale_files(directory, written, LAB_RECORDS)
    # torch.save's full disk is a RuntimeError ("enforce fail ..."), safetensors' a SafetensorError (an
    # Exception of its own, which escaped as a traceback: "Error while serializing: I/O error: No space left")
    except (OSError, RuntimeError, SafetensorError) as exc:
        why = (
            exc.strerror
            if isinstance(exc, OSError) and exc.strerror
            # safetensors' own words after "is the disk full?", which is not its only cause
            else "a write failed: is the disk full?"
            + (f" {str(exc).splitlines()[0][:200]}" if isinstance(exc, SafetensorError) and str(exc) else "")
        )
        raise CheckpointWriteError(f"cannot write the checkpoint to {directory} ({why})") from exc
    return directory


def _remove_stale_files(
    directory: Path, written: set[str], names: tuple[str, ...], *, shards: bool = False
) -> None:
    """Delete the files of `names` (and with `shards`, weight shards) in `directory` that this save does not
    replace. The labs' records among them too: another run's describe other weights."""
    for item in directory.iterdir():
        name = item.name
        stale = name in names or (shards and STALE_SHARD.fullmatch(name) is not None)
        if stale and name not in written and item.is_file():
            log.info("removing %s, which this checkpoint replaces, from %s", name, directory)
            item.unlink()


# -- the loop ---------------------------------------------------------------------------------------------


def train(
    documents: Sequence[Sequence[str]],
    config: TrainingConfig,
    *,
    out_dir: str | Path | None = None,
    tokenizer: WordPieceTokenizer | None = None,
    on_step: Callable[[StepStats], None] | None = None,
    info: dict[str, Any] | None = None,
    stop: Callable[[], bool] | None = None,
) -> TrainingResult:
    """Pre-train a BERT on `documents` (lists of sentences) and, with `out_dir`, save checkpoints there.

    Without `tokenizer` a WordPiece vocabulary of up to `config.vocab_size` pieces is trained first.
    `on_step` is called after every optimisation step (a progress bar, a logger). `info` is extra metadata
    stored in pretraining.json next to the weights. `stop` is asked after every step; when it says yes, the run
    writes a checkpoint of that step and returns (`stopped_at`), for `resume` to go on from.
    """
    # Seed torch (initialisation, dropout) inside a forked RNG so the caller's global state is left alone.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        return _train(
            documents, config, out_dir=out_dir, tokenizer=tokenizer, on_step=on_step, info=info, stop=stop
        )


def resume(
    documents: Sequence[Sequence[str]],
    out_dir: str | Path,
    *,
    on_step: Callable[[StepStats], None] | None = None,
    info: dict[str, Any] | None = None,
    stop: Callable[[], bool] | None = None,
    state: dict[str, Any] | None = None,
    threads: int | None = None,
) -> TrainingResult:
    """Go on with the run whose last checkpoint is in `out_dir`, on the same `documents`, to its planned last
    step: with the configuration, vocabulary and every random generator's state it was stopped with, so it ends
    with the weights it would have had uninterrupted. `info` is merged into the run's own (pretraining.json).
    Raises ValueError when there is nothing to resume or the documents are not the run's. `state`: its
    `load_training_state`, when the caller has read it already. It runs on the run's own thread count unless
    `threads` says otherwise (another sums in another order: the last bits of the weights then differ)."""
    out_dir = Path(out_dir)
    state = load_training_state(out_dir) if state is None else state
    config = TrainingConfig.from_dict(state["training_config"])
    if problem := corpus_problem(documents, state, out_dir):
        raise ValueError(problem)
    tokenizer = WordPieceTokenizer.from_directory(out_dir, max_length=config.max_position_embeddings)
    before = torch.get_num_threads()
    torch.set_num_threads(threads or state.get("threads") or before)
    with torch.random.fork_rng(devices=[]):
        try:
            return _train(
                documents,
                config,
                out_dir=out_dir,
                tokenizer=tokenizer,
                on_step=on_step,
                info={**state["info"], **(info or {})},
                stop=stop,
                state=state,
            )
        finally:
            torch.set_num_threads(before)


def checkpoint_step(directory: Path) -> str:
    """The step a lab checkpoint's pretraining.json records ("step 700 of 3000"), or that it is not known."""
    try:
        info = json.loads((directory / PRETRAINING_INFO_FILE).read_text(encoding="utf-8"))
        return f"step {info['step']} of {info['training_config']['steps']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "its last checkpoint's step unknown"


def corpus_problem(documents: Sequence[Sequence[str]], state: dict[str, Any], out_dir: Path) -> str | None:
    """Why `documents` cannot continue the run whose `state` is in `out_dir`, or None."""
    if corpus_fingerprint(documents) == state["corpus_sha256"]:
        return None
    return (
        f"this corpus is not the one the run in {out_dir} was trained on ({state['info'].get('corpus', '?')}): "
        "resuming on other text would not continue that run"
    )


def corpus_fingerprint(documents: Sequence[Sequence[str]]) -> str:
    """SHA-256 of the documents' sentences and their division into documents."""
    digest = hashlib.sha256()
    for doc in documents:
        for sentence in doc:
            digest.update(sentence.encode("utf-8", "surrogatepass") + b"\n")
        digest.update(b"\0")
    return digest.hexdigest()


def load_training_state(directory: str | Path) -> dict[str, Any]:
    """The TRAINING_STATE_FILE of the run in `directory`, read as tensors and plain values only (never an
    arbitrary pickle); ValueError saying why there is nothing to resume."""
    directory = Path(directory)
    path = directory / TRAINING_STATE_FILE
    if not path.is_file():
        if (directory / FINETUNING_INFO_FILE).is_file():
            raise ValueError(
                f"{directory} holds a fine-tuned checkpoint: only `bertscope pretrain` runs resume"
            )
        info_path = directory / PRETRAINING_INFO_FILE
        try:
            info = json.loads(info_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            info = None
        if not isinstance(info, dict):
            raise ValueError(f"{directory} holds no `bertscope pretrain` run to resume")
        if info.get("final"):
            raise ValueError(
                f"the run in {directory} finished (step {info.get('step')}): there is nothing to resume"
            )
        raise ValueError(
            f"{directory} holds a checkpoint without {TRAINING_STATE_FILE} (written by an earlier version), so it "
            "cannot be resumed exactly; start a new run"
        )
    unusable = (
        f"so the run cannot be resumed (the model in {directory} still loads, as of its last checkpoint): start "
        "a new run to train on"
    )
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # a truncated or foreign file: torch raises several types, none of them ours
        # Not torch's own text: it ends by advising weights_only=False, which would run whatever the file holds.
        raise ValueError(f"{path} cannot be read ({type(exc).__name__}: cut short or not a training state), "
                         f"{unusable}") from exc  # fmt: skip
    if not isinstance(state, dict) or state.get("version") != TRAINING_STATE_VERSION:
        raise ValueError(f"{path} is not a training state this version of BERTScope writes, {unusable}")
    return state


def _train(
    documents: Sequence[Sequence[str]],
    config: TrainingConfig,
    *,
    out_dir: str | Path | None,
    tokenizer: WordPieceTokenizer | None,
    on_step: Callable[[StepStats], None] | None,
    info: dict[str, Any] | None,
    stop: Callable[[], bool] | None = None,
    state: dict[str, Any] | None = None,
) -> TrainingResult:
    start_time = time.monotonic() - (state["elapsed_s"] if state else 0.0)
    # The thread counts the run has trained on, its first first. The first stays the run's own, which a plain
    # resume goes back to: a resume on another count recorded that one as "the run's", and said so after.
    seen = []
    if state and state.get("threads"):
        seen = state.get("threads_seen") or [state["threads"]]
    threads_seen = list(dict.fromkeys([*seen, torch.get_num_threads()]))
    rng = np.random.default_rng(config.seed)
    # Before the vocabulary is trained and the corpus read, not after: the vocabulary asked for stands in for
    # the one to be trained (its MLM logits are a small share of the estimate).
    vocab = tokenizer.vocab_size if tokenizer is not None else config.vocab_size
    if problem := memory_problem(config.bert_config(vocab, pad_token_id=0), config):
        raise ValueError(problem)
    if tokenizer is None:
        tokenizer = train_tokenizer(
            (s for doc in documents for s in doc),
            vocab_size=config.vocab_size,
            min_frequency=config.min_frequency,
            max_length=config.max_position_embeddings,
        )
    data = PretrainingData(documents, tokenizer, config)
    bert_config = config.bert_config(tokenizer.vocab_size, pad_token_id=data.pad_id)
    network = build_network(bert_config, config)
    log.info(
        "pre-training %s parameters on %d document%s / %d sentence%s, vocabulary %d",
        f"{sum(p.numel() for p in network.parameters()):,}",
        len(data.documents),
        "" if len(data.documents) == 1 else "s",
        data.num_sentences,
        "" if data.num_sentences == 1 else "s",
        tokenizer.vocab_size,
    )

    # A fixed evaluation set, drawn with its own generator so it is the same whatever the training draws.
    eval_rng = np.random.default_rng([config.seed, 1])
    eval_indices = eval_rng.integers(len(data.starts), size=config.eval_sequences)
    eval_batches = [
        data.batch(eval_indices[i : i + config.batch_size], eval_rng, static=False)
        for i in range(0, len(eval_indices), config.batch_size)
    ]
    result = TrainingResult(network, tokenizer, bert_config)
    optimizer, scheduler = optimizer_and_schedule(
        network, config, warmup_steps=config.warmup_steps, total_steps=config.steps
    )
    first_step, longest, recent_loss = 0, 0, []
    if state is None:
        result.eval_before = evaluate(network, eval_batches)
    else:
        try:
            network.load_state_dict(state["model"])
        except RuntimeError as exc:  # size mismatch: the vocabulary (or config) beside it was edited
            raise ValueError(
                f"the weights saved for resuming do not fit the vocabulary and config in {out_dir} (edited since "
                "the run stopped?): put those files back as the run left them, or start a new run"
            ) from exc
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        rng.bit_generator.state = state["numpy_rng"]
        torch.set_rng_state(state["torch_rng"])
        data.visits[:] = state["static_visits"].numpy()
        first_step, longest, recent_loss = state["step"], state["longest"], list(state["recent_loss"])
        result.eval_before = dict(state["eval_before"])
        log.info("resuming at step %d of %d", first_step, config.steps)
    network.train()
    fingerprint = state["corpus_sha256"] if state else corpus_fingerprint(documents)  # resume checked it

    def checkpoint(step: int, final: bool) -> None:
        if out_dir is None:
            return
        evaluation = evaluate(network, eval_batches) if final else {}
        check_finite(
            network, _named(evaluation), f"after step {step}", f"step {step} was not saved; {ADVICE}"
        )
        if final:
            result.eval_after = evaluation
        meta = {
            "step": step,
            "final": final,
            "training_config": config.to_dict(),
            "documents": len(data.documents),
            "sentences": data.num_sentences,
            "eval_before": result.eval_before,
            "eval_after": evaluation,
            "wall_time_s": round(time.monotonic() - start_time, 1),
            "recent_loss": recent_loss,
            # Positions past this were never trained; the app warns when an input reaches them.
            "longest_sequence": longest,
            **(info or {}),
        }
        training_state = None
        if not final:
            training_state = {
                "version": TRAINING_STATE_VERSION,
                "step": step,
                "training_config": config.to_dict(),
                "info": info or {},
                "corpus_sha256": fingerprint,
                "model": network.state_dict(),  # float32 whatever save_dtype says
                "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(),
                "numpy_rng": rng.bit_generator.state,
                "torch_rng": torch.get_rng_state(),
                "static_visits": torch.from_numpy(data.visits.copy()),
                "longest": longest,
                "recent_loss": recent_loss,
                "eval_before": result.eval_before,
                "elapsed_s": time.monotonic() - start_time,
                # Not the weights' business, but their last bits': the same steps on another thread count sum
                # in another order, so a resume on it ends a little apart from the uninterrupted run.
                "threads": threads_seen[0],
                "threads_seen": threads_seen,
            }
        was_training = network.training
        network.eval()
        save_checkpoint(
            out_dir,
            network,
            tokenizer,
            bert_config,
            save_dtype=config.save_dtype,
            info=meta,
            training_state=training_state,
        )
        network.train(was_training)
        result.checkpoints.append(Path(out_dir))
        log.info("checkpoint at step %d written to %s", step, out_dir)

    for step in range(first_step, config.steps):
        indices = rng.integers(len(data.starts), size=config.batch_size)
        batch = data.batch(indices, rng)
        longest = max(longest, int(batch.input_ids.shape[1]))  # (B, S): padded to the batch's longest
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=config.bf16):
            mlm, pair, accuracy = compute_losses(network, batch)
        loss = mlm if pair is None else mlm + pair
        loss_value, grad_norm, lr = optimizer_step(
            network, optimizer, scheduler, loss, max_grad_norm=config.max_grad_norm, step=step + 1
        )
        stats = StepStats(
            step=step + 1,
            total_steps=config.steps,
            loss=loss_value,
            mlm_loss=float(mlm.detach()),
            pair_loss=None if pair is None else float(pair.detach()),
            pair_accuracy=accuracy,
            learning_rate=lr,
            grad_norm=grad_norm,
            elapsed_s=time.monotonic() - start_time,
        )
        result.history.append(stats)
        recent_loss = [*recent_loss[-49:], round(loss_value, 4)]
        if on_step is not None:
            on_step(stats)
        done = step + 1
        if done < config.steps and stop is not None and stop():
            checkpoint(done, final=False)
            result.stopped_at = done
            network.eval()
            return result
        if config.checkpoint_every and done % config.checkpoint_every == 0 and done < config.steps:
            checkpoint(done, final=False)

    network.eval()
    if out_dir is not None:
        checkpoint(config.steps, final=True)
    else:
        result.eval_after = evaluate(network, eval_batches)
        check_finite(network, _named(result.eval_after), f"after step {config.steps}", ADVICE)
    network.eval()  # the returned model is for inference: dropout off
    return result


def _named(evaluation: dict[str, float]) -> dict[str, float]:
    """`evaluate`'s losses as check_finite's message names them."""
    names = {"mlm_loss": "the evaluation sequences' MLM loss", "pair_loss": "their pair loss"}
    return {names[k]: v for k, v in evaluation.items() if k in names}


def replay_longest_sequence(
    documents: Sequence[Sequence[str]], tokenizer: WordPieceTokenizer, config: TrainingConfig
) -> int:
    """The longest sequence `train` feeds the network for these documents, tokenizer and config, found by
    replaying its numpy draws without a network (they never depend on the weights). For checkpoints saved
    before pretraining.json recorded `longest_sequence`."""
    data = PretrainingData(documents, tokenizer, config)
    rng = np.random.default_rng(config.seed)
    longest = 0
    for _ in range(config.steps):
        indices = rng.integers(len(data.starts), size=config.batch_size)
        longest = max(longest, int(data.batch(indices, rng).input_ids.shape[1]))
    return longest
