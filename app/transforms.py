"""Pure numpy views of an `Analysis`: word groups, merged sub-words, token subsets. No Streamlit here.

Dimensions: S = tokens, W = words (groups of pieces), L = layers, N = heads.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

import bert_core


def word_groups(analysis: bert_core.Analysis) -> list[list[int]]:
    """Token indices grouped into words: consecutive pieces with the same (sentence, word id).

    Special tokens ([CLS], [SEP]) are groups of their own.
    """
    groups: list[list[int]] = []
    previous = None
    for i, (seq, word) in enumerate(zip(analysis.sequence_ids, analysis.word_ids, strict=True)):
        key = None if seq is None or word is None else (seq, word)
        if key is not None and key == previous:
            groups[-1].append(i)
        else:
            groups.append([i])
        previous = key
    return groups


def group_label(tokens: Sequence[str], group: Sequence[int]) -> str:
    """'play', '##ing' -> 'playing'."""
    parts = [tokens[i] for i in group]
    return parts[0] + "".join(p[2:] if p.startswith("##") else p for p in parts[1:])


def merge_words(attention: np.ndarray, groups: Sequence[Sequence[int]]) -> np.ndarray:
    """(..., S, S) attention -> (..., W, W): a word attends with the mean of its pieces' rows, and receives
    the sum of the attention paid to its pieces (so merged rows still sum to 1)."""
    a = np.asarray(attention, dtype=np.float32)
    cols = np.stack([a[..., list(g)].sum(axis=-1) for g in groups], axis=-1)  # (..., S, W)
    return np.stack([cols[..., list(g), :].mean(axis=-2) for g in groups], axis=-2)  # (..., W, W)


def word_text_spans(analysis: bert_core.Analysis, sentence: int = 0) -> list[tuple[int, int, int]]:
    """(word id, start, end) character spans of each word of one sentence, in the typed text."""
    spans: dict[int, list[int]] = {}
    for seq, word, (start, end) in zip(
        analysis.sequence_ids, analysis.word_ids, analysis.offsets.tolist(), strict=True
    ):
        if seq != sentence or word is None:
            continue
        span = spans.setdefault(word, [start, end])
        span[0] = min(span[0], start)
        span[1] = max(span[1], end)
    return [(w, s, e) for w, (s, e) in sorted(spans.items())]


def sentence_text(analysis: bert_core.Analysis, sentence: int) -> str:
    return analysis.text if sentence == 0 else (analysis.text_pair or "")


def token_word_indices(analysis: bert_core.Analysis, target: str, normalize) -> list[int]:
    """Token indices of the first word in sentence A whose normalised text equals `normalize(target)`."""
    want = normalize(target).strip()
    for word, start, end in word_text_spans(analysis, 0):
        if normalize(analysis.text[start:end]).strip() == want:
            return [
                i
                for i, (seq, w) in enumerate(zip(analysis.sequence_ids, analysis.word_ids, strict=True))
                if seq == 0 and w == word
            ]
    return []
