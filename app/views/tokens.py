"""Tokens: the tokenizer's pieces as chips, their ids / segments / positions / offsets, and how a word was split."""

from __future__ import annotations

import unicodedata

import pandas as pd
import streamlit as st

import bert_core
from app import charts, transforms, ui
from bert_core.pieces import draws_nothing

st.header("Tokens")
active, inputs = ui.page_model()
# How this model's tokenizer marks word boundaries, and its unknown piece: the page's words follow it.
info = active.model.info
style = info.piece_style
tokenizer = active.model.tokenizer
unk = style.unk_token
# WordPiece reads a longer word as one unknown piece without trying its letters (None: no such limit)
limit = getattr(tokenizer, "max_input_chars_per_word", None)
# Byte-level BPE spells any text from its 256 byte pieces, so it never writes its unknown piece; SentencePiece
# writes it for the characters it lacks and keeps the rest of their word ("dogж" is ▁ d o g <unk>), where
# WordPiece makes the whole word one [UNK].
unknown = (
    ""
    if style.byte_level
    else f"; characters the vocabulary lacks become {unk}, the rest of their word is kept"
    if style.word_start_marker
    else f"; a word that cannot be spelt from the vocabulary becomes {unk}"
)
st.caption(
    ui.md_escape(
        f"{info.architecture_name} never sees words: it sees {style.name} pieces. {style.marker_help} "
        f"{tokenizer.cls_token} and {tokenizer.sep_token} are added around the text{unknown}."
    )
)
result = ui.analysis_or_stop(active, inputs.text_a, inputs.text_b, unknown_note=False)  # its red chips say it
# DistilBERT's tokenizer still writes segment ids, but the model has no table to read them with: not shown.
has_segments = active.model.config.type_vocab_size > 0

# A piece continues a word when it shares the word before it, whatever its marker says: RoBERTa's first word
# has no Ġ, yet starts a word.
words = transforms.word_keys(result)
specials = {tokenizer.cls_token, tokenizer.sep_token, tokenizer.mask_token, tokenizer.pad_token} - {None}
kinds = [
    charts.token_kind(
        t,
        bool(s),
        style,
        continues=i > 0 and words[i] is not None and words[i] == words[i - 1],
        specials=specials,
    )
    for i, (t, s) in enumerate(zip(result.tokens, result.special_tokens_mask.tolist(), strict=True))
]
rows = []
for i, tok in enumerate(result.tokens):
    seq = result.sequence_ids[i]
    start, end = (int(x) for x in result.offsets[i])
    if style.word_start_marker and tok == style.word_start_marker:
        # SentencePiece's lone "▁" stands for the space before a word, yet `tokenizers` gives it the word's
        # first character, which the next piece also covers: shown as covering nothing, as RoBERTa's lone "Ġ".
        end = start
    typed = "" if seq is None else transforms.sentence_text(result, seq)[start:end]
    # What a reader looks for first, first: in Large text at 1024 px the table runs past the page, and "typed
    # text" and "kind" sat past its scroll bar, at the foot of a long table
    rows.append(
        {
            "index": i,
            "piece": tok,
            "shown as": style.display(tok),
            "typed text": typed,
            "kind": kinds[i],
            "id": int(result.input_ids[i]),
            "position": int(result.position_ids[i]),
            **({"segment": int(result.token_type_ids[i])} if has_segments else {}),
            "sentence": "" if seq is None else "AB"[seq],
            "start": start,
            "end": end,
        }
    )
table = pd.DataFrame(rows)
if style.shown_as_written:
    # WordPiece's pieces (BERT's, DistilBERT's, ELECTRA's) are shown as written: a second column of the same
    # strings only took width, and pushed the Large-text table past a 1024 px projector's page. Decided by the
    # tokenizer, not the text, so a table's columns (and its CSV's) stay put as the user types.
    table = table.drop(columns="shown as")
hovers = [
    f"#{r['index']} {r['shown as']}  id {r['id']}"
    + (f" · segment {r['segment']}" if has_segments else "")
    + f" · position {r['position']}"
    + (f" · chars {r['start']}–{r['end']} of {r['sentence']}: {r['typed text']}" if r["sentence"] else "")
    for r in rows
]

