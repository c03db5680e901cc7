"""Task: what a fine-tuned head predicts — classes, tags, an answer span, a ranked choice — and why: a
saliency strip over the tokens and, for classifiers, the first token's attention per layer."""

from __future__ import annotations

import re
import unicodedata

import numpy as np
import pandas as pd
import streamlit as st

import bert_core
from app import cache, charts, models, transforms, ui
from app import inputs as inputs_module
from bert_core.pieces import draws_nothing

EXAMPLES = (
    "the bundled @demo-senses (which sense of an ambiguous word), @demo-roles (who, where, when) or @demo-qa "
    "(questions over a short passage) in the model picker; or from the hub textattack/bert-base-uncased-SST-2 (sentiment), dslim/bert-base-NER (entities), "
    "distilbert-base-cased-distilled-squad or deepset/roberta-base-squad2 (question answering), "
    "roberta-large-mnli (sentence pairs), or a head trained here with bertscope finetune"
)
# start and end count the passage's characters; the explanation below names pieces ("token 24"), which a bare
# "start 57" beside it left to guess
# The probability is a softmax within the answer's window (the whole passage where it fits in one): the
# column says so in every CSV, whatever the passage's length, so a script reading it finds one name.
ANSWER_COLUMNS = ["answer", "start (character)", "end (character)", "score", "probability (in its window)"]
METHODS = {"integrated_gradients": "integrated gradients", "gradient_x_input": "gradient × input"}


def _lines_said(lines: list[int]) -> str:
    return f"line{'s' if len(lines) > 1 else ''} {', '.join(map(str, lines))}"


st.header("Task")
active, inputs = ui.page_model(need_text=False)  # a QA head's empty question is told what A is, below
info = active.model.info
style = info.piece_style
fs = ui.font_size()
if info.task is None:
    st.info(ui.md_escape(f"This checkpoint has no fine-tuned task head. Load one, e.g. {EXAMPLES}."))
    # One click for the bundled heads: typing "@demo-senses" over "@demo" in the picker lost the text at the
    # "-" (Streamlit's selectbox starts afresh where the typed text was its value).
    bundled = [source for source in models.bundled_models() if source in models.DEMO_TASKS]
    if bundled:
        for column, source in zip(st.columns(len(bundled)), bundled, strict=True):
            column.button(
                f"Use {source}", key=f"task_use_{source}", on_click=inputs_module.use_model, args=(source,)
            )
    ui.stop()

if inputs.text_a is None and info.task != "qa":
    st.info("Type a sentence in the sidebar (Sentence A) to analyse it.")
    ui.stop()
text, pair = inputs.text_a, inputs.text_b
windowed = False  # a QA passage longer than the model reads, read in overlapping windows
b_cut = inputs.cut_b  # characters of the passage cut off before tokenising
# A choice head reads the prompt with each choice, never A with B: their lengths are said in its branch.
if text and info.task != "choice":
    ui.unknown_pieces_note(active, text, pair)
    try:
        enc = active.model.encode(text, pair)  # tokenising only
    except bert_core.BertScopeError:
        pass  # the prediction below says what is wrong with the input
    else:
        # and the question leaves the passage room: a question too long for the model is an error below
        specials = sum(1 for s in enc.sequence_ids if s is None)
        room = enc.pieces_before_truncation[0] + specials < len(enc.tokens)
        windowed = info.task == "qa" and enc.truncated and bool(pair) and room
        if windowed:
            # Not "the end of sentence B was cut off": the answer came from that end (window 5 of 8).
            st.caption(
                f"The question and passage are {enc.num_tokens_before_truncation} pieces, more than the "
                f"{len(enc.tokens)} the model reads at once, so the passage is read in overlapping windows, as "
                "transformers' pipeline reads it: "
                + (
                    f"all of its first {len(pair):,} characters are read (the rest was cut off, as said above)"
                    if b_cut
                    else "all of it is read"
                )
                + ", and each answer is scored in its own window."
            )
            # said of a window: "This input has 128 pieces" sat under "the question and passage are 200"
            ui.untrained_positions_note(active, len(enc.tokens), what="A full window")
        elif room or info.task != "qa" or not pair:
            # (a question with no room for the passage is the error below, not "the end of A was cut off")
            ui.length_notes(active, enc)
