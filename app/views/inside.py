"""Inside the model: what raw attention maps leave out — queries and keys, value-weighted attention,
rollout and flow, head roles, head ablation, the logit lens, hidden states by layer and sentence scores.

One view at a time (chosen in the URL), so only that view's numbers are computed; views that need passes of
their own (q/k, value-weighted, ablation, logit lens, pseudo-likelihood) cache them per input.
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pandas as pd
import streamlit as st

import bert_core
from app import cache, charts, transforms, ui
from app import inputs as inputs_module
from bert_core.pieces import with_own_mask

VIEWS = {
    "qk": "Query & key",
    "value": "Value-weighted attention",
    "rollout": "Rollout & flow",
    "roles": "Head roles",
    "ablation": "Head ablation",
    "lens": "Logit lens",
    "hidden": "Hidden states by layer",
    "pll": "Sentence scores (pseudo-likelihood)",
}
MAX_FOLLOWED = 5  # pieces the logit lens follows beside its answer: more lines than this read as a tangle

MINIMAL_PAIRS = {
    "agreement": "The keys to the cabinet are on the table.\nThe keys to the cabinet is on the table.",
    "bank in context": "We fished from the bank of the river.\nWe fished from the bank of the money.",
    "article": "She ate an apple.\nShe ate a apple.",
    "word order": "The dog chased the cat.\nThe dog the cat chased.",
}
# bert_core.PLL_SCORINGS, named for the radio (and the link, which holds the name)
PLL_SCORING_NAMES = {"piece": "alone", "word_l2r": "with the later pieces of its word"}
assert tuple(PLL_SCORING_NAMES) == bert_core.PLL_SCORINGS, "name every scoring the core offers"


def quoted_lines(lines: list[str]) -> str:
    """The minimal-pair lines a note is about, each cut to 40 characters ("…" where cut: "on the tabl" read as
    a typo), escaped for Markdown."""
    return "; ".join(ui.md_escape(ui.clip(line, 40)) for line in lines)


BANKS = (
    "We sat on the bank of the river and watched the water.",
    "She went to the bank to deposit her salary.",
)

st.header("Inside the model")
active, inputs = ui.page_model()
info = active.model.info
# ALBERT's and ELECTRA's embeddings are narrower than the layers: their layer 0 is the embeddings projected up,
# as transformers' first hidden state is too ("the embedding output" alone was loose for them).
LAYER_0 = "Layer 0 is the embedding output" + (
    ", projected to the hidden size (the embeddings are of another width)."
    if info.embedding_size is not None
    else "."
)
style = info.piece_style
tokenizer = active.model.tokenizer
cls, sep, mask = tokenizer.cls_token, tokenizer.sep_token, tokenizer.mask_token
fs = ui.font_size()
ui.option_by_name("inside_view", VIEWS)  # a hand-written "inside_view=lens" opened Query & key
view = st.radio("View", list(VIEWS), format_func=VIEWS.get, **ui.bound("inside_view"), horizontal=True)
result = ui.analysis_or_stop(active, inputs.text_a, inputs.text_b)
labels = ui.token_labels(result.tokens, style)
n_layers, n_heads = result.num_layers, result.num_heads


def layer_and_head(prefix: str, *, heads: bool = True) -> tuple[int, int | None]:
    """A layer slider and (optionally) a head choice, 0-based, kept per view."""
    ui.say_if_linked_out_of_range(f"{prefix}_layer", "layer", 1, n_layers, f"layer {n_layers}")
    if heads:
        ui.say_if_linked_out_of_range(f"{prefix}_head", "head", 1, n_heads, "head 1")
    c1, c2 = st.columns(2)
    if n_layers > 1:
        start = ui.start(f"{prefix}_layer", n_layers, lambda v: isinstance(v, int) and 1 <= v <= n_layers)
        layer = c1.slider("Layer", 1, n_layers, start, **ui.bound(f"{prefix}_layer"), persist_state="session")
    else:
        layer = 1
    head = None
    if heads:
        ui.start(f"{prefix}_head", 1, lambda v: isinstance(v, int) and 1 <= v <= n_heads)
        head = c2.selectbox(
            "Head",
            list(range(1, n_heads + 1)),
            index=0,
            **ui.bound(f"{prefix}_head"),
            persist_state="session",
        )
    return layer - 1, None if head is None else head - 1


def matrix_figure(
    matrix: np.ndarray,
    title: str,
    key: str,
    value: str,
    *,
    rows=None,
    zmin=0.0,
    width_px: int | None = None,
    separator: str = " → ",
) -> None:
    """A map of the text's tokens (columns) by `rows` (the tokens again, or "layer 0".."layer L"); `separator`
    " → " for who attends to (draws from) whom, " · " for a measure per token and layer."""
    rows = labels if rows is None else rows
    fig = charts.heatmap(
        matrix, rows, labels, title=title, zmin=zmin, zmax=float(np.nanmax(matrix)) or 1.0,
        value_name=value, font_size=fs, width_px=width_px, separator=separator,
        numbered=True,  # tokens as "3: bank", rows as "layer 2": no second, 0-based number before either
    )  # fmt: skip
    # numbered as the map is: a repeated token ("the" twice) made two columns of one name
    frame = pd.DataFrame(matrix, columns=labels).assign(row=list(rows))
    ui.show_figure(fig, key=key, data=frame, filename=key)


if view == "qk":
    st.caption(
        "How one query token's attention row is made: its query vector against every key, elementwise, summed "
        "and scaled (q·k/√d), then the softmax — the neuron view of bertviz (Vig, 2019), here for any model."
    )
    layer, head = layer_and_head("qk")
    # The choices are the labels ("6: of"), not positions: a kept position the new text still has would hold
    # another token there, while the box went on showing the old one.
    choice = st.selectbox(
        "Query token",
        labels,
        index=labels.index(ui.start("qk_token", labels[0], lambda v: v in labels)),
        **ui.bound("qk_token"),
        persist_state="session",
    )
    token = labels.index(choice)
    try:
        d = cache.attention_details(active, inputs.text_a, inputs.text_b, layer)
    except bert_core.BertScopeError as exc:
        st.error(ui.user_message(exc))
        ui.stop()
    q, k = d.queries[head, token], d.keys[head]  # (D,), (S, D)
    products = k * q[None, :]  # (S, D): each key's elementwise product with the query
    dims = [f"d{i}" for i in range(q.shape[0])]
    qk_rows = np.vstack([q[None, :], k, products])  # (1 + 2S, D)
    fig = charts.heatmap(
        qk_rows,
        [f"query {labels[token]}"] + [f"key {t}" for t in labels] + [f"q×k {t}" for t in labels],
        dims,
        title="Query, keys, and their elementwise products",
        # The labels name their tokens' positions ("key 3: drifted"): the row's own index beside it
        # ("76: key 3: drifted") would be a second, meaningless number.
        numbered=True,
        zmid=0.0,
        colorscale="RdBu",
        value_name="value",
        font_size=fs,
        width_px=ui.chart_width(
            half=False
        ),  # dimension numbers: thinned for a projector's width, nothing is lost
    )
    ui.show_figure(
        fig,
        key="qk_vectors",
        data=pd.DataFrame(qk_rows, columns=dims).assign(
            row=["query", *("key" for _ in labels), *("q×k" for _ in labels)],
            token=[result.tokens[token], *result.tokens, *result.tokens],
        ),
        filename="query_keys",
    )
    scores, probs = d.scores[head, token], d.probabilities[head, token]
    frame = pd.DataFrame({"key": result.tokens, "score q·k/√d": scores, "softmax": probs})
    c1, c2 = ui.side_by_side(2, "qk")
    with c1:
        ui.show_figure(
            charts.bars(
                labels,
                scores,
                title="Scores q·k/√d",
                value_name="score",
                font_size=fs,
                width_px=ui.chart_width(),
            ),
            key="qk_scores",
            data=frame,
            filename="scores",
        )
    with c2:
        ui.show_figure(
            charts.bars(
                labels,
                probs,
                title="After softmax: the attention row",
                value_name="weight",
                range_max=1.0,
                font_size=fs,
                width_px=ui.chart_width(),
            ),  # fmt: skip
            key="qk_softmax",
            data=frame,
            filename="softmax",
        )

elif view == "value":
    st.caption(
        "Attention weights ignore how large the attended vectors are. Value-weighted attention ‖α·f(x)‖ "
        "(Kobayashi et al., 2020) scales each weight by the size of what the token actually contributes: in "
        "bert-base they found that heads weighting [CLS]/[SEP]"
        + ("" if (cls, sep) == ("[CLS]", "[SEP]") else ui.md_escape(f" (this model's {cls}/{sep})"))
        + " heavily mostly pass on tiny vectors there; another model, the small demo one say, may differ. "
        "f(x) is the token's value vector (bias included) through the head's share of the output projection, "
        "whose bias is left out: it is added once, from no token."
    )
    layer, head = layer_and_head("value")
    try:
        vw = cache.value_weighted(active, inputs.text_a, inputs.text_b)
    except bert_core.BertScopeError as exc:
        st.error(ui.user_message(exc))
        ui.stop()
    c1, c2 = ui.side_by_side(2, "value")
    with c1:
        matrix_figure(result.attentions[layer, head], f"Raw weights α, layer {layer + 1} head {head + 1}",
                      "value_raw", "α", width_px=ui.chart_width())  # fmt: skip
    with c2:
        matrix_figure(
            vw.per_head[layer, head],
            "‖α·f(x)‖, same head",
            "value_weighted",
            "norm",
            width_px=ui.chart_width(),
        )
    matrix_figure(vw.summed[layer], f"‖Σ_h α·f(x)‖, the whole layer {layer + 1}", "value_summed", "norm")
    norms = vw.value_norms[layer, head]
    ui.show_figure(
        charts.bars(labels, norms, title="‖f(x_j)‖ per token, this head", value_name="norm", font_size=fs),
        key="value_norms",
        data=pd.DataFrame({"token": result.tokens, "norm": norms}),
        filename="value_norms",
    )

elif view == "rollout":
    st.caption(
        "Information mixes across layers, so one layer's map says little about the input. Rollout multiplies "
        "each layer's (0.5·mean over heads + 0.5·I) maps up to a layer; flow treats them as capacities of a "
        "layered graph and takes the maximum flow from each token at that layer to each input token, each row "
        "then scaled to sum to 1 (Abnar & Zuidema, 2020). Row = the token at that layer, column = the input "
        "token. Both still count attention weights only, not the size of the vectors moved nor the feed-forward "
        "layers, and the half-identity standing for the residual connection is an assumption."
    )
    layer, _ = layer_and_head("rollout", heads=False)
    rolled = cache.attention_rollout(active, inputs.text_a, inputs.text_b, result)
    matrix_figure(rolled[layer], f"Rollout up to layer {layer + 1}", "rollout", "share")
    limit = bert_core.interpret.MAX_FLOW_TOKENS
    if len(labels) > limit:
        st.info(f"Attention flow is computed for inputs of at most {limit} pieces (its cost grows as S⁴).")
    else:
        flow = cache.attention_flow(active, inputs.text_a, inputs.text_b, result)
        matrix_figure(flow[layer], f"Flow up to layer {layer + 1}", "flow", "share")

elif view == "roles":
    st.caption(
        "Heads specialise (Clark et al., 2019): some attend to "
        + ui.md_escape(f"{cls} or {sep}")
        + ", to the previous or next token, to itself, to punctuation, or broadly. A head is labelled when, on "
        "average over its rows, at least half of a row goes to one kind of target (every separator together, "
        "say); 'broad' when no target has that and its rows' entropy is at least 80 % of a uniform row's. "
        "A cls or sep role often marks a head with little to do (Clark et al. find heavy [SEP] attention in "
        "BERT is likely a no-op"
        + ("" if sep == "[SEP]" else ui.md_escape(f"; this model's separator is {sep}"))
        + ": check it under Value-weighted attention), and roles are judged on this input: the toggle below "
        "checks them across the preset sentences."
    )
    roles = bert_core.head_roles(result, style=style)
    rows = []
    for layer in range(n_layers):
        for head in range(n_heads):
            rows.append(
                {
                    "layer": layer + 1,
                    "head": head + 1,
                    "role": roles.labels[layer][head] or "",
                    f"to {cls}": roles.to_cls[layer, head],
                    f"to {sep}": roles.to_sep[layer, head],
                    "to punctuation": roles.to_punctuation[layer, head],
                    "to previous": roles.to_previous[layer, head],
                    "to next": roles.to_next[layer, head],
                    "to itself": roles.to_self[layer, head],
                    "entropy (normalised)": roles.normalized_entropy[layer, head],
                }
            )
    table = pd.DataFrame(rows)
    names, bands = charts.role_key(roles.labels)
    codes = np.array([[names.index(r or "none") for r in row] for row in roles.labels], dtype=float)
    fig = charts.heatmap(
        codes, [f"layer {i + 1}" for i in range(n_layers)], [f"head {h + 1}" for h in range(n_heads)],
        title="Role per head", zmin=-0.5, zmax=len(names) - 0.5, colorscale=bands, value_name="role",
        font_size=fs, numbered=True,
    )  # fmt: skip
    # Each cell names its role, as colour alone left 'next' and 'previous' to hue (one to a deuteranope): in
    # five letters at most, at a size that reads (plotly fitted whole names to a 12-head cell at 6 px); the
    # whole name in the hover. plotly writes a heatmap's cells from `text` only (customdata drew "-").
    short = {"punctuation": "punct", "previous": "prev"}
    fig.update_traces(
        customdata=[
            [r or "none" for r in row] for row in roles.labels
        ],  # layers × heads: a few hundred at most
        text=[[short.get(r, r) if r else "" for r in row] for row in roles.labels],
        hovertemplate="%{y} · %{x}<br>%{customdata}<extra></extra>",
        colorbar={"tickvals": list(range(len(names))), "ticktext": names, "nticks": None},
    )
    if n_heads <= 16:  # wider grids leave a cell too little room for a word
        charts.write_cells(fig, fig.data[0].text, max(10, fs - 3))
    fig.update_xaxes(showgrid=False).update_yaxes(showgrid=False)  # no lines through the see-through "none"
    ui.show_figure(fig, key="roles_grid", data=table, filename="head_roles")
    ui.table(table, key="roles_table")
    if st.toggle(
        "Across the preset sentences: which heads keep their role",
        **ui.bound("roles_stability"),
        persist_state="session",
    ):
        presets = [e.text_a for e in inputs_module.examples()]
        analyses = []
        for text in presets:
            try:
                analyses.append(cache.analyze(active, text))
            except bert_core.BertScopeError:
                continue
        if analyses:
            stable = bert_core.role_stability(analyses, style=style)
            frame = pd.DataFrame(
                [
                    {
                        "layer": layer + 1,
                        "head": head + 1,
                        "usual role": stable.common[layer][head] or "",
                        "share of sentences": stable.stability[layer, head],
                    }  # fmt: skip
                    for layer in range(n_layers)
                    for head in range(n_heads)
                ]
            ).sort_values("share of sentences", ascending=False)
            st.caption(f"Over {len(analyses)} preset sentences (the sidebar's examples).")
            ui.table(frame, key="roles_stable")

elif view == "ablation":
    st.caption(
        "Switch heads off (their output zeroed) and see what changes against the intact model; or measure, at "
        "one mask, how much the log-probability of the intact model's top guess drops when each head alone is "
        "off, as Michel et al. (2019) first ablate heads one at a time (not their gradient estimate): blue, the "
        "head supported that guess; red, the guess got more likely without it. " + LAYER_0
    )
    choices = [f"{layer + 1}.{head + 1}" for layer in range(n_layers) for head in range(n_heads)]
    kept = st.session_state.get("ablation_heads")
    if isinstance(kept, list) and any(c not in choices for c in kept):
        # Heads another model had: set to those this one has, so the URL drops the others too (Streamlit
        # leaves a value that is not an option on the widget, not in the link).
        st.session_state["ablation_heads"] = [c for c in kept if c in choices]
    off_names = st.multiselect(
        "Heads to switch off (layer.head)",
        choices,
        **ui.bound("ablation_heads"),
        persist_state="session",
    )
    off = tuple(sorted((int(c.split(".")[0]) - 1, int(c.split(".")[1]) - 1) for c in off_names))
    if off:
        changed = cache.ablated(active, inputs.text_a, inputs.text_b, off)
        drift = np.linalg.norm(changed.hidden_states - result.hidden_states, axis=-1)  # (L + 1, S)
        matrix_figure(drift, "How far each token's vector moved (L2), by layer",
                      "ablation_drift", "distance", rows=[f"layer {i}" for i in range(n_layers + 1)], separator=" · ")  # fmt: skip
        first = [
            transforms.cosine_matrix(np.stack([result.hidden_states[i, 0], changed.hidden_states[i, 0]]))[
                0, 1
            ]
            for i in range(n_layers + 1)
        ]
        ui.show_figure(
            charts.lines(
                list(range(n_layers + 1)),
                {"cosine(intact, ablated) of the first token": first},
                title=f"The first token's vector ({cls}) against the intact model's",
                value_name="cosine",
                font_size=fs,
            ),  # fmt: skip
            key="ablation_cls",
            data=pd.DataFrame({"layer": range(n_layers + 1), "cosine": first}),
            filename="ablation_cls",
        )
        if info.has_mlm_head:
            try:
                intact_guesses = cache.predict_masks(active, inputs.text_a, inputs.text_b, 5)
                ablated_guesses = cache.ablated_masks(active, inputs.text_a, inputs.text_b, off)
            except bert_core.BertScopeError as exc:
                if mask in (inputs.text_a or ""):  # typed, but unusable (e.g. past the model's positions)
                    st.caption(ui.user_message(exc))
                else:
                    st.caption(ui.md_escape(f"Type a {mask} in sentence A to see its guesses change too."))
            else:
                rows = [
                    {
                        "mask": m + 1,
                        "rank": r + 1,
                        "intact": style.display(a),
                        "P intact": pa,
                        "heads off": style.display(b),
                        "P heads off": pb,
                    }  # fmt: skip
                    for m, (i, x) in enumerate(zip(intact_guesses, ablated_guesses, strict=True))
                    for r, ((a, pa), (b, pb)) in enumerate(zip(i.as_pairs(), x.as_pairs(), strict=True))
                ]
                ui.table(pd.DataFrame(rows), key="ablation_masks")
        curves = {}
        for name, run in (
            ("intact", lambda t: cache.analyze(active, t)),
            ("heads off", lambda t: cache.ablated(active, t, None, off)),
        ):
            found = [
                transforms.target_occurrences(
                    r,
                    "bank",
                    active.model.tokenizer.normalize,
                    specials=transforms.typed_specials(active.model.tokenizer),
                )
                for r in map(run, BANKS)
            ]
            if all(found):
                a, b = (run(t).hidden_states[:, f[0]].mean(axis=1) for t, f in zip(BANKS, found, strict=True))
                curves[name] = (a * b).sum(-1) / (
                    np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1) + 1e-12
                )
        if curves:
            ui.show_figure(
                charts.lines(
                    list(range(n_layers + 1)),
                    curves,
                    title="'bank' by a river vs 'bank' with money",
                    value_name="cosine",
                    font_size=fs,
                ),  # fmt: skip
                key="ablation_banks",
                data=pd.DataFrame({"layer": range(n_layers + 1), **curves}),
                filename="ablation_banks",
            )
            # Two fixed sentences, whatever is typed: said, or the chart read as one about the typed text.
            st.caption(
                ui.md_escape(
                    f"Cosine of 'bank' between “{BANKS[0]}” and “{BANKS[1]}” at every layer, with every head "
                    "and with the picked heads off: how switching them off changes this one pair's cosine."
                )
            )
    else:
        # An empty picker and nothing under it read as a broken view.
        # the masked-word guesses only where there is a head to guess (a QA model's page promised them)
        guesses = " the masked-word guesses and" if info.has_mlm_head else ""
        st.info(
            "Pick heads above (e.g. 1.1) to switch them off: the page then draws how far each token's vector "
            f"moves, and what the heads' absence does to{guesses} the two 'bank's."
        )
    if not info.has_mlm_head:
        ui.no_mlm_head(info, "measure each head's importance for a masked word")
    elif st.toggle(
        f"Importance of every head for the first {mask}",
        **ui.bound("ablation_importance"),
        persist_state="session",
    ):
        try:
            imp = cache.head_importance(active, inputs.text_a, inputs.text_b)
        except bert_core.BertScopeError as exc:
            st.info(ui.user_message(exc))
        else:
            fig = charts.heatmap(
                imp.drop, [f"layer {i + 1}" for i in range(n_layers)], [f"head {h + 1}" for h in range(n_heads)],
                title=f"Drop in log P({style.display(imp.token)}) at piece {imp.position} with that head off",
                zmid=0.0, colorscale="RdBu", value_name="drop (nats)", unit="nats", font_size=fs, numbered=True,
            )  # fmt: skip
            frame = pd.DataFrame(imp.drop, columns=[f"head {h + 1}" for h in range(n_heads)])
            ui.show_figure(fig, key="ablation_importance_map", data=frame.assign(layer=range(1, n_layers + 1)),
                           filename="head_importance")  # fmt: skip

elif view == "lens":
    st.caption(
        "The MLM head, whole (its dense layer, GELU and LayerNorm, then the projection onto the vocabulary), "
        "applied to every layer's vector at one position (the logit lens, nostalgebraist 2020): "
        "at which layer does the final answer appear, and where do the words you name under *Also follow* rise "
        "or fall? The head was trained on the last layer's vectors only, so earlier layers read through it are "
        "approximate: a late rise may be partly that mismatch, not the answer forming late. " + LAYER_0
    )
    if not info.has_mlm_head:
        ui.no_mlm_head(info, "show the logit lens")
        ui.stop()
    mask_id = active.model.tokenizer.mask_token_id
    default = next(
        (i for i, t in enumerate(result.input_ids.tolist()) if t == mask_id), 1 if len(labels) > 1 else 0
    )
    # Labels as choices, as for the query token above.
    ui.follow_default("lens_position", labels[default], lambda v: v in labels)  # to a [MASK] typed since
    start = labels.index(ui.start("lens_position", labels[default], lambda v: v in labels))
    choice = st.selectbox(
        "Position", labels, index=start, **ui.bound("lens_position"), persist_state="session"
    )
    position = labels.index(choice)
    typed_follow = st.text_input(
        "Also follow",
        ui.start("lens_follow", ""),
        **ui.bound("lens_follow", max_chars=200),
        persist_state="session",
        placeholder="e.g. river money",
        help=f"Up to {MAX_FOLLOWED} words or pieces, separated by spaces or commas: the rank of each at every "
        "layer, beside the last layer's answer. A word is followed as the piece it starts a word as (RoBERTa's "
        "'river' as 'Ġriver'); a word the model splits into several pieces can't be followed whole.",
    )
    # Up to MAX_FOLLOWED distinct pieces beside the answer, counted once every word is read as its piece: the
    # cap counted typed strings, so 'River' and 'river' (one piece), a refused word or the answer itself took
    # the place of a word that was then left out. (The box holds 200 characters: a hundred words at most.)
    typed_as: dict[str, str] = {}  # piece -> the word typed for it, first spelling first
    refused: list[str] = []
    for word in dict.fromkeys(w for w in re.split(r"[\s,]+", typed_follow) if w):
        try:
            piece = active.model.lens_piece(word)  # each alone: one word it can't follow spoils none
        except bert_core.InputError as exc:
            if len(refused) < MAX_FOLLOWED:  # a warning each, as many as could be drawn; then a count
                st.warning(ui.user_message(exc))
            refused.append(word)
            continue
        typed_as.setdefault(piece, word)
    if len(refused) > MAX_FOLLOWED:
        st.caption(f"{len(refused) - MAX_FOLLOWED} more of the words typed can't be followed either.")
    pieces = list(typed_as)
    try:  # one piece more than is drawn, should the answer be among them
        lens = cache.logit_lens(
            active, inputs.text_a, inputs.text_b, position, tuple(pieces[: MAX_FOLLOWED + 1])
        )
    except bert_core.BertScopeError as exc:
        st.error(ui.user_message(exc))
        ui.stop()
    others = [p for p in pieces if p != lens.final_token]  # the answer's own line is drawn anyway
    drawn, left_out = others[:MAX_FOLLOWED], [typed_as[p] for p in others[MAX_FOLLOWED:]]
    if left_out:
        st.caption(ui.md_escape(f"Up to {MAX_FOLLOWED} words are followed; left out: {', '.join(left_out)}."))
    marker = style.word_start_marker
    # words followed as a piece inside words: their vocabulary has no piece that starts a word so
    inner = [
        typed_as[p]
        for p in drawn
        if marker and not typed_as[p].startswith(marker) and not p.startswith(marker)
    ]
    if inner:
        # RoBERTa reads " money" as "Ġ", "money" where its vocabulary lacks "Ġmoney": the piece followed is the
        # one it uses inside words, which the help's "as the piece it starts a word as" did not cover
        st.caption(
            ui.md_escape(
                f"No piece of this vocabulary starts a word as {', '.join(repr(w) for w in inner)}: followed as "
                f"the piece {'it is' if len(inner) == 1 else 'they are'} inside words."
            )
        )
    if mask_id is not None and int(result.input_ids[position]) != mask_id:
        # A visible word is its own best guess from layer 0 on: "the answer at layer 0" is then no finding.
        st.caption(
            ui.md_escape(
                f"The model can see the piece at this position, so it is often its own top guess from the first "
                f"layer on. Type {mask} in the sentence to watch a hidden word's guess form layer by layer."
            )
        )
    # The pieces whose rank is drawn, the last layer's answer first; a followed piece that is the answer is
    # that line already. Named as displayed ("Ġbank" as "␣bank"), or by the piece itself should two distinct
    # pieces display alike, as a legend and a table need one name each.
    ranked = [(lens.final_token, lens.final_token_rank, lens.final_token_probability)] + [
        (t, r, p)
        for t, r, p in zip(
            lens.followed_tokens, lens.followed_ranks, lens.followed_probabilities, strict=True
        )
        if t in drawn
    ]
    shown = [style.display(t) for t, _, _ in ranked]
    names = [s if shown.count(s) == 1 else t for s, (t, _, _) in zip(shown, ranked, strict=True)]
    table = pd.DataFrame(
        {
            "layer": range(len(lens.top_tokens)),
            "top prediction": [style.display(t[0]) for t in lens.top_tokens],
            "probability": lens.top_probabilities[:, 0],
            "next four": [" · ".join(style.display(x) for x in t[1:]) for t in lens.top_tokens],
        }
        | {f"rank of '{name}'": rank for name, (_, rank, _) in zip(names, ranked, strict=True)}
    )
    if st.session_state.get(ui.KEY_LARGE) and len(ranked) > 1:
        # In Large text the followed words' columns ran past a 1024 px projector's page, behind a scroll bar
        # nobody in the room sees: the table keeps the answer's rank, the chart and its CSV have all of them.
        ui.table(table.iloc[:, :5], key="lens_table")
        st.caption("The followed words' ranks: the chart below, and its CSV.")
    else:
        ui.table(table, key="lens_table")
    answer = f"'{names[0]}', the last layer's answer"
    rank_fig = charts.lines(
        list(range(len(lens.final_token_rank))),
        {f"rank of {name}": rank for name, (_, rank, _) in zip(names, ranked, strict=True)},
        title=f"Rank of {answer}, by layer (1 = top)"
        if len(ranked) == 1
        # short enough for one line at 1024 px in normal text, where the longer one ran off the chart's edge
        else f"Ranks by layer (1 = top): the answer '{names[0]}' and the words followed",
        value_name="rank",
        font_size=fs,
    )
    # The followed pieces' lines carry no numbers: written over each other where their ranks meet, they read as
    # one jumble; the table has them (in normal text), the hover and the CSV always.
    charts.rank_axis(
        rank_fig,
        float(max(np.max(rank) for _, rank, _ in ranked)),
        width_px=ui.chart_width(half=False),
        written=1,
    )
    # The answer's line is drawn last, over the others, whose markers hid its numbers; first in the legend still
    rank_fig.data = (*rank_fig.data[1:], rank_fig.data[0])
    rank_fig.data[-1].legendrank = 1
    ui.show_figure(
        rank_fig,
        key="lens_rank",
        # with every drawn piece's probability too, which the table leaves out to stay one screen wide
        data=table.assign(**{f"P('{name}')": prob for name, (_, _, prob) in zip(names, ranked, strict=True)}),
        filename="logit_lens",
    )

elif view == "hidden":
    st.caption(
        "Each token's vector through the layers: its length, how much it still points where it did a layer "
        "down, and how close it already is to where it ends; then every token of one layer in two dimensions. "
        + LAYER_0
    )
    traj = bert_core.layer_trajectory(result)
    layer_names = [f"layer {i}" for i in range(n_layers + 1)]
    pick = st.radio(
        "Measure",
        ["norm", "cosine to previous layer", "cosine to last layer"],
        **ui.bound("hidden_measure"),
        horizontal=True,
        persist_state="session",
    )
    values = {"norm": traj.norms, "cosine to previous layer": traj.cosine_to_previous,
              "cosine to last layer": traj.cosine_to_last}[pick]  # fmt: skip
    # Left undefined where it is (layer 0 has no previous layer): a blank cell, not a cosine of 0. The scale
    # starts at 0 (or a negative cosine): stretched to the data's range, norms of 13.3 to 14.2 drew the
    # shortest vector white, which reads as a vector of no length.
    lowest = 0.0 if pick == "norm" else min(0.0, float(np.nanmin(values)))
    matrix_figure(values, f"{pick} per token and layer", "hidden_trajectory", pick,
                  rows=layer_names, zmin=lowest, separator=" · ")  # fmt: skip
    start = ui.start("hidden_layer", n_layers, lambda v: isinstance(v, int) and 0 <= v <= n_layers)
    ui.say_if_linked_out_of_range("hidden_layer", "layer", 0, n_layers, f"layer {n_layers}")
    layer = st.slider("PCA at layer", 0, n_layers, start, **ui.bound("hidden_layer"), persist_state="session")
    tokens_map = bert_core.token_pca(result, layer)
    points = tokens_map.coordinates
    names = [labels[i] for i in tokens_map.positions]
    share = tokens_map.explained_variance_ratio
    groups = [0 if not result.special_tokens_mask[i] else 1 for i in tokens_map.positions]
    # A piece that occurs more than once is written with its position ("5: the"), as the selectors name it:
    # two dots both called "the" did not say which was which. The others stay short.
    shown = [style.display(result.tokens[i]) for i in tokens_map.positions]
    counts = Counter(shown)
    pca_texts = [names[k] if counts[t] > 1 else t for k, t in enumerate(shown)]
    fig = charts.scatter_2d(points, groups, ["pieces", "specials"], names, title=f"Tokens at layer {layer} "
                            f"(PC1 {share[0]:.0%}, PC2 {share[1]:.0%} of the variance)", font_size=fs,
                            texts=pca_texts,
                            width_px=ui.chart_width(half=False))  # fmt: skip
    ui.show_figure(fig, key="hidden_pca", data=pd.DataFrame(points, columns=["pc1", "pc2"]).assign(token=names),
                   filename="token_pca")  # fmt: skip

elif view == "pll":
    st.caption(
        "Pseudo-log-likelihood (Salazar et al., 2020): mask each piece in turn (alone, or with the later pieces "
        "of its word) and add up the log-probability the model gives the true piece. Higher (less negative) = more natural to the model; compare sentences "
        "that differ in one place."
    )
    ui.option_by_name("pll_scoring", PLL_SCORING_NAMES)
    scoring_start = ui.start("pll_scoring", "piece", lambda v: v in PLL_SCORING_NAMES)
    scoring = st.radio(
        "Mask each piece",
        list(PLL_SCORING_NAMES),
        index=list(PLL_SCORING_NAMES).index(scoring_start),
        format_func=PLL_SCORING_NAMES.get,
        **ui.bound("pll_scoring"),
        horizontal=True,
        persist_state="session",
        help="Alone, as Salazar et al. (2020) score: the other pieces of the word stay in view, and a model "
        "that knows the word can all but read a piece off them, which can lift a sentence with long words split "
        "into pieces above what its words deserve. With the later pieces of its word, as Kauf & Ivanova (2023) "
        "propose: those are masked too, so each piece is guessed from what comes before it in its word and from "
        "the other words. Which way a sentence's score moves depends on the model and the words. A word is "
        "as the tokenizer splits words: a SentencePiece model's (ALBERT's) includes punctuation typed against "
        "it ('table.'), which is then masked with it.",
    )
    if not info.has_mlm_head:
        ui.no_mlm_head(info, "score sentences by pseudo-likelihood")
        ui.stop()

    # Typed, these are no pieces of the sentence either, and the scores leave them out as they leave a mask.
    typed_specials = [t for t in (mask, cls, sep, tokenizer.pad_token) if t]

    def holes(text: str) -> list[str]:
        """The typed mask (any family's spelling, which the scores read as this model's) or special tokens in
        `text`: holes, not words, each one negative term fewer in the sum."""
        return [t for t in typed_specials if t in with_own_mask(text, mask)]

    def holed(text: str) -> bool:
        return bool(holes(text))

    def score_sentence_a() -> None:
        """Sentence A's score and its pieces; a message where it has none (too long to score whole), the
        minimal pairs below still ranked."""
        try:
            total, pieces = cache.pseudo_log_likelihood(active, inputs.text_a, scoring)
        except bert_core.BertScopeError as exc:
            st.error(ui.user_message(exc))
            return
        # With no piece scored (a sentence of masks) the sum is empty: no score, not a perfect one of 0.
        st.metric("PLL of sentence A (nats)", f"{total:.2f}" if pieces else "—")
        if inputs.text_b:
            # every other view here reads the pair, so a score of A alone looked like A's within the pair
            st.caption("Sentence A is scored on its own: sentence B is not read for this score.")
        unk = tokenizer.unk_token
        if ui.unknown_typed(active, inputs.text_a):
            # The page's note says these characters are read as the unknown piece; the total also counts the
            # model's guess of that piece there, which is easy, so a line of emoji scores like a fluent one.
            guessed = [lp for piece, lp in pieces if piece == unk]
            st.caption(
                ui.md_escape(
                    f"The total includes {len(guessed)} {unk} piece{'s' if len(guessed) != 1 else ''} "
                    f"({sum(guessed):.2f} nats): those are scores of the unknown piece, not of what was typed."
                )
            )

        typed = holes(inputs.text_a)
        if typed:
            st.caption(
                ui.md_escape(
                    f"Sentence A has a typed {' and '.join(typed)}: it stands for no word, so it is left out of the "
                    "score"
                    + (f" (the {mask} stays masked)" if mask in typed else "")
                    + ", and this total can't be compared with a whole sentence's."
                )
            )
        # Numbered by position in the token sequence, as on every other view ("5: bank"): sentence A's pieces sit
        # where the analysis above has them, a typed mask left out as the score leaves it out.
        scored = [
            i
            for i, (seq, special, token) in enumerate(
                zip(result.sequence_ids, result.special_tokens_mask, result.tokens, strict=True)
            )
            if seq == 0 and not special and token not in typed_specials
        ]
        if [result.tokens[i] for i in scored] == [p for p, _ in pieces]:
            names = [labels[i] for i in scored]
        else:  # a tokenizer that splits A differently beside B: plain order
            names = [f"{n + 1}. {style.display(p)}" for n, (p, _) in enumerate(pieces)]
        logps = [lp for _, lp in pieces]
        if pieces:
            ui.show_figure(
                charts.bars(
                    names,
                    logps,
                    title="log P(piece | the rest)"
                    if scoring == "piece"
                    else "log P(piece | the rest, its word's later pieces masked)",
                    value_name="log-probability",
                    font_size=fs,
                ),
                key="pll_strip",
                data=pd.DataFrame(
                    {"shown as": names, "piece": [p for p, _ in pieces], "log_probability": logps}
                ),
                filename="pseudo_log_likelihood",
            )
        else:
            st.info(ui.md_escape(f"Nothing in sentence A to score but {mask}: type a whole sentence."))

    score_sentence_a()
    st.subheader("Minimal pairs")
    presets = list(MINIMAL_PAIRS)
    start = ui.start("pll_preset", presets[0], lambda v: v in MINIMAL_PAIRS)
    preset = st.selectbox(
        "Preset", presets, index=presets.index(start), **ui.bound("pll_preset"), persist_state="session",
    )  # fmt: skip
    # One box per preset, each keeping what was typed in it across visits to other pages and presets; the one
    # shown is in the link, so a shared or reloaded page ranks the same lines.
    box = f"pll_text_{preset.replace(' ', '_')}"
    raw = st.text_area(
        "Sentences, one per line",
        value=ui.start(box, MINIMAL_PAIRS[preset], lambda v: isinstance(v, str)),
        **ui.bound(box),
        persist_state="session",
        height=ui.box_height(ui.DEFAULT_BOX_PX),
    )
    lines, notes = inputs_module.prepare_lines([line.strip() for line in raw.splitlines() if line.strip()])
    for note in notes:
        st.warning(note)
    ranked = []
    with_holes = [line for line in lines if holed(line)]
    if with_holes:
        # A hole is one negative term fewer in a sum of them: the line would climb the ranking for free.
        st.info(
            ui.md_escape(
                f"Left out of the ranking, as {'it has' if len(with_holes) == 1 else 'they have'} "
                + " or ".join(dict.fromkeys(t for line in with_holes for t in holes(line)))
                + " typed (rank whole sentences): "
            )
            + quoted_lines(with_holes)
        )
    # A line past the model's length is scored on the pieces it reads, its end cut off: fewer terms in the sum,
    # so it too would climb the ranking, and two lines differing only past the cut would tie.
    whole, cut, unknown, longest = [], [], [], 0
    for number, line in enumerate(lines, 1):
        if holed(line):
            continue
        try:
            enc = active.model.encode(line)  # tokenising only
        except bert_core.BertScopeError as exc:
            # Named by its number: a line of zero-width characters has nothing visible to quote.
            st.info(ui.user_message(exc, text_name=f"Sentence {number}"))
            continue
        if enc.truncated:
            cut.append(line)
        else:
            whole.append(line)
            longest = max(longest, len(enc.tokens))  # of the lines ranked, which the note speaks of
            if ui.unknown_typed(active, line):  # a [UNK] the user typed is no gap in the vocabulary
                unknown.append(line)
    if cut:
        st.info(
            f"Left out of the ranking, as the model reads at most {tokenizer.max_length} pieces of a sentence and "
            "these are longer (only the pieces it reads would be scored): " + quoted_lines(cut)
        )
    if whole:
        ui.untrained_positions_note(active, longest, what="The longest sentence")
    for line in whole:
        try:
            ranked.append((line, cache.pseudo_log_likelihood(active, line, scoring).total))
        except bert_core.BertScopeError as exc:
            st.info(ui.md_escape(f"{line[:40]}: ") + ui.user_message(exc))
    if ranked:
        ranked.sort(key=lambda item: -item[1])
        ui.table(pd.DataFrame(ranked, columns=["sentence", "PLL (nats)"]), key="pll_ranked")
    unknown = [line for line in unknown if line in dict(ranked)]  # of the lines ranked, as the note says
    if unknown:
        # Ranked, since the model did score them, but what was scored there is its guess of the unknown
        # piece, not of the word: a line of emoji is a few easy [UNK]s and can outrank a real sentence.
        st.caption(
            ui.md_escape(
                f"Scored with {tokenizer.unk_token} where the vocabulary cannot spell a word or mark, so these "
                "scores are of the unknown piece, not of what was typed: "
            )
            + quoted_lines(unknown)
        )
