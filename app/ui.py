"""Small Streamlit helpers every page uses: figures with CSV, safe text, the page preamble."""

from __future__ import annotations

import functools
import math
import numbers
import re
import threading
from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from app import cache, charts, inputs, models, transforms
from bert_core.checks import counted

if TYPE_CHECKING:
    from bert_core import PieceStyle

KEY_LARGE = "large"
KEY_IMAGE_FORMAT = "img_format"
LARGE_FONT = 22
NORMAL_FONT = 13
# Help texts two boxes share. The model boxes (the sidebar's, Compare's second) are Streamlit selectboxes that
# take typed names, and Streamlit's box empties a name being typed once it equals the current one (1.67).
APPLY_HELP = "Press Ctrl+Enter (or click outside) to analyse."
TYPED_NAME_HELP = (
    "Streamlit's box empties a name being typed once it equals the current model's: to type one that begins "
    "with it (distilbert-base-cased-distilled-squad after distilbert-base-cased), start with a space."
)

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|~:$&'\"=^%@;,/?])")


def md_escape(text: str) -> str:
    """Text that Streamlit's Markdown shows exactly as typed: every ASCII punctuation mark backslash-escaped
    (CommonMark allows it for all of them), which also disarms `:emoji:`, `:color[...]` and `$…$`."""
    return _MD_SPECIAL.sub(r"\\\1", str(text)).replace("\n", "  \n")


def widget_label(text: str) -> str:
    """A widget's or metric's label that shows as written: escaped only where Markdown could read it as markup
    (Streamlit also copies the label, backslashes and all, into what a screen reader hears)."""
    return md_escape(text) if re.search(r"[*_`$~\[\]\\<>|:]", text) else text


_CORE_NAMES = [
    (re.compile(r"\btext_pair\b"), "Sentence B"),
    (re.compile(r"^text\b"), "Sentence A"),
]


def user_message(error: BaseException | str, *, text_name: str = "Sentence A", sentence: bool = True) -> str:
    """A core error message in the words of the UI ('text_pair' is the sidebar's Sentence B), escaped for
    Markdown. `text_name` names what was passed as the core's `text` (e.g. "Line 3" on a list page). Exception
    messages end without a full stop; shown as a sentence of its own (`sentence`), the message gets one."""
    message = str(error)
    for pattern, name in _CORE_NAMES:
        message = pattern.sub(text_name if name == "Sentence A" else name, message)
    # Not after a path, a link or a quoted name, where a copied dot would become part of it.
    last = message.split()[-1] if message.split() else ""
    if sentence and last and last[-1] not in ".!?…'\"" and not any(c in last for c in "/\\"):
        message += "."
    # The core's messages start in lower case, as Python's do; a sentence of its own starts with a capital. Only
    # a plain word is raised: a path, a config key or a quoted piece at the start is left as written.
    if sentence and re.match(r"[a-z]+ (?!must )", message):  # "lowercase must be …" names a parameter
        message = message[0].upper() + message[1:]
    return md_escape(message)


T = TypeVar("T")


def start_value(key: str, value: object, valid: Callable[[object], bool] | None = None) -> None:
    """Give widget `key` its starting value through session state (the widget then takes no value=, which
    would clash with a kept value), and replace a kept value that no longer fits, e.g. a word of an older
    text or a layer of another model. For a widget that is not in the link; one bound to the URL takes its
    start from `start` instead."""
    if key not in st.session_state or (valid is not None and not valid(st.session_state[key])):
        st.session_state[key] = value


def bound(key: str, max_chars: int | None = None) -> dict[str, Any]:
    """key= and bind="query-params" for a page widget (pass as **ui.bound(key); a text box's max_chars through
    it too, so a linked text it cuts is said to be cut), with the value the session
    kept for it sent to the browser again on this run. Streamlit sends a widget's value only when it changed or
    session state set it, and the browser can lose it: a page link clicked while Sentence A held uncommitted
    text navigated nowhere (the text's commit reran the old page), yet the browser had already dropped the
    page's controls and drew them again at their defaults (View "Heatmap", Layer 1) over a chart still drawn
    with the kept choice, and the next click sent those defaults, so a lecturer's Word senses sentences went
    back to the preset (Streamlit 1.67; tests/app/test_browser.py). Setting the kept value to itself makes
    Streamlit send it, and the browser adopts it unless the user is typing in that box (an edited text box
    keeps its text until it is committed). The sidebar's widgets stay mounted across pages and are not
    re-sent, so Sentence A is never written over while it is typed in. Streamlit logs once that such a widget
    also has a default (`global.disableWidgetStateDuplicationWarning`, app/cli.py): both say the same, see
    `start`."""
    if key in st.session_state:
        st.session_state[key] = st.session_state[key]
    else:
        link_read(key, max_chars)
    return {"key": key, "bind": "query-params"} | ({"max_chars": max_chars} if max_chars else {})


def link_read(key: str, max_chars: int | None = None) -> None:
    """Call before a widget bound to the URL is made (`bound` does): on the run that reads the link, what the
    link asks of it, which `say_link_notes` compares with what the widget took once the page has run
    (`max_chars`: a text box's length, to which Streamlit cuts a longer text)."""
    if key in st.session_state:
        return
    given = st.query_params.get_all(key) or st.session_state.get(_LINK_DROPPED, {}).pop(key, [])
    if given:
        record = _link_record()
        record["given"].setdefault(key, given)
        if max_chars:
            record["max_chars"][key] = max_chars