n_unk = sum(k == "unk" for k in kinds)
# A typed "[UNK]" is the unknown token by its own name, not a word the vocabulary could not spell.
unspelt = sum(k == "unk" and r["typed text"] != unk for k, r in zip(kinds, rows, strict=True))
# Special tokens typed into the text (not the mask, which has its own note): the tokenizer reads each as the
# special itself, so "[SEP]" typed mid-sentence ends a segment in the model's eyes.
typed_specials = sorted(
    {
        r["piece"]
        for r, s in zip(rows, result.special_tokens_mask.tolist(), strict=True)
        if not s and (r["piece"] != unk or r["typed text"] == unk)  # an unspelt word is no typed [UNK]
    }
    & ((specials | {unk}) - {tokenizer.mask_token})
)
c1, c2, c3 = st.columns(3)
c1.metric("Pieces", len(result.tokens))
marker = f" ({style.continuation_prefix})" if style.continuation_prefix else ""
# Escaped only where it must be: the help icon's name for a screen reader is "Help for" the label as written,
# and "Continuations \(\#\#\)" was what it said ("##" mid-line is no Markdown)
c2.metric(
    ui.widget_label(f"Continuations{marker}"), sum(k == "continuation" for k in kinds), help=style.marker_help
)
if style.byte_level:
    c3.metric(
        "Parts of a character",
        sum(style.partial(t) for t in result.tokens),
        help="Pieces holding some of the UTF-8 bytes of a character the vocabulary lacks, shown as \\x..",
    )
else:
    c3.metric(ui.md_escape(unk), n_unk)
if unspelt:
    # A word past the limit is no vocabulary gap.
    too_long = sum(
        bool(limit) and k == "unk" and len(tokenizer.normalize(r["typed text"])) > limit
        for k, r in zip(kinds, rows, strict=True)
    )
    why = (
        ""
        if not too_long
        else f"; {'it is' if unspelt == 1 else 'one of them is' if too_long == 1 else f'{too_long} of them are'} "
        f"longer than {limit} characters, "
        f"which WordPiece reads as {unk} whatever the letters"
    )
    what = (
        ("stretch of characters", "stretches of characters")
        if style.word_start_marker  # SentencePiece: only what it lacks became the unknown piece
        else ("word or mark", "words or marks")
    )
    st.warning(
        ui.md_escape(
            f"{unspelt} {what[unspelt != 1]} could not be spelt from the vocabulary and became {unk}{why}"
        )
        + " (red chips)."
    )
if typed_specials:
    st.caption(
        ui.md_escape(
            f"Typed {', '.join(typed_specials)}: the tokenizer reads "
            + ("it" if len(typed_specials) == 1 else "each")
            + " as the special token itself, not as letters, and the model sees it as it sees the ones the "
            "tokenizer adds."
        )
    )

# A tokenizer BERTScope trained on ASCII text reads the typographic marks its vocabulary lacks as their ASCII
# twins (bert_core.tokenizer.ASCII_TWINS): said, since the chips show "'" where the user typed "’".
twins = getattr(tokenizer, "ascii_twins", {})
read_as = sorted({c for text in (inputs.text_a, inputs.text_b or "") for c in text if c in twins})
if read_as:
    groups: dict[str, list[str]] = {}
    for c in read_as:
        groups.setdefault(twins[c], []).append(c)
    st.caption(
        ui.md_escape(
            "This tokenizer reads "
            + ", ".join(f"{' '.join(marks)} as {twin}" for twin, marks in groups.items())
            + ": its vocabulary was trained on text without them, and has the plain marks."
        )
    )
# BERT's normaliser deletes control and format characters (zero-width spaces, soft hyphens, direction marks)
# before it splits words, so "boat\u200bdrifted" is one word to it: said, since nothing on screen shows them.
typed_texts = [t for t in (inputs.text_a, inputs.text_b) if t]


def _selector(c: str) -> bool:
    """A character that draws nothing (a format character, a variation selector: an emoji's U+FE0F is a mark,
    Mn, to Unicode) or the grapheme joiner; an uncased tokenizer strips the marks among them with the
    accents."""
    return draws_nothing(c) or c == "\u034f"


invisible = {
    c
    for t in typed_texts
    for c in t
    if (unicodedata.category(c) == "Cc" or _selector(c)) and c not in "\t\n\r"
}
gone = {c: sum(t.count(c) - tokenizer.normalize(t).count(c) for t in typed_texts) for c in invisible}
removed = sum(n for n in gone.values() if n > 0)
if removed:
    names = ", ".join(
        sorted(f"U+{ord(c):04X} {unicodedata.name(c, 'control')}" for c, n in gone.items() if n > 0)
    )
    st.caption(
        ui.md_escape(
            f"The tokenizer removed {removed} invisible "
            + ("character" if removed == 1 else "characters")
            + f" ({names}) before splitting words: the text on either side of one is read as if typed together."
        )
    )


