"""Masked words: what the MLM head predicts for each mask token, top-k with probabilities."""

from __future__ import annotations

import functools
import re

import pandas as pd
import streamlit as st

import bert_core
from app import cache, charts, transforms, ui
from app import inputs as inputs_module
from app.inputs import TYPED_MASK
from bert_core.pieces import MASK_SPELLINGS, visible

NEAR_MASK = re.compile("|".join(map(re.escape, MASK_SPELLINGS)), re.IGNORECASE)  # "[mask]", "<MASK>", ...
MAX_CHARTS = 12  # masks beyond this are listed in one table, not charted one by one

st.header("Masked words")
active, inputs = ui.page_model()
info = active.model.info
tokenizer = active.model.tokenizer
mask = tokenizer.mask_token or TYPED_MASK
# RoBERTa's own spelling is what the tokenizer reads; [MASK], which every other page's help uses, works too.
spellings = mask if mask == TYPED_MASK else f"{mask} (or {TYPED_MASK})"
if not info.has_mlm_head:  # an ELECTRA discriminator was trained to spot replaced words, not to guess them
    ui.no_mlm_head(info, "guess masked words")
    ui.stop()
st.caption(
    ui.md_escape(
        f"{info.architecture_name} was pre-trained to guess hidden words. Type {spellings} in sentence A where a "
        "word should be guessed, or pick words of the sentence to hide."
    )
)

text = inputs.text_a
in_b = (inputs.text_b or "").count(mask)
b_note = f" Sentence B contains {in_b} {ui.md_escape(mask)}, predicted too." if in_b else ""
if mask in text:
    st.caption(f"Sentence A contains {text.count(mask)} {ui.md_escape(mask)}.{b_note}")
    masked = text