# What this run made of the link: "given" (key: the values the link gave a widget), "max_chars" (key: its text
# box's length), "notes" (what was said of a value, markdown) and the keys they name ("checked"), and "carry":
# kept for the next run, as this one was stopped for a rerun (asked for by `option_by_name`, or a new run of the
# browser's) whose widgets already hold their values, so that run alone would not know what the link asked for.
_LINK_RECORD = "_link_record"
_LINK_DROPPED = (
    "_link_dropped"  # values the entry took out of the address, until a page's widget would read them
)


def _link_record() -> dict[str, Any]:
    record = st.session_state.get(_LINK_RECORD)
    if record is None:
        record = st.session_state[_LINK_RECORD] = {
            "given": {},
            "max_chars": {},
            "notes": [],
            "unused": [],
            "checked": set(),
            "carry": False,
        }
    return record


def forget_link_record() -> None:
    """Start this run's record afresh, but for one carried over from the run before (see `_LINK_RECORD`)."""
    record = st.session_state.get(_LINK_RECORD)
    if record is not None and record["carry"]:
        record["carry"] = False
    else:
        st.session_state.pop(_LINK_RECORD, None)


def carry_link_record() -> None:
    """Keep this run's record for the next run: this one was stopped for a rerun before it was shown whole. What
    the widgets made so far took of the link is settled now: the rerun may be the user changing one of them
    (a toggle the link turned on, turned off, is no value the link failed to set)."""
    record = _link_record()
    for key, asked in record["given"].items():
        if key in st.session_state and key not in record["checked"]:
            said = _unused(key, asked, record)
            if said:
                record["unused"].append(said)
            record["checked"].add(key)
    record["carry"] = True


def link_values_dropped(dropped: Mapping[str, list[str]]) -> None:
    """Link values the entry takes out of the address before a page reads them (`inputs.unreadable_numbers`),
    named as unused by the page whose widget would have read them."""
    st.session_state.setdefault(_LINK_DROPPED, {}).update(dropped)


def _link_note(key: str, note: str) -> None:
    record = _link_record()
    record["notes"].append(note)
    record["checked"].add(key)


def _names(given: str, value: object) -> bool:
    """Whether a link's text names `value` as Streamlit reads it ("3.0" and "03" a number 3, "FALSE" off)."""
    if isinstance(value, bool):
        return given.casefold() == str(value).casefold()
    if isinstance(value, numbers.Real):
        try:
            return float(given) == value
        except ValueError:
            return False
    return given == str(value)


def _values(value: object) -> list[object]:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _shown(value: object) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return clip(str(value), 30)


_RUN = threading.local()  # this run's place for the notes on the link: an element, not kept in session state


def place_link_notes(place: Any) -> None:
    """Where `say_link_notes` writes: an empty slot above the page, made before it runs."""
    _RUN.place = place


def stop() -> NoReturn:
    """st.stop() for a page: the notes on the link are said first, as nothing can be drawn once a stop is asked
    (a page stopped below its controls has read the link)."""
    say_link_notes()
    st.stop()


def _unused(key: str, asked: list[str], record: dict[str, Any]) -> str | None:
    """What the widget `key` did not take of the link's values `asked`, in words; None where it took them all
    (its own start, and values written another way, included: 3.0, FALSE)."""
    value = st.session_state[key]
    held = _values(value)
    unused = [a for a in asked if not any(_names(a, v) for v in held)]
    if not unused:
        return None
    limit = record["max_chars"].get(key)
    if (
        limit
        and len(asked) == 1
        and len(asked[0]) > limit
        and isinstance(value, str)
        and asked[0].startswith(value)
    ):
        return f"{key}={clip(asked[0], 30)} (cut to its first {len(value)} characters)"
    shown = ", ".join(_shown(v) for v in held) or "none"
    return f"{key}={', '.join(clip(a, 30) for a in dict.fromkeys(unused))} (showing {shown})"


def say_link_notes() -> None:
    """Once the page has run or stops (`stop`): above the page (`place_link_notes`), what it said of the link's
    values (`say_if_linked_out_of_range`, `option_by_name`), and each value a widget did not take as given.
    Streamlit drops a value that is no option, no number or out of range, cuts a multiselect's list to the
    options it knows and a text to its box's length, all without a word: `mask_topk=500` opened on the top 5,
    `ablation_heads=9.9` on no head, `att_hide_special=perhaps` off, each as if the link had asked for it. In
    one place, so that two notes on one link are not read in two places in two manners."""
    place, _RUN.place = getattr(_RUN, "place", None), None
    if place is None:
        return  # said already (`stop`): no st call may follow a stop
    record = st.session_state.get(_LINK_RECORD)
    if record is None or record["carry"]:
        return  # nothing read, or a run that is rerun at once: the next one says it
    st.session_state.pop(_LINK_RECORD)
    said = list(record["unused"])
    for key, asked in record["given"].items():
        if key not in record["checked"] and key in st.session_state:
            said.append(_unused(key, asked, record))
    said = [s for s in said if s]
    lines = list(record["notes"])
    if said:
        lines.append(
            md_escape(
                "Not used from the link as given (no such choice on this page for this model and text, or "
                "out of its range): " + "; ".join(said) + "."
            )
        )
    if lines:
        place.caption("  \n".join(lines))


