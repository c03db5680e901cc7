"""Word senses (the lecture demo): one word in several sentences; how alike its vectors are, layer by layer."""

from __future__ import annotations

import unicodedata

import numpy as np
import pandas as pd
import streamlit as st

import bert_core
from app import charts, inputs, transforms, ui
from bert_core.pieces import with_own_mask
from bert_core.words import not_a_word

PRESET_FILE = inputs.EXAMPLES_DIR / "word_senses_bank.txt"
FALLBACK_PRESET = """We sat on the bank of the river and watched the water. | river
The boat drifted slowly toward the muddy bank. | river
Fishermen lined the bank, waiting for the tide. | river
She went to the bank to deposit her salary. | money
The bank raised its interest rates again. | money
He borrowed money from the bank to buy a house. | money"""


def preset() -> str:
    try:
        return PRESET_FILE.read_text(encoding="utf-8").strip()
    except OSError:
        return FALLBACK_PRESET


def occurrence_senses(sense: str) -> list[str]:
    """The senses a line gives, one per occurrence of the word when comma-separated ("river, money"); one
    sense ("" when none) for all of them otherwise."""
    given = [part.strip() for part in sense.split(",")]
    return given if len(given) > 1 else [sense]


def sense_at(given: list[str], k: int) -> str:
    """The sense of the word's k-th occurrence in a line that gives `given` (`occurrence_senses`); "" past
    those a line gives one each for."""
    if len(given) == 1:
        return given[0]
    return given[k] if k < len(given) else ""


def parse(text: str) -> tuple[list[tuple[str, str]], list[str]]:
    """Lines 'sentence | sense' -> [(sentence, sense)] (the sense is optional: '' when missing), and the
    non-blank lines that hold no sentence ("| river"), which are left out."""
    out, empty = [], []
    for line in text.splitlines():
        if not line.strip():
            continue
        sentence, _, sense = line.rpartition("|") if "|" in line else (line, "", "")
        if sentence.strip():
            out.append((sentence.strip(), sense.strip()))
        else:
            empty.append(line.strip())
    return out, empty


st.header("Word senses")
st.caption(
    "The same word gets a different vector in each sentence. At layer 0 it is what the embedding layer gives "
    "(its pieces' embeddings plus their positions', normalised), so two uses differ only by where they stand "
    "and the pieces they were read as; higher up the context moves it, "
    "and senses drift apart, as the preset's river bank and money bank do. Read the gap between senses, not a "
    "cosine's level: in upper layers even unrelated words have positive cosines, and a word drifts with its "
    "context within one sense too (Ethayarajh, 2019)."
)
active, _ = ui.page_model(need_text=False)
large = bool(st.session_state.get(ui.KEY_LARGE))
if not large:
    st.caption("Presenting? Turn on *Large text* under Display in the sidebar.")
fs = ui.font_size()

# In Large text at 1024 px a quarter of the page wrapped the occurrence choice a word a line: stacked there
c1, c2 = (st.container(), st.container()) if large else st.columns([3, 1])
raw = c1.text_area(
    "Sentences, one per line; end a line with | sense to group it (e.g. … | river)",
    ui.start("senses_text", preset()),
    **ui.bound("senses_text"),
    persist_state="session",
    height=ui.box_height(200),
    help="The sense after | colours the points and decides which pairs count as same-sense. A line with the "
    "word twice may give each its own: … | river, money. "
    f"At most {inputs.MAX_LINES} lines of {inputs.line_chars():,} characters each are used.",
)
typed_target = c2.text_input(
    "Target word",
    ui.start("senses_word", "bank"),
    **ui.bound("senses_word"),
    persist_state="session",
    help="Whole words only ('banks' is not 'bank'). Spaces and punctuation around it are ignored. A phrase "
    "('river bank', or a Chinese word of several characters) is found where its words stand one after another.",
)
OCCURRENCE_CHOICES = {"first": "the first", "last": "the last", "each": "each one (a point each)"}
ui.option_by_name("senses_occurrence", OCCURRENCE_CHOICES)
which = c2.radio(
    "Where it appears more than once in a sentence, use",
    list(OCCURRENCE_CHOICES),
    format_func=OCCURRENCE_CHOICES.get,
    **ui.bound("senses_occurrence"),
    persist_state="session",
    help="'Each one' puts every occurrence on the charts, e.g. two banks in one sentence. A point takes its "
    "line's sense, or its own where the line gives one per occurrence: … | river, money.",
)
tokenizer = active.model.tokenizer
typed_piece = typed_target.strip()
if not_a_word(typed_piece, tokenizer):  # "[mask]" too
    # Stripped of its punctuation it became "MASK" or "ing", and the page said the word was not in sentences
    # that visibly held it.
    st.info(
        ui.md_escape(f"'{ui.clip(typed_piece, 40)}'")
        + " is a special token or a word piece, not a word: its vector is no word's meaning to compare. Type a "
        "whole word of the sentences (its pieces are averaged into one vector)."
    )
    ui.stop()
