"""Tokens: WordPiece pieces as chips, their ids / segments / positions / offsets, and how a word was split."""

from __future__ import annotations

import pandas as pd
import streamlit as st

import bert_core
from app import charts, transforms, ui

st.header("Tokens")
st.caption(
    "BERT never sees words: it sees WordPiece pieces. A piece starting with ## continues the previous one; "
    "[CLS] and [SEP] are added around the text; a word that cannot be spelt from the vocabulary becomes [UNK]."
)
active, inputs = ui.page_model()
result = ui.analysis_or_stop(active, inputs.text_a, inputs.text_b)
unk = "[UNK]"

kinds = [
    charts.token_kind(t, bool(s), unk)
    for t, s in zip(result.tokens, result.special_tokens_mask.tolist(), strict=True)
]
rows = []
for i, tok in enumerate(result.tokens):
    seq = result.sequence_ids[i]
    start, end = (int(x) for x in result.offsets[i])
    typed = "" if seq is None else transforms.sentence_text(result, seq)[start:end]
    rows.append(
        {
            "index": i,
            "piece": tok,
            "id": int(result.input_ids[i]),
            "segment": int(result.token_type_ids[i]),
            "position": int(result.position_ids[i]),
            "sentence": "" if seq is None else "AB"[seq],
            "start": start,
            "end": end,
            "typed text": typed,
            "kind": kinds[i],
        }
    )
table = pd.DataFrame(rows)
hovers = [
    f"#{r['index']} {r['piece']}  id {r['id']} · segment {r['segment']} · position {r['position']}"
    + (f" · chars {r['start']}–{r['end']} of {r['sentence']}: {r['typed text']}" if r["sentence"] else "")
    for r in rows
]

n_unk = sum(k == "unk" for k in kinds)
c1, c2, c3 = st.columns(3)
c1.metric("Pieces", len(result.tokens))
c2.metric("Continuations (##)", sum(k == "continuation" for k in kinds))
c3.metric("[UNK]", n_unk)
if n_unk:
    st.warning(f"{n_unk} word(s) could not be spelt from the vocabulary and became [UNK] (red chips).")

fig = charts.token_chips(result.tokens, kinds, hovers, font_size=ui.font_size())
ui.show_figure(fig, key="tokens_chips", data=table, filename="tokens")

st.subheader("Table")
st.dataframe(table, hide_index=True, key="tokens_table")

st.subheader("How a word was split")
st.caption(
    "WordPiece is greedy: at each point it takes the longest piece in the vocabulary that matches, "
    "then continues after it with a ##piece."
)
words = []
for seq in (0, 1) if result.text_pair is not None else (0,):
    text = transforms.sentence_text(result, seq)
    words += [text[s:e] for _, s, e in transforms.word_text_spans(result, seq)]
words = list(dict.fromkeys(w for w in words if w.strip()))
if not words:
    st.info("No words to split.")
else:
    default = max(range(len(words)), key=lambda i: len(words[i]))
    ui.start_value("tokens_word", words[default], lambda v: v in words)
    word = st.selectbox("Word", words, key="tokens_word", persist_state="session")
    try:
        steps = active.model.tokenizer.wordpiece_steps(word)
    except bert_core.InputError as exc:
        st.info(ui.md_escape(str(exc)))
    else:
        step_rows = [
            {
                "step": n + 1,
                "at character": step.start,
                "candidates tried (longest first)": " → ".join(step.tried) if step.tried else "—",
                "matched": step.matched if step.matched is not None else "(none: the word becomes [UNK])",
            }
            for n, step in enumerate(steps)
        ]
        st.dataframe(pd.DataFrame(step_rows), hide_index=True, key="tokens_steps")
        pieces = [s.matched for s in steps if s.matched is not None]
        if pieces and pieces[-1] == unk:
            pieces = [unk]
        st.text("Pieces: " + " ".join(pieces))
        if len(steps) and steps[0].tried:
            st.caption(
                f"Normalised (as the model sees it): {ui.md_escape(active.model.tokenizer.normalize(word))}"
            )
