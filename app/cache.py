"""Process-wide caches of what the model computed: analyses, mask predictions, NSP, many-line vectors.

Results are cached by (model key, text, pair) and shared by every session, so they are frozen; each one
actually computed adds one to the session's forward-pass counter, which the tests read to check that a
rerun over the same text runs nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import streamlit as st

import bert_core
from app.models import ActiveModel

MAX_TOP_K = 30  # masked words are predicted once with this many guesses; the page slices what it shows
ANALYSIS_CACHE_ENTRIES = 8  # analyses cached per process (a 512-token bert-base analysis is ~170 MB)
BATCH_TOKEN_BUDGET = 2048  # padded tokens (texts × longest) per forward pass on the many-sentence pages
FORWARD_PASSES = "forward_passes"  # session-state counter of analyses actually computed (tests read it)


def _freeze(analysis: bert_core.Analysis) -> bert_core.Analysis:
    """Analyses are shared by all sessions (cache_resource): make in-place edits fail loudly."""
    arrays = [
        analysis.input_ids,
        analysis.token_type_ids,
        analysis.position_ids,
        analysis.offsets,
        analysis.special_tokens_mask,
        analysis.attentions,
        analysis.hidden_states,
        analysis.embeddings.word,
        analysis.embeddings.segment,
        analysis.embeddings.position,
        analysis.embeddings.summed,
        analysis.embeddings.normalized,
    ]
    if analysis.pooled is not None:
        arrays.append(analysis.pooled)
    for array in arrays:
        if isinstance(array, np.ndarray):
            array.flags.writeable = False
    return analysis


def _count_forward_pass() -> None:
    st.session_state[FORWARD_PASSES] = st.session_state.get(FORWARD_PASSES, 0) + 1


# cache_resource rather than cache_data: a 512-token analysis of bert-base holds ~170 MB of attention and
# hidden states, and cache_data would unpickle a fresh copy on every rerun. The result is frozen above.
@st.cache_resource(max_entries=ANALYSIS_CACHE_ENTRIES, ttl=3600, show_spinner=False)
def _analysis(key: str, text: str, pair: str | None, _model: bert_core.BertScopeModel) -> bert_core.Analysis:
    _count_forward_pass()
    return _freeze(_model.analyze(text, pair))


@st.cache_data(max_entries=64, show_spinner=False)
def _masks(
    key: str, text: str, pair: str | None, _model: bert_core.BertScopeModel
) -> list[bert_core.MaskPrediction]:
    _count_forward_pass()
    return _model.predict_masks(text, pair, top_k=MAX_TOP_K)


@st.cache_data(max_entries=64, show_spinner=False)
def _nsp(key: str, a: str, b: str, _model: bert_core.BertScopeModel) -> float:
    _count_forward_pass()
    return _model.next_sentence(a, b)


def analyze(active: ActiveModel, text: str, pair: str | None = None) -> bert_core.Analysis:
    """The cached analysis of (model, text, pair); raises bert_core.InputError for unusable text."""
    with st.spinner("Running the model…"):
        return _analysis(active.key, text, pair, active.model)


def predict_masks(
    active: ActiveModel, text: str, pair: str | None, top_k: int
) -> list[bert_core.MaskPrediction]:
    """The `top_k` best guesses per [MASK], sliced from one cached prediction of the top MAX_TOP_K, so a new k
    never reruns the model."""
    with st.spinner("Predicting…"):
        full = _masks(active.key, text, pair, active.model)
    k = max(1, int(top_k))
    return [
        replace(p, tokens=p.tokens[:k], token_ids=p.token_ids[:k], probabilities=p.probabilities[:k])
        for p in full
    ]


def next_sentence(active: ActiveModel, a: str, b: str) -> float:
    """P(IsNext) of the pair; only for a model whose `info.has_nsp_head` (the core raises otherwise)."""
    return _nsp(active.key, a, b, active.model)


@st.cache_data(max_entries=64, show_spinner=False)
def _mlm_scores(
    key: str, ids: tuple[int, ...], types: tuple[int, ...], positions: tuple[int, ...], labels: tuple[int, ...],
    _model: bert_core.BertScopeModel,
) -> bert_core.MlmScores:  # fmt: skip
    _count_forward_pass()
    return _model.predict_at(
        list(ids), list(positions), token_type_ids=list(types), labels=list(labels), top_k=5
    )


def mlm_scores(
    active: ActiveModel, ids: list[int], types: list[int], positions: list[int], labels: list[int]
) -> bert_core.MlmScores:
    """The top 5 MLM guesses and the loss at `positions` of an already corrupted id sequence (Pre-training)."""
    return _mlm_scores(active.key, tuple(ids), tuple(types), tuple(positions), tuple(labels), active.model)


# -- many short texts (Word senses, Sentence vector) ----------------------------------------------------


@dataclass(frozen=True)
class LineVectors:
    """What the many-sentence pages need of one line: its pieces and hidden states, no attention.

    Duck-compatible with `bert_core.Analysis` for `app.transforms` (text, offsets, sequence/word ids).
    """

    text: str
    tokens: list[str]
    offsets: np.ndarray  # (S, 2)
    sequence_ids: list[int | None]
    word_ids: list[int | None]
    special_tokens_mask: np.ndarray  # (S,) bool
    truncated: bool
    num_tokens_before_truncation: int
    hidden_states: np.ndarray  # (L + 1, S, H)
    pooled: np.ndarray | None  # (H,)

    text_pair = None


@dataclass(frozen=True)
class Lines:
    """The usable lines' vectors, and the lines that could not be used (with the reason)."""

    results: list[LineVectors]  # one per usable line, in input order
    used: list[int]  # results[k] is lines[used[k]]
    rejected: list[tuple[int, str]]  # (index into lines, reason)