# An uncased normaliser strips the marks that sit on a letter: an accent ("café" is "cafe" to it), and the vowel
# signs and tone marks of Thai or Devanagari, which left a Thai sentence 25 pieces of bare consonants without a
# word on screen. Counted on the decomposed text, as the normaliser decomposes before it strips.
def _marks(text: str) -> int:
    return sum(
        unicodedata.category(c) in ("Mn", "Me") and not _selector(c)
        for c in unicodedata.normalize("NFD", text)
    )


stripped = sum(_marks(t) - _marks(tokenizer.normalize(t)) for t in typed_texts)
if stripped > 0:
    st.caption(
        ui.md_escape(
            f"The tokenizer removed {stripped} "
            + ("mark that sits" if stripped == 1 else "marks that sit")
            + " on a letter (accents, as in é → e, and the vowel signs and tone marks of scripts such as "
            "Thai or Devanagari) before splitting words: the model reads the text without them."
        )
    )

fig = charts.token_chips(result.tokens, kinds, hovers, style=style, font_size=ui.font_size())
ui.show_figure(fig, key="tokens_chips", data=table, filename="tokens")

st.subheader("Table")
offset = active.model.config.position_offset
if offset:
    # RoBERTa's table and hovers gave "<s>" position 2 with no word of why: only the Embeddings page said it
    st.caption(
        ui.md_escape(
            f"{info.architecture_name} numbers positions from {offset}: the first {offset} rows of its position "
            f"table are never used for text (one is its padding row), so the first piece, "
            f"{style.display(result.tokens[0])}, reads position {offset}."
        )
    )
# Without a sentence B, Large text leaves out the columns that then say nothing (every piece of A, segment 0):
# the table still ran past a 1024 px page's edge. The CSV keeps them.
constant = ["segment", "sentence"] if ui.font_size() > ui.NORMAL_FONT and result.text_pair is None else []
ui.table(table.drop(columns=[c for c in constant if c in table]), key="tokens_table")

st.subheader("How a word was split")
if not hasattr(tokenizer, "wordpiece_steps"):
    st.info(
        ui.md_escape(
            f"{info.architecture_name} splits words with {style.name}, not WordPiece's greedy longest match: "
            "the pieces above are its choice."
        )
    )
    ui.stop()
st.caption(
    ui.md_escape(
        f"{style.name} is greedy: at each point it takes the longest piece in the vocabulary that matches, "
        f"then continues after it with a {style.continuation_prefix or ''}piece."
    )
)
words = []
for seq in (0, 1) if result.text_pair is not None else (0,):
    text = transforms.sentence_text(result, seq)
    words += [text[s:e] for _, s, e in transforms.word_text_spans(result, seq)]


def splits_alone(word: str) -> bool:
    """The typed word is one word to WordPiece: a "…" that the tokenizer reads as "..." is three, each a piece
    of its own, and has no split of its own to show; nor has a typed special token ([MASK]), which the
    tokenizer takes whole before WordPiece runs (its table read as a greedy match of "[MASK]")."""
    if word.strip() in specials | {unk}:
        return False
    try:
        tokenizer.wordpiece_steps(word)
    except bert_core.InputError:
        return False
    return True


words = [w for w in dict.fromkeys(w for w in words if w.strip()) if splits_alone(w)]
if not words:
    st.info("No words to split.")
else:
    # The longest word that is split into pieces: the longest word, the default before, was often one whole
    # piece ("drifted"), a table of one step, while "fa ##st" sat further down the list.
    split = {w: len(tokenizer.wordpiece_steps(w)) > 1 for w in words}
    default = max(range(len(words)), key=lambda i: (split[words[i]], len(words[i])))
    ui.follow_default("tokens_word", words[default], lambda v: v in words)  # the new text's default
    ui.start("tokens_word", words[default], lambda v: v in words)
    word = st.selectbox("Word", words, index=default, **ui.bound("tokens_word"), persist_state="session")
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
                "matched": step.matched if step.matched is not None else f"(none: the word becomes {unk})",
            }
            for n, step in enumerate(steps)
        ]
        ui.table(pd.DataFrame(step_rows), key="tokens_steps")
        pieces = [s.matched for s in steps if s.matched is not None]
        if pieces and pieces[-1] == unk:
            pieces = [unk]
        st.text("Pieces: " + " ".join(pieces))
        if pieces == [unk] and not steps[0].tried and limit and len(tokenizer.normalize(word)) > limit:
            st.caption(
                f"Nothing was tried: WordPiece reads a word of more than {limit} characters as one {unk}, "
                "whatever its letters."
            )
        if len(steps) and steps[0].tried:
            st.caption(
                f"Normalised (as the model sees it): {ui.md_escape(active.model.tokenizer.normalize(word))}"
            )
