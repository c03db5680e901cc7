"""Process-wide caches of what the model computed: analyses, mask predictions, NSP, many-line vectors.

Results are cached by (model key, text, pair) and shared by every session, so they are frozen. Each call that
misses its cache adds one to the session's forward-pass counter (a list of lines counts once, however many
padded batches the core runs it in), which the tests read to check that a rerun over the same text runs
nothing.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, replace

import numpy as np
import streamlit as st

import bert_core
from app import server
from app.models import ActiveModel

MAX_TOP_K = 30  # masked words are predicted once with this many guesses; the page slices what it shows
BATCH_TOKEN_BUDGET = 2048  # padded tokens (texts × longest) per forward pass on the many-sentence pages
FORWARD_PASSES = "forward_passes"  # session-state count of model calls that missed the cache (tests read it)


def _freeze(result):
    """Results are shared by all sessions (cache_resource): make in-place edits of their arrays fail loudly.
    Walks the result's dataclass fields, so an Analysis, Vectors or a field added to either is covered."""
    for f in dataclasses.fields(result):
        value = getattr(result, f.name)
        if isinstance(value, np.ndarray):
            value.flags.writeable = False
        elif dataclasses.is_dataclass(value):
            _freeze(value)
    return result


def _count_forward_pass() -> None:
    st.session_state[FORWARD_PASSES] = st.session_state.get(FORWARD_PASSES, 0) + 1


@st.cache_data(max_entries=64, show_spinner=False)
def _masks(
    key: str, text: str, pair: str | None, _model: bert_core.BertScopeModel
) -> list[bert_core.MaskPrediction]:
    _count_forward_pass()
    with server.admission().slot():
        return _model.predict_masks(text, pair, top_k=MAX_TOP_K)


@st.cache_data(max_entries=64, show_spinner=False)
def _nsp(key: str, a: str, b: str, _model: bert_core.BertScopeModel) -> float:
    _count_forward_pass()
    with server.admission().slot():
        return _model.next_sentence(a, b)


def analyze(active: ActiveModel, text: str, pair: str | None = None) -> bert_core.Analysis:
    """The cached analysis of (model, text, pair); raises bert_core.InputError for unusable text.

    Held in the server's byte-budgeted store (app/server.py) rather than cache_resource's entry count: a
    512-token bert-base analysis holds ~170 MB and an 8-token one ~1 MB. Frozen, since every session shares it.
    """

    def compute() -> bert_core.Analysis:
        _count_forward_pass()
        with server.admission().slot():
            return _freeze(active.model.analyze(text, pair))

    with st.spinner(server.waiting_message("Running the model…")):
        return server.analyses().get((active.key, text, pair), compute)


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


@st.cache_data(max_entries=64, show_spinner=False)
def _sop(key: str, a: str, b: str, _model: bert_core.BertScopeModel) -> float:
    _count_forward_pass()
    with server.admission().slot():
        return _model.sentence_order(a, b)


def sentence_order(active: ActiveModel, a: str, b: str) -> float:
    """P(A then B is the original order); only for a model whose `info.heads` has "sop"."""
    return _sop(active.key, a, b, active.model)


@st.cache_data(max_entries=64, show_spinner=False)
def _replaced(
    key: str, text: str, pair: str | None, _model: bert_core.BertScopeModel
) -> list[tuple[str, float]]:
    _count_forward_pass()
    with server.admission().slot():
        return _model.replaced_tokens(text, pair)


def replaced_tokens(active: ActiveModel, text: str, pair: str | None = None) -> list[tuple[str, float]]:
    """[(token, P(replaced))] per token; only for an ELECTRA discriminator (`info.heads` has "rtd")."""
    with st.spinner("Running the discriminator…"):
        return _replaced(active.key, text, pair, active.model)


def next_sentence(active: ActiveModel, a: str, b: str) -> float:
    """P(IsNext) of the pair; only for a model whose `info.has_nsp_head` (the core raises otherwise)."""
    return _nsp(active.key, a, b, active.model)


@st.cache_data(max_entries=64, show_spinner=False)
def _mlm_scores(
    key: str, ids: tuple[int, ...], types: tuple[int, ...], positions: tuple[int, ...], labels: tuple[int, ...],
    _model: bert_core.BertScopeModel,
) -> bert_core.MlmScores:  # fmt: skip
    _count_forward_pass()
    with server.admission().slot():
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
class Lines:
    """The usable lines' vectors, and the lines that could not be used (with the reason)."""

    results: list[bert_core.Vectors]  # one per usable line, in input order
    used: list[int]  # results[k] is lines[used[k]]
    rejected: list[tuple[int, str]]  # (index into lines, reason)


@st.cache_resource(max_entries=8, ttl=3600, show_spinner=False)
def _lines(key: str, texts: tuple[str, ...], _model: bert_core.BertScopeModel) -> Lines:
    used: list[int] = []
    rejected: list[tuple[int, str]] = []
    # Encoded up front so that an unusable line is left out and named; vectors_batch stops at the first one.
    for n, text in enumerate(texts):
        try:
            _model.encode(text)
        except bert_core.InputError as exc:
            rejected.append((n, str(exc)))
        else:
            used.append(n)
    if not used:
        return Lines([], used, rejected)
    _count_forward_pass()
    # vectors_batch keeps no attention maps (these pages never draw them, and at 512 tokens they dominate
    # memory) and runs the lines in padded batches within the token budget, so memory stays bounded.
    with server.admission().slot():
        results = _model.vectors_batch([texts[n] for n in used], max_batch_tokens=BATCH_TOKEN_BUDGET)
    return Lines([_freeze(r) for r in results], used, rejected)