else:
    # A mask spelt in another case ("[mask]") is letters to the tokenizer, which matches specials exactly.
    near = sorted({m.group() for m in NEAR_MASK.finditer(text + " " + (inputs.text_b or ""))} - {mask})
    if near:
        st.caption(
            ui.md_escape(
                f"{', '.join(near)} is read as letters, not a mask: type {mask} exactly (capitals count)."
            )
        )
    # The same cached pass the other pages use; its length notes would describe the unmasked text, so the
    # masked text's are given below instead.
    result = ui.analysis_or_stop(active, text, inputs.text_b, notes=False)
    spans = transforms.word_text_spans(result, 0)
    # Words are counted from 1, as a reader counts them; "piece" numbers elsewhere are token positions.
    # Drawn visibly: a "word" of zero-width characters (RoBERTa reads them) would be a blank label.
    choices = [f"word {n + 1}: {visible(text[s:e])}" for n, (_, s, e) in enumerate(spans)]
    if not choices and not in_b:
        st.info("Sentence A has no words to mask.")
        ui.stop()
    # With a [MASK] typed in sentence B only, nothing of A is hidden unless the user asks.
    # The longest word, the last of equals: "the cat sat on the mat" hides "mat", not "the"; of the words the
    # vocabulary can spell, since hiding an [UNK] asks the model to guess the unknown piece.
    # A word with any unknown piece: SentencePiece writes an unknown word as "▁" + <unk>, one word.
    keys = transforms.word_keys(result)  # (sentence, word) per piece
    unspelt = {
        key[1]
        for key, token in zip(keys, result.tokens, strict=True)
        if key is not None and key[0] == 0 and token == tokenizer.unk_token
    }
    # Nor a special typed as text ("[SEP]"): the model would be asked to guess a special token.
    typed_special = {
        key[1]
        for key, token in zip(keys, result.tokens, strict=True)
        if key is not None and key[0] == 0 and token in tokenizer.special_tokens
    }
    candidates = [
        i for i, (w, _, _) in enumerate(spans) if w not in unspelt and w not in typed_special
    ] or list(range(len(spans)))
    # Nor, in a long text, a word at a position the model never trained (the demo model: past 128 pieces),
    # where its guesses mean little.
    if info.trained_length is not None:
        first_piece: dict[int, int] = {}
        for position, key in enumerate(keys):
            if key is not None and key[0] == 0:
                first_piece.setdefault(key[1], position)
        candidates = [
            i for i in candidates if first_piece.get(spans[i][0], 0) < info.trained_length
        ] or candidates
    longest = max(candidates, key=lambda i: (spans[i][2] - spans[i][1], i)) if spans else 0
    default = [] if in_b or not choices else [choices[longest]]
    # A choice kept from an older text starts again from the default word, and so does the empty choice that
    # sentence B's [MASK] made the default once B loses it; one the user cleared on purpose is kept.
    b_lost_its_mask = bool(st.session_state.get("_mask_in_b")) and not in_b
    st.session_state["_mask_in_b"] = bool(in_b)
    start = ui.start(
        "mask_words",
        default,
        lambda v: isinstance(v, list) and set(v) <= set(choices) and not (b_lost_its_mask and not v),
    )
    picked = st.multiselect(
        "Words to mask in sentence A",
        choices,
        default=start,
        **ui.bound("mask_words"),
        persist_state="session",
        on_change=inputs_module.in_given_order,
        args=("mask_words", choices),
        help=f"or type {spellings} into sentence A",
    )
    if not picked and not in_b:
        st.info("Pick at least one word to mask.")
        ui.stop()
    chosen = sorted(choices.index(p) for p in picked)
    masked = text
    for n in reversed(chosen):  # right to left, so earlier offsets stay valid
        _, s, e = spans[n]
        masked = masked[:s] + mask + masked[e:]
    if chosen:
        # A pasted paragraph printed whole pushed the charts a screen down: only the text around the masks.
        at, holes = 0, []
        for n in chosen:
            _, s, e = spans[n]
            holes.append((s + at, s + at + len(mask)))
            at += len(mask) - (e - s)
        st.text("Masked: " + ui.isolated(masked if len(masked) <= 400 else transforms.excerpt(masked, holes)))
        # A word of several pieces becomes one mask, and the model fills one mask with one piece: its whole
        # spelling can never be the answer, which a learner waiting for "riverbank" should know.
        split = []
        for n in chosen:
            pieces = [t for t, k in zip(result.tokens, keys, strict=True) if k == (0, spans[n][0])]
            if len(pieces) > 1:
                shown = " ".join(info.piece_style.display(t) for t in pieces)
                split.append(f"“{text[spans[n][1] : spans[n][2]]}” is {len(pieces)} pieces ({shown})")
        if split:
            st.caption(
                ui.md_escape(
                    "; ".join(split) + f". Each hidden word is one {mask}, and the model puts one piece in a "
                    "mask, so it can guess only a piece of such a word, never all of it."
                )
            )
    if b_note:
        # "too" only beside masks of A: with no word of A hidden, B's are the only ones predicted.
        st.caption(
            b_note.strip() if chosen else b_note.strip().replace(", predicted too.", ", predicted below.")
        )

top_k = st.number_input(
    "Predictions per mask (top k)",
    1,
    cache.MAX_TOP_K,
    ui.start("mask_topk", 5, lambda v: isinstance(v, int) and 1 <= v <= cache.MAX_TOP_K),
    **ui.bound("mask_topk"),
    persist_state="session",
    help=f"1 to {cache.MAX_TOP_K}: guesses listed for each mask, most likely first.",
)
enc = active.model.encode(masked, inputs.text_b)  # tokenising only
# The hidden words are one mask each here: a word of several pieces counts one, so the count can be below
# the other pages' for the same text.
ui.length_notes(active, enc, counted=" (each hidden word counted as one mask)" if masked != text else "")
ui.unknown_pieces_note(active, masked, inputs.text_b)


