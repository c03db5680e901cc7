"""Everything the model computes for the pages: analyses, mask predictions, NSP/SOP, many-line vectors, the
passes of Inside the model and the task heads; and the figures drawn from them (`figure`).

Every result goes through one server-wide store (`app.server`): cached by (kind, model key, arguments) within
a byte budget and shared by every session, so it is frozen; a miss runs once however many sessions ask for it
at once, inside the server's admission limit, while the page says where it stands in the line. Each
computation that runs adds one to the session's forward-pass counter (a list of lines counts once, however
many padded batches the core runs it in), which the tests read to check that a rerun over the same text runs
nothing.
"""

from __future__ import annotations

import dataclasses
import hashlib
import pickle
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import streamlit as st

import bert_core
from app import server
from app.models import ActiveModel

MAX_TOP_K = 30  # masked words are predicted once with this many guesses; the page slices what it shows
# Inputs up to this many characters (about 60-80 WordPiece tokens of English) may take the admission's express
# lane: a lecturer's sentence is not queued behind the paragraphs other students paste.
EXPRESS_CHARS = 300
IG_STEPS = 50  # integrated gradients' steps on the pages: within ~0.1 % of completeness on the demo heads
BATCH_TOKEN_BUDGET = 2048  # padded tokens (texts × longest) per forward pass on the many-sentence pages
FORWARD_PASSES = "forward_passes"  # session-state count of model calls that missed the cache (tests read it)


def _freeze(result):
    """Results are shared by all sessions: make in-place edits of their arrays fail loudly. Walks dataclass
    fields, lists and tuples, so an Analysis, a list of predictions or a field added to either is covered."""
    if isinstance(result, np.ndarray):
        result.flags.writeable = False
    elif isinstance(result, (list, tuple)):
        for item in result:
            _freeze(item)
    elif dataclasses.is_dataclass(result) and not isinstance(result, type):
        for f in dataclasses.fields(result):
            _freeze(getattr(result, f.name))
    return result


def _count_forward_pass() -> None:
    st.session_state[FORWARD_PASSES] = st.session_state.get(FORWARD_PASSES, 0) + 1


def _short(*texts: str | None) -> bool:
    return sum(len(t or "") for t in texts) <= EXPRESS_CHARS


def _cached(
    key: tuple,
    compute: Callable[[], Any],
    doing: str | None = None,
    small: bool = False,
    model_pass: bool = True,
) -> Any:
    """`compute()` once per key for the whole server, inside the admission limit (`small`: one pass over a
    short input, which may take the express lane). While this session waits, a note on the page says for what
    (its place in the line, or another session's run of the same input) and is redrawn every second, so the
    page is never frozen and a closed tab leaves the line at once. `model_pass=False`: heavy work that is not a
    run of the model (attention flow), admitted like one but not counted or logged as one."""
    # A hit (most page runs: every slider move, every student after the first) starts no spinner: Streamlit
    # starts a timer thread for each one, which was a tenth of the server's time in a crowd.
    hit, value = server.results().peek(key)
    if hit:
        return value
    note = None

    def say(message: str) -> None:
        nonlocal note
        note = note if note is not None else st.empty()
        # A Material icon, served with the app: the emoji drew an empty box on machines without an emoji font
        note.info(message, icon=":material/hourglass_top:")

    def queued(place: int) -> None:
        running = server.admission().running
        say(
            f"Queued: {server.ordinal(place)} in line for the model ({running} "
            f"{'request' if running == 1 else 'requests'} running for other sessions). "
            f"{doing or 'It runs'} as soon as it is this page's turn."
        )

    def run() -> Any:
        if model_pass:
            _count_forward_pass()
        return _freeze(compute())

    try:
        if doing is None:
            return _get(key, run, queued, say, small, model_pass)
        with st.spinner(doing):
            return _get(key, run, queued, say, small, model_pass)
    finally:
        if note is not None:
            note.empty()


def _same_input(place: int | None) -> str:
    """What a session waiting on another session's computation of the same input is told."""
    if place is None:
        return "Another session is running the model on this same input; using its result…"
    return (
        f"Queued: this same input, asked for by another session, is {server.ordinal(place)} in line for the "
        "model; this page uses its result as soon as it is done."
    )


