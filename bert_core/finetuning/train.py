"""Fine-tune a checkpoint's encoder with a task head (classify, pair, tag, qa) and save what both BERTScope and
transformers load.

The recipe is the BERT paper's, as transformers' `Trainer` runs it: the family's task head (modeling/heads.py)
on the encoder from the source checkpoint, new head weights drawn as BERT initialises them, AdamW with a
linear warm-up and decay (shared with the pre-training lab), gradients clipped, dropout on in training, and
the held-out split scored after every epoch (metrics.py). Inputs are what the reference feeds: a classifier
reads `[CLS] text [SEP] (pair [SEP])`; a tagger's word labels sit on each word's first piece, its other
pieces ignored (-100); a QA example's start and end are the first and last pieces of the answer in one
(question, context) window, the window of the context that holds the answer most centrally when the whole
does not fit.

Dimensions: B = batch, S = padded sequence length, H = hidden size, C = labels.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import logging
import math
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from ..analysis import BertScopeModel, pad_encodings
from ..checkpoints.files import resolve_source
from ..checkpoints.load import load_pretrained
from ..checks import check_seed
from ..config import read_json
from ..errors import InputError
from ..modeling.heads import Network
from ..pretraining.masking import IGNORE_INDEX
from ..pretraining.train import (
    ADVICE,
    FINETUNING_INFO_FILE,
    PRETRAINING_INFO_FILE,
    SAVE_DTYPES,
    TRAINING_STATE_FILE,
    check_finite,
    checkpoint_state,
    checkpoint_step,
    config_dict,
    init_bert_weights,
    optimizer_and_schedule,
    optimizer_step,
    warmup_problem,
    write_checkpoint,
)
from ..tasks import QA_STRIDE, QuestionTooLong, word_owner
from ..tokenizer import Encoding
from . import metrics
from .data import TASKS, Example, example_labels

log = logging.getLogger(__name__)

HEAD_OF_TASK = {"classify": "classify", "pair": "classify", "tag": "tag", "qa": "qa"}
# The transformers class names a checkpoint of each family and head is saved as (config.json "architectures").
CLASS_PREFIX = {
    "bert": "Bert",
    "roberta": "Roberta",
    "distilbert": "DistilBert",
    "albert": "Albert",
    "electra": "Electra",
}
HEAD_CLASS = {
    "classify": "ForSequenceClassification",
    "tag": "ForTokenClassification",
    "qa": "ForQuestionAnswering",
}
# Where transformers' heads put dropout on what they read (classifier_dropout, seq_classif_dropout and
# qa_dropout default to the hidden dropout, the rate used here): every sequence classifier but DistilBERT's,
# every tagger, and only DistilBERT's QA head. The second dropout inside RoBERTa's and ELECTRA's two-layer
# classifiers (after the tanh / GELU) and DistilBERT's (after pre_classifier) is left out: those heads'
# forward is modeling/heads.py's inference code, shared with the app, and the encoder's own dropout still
# regularises every layer below them.
INPUT_DROPOUT = {
    "classify": {"bert", "roberta", "albert", "electra"},
    "tag": set(CLASS_PREFIX),
    "qa": {"distilbert"},
}
# Tokenizer files a checkpoint directory may hold, copied beside the fine-tuned weights as they are.
TOKENIZER_FILES = (
    "vocab.txt",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.json",
    "merges.txt",
    "spiece.model",
    "sentencepiece.bpe.model",
)


@dataclass(frozen=True)
class FinetuneConfig:
    task: str  # "classify", "pair", "tag" or "qa" (data.py lists each one's columns)
    epochs: int = 3
    batch_size: int = 16
    learning_rate: float = 5e-5
    warmup: float = 0.1  # below 1: the share of all steps spent warming up; from 1: that many steps
    weight_decay: float = 0.01
    adam_betas: tuple[float, float] = (0.9, 0.999)
    adam_eps: float = 1e-8
    max_grad_norm: float = 1.0
    seed: int = 0
    eval_fraction: float = 0.1  # share of the examples held out and scored after each epoch (0: none)
    max_length: int | None = None  # longest input in pieces, specials included (None: the model's)
    new_head: bool = False  # start a new head even when the source has one for this task
    skip_unreachable: bool = False  # qa: skip (and count) answers no window holds whole, rather than stop
    save_dtype: str = "float32"  # "float16" halves the files; transformers then loads half-precision weights

    def __post_init__(self) -> None:
        if self.task not in TASKS:
            raise ValueError(f"task must be one of {', '.join(TASKS)}, got {self.task!r}")
        check_seed(self.seed)
        for name in ("epochs", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if not 0 < self.learning_rate < math.inf:  # inf trained to a NaN loss
            raise ValueError(f"learning_rate must be a positive number, got {self.learning_rate}")
        if not self.weight_decay >= 0:  # a negative decay grows the weights
            raise ValueError(f"weight_decay must not be negative, got {self.weight_decay}")
        if not 0 <= self.warmup or (self.warmup >= 1 and self.warmup != int(self.warmup)):
            raise ValueError(f"warmup must be a share below 1 or a whole number of steps, got {self.warmup}")
        if not 0 <= self.eval_fraction < 1:
            raise ValueError(f"eval_fraction must be at least 0 and below 1, got {self.eval_fraction}")
        if self.max_length is not None and self.max_length < 8:
            raise ValueError(f"max_length must be at least 8 pieces, got {self.max_length}")
        if self.save_dtype not in SAVE_DTYPES:
            raise ValueError(f"save_dtype must be one of {tuple(SAVE_DTYPES)}, got {self.save_dtype!r}")

    @property
    def head(self) -> str:
        return HEAD_OF_TASK[self.task]

    def warmup_steps(self, total_steps: int) -> int:
        return int(self.warmup) if self.warmup >= 1 else round(self.warmup * total_steps)

    def to_dict(self) -> dict[str, Any]:
        return config_dict(self)


@dataclass(frozen=True)
class StepStats:
    step: int  # 1-based: optimisation steps done
    total_steps: int
    epoch: int  # 1-based
    epochs: int
    loss: float  # the batch's mean loss (QA: the mean of the start and end cross-entropies)
    learning_rate: float
    grad_norm: float  # before clipping
    elapsed_s: float


@dataclass
class FinetuneResult:
    model: BertScopeModel  # the fine-tuned network, ready for classify / tag / answer (eval mode)
    labels: tuple[str, ...]  # the head's labels by index (() for qa)
    train_examples: int
    eval_examples: int
    skipped: int  # qa with skip_unreachable: examples whose answer no window holds
    new_weights: tuple[str, ...]  # weights the source did not have (the new head, a new pooler)
    history: list[dict[str, float]] = field(default_factory=list)  # per epoch (0 = before training)
    steps: list[StepStats] = field(default_factory=list)

    @property
    def scores(self) -> dict[str, float]:
        """The held-out scores after the last epoch."""
        return self.history[-1] if self.history else {}


@dataclass(frozen=True)
class Feature:
    """One example as the network sees it, with its training target."""

    example: Example
    encoding: Encoding
    # classify / pair: the label's index; tag: (S,) label index on each word's first piece, IGNORE_INDEX
    # elsewhere; qa: (start piece, end piece)
    target: int | np.ndarray | tuple[int, int]


class UnknownLabels(InputError):
    """Labels of the data that the checkpoint's own head lacks (`unknown`), so the caller can name a line."""

    def __init__(self, unknown: Sequence[str], message: str) -> None:
        super().__init__(message)
        self.unknown = tuple(unknown)