def _line_vectors(result, text: str) -> LineVectors:
    """Keep only what the pages use of a core result (an Analysis, or a lighter result with the same names)."""
    pooled = getattr(result, "pooled", None)
    out = LineVectors(
        text=text,
        tokens=list(result.tokens),
        offsets=np.asarray(result.offsets),
        sequence_ids=list(result.sequence_ids),
        word_ids=list(result.word_ids),
        special_tokens_mask=np.asarray(result.special_tokens_mask, dtype=bool),
        truncated=bool(result.truncated),
        num_tokens_before_truncation=int(result.num_tokens_before_truncation),
        hidden_states=np.asarray(result.hidden_states),
        pooled=None if pooled is None else np.asarray(pooled),
    )
    for array in (out.offsets, out.special_tokens_mask, out.hidden_states, out.pooled):
        if isinstance(array, np.ndarray):
            array.flags.writeable = False
    return out


def token_chunks(lengths: list[int], budget: int = BATCH_TOKEN_BUDGET) -> list[list[int]]:
    """Indices of `lengths` grouped so that each padded batch (count × longest) stays within `budget` tokens
    (a single text longer than the budget is a batch of its own). Similar lengths are batched together."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    chunks: list[list[int]] = []
    longest = 0
    for i in order:
        if chunks and (len(chunks[-1]) + 1) * max(longest, lengths[i]) <= budget:
            chunks[-1].append(i)
            longest = max(longest, lengths[i])
        else:
            chunks.append([i])
            longest = lengths[i]
    return chunks


@st.cache_resource(max_entries=8, ttl=3600, show_spinner=False)
def _lines(key: str, texts: tuple[str, ...], _model: bert_core.BertScopeModel) -> Lines:
    used: list[int] = []
    lengths: list[int] = []
    rejected: list[tuple[int, str]] = []
    for n, text in enumerate(texts):
        try:
            lengths.append(len(_model.encode(text)))
        except bert_core.InputError as exc:
            rejected.append((n, str(exc)))
        else:
            used.append(n)
    results: list[LineVectors | None] = [None] * len(used)
    # vectors_batch keeps no attention maps: these pages never draw them, and at 512 tokens they dominate memory.
    run = _model.vectors_batch
    for chunk in token_chunks(lengths, BATCH_TOKEN_BUDGET):
        _count_forward_pass()
        batch = run([texts[used[k]] for k in chunk])
        for k, result in zip(chunk, batch, strict=True):
            results[k] = _line_vectors(result, texts[used[k]])
    return Lines([r for r in results if r is not None], used, rejected)


def analyze_lines(active: ActiveModel, texts: list[str]) -> Lines:
    """Hidden states of many short texts, run in padded chunks of at most BATCH_TOKEN_BUDGET tokens so that
    memory stays bounded; lines the tokenizer rejects are listed in `rejected` instead of failing the rest."""
    with st.spinner("Running the model…"):
        return _lines(active.key, tuple(texts), active.model)
