"""Sentence vector & NSP: the pooled first-token vector, how alike several sentences' vectors are, and the
sentence-level heads: BERT's next-sentence prediction, ALBERT's sentence order, ELECTRA's replaced tokens."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

import bert_core
from app import cache, charts, transforms, ui
from app.inputs import EXAMPLES_DIR, MAX_LINES, line_chars, prepare_lines

PRESET_FILE = EXAMPLES_DIR / "sentences.txt"
FALLBACK = "The cat sat on the mat.\nA kitten was sleeping on the rug.\nThe stock market fell sharply today."
POOLED, CLS, MEAN = "pooled", "cls", "mean"  # the radio's values; labels name this model's first token


def preset() -> str:
    try:
        return PRESET_FILE.read_text(encoding="utf-8").strip()
    except OSError:
        return FALLBACK


def sentence_vector(r, kind: str) -> np.ndarray:
    if kind == POOLED and r.pooled is not None:
        return np.asarray(r.pooled)
    if kind == MEAN:
        keep = ~np.asarray(r.special_tokens_mask)
        return r.hidden_states[-1][keep].mean(axis=0)
    return r.hidden_states[-1][0]


st.header("Sentence vector & NSP")
# Only the first and last sections need sentence A; the comparison of typed sentences stands on its own.
active, inputs = ui.page_model(need_text=False)
info = active.model.info
tokenizer = active.model.tokenizer
cls, sep = tokenizer.cls_token, tokenizer.sep_token
# What pre-training trained the pooler for: BERT's NSP, ALBERT's SOP; RoBERTa dropped the sentence task, and
# DistilBERT and ELECTRA have no pooler at all (said below).
POOLER_TASKS = {"BERT": "next-sentence prediction", "ALBERT": "sentence-order prediction"}
# A BERT the pre-training lab trained for sentence order says so by its head
task = "sentence-order prediction" if "sop" in info.heads else POOLER_TASKS.get(info.architecture_name)
# The fine-tuned heads, as the Task page names them
TASK_HEADS = {
    "qa": "question-answering",
    "choice": "multiple-choice",
    "classify": "classification",
    "tag": "tagging",
}
# A fine-tuned classifier or multiple-choice head of the families with a pooler reads the pooled vector, so
# fine-tuning trained the pooler on: "trained only for next-sentence prediction" was false of @demo-senses.
TUNED_HEADS = {k: TASK_HEADS[k] for k in ("classify", "choice")}
if info.task in TUNED_HEADS:
    pre = f"pre-trained for {task}" if task else "untrained by pre-training"
    trained = (
        f"{pre}, it was then fine-tuned with this checkpoint's {TUNED_HEADS[info.task]} head, which reads it"
    )
    weak = "so it holds what that task needed rather than the sentence's meaning"
else:
    trained = f"it was trained only for {task}" if task else "no pre-training task of this family trains it"
    weak = "so it is a weak sentence embedding"
if info.has_pooler:  # without one, the notice below says so instead
    st.caption(
        ui.md_escape(
            f"A pooler passes the last layer's {cls} vector through a dense layer and tanh; {trained}, {weak}. "
            "Compare it with the alternatives."
        )
    )
fs = ui.font_size()
# The choices' labels are the same for every model: Streamlit writes the label into the link, so one naming
# this model's first token ("[CLS]", "<s>") emptied the radio after a switch of family and left the link on
# a choice that no longer existed. The titles name the token.
KIND_LABELS = {
    POOLED: "pooler output",
    CLS: "first token, last layer",
    MEAN: "mean of the pieces, last layer",
}
KIND_NAMES = {POOLED: f"pooled {cls} (pooler output)", CLS: f"{cls}, last layer", MEAN: KIND_LABELS[MEAN]}
kinds = [POOLED, CLS, MEAN] if info.has_pooler else [CLS, MEAN]
if not info.has_pooler:
    st.info(
        ui.md_escape(
            f"This {info.architecture_name} model has no pooler, so there is no pooled vector to choose: its "
            f"{cls} vector and the mean of its pieces are."
        )
    )
ui.option_by_name("sv_kind", {k: KIND_LABELS[k] for k in kinds})
ui.start("sv_kind", kinds[0], lambda v: v in kinds)  # a kept choice may be another model's pooler
kind = st.radio(
    "Sentence vector",
    kinds,
    index=0,
    format_func=KIND_LABELS.get,
    help=ui.md_escape(f"The first token is {cls}; the mean leaves out {cls} and {sep}."),
    **ui.bound("sv_kind"),
    persist_state="session",
    horizontal=True,
)

st.subheader("Sentence A on its own")
if inputs.text_b is not None and inputs.text_a is not None:  # said of a vector that is drawn
    if {"nsp", "sop", "rtd"} & set(info.heads):
        st.caption(
            "This is sentence A's vector with A analysed alone; sentence B is used only by the pair predictions "
            "below (as the pair " + ui.md_escape(transforms.pair_template(tokenizer.encode("a", "b"))) + ")."
        )
    else:  # "used only by the pair predictions below", over a note that there are none
        st.caption(
            "This is sentence A's vector with A analysed alone. Sentence B is not used on this page: "
            + (
                f"this model's head is a fine-tuned {TASK_HEADS[info.task]} one (on the Task page)."
                if info.task in TASK_HEADS
                else "this model has no head that reads a pair."
            )
        )
result = None
if inputs.text_a is None:
    st.info("Type a sentence A in the sidebar to see its vector.")
else:
    result = ui.analysis_or_stop(active, inputs.text_a, stop_on_error=False)
if result is not None:
    vec = sentence_vector(result, kind)
    c1, c2 = ui.side_by_side([1, 3], "vector")  # the strip under its numbers where the page is narrow
    c1.metric("Length (L2 norm)", f"{np.linalg.norm(vec):.3f}")
    c1.metric("Dimensions", f"{vec.shape[0]}")
    with c2:
        strip = charts.vector_strips(
            vec[None, :], ["vector"], font_size=fs, height=160, width_px=650, numbered=True
        )  # 3/4 page
        ui.show_figure(
            strip,
            key="sv_vector",
            data=pd.DataFrame({"dimension": range(vec.shape[0]), "value": vec}),
            filename="sentence_vector",
        )

st.subheader("Similarity across sentences")
raw = st.text_area(
    "Sentences, one per line",
    ui.start("sv_sentences", preset()),
    **ui.bound("sv_sentences"),
    persist_state="session",
    height=ui.box_height(150),
    help=f"At most {MAX_LINES} sentences of {line_chars():,} characters each are used.",
)
lines, notes = prepare_lines([line.strip() for line in raw.splitlines() if line.strip()])
for note in notes:
    st.warning(note)
batch = None
if len(lines) < 2:
    st.info("Type at least two sentences to compare.")
else:
    batch = ui.lines_analysis(active, lines)
    if batch is not None and len(batch.results) < 2:
        st.info("At least two of the sentences must have something to analyse.")
        batch = None
if batch is not None:
    # A vector of a sentence past the model's length is of its first pieces only: said, as the sidebar's
    # sentences are ("sentence 3 is cut" at 1,000 characters was all a 1,000-character line got)
    cut = [(n, r.encoding) for n, r in zip(batch.used, batch.results, strict=True) if r.encoding.truncated]
    if cut:
        st.warning(
            f"The model reads at most {active.model.tokenizer.max_length} pieces, so these vectors are of the "
            "start of their sentence only: "
            + ", ".join(f"sentence {n + 1} ({enc.num_tokens_before_truncation} pieces)" for n, enc in cut)
            + "."
        )
    lines = [lines[n] for n in batch.used]
    numbers = [n + 1 for n in batch.used]
    vectors = np.stack([sentence_vector(r, kind) for r in batch.results])
    sims = transforms.cosine_matrix(vectors)
    names = [f"{n}. {ui.short_label(line)}" for n, line in zip(numbers, lines, strict=True)]
    full_names = [f"{n}. {line}" for n, line in zip(numbers, lines, strict=True)]  # for the CSV
    fig = charts.heatmap(
        sims,
        names,
        [str(n) for n in numbers],
        numbered=True,  # "1. text" and "1": sentence numbers, counted from 1
        title=f"Cosine similarity of the sentence vectors: {KIND_NAMES[kind]}",
        zmin=-1.0,
        zmax=1.0,
        colorscale="RdBu",
        value_name="cosine",
        font_size=fs,
        height=int(180 + 36 * len(names) * fs / ui.NORMAL_FONT),
        # no wider than a 1024 px screen's page with the sidebar open, where 12 sentences' cosines shrank to 5 px:
        # the server cannot tell that page from a wider one
        width_px=min(ui.chart_width(half=False), charts.PROJECTOR_WIDTH),
        cell_numbers=fs,
    )
    ui.show_figure(
        fig,
        key="sv_similarity",
        data=transforms.labelled_table(sims, full_names, "sentence", full_names),
        filename="sentence_similarity",
        caption=None if charts.cells_written(fig) else charts.NO_CELL_NUMBERS,
    )


def replaced_figure(scored: list[tuple[str, float]], title: str, key: str) -> None:
    """A discriminator's per-token P(replaced) as a coloured strip, with its CSV."""
    tokens, probs = [t for t, _ in scored], [p for _, p in scored]
    ui.show_figure(
        charts.replaced_strip(
            [info.piece_style.display(t) for t in tokens],
            probs,
            title=title,
            font_size=fs,
            width_px=ui.chart_width(),
        ),
        key=key,
        data=pd.DataFrame({"token": tokens, "p_replaced": probs}),
        filename=key,
    )