# -- the head and the network -----------------------------------------------------------------------------


def build_model(
    source: BertScopeModel, config: FinetuneConfig, labels: tuple[str, ...]
) -> tuple[BertScopeModel, tuple[str, ...], tuple[str, ...]]:
    """The source's encoder with the task head: (model to train, the head's labels, new weight names).

    When the source already has this task's head (and `new_head` is off) its weights and label order are
    kept, and every label of the data must be one of its labels (InputError otherwise)."""
    head = config.head
    arch = source.architecture
    reuse = source.task == head and not config.new_head
    if reuse:
        if head == "classify" and source.config.task_kind != "single_label_classification":
            raise InputError(
                f"the checkpoint's classifier is a {source.config.task_kind} head; this lab trains single-label "
                "classifiers: start a new head with --new-head"
            )
        known = source._label_names(source.config.num_labels) if head != "qa" else ()
        unknown = [label for label in labels if label not in known]
        if unknown:
            raise UnknownLabels(
                unknown,
                f"the data has labels the model's {head} head does not know: {', '.join(unknown)} (the model's "
                f"labels: {', '.join(known)}); relabel the data, or start a new head with --new-head",
            )
        labels = tuple(known)
    elif source.task is not None:
        log.info("the checkpoint's %s head is set aside: a new %s head is trained", source.task, head)
    class_name = CLASS_PREFIX[arch.model_type] + HEAD_CLASS[head]
    bert_config = dataclasses.replace(
        source.config,
        architectures=(class_name,),
        id2label=labels if head != "qa" else (),
        problem_type="single_label_classification" if head == "classify" else None,
    )
    network = Network(
        bert_config,
        (head,),
        # transformers builds a pooler only under heads that read it (BERT's and ALBERT's classifiers)
        pooler=arch.heads[head].reads == "pooled",
        tie_word_embeddings=False,
        base_prefix=arch.base_prefix,
        encoder=arch.encoder,
        architecture=arch.model_type,
    )
    init_bert_weights(network, bert_config.initializer_range)
    source_state = source.network.state_dict()
    own_state = network.state_dict()
    take = {
        k: v
        for k, v in source_state.items()
        if k in own_state and (reuse or k.startswith(arch.base_prefix + "."))
    }
    network.load_state_dict(take, strict=False)
    new_weights = tuple(sorted(set(own_state) - set(take)))
    model = BertScopeModel(
        network,
        source.tokenizer,
        bert_config,
        architecture=arch,
        source=source.source,
        directory=source.directory,
        trained_length=source.trained_length,
    )
    return model, labels, new_weights