def _get(key, run, queued, say, small=False, model_pass=True):
    admission = server.admission()
    return server.results().get(
        key,
        run,
        admitted=lambda since: admission.slot(queued, since=since, small=small),
        waiting=lambda since: say(_same_input(admission.place_of(since))),
        model_pass=model_pass,
    )


def analyze(active: ActiveModel, text: str, pair: str | None = None) -> bert_core.Analysis:
    """The cached analysis of (model, text, pair); raises bert_core.InputError for unusable text."""
    return _cached(
        ("analysis", active.key, text, pair),
        lambda: active.model.analyze(text, pair),
        "Running the model…",
        small=_short(text, pair),
    )


def predict_masks(
    active: ActiveModel, text: str, pair: str | None, top_k: int
) -> list[bert_core.MaskPrediction]:
    """The `top_k` best guesses per [MASK], sliced from one cached prediction of the top MAX_TOP_K, so a new k
    never reruns the model."""
    full = _cached(
        ("masks", active.key, text, pair),
        lambda: active.model.predict_masks(text, pair, top_k=MAX_TOP_K),
        "Predicting…",
        small=_short(text, pair),
    )
    k = max(1, int(top_k))
    return [
        replace(p, tokens=p.tokens[:k], token_ids=p.token_ids[:k], probabilities=p.probabilities[:k])
        for p in full
    ]


def sentence_order(active: ActiveModel, a: str, b: str) -> float:
    """P(A then B is the original order); only for a model whose `info.heads` has "sop"."""
    return _cached(("sop", active.key, a, b), lambda: active.model.sentence_order(a, b), small=_short(a, b))


def replaced_tokens(active: ActiveModel, text: str, pair: str | None = None) -> list[tuple[str, float]]:
    """[(token, P(replaced))] per token; only for an ELECTRA discriminator (`info.heads` has "rtd")."""
    return _cached(
        ("replaced", active.key, text, pair),
        lambda: active.model.replaced_tokens(text, pair),
        "Running the discriminator…",
        small=_short(text, pair),
    )


def next_sentence(active: ActiveModel, a: str, b: str) -> float:
    """P(IsNext) of the pair; only for a model whose `info.has_nsp_head` (the core raises otherwise)."""
    return _cached(("nsp", active.key, a, b), lambda: active.model.next_sentence(a, b), small=_short(a, b))


def mlm_scores(
    active: ActiveModel, ids: list[int], types: list[int], positions: list[int], labels: list[int]
) -> bert_core.MlmScores:
    """The top 5 MLM guesses and the loss at `positions` of an already corrupted id sequence (Pre-training)."""
    return _cached(
        ("mlm", active.key, tuple(ids), tuple(types), tuple(positions), tuple(labels)),
        lambda: active.model.predict_at(ids, positions, token_type_ids=types, labels=labels, top_k=5),
    )


# -- many short texts (Word senses, Sentence vector) ----------------------------------------------------


@dataclass(frozen=True)
class Lines:
    """The usable lines' vectors, and the lines that could not be used (with the reason)."""

    results: list[bert_core.Vectors]  # one per usable line, in input order
    used: list[int]  # results[k] is lines[used[k]]
    rejected: list[tuple[int, str]]  # (index into lines, reason)


def _lines(texts: tuple[str, ...], model: bert_core.BertScopeModel) -> Lines:
    used: list[int] = []
    rejected: list[tuple[int, str]] = []
    # Encoded up front so that an unusable line is left out and named; vectors_batch stops at the first one.
    for n, text in enumerate(texts):
        try:
            model.encode(text)
        except bert_core.InputError as exc:
            rejected.append((n, str(exc)))
        else:
            used.append(n)
    if not used:
        return Lines([], used, rejected)
    # vectors_batch keeps no attention maps (these pages never draw them, and at 512 tokens they dominate
    # memory) and runs the lines in padded batches within the token budget, so memory stays bounded.
    results = model.vectors_batch([texts[n] for n in used], max_batch_tokens=BATCH_TOKEN_BUDGET)
    return Lines(results, used, rejected)