target = transforms.clean_target(typed_target)
if not target:
    st.info("Type the target word.")
    ui.stop()
if target != typed_target.strip():
    # "Bank!" drew the charts of "bank" without a word of the "!" left behind
    st.caption(
        ui.md_escape(
            f"Looking for '{ui.clip(target, 60)}': the punctuation typed around it is no part of a word."
        )
    )
style = active.model.info.piece_style
try:
    target_enc = tokenizer.encode(target)
except bert_core.InputError:
    st.info("The target has no letters or digits the model can read; type a word.")
    ui.stop()
target_words = [
    target[s:e] for _, s, e in transforms.word_text_spans(target_enc, 0, target) if target[s:e].strip()
]
# A phrase is looked for as its words one after another: "银行" (a bank) is "银", "行" to BERT, which reads each
# Chinese character as a word, and was refused as "not a single word", so Chinese had no word senses at all
wanted: str | list[str] = target if len(target_words) == 1 else target_words
if len(target_words) > 1:
    ideographs = all(
        len(w) == 1 and unicodedata.name(w, "").startswith("CJK UNIFIED IDEOGRAPH") for w in target_words
    )
    st.caption(
        ui.md_escape(f"'{ui.clip(target, 60)}' is {len(target_words)} words to this model's tokenizer (")
        + ui.md_escape(
            ", ".join(f"'{w}'" for w in target_words[:12]) + (", …" if len(target_words) > 12 else "")
        )
        + "): a sentence has it where they stand one after another, and its vector there is the mean of all "
        "their pieces' vectors."
        + (
            " BERT's tokenizers read each Chinese character (a kanji, a hanja) as a word of its own."
            if ideographs
            else ""
        )
    )
if target == typed_target.strip() != typed_target:  # only spaces: punctuation was said above ("Bank!" twice)
    st.caption(
        "Looking for " + ui.md_escape(f"'{ui.clip(target, 60)}'") + " (spaces around the word are ignored)."
    )
items, senseless = parse(raw)
if senseless:  # dropped without a word, a lecturer's "| money" line looked read
    st.warning(
        "A line with nothing before its | has no sentence, so it is left out: "
        + ", ".join(ui.md_escape(f"“{ui.clip(line, 40)}”") for line in senseless)
        + "."
    )
sentences, notes = inputs.prepare_lines([s for s, _ in items])
items = items[: len(sentences)]
for note in notes:
    st.warning(note)
if len(items) < (1 if which == "each" else 2):
    st.info("Type at least two sentences (one per line).")
    ui.stop()

batch = ui.lines_analysis(active, sentences)
if batch is None:
    ui.stop()

