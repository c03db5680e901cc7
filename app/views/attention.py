"""Attention: one layer and head (or the mean of the heads) as a heatmap, a head view, or all heads at once.

Changing the layer, head or an option re-slices the cached analysis; the model runs only for new text.
"""

from __future__ import annotations

import functools

import numpy as np
import streamlit as st

import bert_core
from app import cache, charts, transforms, ui
from app.inputs import KEY_HEAD, KEY_LAYER, focus_clicked_token, open_clicked_map

HEATMAP, HEAD_VIEW, MODEL_VIEW = "Heatmap", "Head view", "Model view"
HEAD_VIEW_FULL_LIMIT = 64  # above this many tokens, the head view draws each token's strongest lines only
ALL_TOKENS = "(all tokens)"
KEY_FOCUS_UNIT = "att_focus_unit"
THUMB_SIDE = 24  # model-view thumbnails are average-pooled to at most this many rows and columns
# Said under every view: learners meet attention here first, and read a heavy weight as "this token matters"
# (Clark et al. 2019 find heavy [SEP] attention is likely a no-op; Kobayashi et al. 2020 that the weights
# leave out how large the vectors passed on are).
NOT_IMPORTANCE = (
    "A weight says how much of a token's value vector is mixed in, not how much that token matters: Inside the "
    "model's value-weighted attention and rollout go further."
)

st.header("Attention")
active, inputs = ui.page_model()
result = ui.analysis_or_stop(active, inputs.text_a, inputs.text_b)
n_layers, n_heads = result.num_layers, result.num_heads


def _clamp_state() -> None:
    """Keep layer/head valid when the model (and so the number of layers/heads) changed."""
    layer = st.session_state.get(KEY_LAYER)
    if isinstance(layer, int) and not 1 <= layer <= n_layers:
        # Back to the slider's start, layer 1, as every other choice a new model lacks starts over (ui.start):
        # a layer clamped to the last one showed that layer while the URL, which Streamlit leaves without a
        # value it rejected, opened the link on layer 1. (A link's own layer=9 on a 4-layer model opens on 1.)
        st.session_state[KEY_LAYER] = 1
    head = st.session_state.get(KEY_HEAD)
    if head not in (None, "mean") and not (isinstance(head, int) and 1 <= head <= n_heads):
        st.session_state[KEY_HEAD] = "mean"


_clamp_state()
ui.say_if_linked_out_of_range(KEY_LAYER, "layer", 1, n_layers, "layer 1")
ui.say_if_linked_out_of_range(KEY_HEAD, "head", 1, n_heads, "the mean of the heads", also=("mean",))
c1, c2, c3 = st.columns([3, 2, 3])
if n_layers > 1:
    # No value=: the slider starts at its minimum, layer 1, and a value= beside the clamping above would make
    # Streamlit warn about a default set twice.
    layer = c1.slider("Layer", 1, n_layers, **ui.bound(KEY_LAYER))
else:  # a slider needs two values to choose from
    layer = 1
    c1.caption("Layer 1 (this model has a single layer)")
# The head view's "every head at once" draws all heads: the head choice then does nothing, and says so.
every_head = st.session_state.get("att_view") == HEAD_VIEW and bool(st.session_state.get("att_all_heads"))
head = c2.selectbox(
    "Head",
    ["mean", *range(1, n_heads + 1)],
    **ui.bound(KEY_HEAD),
    disabled=every_head,
    help="mean = average of the heads"
    + (" (not used while the head view draws every head)" if every_head else ""),
)
# a hand-written "att_view=head view" or "att_view=model" opened the heatmap without a word
ui.option_by_name("att_view", {"heatmap": HEATMAP, "head": HEAD_VIEW, "model": MODEL_VIEW})
view = c3.radio("View", [HEATMAP, HEAD_VIEW, MODEL_VIEW], **ui.bound("att_view"), horizontal=True)