def analyze_lines(active: ActiveModel, texts: list[str]) -> Lines:
    """Hidden states of many short texts, run in padded chunks of at most BATCH_TOKEN_BUDGET tokens so that
    memory stays bounded; lines the tokenizer rejects are listed in `rejected` instead of failing the rest."""
    return _cached(
        ("lines", active.key, tuple(texts)),
        lambda: _lines(tuple(texts), active.model),
        "Running the model…",
    )


# -- passes of their own (Inside the model): each cached per input, since each is several forwards ------------


def attention_details(
    active: ActiveModel, text: str, pair: str | None, layer: int
) -> bert_core.AttentionDetails:
    """One layer's queries, keys, values and raw scores (0-based `layer`), computed for that layer only."""
    return _cached(
        ("details", active.key, text, pair, layer),
        lambda: active.model.attention_details(text, pair, layer=layer),
        "Taking the layer apart…",
    )


def value_weighted(active: ActiveModel, text: str, pair: str | None) -> bert_core.ValueWeightedAttention:
    return _cached(
        ("value_weighted", active.key, text, pair),
        lambda: active.model.value_weighted_attention(text, pair),
        "Weighing the values…",
    )


def attention_rollout(
    active: ActiveModel, text: str, pair: str | None, result: bert_core.Analysis
) -> np.ndarray:
    """Rollout of `result` (the analysis of text and pair): (L, S, S), L matrix products of S×S."""
    return _cached(
        ("rollout", active.key, text, pair),
        lambda: bert_core.attention_rollout(result.attentions),
        model_pass=False,
    )


def attention_flow(
    active: ActiveModel, text: str, pair: str | None, result: bert_core.Analysis
) -> np.ndarray:
    """Attention flow of `result`: (L, S, S). Why cached and admitted like a pass: the max-flow solver is pure
    Python, ~2 s with the GIL held for 16 pieces on 12 layers, which would stall every other session's page
    if each student (and each slider move) solved it again."""
    return _cached(
        ("flow", active.key, text, pair),
        lambda: bert_core.attention_flow(result.attentions),
        "Solving the max-flow problems…",
        model_pass=False,
    )


def logit_lens(
    active: ActiveModel, text: str, pair: str | None, position: int | None, follow: tuple[str, ...] = ()
) -> bert_core.LogitLens:
    return _cached(
        ("lens", active.key, text, pair, position, follow),
        lambda: active.model.logit_lens(text, position, top_k=5, text_pair=pair, follow=follow),
    )


def pseudo_log_likelihood(
    active: ActiveModel, text: str, scoring: str = "piece"
) -> bert_core.PseudoLogLikelihood:
    return _cached(
        ("pll", active.key, text, scoring),
        lambda: active.model.pseudo_log_likelihood(text, scoring=scoring),
        "Masking each piece in turn…",
    )


def head_importance(active: ActiveModel, text: str, pair: str | None) -> bert_core.HeadImportance:
    return _cached(
        ("importance", active.key, text, pair),
        lambda: active.model.head_importance(text, text_pair=pair),
        "Switching off every head in turn…",
    )


def ablated(active: ActiveModel, text: str, pair: str | None, off: tuple[tuple[int, int], ...]):
    """The analysis with the (layer, head) pairs in `off` (0-based) switched off."""
    return _cached(
        ("ablated", active.key, text, pair, off),
        lambda: active.model.analyze(text, pair, head_mask=_head_mask(active.model, off)),
        "Running with the heads switched off…",
    )


def ablated_masks(active: ActiveModel, text: str, pair: str | None, off: tuple[tuple[int, int], ...]):
    """The top-5 guesses per [MASK] with the (layer, head) pairs in `off` (0-based) switched off."""
    return _cached(
        ("ablated_masks", active.key, text, pair, off),
        lambda: active.model.predict_masks(text, pair, top_k=5, head_mask=_head_mask(active.model, off)),
    )


def _head_mask(model: bert_core.BertScopeModel, off: tuple[tuple[int, int], ...]) -> np.ndarray:
    mask = np.ones((model.config.num_hidden_layers, model.config.num_attention_heads), dtype=np.float32)
    for layer, head in off:
        mask[layer, head] = 0.0
    return mask


