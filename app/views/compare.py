"""Compare: one sentence, two models side by side — attention at a chosen layer and head, masked-word
predictions, and how far "bank" by a river and "bank" with money drift apart, layer by layer."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

import bert_core
from app import cache, charts, inputs, models, transforms, ui

KEY_SECOND = "model2"  # the URL keeps both models: the sidebar's `model` and this one
SENSES = inputs.COMPARE_SENSES
TARGET = "bank"

# Where each side is drawn, as the page's caption says it: Large text stacks the two sides, and "on the left"
# named a model drawn above the other.
WHERE = (
    {"left": "above", "right": "below"} if ui.stacked() else {"left": "on the left", "right": "on the right"}
)
st.header("Compare two models")
# (A page under 700 px wide, a 1024 px screen with the sidebar open, stacks the sides too: ui.still_placeholders.)
NARROW = "" if ui.stacked() else " (one above the other where the page is narrow)"
st.caption(
    f"The same sentence through two models: the sidebar's model {WHERE['left']}, the one picked here "
    f"{WHERE['right']}{NARROW} "
    "(e.g. bert-base-uncased and distilbert-base-uncased, or the demo BERT and a variant). Each model is "
    "loaded once and shared by every page and session."
)
left, _ = ui.page_model()
inputs.strip_typed_name(KEY_SECOND)
current = st.session_state.get(KEY_SECOND) or st.query_params.get(KEY_SECOND)
# Models that load here (on disk or cached, the bundled ones included) first, so the page opens on a pair
# that works offline: the default hub model, when it can't be had, would fall back to the sidebar's demo model.
listed = [
    *models.loadable_alternatives(left.source),
    *models.bundled_models(),
    *models.model_options(current),
]
# The sidebar's model is left out, unless it is the one picked here: a value missing from its options dropped
# out of the URL, and the link then opened another comparison than the one on screen. Picked, it comes last:
# Streamlit also leaves the first option (the box's default) out of the URL, and a link without it opened on
# another model, the sidebar's being left out again.
# Left out by the checkpoint, not the name: a server started with `--model assets/demo-model` opened this page
# on @demo, the same model, compared with itself.
same = models.model_key(left.source)
options = [o for o in dict.fromkeys(listed) if models.model_key(o) != same]
if current and models.model_key(str(current)) == same:  # picked here, under this name or another
    options = [*options, str(current)]
elif not options:
    options = [left.source]
second = st.selectbox(
    "Second model",
    options,
    **ui.bound(KEY_SECOND),
    accept_new_options=True,
    help="Pick a listed model, or type a hub id or a local checkpoint directory and press Enter. "
    + ui.TYPED_NAME_HELP,
)
second_source = inputs.unquoted(second or "") or options[0]
right: models.ActiveModel | None = None
held = models.session_hold().second  # the second model of this page's previous run
try:
    right = models.load_second(second_source)
except models.ModelUnavailable as exc:
    # The sidebar's model is still drawn: a second model that failed (a typo, a full server) left the page
    # empty below the box, the working side's maps and the link to the comparison gone with it.
    st.error(
        "The second model can't be loaded: "
        + ui.md_escape(exc.reason if exc.reason.endswith((".", "?", "!")) else exc.reason + ".")
        + " Below, the sidebar's model alone."
    )
    # as the sidebar offers: this box too cuts a name typed over its current one, and a typo is a typo here too
    ui.offer_meant_model(
        held.source if held is not None else None, second_source, KEY_SECOND, "use_meant_second"
    )
else:
    ui.model_notice(right)
    if models.loaded_key(right.source) == models.loaded_key(left.source):
        st.info("Both sides run the same model, so they agree everywhere: pick another second model above.")
sides = [("left", left)] + ([("right", right)] if right is not None else [])
# Each side reads a typed [MASK] or <mask> as its own mask token (BERT's [MASK], RoBERTa's <mask>).
typed = inputs.current_inputs()
texts = {name: inputs.with_mask_token(typed, active.model.tokenizer.mask_token) for name, active in sides}
fs = ui.font_size()


def card(active: models.ActiveModel) -> str:
    info = active.model.info
    lacks = f" · no {', no '.join(info.lacks)}" if info.lacks else ""
    # The heads tell apart checkpoints of one family: ELECTRA's discriminator and generator read alike without.
    heads = " · prediction heads: " + (", ".join(name.upper() for name in info.heads) or "none")
    return ui.md_escape(
        f"{info.architecture_name} · {ui.layers_text(info)} · {ui.heads_text(info)} · hidden {info.hidden_size}"
        f"{heads}{lacks} — {models.describe_source(active.source)}"
    )


# Each side's model as its charts' titles and warnings name it: side by side on a wide screen, the two are told
# apart by place, but narrower (a 1024 px projector) or in Large text they stand one above the other, and two
# maps titled "Layer 4, mean of heads" said nothing of which model drew which.
NAMES = dict(zip(("left", "right"), models.short_names([left.source, second_source]), strict=True))
# One model on both sides: "Head of @demo" twice told a screen reader nothing.
if NAMES["left"] == NAMES["right"]:
    NAMES = {"left": f"{NAMES['left']} (sidebar)", "right": f"{NAMES['right']} (second)"}


st.subheader("Attention")
if len(sides) == 2:  # (one side drawn where the second model failed)
    st.caption("Both maps share one colour scale, so the same colour is the same weight on either side.")
# The model cards in a row of their own: where one card wrapped to more lines than the other (a 1024 px
# screen), each side's controls and map began at another height. Stacked (Large text), each card heads its
# side.
# Where the page is too narrow for two maps and they stand one above the other, the cards do too (side by side
# over the stacked maps, the second model's card stood over the first model's map).
cards = ui.side_by_side(2, "cards")  # stacked in Large text: a projector's half page left ~90 px of map
columns = cards if ui.stacked() else ui.side_by_side(2, "attention")
drawn = []  # (column, name, matrix, labels, layer, head, tokens): drawn once both sides' maxima are known
for (name, active), heading, column in zip(sides, cards[: len(sides)], columns[: len(sides)], strict=True):
    heading.caption(card(active))
    with column:
        given = texts[name]
        # Each side says whether it cut the text: the two models may read different lengths.
        result = ui.analysis_or_stop(active, given.text_a, given.text_b, stop_on_error=False, who=NAMES[name])
        if result is None:
            continue
        n_layers, n_heads = result.num_layers, result.num_heads
        if n_layers > 1:
            start = ui.start(
                f"cmp_layer_{name}", n_layers, lambda v, n=n_layers: isinstance(v, int) and 1 <= v <= n
            )
            ui.say_if_linked_out_of_range(
                f"cmp_layer_{name}", "layer", 1, n_layers, f"layer {n_layers}", whose=NAMES[name]
            )
            # named by model: a screen reader heard "Layer, Head, Layer, Head" with no side to either
            layer = st.slider(
                ui.widget_label(f"Layer of {NAMES[name]}"),
                1,
                n_layers,
                start,
                **ui.bound(f"cmp_layer_{name}"),
            )
        else:  # a slider needs two values to choose from
            layer = 1
            st.caption("Layer 1 (this model has a single layer)")
        heads = ["mean"] + [str(h) for h in range(1, n_heads + 1)]
        ui.start(f"cmp_head_{name}", "mean", lambda v, hs=heads: v in hs)
        ui.say_if_linked_out_of_range(
            f"cmp_head_{name}", "head", 1, n_heads, "the mean of the heads", also=("mean",), whose=NAMES[name]
        )
        head = st.selectbox(
            ui.widget_label(f"Head of {NAMES[name]}"), heads, index=0, **ui.bound(f"cmp_head_{name}")
        )
        maps = result.attentions[layer - 1]  # (N, S, S)
        matrix = maps.mean(axis=0) if head == "mean" else maps[int(head) - 1]
        labels = ui.token_labels(result.tokens, active.model.info.piece_style)
        drawn.append((column, name, matrix, labels, layer, head))
top = max((float(matrix.max()) for _, _, matrix, *_ in drawn), default=0.0) or 1.0
for column, name, matrix, labels, layer, head in drawn:
    with column:
        fig = charts.heatmap(
            matrix,
            labels,
            labels,
            title=f"{NAMES[name]}: layer {layer}, {'mean of heads' if head == 'mean' else f'head {head}'}",
            zmin=0.0,
            zmax=top,
            value_name="attention",
            separator=" → ",
            font_size=fs,
            width_px=ui.chart_width(),
        )
        ui.show_figure(
            fig,
            key=f"cmp_attention_{name}",
            # numbered as the map is: a repeated token ("the" twice) made two columns of one name
            data=ui.later(transforms.labelled_table, matrix, labels, "token", labels),
            filename=f"attention_{name}",
        )

st.subheader("Masked words")


def holds_mask(name: str, active: models.ActiveModel) -> bool:
    mask = active.model.tokenizer.mask_token
    return bool(mask) and any(t and mask in t for t in (texts[name].text_a, texts[name].text_b))


if not any(holds_mask(name, active) for name, active in sides):
    # Said once for both sides: each side's own "no mask" message repeated the same words.
    st.info(
        "Type [MASK] (or <mask>) into a sentence in the sidebar to "
        + ("compare the two models' guesses." if len(sides) == 2 else "see the model's guesses.")
    )
else:
    columns = ui.side_by_side(2, "masks")  # stacked in Large text: a projector's half page left ~90 px of map
    for (name, active), column in zip(sides, columns[: len(sides)], strict=True):
        with column:
            if not active.model.info.has_mlm_head:
                st.info(card(active) + ": this checkpoint has no MLM head.")  # card escapes
                continue
            given = texts[name]
            try:
                predictions = cache.predict_masks(active, given.text_a, given.text_b, top_k=5)
            except bert_core.BertScopeError as exc:
                st.info(ui.user_message(exc))
                continue
            style = active.model.info.piece_style
            p = predictions[0]
            fig = charts.bars(
                [style.display(t) for t in p.tokens],
                p.probabilities,
                title=f"{NAMES[name]}: first mask (piece {p.position})",
                value_name="probability",
                range_max=1.0,
                font_size=fs,
            )
            ui.show_figure(
                fig,
                key=f"cmp_masks_{name}",
                data=pd.DataFrame({"token": p.tokens, "probability": p.probabilities}),
                filename=f"masked_{name}",
            )

st.subheader("Two banks, layer by layer")
st.caption(
    ui.md_escape(
        f"How much closer '{TARGET}' by a river (“{SENSES[0]}”) stays to '{TARGET}' in another river sentence "
        f"(“{SENSES[2]}”) than to '{TARGET}' with money (“{SENSES[1]}”): the first cosine minus the second, at "
        "every layer. Above 0, the model keeps the two senses apart. A model's cosines run high or low whatever "
        "the words (its vectors share a few common directions), so one pair's cosine alone compared nothing "
        "between models; the difference does. Depth is drawn as a fraction (0 = embeddings, 1 = last layer) so "
        "models of different depths line up; the CSV has both cosines."
    )
)
curves: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}  # name -> (depths, same, different)
for name, active in sides:
    batch = ui.lines_analysis(active, list(SENSES))
    if batch is None or len(batch.results) < len(SENSES):
        continue
    vectors = []
    for r in batch.results:
        tokenizer = active.model.tokenizer
        found = transforms.target_occurrences(
            r, TARGET, tokenizer.normalize, specials=transforms.typed_specials(tokenizer)
        )
        if not found:
            break
        vectors.append(r.hidden_states[:, found[0]].mean(axis=1))  # (L + 1, S_word, H) -> (L + 1, H)
    if len(vectors) < len(SENSES):
        st.info(
            card(active) + ui.md_escape(f": '{TARGET}' is not one word for this tokenizer.")
        )  # card escapes
        continue
    cos = np.stack([transforms.cosine_matrix(np.stack(vectors)[:, k]) for k in range(len(vectors[0]))])
    # (L + 1, 3, 3): river with river, river with money
    # named by model, not by place: the page's own CSS stacks the sides where it is narrow, which the script
    # cannot tell, and "left:" then named the model drawn above (the same model on both sides is one line)
    curves[f"{active.model.info.architecture_name} ({NAMES[name]})"] = (
        np.linspace(0.0, 1.0, len(cos)),
        cos[:, 0, 2],
        cos[:, 0, 1],
    )
if curves:
    fig = charts.lines(
        next(iter(curves.values()))[0],
        {k: same - different for k, (_, same, different) in curves.items()},
        title=f"'{TARGET}' by a river: cosine to another river '{TARGET}' minus to a money '{TARGET}'",
        x_name="depth (fraction of the layers)",
        value_name="cosine difference",
        font_size=fs,
    )
    for trace, (x, _, _) in zip(fig.data, curves.values(), strict=True):
        trace.x = list(x)  # each model its own depths
    fig.update_xaxes(dtick=0.25)
    fig.add_hline(y=0, line={"color": "#888", "width": 1, "dash": "dot"})  # no difference: senses not apart
    table = pd.concat(
        [
            pd.DataFrame(
                {
                    "model": k,
                    "depth": x,
                    "cosine, same sense (river, river)": same,
                    "cosine, different sense (river, money)": different,
                    "difference": same - different,
                }
            )
            for k, (x, same, different) in curves.items()
        ],
        ignore_index=True,
    )
    ui.show_figure(fig, key="cmp_senses", data=table, filename="bank_by_layer")

with st.expander("Link to this comparison"):
    st.caption(
        "Opens this page with both models, the sentences and each side's layer and head, on this server or "
        "another one that has the same models."
    )
    state = st.session_state
    params = {inputs.KEY_MODEL: left.source, KEY_SECOND: right.source if right is not None else second_source}
    params |= {k: state.get(k) for k in (inputs.KEY_TEXT_A, inputs.KEY_TEXT_B)}
    params |= {
        f"cmp_{w}_{n}": state.get(f"cmp_{w}_{n}") for w in ("layer", "head") for n in ("left", "right")
    }
    st.code(inputs.share_link(st.context.url, params), language=None, wrap_lines=True)