# -- features ---------------------------------------------------------------------------------------------


def make_features(
    model: BertScopeModel,
    examples: Sequence[Example],
    task: str,
    labels: tuple[str, ...],
    *,
    skip: bool = False,
) -> tuple[list[Feature], int]:
    """(features, examples skipped). InputError for an example that cannot be fed to the model; with `skip`,
    a QA example whose answer no window holds (or whose question leaves no room for one) is skipped instead."""
    index = {label: i for i, label in enumerate(labels)}
    features, skipped = [], 0
    for example in examples:
        where = f"line {example.line}"
        try:
            if task in ("classify", "pair"):
                features.append(
                    Feature(example, model.encode(example.text, example.text_pair), index[example.label])
                )
            elif task == "tag":
                enc = model.encode(example.text)
                targets = np.full(len(enc), IGNORE_INDEX, dtype=np.int64)
                for piece, word in _first_pieces(enc, example):
                    targets[piece] = index[example.tags[word]]
                features.append(Feature(example, enc, targets))
            else:
                try:
                    feature = _qa_feature(model, example)
                except QuestionTooLong:  # no room for the passage: out of reach too
                    if not skip:
                        raise
                    feature = None
                if feature is None and skip:
                    skipped += 1
                elif feature is None:
                    raise InputError(
                        f"the answer {example.answer_text!r} (characters {example.answer_start}-"
                        f"{example.answer_end} of a {len(example.text_pair)}-character context) lies beyond "
                        f"what the model reads with this question: it takes more pieces than the "
                        f"{model.tokenizer.max_length} positions leave beside the question. Raise --max-length "
                        "(up to the model's positions), shorten the question or the answer, or pass "
                        "--skip-unreachable to leave such examples out"
                    )
                else:
                    features.append(feature)
        except InputError as exc:
            raise InputError(f"{where}: {_in_columns(str(exc), task)}") from exc
    return features, skipped


def _in_columns(message: str, task: str) -> str:
    """A tokenizer's message in the data file's words: QA's text is the question and its text_pair the
    context ("text_pair holds …" named no column of a QA file)."""
    if task == "qa":
        # the core's own names, and those answer()'s windows give them ("the passage")
        for core, column in (
            ("text_pair ", "the context "),
            ("the passage ", "the context "),
            ("text ", "the question "),
        ):
            if message.startswith(core):
                return column + message[len(core) :]
    return message