o1, o2, o3 = st.columns(3)
cls, sep = active.model.tokenizer.cls_token, active.model.tokenizer.sep_token
# Bound to the URL like layer and head: a shared link opens the same view. The label is not escaped: a
# widget label shows <s> and [CLS] as written, and an escape would reach the aria-label as a backslash.
hide_special = o1.toggle(f"Hide {cls}/{sep}", **ui.bound("att_hide_special"), persist_state="session")
merge = o2.toggle("Merge sub-words into words", **ui.bound("att_merge"), persist_state="session")
direction = "all"
if result.text_pair is not None:
    direction = o3.radio(
        "Direction",
        ["all", "A→B", "B→A"],
        **ui.bound("att_direction"),
        persist_state="session",
        horizontal=True,
    )

# -- the token axes after the options --------------------------------------------------------------------
style = active.model.info.piece_style
# What the toggle hides: the tokenizer's [CLS]/[SEP] and any typed into the text, which the model reads as the
# same tokens (the Tokens page says so) and which draw attention as they do; a typed [SEP] stayed on the map
tokenizer = active.model.tokenizer
markers = [i for i in (tokenizer.cls_token_id, tokenizer.sep_token_id) if i is not None]
is_marker = np.asarray(result.special_tokens_mask) | np.isin(result.input_ids, markers)
if merge:
    groups = transforms.word_groups(result)
    names = [transforms.group_label(result.tokens, g, style) for g in groups]
    seqs = [result.sequence_ids[g[0]] for g in groups]
    special = [bool(is_marker[g[0]]) for g in groups]
else:
    groups = None
    names = [style.display(t) for t in result.tokens]
    seqs = list(result.sequence_ids)
    special = is_marker.tolist()
keep = [i for i in range(len(names)) if not (hide_special and special[i])]
rows = [i for i in keep if direction != "A→B" or seqs[i] == 0]
rows = [i for i in rows if direction != "B→A" or seqs[i] == 1]
cols = [i for i in keep if direction != "A→B" or seqs[i] == 1]
cols = [i for i in cols if direction != "B→A" or seqs[i] == 0]
if not rows or not cols:
    st.info("Nothing left to show with these options (e.g. every token is special). Change an option.")
    ui.stop()


def transform(att: np.ndarray) -> np.ndarray:
    """(..., S, S) -> (..., R, C) after merging and selecting rows/columns."""
    if groups is not None:
        att = transforms.merge_words(att, groups)
    if rows != list(range(att.shape[-2])):
        att = att[..., rows, :]
    if cols != list(range(att.shape[-1])):
        att = att[..., cols]
    return att


row_names = [names[i] for i in rows]
col_names = [names[i] for i in cols]
head_name = "mean of heads" if head == "mean" else f"head {head}"
title = f"Layer {layer}, {head_name}"
notes = []
if hide_special or direction != "all":
    notes.append("Rows no longer sum to 1: attention to the hidden tokens is not shown.")
if direction != "all" and not hide_special:
    notes.append(
        ui.md_escape(
            f"{cls} and {sep} belong to neither sentence, so A→B and B→A leave them out even with "
            f"'Hide {cls}/{sep}' off; choose 'all' to see them."
        )
    )
if merge:
    # The axes' numbers then count words: "12: ." unmerged is "10: ." merged, which went unsaid.
    notes.append(
        "A word's row is the mean of its pieces' rows; a column is the sum over the word's pieces. The numbers "
        "count words here, not pieces."
    )

