"""BERTScope's entry: page config, the sidebar (model picker, sentences, display options), navigation.

Run with `bertscope` or `streamlit run app/streamlit_app.py`. Every page reads the model and the sentences
chosen here through `app.models` and `app.inputs`; the chosen values live in the URL, so a link reproduces the view.
"""

from __future__ import annotations

import sys
from pathlib import Path

APP_DIR = Path(__file__).resolve().parent
if str(APP_DIR.parent) not in sys.path:  # `streamlit run app/streamlit_app.py` from a source checkout
    sys.path.insert(0, str(APP_DIR.parent))

import streamlit as st  # noqa: E402
from streamlit.errors import StreamlitAPIException  # noqa: E402

import bert_core  # noqa: E402
from app import inputs, models, server, transforms, ui  # noqa: E402
from app.registry import PAGES  # noqa: E402

try:  # not public API: without it, notes on a link's values may be lost to a rerun
    from streamlit.runtime.scriptrunner_utils.exceptions import RerunException  # noqa: E402
except ImportError:
    RerunException = ()  # type: ignore[assignment,misc]  # (an except clause that catches nothing)

COMPARE_PATH = next(p.url_path for p in PAGES if p.file == "views/compare.py")


def _count(n: int) -> str:
    return f"{n / 1e6:,.1f} M" if n >= 1e6 else f"{n:,}"