def say_if_linked_out_of_range(
    key: str,
    what: str,
    low: int,
    high: int,
    shown: str,
    also: Collection[str] = (),
    whose: str = "this model",
) -> None:
    """A note where the link's whole number for `key` (a layer, a head) lies outside [low, high] or is no number
    (but for `also`, the widget's other choices: a head's "mean"), on the run that reads the link (the session
    has no value yet). Streamlit drops such a value and the widget opens on its start without a word, so a
    lecturer's link to "layer 10" of bert-base, opened on a 4-layer model, showed layer 1 as if that were what
    the link meant. `shown`: what the page shows instead ("layer 1"); `whose`: the model's name where a page
    shows two (in one place above them, the note no longer stands in its model's column). Said above the page
    (`say_link_notes`), where any other value of the link the page does not use is named too. Call it before
    the widget."""
    given = st.query_params.get_all(key)
    if key in st.session_state or len(given) != 1 or given[0] in also:
        return  # (a value repeated, which Streamlit drops too, is named with the others)
    asked: int | None
    try:
        asked = int(given[0])  # a number of any length: "999…9" is a layer this model lacks
    except ValueError:
        try:  # else as Streamlit reads a number: "3.0" and "1e0" are layers 3 and 1
            number = float(given[0])
        except ValueError:
            number = math.nan
        asked = int(number) if math.isfinite(number) and number.is_integer() else None
    if asked is None:
        _link_note(
            key, md_escape(f"The link's {key}={clip(given[0], 30)} is no {what} number: showing {shown}.")
        )
    elif not low <= asked <= high:
        # the number as read, not as typed (" 9", "1_0"): digits alone, so only the model's name is escaped
        _link_note(
            key,
            f"The link asks for {what} {clip(str(asked), 30)}, which {md_escape(whose)} doesn't have "
            f"({what}s {low} to {high}): showing {shown} instead.",
        )


def option_by_name(key: str, labels: Mapping[str, str]) -> None:
    """Read a link that names a radio's option by its own name (`labels` maps each name to the label shown)
    as one naming its label. A bound radio's link holds the label shown (Streamlit writes the shown value), so a
    hand-written "inside_view=lens" or "senses_occurrence=last" opened the default view without a word. The
    address is rewritten and the page run again, as the radio reads the address only as it starts: set
    through session state, the option showed but the address dropped the key, so a reload lost it. Only for
    a session with no value yet (never over one the user picked). Call it before the radio."""
    given = st.query_params.get(key)
    if key in st.session_state or given is None:
        return
    _link_record()["checked"].add(key)
    if given in labels.values():
        return
    # A name or label in another case ("Logit Lens", "LENS") is read as the option too: it too opened the
    # default without a word, and Streamlit matches labels exactly
    folded = {name.casefold(): label for name, label in labels.items()}
    folded |= {label.casefold(): label for label in labels.values()}
    meant = labels.get(given) or folded.get(given.casefold())
    # (never a label that is some option's name too: rewritten, it would be read as that option, or rerun on)
    if meant is not None and meant not in labels:
        st.query_params[key] = meant
        st.rerun()  # (what this run read of the link is said by the next: app/streamlit_app.py `run_page`)
    elif meant is None:
        # "inside_view=lense" opened the first view as if linked: Streamlit drops a value that is no option
        _link_note(
            key,
            md_escape(
                f"The link's {key}={clip(given, 40)} is not one of this page's choices, so it is not used."
            ),
        )


def follow_default(key: str, default: object, valid: Callable[[object], bool]) -> None:
    """Move a kept choice to the page's new default when the default moved (the text changed) and the user
    never picked one. The logit lens stayed on "1: the", its default for a text without a mask, after a [MASK]
    was typed, while a fresh link to the same text opened on the mask (its caption had just said to type one).
    A choice the user made (one that differed from the default when it was made, a link's included) is kept
    while it fits (`valid`, as given to `start`), even once it becomes the default itself; one that no longer
    fits starts over, and follows the default again. Call it before `start`."""
    mark, picked = f"_default_{key}", f"_picked_{key}"
    old, kept = st.session_state.get(mark), st.session_state.get(key)
    if kept is not None and not valid(kept):
        st.session_state[picked] = False  # `start` puts it back to the default
    elif old is not None and kept is not None and kept != old:
        st.session_state[picked] = True
    if old is not None and old != default and kept == old and not st.session_state.get(picked):
        st.session_state[key] = default
    st.session_state[mark] = default


def start(key: str, value: T, valid: Callable[[object], bool] | None = None) -> T:
    """The starting value for a widget bound to the URL, to pass as its own value= (index=, default=), and a
    kept value that no longer fits (a layer of another model, a word of an older text) set back to it, so the
    widget starts over. Why not session state: Streamlit leaves a bound value out of the link when it equals the
    widget's own default, so that default must be the page's starting value; a start set through session
    state, with the widget's default left at its minimum, made a link to layer 1 (or 0, or top-1) open on
    the starting value instead. Page widgets keep their values across page visits with
    persist_state="session" (a lecturer's prepared sentences must survive a trip to the Attention page).

    A kept value that no longer fits is replaced by the start, not deleted: Streamlit sends a widget's value to
    the browser only when session state set it, so a deleted one started over on the server while the browser
    went on showing the old choice (the word of the older text in the box, the new text's first word
    explained below it). Setting it makes Streamlit log, once, that the widget has a default as well
    (`global.disableWidgetStateDuplicationWarning` in app/cli.py: here both say the same; the setting is
    Streamlit-wide, so a widget given both by mistake would not be logged either)."""
    if key in st.session_state and valid is not None and not valid(st.session_state[key]):
        st.session_state[key] = value
    return value