if view == MODEL_VIEW:
    full = transform(result.attentions)  # (L, N, R, C)
    reduced = max(full.shape[-2:]) > THUMB_SIDE
    pooled = transforms.block_mean(full, THUMB_SIDE) if reduced else full  # (L, N, Tr, Tc)
    # Each map scaled to its own maximum, so a head's pattern shows even when its weights are spread thin.
    peaks = pooled.max(axis=(-2, -1), keepdims=True)
    thumbs = np.divide(pooled, peaks, out=np.zeros_like(pooled), where=peaks > 0)
    # The layer and head chosen above, outlined (the whole layer for the mean of its heads), so the two
    # controls still say something here: where the heatmap a click opens would start from.
    selected = (layer - 1, None if head == "mean" else int(head) - 1)
    roles = bert_core.head_roles(result, style=style).labels
    fig = cache.figure(charts.model_view, thumbs, selected=selected, roles=roles, font_size=ui.font_size())
    outlined = f"layer {layer}" if head == "mean" else f"layer {layer}, head {head}"
    caption = (
        "Every layer (rows) and head (columns), each map scaled to its own maximum (the CSV has the "
        f"unscaled weights). The outline marks {outlined}, as chosen above. Click a map to open it as a heatmap."
    )
    if any(r for row in roles for r in row):
        # the roles are the heads', from every token: a label such as "previous" under an A→B map read as
        # describing what was drawn, and nothing said what the words meant
        caption += (
            " A word under a map is that head's role, judged on the whole input whatever the options here hide "
            "(Inside the model › Head roles says how); a cls or sep role often marks a head with little to do."
        )
    if reduced:
        caption += (
            f" Maps are averaged down to {thumbs.shape[-2]}×{thumbs.shape[-1]} blocks of tokens to keep the "
            "page light (the CSV holds these block means); the heatmap shows every token."
        )
    caption += " " + NOT_IMPORTANCE

    def block_names(names: list[str], n_blocks: int) -> list[str]:
        if len(names) == n_blocks:
            return names
        edges = np.linspace(0, len(names), n_blocks + 1).round().astype(int)
        return [
            f"{names[a]} … {names[b - 1]} ({a}–{b - 1})" for a, b in zip(edges[:-1], edges[1:], strict=True)
        ]

    model_view_table = ui.later(
        transforms.grid_table,
        pooled,
        [
            [("layer", range(1, n_layers + 1))],
            [("head", range(1, n_heads + 1))],
            [("from", block_names(row_names, pooled.shape[-2]))],
            [("to", block_names(col_names, pooled.shape[-1]))],
        ],
        "weight",
    )
    ui.show_figure(
        fig,
        key="att_model_view",
        data=model_view_table,
        filename="attention_all_heads",
        on_select=functools.partial(open_clicked_map, "att_model_view", "att_view", HEATMAP),
        caption=caption,
    )
    for note in notes:
        st.caption(note)
    ui.stop()

layer_att = result.attentions[layer - 1]  # (N, S, S)
matrix = layer_att.mean(axis=0) if head == "mean" else layer_att[int(head) - 1]
matrix = transform(matrix)  # (R, C)


# The CSV's token columns: positions on this view's axes, and the names shown there.
from_axis = [("from_index", rows), ("from", row_names)]
to_axis = [("to_index", cols), ("to", col_names)]
table = ui.later(transforms.grid_table, matrix, [from_axis, to_axis], "weight")


slug = f"attention_L{layer}_{'mean' if head == 'mean' else f'H{head}'}"
if view == HEATMAP:
    fig = cache.figure(
        charts.heatmap,
        matrix,
        row_names,
        col_names,
        title=title,
        zmin=0.0,
        colorscale="Blues",
        value_name="weight",
        font_size=ui.font_size(),
        separator=" → ",
        positions=(rows, cols),  # each token's own number, with [CLS] or a sentence hidden too
    )
    caption = "Row = the token that attends (query); column = the token attended to (key). " + NOT_IMPORTANCE
    ui.show_figure(fig, key="att_heatmap", data=table, filename=slug, caption=caption)