def model_picker(hold: models.Hold) -> models.ActiveModel | None:
    """The model selectbox (pick a listed model or type a hub id / directory), loading, and the model card."""
    inputs.strip_typed_name(inputs.KEY_MODEL)
    current = st.session_state.get(inputs.KEY_MODEL) or st.query_params.get(inputs.KEY_MODEL)
    options = models.model_options(current)
    source = st.selectbox(
        "Model",
        options,
        key=inputs.KEY_MODEL,
        bind="query-params",
        accept_new_options=True,
        help="Pick a listed model, or type a hub id (e.g. bert-base-cased) or a local checkpoint directory "
        "and press Enter. `@demo` is the bundled demo model. " + ui.TYPED_NAME_HELP,
    )
    source = inputs.unquoted(source or "") or models.default_model_source()
    store = models.model_store()
    key = models.model_key(source)
    held = hold.active  # this session's model on its previous run
    previous = held.source if held is not None else None
    if held is not None and models.loaded_key(held.source) != models.loaded_key(source):
        # Switching models: this page lets go of its old one first, or a full store (BERTSCOPE_MAX_MODELS)
        # would count it as in use by an open page and refuse the switch. (A failed load leaves no model anyway.)
        hold.active = held = None
    loaded_as = models.loaded_key(source)
    # Nothing slow to show: loaded (and its directory unchanged), or failed a moment ago. A directory rewritten
    # while serving is read again, and that reading gets the progress box like a first load.
    quick = (
        (store.loaded(loaded_as) is not None and not store.changed_on_disk(loaded_as))
        or store.recent_failure(key)
        or store.passing_failure(key)
    )
    try:
        if quick:
            active = models.load_model(source, held=held)
        else:
            with st.status(f"Loading {ui.md_escape(source[-60:])}…", expanded=True) as status:
                line = st.empty()
                try:
                    active = models.load_model(source, progress=lambda msg: line.text(msg), held=held)
                except models.ModelUnavailable:
                    status.update(label="Not loaded", state="error", expanded=False)
                    raise
                # The note below says when what runs is not a fresh read of what was asked for.
                label = "Model loaded" if active.notice is None else "Model loaded (see the note)"
                status.update(label=label, state="complete", expanded=False)
    except models.ModelUnavailable as exc:
        st.error("This model can't be loaded: " + ui.md_escape(exc.reason))
        ui.offer_meant_model(previous, source, inputs.KEY_MODEL, "use_meant_model")
        # A full store: the models open pages use are the ones that load now. Otherwise every bundled model too
        # (only the demo model was offered, while the picker listed its fine-tuned heads).
        alternatives = exc.in_use or [
            s
            for s in dict.fromkeys([*models.loadable_alternatives(source), *models.bundled_models()])
            if s != source
        ]
        if alternatives:
            st.caption("Models that can be loaded here:")
            for i, alt in enumerate(alternatives):
                st.button(
                    f"Use {ui.md_escape(alt)}", key=f"use_model_{i}", on_click=inputs.use_model, args=(alt,)
                )
        # A broken directory is retried by itself once it changes; the button also forces it.
        st.button("Try again", key="retry_model", on_click=models.retry_model, args=(key,))
        return None
    ui.model_notice(active)
    info = active.model.info
    if info.unfinished:
        # a checkpoint of a stopped run looked like the run's result, on every page
        st.caption(
            ui.md_escape(
                f"An unfinished run: its lab saved this checkpoint at {info.unfinished}, so the pages show what "
                "the model had learnt by then."
            )
        )
    pieces = active.model.tokenizer.vocab_size
    if info.vocab_size - pieces > max(64, info.vocab_size // 100):
        # A table padded for speed has a few rows more than the vocabulary (30528 for 30522); thousands more
        # is a vocabulary of another model, which loads without complaint and makes guesses no piece names.
        st.warning(
            f"This model's word table has {info.vocab_size:,} rows but its vocabulary only {pieces:,} pieces: "
            "the vocabulary may belong to another model. Guesses of the rows past it are named by their id."
        )
    weights = models.describe_weights(active.source, info)
    st.caption(ui.md_escape(models.describe_source(active.source) + (f" · {weights}" if weights else "")))
    # The pooler is not a prediction head, but whether there is one decides the Sentence vector page's choices.
    pooler = f"pooler {'✓' if info.has_pooler else '✗'}"
    heads = " · ".join(
        [*(f"{name.upper()} ✓" for name in info.heads), pooler] if info.heads else ["none", pooler]
    )
    if info.device.startswith("cuda"):
        # Neither packed nor bit-identical there: the sums run in another order (tests/bert_core/test_cuda.py).
        arithmetic = f"float32 on {info.device}, not bit-identical: agrees with the CPU to about 1e-4"
    elif not info.device.startswith("cpu"):  # a device no test here has run on (mps, xpu, ...)
        arithmetic = f"float32 on {info.device}, not bit-identical to the CPU's"
    elif info.packed_weights:
        arithmetic = "fast (pre-packed weights, within 1e-5 of transformers)"
    else:
        arithmetic = "exact (bit-identical to transformers on CPU)"
    embedding = f" · embeddings {info.embedding_size}" if info.embedding_size is not None else ""
    lacks = f"  \nno {ui.md_escape(', no '.join(info.lacks))}" if info.lacks else ""
    st.caption(
        f"{ui.md_escape(info.architecture_name)} · {ui.layers_text(info)} · hidden {info.hidden_size}{embedding} · "
        f"{ui.heads_text(info)} · {_count(info.num_parameters)} parameters  \nprediction heads: {heads}{lacks}  \n"
        f"arithmetic: {arithmetic}",
        help="On the CPU, set BERTSCOPE_EXACT=1 (or start with `bertscope --exact`) for the reference's own "
        "arithmetic.",
    )
    return active


def pair_help(active: models.ActiveModel | None) -> str:
    """Sentence B's help: how the loaded model's tokenizer joins a pair, and how it tells the two apart."""
    if active is None:
        return "A second sentence makes a pair."
    model = active.model
    try:
        layout = transforms.pair_template(model.tokenizer.encode("a", "b"))
    except bert_core.BertScopeError:  # a tokenizer with no piece for "a" still lets the user type a pair
        return "A second sentence makes a pair."
    segments = model.config.type_vocab_size
    if segments >= 2:
        told = "segment ids 0 and 1"
    elif segments == 1:
        told = "one segment id for both: only the separators tell them apart"
    else:
        told = "no segment embeddings: only the separators tell them apart"
    return f"A second sentence makes a pair: {layout} ({told})."


def sidebar() -> None:
    with st.sidebar:
        # The sentences first, the model under them, Display last: below the model's card and its notes,
        # Sentence A sat past the bottom of a 1024 x 768 projector's sidebar, scrolled to before every edit in a
        # lecture. Containers are drawn in the order they were made, whatever order they are filled in, so the
        # Display toggle is still read first (the sentence boxes' heights follow Large text, which a link's
        # ?large=true sets only once its toggle is drawn) and the model next (Sentence B's help describes its
        # pairs).
        sentences, chosen, display = st.container(), st.container(), st.container()
        with display:
            with st.expander("Display"):
                ui.link_read(ui.KEY_LARGE)  # "large=yes" was dropped without a word
                st.toggle("Large text (for a projector)", key=ui.KEY_LARGE, bind="query-params")
                st.radio(
                    "Figure download format (plotly's camera button)",
                    ["png", "svg"],
                    key=ui.KEY_IMAGE_FORMAT,
                    horizontal=True,
                )
        hold = models.session_hold()
        with chosen:
            active = hold.active = model_picker(hold)
        with sentences:
            examples = inputs.examples()
            if examples:
                st.selectbox(
                    "Examples",
                    [e.label for e in examples],
                    index=None,
                    placeholder="Load an example…",
                    key=inputs.KEY_EXAMPLE,
                    on_change=inputs.load_example,
                    args=(examples,),
                    help="Fills sentence A (and B) with a ready-made example: senses of 'bank', hidden words, "
                    "a pronoun, sub-word pieces, next-sentence pairs.",
                )
            # The starting sentence is the box's default, so a link leaves it out and an emptied box is in the
            # link as "a=": with "" as the default, an emptied box left no trace, and its link opened on the
            # starting sentence. (Examples write this key too; Streamlit's warning about a widget given both
            # is off, see app/cli.py.) A link's ?a= wins over both.
            st.text_area(
                "Sentence A",
                value=inputs.DEFAULT_TEXT_A,
                key=inputs.KEY_TEXT_A,
                bind="query-params",
                height=ui.box_height(100),
                help=ui.APPLY_HELP,
            )
            # A box of two lines, not one: the Task page's QA passage lives here, and a one-line box showed ~35
            # of its characters. (Like A, it is applied with Ctrl+Enter or a click outside.)
            # A QA head needs B, its passage: "(optional)" said otherwise where the Task page then asked for it.
            # The key alone names the widget, so what was typed stays when the label changes with the model.
            qa = active is not None and active.model.info.task == "qa"
            st.text_area(
                "Sentence B: the passage this QA model answers from" if qa else "Sentence B (optional)",
                value="",
                key=inputs.KEY_TEXT_B,
                bind="query-params",
                height=ui.box_height(96),  # the widget's, label included: 66 px of box in normal text
                help=ui.md_escape(pair_help(active)) + " " + ui.APPLY_HELP,
            )


def main() -> None:
    # Counted as running from the start, sidebar included: the collector freezes the heap only while no run is
    # under way, and a run's objects frozen then would never be freed.
    collector = server.collector()
    collector.before_run()
    try:
        # No page_icon: a Material icon as favicon is fetched from fonts.gstatic.com; the default is local.
        st.set_page_config(page_title="BERTScope", layout="wide")
        ui.still_placeholders()  # first, so it is in place before the placeholders of what follows
        specs = [s for s in PAGES if (APP_DIR / s.file).is_file()]
        # Streamlit serves the default page at the root only: its own path (/tokens) answered "Page not found".
        # A hidden twin answers that path and hands over to the root, parameters and all, so the menu marks the
        # page and its widgets are one page's; the menu's entry keeps the root, and a path of its own that no
        # link uses (each page's path must differ).
        first = specs[0]
        home = st.Page(first.file, title=first.title, url_path=f"{first.url_path}-start", default=True)
        twin = st.Page(first.file, title=first.title, url_path=first.url_path, visibility="hidden")
        pages = [home, *(st.Page(p.file, title=p.title, url_path=p.url_path) for p in specs[1:]), twin]
        page = st.navigation(pages)
        unreadable = inputs.unreadable_numbers()
        if unreadable:
            # Streamlit 1.67 seeds a number box from the link as the session starts and reads "inf" (or "1e400",
            # "nan") as a float it then cannot make a whole number of: the page was lost to an OverflowError.
            # Deleting the parameter does not help (the seed reads the address the session opened with); the
            # page opened again with the address less those parameters does.
            kept = {k: st.query_params.get_all(k) for k in st.query_params if k not in unreadable}
            ui.link_values_dropped({k: st.query_params.get_all(k) for k in unreadable})  # named on the page
            st.switch_page(home if page is twin else page, query_params=kept)
        if page is twin:
            try:
                st.switch_page(home, query_params={k: st.query_params.get_all(k) for k in st.query_params})
            except StreamlitAPIException:
                # A session whose widgets are bound to the URL already (none is, on a link's first run): the
                # URL can't be handed over, so the page is shown on the twin's path.
                pass
        if not page.url_path.startswith(COMPARE_PATH):  # "compare", or "compare-start" were it the first page
            models.leave_second()  # only that page uses a second model: elsewhere it is free to go
        ui.forget_link_record()  # before the sidebar, whose Large text reads the link too
        sidebar()
        ui.large_text_style()
        run_page(page)
    finally:  # st.stop() included: the page's namespace, and its analysis, are garbage from here on
        collector.after_run()


def run_page(page) -> None:
    # above the page: what its widgets made of the link is known once they are made
    ui.place_link_notes(st.empty())
    try:
        page.run()
    except RerunException:
        # a rerun asked for (ui.option_by_name) or a new run that stopped this one part-way: that next run's
        # widgets hold their values already, so what this run read of the link is said by the next one
        ui.carry_link_record()
        raise
    except bert_core.BertScopeError as exc:
        st.error(ui.user_message(exc))
    except Exception as exc:  # noqa: BLE001 - the UI shows a message, never a traceback
        st.error(
            f"Something went wrong on this page ({type(exc).__name__}): {ui.md_escape(str(exc))}. "
            "Your text is kept; try another input or model."
        )
        import logging

        logging.getLogger("bertscope").exception("page failed")
    finally:  # a page's st.rerun() included (its ui.stop() said them already; nothing is drawn after a stop)
        ui.say_link_notes()


main()
