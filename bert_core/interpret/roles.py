"""Head roles (Clark et al., 2019, "What Does BERT Look At?"): what each head attends to on one input, a role
label where one kind of target clearly dominates, and how stable each head's role is across many inputs.

Torch-free: it reads an `Analysis` (its attention maps and its encoding's tokens and special-token mask).

Dimensions: L = layers, N = heads, S = sequence length, A = analyses (sentences).
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ..pieces import WORDPIECE, PieceStyle
from ..results import Analysis

# The targets a head's attention is measured against, in the order labels are tried when two tie.
TARGET_ROLES = ("cls", "sep", "punctuation", "previous", "next", "self")
BROAD = "broad"
ROLES = (*TARGET_ROLES, BROAD)

# A head is labelled with a target role when, averaged over the query tokens (rows), at least this share of a
# row's attention goes to that target: as much as everything else together, so the label is not a guess.
# Single rows may fall below it.
ROLE_THRESHOLD = 0.5
# ... and "broad" when no target dominates and its rows are nearly uniform: mean row entropy at least this
# fraction of the uniform row's, log(S).
BROAD_THRESHOLD = 0.8


@dataclass(frozen=True)
class HeadRoles:
    """Per head (each array (L, N) float64): mean attention, over the query tokens, to each kind of target."""

    to_cls: np.ndarray  # the leading special token ([CLS], <s>)
    to_sep: np.ndarray  # the other special tokens ([SEP], </s>), summed
    to_punctuation: np.ndarray  # pieces made only of punctuation, summed (0 where the input has none)
    to_previous: np.ndarray  # the token just before (over query tokens 1..S-1)
    to_next: np.ndarray  # the token just after (over query tokens 0..S-2)
    to_self: np.ndarray  # the query token itself
    entropy: np.ndarray  # mean row entropy in nats
    normalized_entropy: np.ndarray  # entropy / log(S): 1 for uniform rows, 0 for one-hot rows
    labels: tuple[
        tuple[str | None, ...], ...
    ]  # L rows of N: a name from ROLES, or None when no role is clear

    def score(self, role: str) -> np.ndarray:
        """The (L, N) measure behind a role name from ROLES ("broad": the normalised entropy)."""
        if role not in ROLES:
            raise InputError(f"unknown role {role!r}; known: {', '.join(ROLES)}")
        return self.normalized_entropy if role == BROAD else getattr(self, f"to_{role}")

    def rows(self) -> list[dict[str, object]]:
        """One dict per head (layer, head, each role's score, label): the sortable table, CSV-ready."""
        layers, heads = self.to_cls.shape
        return [
            {"layer": layer, "head": head}
            | {role: float(self.score(role)[layer, head]) for role in ROLES}
            | {"label": self.labels[layer][head]}
            for layer in range(layers)
            for head in range(heads)
        ]


def is_punctuation(piece: str, style: PieceStyle = WORDPIECE) -> bool:
    """True for a piece whose own characters (marker stripped) are all Unicode punctuation: ',', '.', '##.'."""
    chars = style.strip(piece)
    return bool(chars) and all(unicodedata.category(ch).startswith("P") for ch in chars)


def head_roles(analysis: Analysis, *, style: PieceStyle | None = None) -> HeadRoles:
    """What every head of `analysis` attends to, and its role label (see ROLE_THRESHOLD, BROAD_THRESHOLD).

    style: how the tokenizer marks pieces, used to recognise punctuation; the analysis's own (its model's) by
    default. WordPiece's was the default, and RoBERTa's 'Ġ(' and ALBERT's '▁"' then counted as words.

    A head switched off by the analysis's `head_mask` still computed its map (the mask scales what it passes
    on), so it keeps the role that map shows; `analysis.head_mask` says which were off.
    """
    if style is None:
        style = getattr(analysis, "piece_style", WORDPIECE)
    if not hasattr(analysis, "tokens"):  # its attentions alone lack the tokens the roles are named by
        raise InputError(f"head_roles takes an Analysis (model.analyze(text)), got {type(analysis).__name__}")
    att = np.asarray(analysis.attentions, dtype=np.float64)  # (L, N, S, S)
    s = att.shape[-1]
    special = np.asarray(analysis.special_tokens_mask, dtype=bool)
    cls = np.zeros(s, dtype=bool)
    cls[0] = special[0]
    sep = special & ~cls
    punctuation = np.array(
        [not m and is_punctuation(t, style) for t, m in zip(analysis.tokens, special, strict=True)]
    )

    def mean_to(targets: np.ndarray) -> np.ndarray:
        return att[..., targets].sum(axis=-1).mean(axis=-1)  # (L, N, S, T) -> (L, N, S) -> (L, N)

    rows = np.arange(s)
    empty = np.zeros(att.shape[:2])
    to_previous = att[..., rows[1:], rows[:-1]].mean(axis=-1) if s > 1 else empty  # (L, N, S - 1) -> (L, N)
    to_next = att[..., rows[:-1], rows[1:]].mean(axis=-1) if s > 1 else empty
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.where(att > 0, np.log(att), 0.0)  # 0 log 0 = 0
    entropy = -(att * logs).sum(axis=-1).mean(axis=-1)  # (L, N, S) -> (L, N)
    normalized = entropy / np.log(s) if s > 1 else np.zeros_like(entropy)
    scores = {
        "cls": mean_to(cls),
        "sep": mean_to(sep),
        "punctuation": mean_to(punctuation),
        "previous": to_previous,
        "next": to_next,
        "self": att[..., rows, rows].mean(axis=-1),
    }
    return HeadRoles(
        to_cls=scores["cls"],
        to_sep=scores["sep"],
        to_punctuation=scores["punctuation"],
        to_previous=scores["previous"],
        to_next=scores["next"],
        to_self=scores["self"],
        entropy=entropy,
        normalized_entropy=normalized,
        labels=_labels(np.stack([scores[r] for r in TARGET_ROLES]), normalized),
    )


def _labels(scores: np.ndarray, normalized_entropy: np.ndarray) -> tuple[tuple[str | None, ...], ...]:
    """scores (R, L, N), one slice per TARGET_ROLES entry -> a label per head."""
    best = scores.argmax(axis=0)  # (L, N): the first role on ties, so the order of TARGET_ROLES decides
    top = scores.max(axis=0)
    layers, heads = best.shape
    return tuple(
        tuple(
            TARGET_ROLES[best[layer, head]]
            if top[layer, head] >= ROLE_THRESHOLD
            else BROAD
            if normalized_entropy[layer, head] >= BROAD_THRESHOLD
            else None
            for head in range(heads)
        )
        for layer in range(layers)
    )


@dataclass(frozen=True)
class RoleStability:
    """How consistently each head takes one role across a set of inputs."""

    labels: tuple[tuple[tuple[str | None, ...], ...], ...]  # A x L x N: each input's labels
    common: tuple[tuple[str | None, ...], ...]  # L x N: the most frequent role label, None if never labelled
    stability: np.ndarray  # (L, N) float64: the share of the A inputs on which the head had `common`
    mean_scores: dict[str, np.ndarray]  # role -> (L, N) score averaged over the inputs

    @property
    def count(self) -> int:
        return len(self.labels)


def role_stability(analyses: Sequence[Analysis], *, style: PieceStyle | None = None) -> RoleStability:
    """Head roles on every analysis, then per head its most frequent label and the share of inputs that
    gave it. A head that is `None` (no clear role) on most inputs gets the most frequent actual role, so a
    head that is "previous" on 3 of 10 inputs and unlabelled elsewhere reads as "previous", stability 0.3."""
    if (
        hasattr(analyses, "attentions")
        or isinstance(analyses, (str, bytes))
        or not isinstance(analyses, Sequence)
    ):
        # one Analysis, not in a list: "'Analysis' object is not iterable"
        raise InputError(f"role_stability takes a list of Analysis results, got {type(analyses).__name__}")
    if not analyses:
        raise InputError("role stability needs at least one analysis")
    wrong = [a for a in analyses if not hasattr(a, "attentions")]
    if wrong:  # (a None or "" among them is as wrong as any other)
        raise InputError(
            f"role_stability takes a list of Analysis results; one is a {type(wrong[0]).__name__}"
        )
    shapes = {a.attentions.shape[:2] for a in analyses}
    if len(shapes) != 1:
        raise InputError(f"the analyses come from models of different shapes: {sorted(shapes)}")
    roles = [head_roles(a, style=style) for a in analyses]
    layers, heads = shapes.pop()
    common: list[tuple[str | None, ...]] = []
    stability = np.zeros((layers, heads))
    for layer in range(layers):
        row: list[str | None] = []
        for head in range(heads):
            counts = Counter(r.labels[layer][head] for r in roles if r.labels[layer][head] is not None)
            label, seen = counts.most_common(1)[0] if counts else (None, 0)
            row.append(label)
            stability[layer, head] = seen / len(roles)
        common.append(tuple(row))
    return RoleStability(
        labels=tuple(r.labels for r in roles),
        common=tuple(common),
        stability=stability,
        mean_scores={role: np.mean([r.score(role) for r in roles], axis=0) for role in ROLES},
    )