normalize = tokenizer.normalize
specials = transforms.typed_specials(tokenizer)  # no word ("[MASK]" was counted as the word "mask")
# found: (sentence number, token indices of one occurrence, label suffix naming the occurrence or "", its sense)
found, missing, cut, repeated, partly_cut, miscounted = [], [], [], [], [], []
char_cut: list[int] = []  # sentences whose every occurrence lies past the line's character cut
for n, r in zip(batch.used, batch.results, strict=True):
    occurrences = transforms.target_occurrences(r, wanted, normalize, specials=specials)
    total = len(occurrences)
    if r.truncated:
        # Count the occurrences in the whole sentence too: the ones past the model's limit must not vanish
        # silently (with 'last', the last one the model read is then not the sentence's last).
        # read as the model's encode read it (a typed [MASK] as RoBERTa's one <mask>, not six pieces)
        whole = tokenizer.encode(
            with_own_mask(sentences[n], tokenizer.mask_token), max_length=r.num_tokens_before_truncation + 2
        )
        total = len(
            transforms.target_occurrences(whole, wanted, normalize, text=sentences[n], specials=specials)
        )
    if not occurrences and not total and len(items[n][0]) > len(sentences[n]):
        # The line was cut to its first characters before the model read it: a target past that cut was said
        # to be "not in these sentences" (whole words only), above the note that the line was cut.
        typed = with_own_mask(items[n][0], tokenizer.mask_token)
        # at most 4 pieces a character (byte-level BPE: one per UTF-8 byte), and the specials
        whole = tokenizer.encode(typed, max_length=4 * len(typed) + 3)
        if transforms.target_occurrences(whole, wanted, normalize, text=items[n][0], specials=specials):
            char_cut.append(n)
            continue
    if not occurrences:
        (cut if total else missing).append(n)
        continue
    # A line may give one sense per occurrence ("… bank … bank. | river, money"): the k-th is the k-th's.
    # split only where there are several: "money, finance" on a line with one bank stays one sense
    given = occurrence_senses(items[n][1]) if total > 1 else [items[n][1]]
    if len(given) > 1 and (len(given) != total or "" in given):  # "| river," gives the second no sense
        miscounted.append((n, len(given), total))

    if which == "each" and total > 1:
        found.extend(
            (n, idx, f" · {target} #{k + 1}", sense_at(given, k)) for k, idx in enumerate(occurrences)
        )
    else:
        k = len(occurrences) - 1 if which == "last" else 0
        found.append((n, occurrences[k], "", sense_at(given, k)))
    if total > 1:
        repeated.append((n, total))
    if total > len(occurrences):
        partly_cut.append((n, total - len(occurrences), total))
if missing:
    # A cased model's "Bank" is another word than its "bank": said so, where "whole words only" was the reason
    # given for a sentence that held the word in capitals (or "cafe" for "café")
    def folded(text: str) -> str:
        return "".join(
            c for c in unicodedata.normalize("NFD", normalize(text).lower()) if not unicodedata.combining(c)
        )

    # only of a model that tells capitals or accents apart: an uncased one's "Straße" is no "strasse" either
    cased = normalize("A") != normalize("a") or normalize("é") != normalize("e")
    read = dict(zip(batch.used, batch.results, strict=True))
    other_case = [
        n
        for n in missing
        if cased and transforms.target_occurrences(read[n], wanted, folded, specials=specials)
    ]
    st.warning(
        # said of the target: "'banks' is not 'bank'" under the target "river" said nothing (and "'citys'"
        # would be no word)
        "The target word is not in these sentences "
        # the target cut as the sentences are: a 300-character one was quoted whole
        + ui.md_escape(
            f"(whole words only: '{ui.clip(target, 60)}' inside a longer word does not count)"
            if isinstance(wanted, str)
            # a phrase's sentences hold its words apart, in another order, or not at all
            else "(its words one after another: "
            + " then ".join(f"'{ui.clip(w, 20)}'" for w in target_words[:6])
            + (" …" if len(target_words) > 6 else "")
            + ")"
        )
        # named as the other warnings name sentences: "3. Two banks merged.; 6. …" ran one into the next
        + ", which are left out: "
        + ", ".join(ui.md_escape(f"sentence {n + 1} (“{ui.clip(sentences[n], 60)}”)") for n in missing)
        + "."
        + (
            ui.md_escape(
                f" This model tells capitals and accents apart, so to it a word written otherwise is another "
                f"word: {'sentence' if len(other_case) == 1 else 'sentences'} "
                f"{', '.join(str(n + 1) for n in other_case)} "
                f"{'has' if len(other_case) == 1 else 'have'} '{ui.clip(target, 60)}' only in other capitals "
                "or accents."
            )
            if other_case
            else ""
        )
        + (
            # the whole Thai sentence is one word to BERT: "ธนาคาร" inside it was "not in these sentences"
            " Thai, Lao, Khmer and Burmese are written without spaces between words, and the tokenizer splits "
            "words only at spaces and punctuation: a phrase of them is one word to it, so a word inside one is "
            "never found on its own."
            if any(
                0x0E00 <= ord(c) <= 0x0EFF or 0x1000 <= ord(c) <= 0x109F or 0x1780 <= ord(c) <= 0x17FF
                for c in target
            )
            else ""
        )
    )