def analyze_lines(active: ActiveModel, texts: list[str]) -> Lines:
    """Hidden states of many short texts, run in padded chunks of at most BATCH_TOKEN_BUDGET tokens so that
    memory stays bounded; lines the tokenizer rejects are listed in `rejected` instead of failing the rest."""
    with st.spinner("Running the model…"):
        return _lines(active.key, tuple(texts), active.model)


# -- passes of their own (Inside the model): each cached per input, since each is several forwards ------------


@st.cache_data(max_entries=16, show_spinner=False)
def _details(key: str, text: str, pair: str | None, layer: int, _model: bert_core.BertScopeModel):
    _count_forward_pass()
    with server.admission().slot():
        return _model.attention_details(text, pair, layer=layer)


def attention_details(
    active: ActiveModel, text: str, pair: str | None, layer: int
) -> bert_core.AttentionDetails:
    """One layer's queries, keys, values and raw scores (0-based `layer`), computed for that layer only."""
    with st.spinner("Taking the layer apart…"):
        return _details(active.key, text, pair, layer, active.model)


@st.cache_data(max_entries=8, show_spinner=False)
def _value_weighted(key: str, text: str, pair: str | None, _model: bert_core.BertScopeModel):
    _count_forward_pass()
    with server.admission().slot():
        return _model.value_weighted_attention(text, pair)


def value_weighted(active: ActiveModel, text: str, pair: str | None) -> bert_core.ValueWeightedAttention:
    with st.spinner("Weighing the values…"):
        return _value_weighted(active.key, text, pair, active.model)


@st.cache_data(max_entries=16, show_spinner=False)
def _logit_lens(
    key: str, text: str, pair: str | None, position: int | None, _model: bert_core.BertScopeModel
):
    _count_forward_pass()
    with server.admission().slot():
        return _model.logit_lens(text, position, top_k=5, text_pair=pair)


def logit_lens(active: ActiveModel, text: str, pair: str | None, position: int | None) -> bert_core.LogitLens:
    return _logit_lens(active.key, text, pair, position, active.model)


@st.cache_data(max_entries=16, show_spinner=False)
def _pll(key: str, text: str, _model: bert_core.BertScopeModel):
    _count_forward_pass()
    with server.admission().slot():
        return _model.pseudo_log_likelihood(text)


def pseudo_log_likelihood(active: ActiveModel, text: str) -> bert_core.PseudoLogLikelihood:
    with st.spinner("Masking each piece in turn…"):
        return _pll(active.key, text, active.model)


@st.cache_data(max_entries=8, show_spinner=False)
def _importance(key: str, text: str, pair: str | None, _model: bert_core.BertScopeModel):
    _count_forward_pass()
    with server.admission().slot():
        return _model.head_importance(text, text_pair=pair)


def head_importance(active: ActiveModel, text: str, pair: str | None) -> bert_core.HeadImportance:
    with st.spinner("Switching off every head in turn…"):
        return _importance(active.key, text, pair, active.model)


@st.cache_resource(max_entries=4, ttl=3600, show_spinner=False)
def _ablated(key: str, text: str, pair: str | None, off: tuple[tuple[int, int], ...], _model):
    _count_forward_pass()
    with server.admission().slot():
        return _freeze(_model.analyze(text, pair, head_mask=_head_mask(_model, off)))


def ablated(active: ActiveModel, text: str, pair: str | None, off: tuple[tuple[int, int], ...]):
    """The analysis with the (layer, head) pairs in `off` (0-based) switched off."""
    with st.spinner("Running with the heads switched off…"):
        return _ablated(active.key, text, pair, off, active.model)


# -- fine-tuned heads (the Task page) -----------------------------------------------------------------------


@st.cache_data(max_entries=32, show_spinner=False)
def _task(key: str, method: str, args: tuple, _model: bert_core.BertScopeModel):
    _count_forward_pass()
    with server.admission().slot():
        return getattr(_model, method)(*args)


def task_prediction(active: ActiveModel, method: str, *args):
    """The task head's answer: `method` is one of the model's classify, tag, entities, answer, choose; `args`
    its (hashable) arguments."""
    with st.spinner("Asking the head…"):
        return _task(active.key, method, tuple(args), active.model)


@st.cache_data(max_entries=16, show_spinner=False)
def _attribution(key: str, text: str, pair: str | None, target, method: str, steps: int, _model):
    _count_forward_pass()
    with server.admission().slot():
        return _model.attribute(text, pair, target=target, method=method, steps=steps)


def attribution(
    active: ActiveModel, text: str, pair: str | None, *, target=None, method: str, steps: int = 50
):
    with st.spinner("Attributing (integrated gradients takes a few passes)…"):
        return _attribution(active.key, text, pair, target, method, steps, active.model)


def _head_mask(model: bert_core.BertScopeModel, off: tuple[tuple[int, int], ...]) -> np.ndarray:
    mask = np.ones((model.config.num_hidden_layers, model.config.num_attention_heads), dtype=np.float32)
    for layer, head in off:
        mask[layer, head] = 0.0
    return mask


@st.cache_data(max_entries=16, show_spinner=False)
def _ablated_masks(key: str, text: str, pair: str | None, off: tuple[tuple[int, int], ...], _model):
    _count_forward_pass()
    with server.admission().slot():
        return _model.predict_masks(text, pair, top_k=5, head_mask=_head_mask(_model, off))


def ablated_masks(active: ActiveModel, text: str, pair: str | None, off: tuple[tuple[int, int], ...]):
    """The top-5 guesses per [MASK] with the (layer, head) pairs in `off` (0-based) switched off."""
    return _ablated_masks(active.key, text, pair, off, active.model)