def _first_pieces(enc: Encoding, example: Example) -> list[tuple[int, int]]:
    """[(piece, word)] for the first piece of each word (words by character span, so a word the tokenizer's
    pre-splitting cuts in two, "can't" or "U.S.", is still one word, as `entities` reads it); a word cut off
    by truncation has none."""
    owner = word_owner(
        example.text
    )  # character -> the word it belongs to (the text is the words, one space apart)
    pairs, seen = [], set()
    for piece, (sequence, (start, end)) in enumerate(
        zip(enc.sequence_ids, enc.offsets.tolist(), strict=True)
    ):
        if sequence is None:
            continue
        words = owner[start:end]
        words = words[words >= 0]
        # a piece of nothing but spaces (RoBERTa's lone "Ġ") belongs to no word; ALBERT's lone "▁" is given the
        # word's first character, so it is that word's first piece, as transformers' word_ids make it
        if len(words) and int(words[0]) not in seen:
            seen.add(int(words[0]))
            pairs.append((piece, int(words[0])))
    return pairs


def _qa_feature(model: BertScopeModel, example: Example) -> Feature | None:
    """The (question, context window) encoding that holds the answer most centrally, with the answer's first
    and last pieces; None when the answer takes more pieces than a window holds."""
    a, b = example.answer_start, example.answer_end

    def placed(enc: Encoding) -> tuple[Feature, int] | None:
        """The feature of `enc` and the answer's distance from its nearer edge, if it holds the answer whole."""
        pieces = [i for i, s in enumerate(enc.sequence_ids) if s == 1]
        spans = enc.offsets[pieces]  # (P, 2) character spans of the window's context pieces
        if not (spans[0, 0] <= a and b <= spans[-1, 1]):
            return None
        inside = [p for p, (s, e) in zip(pieces, spans.tolist(), strict=True) if s < b and e > a]
        if not inside:
            return None
        return Feature(example, enc, (inside[0], inside[-1])), min(
            inside[0] - pieces[0], pieces[-1] - inside[-1]
        )

    # The windows answer() (the Task page) reads, neighbours sharing QA_STRIDE pieces (at most half a window),
    # so an answer that straddles one window's edge lies inside the next; one placed around every answer would
    # teach that answers sit mid-window.
    found = [f for f in map(placed, model._qa_windows(example.text, example.text_pair, QA_STRIDE)) if f]
    if found:
        return max(found, key=lambda f: f[1])[0]  # the first of the most central
    # An answer longer than the overlap can straddle every edge (8 pieces against windows of 9 advancing by 5
    # was refused at --max-length 18, and trained at 17): a window placed around it then.
    around = model._qa_window_around(example.text, example.text_pair, a, b)
    hit = placed(around) if around is not None else None
    return hit[0] if hit else None


def _targets(features: Sequence[Feature]) -> set[int]:
    """The label indices the features train (classify, pair, tag); none for qa, whose targets are places."""
    found: set[int] = set()
    for f in features:
        if isinstance(f.target, np.ndarray):
            found.update(int(t) for t in f.target if t != IGNORE_INDEX)
        elif isinstance(f.target, int):
            found.add(f.target)
    return found


def _batch(model: BertScopeModel, features: Sequence[Feature]) -> dict[str, torch.Tensor]:
    """Padded (B, S) tensors and the targets: "labels" (B,) for classify, (B, S) for tag; "start", "end" (B,)
    for qa."""
    ids, types, positions, mask = pad_encodings(
        [f.encoding for f in features], model.tokenizer.pad_token_id or 0
    )
    batch = {
        "ids": torch.from_numpy(ids),
        "types": torch.from_numpy(types),
        "positions": torch.from_numpy(positions),
        "mask": torch.from_numpy(mask if mask is not None else np.ones_like(ids)),
    }
    first = features[0].target
    if isinstance(first, tuple):
        batch["start"] = torch.tensor([f.target[0] for f in features])
        batch["end"] = torch.tensor([f.target[1] for f in features])
    elif isinstance(first, np.ndarray):
        labels = np.full(ids.shape, IGNORE_INDEX, dtype=np.int64)
        for row, f in enumerate(features):
            labels[row, : len(f.target)] = f.target
        batch["labels"] = torch.from_numpy(labels)
    else:
        batch["labels"] = torch.tensor([f.target for f in features])
    return batch


def _logits(model: BertScopeModel, batch: dict[str, torch.Tensor], dropout: float) -> torch.Tensor:
    """The head's logits for a batch: (B, C) for classify, (B, S, C) for tag, (B, S, 2) for qa."""
    network, head = model.network, model.task
    out = network(
        batch["ids"], batch["types"], batch["positions"], attention_mask=batch["mask"], keep_attentions=False
    )
    x = model._head_input(head, out)
    if dropout and network.training:
        x = F.dropout(x, dropout, training=True)
    return network.logits(head, x)