if info.task == "qa":
    st.caption(
        "A question-answering head scores every context piece as the answer's start and end; the answer is the "
        "span with the best start + end score (Devlin et al., 2019), widened to the whole words its first and last "
        "pieces fall in, as transformers' pipeline shows it. It always picks a span, so a question the "
        "passage does not answer gets one too. Its probability can tell only for a head trained on questions "
        "without an answer (SQuAD 2.0); one trained on answerable questions alone, as @demo-qa, is often sure "
        "of a wrong span. Sentence A is the question, B the passage."
    )
    if not text or not text.strip() or not pair:
        st.info(
            "Type the question as sentence A and the passage as sentence B in the sidebar, or load "
            "'Ask a passage a question' from the sidebar's Examples."
        )
        ui.stop()
    start = ui.start("task_top_k", 3, lambda v: isinstance(v, int) and 1 <= v <= 10)
    top_k = st.slider("Answers to show", 1, 10, start, **ui.bound("task_top_k"), persist_state="session")
    try:
        answers = cache.task_prediction(active, "answer", text, pair, top_k)
    except bert_core.BertScopeError as exc:
        st.error(ui.user_message(exc))
        ui.stop()
    best = answers[0]
    if windowed:
        # 0.34 above 0.9994: each window's own softmax, which ranks nothing across windows
        st.caption(
            "Answers rank by score: a probability is a softmax within the answer's own window, so two answers from "
            "different windows can't be compared by it."
        )
    # A metric's value is Markdown: the passage's words are shown as written (`2*3*4`, `$x$`), not rendered.
    # An answer of zero-width or space characters alone ("\u200b") left the metric blank: named by its code points.
    visible = any(not (c.isspace() or unicodedata.category(c) == "Cc" or draws_nothing(c)) for c in best[0])
    st.metric(
        "Answer",
        ui.md_escape(best[0]) if visible else f"(no visible characters: {ascii(best[0])})",
        f"probability {ui.percent(best[4])}",
        delta_color="off",
        delta_arrow="off",  # a probability, not a change: an arrow read as a rise
        help=f"score (start + end logit) {best[3]:.3f}; probability: the start's softmax over the first token and the "
        "passage's pieces times the end's, as transformers' pipeline gives it (a share on the first token means "
        "no answer)",
    )

    # a passage cut before tokenising ends in what was not read, not as if it ended there
    tail = [(f" … {b_cut:,} more characters", charts.NOT_READ)] if b_cut else []
    ui.show_figure(
        charts.span_chips(
            [*transforms.labelled_fragments(pair, [(best[1], best[2], "answer")]), *tail],
            title="The answer in the passage",
            font_size=fs,
        ),  # fmt: skip
        key="task_answer",
        data=pd.DataFrame(answers, columns=ANSWER_COLUMNS),
        filename="answers",
    )
    ui.table(pd.DataFrame(answers, columns=ANSWER_COLUMNS),
                 key="task_answers")  # fmt: skip