if char_cut:
    st.warning(
        f"The target word comes only after the first {inputs.line_chars():,} characters of these sentences, "
        "all that is read of each, so they are left out: " + ", ".join(f"sentence {n + 1}" for n in char_cut)
    )
limit = tokenizer.max_length
if cut:
    st.warning(
        f"The model reads at most {limit} pieces and these sentences are cut off before the target word, so "
        "they are left out: " + ", ".join(f"sentence {n + 1}" for n in cut)
    )
if partly_cut:
    st.warning(
        f"The model reads at most {limit} pieces, so occurrences past that are left out: "
        + ", ".join(f"sentence {n + 1} ({k} of {t})" for n, k, t in partly_cut)
        + ("; 'last' uses the last one the model read." if which == "last" else ".")
    )
if repeated:
    st.caption(
        "The word appears more than once in "
        + ", ".join(f"sentence {n + 1} ({k}×)" for n, k in repeated)
        + {
            "first": ": the first occurrence is used.",
            "last": ": the last occurrence is used.",
            "each": ": each occurrence is its own point (numbered #1, #2, … in the labels); pairs from the "
            "same sentence are left out of the same-sense / different-sense lines, since they share all "
            "their context.",
        }[which]
    )
if miscounted:
    st.warning(
        "A line gives one sense per occurrence of the word when it gives as many as there are, none empty: "
        "occurrences past those given (or given an empty one) have no sense, and senses past the occurrences "
        "are not used: "
        + ", ".join(
            f"sentence {n + 1} ({g} senses, {t} occurrence{'s' if t != 1 else ''})" for n, g, t in miscounted
        )
    )
if len(found) < 2:
    st.info(
        "The target word must appear in at least two sentences (or twice in one, with 'each one' chosen above)."
    )
    ui.stop()

# vectors[k, l] = mean over the word's pieces of hidden state l, for the k-th sentence that has the word
results = dict(zip(batch.used, batch.results, strict=True))
vectors = np.stack([results[n].hidden_states[:, idx].mean(axis=1) for n, idx, *_ in found])  # (K, L + 1, H)
# The pieces as the sentences have them, not as the word alone splits: a BPE word after a space is another
# piece (RoBERTa reads "bank" alone as "b an k", after a space as "␣bank").
read_as: dict[str, list[int]] = {}
for n, idx, *_ in found:
    sentence_numbers = read_as.setdefault(" ".join(style.display(results[n].tokens[i]) for i in idx), [])
    if n + 1 not in sentence_numbers:
        sentence_numbers.append(n + 1)
unk = tokenizer.unk_token
if unk and all(results[n].tokens[i] == unk for n, idx, *_ in found for i in idx):
    # 银行 on an English vocabulary drew every chart of [UNK] [UNK] under a grey caption: the room reads the
    # charts as the word's, and they are the unknown piece's (which every character the model lacks shares)
    st.warning(
        ui.md_escape(
            f"This model does not know '{ui.clip(target, 60)}': it reads it as {' and as '.join(read_as)}, the "
            "piece that stands for every character its vocabulary lacks, so these charts are of that piece in each "
            "context, not of the word. Use a model whose vocabulary has it."
        )
    )
elif len(read_as) > 1 or (
    any(len(idx) > 1 for _, idx, *_ in found)
    # a phrase read as its words, one piece each, was said twice: the caption above says its words and mean
    and (isinstance(wanted, str) or list(read_as) != [" ".join(style.display(w) for w in target_words)])
):
    ways = [
        f"{pieces}"
        + (f" (sentence{'s' if len(ns) > 1 else ''} {', '.join(map(str, ns))})" if len(read_as) > 1 else "")
        for pieces, ns in read_as.items()
    ]
    mean = (
        ": its vector in each sentence is the mean of its pieces' vectors."
        if isinstance(wanted, str) and any(len(idx) > 1 for _, idx, *_ in found)
        else "."
    )
    st.caption(ui.md_escape(f"'{ui.clip(target, 60)}' is read as {' and as '.join(ways)}") + mean)