# Large text beyond the charts: captions, explanations, warnings, widget labels and the choices in their boxes
# in the main area, for the back of a lecture hall; a metric's value stays larger than its label (the rule for
# text would shrink it), and a label (a widget's or a metric's) too long for its column wraps instead of
# ending in "…" ("Merge sub-words into …", "Length (L2 n…" at 1024 px), and a slider's value grows upwards
# from its knob instead of down over it; table cells are padded less, or at 1280 px the Tokens table's last
# column ran under the page's edge ("continuatio"). A fixed stylesheet (no user text is ever put into it).
_LARGE_TEXT_CSS = """<style>
[data-testid="stMain"] [data-testid="stMarkdownContainer"] p,
[data-testid="stMain"] [data-testid="stCaptionContainer"],
[data-testid="stMain"] [data-testid="stWidgetLabel"] p,
[data-testid="stMain"] [data-testid="stAlertContentInfo"] p,
[data-testid="stMain"] [data-testid="stAlertContentWarning"] p,
[data-testid="stMain"] [data-testid="stText"],
[data-testid="stMain"] [data-testid="stSelectbox"] input,
[data-testid="stMain"] [data-testid="stMultiSelect"] input,
[data-testid="stMain"] [data-testid="stMultiSelectTagsContainer"] [data-tag] span,
[data-testid="stMain"] textarea,
[data-testid="stMain"] [data-testid="stTextInput"] input,
[data-testid="stMain"] [data-testid="stNumberInput"] input,
[data-testid="stMain"] [data-testid="stCode"] code,
[data-testid="stMain"] [data-testid="stTable"] th,
[data-testid="stMain"] [data-testid="stTable"] td,
[data-testid="stSidebar"] textarea,
[data-testid="stSidebar"] [data-testid="stTextInput"] input { font-size: 1.35rem !important; }
[data-testid="stMain"] [data-testid="stMetricValue"] [data-testid="stMarkdownContainer"] p { font-size: 3rem !important; }
[data-testid="stMain"] [data-testid="stMetricLabel"] [data-testid="stMarkdownContainer"],
[data-testid="stMain"] [data-testid="stMetricLabel"] p { white-space: normal !important; overflow: visible !important; }
[data-testid="stMain"] [data-testid="stSliderThumbValue"] { top: auto !important; bottom: 100% !important; }
[data-testid="stMain"] [data-testid="stTable"] th,
[data-testid="stMain"] [data-testid="stTable"] td { padding: 0.2rem 0.25rem !important; }
</style>"""


# Rows up to which Large text shows a table as st.table: st.dataframe draws its cells on a canvas, at a size no
# stylesheet reaches (CSS zoom on it breaks its layout and scrolling), so a table's numbers stayed small on a
# projector. Past this, a table is too long to read from the back of a room anyway, and keeps its scrolling.
LARGE_TABLE_ROWS = 60


def table(data: Any, *, key: str | None = None) -> None:
    """A table without its index: st.dataframe, or in Large text (up to LARGE_TABLE_ROWS rows) st.table, whose
    cells the large-text stylesheet enlarges. st.table renders every cell and header as Markdown, so each text
    is escaped: typed text and pieces ('**cat**', '#', '2*3*4', a link) show as written, never as markup."""
    frame = data if isinstance(data, pd.DataFrame) else pd.DataFrame(data)
    if st.session_state.get(KEY_LARGE) and len(frame) <= LARGE_TABLE_ROWS:
        shown = frame.map(lambda v: md_escape(v) if isinstance(v, str) else v)
        for column in frame.columns:
            values = frame[column]
            # st.table writes four decimals: a probability of 0.000004 read "0.0000" beside its loss of 12.3
            # (Pre-training), where st.dataframe shows it whole. Such a column is written out, each number alike.
            if values.dtype.kind == "f" and ((values.abs() < SMALLEST_4DP) & (values != 0)).any():
                shown[column] = [_table_number(v) for v in values]
        shown.columns = [md_escape(c) for c in frame.columns]
        st.table(shown, hide_index=True)
    else:
        st.dataframe(frame, hide_index=True, key=key)


SMALLEST_4DP = 5e-5  # below it, four decimals write a number as 0.0000


def _table_number(value: float) -> str:
    """A number of a column st.table would round to 0: four decimals as st.table writes them, or two
    significant digits where those would read 0 ("0.0000042"), as a bar writes them."""
    if not math.isfinite(value):
        return "" if math.isnan(value) else str(value)
    return charts.small_number(value) if value and abs(value) < SMALLEST_4DP else f"{value:.4f}"


def large_text_style() -> None:
    """Apply the large-text stylesheet to this run's page when Large text is on."""
    if st.session_state.get(KEY_LARGE):
        st.html(_LARGE_TEXT_CSS)