elif info.task == "choice":
    st.caption(
        "A multiple-choice head scores the prompt (sentence A) followed by each choice; the softmax over the "
        "scores ranks them." + (" Sentence B is not read: each choice takes its place." if pair else "")
    )
    raw = st.text_area(
        "Choices, one per line",
        value="to deposit money\nto fish in the river",
        **ui.bound("task_choices"),
        persist_state="session",  # typed choices survive a visit to another page
        height=ui.box_height(ui.DEFAULT_BOX_PX),
    )
    lines = [(n, c.strip()) for n, c in enumerate(raw.splitlines(), start=1) if c.strip()]
    choices = [c for _, c in lines]
    if len(choices) < 2:
        st.info("Type at least two choices, one per line.")
        ui.stop()
    try:
        ranked = cache.task_prediction(active, "choose", text, tuple(choices))
    except bert_core.BertScopeError as exc:
        # the core's "choices[1]" is the second choice, named by its line in the box (blank lines are skipped);
        # nobody typed a Sentence B here
        st.error(
            ui.user_message(
                re.sub(r"\bchoices\[(\d+)\]", lambda m: f"The choice on line {lines[int(m[1])][0]}", str(exc))
            )
        )
        ui.stop()
    # Each (prompt, choice) pair is cut to the model's length on its own: two choices that differ only past
    # the cut scored alike, 0.5 each, with no word on the page. A prompt cut beside the choices is said once:
    # the choices do not differ there.
    prompt_cut, choice_cut, longest = {}, {}, 0  # line -> pieces of the prompt / of the choice not read
    for n, choice in lines:
        read = active.model.encode(text, choice)  # tokenising only
        longest = max(longest, len(read.tokens))
        for part, cut in zip((prompt_cut, choice_cut), transforms.pieces_cut(read), strict=True):
            if cut:
                part[n] = cut
    reads = f"the model reads {active.model.tokenizer.max_length} pieces of the prompt and a choice together"
    if prompt_cut:
        beside = (
            "every choice"
            if len(prompt_cut) == len(lines)
            else f"the choices on {_lines_said(list(prompt_cut))}"
        )
        st.warning(
            f"Beside {beside}, the end of the prompt went unread ({max(prompt_cut.values())} pieces at most): {reads}."
        )
    if choice_cut:
        st.warning(
            f"The end of the choice on {_lines_said(list(choice_cut))} went unread ({reads}): choices that differ "
            "only there score alike."
        )
    ui.untrained_positions_note(active, longest, what="The longest prompt and choice")
    ui.unknown_pieces_note(active, text, "\n".join(choices))  # (the page's note above reads no choice)
    frame = pd.DataFrame(ranked, columns=["choice", "probability"])
    ui.show_figure(
        charts.bars(
            list(frame["choice"]),
            list(frame["probability"]),
            title="Choices, best first",
            value_name="probability",
            range_max=1.0,
            font_size=fs,
        ),  # fmt: skip
        key="task_choose",
        data=frame,
        filename="choices",
    )
elif info.task == "tag":
    st.caption("A token-classification head labels every piece; a word (what lies between spaces, so "
               "\"U.S.\" is one) takes its first piece's label, and B-/I- labels merge into entities, less the "
               "punctuation the head itself labels O at a word's end (\"Norway.\" can be the entity "
               "\"Norway\").")  # fmt: skip
    try:
        tags = cache.task_prediction(active, "tag", text, pair)
        entities = cache.task_prediction(active, "entities", text, pair)
    except bert_core.BertScopeError as exc:
        st.error(ui.user_message(exc))
        ui.stop()
    read = active.model.encode(text, pair)  # tokenising only: where a long text was cut
    for sentence, typed in ((0, text), (1, pair)):
        if typed is None:
            continue
        own = [e for e in entities if e.sentence == sentence]
        spans = [(e.start, e.end, e.label) for e in own]
        cut = transforms.read_end(read, sentence)
        if cut is not None:  # the cut-off end drawn as not read, not as text read and found to hold no entity
            spans.append((cut, len(typed), charts.NOT_READ))
        ui.show_figure(
            charts.span_chips(
                transforms.labelled_fragments(typed, spans),
                title=f"Entities in sentence {'AB'[sentence]}",
                font_size=fs,
                all_labels=active.model.entity_types(),  # one colour per type in A's chart and B's
            ),  # fmt: skip
            key=f"task_entities_{'ab'[sentence]}",
            # this chart's sentence, named as its title names it (A or B, not the core's 0 or 1)
            data=pd.DataFrame([{**e.__dict__, "sentence": "AB"[e.sentence]} for e in own]),
            filename=f"entities_sentence_{'AB'[sentence]}",
        )
    # The head labels special tokens too, but was never trained on them (their targets are ignored) and no
    # word takes their label: a [SEP] read as B-PERSON at 0.99 read as a finding to a room. (The table and
    # the saliency's choices below list these pieces, by their positions.)
    # A typed [SEP] is left out as well: no word takes its label either (`entities`), and as the first piece
    # listed it was the one explained by default, "[SEP] → B-TIME".
    typed = set(active.model.typed_special_ids())
    special = read.special_tokens_mask | np.isin(read.input_ids, list(typed))
    tagged = [(i, token, label, p) for i, (token, label, p) in enumerate(tags) if not special[i]]
    tag_table = pd.DataFrame(tagged, columns=["position", "token", "label", "probability"])
    tag_table.insert(2, "shown as", [style.display(t) for t in tag_table["token"]])
    ui.table(tag_table, key="task_tags")
    st.caption(
        "Every piece but the special tokens (typed ones too), by its position among the pieces: the head labels "
        "those too, but it is not trained on them and no word takes their label."
    )