@functools.cache
def own_word(character: str) -> bool:
    """The tokenizer reads `character` as a word by itself even beside its twin (BERT's CJK characters)."""
    try:
        return len({w for w in active.model.encode(character * 2).word_ids if w is not None}) == 2
    except bert_core.InputError:
        return False


# Only the masks typed: one the page put in place of a word it chose is a whole word (东 of 东京 for BERT)
glued = [w for t in (text, inputs.text_b) for w in transforms.glued_masks(t, mask, own_word)]
if glued:
    # "That is un[MASK]able." read "→ That is unsable.": a morphology probe the model was never given.
    words = ", ".join(dict.fromkeys(glued[:3]))
    marker = active.model.info.piece_style.word_start_marker
    if active.model.info.piece_style.byte_level:
        # Byte-level BPE marks word starts, not continuations: the pieces after the mask carry no Ġ, the form
        # of a piece inside a word, so RoBERTa is asked for a piece of the word, as its pre-training masked.
        told = (
            f"A {mask} typed inside a word ({words}) stands for a piece of it: the pieces after the mask carry "
            f"no {marker}, so the model reads them as the rest of that word and may guess a "
            "piece inside it (written into the word below, as typed)."
        )
    else:
        told = (
            f"A {mask} typed inside a word ({words}) splits the word there: the model reads the letters on "
            "either side as words of their own and guesses a whole word for the mask (written into the word "
            "below, as typed), not a piece inside one word. To hide part of a word, mask the whole word."
        )
    st.caption(ui.md_escape(told))
# Masks in the cut-off end of a sentence: the model predicts only the ones it reads. With a pair the longer
# sentence is cut first, so a lost mask can lie before pieces the model does read (the end of A, B whole):
# said by sentence, not as "past the first N pieces".
lost: dict[int, int] = {}  # sentence (0 = A, 1 = B) -> masks cut off
if enc.truncated:
    whole = tokenizer.encode(masked, inputs.text_b, max_length=enc.num_tokens_before_truncation + 3)
    for sentence in (0, 1):
        count = [
            sum(1 for i, s in zip(e.input_ids.tolist(), e.sequence_ids, strict=True)
                if s == sentence and i == tokenizer.mask_token_id)
            for e in (whole, enc)
        ]  # fmt: skip
        if count[0] > count[1]:
            lost[sentence] = count[0] - count[1]
past = sum(lost.values())
where = " and ".join(f"sentence {'AB'[n]}" for n in sorted(lost))
if past and not (enc.input_ids == tokenizer.mask_token_id).any():
    # Said instead of the core's "no mask in the text", which read as the opposite of "contains 1 [MASK]".
    st.warning(
        f"Every {ui.md_escape(mask)} lies in the cut-off end of {where}, which the model never reads, so there "
        "is nothing for it to predict: shorten the text, or mask a word nearer its start."
    )
    ui.stop()
try:
    predictions = cache.predict_masks(active, masked, inputs.text_b, int(top_k))
except bert_core.BertScopeError as exc:
    st.error(ui.user_message(exc))
    ui.stop()
if past:
    # The masks the model never reads must not vanish silently.
    total = past + len(predictions)
    st.warning(
        f"{past} of the {total} {ui.md_escape(mask)} {'lies' if past == 1 else 'lie'} in the cut-off end of "
        f"{where} and {'is' if past == 1 else 'are'} not predicted. Shorten the text to predict "
        f"{'it' if past == 1 else 'them'}."
    )

texts = (masked, inputs.text_b)
style = active.model.info.piece_style
rows = [
    {
        "mask": m + 1,
        "position": p.position,
        "rank": r + 1,
        "token": tok,
        "shown as": style.display(tok),  # as the chart writes it (RoBERTa's Ġ as ␣)
        "probability": prob,
        "sentence with this guess": transforms.fill_mask_text(texts, enc, p.position, tok, style),
    }
    for m, p in enumerate(predictions)
    for r, (tok, prob) in enumerate(p.as_pairs())
]
table = pd.DataFrame(rows)
if style.shown_as_written:
    table = table.drop(columns="shown as")  # WordPiece's pieces are shown as written (as on Tokens)