# Streamlit draws a grey placeholder for each element until the element's code has arrived, pulsing without
# end. An endless animation makes the browser compose a new frame 60 times a second for as long as one is on
# screen, and when a room opens the page at once that is most of the wait: with 30 browsers on 2 cores the
# Attention page's first chart came 5-12 % sooner with the pulse stopped (docs/benchmarks.md, section 10). The
# placeholders themselves stay, and Streamlit's running indicator still says the page is working.
# And in every size, a widget label too long for its column wraps instead of ending in "…": at 1024 px the
# Attention page's third of a row showed "Merge sub-words int…" (Large text has had the rule since 1280 px).
_STILL_PLACEHOLDERS_CSS = """<style>
[data-testid='stSkeleton'] { animation: none !important; }
[data-testid="stMain"] [data-testid="stWidgetLabel"] [data-testid="stMarkdownContainer"],
[data-testid="stMain"] [data-testid="stWidgetLabel"] p { white-space: normal !important; overflow: visible !important; }
[data-testid="stMain"] [data-testid="stMetricValue"] * { white-space: normal !important; overflow-wrap: anywhere; }
[class*="st-key-side-by-side-"] { container-type: inline-size; }
@container (max-width: 700px) {
  [class*="st-key-side-by-side-"] [data-testid="stHorizontalBlock"] { flex-wrap: wrap !important; }
  [class*="st-key-side-by-side-"] [data-testid="stHorizontalBlock"] > [data-testid="stColumn"] { min-width: 100% !important; }
}
</style>"""


def still_placeholders() -> None:
    """Stop the loading placeholders' pulse, let widget labels and metric values wrap (the Task page's answer
    ended in "…" at 1024 px), and put charts that sit side by side (`side_by_side`) one above the other where the
    page is under 700 px wide: at 1024 px with the sidebar open (564 px of page) two charts had ~270 px each,
    Word senses' six columns of cosines ran together ("1.000.770.68") and its title was cut, and Compare's
    column labels piled up; side by side from ~1160 px on (or with the sidebar closed), as before. A style-only
    st.html goes to Streamlit's event container, so it takes no room on the page."""
    st.html(_STILL_PLACEHOLDERS_CSS)


def font_size() -> int:
    return LARGE_FONT if st.session_state.get(KEY_LARGE) else NORMAL_FONT


# A text box's parts in Chromium (Streamlit 1.67): the height a widget is given is its box's plus 30 px, the box
# has 12 px of padding above and below its lines, and a line is 19.6 px in normal text, 30.24 px in Large.
BOX_EXTRA_PX, BOX_LINE_PX, LARGE_BOX_LINE_PX = 30 + 2 * 12, 19.6, 30.24
# Streamlit's own text box, given where a box had no height: 3.47 lines of normal text, 2.25 of Large text
DEFAULT_BOX_PX = 122


def box_height(normal_px: int) -> int:
    """A text box's height for the text size in use. In Large text, as many whole lines as normal text shows
    (the part-shown one counted): 1.4 times the height cut Sentence A's third line at 84 % and Word senses'
    eighth at 47 %, which read as a fault of the page, not as more text below."""
    if font_size() == NORMAL_FONT:
        return normal_px
    lines = math.ceil((normal_px - BOX_EXTRA_PX) / BOX_LINE_PX)
    return round(BOX_EXTRA_PX + lines * LARGE_BOX_LINE_PX)


def clip(text: str, chars: int) -> str:
    """`text` cut to `chars` characters, the last of them "…" where it was cut."""
    return text if len(text) <= chars else text[: chars - 1] + "…"


def short_label(text: str) -> str:
    """`text` cut to what a chart's axis label holds: 40 characters, or 18 in Large text, where 40 left a map
    ~65 px on a projector (the hover, the CSV or a caption says it whole)."""
    return clip(text, 40 if font_size() == NORMAL_FONT else 18)


def stacked() -> bool:
    """Whether `side_by_side` puts its charts one under the other (Large text)."""
    return bool(st.session_state.get(KEY_LARGE))


def side_by_side(count: int | list[float], name: str) -> list:
    """`count` columns (or columns as wide as a list's parts) for charts that sit side by side, or, in Large
    text, as many containers one under the other: in a column of a projected page a chart's labels at that size
    leave its plot ~150 px wide.

    The columns stand in a container keyed by `name` (unique on its page), which the style rule of
    `still_placeholders` stacks where it is under 700 px wide: a rule on these few rows, not a `:has()` rule
    that the browser would check on every row of every page as it changes, the lecture's Attention page (which
    has no such row) included (docs/benchmarks.md, section 10)."""
    if stacked():
        return [st.container() for _ in range(count if isinstance(count, int) else len(count))]
    with st.container(key=f"side-by-side-{name}"):
        return list(st.columns(count))


def chart_width(half: bool = True) -> int:
    """About how wide (px) a chart is drawn, for how many labels its builder writes (heatmap columns, strip
    rows, bar labels): a column of `side_by_side(2)` (`half`) or the page's width; in Large text, where
    side-by-side charts stack, a 1024 px projector's page with the sidebar open. Too many labels for the real
    width run together; too few only leave gaps between them."""
    if half and not stacked():
        return 400  # a half of 340 to 500 px: under 700 px of page the halves stack (still_placeholders)
    return charts.page_px(font_size())