else:
    st.caption(
        "A sequence-classification head reads the first token's vector (through the pooler for BERT and ALBERT) "
        "and scores each label"
        + (
            " independently (multi-label: a sigmoid per label)."
            if info.task_kind == "multi_label_classification"
            else "; for regression it outputs the value itself."
            if info.task_kind == "regression"
            # as the QA caption says its head always picks a span: "?!..." got a label at 0.30 with no word
            # of note (a multi-label head may give none, a regression head has no labels)
            else "; the softmax turns the scores into probabilities. It always gives one of its labels, whatever "
            "the text, even one unlike anything it was trained on."
        )  # fmt: skip
    )
    try:
        scores = cache.task_prediction(active, "classify", text, pair)
    except bert_core.BertScopeError as exc:
        st.error(ui.user_message(exc))
        ui.stop()
    frame = pd.DataFrame(
        scores, columns=["label", "value" if info.task_kind == "regression" else "probability"]
    )
    ui.show_figure(
        charts.bars(
            list(frame["label"]),
            list(frame.iloc[:, 1]),
            title="Prediction",
            value_name=frame.columns[1],
            range_max=None if info.task_kind == "regression" else 1.0,
            font_size=fs,
        ),  # fmt: skip
        key="task_classify",
        data=frame,
        filename="classification",
    )


def open_on_attention() -> None:
    # In this session (a markdown link opened a new tab, a new session on the server's default model): the
    # model, the sentences and every page's choices come along, and the analysis is already cached.
    st.page_link(
        "views/attention.py", label="Open this input on the Attention page", icon=":material/arrow_forward:"
    )


if info.task == "choice":
    # not a "Why" header, the methods' caption and a Method radio (written into the link) over nothing
    st.info("Saliency is offered for classifiers, taggers and question answering, not for choices.")
    open_on_attention()
    ui.stop()
st.subheader("Why")
explained_score = (
    "the output value itself"
    if info.task_kind == "regression"
    else "a label's logit, before its sigmoid"
    if info.task_kind == "multi_label_classification"
    else "a logit, before the softmax"
)
st.caption(
    "Integrated gradients (Sundararajan et al., 2017) credit each token with its share of the change in the "
    f"explained score ({explained_score}) between a baseline (every word replaced by padding, the "
    "special tokens kept) and the input, through the word embeddings only (positions and segments held "
    "fixed). The split depends on that baseline, and padding is not a neutral input: in training the model "
    "never attended to it. Gradient × input multiplies the gradient at the input by the word "
    "embedding itself: a quick local reading with no baseline, which credits special tokens too and can "
    "disagree with integrated gradients, even in sign."
)
ui.option_by_name("task_method", METHODS)
method = st.radio(
    "Method",
    list(METHODS),
    format_func=METHODS.get,
    **ui.bound("task_method"),
    horizontal=True,
    persist_state="session",
)
target = None  # the head's own default: a classifier's predicted class
if info.task == "qa":
    ENDS = {"start": "the answer's start", "end": "the answer's end"}
    ui.option_by_name("task_qa_end", ENDS)
    target = st.radio(
        "Explain", list(ENDS), **ui.bound("task_qa_end"), horizontal=True, persist_state="session",
        format_func=ENDS.__getitem__,
    )  # fmt: skip
elif info.task == "classify" and len(scores) > 1:
    # Any label, not only the best: a multi-label head can give several above one half, and "why not NEG?"
    # is a question too. The head's own pick (the largest score) by default, followed as the text changes.
    names = [label for label, _ in scores]
    best_label = max(scores, key=lambda pair: pair[1])[0]
    ui.follow_default("task_class", best_label, lambda v: v in names)
    start = ui.start("task_class", best_label, lambda v: v in names)
    target = st.selectbox(
        "Explain the label", names, index=names.index(start), **ui.bound("task_class"), persist_state="session",
        help="The head's prediction by default; any other label's score can be explained too.",
    )  # fmt: skip
