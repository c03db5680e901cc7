"""Pure numpy views of an `Analysis`: word groups, merged sub-words, token subsets. No Streamlit here.

Dimensions: S = tokens, W = words (groups of pieces), L = layers, N = heads.
"""

from __future__ import annotations

import unicodedata
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


def target_occurrences(analysis, target: str, normalize, text: str | None = None) -> list[list[int]]:
    """Token indices of every word of sentence A whose normalised text equals `normalize(target)`, in order.

    `analysis` is anything with `sequence_ids`, `word_ids` and `offsets` (an Analysis or an Encoding); `text`
    is sentence A as typed (default `analysis.text`). Whole words only: 'banks' is not 'bank'.
    """
    text = analysis.text if text is None else text
    want = normalize(target).strip()
    found = []
    for word, start, end in word_text_spans(analysis, 0):
        if normalize(text[start:end]).strip() == want:
            found.append(
                [
                    i
                    for i, (seq, w) in enumerate(zip(analysis.sequence_ids, analysis.word_ids, strict=True))
                    if seq == 0 and w == word
                ]
            )
    return found


def token_word_indices(analysis: bert_core.Analysis, target: str, normalize) -> list[int]:
    """Token indices of the first word in sentence A whose normalised text equals `normalize(target)`."""
    found = target_occurrences(analysis, target, normalize)
    return found[0] if found else []


def clean_target(raw: str) -> str:
    """A typed target word without the spaces and punctuation around it: ' bank. ' -> 'bank'.

    Punctuation inside the word stays ("can't"); the tokenizer decides whether that is still one word.
    """
    chars = list(raw.strip())
    while chars and (chars[0].isspace() or unicodedata.category(chars[0]).startswith("P")):
        chars.pop(0)
    while chars and (chars[-1].isspace() or unicodedata.category(chars[-1]).startswith("P")):
        chars.pop()
    return "".join(chars)


def fill_mask_text(texts: tuple[str, str | None], enc: bert_core.Encoding, position: int, token: str) -> str:
    """The typed sentence (A or B) holding the [MASK] at piece `position`, with that mask replaced by `token`
    (a "##" continuation joins the word before it); other masks stay as typed."""
    seq = enc.sequence_ids[position]
    if seq is None:
        return ""
    text = texts[seq] or ""
    start, end = (int(x) for x in enc.offsets[position])
    if token.startswith("##"):
        return text[:start].rstrip() + token[2:] + text[end:]
    return text[:start] + token + text[end:]