def later(build: Callable[..., pd.DataFrame], *args: Any, **kwargs: Any) -> functools.partial:
    """`build(*args, **kwargs)`, called only when the CSV is asked for (for tables too big to make on every
    rerun). `build` must be a function of a module, not of a page script.

    Why a partial and not a page's own function or lambda: Streamlit keeps a download's callable as long as the
    session shows it, and a function defined in a page script keeps that page's whole namespace alive with it
    (its analysis: ~170 MB for a 512-token text on bert-base), outside the cache's byte budget. So this holds
    only its arguments, arrays copied out of any larger buffer they are views of."""

    def own(value: Any) -> Any:
        return np.array(value) if isinstance(value, np.ndarray) and value.base is not None else value

    return functools.partial(build, *map(own, args), **{k: own(v) for k, v in kwargs.items()})


def _of_a_page(fn: Callable | None) -> bool:
    """Whether `fn` was defined in a page script (Streamlit runs every script as module `__main__`)."""
    inner = fn.func if isinstance(fn, functools.partial) else fn
    return getattr(inner, "__module__", None) == "__main__"


def isolated(text: str) -> str:
    """User text set in a line of the app's own words, its direction its own (Unicode's first-strong isolate):
    "Masked: " before a Hebrew sentence laid it out left to right, and read right to left the mask stood
    elsewhere than in the sentence."""
    return f"\u2068{text}\u2069"


def csv_text(frame: pd.DataFrame) -> str:
    """A table as CSV with CRLF line ends (RFC 4180): pandas' default "\\n" left a lone "\\r" a link can carry into
    the typed text unquoted, and Python's csv reader and spreadsheets broke the row there. It begins with a UTF-8
    byte-order mark, as Streamlit's own table export does: without it Excel reads a CSV as the system's code
    page, and Arabic, Chinese or an emoji in the pieces turned to mojibake (read it back with "utf-8-sig")."""
    return "\ufeff" + frame.to_csv(index=False, lineterminator="\r\n")


def show_figure(
    fig: go.Figure,
    *,
    key: str,
    data: pd.DataFrame | Callable[[], pd.DataFrame] | None = None,
    filename: str = "bertscope",
    on_select: Callable[[], None] | None = None,
    caption: str | None = None,
) -> None:
    """Draw a figure with plotly's toolbar (PNG or SVG, per the sidebar option) and a CSV of its numbers.

    `data` is a DataFrame, or `later(...)` for one made only when asked for; `on_select` a function of a module
    or a partial of one. Streamlit keeps both for as long as the session shows the figure, so neither may be
    defined in the page script: it would keep the page's analysis alive past the cache's budget (see `later`).
    """
    for name, fn in (("data", data), ("on_select", on_select)):
        if callable(fn) and _of_a_page(fn):
            raise TypeError(
                f"show_figure({name}=...) was given a function defined in a page script, which would keep the "
                "page's results alive for as long as the session shows the figure; pass ui.later(...) or a "
                "partial of a module's function"
            )
    fmt = st.session_state.get(KEY_IMAGE_FORMAT) or "png"
    config = {
        "displaylogo": False,
        "toImageButtonOptions": {"format": fmt, "filename": filename, "scale": 2 if fmt == "png" else 1},
    }
    if on_select is not None:
        st.plotly_chart(fig, key=key, config=config, on_select=on_select, selection_mode="points")
    else:
        st.plotly_chart(fig, key=key, config=config)
    if caption:
        st.caption(caption)
    if data is not None:

        def csv() -> str:
            return csv_text(data() if callable(data) else data)

        st.download_button(
            "Download CSV",
            data=csv,
            file_name=f"{filename}.csv",
            mime="text/csv",
            key=f"{key}_csv",
            on_click="ignore",
            icon=":material/download:",
        )


def offer_meant_model(previous: str | None, typed: str, key: str, button: str) -> None:
    """A "Did you mean …?" button under a model name that failed to load (`models.meant_name`), which puts the
    meant name into the model box `key` (the sidebar's, or Compare's second)."""
    meant = models.meant_name(previous, typed)
    if meant is not None:
        st.button(
            f"Did you mean {md_escape(meant)}?", key=button, on_click=inputs.use_model, args=(meant, key)
        )


def page_model(need_text: bool = True) -> tuple[models.ActiveModel, inputs.Inputs]:
    """The model and inputs for a page, or an inline message and `st.stop()` when either is missing."""
    active = models.active_model()
    if active is None:
        st.info("No model is loaded: pick one that loads in the sidebar (the message there says why).")
        stop()
    typed = inputs.current_inputs()
    mask = active.model.tokenizer.mask_token
    given = inputs.with_mask_token(typed, mask)
    for note in given.notes:
        st.warning(note)
    if given != typed:
        spelled = " and ".join(inputs.other_mask_spellings(typed, mask))
        st.caption(md_escape(f"{spelled} is read as {mask}, this model's mask token."))
    if need_text and given.text_a is None:
        st.info("Type a sentence in the sidebar (Sentence A) to analyse it.")
        stop()
    return active, given