def _loss(logits: torch.Tensor, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    if "start" in batch:
        # As transformers' QA heads, the mean of the start and end cross-entropies, but over the example's own
        # pieces: padding is never an answer, and with its logits in the softmax an example's loss depended on
        # how long the other examples of its batch were (transformers' heads include them).
        pad = batch["mask"] == 0  # (B, S)
        start, end = (logits[..., k].masked_fill(pad, float("-inf")) for k in (0, 1))
        return (F.cross_entropy(start, batch["start"]) + F.cross_entropy(end, batch["end"])) / 2
    return F.cross_entropy(logits.flatten(0, -2), batch["labels"].flatten(), ignore_index=IGNORE_INDEX)


# -- evaluation -------------------------------------------------------------------------------------------


def evaluate(
    model: BertScopeModel,
    features: Sequence[Feature],
    task: str,
    labels: tuple[str, ...],
    batch_size: int = 32,
) -> dict[str, float]:
    """The held-out scores (metrics.py) and mean loss, in eval mode, without building a graph."""
    if not features:
        return {}
    network = model.network
    was_training = network.training
    network.eval()
    losses, predicted = [], []
    with torch.inference_mode():
        for i in range(0, len(features), batch_size):
            chunk = features[i : i + batch_size]
            batch = _batch(model, chunk)
            logits = _logits(model, batch, 0.0)
            losses.append(float(_loss(logits, batch)) * len(chunk))
            if task != "qa":
                predicted.extend(logits.argmax(-1).tolist())
    scores = {"loss": sum(losses) / len(features)}
    if task in ("classify", "pair"):
        gold = [f.example.label for f in features]
        guess = [labels[i] for i in predicted]
        scores.update(accuracy=metrics.accuracy(gold, guess), macro_f1=metrics.macro_f1(gold, guess))
    elif task == "tag":
        words_gold, words_guess, gold_sets, guess_sets = [], [], [], []
        for feature, row in zip(features, predicted, strict=True):
            example = feature.example
            guess = ["O"] * len(example.words)  # a word truncation cut off is predicted "O"
            for piece, word in _first_pieces(feature.encoding, example):
                guess[word] = labels[row[piece]]
            spans = example.word_spans()
            words_gold.extend(example.tags)
            words_guess.extend(guess)
            gold_sets.append(metrics.entity_spans(example.tags, spans))
            guess_sets.append(metrics.entity_spans(guess, spans))
        scores.update(
            token_accuracy=metrics.accuracy(words_gold, words_guess),
            entity_f1=metrics.entity_f1(gold_sets, guess_sets),
        )
    else:
        em, f1 = [], []
        for feature in features:
            example = feature.example
            answer = model.answer(example.text, example.text_pair)[0][0]  # as the Task page reads it
            em.append(metrics.exact_match(example.answer_text, answer))
            f1.append(metrics.token_f1(example.answer_text, answer))
        scores.update(exact_match=float(np.mean(em)), f1=float(np.mean(f1)))
    network.train(was_training)
    return scores


# -- saving -----------------------------------------------------------------------------------------------


def save_finetuned(
    directory: str | Path,
    model: BertScopeModel,
    source_dir: Path,
    *,
    save_dtype: str = "float32",
    info: dict[str, Any] | None = None,
) -> Path:
    """Write the fine-tuned checkpoint: the source's config.json in its own family's keys with the head's
    class in "architectures" and its labels, the weights under the checkpoint names transformers uses, the
    source's tokenizer files and pretraining.json (which still describes how the encoder was pre-trained),
    and finetuning.json (`info`)."""
    config = dict(read_json(source_dir / "config.json"))
    bert_config = model.config
    config["architectures"] = list(bert_config.architectures)
    for key in ("id2label", "label2id", "num_labels", "problem_type", "torch_dtype", "dtype"):
        config.pop(key, None)
    if bert_config.id2label:
        config["id2label"] = {str(i): name for i, name in enumerate(bert_config.id2label)}
        config["label2id"] = {name: i for i, name in enumerate(bert_config.id2label)}
    if bert_config.problem_type:
        config["problem_type"] = bert_config.problem_type
    config["torch_dtype"] = save_dtype

    def files(staging: Path) -> None:
        for name in (*TOKENIZER_FILES, PRETRAINING_INFO_FILE):
            if (source_dir / name).is_file():
                shutil.copyfile(source_dir / name, staging / name)
        if info is not None:
            (staging / FINETUNING_INFO_FILE).write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")

    return write_checkpoint(directory, checkpoint_state(model.network, save_dtype), config, files=files)


# -- the loop ---------------------------------------------------------------------------------------------


def finetune(
    examples: Sequence[Example],
    source: str | Path,
    config: FinetuneConfig,
    *,
    out_dir: str | Path | None = None,
    on_step: Callable[[StepStats], None] | None = None,
    on_epoch: Callable[[int, dict[str, float]], None] | None = None,
    info: dict[str, Any] | None = None,
) -> FinetuneResult:
    """Fine-tune the checkpoint at `source` (a directory or a hub id) on `examples` (data.read_examples) and, with
    `out_dir`, save the model there after every epoch. `on_step` sees every optimisation step, `on_epoch`
    (epoch, held-out scores) every evaluation, epoch 0 being the untrained head. `info` is stored in
    finetuning.json."""
    # Seed torch (the new head, dropout) inside a forked RNG so the caller's global state is left alone.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        return _finetune(examples, resolve_source(source), config, out_dir, on_step, on_epoch, info or {})


def _finetune(
    examples: Sequence[Example],
    source_dir: Path,
    config: FinetuneConfig,
    out_dir: str | Path | None,
    on_step: Callable[[StepStats], None] | None,
    on_epoch: Callable[[int, dict[str, float]], None] | None,
    info: dict[str, Any],
) -> FinetuneResult:
    started = time.monotonic()
    if (source_dir / TRAINING_STATE_FILE).is_file():
        # Its pretraining.json (copied into the fine-tuned checkpoint) says "final": false, and nothing else would.
        log.warning(
            "%s is an unfinished pre-training run (%s): fine-tuning its encoder as it stands",
            source_dir, checkpoint_step(source_dir),
        )  # fmt: skip
    source = load_pretrained(source_dir, pack_weights=False)
    data_labels = example_labels(examples, config.task)
    if config.task != "qa" and len(data_labels) < 2:
        raise InputError(
            f"the data has a single label ({', '.join(data_labels)}); a classifier needs two or more"
        )
    try:
        model, labels, new_weights = build_model(source, config, data_labels)
    except UnknownLabels as exc:  # named by the first line that has one, as every other fault of the data is
        first = next(e for e in examples if not set(e.tags or (e.label,)).isdisjoint(exc.unknown))
        raise InputError(f"line {first.line}: {exc}") from exc
    del source
    limit = model.config.max_tokens
    if config.max_length is not None:
        if config.max_length > limit:
            raise InputError(f"max_length {config.max_length} is more than the model's {limit} positions")
        # A copy that stops earlier; the checkpoint's tokenizer files keep the model's own limit.
        model.tokenizer = copy.copy(model.tokenizer)  # shares the backend, which encoding only reads
        model.tokenizer.max_length = config.max_length
    features, skipped = make_features(model, examples, config.task, labels, skip=config.skip_unreachable)
    if skipped:
        log.warning("skipped %d of %d examples whose answer no window holds", skipped, len(examples))
    # QA reads a long passage in windows; the other tasks read each example's first pieces only, silently.
    cut = sum(f.encoding.truncated for f in features) if config.task != "qa" else 0
    if cut:
        log.warning(
            "%d of %d examples are longer than the %d pieces the model reads and are cut to that (a pair's longer "
            "sentence loses its end first; --max-length goes up to the model's positions)",
            cut, len(features), model.tokenizer.max_length,
        )  # fmt: skip
    trained = model.trained_length
    if trained is not None and (past := sum(len(f.encoding) > trained for f in features)):
        # The bundled demo model was pre-trained on 42 positions and reads 128: the rows past 42 are its
        # random initial ones, which fine-tuning then meets for the first time (the app says so of such inputs).
        log.warning(
            "%d of %d examples are longer than the %d positions the model was pre-trained on: the positions "
            "past that were never trained (--max-length %d keeps to them)",
            past, len(features), trained, trained,
        )  # fmt: skip
    rng = np.random.default_rng(config.seed)
    order = rng.permutation(len(features))
    n_eval = round(len(features) * config.eval_fraction)
    if config.eval_fraction and len(features) >= 2:
        n_eval = max(1, n_eval)
    held_out = [features[i] for i in order[:n_eval]]
    train_set = [features[i] for i in order[n_eval:]]
    if not train_set:
        raise InputError(f"{len(features)} usable examples leave none to train on after holding out {n_eval}")
    if unseen := [labels[k] for k in sorted(_targets(held_out) - _targets(train_set))]:
        # A small file's held-out draw can take every example of a label: the head is then scored on it
        # without having seen it, which reads as a failure of the model rather than of the split.
        log.warning(
            "no training example has the label%s %s (the held-out examples do): give more examples of it, "
            "or a smaller --eval-fraction",
            "s" if len(unseen) > 1 else "", ", ".join(unseen),
        )  # fmt: skip

    network = model.network
    head = model.task
    dropout = (
        model.config.hidden_dropout_prob if model.architecture.model_type in INPUT_DROPOUT[head] else 0.0
    )
    per_epoch = math.ceil(len(train_set) / config.batch_size)
    total = per_epoch * config.epochs
    if problem := warmup_problem(config.warmup_steps(total), total):
        raise InputError(f"{problem}, {per_epoch} an epoch: give fewer warm-up steps, or a share below 1")
    optimizer, scheduler = optimizer_and_schedule(
        network, config, warmup_steps=config.warmup_steps(total), total_steps=total
    )
    result = FinetuneResult(model, labels, len(train_set), len(held_out), skipped, new_weights)
    log.info(
        # the family's name first: "a ALBERT", "a ELECTRA" were said before it; and "1 step", not "1 steps"
        "fine-tuning %s with a %s head on %d example%s (%d held out), %d step%s; new weights: %s",
        model.architecture.name,
        head,
        len(train_set),
        "" if len(train_set) == 1 else "s",
        len(held_out),
        total,
        "" if total == 1 else "s",
        ", ".join(new_weights) or "none",
    )

    def record(epoch: int, train_loss: float | None) -> None:
        scores = evaluate(model, held_out, config.task, labels, config.batch_size)
        if epoch > 0:  # (the model as loaded is the user's own)
            check_finite(network, {"the held-out loss": scores.get("loss", 0.0)}, f"after epoch {epoch}", (
                f"epoch {epoch} was not saved; {ADVICE}"
            ))  # fmt: skip
        if train_loss is not None:
            scores["train_loss"] = train_loss
        result.history.append({"epoch": epoch, **scores})
        if on_epoch is not None:
            on_epoch(epoch, scores)
        if out_dir is not None and epoch > 0:
            meta = {
                "task": config.task,
                "epoch": epoch,
                "final": epoch == config.epochs,
                "config": config.to_dict(),
                "source": str(source_dir),
                "labels": list(labels),
                "train_examples": len(train_set),
                "eval_examples": len(held_out),
                "skipped_examples": skipped,
                "truncated_examples": cut,
                "new_weights": list(new_weights),
                "history": result.history,
                "wall_time_s": round(time.monotonic() - started, 1),
                **info,
            }
            save_finetuned(out_dir, model, source_dir, save_dtype=config.save_dtype, info=meta)
            log.info("epoch %d written to %s", epoch, out_dir)

    record(0, None)
    network.train()
    step = 0
    for epoch in range(1, config.epochs + 1):
        shuffled = rng.permutation(len(train_set))
        losses = []
        for i in range(0, len(train_set), config.batch_size):
            batch = _batch(model, [train_set[j] for j in shuffled[i : i + config.batch_size]])
            loss = _loss(_logits(model, batch, dropout), batch)
            value, grad_norm, lr = optimizer_step(
                network, optimizer, scheduler, loss, max_grad_norm=config.max_grad_norm, step=step + 1
            )
            step += 1
            losses.append(value)
            stats = StepStats(
                step, total, epoch, config.epochs, value, lr, grad_norm, time.monotonic() - started
            )
            result.steps.append(stats)
            if on_step is not None:
                on_step(stats)
        record(epoch, float(np.mean(losses)))
    network.eval()
    return result