if "sop" in info.heads:
    st.subheader("Sentence-order prediction")
    st.caption(
        ui.md_escape(
            # A BERT with an SOP head is one the pre-training lab trained so: BERT itself learned NSP
            f"{'This model' if info.architecture_name == 'BERT' else info.architecture_name} was not trained to say "
            "whether B follows A (next-sentence prediction) but "
            "whether two consecutive sentences are in their original order: sentence-order prediction (SOP). "
            "Swap A and B to watch it change its mind."
        )
    )
    if inputs.text_a is None or inputs.text_b is None:
        st.info(
            "Type sentences A and B in the sidebar: the SOP head says how likely A then B is the original order."
        )
    else:
        try:
            forward = cache.sentence_order(active, inputs.text_a, inputs.text_b)
            backward = cache.sentence_order(active, inputs.text_b, inputs.text_a)
        except bert_core.BertScopeError as exc:
            st.error(ui.user_message(exc))
        else:
            ui.unknown_pieces_note(active, inputs.text_b)  # sentence A's are said in its own section above
            c1, c2 = st.columns(2)
            c1.metric("P(in order): A then B", f"{forward:.3f}")
            c2.metric("P(in order): B then A", f"{backward:.3f}")
            frame = pd.DataFrame(
                {"order": ["A then B", "B then A"], "probability in order": [forward, backward]}
            )
            fig = charts.bars(
                list(frame["order"]), list(frame["probability in order"]), title="Is this the original order?",
                value_name="probability", range_max=1.0, font_size=fs,
            )  # fmt: skip
            ui.show_figure(fig, key="sv_sop", data=frame, filename="sentence_order")