# -- fine-tuned heads (the Task page) -----------------------------------------------------------------------


def task_prediction(active: ActiveModel, method: str, *args):
    """The task head's answer: `method` is one of the model's classify, tag, entities, answer, choose; `args`
    its (hashable) arguments."""
    return _cached(
        ("task", active.key, method, tuple(args)),
        lambda: getattr(active.model, method)(*args),
        "Asking the head…",
    )


def attribution(
    active: ActiveModel, text: str, pair: str | None, *, target=None, method: str, steps: int = IG_STEPS
):
    return _cached(
        ("attribution", active.key, text, pair, target, method, steps),
        lambda: active.model.attribute(text, pair, target=target, method=method, steps=steps),
        "Attributing (integrated gradients takes a few passes)…",
    )


def _fingerprint(digest, value: Any) -> None:
    """Feed `value` to `digest` by what it is, never by object identity (pickle would write a label used for
    both axes once, and two equal lists twice), so equal arguments always give the same key. Each kind opens
    with a tag of its own and its length, so no two kinds (an array and a list of its items, a dict and a list
    of its pairs, two tuple classes) can write the same bytes."""
    if isinstance(value, np.ndarray) and value.dtype.hasobject:  # its bytes would be pointers
        digest.update(f"O{value.shape}[".encode())
        for item in value.ravel().tolist():
            _fingerprint(digest, item)
        digest.update(b"]")
    elif isinstance(value, np.ndarray):
        # A structured dtype's .str is only its size (|V8): its fields tell two apart.
        dtype = value.dtype.str if value.dtype.names is None else repr(value.dtype.descr)
        digest.update(f"A{dtype}{value.shape}:".encode())
        digest.update(np.ascontiguousarray(value).tobytes())
    elif isinstance(value, (list, tuple)):
        kind = type(value)
        digest.update(f"L{kind.__module__}.{kind.__qualname__}{len(value)}(".encode())
        for item in value:
            _fingerprint(digest, item)
        digest.update(b")")
    elif isinstance(value, dict):
        digest.update(f"D{len(value)}{{".encode())
        for key, item in sorted(value.items(), key=lambda kv: repr(kv[0])):
            _fingerprint(digest, key)
            _fingerprint(digest, item)
        digest.update(b"}")
    elif isinstance(value, str):
        data = value.encode("utf-8", "surrogatepass")
        digest.update(f"S{len(data)}:".encode() + data)
    elif value is None or isinstance(value, (bool, int, float, np.generic)):
        digest.update(f"N{type(value).__name__}:{value!r};".encode())
    else:  # anything else a builder takes is pickled whole
        data = pickle.dumps(value, protocol=5)
        digest.update(f"P{len(data)}:".encode() + data)


# What a plotly Figure holds beyond its data (its trace and layout objects): 10-40 kB measured with
# tracemalloc for the heatmaps, head views, bars and saliency strips the pages cache (plotly 7.1).
FIGURE_OBJECTS_BYTES = 48 * 1024


def figure(build: Callable[..., Any], *args, **kwargs) -> Any:
    """`build(*args, **kwargs)` (a pure figure builder of `app.charts`), built once for the whole server per
    distinct arguments, in the same store and byte budget as the results.

    Why: plotly checks every property as a figure is built (~10 ms for a labelled heatmap or a bar chart, a
    quarter of what the server spends drawing the Attention and Masked words pages), and a room opening the
    lecturer's sentence asks for the very same figures; so does one user moving a slider back and forth. The
    figure is shared by every session that asks: draw it, never change it (build a new one instead).
    """
    digest = hashlib.blake2b(digest_size=16)
    _fingerprint(digest, (args, sorted(kwargs.items())))
    key = ("figure", build.__module__, build.__qualname__, digest.hexdigest())
    return server.results().get(
        key,
        lambda: build(*args, **kwargs),
        sizeof=lambda fig: FIGURE_OBJECTS_BYTES + server.nbytes(fig.to_dict()),
        model_pass=False,
    )