def analysis_or_stop(
    active: models.ActiveModel,
    text: str,
    pair: str | None = None,
    *,
    stop_on_error: bool = True,
    notes: bool = True,
    unknown_note: bool = True,
    who: str | None = None,
):
    """The cached analysis, or the core's reason shown inline (never a traceback) and the page stopped
    (stop_on_error=False: None returned instead, for a page whose other sections do not need this text).
    notes=False leaves the truncation and untrained-position notes to a page that runs a different text (Masked words),
    unknown_note=False the unknown-piece note to a page that says it its own way (Tokens). `who`: the model
    the notes are about, where a page runs two (Compare's two "input cut" warnings named neither side)."""
    import bert_core

    try:
        result = cache.analyze(active, text, pair)
    except bert_core.BertScopeError as exc:
        st.error(user_message(exc))
        if not stop_on_error:
            return None
        stop()
    if notes:
        length_notes(active, result, who=who)
    if notes and unknown_note:
        unknown_pieces_note(active, text, pair)
    return result


def lines_analysis(active: models.ActiveModel, lines: list[str]) -> cache.Lines | None:
    """The vectors of a list page's lines, with the lines left out and the untrained-position note shown;
    None, after an inline error, when the run failed."""
    import bert_core

    try:
        batch = cache.analyze_lines(active, lines)
    except bert_core.BertScopeError as exc:
        st.error(user_message(exc, text_name="a sentence"))
        return None
    if batch.rejected:
        left_out = [
            f"sentence {n + 1} ({user_message(r, text_name='it', sentence=False)})" for n, r in batch.rejected
        ]
        st.warning("Left out, nothing to analyse: " + "; ".join(left_out))
    if batch.results:
        untrained_positions_note(
            active, max(len(r.tokens) for r in batch.results), what="The longest sentence"
        )
    unknown_pieces_lines_note(active, lines)
    return batch


def truncation_said(enc) -> str:
    """Which sentence of a cut Encoding (or Analysis) lost its end, and how many pieces: with a pair the
    longer sentence loses pieces first (transformers' "longest_first"), so "the end" alone sent a reader to
    sentence B while A had been cut and B kept whole."""
    cut = transforms.pieces_cut(enc)
    pieces = lambda n: f"{n} piece{'s' if n != 1 else ''}"  # noqa: E731
    if not enc.pieces_before_truncation[1]:
        return f"the end of sentence A was cut off ({pieces(cut[0])})"
    if cut[0] and cut[1]:
        return f"the ends of both sentences were cut off ({pieces(cut[0])} of A, {pieces(cut[1])} of B)"
    lost, whole = ("A", "B") if cut[0] else ("B", "A")
    return f"the end of sentence {lost} was cut off ({pieces(max(cut))}); sentence {whole} is whole"


def length_notes(active: models.ActiveModel, enc, *, who: str | None = None, counted: str = "") -> None:
    """The truncation and untrained-position warnings for an Encoding or an Analysis; `who` names the model,
    `counted` says how the pieces were counted where the page fed the model another text than typed (Masked
    words' hidden words, one mask each: its 499 pieces stood beside the other pages' 502 unexplained)."""
    if enc.truncated:
        st.warning(
            (f"{md_escape(who)}: the input" if who else "The input")
            + f" has {enc.num_tokens_before_truncation} pieces{md_escape(counted)}; the model reads at most "
            f"{len(enc.tokens)}, so {truncation_said(enc)}."
        )
    untrained_positions_note(
        active, len(enc.tokens), what=f"{md_escape(who)}: this input" if who else "This input"
    )


IG_GAP_WARNING = 0.05  # a completeness gap past this share of the change is said: the colours are approximate


def attribution_note(explained, score_name: str) -> None:
    """Under a saliency strip: the number explained (`score_name`, e.g. "the logit"), and for integrated
    gradients how closely the attributions add up to its change from the baseline, with a warning when not."""
    if explained.method != "integrated_gradients":
        st.caption(f"Explained: {score_name}, {explained.score:.3f} for the input. {charts.STRIP_COLOURS}")
        return
    change = explained.score - explained.baseline_score
    gap = explained.completeness_gap
    share = (
        ""
        if not change
        else " (under 0.1% of it)"
        if gap < 0.001 * abs(change)
        else f" ({gap / abs(change):.1%} of it)"
    )
    # "within 0.0000" read as a contradiction of "(under 0.1% of it)": a gap below the 4th decimal is said so
    within = f"within {gap:.4f}" if gap >= 0.00005 else "within 0.0001"
    # and "a change of -0.000" as no change, beside a share of it: a small one keeps two digits, as bars do
    changed = (
        f"{change:+.3f}"
        if not 0 < abs(change) < 0.0005
        else f"{'+' if change > 0 else ''}{charts.small_number(change)}"
    )
    st.caption(
        f"Explained: {score_name}, {explained.score:.3f} for the input and {explained.baseline_score:.3f} at the "
        f"baseline, a change of {changed}; the attributions add up to it {within}{share}. "
        + charts.STRIP_COLOURS
    )
    if gap > IG_GAP_WARNING * abs(change) and gap > 1e-3:
        st.warning(
            f"The attributions miss the change by more than {IG_GAP_WARNING:.0%}: the path from the baseline "
            f"bends more than {cache.IG_STEPS} steps follow here, so read the colours as approximate."
        )