if "rtd" in info.heads:
    st.subheader("Replaced tokens")
    st.caption(
        ui.md_escape(
            f"{info.architecture_name}'s discriminator was trained to spot tokens a small generator swapped in: "
            "each token is coloured by the probability it gives that the token was replaced (Clark et al., 2020)."
        )
    )
    if inputs.text_a is None:
        st.info("Type a sentence A in the sidebar to see which tokens look replaced.")
    else:
        try:
            scored = cache.replaced_tokens(active, inputs.text_a, inputs.text_b)
        except bert_core.BertScopeError as exc:
            st.error(ui.user_message(exc))
        else:
            st.markdown("**Replace a word** and watch the discriminator catch it:")
            if inputs.text_b:
                ui.unknown_pieces_note(active, inputs.text_b)  # the strips read B too; A's is said above
            analysis = ui.analysis_or_stop(
                active, inputs.text_a, inputs.text_b, stop_on_error=False, notes=False
            )
            spans = transforms.word_text_spans(analysis, 0) if analysis is not None else []
            edited = changed = None
            if spans:
                words = {w: inputs.text_a[a:b] for w, a, b in spans}
                # Labels as choices ("2: bank"), not word numbers: a kept number the new text still has would
                # name another word there, while the box went on showing the old one.
                choices = {f"{w + 1}: {word}": w for w, word in words.items()}
                c1, c2 = st.columns(2)
                middle = spans[len(spans) // 2][0]
                # In the link, as the replacement is: a link gave "ship" for the middle word, not for the word
                # picked. The default (the middle word) moves with the text until a word is picked, as the
                # logit lens's position does.
                names = list(choices)
                ui.follow_default("sv_rtd_word", f"{middle + 1}: {words[middle]}", lambda v: v in choices)
                start = names.index(
                    ui.start("sv_rtd_word", f"{middle + 1}: {words[middle]}", lambda v: v in choices)
                )
                word = choices[
                    c1.selectbox(
                        "Word", names, index=start, **ui.bound("sv_rtd_word"), persist_state="session"
                    )
                ]
                replacement = c2.text_input(
                    "Replacement",
                    value="banana",
                    **ui.bound("sv_rtd_with", max_chars=40),
                    persist_state="session",
                )
                if replacement.strip():
                    edited = transforms.replace_word(inputs.text_a, spans, word, replacement.strip())
                    try:
                        changed = cache.replaced_tokens(active, edited, inputs.text_b)
                    except bert_core.BertScopeError as exc:
                        st.error(ui.user_message(exc))
            # Side by side, so a class sees the swapped word turn red while the rest stays as it was (one under
            # the other in Large text, where a column left the strip's labels no room).
            c1, c2 = ui.side_by_side(2, "replaced")

            # The strips score the pair: both sentences are named above them, as the model read them (the
            # first 300 characters of each: a pasted page printed whole, twice, pushed the strips far down).
            def as_read(a: str) -> str:
                def cut(text: str) -> str:
                    return text if len(text) <= 300 else text[:300] + " …"

                return cut(a) if inputs.text_b is None else f"A: {cut(a)}\nB: {cut(inputs.text_b)}"

            with c1:
                st.text(as_read(inputs.text_a))
                replaced_figure(scored, "As typed", "sv_rtd")
            with c2:
                if changed is None:
                    st.info("Pick a word and type a replacement to compare.")
                else:
                    st.text(as_read(edited))
                    replaced_figure(changed, "With the word replaced", "sv_rtd_edited")
            if changed is not None:
                _, start, end = next(span for span in spans if span[0] == word)
                was = transforms.pieces_in_span(analysis, start, end)
                now = transforms.pieces_in_span(
                    active.model.encode(edited, inputs.text_b), start, start + len(replacement.strip())
                )  # tokenising only: its probabilities came with `changed`

                def mean_of(scores: list[tuple[str, float]], pieces: list[int]) -> str:
                    # no pieces: the word lies past the model's limit
                    return f"{np.mean([scores[i][1] for i in pieces]):.3f}" if pieces else "—"

                def named(word_text: str, pieces: list[int]) -> str:
                    # said of the word that is a mean, whichever side: it was said of the left one always
                    mean = f" (mean of its {len(pieces)} pieces)" if len(pieces) > 1 else ""
                    return ui.md_escape(f"P(replaced) of '{word_text}'{mean}")

                c1, c2 = st.columns(2)
                c1.metric(named(words[word], was), mean_of(scored, was))
                c2.metric(named(replacement.strip(), now), mean_of(changed, now))

st.subheader("Next-sentence prediction")
if not info.has_nsp_head:
    instead = {
        "sop": "it has sentence-order prediction instead (above)",
        "rtd": "it spots replaced tokens (above)",
    }
    # a QA head reads a question and a passage: "no sentence-pair head at all" said otherwise
    other = (
        f"it has a fine-tuned {TASK_HEADS[info.task]} head instead (on the Task page)"
        if info.task in TASK_HEADS
        else "it has no sentence-pair head at all"
    )
    lacking = next((instead[h] for h in info.heads if h in instead), other)
    st.info(
        ui.md_escape(
            f"This {info.architecture_name} model has no NSP head, so it cannot say whether B follows A: {lacking}."
        )
    )
elif inputs.text_a is None or inputs.text_b is None:
    st.info("Type sentences A and B in the sidebar: the NSP head says how likely B is to follow A.")
else:
    try:
        p = cache.next_sentence(active, inputs.text_a, inputs.text_b)
    except bert_core.BertScopeError as exc:
        st.error(ui.user_message(exc))
    else:
        ui.unknown_pieces_note(active, inputs.text_b)  # sentence A's are said in its own section above
        # The pair, not A alone as above: its length and what was cut are the pair's (tokenising only).
        ui.length_notes(active, active.model.encode(inputs.text_a, inputs.text_b))
        st.metric("P(IsNext)", f"{p:.3f}")
        fig = charts.bars(
            ["IsNext", "NotNext"],
            [p, 1 - p],
            title="Does B follow A?",
            value_name="probability",
            range_max=1.0,
            font_size=fs,
        )
        ui.show_figure(
            fig,
            key="sv_nsp",
            data=pd.DataFrame({"label": ["IsNext", "NotNext"], "probability": [p, 1 - p]}),
            filename="next_sentence",
        )
