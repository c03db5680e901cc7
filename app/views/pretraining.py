"""Pre-training: a fresh BERT masking of the user's text, the model's guesses and loss, NSP and SOP examples
judged by the model's own sentence-pair head (BERT's NSP or ALBERT's SOP)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

import bert_core
from app import cache, transforms, ui
from app.inputs import bump
from bert_core.pretraining.corpus import generate_document
from bert_core.pretraining.masking import (
    MaskAction,
    MaskingConfig,
    mask_tokens,
    replacement_token_ids,
    special_token_ids,
)
from bert_core.pretraining.pairs import IS_NEXT, NOT_NEXT

KEY_DRAW = "pt_draw"  # the draw shown (1, 2, ...), in the URL; the re-draw button moves it on
MAX_DRAW = 1_000_000


def action_text(mask: str, shares: MaskingConfig) -> dict[MaskAction, str]:
    kept = shares.keep_fraction  # (clamped at 0: 1 - 0.54 - 0.46 wrote "-0%")
    return {
        MaskAction.NONE: "",
        MaskAction.MASK: f"→ {mask} ({shares.mask_fraction:.0%})",
        MaskAction.RANDOM: f"→ random token ({shares.random_fraction:.0%})",
        MaskAction.KEEP: f"kept unchanged ({kept:.0%})",
    }


PAIR_TASK_NAMES = {
    "nsp": "next sentence prediction",
    "sop": "sentence order prediction",
    "none": "no sentence task",
}


st.header("Pre-training")
active, inputs = ui.page_model()
model = active.model
info = model.info
tokenizer = model.tokenizer
style = info.piece_style
# What the loaded family did differently: the page's BERT story alone told an ELECTRA or DistilBERT user nothing
# of how their model learned (facts from each family's paper).
FAMILY_NOTES = {
    "roberta": "RoBERTa dropped the sentence task and draws a new masking every epoch (dynamic masking: the "
    "Re-draw button).",
    "albert": "ALBERT replaced next sentence prediction with sentence order prediction: B always follows A in "
    "the text, and half the time the two are swapped. It also masks spans of up to three words at a time "
    "(n-gram masking), where the draw below masks single pieces.",
    "distilbert": "DistilBERT learned by distillation: on the same masking it learned to match a BERT teacher's "
    "guesses as well as the hidden pieces, and to point its hidden vectors the way the teacher's point (a "
    "cosine loss), with no sentence task.",
    # Not "the exercise below": the ELECTRA paper masks with [MASK] only, not 80/10/10 (its section 2).
    "electra": "ELECTRA trains two models: a small generator, itself a masked language model, guesses the "
    "masked pieces (load a generator checkpoint to try it on this page; the paper puts the mask at every chosen "
    "piece, where the draw below follows BERT's 80/10/10), and the discriminator, the one usually used, learns to "
    "spot which pieces of the text the generator replaced, with no sentence task.",
}
st.caption(
    ui.md_escape(
        "BERT learned from raw text with two exercises. Masked language modelling: 15 % of the pieces are "
        f"chosen; of those, 80 % become {tokenizer.mask_token}, 10 % a random piece and 10 % stay as they are, and "
        "the model must restore every chosen piece. Next sentence prediction: half the time sentence B really "
        "follows A, half the time it is a random sentence from elsewhere."
        + (f" {FAMILY_NOTES[info.architecture]}" if info.architecture in FAMILY_NOTES else "")
    )
)
# A checkpoint the lab trained says how: the draw follows its own recipe, not BERT's (a run at 40 % masking and
# sentence order was introduced as 15 % and next sentence prediction).
recipe = info.lab_recipe
shares = (
    MaskingConfig(recipe.mlm_probability, recipe.mask_fraction, recipe.random_fraction)
    if recipe
    else MaskingConfig()
)
# Said where it is not the intro's own BERT recipe (the demo model's record is BERT's, and a caption repeating
# the intro read as something else).
if recipe is not None and (shares != MaskingConfig() or recipe.pair_task != "nsp"):
    st.caption(
        ui.md_escape(
            f"This checkpoint was pre-trained with bertscope pretrain: {recipe.mlm_probability:.0%} of the pieces "
            f"chosen (of those {recipe.mask_fraction:.0%} → {tokenizer.mask_token}, {recipe.random_fraction:.0%} "
            f"random, {shares.keep_fraction:.0%} kept), {recipe.masking} masking, "
            f"{PAIR_TASK_NAMES[recipe.pair_task]}. The draw below follows its recipe."
        )
    )
pairs_judged = info.has_nsp_head or "sop" in info.heads
if not info.has_mlm_head and not pairs_judged:
    ui.no_mlm_head(info, "show the masked-word exercise")
    if "rtd" in info.heads:
        st.page_link(
            "views/sentence_vector.py", label="Spot replaced tokens", icon=":material/arrow_forward:"
        )
    ui.stop()

# The draw is in the URL, so a lecturer's "draw 3" opens as draw 3 for the room; the button moves it on.
c1, c2 = st.columns([1, 3], vertical_alignment="bottom")
shown = c1.number_input(
    "Draw", min_value=1, max_value=MAX_DRAW, value=1, step=1, **ui.bound(KEY_DRAW), persist_state="session",
)  # fmt: skip
# A module's function as the callback: Streamlit keeps it while the page is shown (see inputs.py).
c2.button("Re-draw the masking", key="pt_redraw", on_click=bump, args=(KEY_DRAW, MAX_DRAW))
draw = int(shown) - 1  # draw 1 is seed 0, the masking this page always opened on
rng = np.random.default_rng([draw, 20])

try:
    enc = model.encode(inputs.text_a, inputs.text_b)  # the model's checks too (e.g. a single-segment model)
except bert_core.BertScopeError as exc:
    st.error(ui.user_message(exc))  # in the sidebar's words: 'Sentence B', not 'text_pair'
    ui.stop()
ui.length_notes(active, enc)
ui.unknown_pieces_note(active, inputs.text_a, inputs.text_b)
ids = np.asarray(enc.input_ids)
# As in training: a [MASK] or [SEP] typed into the text is not a word either, so it is never chosen; a random
# replacement is never a special token or [UNK], and always an id the vocabulary has a piece for.
special = np.asarray(enc.special_tokens_mask) | np.isin(ids, special_token_ids(tokenizer))
masked = mask_tokens(
    ids,
    special,
    mask_token_id=tokenizer.mask_token_id,
    random_token_ids=replacement_token_ids(tokenizer, model.config.vocab_size),
    rng=rng,
    config=shares,
)
seen = tokenizer.convert_ids_to_tokens(masked.input_ids.tolist())

st.subheader("Masked language modelling")
if not info.has_mlm_head:
    # (a BERT with only its next-sentence head still judges the pairs below)
    ui.no_mlm_head(info, "show the masked-word exercise")
else:
    candidates = int((~special).sum())
    if candidates:  # (else the note below says why nothing is drawn: "0 of 0 pieces chosen" said nothing)
        st.write(
            f"Draw {draw + 1}: {len(masked.positions)} of {candidates} pieces chosen "
            f"({len(masked.positions) / max(1, candidates):.0%}; {shares.mlm_probability:.0%} on average): "
            f"{masked.count(MaskAction.MASK)} → {ui.md_escape(tokenizer.mask_token)}, "
            f"{masked.count(MaskAction.RANDOM)} → random, "
            f"{masked.count(MaskAction.KEEP)} kept."
        )
    st.code(" ".join(style.display(t) for t in seen), language=None, wrap_lines=True)
    rows = pd.DataFrame(
        {
            "position": range(len(ids)),
            "piece": [style.display(t) for t in enc.tokens],
            "chosen": masked.actions != MaskAction.NONE,
            "what happened": [
                action_text(tokenizer.mask_token, shares)[MaskAction(a)] for a in masked.actions
            ],
            "model sees": [style.display(t) for t in seen],
        }
    )
    ui.table(rows, key="pt_masking")

    positions = [int(p) for p in masked.positions]
    if not candidates:
        st.info(
            ui.md_escape(
                f"Every piece of this text is a special token ({tokenizer.mask_token}, {tokenizer.sep_token}, …), "
                "which pre-training never chooses: type some words to see a draw."
            )
        )
    elif not positions:
        st.info("No piece was chosen this time (a short text often draws none): press Re-draw.")
    else:
        scores = cache.mlm_scores(
            active,
            [int(i) for i in masked.input_ids],
            [int(t) for t in enc.token_type_ids],
            positions,
            [int(ids[p]) for p in positions],
        )
        st.metric("MLM loss at the chosen positions (mean cross-entropy, nats)", f"{scores.mean_loss:.3f}")
        table = pd.DataFrame(
            [
                {
                    "position": p.position,
                    "original": style.display(enc.tokens[p.position]),
                    "model sees": style.display(seen[p.position]),
                    # before the guesses, which run long: after them, at 1024 px the table's edge hid both
                    "P(original)": float(scores.label_probabilities[i]),
                    "loss": float(scores.losses[i]),
                    # " · " and brackets: a guessed comma read as a gap in "bank 0.04, , 0.04"
                    "top 5 guesses": " · ".join(f"{style.display(t)} ({q:.2f})" for t, q in p.as_pairs()),
                }
                for i, p in enumerate(scores.predictions)
            ]
        )
        ui.table(table, key="pt_predictions")
        st.caption(
            "The loss is computed only at the chosen positions, including the kept and randomised ones: the model "
            "cannot know which pieces were tampered with, so it has to check every one."
        )

st.subheader("Next sentence and sentence order")
# The model's own pair head judges both kinds of example: a class sees what NSP finds easy and SOP hard.
if info.has_nsp_head:
    head, judged = "P(IsNext)", lambda first, second: cache.next_sentence(active, first, second)
elif "sop" in info.heads:
    head, judged = "P(in order)", lambda first, second: cache.sentence_order(active, first, second)
else:
    head = judged = None
if judged is None:
    st.info(
        ui.md_escape(
            f"This {info.architecture_name} checkpoint has neither a next-sentence (NSP) nor a sentence-order "
            "(SOP) head, so it cannot judge sentence pairs."
        )
    )
elif inputs.text_b is None:
    st.info("Type a sentence B in the sidebar: the examples are built from your two sentences.")
else:
    a, b = inputs.text_a, inputs.text_b
    # A NotNext partner: a sentence from another "document", drawn from BERTScope's corpus generator.
    other = generate_document(np.random.default_rng([draw, 21]))[1][0].text
    nsp_label = IS_NEXT if rng.random() < 0.5 else NOT_NEXT
    sop_swapped = rng.random() < 0.5
    examples = [
        ("NSP", "IsNext: B follows A", a, b, nsp_label == IS_NEXT),
        ("NSP", "NotNext: a random sentence after A", a, other, nsp_label == NOT_NEXT),
        ("SOP", "in order: A then B", a, b, not sop_swapped),
        ("SOP", "swapped: B then A", b, a, sop_swapped),
    ]
    try:
        scores = [judged(first, second) for _, _, first, second, _ in examples]
    except bert_core.BertScopeError as exc:
        st.error(ui.user_message(exc))
        ui.stop()
    # Each pair as the model read it: a long sentence is cut to the model's length, and the whole of it, shown,
    # read as what the pair head judged (a 300-word A under "the model reads 128 pieces").
    # (as the pair head read them: the model's encode reads another family's mask spelling as its own)
    encodings = [model.encode(first, second) for _, _, first, second, _ in examples]
    examples = [
        (task, label, transforms.read_part(enc, first, 0), transforms.read_part(enc, second, 1), chosen)
        for (task, label, first, second, chosen), enc in zip(examples, encodings, strict=True)
    ]
    if any(enc.truncated for enc in encodings):
        st.caption(
            f"The model reads {tokenizer.max_length} pieces of a pair: each example is shown as far as it was "
            "read (…), and was judged on that."
        )
    drawn = [(e, score, enc) for e, score, enc in zip(examples, scores, encodings, strict=True) if e[4]]
    cols = st.columns(2)
    for col, ((task, label, first, second, _), score, enc) in zip(cols, drawn, strict=True):
        with col:
            st.markdown(f"**{task} example this draw — {ui.md_escape(label)}**")
            st.text(transforms.pair_template(enc, (first, second)))
            st.metric(f"model's {head}", f"{score:.3f}")
    ui.table(
        pd.DataFrame(
            [
                {  # the sentences last: long ones pushed the draw and the model's answer out of sight
                    "objective": task,
                    "example": label,
                    "label": 0 if label.startswith(("IsNext", "in order")) else 1,
                    "drawn": chosen,
                    f"model's {head}": score,
                    "sentence 1": first,
                    "sentence 2": second,
                }
                for (task, label, first, second, chosen), score in zip(examples, scores, strict=True)
            ]
        ),
        key="pt_pairs",
    )
    trained_for = "NSP" if info.has_nsp_head else "SOP"
    st.caption(
        f"This model's {trained_for} head answers both kinds of example. "
        "Labels use BERT's convention: 0 = IsNext / in order, 1 = NotNext / swapped. "
        "A model trained with NSP can often spot a NotNext pair by topic alone; SOP keeps the topic and changes "
        "only the order, which is harder, and is why ALBERT replaced NSP with it."
    )
