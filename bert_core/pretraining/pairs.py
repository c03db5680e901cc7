"""Sentence-pair objectives, in numpy only: BERT's next sentence prediction and ALBERT's sentence order.

NSP (BERT): segment A is a stretch of a document; half the time segment B is what really follows
(IsNext, label 0), half the time it is taken from another document (NotNext, label 1). The model can often
tell the two apart by topic alone, which is what ALBERT criticised.

SOP (ALBERT): A and B are always two consecutive stretches of the same document; half the time they are
swapped (label 1). Topic gives nothing away, only order and coherence do.

Labels follow BERT's convention, which is also the index order of the `cls.seq_relationship` head:
0 = IsNext / in order, 1 = NotNext / swapped. A "sentence" here is any sequence (token ids or strings), so
the same code builds the app's worked example from text and the trainer's pairs from ids.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np

T = TypeVar("T")

IS_NEXT = 0
NOT_NEXT = 1
IN_ORDER = 0
SWAPPED = 1


@dataclass(frozen=True)
class SentencePair(Generic[T]):
    """Two segments and the label of the pair objective that built them."""

    a: list[T]  # the sentences of segment A, in order
    b: list[T]  # the sentences of segment B
    label: int  # NSP: 0 IsNext / 1 NotNext; SOP: 0 in order / 1 swapped


def _check_documents(documents: Sequence[Sequence[T]]) -> None:
    if not documents or not any(len(d) for d in documents):
        raise ValueError("no documents: the corpus must hold at least one non-empty document")


def split_point(length: int, rng: np.random.Generator, max_segment: int) -> tuple[int, int]:
    """Sizes (a, b) of two adjacent segments, each 1..max_segment sentences, fitting in `length` sentences."""
    a = int(rng.integers(1, min(max_segment, length - 1) + 1))
    b = int(rng.integers(1, min(max_segment, length - a) + 1))
    return a, b


def _other_document(documents: Sequence[Sequence[T]], doc_index: int, rng: np.random.Generator) -> int:
    """A uniformly random non-empty document other than `doc_index` (rejection sampling: O(1) per draw
    when, as in any real corpus, most documents are non-empty)."""
    if len(documents) > 1:
        for _ in range(64):
            other = int(rng.integers(len(documents) - 1))
            other += other >= doc_index  # skip over doc_index without biasing the draw
            if len(documents[other]):
                return other
    others = [i for i, d in enumerate(documents) if i != doc_index and len(d)]
    if not others:
        raise ValueError("NotNext examples need at least two non-empty documents")
    return others[int(rng.integers(len(others)))]


def nsp_pair(
    documents: Sequence[Sequence[T]],
    doc_index: int,
    start: int,
    rng: np.random.Generator,
    *,
    max_segment: int = 1,
    random_next_probability: float = 0.5,
) -> SentencePair[T]:
    """Build one NSP example whose segment A starts at sentence `start` of document `doc_index`.

    With probability `random_next_probability` (0.5 in BERT) segment B comes from a different, randomly
    chosen document (NotNext); otherwise B is the text that follows A (IsNext). A and B hold 1..max_segment
    sentences each. The document needs at least two sentences from `start` on; a NotNext example needs a
    second non-empty document.
    """
    _check_documents(documents)
    doc = documents[doc_index]
    if not 0 <= start < len(doc) - 1:
        raise ValueError(
            f"an NSP example needs a sentence after A: start {start} in a document of {len(doc)} sentences"
        )
    a_len, b_len = split_point(len(doc) - start, rng, max_segment)
    a = list(doc[start : start + a_len])
    if rng.random() < random_next_probability:
        other = documents[_other_document(documents, doc_index, rng)]
        other_start = int(rng.integers(len(other)))
        b = list(other[other_start : other_start + b_len])
        return SentencePair(a, b, NOT_NEXT)
    b = list(doc[start + a_len : start + a_len + b_len])
    return SentencePair(a, b, IS_NEXT)


def sop_pair(
    documents: Sequence[Sequence[T]],
    doc_index: int,
    start: int,
    rng: np.random.Generator,
    *,
    max_segment: int = 1,
    swap_probability: float = 0.5,
) -> SentencePair[T]:
    """Build one SOP example: two consecutive segments of one document, swapped with probability 0.5."""
    _check_documents(documents)
    doc = documents[doc_index]
    if not 0 <= start < len(doc) - 1:
        raise ValueError(
            f"an SOP example needs two segments: start {start} in a document of {len(doc)} sentences"
        )
    a_len, b_len = split_point(len(doc) - start, rng, max_segment)
    first = list(doc[start : start + a_len])
    second = list(doc[start + a_len : start + a_len + b_len])
    if rng.random() < swap_probability:
        return SentencePair(second, first, SWAPPED)
    return SentencePair(first, second, IN_ORDER)


def pair_from_two(text_a: T, text_b: T, rng: np.random.Generator, *, task: str = "sop") -> SentencePair[T]:
    """The app's worked example from the user's two sentences.

    "sop": the two sentences in order or swapped (50/50). "nsp" cannot invent a NotNext partner from two
    sentences alone, so it returns the true pair (IsNext); callers pair A with another text for NotNext.
    """
    if task == "sop":
        if rng.random() < 0.5:
            return SentencePair([text_b], [text_a], SWAPPED)
        return SentencePair([text_a], [text_b], IN_ORDER)
    if task == "nsp":
        return SentencePair([text_a], [text_b], IS_NEXT)
    raise ValueError(f"task must be 'nsp' or 'sop', got {task!r}")


def pair_starts(documents: Sequence[Sequence[object]]) -> np.ndarray:
    """(M, 2) every (document, sentence) at which a pair can start: any sentence that has a successor."""
    starts = [(d, s) for d, doc in enumerate(documents) for s in range(len(doc) - 1)]
    if not starts:
        raise ValueError(
            "no document has two sentences: pair objectives need documents of 2+ sentences; or train the MLM "
            "alone with 'pair_task' = 'none'"
        )
    return np.asarray(starts, dtype=np.int64)


def truncate_pair(a: list[int], b: list[int], max_tokens: int, rng: np.random.Generator) -> None:
    """Trim the longer of two id lists, in place, until they fit in `max_tokens` together.

    As in BERT's reference code, a token is taken from the front or the back at random, so the model does
    not learn that text always ends exactly at a sentence boundary.
    """
    if max_tokens < 2:
        raise ValueError(f"max_tokens must be at least 2, got {max_tokens}")
    while len(a) + len(b) > max_tokens:
        longer = a if len(a) >= len(b) else b
        if rng.random() < 0.5:
            del longer[0]
        else:
            longer.pop()