else:
    # One list for both sides: "k: tok → …" isolates a query row (what it attends to), "… → k: tok" a key
    # column (what attends to it). Numbers are the tokens' (or words') own, as the heatmap's and the CSV's.
    from_options = [f"{rows[n]}: {row_names[n]} → …" for n in range(len(rows))]
    to_options = [f"… → {cols[n]}: {col_names[n]}" for n in range(len(cols))]
    focus_options = [ALL_TOKENS, *from_options, *to_options]
    # The isolated token as (side, its place among the tokens or words, which tokens or words): hiding
    # [CLS]/[SEP] or picking a direction renumbers the choices, and the token was let go of.
    axes = (merge, hash(tuple(names)))
    if "att_focus" in st.session_state and st.session_state["att_focus"] not in focus_options:
        again = ALL_TOKENS  # the tokens changed under a stale choice
        kept = st.session_state.get(KEY_FOCUS_UNIT)
        if kept and kept[2] == axes:
            axis, options = (rows, from_options) if kept[0] == "from" else (cols, to_options)
            if kept[1] in axis:
                again = options[axis.index(kept[1])]
        st.session_state["att_focus"] = again

    f1, f2 = st.columns([3, 2])
    focus_label = f1.selectbox(
        "Isolate one token",
        focus_options,
        **ui.bound("att_focus"),  # a shared link isolates the same token
        persist_state="session",
        help="Or click a token in the chart: on the left, what it attends to; on the right, what attends to it.",
    )
    all_heads = f2.toggle(
        "Every head at once",
        **ui.bound("att_all_heads"),
        persist_state="session",
        help="Overlay the layer's heads, one colour each; the box below chooses which are drawn (the legend is "
        "only a key).",
    )
    shown_heads = list(range(1, n_heads + 1))
    if all_heads:
        every = list(range(1, n_heads + 1))
        picked_heads = st.multiselect(
            "Heads drawn",
            every,
            default=ui.start(
                "att_heads_shown", every, lambda v: isinstance(v, list) and set(v) <= set(every)
            ),
            **ui.bound("att_heads_shown"),  # a shared link draws the same heads
            persist_state="session",
            help="Each keeps its colour.",
        )
        shown_heads = sorted(picked_heads) or every  # none picked: all rather than an empty chart
    index = focus_options.index(focus_label)
    focus = index - 1 if 1 <= index <= len(from_options) else None
    focus_to = index - 1 - len(from_options) if index > len(from_options) else None
    st.session_state[KEY_FOCUS_UNIT] = (
        ("from", rows[focus], axes)
        if focus is not None
        else ("to", cols[focus_to], axes)
        if focus_to is not None
        else None
    )
    large = len(rows) > HEAD_VIEW_FULL_LIMIT and focus is None and focus_to is None
    # Fewer links per token with every head drawn: N times the lines otherwise.
    per_token = 2 if all_heads else 5
    # (N', R, C) for the heads drawn, or (R, C)
    weights = transform(layer_att[[h - 1 for h in shown_heads]]) if all_heads else matrix
    fig = cache.figure(
        charts.head_view,
        row_names,
        col_names,
        weights,
        head_numbers=shown_heads if all_heads else None,
        focus=focus,
        focus_to=focus_to,
        top_k=per_token if large else None,
        min_weight=0.02 if large else 0.0,
        title=(
            (
                f"Layer {layer}, all {n_heads} heads"
                if len(shown_heads) == n_heads
                else f"Layer {layer}, heads {', '.join(map(str, shown_heads))}"
            )
            if all_heads
            else title
        ),
        font_size=ui.font_size(),
    )
    caption = (
        "Left: the token that attends; right: what it attends to. Line width and opacity = weight. "
        "Click a token to isolate it; click it again for every token. " + NOT_IMPORTANCE
    )
    if all_heads:
        caption += " Each head has its own colour and its own lane around each token; choose heads above."
    if large:
        caption += (
            f" With more than {HEAD_VIEW_FULL_LIMIT} tokens only each token's {per_token} strongest links "
            f"(≥ 0.02){' per head' if all_heads else ''} are drawn; isolate a token to see all of its links."
        )

    if all_heads:
        table = ui.later(
            transforms.grid_table, weights, [[("head", shown_heads)], from_axis, to_axis], "weight"
        )
    ui.show_figure(
        fig,
        key="att_head_view",
        data=table,
        filename=f"attention_L{layer}_all_heads" if all_heads else slug,
        on_select=functools.partial(
            focus_clicked_token, "att_head_view", "att_focus", ALL_TOKENS, from_options, to_options
        ),
        caption=caption,
    )
for note in notes:
    st.caption(note)