n_layers = vectors.shape[1] - 1
full_names = [f"{n + 1}. {sense or 'sentence'}{suffix}" for n, _, suffix, sense in found]  # for the CSVs
# a long sense cut on the axes, as Sentence vector's lines are ("money and financial institutions where…"
# pressed the matrix into a corner); the PCA's hover and the CSVs give it whole
names = [f"{n + 1}. {ui.short_label(sense or 'sentence')}{suffix}" for n, _, suffix, sense in found]
senses = [sense for *_, sense in found]
hovers = [
    f"{n + 1}. {sentences[n]}" + (f" ({sense})" if sense else "") + suffix for n, _, suffix, sense in found
]
NO_SENSE = "(no sense given)"
sense_names = list(dict.fromkeys(s or NO_SENSE for s in senses))
sense_groups = [sense_names.index(s or NO_SENSE) for s in senses]

start = ui.start("senses_layer", n_layers, lambda v: isinstance(v, int) and 0 <= v <= n_layers)
ui.say_if_linked_out_of_range("senses_layer", "layer", 0, n_layers, f"layer {n_layers}")
layer = st.slider(
    "Layer (0 = embeddings)",
    0,
    n_layers,
    start,
    **ui.bound("senses_layer"),
    persist_state="session",
)
sims = np.stack(
    [transforms.cosine_matrix(vectors[:, layer_]) for layer_ in range(n_layers + 1)]
)  # (L + 1, K, K)

stretch = st.toggle(
    "Stretch the colours to these values",
    **ui.bound("senses_stretch"),
    persist_state="session",
    help="Cosines of one word's vectors are often all between 0.5 and 1, which the full −1…1 scale paints "
    "the same blue. Stretched, the scale runs from the lowest cosine between two sentences at any layer to 1, "
    "so layers stay comparable.",
)
off_diagonal = ~np.eye(sims.shape[-1], dtype=bool)
low = float(sims[:, off_diagonal].min()) if off_diagonal.any() else -1.0
# Large text (a projector) stacks the two charts: side by side on a 1280 px screen, the matrix shrank to
# ~200 px with its cell numbers running into each other.
m1, m2 = ui.side_by_side(2, "senses")
with m1:
    fig = charts.heatmap(
        sims[layer],
        names,
        names,
        title=f"Cosine similarity of the target word, layer {layer}",
        numbered=True,  # the names already say which sentence ("1. river"): no 0-based position beside them
        zmin=min(low, 0.999) if stretch else -1.0,
        zmax=1.0,
        colorscale="Blues" if stretch else "RdBu",
        value_name="cosine",
        font_size=fs,
        width_px=ui.chart_width(),
        separator=" ↔ ",  # a cosine goes both ways, and " · " is inside the names ("1. river · bank #1")
        # Cell numbers a little smaller than the labels in large text: at 22 px they filled small cells edge to
        # edge (many sentences make many cells, even at full width); none where a cell is too narrow for one.
        cell_numbers=fs if not large else round(fs * 0.8),
    )

    matrix_table = ui.later(
        transforms.grid_table,
        sims,
        [[("layer", range(n_layers + 1))], [("sentence_i", full_names)], [("sentence_j", full_names)]],
        "cosine",
    )
    ui.show_figure(
        fig,
        key="senses_matrix",
        data=matrix_table,
        filename="word_sense_similarity",
        caption=" ".join(
            [f"Colours stretched to {low:.2f}…1 (the lowest cosine at any layer)."] * stretch
            + [charts.NO_CELL_NUMBERS] * (not charts.cells_written(fig))
        )
        or None,
    )

with m2:
    points = transforms.pca_2d(vectors[:, layer])
    share = transforms.pca_variance_share(vectors[:, layer])
    point_names = [f"{n + 1}{suffix}" for n, _, suffix, _ in found]  # the matrix's sentence numbers
    scatter = charts.scatter_2d(
        points,
        sense_groups,
        sense_names,
        hovers,
        axis_names=(f"PC 1 ({share[0]:.0%} of variance)", f"PC 2 ({share[1]:.0%})"),
        title=f"PCA of the target word's vectors, layer {layer}",
        font_size=fs,
        marker_size=24 if large else 14,
        texts=point_names,
        width_px=ui.chart_width(),
    )
    caption = (
        "Colour = the sense written after | on the sentence's line; the number counts the sentences (blank "
        "lines are not counted). Hover a point for its sentence."
        if any(senses)
        else "The number counts the sentences (blank lines are not counted): end a line with | and a sense "
        "(e.g. … | river) to colour the points by it. Hover a point for its sentence."
    )
    # Points of one vector lie on one another, one colour hiding the other: said, with why at layer 0.
    stacked = transforms.same_rows(vectors[:, layer])
    if stacked:
        caption += " " + ui.md_escape(  # the target as typed is in the names ("7 · bank #1")
            "; ".join(
                f"{', '.join(point_names[i] for i in g)} are one point (the same vector)" for g in stacked
            )
            + "."
        )
        if layer == 0:
            caption += (
                " At layer 0 a word's vector comes from its embeddings only, its piece and its place in the "
                "sentence: the same word at the same place is the same vector, whatever the sentence says."
            )
    ui.show_figure(
        scatter,
        key="senses_pca",
        data=pd.DataFrame(
            {"sentence": full_names, "sense": senses, "pc1": points[:, 0], "pc2": points[:, 1]}
        ),
        filename=f"word_sense_pca_layer{layer}",
        caption=caption,
    )

