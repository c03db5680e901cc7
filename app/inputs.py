"""The text a user gave, as the pages read it: sentences A and B and the list pages' lines (cut to a sane
length, with notes), the example sentences, and the session-state keys of the sidebar's widgets (bound ones are also the URL's
query-parameter names)."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace

import streamlit as st

from app.bundled import ASSETS
from bert_core.pieces import MASK_SPELLINGS, with_own_mask

EXAMPLES_DIR = ASSETS / "examples"
EXAMPLES_FILE = EXAMPLES_DIR / "presets.txt"
DEFAULT_TEXT_A = "The boat drifted toward the bank of the river."
# Longer text is cut here before tokenising: about a thousand pieces of English, twice what a model reads at
# once (a QA head reads a longer passage in windows), and bounded work per sentence.
MAX_CHARS = 5_000
ENV_MAX_CHARS = (
    "BERTSCOPE_MAX_CHARS"  # a shared server's limit on what one sentence may bring (bertscope --shared)
)


def max_chars() -> int:
    """Characters of a sentence that are analysed: BERTSCOPE_MAX_CHARS when set (a shared server), else
    MAX_CHARS."""
    try:
        return max(1, int(os.environ.get(ENV_MAX_CHARS, "").strip() or MAX_CHARS))
    except ValueError:
        return MAX_CHARS


# Compare's two banks: a river bank, a money bank, and a second river bank. The same-sense pair is the yardstick
# the cross-sense pair is read against, in each model (their cosines sit at levels of their own, whatever the
# words). Here, not in the page, so a test can read them without running the page.
COMPARE_SENSES = (
    "We sat on the bank of the river and watched the water.",
    "She went to the bank to deposit her salary.",
    "The boat drifted toward the bank where the river bends.",
)

MAX_LINES = 12  # sentences per list on the Word senses and Sentence vector pages
MAX_LINE_CHARS = 1_000  # characters per sentence of such a list

KEY_MODEL = "model"
KEY_TEXT_A = "a"
KEY_TEXT_B = "b"
KEY_LAYER = "layer"
KEY_HEAD = "head"
KEY_EXAMPLE = "example"  # the sidebar's Examples box


@dataclass(frozen=True)
class Inputs:
    """Sentence A and B as the model will see them, with notes on what was changed."""

    text_a: str | None  # None when there is nothing to analyse
    text_b: str | None
    notes: tuple[str, ...] = ()
    cut_b: int = 0  # characters of B's end cut off before tokenising (`prepare_text`; its note says so)


def prepare_text(raw: str | None, name: str) -> tuple[str | None, list[str]]:
    """(text to analyse or None, notes). The widget keeps what was typed; only the copy is cut."""
    notes: list[str] = []
    if raw is None or not raw.strip():
        return None, notes
    text = raw
    limit = max_chars()
    if len(text) > limit:
        cut = text[:limit]
        # At the end of a word where one ends near the limit: "…deposit th" fed the model a word of its own.
        end = max(cut.rfind(" "), cut.rfind("\n"), cut.rfind("\t"))
        if not text[limit].isspace() and end >= max(1, limit - 40) and cut[:end].strip():
            cut = cut[:end]
        # Not "the models read at most 512 pieces anyway": a QA head reads a longer passage in windows, and
        # 5,000 characters of English are about a thousand pieces. A shared server's lower limit is its own.
        why = (
            f"the app's limit of {limit:,} characters a sentence, about twice what a model reads at once"
            if limit >= MAX_CHARS
            else f"this server's limit of {limit} characters"
        )
        lost = text[len(cut) :]
        masks = (
            " A mask typed after that point is not read." if any(m in lost for m in MASK_SPELLINGS) else ""
        )
        notes.append(
            f"{name} has {len(text):,} characters; only the first {len(cut):,} are analysed ({why}).{masks}"
        )
        text = cut
    return text, notes


def line_chars() -> int:
    """Characters of one sentence of a list that are used: MAX_LINE_CHARS, or a shared server's lower
    --max-chars (a list page runs a pass per line; pseudo-likelihood one per piece of each)."""
    return min(MAX_LINE_CHARS, max_chars())


def prepare_lines(lines: list[str]) -> tuple[list[str], list[str]]:
    """(the lines a list page uses: the first MAX_LINES, each cut to line_chars(); notes on what was cut)."""
    notes: list[str] = []
    if len(lines) > MAX_LINES:
        notes.append(
            f"{len(lines)} sentences: only the first {MAX_LINES} are used (your text is kept as typed)."
        )
        lines = lines[:MAX_LINES]
    limit = line_chars()
    long_lines = [n for n, line in enumerate(lines) if len(line) > limit]
    if long_lines:
        notes.append(
            f"Only the first {limit:,} characters of a sentence are used: "
            + ", ".join(f"sentence {n + 1}" for n in long_lines)
            + " is cut."
        )
    return [line[:limit] for line in lines], notes


@dataclass(frozen=True)
class Example:
    label: str
    text_a: str
    text_b: str  # "" when the example is a single sentence
    model: str = ""  # the model the example is for (a QA passage needs a QA head), or "" for any


def parse_examples(text: str) -> list[Example]:
    """Lines 'label | sentence A | sentence B (optional) | model (optional)'; '#' lines and blank lines are
    skipped, and so is a line without a label and a sentence A."""
    out = []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = [p.strip() for p in line.split("|")]
        if len(parts) < 2 or not parts[0] or not parts[1]:
            continue
        out.append(Example(parts[0], parts[1], *(parts[2:4] + ["", ""])[:2]))
    return out


# The page widgets that are number boxes bound to the link (st.number_input): see unreadable_numbers; a test
# (tests/app/test_inputs.py) reads the pages for every such box and fails where one is missing here
NUMBER_KEYS = ("mask_topk", "pt_draw")


def unreadable_numbers() -> list[str]:
    """The number boxes' link parameters that hold no finite number ("inf", "1e400", "nan"), on a session's
    first run (before any widget holds a value); a value that is no number at all Streamlit ignores itself."""
    bad = []
    for key in NUMBER_KEYS:
        given = st.query_params.get(key)
        if given is None or key in st.session_state:
            continue
        try:
            if not math.isfinite(float(given)):
                bad.append(key)
        except ValueError:
            pass
    return bad


def examples() -> list[Example]:
    try:
        return parse_examples(EXAMPLES_FILE.read_text(encoding="utf-8"))
    except OSError:
        return []  # a stripped install without assets: the sidebar simply has no examples


TYPED_MASK = "[MASK]"  # what the app's help and examples tell a user to type, whatever the model


def with_mask_token(given: Inputs, mask_token: str | None) -> Inputs:
    """`given` with a typed [MASK] or <mask> written as the model's own mask token, so every page sees the one
    piece the MLM head was trained on, as `predict_masks` does."""
    a, b = (with_own_mask(t, mask_token) for t in (given.text_a, given.text_b))
    return given if (a, b) == (given.text_a, given.text_b) else replace(given, text_a=a, text_b=b)


def other_mask_spellings(given: Inputs, mask_token: str | None) -> list[str]:
    """The mask spellings of other families typed in `given`, which `with_mask_token` rewrites."""
    typed = " ".join(t for t in (given.text_a, given.text_b) if t)
    return [s for s in MASK_SPELLINGS if s != mask_token and s in typed]


def share_link(page_url: str | None, params: dict[str, object]) -> str:
    """`page_url` with every given query parameter set (None and "" left out). Streamlit keeps a bound widget
    out of the address bar while it holds its default, so a copied address need not name, say, the sidebar's
    model; this link always does. Without a page URL (no browser), just the query: '?model=…'."""
    from urllib.parse import urlencode, urlsplit, urlunsplit

    query = urlencode({k: str(v) for k, v in params.items() if v is not None and v != ""})
    if not page_url:
        return "?" + query
    parts = urlsplit(page_url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, ""))


def current_inputs() -> Inputs:
    a, notes_a = prepare_text(st.session_state.get(KEY_TEXT_A), "Sentence A")
    typed_b = st.session_state.get(KEY_TEXT_B)
    b, notes_b = prepare_text(typed_b, "Sentence B")
    return Inputs(a, b, tuple(notes_a + notes_b), cut_b=len(typed_b) - len(b) if b is not None else 0)


# -- widget callbacks (buttons, chart clicks, the sidebar) --------------------------------------------------
# Module functions, given what they need as arguments (args=, functools.partial): Streamlit keeps a widget's
# callback, and its format_func, in session state for as long as the session lives (minutes after its tab
# closed; with persist_state, on the pages it shows next too). One defined in a script would keep that
# script's namespace alive with it: a page's analysis, outside the cache's budget, and its model, counted as
# in use by an open page, so a shared server refused other models (a format_func is a dict's own __getitem__
# or .get instead; tests/app/test_session_memory.py).


def strip_typed_name(key: str = KEY_MODEL) -> None:
    """Call before a model box: a name typed with the leading space that gets it past Streamlit's box
    (ui.TYPED_NAME_HELP) is kept without it, so the link and the box's list hold the name, not " @demo-qa"
    beside "@demo-qa", from the next run on (a link's first run takes the link's value, and the run that
    receives a typed name leaves the browser's address as it was typed)."""
    typed = st.session_state.get(key)
    if isinstance(typed, str) and typed != unquoted(typed):
        st.session_state[key] = unquoted(typed)


def unquoted(name: str) -> str:
    """A typed model name without the spaces around it and the quotes a file manager's "Copy as path" (or a
    shell) puts around a path: '/models/bert' was refused as outside the allowed roots, quotes and all."""
    name = name.strip()
    if len(name) >= 2 and name[0] == name[-1] and name[0] in "'\"":
        name = name[1:-1].strip()
    return name


def use_model(source: str, key: str = KEY_MODEL) -> None:
    """The "Use …" buttons under a model that can't be loaded (`key`: the sidebar's box, or Compare's)."""
    st.session_state[key] = source


_BEFORE_EXAMPLE = "_model_before_example"  # (the model before an example loaded its own, the example's model)


def load_example(examples: list[Example]) -> None:
    """The Examples box: fill the sentences with the chosen one, and show the placeholder again."""
    chosen = next((e for e in examples if e.label == st.session_state.get(KEY_EXAMPLE)), None)
    if chosen is not None:
        st.session_state[KEY_TEXT_A] = chosen.text_a
        st.session_state[KEY_TEXT_B] = chosen.text_b
        # "Ask a passage a question (Task page, @demo-qa)" left the demo model's page saying it has no task
        # head. An example for any model after it goes back to the model before it: "Guess a hidden word"
        # stayed on @demo-qa, which has no masked-word head.
        current = st.session_state.get(KEY_MODEL)
        if chosen.model:
            if current != chosen.model:
                st.session_state[_BEFORE_EXAMPLE] = (current, chosen.model)
            st.session_state[KEY_MODEL] = chosen.model
        elif _BEFORE_EXAMPLE in st.session_state:
            before, switched_to = st.session_state.pop(_BEFORE_EXAMPLE)
            if current == switched_to:  # still the example's model: the user picked none since
                st.session_state[KEY_MODEL] = before
    st.session_state[KEY_EXAMPLE] = None  # back to the placeholder, ready for the next one


def bump(key: str, most: int | None = None) -> None:
    """A button's callback: one more than the session's counter `key` (e.g. a seed to draw again with), back
    to 1 past `most` (a number box's maximum: beyond it the box fell back to 1 while the link said more)."""
    value = int(st.session_state.get(key, 0)) + 1
    st.session_state[key] = 1 if most is not None and value > most else value


def in_given_order(key: str, options: list[str]) -> None:
    """A multiselect's callback: its picks put in the order of `options`, so the chips read as the sentence
    does and as the charts below number them (picked "riverbank" then "lazy", Mask 1 was "lazy")."""
    picked = st.session_state.get(key) or []
    st.session_state[key] = sorted(picked, key=lambda p: options.index(p) if p in options else len(options))


def _clicked_points(event_key: str) -> list[dict]:
    """The points of a plotly chart's selection event, kept by Streamlit under the chart's key."""
    return (st.session_state.get(event_key) or {}).get("selection", {}).get("points", [])


def open_clicked_map(event_key: str, view_key: str, heatmap: str) -> None:
    """The model view's click: open the clicked map (customdata = layer, head) as the heatmap."""
    for point in _clicked_points(event_key):
        data = point.get("customdata")
        if data is not None and len(data) == 2:
            st.session_state[KEY_LAYER] = int(data[0])
            st.session_state[KEY_HEAD] = int(data[1])
            st.session_state[view_key] = heatmap
            return


def focus_clicked_token(
    event_key: str, focus_key: str, everything: str, from_options: list[str], to_options: list[str]
) -> None:
    """The head view's click (customdata = "from"/"to", position): isolate that token, or, clicked again,
    bring every token back."""
    for point in _clicked_points(event_key):
        data = point.get("customdata")
        if data is None or len(data) != 2 or data[0] not in ("from", "to"):
            continue
        options = from_options if data[0] == "from" else to_options
        if 0 <= int(data[1]) < len(options):
            chosen = options[int(data[1])]
            same = st.session_state.get(focus_key) == chosen
            st.session_state[focus_key] = everything if same else chosen
            return