def unknown_typed(active: models.ActiveModel, text: str, pair: str | None = None) -> list[str]:
    """What was typed where the model reads its unknown piece, in order, repeats kept ([] without one)."""
    unk = active.model.tokenizer.unk_token
    if unk is None:
        return []
    import bert_core

    try:
        enc = active.model.encode(text, pair)  # tokenising only
    except bert_core.BertScopeError:  # the page says what is wrong with the text
        return []
    typed = [
        (pair if seq == 1 else text)[int(a) : int(b)]
        for token, seq, (a, b) in zip(enc.tokens, enc.sequence_ids, enc.offsets, strict=True)
        if token == unk and seq is not None
    ]
    return [u for u in typed if u != unk]  # a typed [UNK] is the piece itself, not a gap in the vocabulary


def unknown_pieces_note(active: models.ActiveModel, text: str, pair: str | None = None) -> None:
    """Say which typed characters the model reads as its unknown piece (most vocabularies have no emoji; a
    small one, like the demo model's, no accented or non-Latin letters): the page's answer then rests on
    [UNK], not on what was typed, and two sentences of different emoji are the same input."""
    _unknown_caption(active, [f"'{u}'" for u in dict.fromkeys(unknown_typed(active, text, pair))])


def unknown_pieces_lines_note(active: models.ActiveModel, lines: list[str]) -> None:
    """unknown_pieces_note for a list page's sentences, each unknown text with the sentences it is in."""
    where: dict[str, list[int]] = {}
    for n, line in enumerate(lines):
        for typed in dict.fromkeys(unknown_typed(active, line)):
            where.setdefault(typed, []).append(n + 1)
    _unknown_caption(
        active,
        [
            f"'{u}' (sentence{'s' if len(ns) > 1 else ''} {', '.join(map(str, ns))})"
            for u, ns in where.items()
        ],
    )


UNKNOWN_NAMED = 8  # typed texts a note names before "and N more"


def _unknown_caption(active: models.ActiveModel, named: list[str]) -> None:
    if named:
        it = "it" if len(named) == 1 else "them"
        unk = active.model.tokenizer.unk_token
        # Chinese sentences on an English vocabulary named fifteen characters, six lines in Large text
        shown = named[:UNKNOWN_NAMED] + (
            [f"{len(named) - UNKNOWN_NAMED} more"] if len(named) > UNKNOWN_NAMED else []
        )
        st.caption(
            md_escape(f"This model's vocabulary has no piece for {', '.join(shown)}: it reads {it} as {unk}.")
        )


def untrained_positions_note(active: models.ActiveModel, length: int, *, what: str = "This input") -> None:
    """Warn when an input reaches positions the model never saw in pre-training (recorded for models
    BERTScope trained, such as the demo model): what it computes there is not what it learned."""
    trained = active.model.info.trained_length
    if trained is not None and length > trained:
        st.warning(
            f"{what} has {length} pieces, but this model was pre-trained on inputs of at most {trained}: "
            f"positions {trained} and beyond were never trained, so attention, predictions and vectors there "
            "mean little. Use shorter text, or a model pre-trained on longer inputs."
        )


def no_mlm_head(info, cannot: str) -> None:
    """The inline note for a page that needs the masked-LM head on a checkpoint without one; an ELECTRA
    discriminator is pointed to what it does instead. `cannot`: what the page then cannot do."""
    rtd = (
        " It is a discriminator: it spots replaced tokens instead (the Sentence vector & NSP page); its "
        "generator checkpoint guesses masked words."
        if "rtd" in info.heads
        else ""
    )
    # ELECTRA's own "pre-training" checkpoint (ElectraForPreTraining) is the discriminator: no MLM head either.
    load = "a masked-LM checkpoint" if rtd else "a masked-LM or pre-training checkpoint"
    st.info(
        md_escape(
            f"This {info.architecture_name} checkpoint has no MLM head (masked-language model), so it cannot {cannot}."
            f"{rtd} Load {load}, e.g. bert-base-uncased, roberta-base or the demo model."
        )
    )


def model_notice(active) -> None:
    """The note that what runs is not what was asked for, with its reason folded under it where it has one."""
    if active.notice:
        st.warning(md_escape(active.notice))
    if active.notice_why:
        with st.expander("Why"):
            st.caption(user_message(active.notice_why))


def percent(p: float) -> str:
    """A probability as a percentage that never reads as certainty it is not: 0.9989 is "99.9%", not "100%"."""
    text = f"{p:.0%}"
    if text in ("100%", "0%") and 0 < p < 1:
        text = f"{p:.1%}"  # judged by what it prints: 0.9995 printed as "100.0%"
        if text in ("100.0%", "0.0%"):
            text = ">99.9%" if p > 0.5 else "<0.1%"
    return text


def layers_text(info) -> str:
    """'12 layers' for a model card, and for ALBERT that they run one set of weights, which its architecture
    name alone did not say (the charts show 12 layers' maps either way)."""
    sets = info.layer_weight_sets
    layers = counted(info.num_layers, "layer")  # a lab's 1-layer model read "1 layers"
    if sets is None or sets >= info.num_layers:
        return layers
    shared = "one set of weights" if sets == 1 else f"{sets} sets of weights"
    return f"{layers} sharing {shared}"


def heads_text(info) -> str:
    return counted(info.num_heads, "head")


def token_labels(tokens: list[str], style: PieceStyle | None = None) -> list[str]:
    """Tokens numbered for selectors and charts: '3: bank', each piece as `style` shows it ('3: ␣bank' for
    RoBERTa's 'Ġbank')."""
    shown = tokens if style is None else [style.display(t) for t in tokens]
    return [f"{i}: {t}" for i, t in enumerate(shown)]