labelled = [s for s in senses if s]
if len(set(labelled)) >= 2:
    same, cross = [], []
    k = len(senses)
    # Two occurrences from one sentence share their whole context (whatever senses the line gives them): not
    # evidence of how the model separates senses, so such pairs are left out of both lines.
    pairs = [
        (i, j)
        for i in range(k)
        for j in range(i + 1, k)
        if senses[i] and senses[j] and found[i][0] != found[j][0]
    ]
    for layer_ in range(n_layers + 1):
        s = [sims[layer_, i, j] for i, j in pairs if senses[i] == senses[j]]
        c = [sims[layer_, i, j] for i, j in pairs if senses[i] != senses[j]]
        same.append(float(np.mean(s)) if s else float("nan"))
        cross.append(float(np.mean(c)) if c else float("nan"))
    layers = list(range(n_layers + 1))
    # A sense given by one sentence only has no pair of its own: a legend entry with no line said nothing.
    series = {
        name: v for name, v in (("same sense", same), ("different sense", cross)) if not np.isnan(v).all()
    }
    if "same sense" not in series:
        st.caption(
            "No sense here has two sentences (from different lines), so there is no same-sense line: give a sense "
            "a second sentence to see the gap."
        )
    if not series:
        ui.stop()  # every pair shares its line: nothing to draw
    line_fig = charts.lines(
        layers,
        series,
        title="Mean cosine similarity by layer",
        value_name="mean cosine",
        font_size=fs,
        # fixed by meaning: "different sense" alone was drawn in the blue that means "same sense" elsewhere
        colours={"same sense": charts.SEQUENCE_COLORS[0], "different sense": charts.SEQUENCE_COLORS[1]},
    )
    # One line alone got no legend, and nothing said whether it was the same-sense or the different-sense one.
    line_fig.update_layout(showlegend=True)
    # The layer the charts above show, so the audience sees where on the curve it is.
    line_fig.add_vline(x=layer, line={"dash": "dot", "color": "#888", "width": 2})
    ui.show_figure(
        line_fig,
        key="senses_lines",
        data=pd.DataFrame({"layer": layers, "same_sense": same, "cross_sense": cross}),
        filename="word_sense_by_layer",
        # at layer 0 the vectors differ by position only: a gap there is where the words stand, not their sense
        caption="The gap between the lines is how much the model separates the senses at that layer; at layer 0 "
        "the vectors differ only by position (and segment), and by the pieces a word was read as (RoBERTa's "
        "'bank' and '␣bank' are two), so a gap there is not sense."
        if len(series) == 2
        else None,
    )
else:
    # Only the senses of lines left out above: every line's split at its commas named senses of lines that were
    # used ("money, finance" for one occurrence is one sense), or of an occurrence 'first' did not pick
    dropped = {s for n in (*missing, *cut, *char_cut) for s in occurrence_senses(items[n][1]) if s}
    lost = sorted(dropped - set(labelled))
    if lost and len(set(labelled) | set(lost)) >= 2:
        # "Label at least two senses" was said of lines labelled with two, whose "river" line was left out
        st.caption(
            ui.md_escape(
                "No sentence used here has the sense "
                + ", ".join(f"'{ui.clip(s, 30)}'" for s in lost)
                + " (the sentences left out are named above), so there is no second sense to compare with."
            )
        )
    else:
        st.caption(
            "Label at least two senses (… | river, … | money) to compare same-sense and cross-sense similarity."
        )