elif info.task == "tag":
    # Any piece's label, not only the first's: the tagger's answer is one label per piece. Labels as choices
    # ("3: kitchen → B-PLACE"), so a kept one the new text lacks starts over (ui.start).
    pieces = {f"{i}: {style.display(token)} → {label}": (i, label) for i, token, label, _ in tagged}
    if pieces:
        # The piece whose label the first entity takes (its word's first, or the one after an opening bracket):
        # the first piece labelled other than O could be "##m" of "Tom", whose word is no entity.
        at = {}
        for i, (sentence, (start, end)) in enumerate(
            zip(read.sequence_ids, read.offsets.tolist(), strict=True)
        ):
            # never RoBERTa's lone "Ġ", which no word takes a label of
            if sentence is not None and end > start:
                at.setdefault((sentence, start), i)
        giving = next((at[e.sentence, e.start] for e in entities if (e.sentence, e.start) in at), None)
        first = next(
            (c for c, (i, _) in pieces.items() if i == giving),
            next((c for c, (_, label) in pieces.items() if label != "O"), next(iter(pieces))),
        )
        ui.follow_default("task_tag_piece", first, lambda v: v in pieces)  # the new text's first entity
        start = ui.start("task_tag_piece", first, lambda v: v in pieces)
        chosen = st.selectbox(
            "Explain the label of", list(pieces), index=list(pieces).index(start),
            **ui.bound("task_tag_piece"), persist_state="session",
        )  # fmt: skip
        target = pieces[chosen]
try:
    explained = cache.attribution(active, text, pair, target=target, method=method)
except bert_core.BertScopeError as exc:
    st.info(ui.user_message(exc))
    explained = None
if explained is not None:
    # Numbered as everywhere else ("17: on"), so the piece the title names is found without counting.
    shown = ui.token_labels(explained.tokens, style)
    ui.show_figure(
        charts.saliency_strip(
            shown,
            explained.scores,
            title=f"Attribution to {explained.target}",
            font_size=fs,
            width_px=ui.chart_width(half=False),
        ),
        key="task_saliency",
        # numbered as the strip names them: "the" three times told no row from another
        data=pd.DataFrame(
            {"position": range(len(shown)), "token": explained.tokens, "attribution": explained.scores}
        ),
        filename="saliency",
    )
    score_name = "the output" if info.task_kind == "regression" else "the logit"
    if info.task == "qa":
        # The one logit explained, not the answer's score: "the logit (the answer's score adds ...), 4.481"
        # read as the answer's score beside a table saying 9.790.
        piece = "first" if target == "start" else "last"
        score_name = (
            f"the {target} logit at the answer's {piece} piece (the answer's score, {best[3]:.3f}, is its start "
            "logit plus its end logit)"
        )
    ui.attribution_note(explained, score_name)

if info.task == "classify":
    result = ui.analysis_or_stop(active, text, pair, notes=False)
    first_row = result.attentions[:, :, 0, :].mean(axis=1)  # (L, N, S) -> (L, S): heads averaged
    layers = [f"layer {i + 1}" for i in range(result.num_layers)]
    labels = ui.token_labels(result.tokens, style)
    ui.show_figure(
        charts.heatmap(
            first_row,
            layers,
            labels,
            title="The first token's attention, mean of the heads, layer by layer",
            zmin=0.0,
            zmax=float(np.max(first_row)) or 1.0,
            value_name="attention",
            font_size=fs,
            numbered=True,  # rows "layer 3", columns already "3: bank": no 0-based position before a layer
        ),  # fmt: skip
        key="task_cls_attention",
        data=pd.DataFrame(first_row, columns=labels).assign(layer=layers),  # numbered: "the" twice is two
        filename="first_token_attention",
        caption="Where the first token looks is not why the head decided: attention weights leave out the size "
        "of what each token passes on, and the layers below have mixed the tokens already (Inside the model: "
        "Value-weighted attention, Rollout & flow). Integrated gradients above split the score's change from "
        "their baseline among the tokens' word embeddings; gradient × input is a local slope, not a share.",
    )
open_on_attention()
