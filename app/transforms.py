"""Pure numpy for the views: word groups, merged sub-words, token subsets of an `Analysis`, the numbers the
charts draw (cosine similarities, PCA, pooled attention maps) and their tables for the CSV downloads. No
Streamlit and no plotly here.

Dimensions: S = tokens, W = words (groups of pieces), L = layers, N = heads, P = points, H = hidden size.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

import bert_core
from bert_core.interpret import cosine_matrix  # noqa: F401 - the pages read it here
from bert_core.pieces import PieceStyle
from bert_core.words import (  # noqa: F401 - and these
    clean_target,
    target_occurrences,
    typed_specials,
    word_keys,
    word_text_spans,
)


def word_groups(analysis: bert_core.Analysis) -> list[list[int]]:
    """Token indices grouped into words (`word_keys`); special tokens ([CLS], [SEP]) are groups of their own."""
    groups: list[list[int]] = []
    previous = None
    for i, key in enumerate(word_keys(analysis)):
        if key is not None and key == previous:
            groups[-1].append(i)
        else:
            groups.append([i])
        previous = key
    return groups


def group_label(tokens: Sequence[str], group: Sequence[int], style: PieceStyle) -> str:
    """The word a group of pieces spells, without `style`'s markers: 'play', '##ing' -> 'playing'. A group
    that spells nothing visible (RoBERTa's lone "Ġ" before a mask, a space of its own) is drawn as its pieces
    are ('␣'), not as a blank label."""
    word = style.word([tokens[i] for i in group])
    return word if word.strip() else "".join(style.display(tokens[i]) for i in group)


def merge_words(attention: np.ndarray, groups: Sequence[Sequence[int]]) -> np.ndarray:
    """(..., S, S) attention -> (..., W, W): a word attends with the mean of its pieces' rows, and receives
    the sum of the attention paid to its pieces (so merged rows still sum to 1)."""
    a = np.asarray(attention, dtype=np.float32)
    cols = np.stack([a[..., list(g)].sum(axis=-1) for g in groups], axis=-1)  # (..., S, W)
    return np.stack([cols[..., list(g), :].mean(axis=-2) for g in groups], axis=-2)  # (..., W, W)


def sentence_text(analysis: bert_core.Analysis, sentence: int) -> str:
    return analysis.text if sentence == 0 else (analysis.text_pair or "")


def glued_masks(text: str | None, mask: str, own_word: Callable[[str], bool] = lambda c: False) -> list[str]:
    """Each `mask` typed against a letter or digit ("un[MASK]able"), with the word it is glued into: the
    tokenizer splits the word at the mask, so the model reads "un" and "able" as words of their own.
    `own_word(c)`: the tokenizer reads character `c` as a word by itself whatever is beside it (BERT's CJK
    characters), so a mask beside it splits nothing: "东京[MASK]了" was said to split a word."""

    def glued(c: str) -> bool:
        return c.isalnum() and not own_word(c)

    found = []
    for m in re.finditer(re.escape(mask), text or ""):
        start, end = m.start(), m.end()
        if (start and glued(text[start - 1])) or (end < len(text) and glued(text[end])):
            while start and not text[start - 1].isspace():
                start -= 1
            while end < len(text) and not text[end].isspace():
                end += 1
            found.append(text[start:end])
    return found


def fill_mask_text(
    texts: tuple[str, str | None],
    enc: bert_core.Encoding,
    position: int,
    token: str,
    style: PieceStyle,
    *,
    limit: int = 400,
) -> str:
    """The typed sentence (A or B) holding the [MASK] at piece `position`, with that mask replaced by `token`
    without `style`'s marker (a continuation piece joins the word before it); other masks stay as typed.

    Of a text the model cut, only what it read, then "…": a pasted paragraph's guess ran on past the cut to a
    [MASK] the page had just said the model never sees. Past `limit` characters, the part around the guess
    (`excerpt`), as the page's own "Masked:" line: 800 characters printed under a third-of-a-page chart."""
    seq = enc.sequence_ids[position]
    if seq is None:
        return ""
    text = texts[seq] or ""
    start, end = (int(x) for x in enc.offsets[position])
    before = text[:start].rstrip() if style.is_continuation(token) else text[:start]
    previous = enc.tokens[position - 1] if position and enc.sequence_ids[position - 1] == seq else ""
    if style.word_start_marker and previous == style.word_start_marker:
        # The space before the mask is a piece of its own (a RoBERTa whose <mask> keeps the space before it,
        # lstrip off): a continuation guess follows that space, not the word before ("theal" for "the al"),
        # and a word-start guess brings a space of its own besides, as the model reads it
        before = text[:start] + ("" if style.is_continuation(token) else " ")
    cut = read_end(enc, seq)
    filled = before + style.strip(token)
    rest = text[end:] if cut is None else text[end:cut] + " …"
    whole = filled + rest
    return whole if len(whole) <= limit else excerpt(whole, [(len(before), len(filled))])


# -- numbers for the charts -------------------------------------------------------------------------------


def _rank_tolerance(singular: np.ndarray, shape: tuple[int, ...]) -> float:
    """Singular values at or below this are rounding, not variance (numpy.linalg.matrix_rank's default)."""
    return float(singular.max(initial=0.0)) * max(shape) * np.finfo(np.float64).eps


def same_rows(vectors: np.ndarray) -> list[list[int]]:
    """Groups (two or more, in order) of rows of vectors (K, H) that are one vector, to float32's precision:
    drawn as points, each group is one point."""
    v = np.asarray(vectors, dtype=np.float64)
    scale = np.maximum(np.linalg.norm(v, axis=1), 1e-12)
    groups: list[list[int]] = []
    placed: set[int] = set()
    for i in range(len(v)):
        if i in placed:
            continue
        group = [i] + [
            j for j in range(i + 1, len(v)) if np.linalg.norm(v[i] - v[j]) <= 1e-6 * max(scale[i], scale[j])
        ]
        if len(group) > 1:
            groups.append(group)
            placed.update(group)
    return groups


def pca_2d(vectors: np.ndarray) -> np.ndarray:
    """(P, H) -> (P, 2) projection on the first two principal components (zeros where undefined)."""
    v = np.asarray(vectors, dtype=np.float64)
    if v.shape[0] == 0:
        return np.zeros((0, 2), dtype=np.float32)
    centered = v - v.mean(axis=0, keepdims=True)
    if v.shape[0] < 2 or not np.any(centered):
        return np.zeros((v.shape[0], 2), dtype=np.float32)
    _, sv, vt = np.linalg.svd(centered, full_matrices=False)
    comps = vt[:2]
    out = centered @ comps.T
    # A component past the points' rank (two points span a line) carries rounding noise alone, ~1e-16, which
    # plotly would stretch over the whole axis as if the points spread along it: it is zero instead.
    out[:, sv[: out.shape[1]] <= _rank_tolerance(sv, centered.shape)] = 0.0
    if out.shape[1] < 2:
        out = np.pad(out, ((0, 0), (0, 2 - out.shape[1])))
    # Fix each component's sign (largest |loading| positive) so the plot doesn't flip between layers.
    signs = np.sign(comps[np.arange(comps.shape[0]), np.argmax(np.abs(comps), axis=1)])
    signs[signs == 0] = 1
    out[:, : comps.shape[0]] *= signs
    return out.astype(np.float32)


def pca_variance_share(vectors: np.ndarray) -> np.ndarray:
    """(P, H) -> (2,): the fraction of the total variance the first two principal components hold (0 where
    there is none), so a reader knows how much of the picture a 2-D projection shows."""
    v = np.asarray(vectors, dtype=np.float64)
    out = np.zeros(2)
    if v.shape[0] < 2:
        return out
    centered = v - v.mean(axis=0, keepdims=True)
    s = np.linalg.svd(centered, compute_uv=False)
    s = np.where(s <= _rank_tolerance(s, centered.shape), 0.0, s)
    total = float((s**2).sum())
    if total > 0:
        share = s[:2] ** 2 / total
        out[: len(share)] = share
    return out


def block_mean(matrix: np.ndarray, side: int) -> np.ndarray:
    """Average-pool a (..., R, C) array down to (..., min(R, side), min(C, side)) in near-equal blocks."""
    m = np.asarray(matrix, dtype=np.float32)

    def pool(a: np.ndarray, axis: int) -> np.ndarray:
        n = a.shape[axis]
        if n <= side:
            return a
        edges = np.linspace(0, n, side + 1).round().astype(int)
        counts = np.diff(edges).astype(np.float32)
        shape = [1] * a.ndim
        shape[axis] = side
        return np.add.reduceat(a, edges[:-1], axis=axis) / counts.reshape(shape)

    return pool(pool(m, -1), -2)


def grid_table(
    values: np.ndarray, axes: Sequence[Sequence[tuple[str, Sequence]]], value_name: str
) -> pd.DataFrame:
    """One row per cell of an N-d array, in C order: for each axis the columns that name a position on it
    ((column, one label per position) pairs, e.g. [("from_index", [0, 2]), ("from", ["the", "cat"])]), then
    the cell's value in column `value_name`."""
    values = np.asarray(values)
    if len(axes) != values.ndim:
        raise ValueError(f"{values.ndim} axes to name, got {len(axes)}")
    grid = np.meshgrid(*(np.arange(n) for n in values.shape), indexing="ij")
    columns = {}
    for index, named in zip(grid, axes, strict=True):
        for column, position_labels in named:
            labels = np.asarray(position_labels)
            if labels.dtype.kind == "U":  # one pointer per cell, not the longest label's width in every cell
                labels = labels.astype(object)
            columns[column] = labels[index.ravel()]
    columns[value_name] = values.ravel()
    return pd.DataFrame(columns)


def labelled_table(
    matrix: np.ndarray, columns: Sequence[str], label: str, labels: Sequence, *, label_first: bool = False
) -> pd.DataFrame:
    """A (R, C) matrix as a table: a column per matrix column, named by `columns`, and one `label` column
    naming each row (first or last)."""
    frame = pd.DataFrame(np.asarray(matrix), columns=list(columns))
    frame.insert(0 if label_first else frame.shape[1], label, list(labels))
    return frame


def replace_word(text: str, spans: Sequence[tuple[int, int, int]], word: int, replacement: str) -> str:
    """`text` with word `word` (an id from `word_text_spans`) replaced by `replacement`, everything else as
    typed: for the Replaced tokens helper, which swaps one word so the discriminator can catch it."""
    for w, start, end in spans:
        if w == word:
            return text[:start] + replacement + text[end:]
    raise ValueError(f"no word {word} in the text")


WORD_SLACK = 15  # characters `excerpt` goes on past its window to end on a space


def excerpt(text: str, spans: Sequence[tuple[int, int]], around: int = 60) -> str:
    """`text` cut to the parts within `around` characters of the (start, end) spans, "…" where it was cut:
    for a line that shows where the masks went in a text too long to print whole."""
    windows: list[list[int]] = []
    for start, end in sorted(spans):
        lo, hi = max(0, start - around), min(len(text), end + around)
        # widened to whole words ("… e day raining" began inside one), by a few characters at most: a text
        # without spaces (Chinese, a URL) is cut where it falls
        for _ in range(WORD_SLACK):
            if 0 < lo and not text[lo - 1].isspace():
                lo -= 1
            if hi < len(text) and not text[hi].isspace():
                hi += 1
        # "…" only where words were left out: not for the space between two windows, nor a trailing newline
        if windows and not text[windows[-1][1] : lo].strip():
            windows[-1][1] = max(windows[-1][1], hi)
        else:
            windows.append([lo, hi])
    if not windows:
        return text
    parts = [text[lo:hi].strip() for lo, hi in windows]
    before = "… " if text[: windows[0][0]].strip() else ""
    after = " …" if text[windows[-1][1] :].strip() else ""
    return before + " … ".join(parts) + after


def pieces_in_span(encoding, start: int, end: int, sentence: int = 0) -> list[int]:
    """Token indices of `sentence` whose characters overlap [start, end) of its typed text: the pieces of a
    word, found by offsets so it works for an edited text whose word ids moved."""
    return [
        i
        for i, (seq, (a, b)) in enumerate(zip(encoding.sequence_ids, encoding.offsets.tolist(), strict=True))
        if seq == sentence and a < end and b > start
    ]


def labelled_fragments(text: str, spans: Sequence[tuple[int, int, str]]) -> list[tuple[str, str | None]]:
    """`text` cut into (fragment, label or None) pieces in order, labelled where a (start, end, label) span
    covers it (spans sorted and not overlapping, as entities and an answer are)."""
    out: list[tuple[str, str | None]] = []
    at = 0
    for start, end, kind in sorted(spans):
        if start > at:
            out.append((text[at:start], None))
        out.append((text[start:end], kind))
        at = max(at, end)
    if at < len(text):
        out.append((text[at:], None))
    return [(t, k) for t, k in out if t.strip()]


def pieces_cut(encoding) -> tuple[int, int]:
    """How many pieces of sentence A and of sentence B the model's length cut off an Encoding (or Analysis)."""
    return tuple(  # type: ignore[return-value]
        full - sum(1 for s in encoding.sequence_ids if s == n)
        for n, full in enumerate(encoding.pieces_before_truncation)
    )


def read_end(encoding, sentence: int) -> int | None:
    """Where the model stopped reading sentence `sentence` (0 = A, 1 = B) of `encoding`: the end of its last
    piece read, in characters of what was typed; None where the sentence lost none of its pieces (characters
    the tokenizer drops, a trailing zero-width space say, are no cut)."""
    kept = sum(1 for s in encoding.sequence_ids if s == sentence)
    if not encoding.truncated or kept >= encoding.pieces_before_truncation[sentence]:
        return None
    ends = (
        int(end) for (_, end), s in zip(encoding.offsets, encoding.sequence_ids, strict=True) if s == sentence
    )
    return max(ends, default=0)


def read_part(encoding, text: str, sentence: int) -> str:
    """What the model read of `text`, sentence `sentence` of `encoding`: all of it, or where the encoding cut
    it, up to its last piece read and "…"."""
    end = read_end(encoding, sentence)
    return text if end is None else text[:end].rstrip() + " …"


def pair_template(encoding, names: tuple[str, str] = ("A", "B")) -> str:
    """How the model's tokenizer lays out a pair, e.g. '[CLS] A [SEP] B [SEP]' or RoBERTa's
    '<s> A </s> </s> B </s>': `encoding` is any pair's Encoding; its special tokens are kept and each sentence's
    pieces are written as its name."""
    parts: list[str] = []
    for token, special, seq in zip(
        encoding.tokens, encoding.special_tokens_mask.tolist(), encoding.sequence_ids, strict=True
    ):
        part = token if special or seq is None else names[seq]
        if special or not parts or parts[-1] != part:
            parts.append(part)
    return " ".join(parts)