if len(predictions) > MAX_CHARTS:
    st.warning(
        f"{len(predictions)} masks: the first {MAX_CHARTS} are charted; the table below has all of them."
    )
trained = active.model.info.trained_length
large = ui.font_size() > ui.NORMAL_FONT
# Side by side at most three, each about a third of the page; stacked in Large text (ui.side_by_side).
columns = ui.side_by_side(min(3, len(predictions)), "masks")
bar_width = 900 if large else 900 // len(columns)
for m, p in enumerate(predictions[:MAX_CHARTS]):
    with columns[m % len(columns)]:
        fig = cache.figure(
            charts.bars,
            [style.display(t) for t in p.tokens],
            p.probabilities,
            title=f"Mask {m + 1} (piece {p.position}"
            + (", an untrained position" if trained is not None and p.position >= trained else "")
            + ")",
            value_name="probability",
            range_max=1.0,
            font_size=ui.font_size(),
            width_px=bar_width,
        )
        ui.show_figure(
            fig,
            key=f"mask_bars_{m}",
            data=table[table["mask"] == m + 1],
            filename=f"mask_{m + 1}_predictions",
        )
        if p.tokens:
            # The best guess read in place: escaped Markdown (never markup), a heading in large text.
            best = "→ " + ui.isolated(transforms.fill_mask_text(texts, enc, p.position, p.tokens[0], style))
            st.markdown(("#### " if large else "") + ui.md_escape(best))
if large:
    # Squeezed beside the other columns at 1024 px, each guess's sentence was cut mid-word in rows 200 px tall;
    # the line under each chart reads the best guess in place, and the CSV has every one
    ui.table(table.drop(columns="sentence with this guess"))
    st.caption("Each chart's CSV also has the whole sentence with each guess in it.")
else:
    ui.table(table)
if len(predictions) > 1:
    st.caption("Each mask is predicted on its own, with the other masks still hidden (one forward pass).")

with st.expander("Why this guess? (saliency)"):
    added = " and ".join(t for t in (tokenizer.cls_token, tokenizer.sep_token) if t)
    st.caption(
        ui.md_escape(
            "Integrated gradients (Sundararajan et al., 2017) for one prediction: how much each token moved the "
            "chosen guess's score at its mask, from a baseline with every piece, the mask too, replaced by "
            f"padding ({added} kept); the mask itself often takes much of the credit, as going from padding to "
            f"{mask} changes the input there too. Computed once a guess is picked (and kept while this is "
            "closed)."
        )
    )
    # Labels as the options (widgets keep plain strings), each naming one (position, guess)
    options = {
        f"piece {p.position}: {style.display(t)}": (p.position, t)
        for p in predictions[:MAX_CHARTS]
        for t in p.tokens[:5]
    }
    # Kept across page visits while it still names a guess of this text (a new text's guesses start over).
    ui.start_value("mask_saliency", "—", lambda v: v == "—" or v in options)
    picked = st.selectbox("Prediction", ["—", *options], key="mask_saliency", persist_state="session")
    chosen = options.get(picked)
    if chosen is not None:
        try:
            explained = cache.attribution(
                active, masked, inputs.text_b, target=chosen, method="integrated_gradients"
            )
        except bert_core.BertScopeError as exc:
            st.info(ui.user_message(exc))
        else:
            ui.show_figure(
                cache.figure(
                    charts.saliency_strip,
                    [style.display(t) for t in explained.tokens],
                    explained.scores,
                    title=f"Attribution to {explained.target}",
                    font_size=ui.font_size(),
                    width_px=ui.chart_width(half=False),
                ),  # fmt: skip
                key="mask_saliency_strip",
                data=pd.DataFrame({"token": explained.tokens, "attribution": explained.scores}),
                filename="mask_saliency",
            )
            ui.attribution_note(explained, "the guess's logit")
