"""Masked-language-model corruption, exactly as BERT describes it, in numpy only.

Of the ordinary (non-special) tokens of a sequence, 15 % are *chosen* as prediction targets. Of the chosen
ones, 80 % are replaced by [MASK], 10 % by a random token and 10 % are left unchanged; the model must
predict the original token at every chosen position, whatever happened to it.

Nothing here imports torch, so the app can draw a masking for the user's sentence without the training
stack, and every draw takes an explicit `np.random.Generator`: the same seed gives the same corruption, and
no global random state is read or changed.

Dimensions: S = sequence length, P = number of chosen positions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

import numpy as np

# The label value at positions that are not prediction targets; PyTorch's cross-entropy ignores it by default.
IGNORE_INDEX = -100


class MaskAction(IntEnum):
    """What happened to a token. The values are stored in `MaskedSequence.actions`."""

    NONE = 0  # not chosen: no prediction is asked for here
    MASK = 1  # chosen, replaced by [MASK]
    RANDOM = 2  # chosen, replaced by a random ordinary token
    KEEP = 3  # chosen, left unchanged (the model still has to predict it)


@dataclass(frozen=True)
class MaskingConfig:
    mlm_probability: float = 0.15  # fraction of ordinary tokens chosen as targets
    mask_fraction: float = 0.8  # of the chosen tokens, the share replaced by [MASK]
    random_fraction: float = 0.1  # of the chosen tokens, the share replaced by a random token; the rest stay

    def __post_init__(self) -> None:
        for name in ("mlm_probability", "mask_fraction", "random_fraction"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be between 0 and 1, got {value!r}")
        if self.mask_fraction + self.random_fraction > 1.0 + 1e-9:
            raise ValueError(
                f"mask_fraction + random_fraction must not exceed 1 (got {self.mask_fraction} + "
                f"{self.random_fraction}); the remainder is the share left unchanged"
            )

    @property
    def keep_fraction(self) -> float:
        return max(0.0, 1.0 - self.mask_fraction - self.random_fraction)


@dataclass(frozen=True)
class MaskedSequence:
    """One corrupted sequence and what the model must recover."""

    input_ids: np.ndarray  # (S,) int64: the corrupted ids the model sees
    labels: np.ndarray  # (S,) int64: the original id at chosen positions, IGNORE_INDEX elsewhere
    actions: np.ndarray  # (S,) int8 MaskAction values

    @property
    def positions(self) -> np.ndarray:
        """(P,) indices of the chosen positions, ascending."""
        return np.flatnonzero(self.actions != MaskAction.NONE)

    @property
    def targets(self) -> np.ndarray:
        """(P,) original ids at the chosen positions."""
        return self.labels[self.positions]

    def count(self, action: MaskAction) -> int:
        return int(np.count_nonzero(self.actions == action))


def ordinary_token_ids(vocab_size: int, special_ids: Sequence[int]) -> np.ndarray:
    """The ids a random replacement may take: every id that is not a special token."""
    keep = np.ones(vocab_size, dtype=bool)
    special = np.asarray([i for i in special_ids if 0 <= i < vocab_size], dtype=np.int64)
    keep[special] = False
    ids = np.flatnonzero(keep)
    if len(ids) == 0:
        raise ValueError("the vocabulary has no ordinary tokens to draw random replacements from")
    return ids


def special_token_ids(tokenizer: Any) -> list[int]:
    """The ids never chosen for prediction: [CLS], [SEP], [MASK] and [PAD] (those the tokenizer has).

    Marked by id rather than by position, so a "[MASK]" typed into the text is not chosen either.
    """
    names = ("cls_token_id", "sep_token_id", "mask_token_id", "pad_token_id")
    return [i for i in (getattr(tokenizer, n) for n in names) if i is not None]


def replacement_token_ids(tokenizer: Any, embedding_rows: int | None = None) -> np.ndarray:
    """The ids a random replacement may take, as in training: no special token and no [UNK].

    Only ids that both the vocabulary and the embedding table know: a checkpoint's table may be larger
    than its vocabulary (padded to a multiple of 8, say), and an id with no token cannot be shown.
    """
    size = tokenizer.vocab_size if embedding_rows is None else min(tokenizer.vocab_size, embedding_rows)
    excluded = special_token_ids(tokenizer)
    if tokenizer.unk_token_id is not None:
        excluded.append(tokenizer.unk_token_id)
    return ordinary_token_ids(size, excluded)


def mask_tokens(
    input_ids: Sequence[int] | np.ndarray,
    special_tokens_mask: Sequence[bool] | np.ndarray,
    *,
    mask_token_id: int,
    random_token_ids: np.ndarray,
    rng: np.random.Generator,
    config: MaskingConfig | None = None,
) -> MaskedSequence:
    """Draw one BERT masking of a sequence.

    Args:
        input_ids: (S,) the original ids, specials included.
        special_tokens_mask: (S,) True at [CLS], [SEP], [PAD]...: those are never chosen.
        mask_token_id: the id of [MASK].
        random_token_ids: the ids a random replacement is drawn from (see `ordinary_token_ids`). BERT's
            reference code draws from the whole vocabulary; we leave the specials out so that a random
            replacement never plants a second [CLS] or [SEP] in the middle of a sentence.
        rng: the only source of randomness.
        config: the 15 / 80 / 10 / 10 proportions (BERT's, by default).

    Returns the corrupted ids, the labels and the action taken at each position.

    How many tokens are chosen: n * p rounded *stochastically* (down or up, with the probability that makes
    the expected count exactly n * p), then that many positions uniformly without replacement. Every ordinary
    token is thus chosen with probability exactly p, like RoBERTa's independent coin flips, but the count per
    sequence varies by at most one, like BERT's fixed count. A short sequence can still be left with none:
    with n < 1 / p ordinary tokens (n < 7 at 15 %) the probability of that is 1 - n * p.
    """
    config = config or MaskingConfig()
    ids = np.asarray(input_ids, dtype=np.int64)
    special = np.asarray(special_tokens_mask, dtype=bool)
    if ids.ndim != 1 or special.shape != ids.shape:
        raise ValueError(
            f"input_ids and special_tokens_mask must be 1-D and of equal length, got {ids.shape} and {special.shape}"
        )
    candidates = np.flatnonzero(~special)
    expected = len(candidates) * config.mlm_probability
    count = min(len(candidates), int(np.floor(expected + rng.random())))
    chosen = np.sort(rng.choice(candidates, size=count, replace=False)) if count else np.zeros(0, np.int64)

    # One uniform draw per chosen token decides its fate: [0, 0.8) mask, [0.8, 0.9) random, [0.9, 1) keep.
    fate = rng.random(count)
    to_mask = fate < config.mask_fraction
    to_random = (~to_mask) & (fate < config.mask_fraction + config.random_fraction)

    corrupted = ids.copy()
    labels = np.full_like(ids, IGNORE_INDEX)
    labels[chosen] = ids[chosen]
    actions = np.zeros(len(ids), dtype=np.int8)
    actions[chosen] = MaskAction.KEEP
    actions[chosen[to_mask]] = MaskAction.MASK
    actions[chosen[to_random]] = MaskAction.RANDOM
    corrupted[chosen[to_mask]] = mask_token_id
    replacement_count = int(np.count_nonzero(to_random))
    if replacement_count:
        corrupted[chosen[to_random]] = rng.choice(np.asarray(random_token_ids), size=replacement_count)
    return MaskedSequence(corrupted, labels, actions)


class StaticMasker:
    """BERT's original *static* masking: each sequence's corruptions are fixed before training.

    The reference implementation wrote `dupe_factor` differently-masked copies of the data set to disk, so
    over many epochs the model sees the same few corruptions of each sentence again and again. Here a copy
    is not stored but re-derived: copy c of sequence `key` is always drawn from a generator seeded with
    (seed, key, c), so it is the same every time it is asked for and does not depend on the order in which
    sequences are visited. The `visit`-th use of a sequence gets copy `visit % duplicates`.

    *Dynamic* masking (RoBERTa) is simply a fresh `mask_tokens` call with the running generator every time a
    sequence is used.
    """

    def __init__(self, seed: int, duplicates: int = 10) -> None:
        if duplicates < 1:
            raise ValueError(f"duplicates must be at least 1, got {duplicates}")
        self.seed = seed
        self.duplicates = duplicates

    def generator(self, key: int, visit: int) -> np.random.Generator:
        """The generator behind copy `visit % duplicates` of sequence `key` (also usable to build the pair)."""
        return np.random.default_rng([self.seed, key, visit % self.duplicates])

    def __call__(
        self,
        key: int,
        visit: int,
        input_ids: Sequence[int] | np.ndarray,
        special_tokens_mask: Sequence[bool] | np.ndarray,
        *,
        mask_token_id: int,
        random_token_ids: np.ndarray,
        config: MaskingConfig | None = None,
    ) -> MaskedSequence:
        """The static masking of sequence `key` for its `visit`-th use."""
        return mask_tokens(
            input_ids,
            special_tokens_mask,
            mask_token_id=mask_token_id,
            random_token_ids=random_token_ids,
            rng=self.generator(key, visit),
            config=config,
        )
