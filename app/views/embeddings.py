"""Embeddings: the input vector of each token taken apart (word + segment + position, then LayerNorm)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from app import charts, transforms, ui

# The choices' labels are the same for every model: Streamlit writes the label, not the key, into the link,
# so a label that changed with the model (the "sum of the three/two") left a link, and the radio after a model
# switch, on a choice that no longer existed. What differs by model is in the chart title (TITLES).
COMPONENTS = {
    "word": "word (token) embedding",
    "segment": "segment (A/B) embedding",
    "position": "position embedding",
    "summed": "their sum",
    "normalized": "after LayerNorm",
}
TITLES = {**COMPONENTS, "summed": "sum of the three", "normalized": "after LayerNorm (what layer 1 receives)"}
POSITION_LIMIT = 512

st.header("Embeddings")
active, inputs = ui.page_model()
info = active.model.info
result = ui.analysis_or_stop(active, inputs.text_a, inputs.text_b)
emb = result.embeddings
if emb.segment is None:
    # DistilBERT: no segment table; never draw a missing component as zeros
    COMPONENTS = {k: v for k, v in COMPONENTS.items() if k != "segment"}
    TITLES = {**TITLES, "summed": "sum of the two"}
    st.caption(
        ui.md_escape(
            f"Each piece enters {info.architecture_name} as the sum of two learned vectors — which piece it is and "
            "where it stands — followed by LayerNorm. It has no segment embeddings: sentences A and B are told "
            "apart only by the separator between them."
        )
    )
else:
    # RoBERTa keeps a one-row segment table: the same vector for every piece, whichever sentence it is in.
    which = "which sentence (A/B) it is in" if active.model.config.type_vocab_size > 1 else "a segment vector"
    if active.model.config.type_vocab_size == 1:
        # The title says so: "(A/B)" is false of RoBERTa's one vector. (Not the choice's label, which links
        # hold: changed, it would break them.)
        TITLES = {**TITLES, "segment": "segment embedding (one vector, the same for every piece)"}
    st.caption(
        ui.md_escape(
            f"Each piece enters {info.architecture_name} as the sum of three learned vectors — which piece it is, "
            f"{which}, and where it stands — followed by LayerNorm."
        )
    )
if info.embedding_size is not None:
    COMPONENTS = {**COMPONENTS, "projected": "projected (what layer 1 receives)"}
    TITLES = {
        **TITLES,
        "normalized": f"after LayerNorm ({info.embedding_size} wide)",
        "projected": f"projected to {info.hidden_size} (what layer 1 receives)",
    }
    # ALBERT factorises (E < H); an ELECTRA generator may project down instead (E > H), no factorisation
    kind = (
        "Factorised embeddings"
        if info.embedding_size < info.hidden_size
        else "Embeddings wider than the layers"
    )
    st.info(
        ui.md_escape(
            f"{kind} (E → H): the tables are E = {info.embedding_size} wide, and a learned "
            f"projection maps each token's vector to the layers' H = {info.hidden_size} dimensions before layer 1. "
            "hidden_states[0], where the Attention and Word senses pages start, is the projected vector."
        )
    )


def component_matrix(name: str) -> np.ndarray:
    """(S, E) for a table's component, (S, H) for the projected vector (the analysis's hidden_states[0])."""
    return result.hidden_states[0] if name == "projected" else getattr(emb, name)


tokens = ui.token_labels(result.tokens, active.model.info.piece_style)
fs = ui.font_size()

st.subheader("Per token")
ui.option_by_name("emb_component", COMPONENTS)
ui.start("emb_component", "word", lambda v: v in COMPONENTS)  # a choice this model lacks starts over
component = st.radio(
    "Component",
    list(COMPONENTS),
    format_func=COMPONENTS.__getitem__,  # not a lambda (app.inputs, widget callbacks)
    **ui.bound("emb_component"),
    persist_state="session",
    horizontal=True,
)
matrix = component_matrix(component)  # (S, E) or (S, H)
hidden = matrix.shape[1]
fig = charts.vector_strips(
    matrix,
    tokens,
    title=f"{TITLES[component]} (rows: tokens, columns: the {hidden} dimensions)",
    font_size=fs,
)


component_table = ui.later(
    transforms.labelled_table,
    matrix,
    [f"d{d}" for d in range(hidden)],
    "token",
    result.tokens,
    label_first=True,
)
ui.show_figure(fig, key="emb_heatmap", data=component_table, filename=f"embedding_{component}")

norms = {name: np.linalg.norm(component_matrix(name), axis=1) for name in COMPONENTS}
norm_table = pd.DataFrame({"token": result.tokens, **{f"norm_{n}": v for n, v in norms.items()}})
# Two charts: LayerNorm's output can be ten times as long as the parts (13.7 against 0.4 to 1.2 in the demo
# model), and on one axis with them it pressed the parts to a few pixels, their differences unreadable.
after = ("normalized", "projected")
for key, names, title, csv in (
    ("emb_norms", [n for n in norms if n not in after], "Vector length per token: the parts and their sum",
     "embedding_norms"),
    ("emb_norms_after", [n for n in norms if n in after], "Vector length per token after LayerNorm"
     + (" and the projection" if "projected" in norms else ""), "embedding_norms_after"),
):  # fmt: skip
    fig = charts.grouped_bars(
        tokens,
        {f"|{n}|": norms[n] for n in names},
        title=title,
        value_name="L2 norm",
        font_size=fs,
        width_px=ui.chart_width(half=False),
    )
    ui.show_figure(fig, key=key, data=norm_table[["token", *(f"norm_{n}" for n in names)]], filename=csv)
st.caption("LayerNorm rescales every token's sum to a similar length, whatever the lengths of its parts.")

st.subheader("Position embeddings")
table = active.model.position_embedding_table()  # (P, H)
max_p = min(len(table), POSITION_LIMIT)
if max_p > 2:
    count = st.slider(
        "Positions to compare",
        2,
        max_p,
        ui.start("emb_positions", min(64, max_p), lambda v: isinstance(v, int) and 2 <= v <= max_p),
        **ui.bound("emb_positions"),
        persist_state="session",
        help="the first N positions",
    )
else:  # a slider needs two values to choose from
    count = max_p
    st.caption(f"This model has {max_p} position(s); all are compared.")
sims = transforms.cosine_matrix(table[:count])
pos_labels = [str(p) for p in range(count)]
# A row of zeros (RoBERTa's padding row) has no direction: its cosines are drawn as 0, diagonal included, which
# read as a position unlike itself
zero_rows = [p for p in range(count) if not np.any(table[p])]
rows_, are, their = ("Rows", "are", "their") if len(zero_rows) > 1 else ("Row", "is", "its")
zeros = (
    f" {rows_} {', '.join(map(str, zero_rows))} {are} all zeros, so {their} cosines ({their} own included) are "
    "drawn as 0: a vector of no length has no direction to compare."
    if zero_rows
    else ""
)
if active.model.config.position_offset:
    st.caption(
        ui.md_escape(
            f"{info.architecture_name} numbers positions from {active.model.config.position_offset} (the row after "
            "its padding row): the first rows here are ones it never uses for text." + zeros
        )
    )
elif zeros:
    st.caption(zeros.strip())
pos_fig = charts.heatmap(
    sims,
    pos_labels,
    pos_labels,
    title="Cosine similarity between position embeddings",
    zmin=-1.0,
    zmax=1.0,
    colorscale="RdBu",
    value_name="cosine",
    font_size=fs,
)
ui.show_figure(
    pos_fig,
    key="emb_positions_sim",
    data=ui.later(transforms.labelled_table, sims, pos_labels, "position", range(count)),
    filename="position_similarity",
    caption="Nearby positions have similar vectors in a trained model: the band along the diagonal."
    + (
        f" This model was pre-trained on at most {info.trained_length} pieces: positions {info.trained_length} "
        "and beyond keep their random start, so the band stops there at the latest; the last positions before "
        "it were seen only in the longest inputs, so it may fade earlier."
        if info.trained_length is not None and count > info.trained_length
        else ""
    ),
)

st.subheader("Segment A vs B")
seg = active.model.segment_embedding_table()  # (types, E), or None without a segment table
if seg is None:
    st.info(ui.md_escape(f"{info.architecture_name} has no segment embeddings."))
elif len(seg) >= 2:
    cos = float(transforms.cosine_matrix(seg[:2])[0, 1])
    c1, c2, c3 = st.columns(3)
    c1.metric("|segment A|", f"{np.linalg.norm(seg[0]):.3f}")
    c2.metric("|segment B|", f"{np.linalg.norm(seg[1]):.3f}")
    c3.metric("cosine(A, B)", f"{cos:.3f}")
    seg_fig = charts.vector_strips(
        seg[:2],
        ["segment A (0)", "segment B (1)"],
        title="The two segment vectors",
        font_size=fs,
        height=220,
        numbered=True,
    )
    ui.show_figure(
        seg_fig,
        key="emb_segments",
        data=pd.DataFrame(seg[:2], index=["A", "B"]).reset_index(names="segment"),
        filename="segment_embeddings",
        # the specials too: the first [SEP] closes A and takes A's vector, the last closes B
        caption=ui.md_escape(
            f"{active.model.tokenizer.cls_token}, sentence A and the {active.model.tokenizer.sep_token} after it "
            f"get the first vector added; sentence B and its {active.model.tokenizer.sep_token} the second."
        )
        + ("" if result.text_pair is not None else " Type a sentence B to see both used."),
    )
else:
    st.info(
        ui.md_escape(
            f"This {info.architecture_name} model has a single segment type: one vector added to every token, so "
            "sentences A and B are told apart only by the separators between them."
        )
    )
