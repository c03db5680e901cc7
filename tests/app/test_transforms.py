"""The pure numpy helpers behind the views (no Streamlit)."""

from __future__ import annotations

import numpy as np
import pytest

from app import transforms
from bert_core.pieces import WORDPIECE, PieceStyle


def test_cosine_pca_and_block_mean():
    v = np.array([[1.0, 0.0], [0.0, 2.0], [0.0, 0.0]])
    np.testing.assert_allclose(transforms.cosine_matrix(v), [[1, 0, 0], [0, 1, 0], [0, 0, 0]])
    points = transforms.pca_2d(np.random.default_rng(0).normal(size=(5, 8)))
    assert points.shape == (5, 2) and np.allclose(points.mean(axis=0), 0, atol=1e-5)
    a = np.arange(16, dtype=np.float32).reshape(4, 4)
    np.testing.assert_allclose(transforms.block_mean(a, 2), [[2.5, 4.5], [10.5, 12.5]])
    assert transforms.block_mean(np.ones((2, 3, 10, 7)), 4).shape == (2, 3, 4, 4)


def test_merge_words_keeps_rows_summing_to_one():
    att = np.random.default_rng(0).random((5, 5)).astype(np.float32)
    att /= att.sum(axis=1, keepdims=True)
    merged = transforms.merge_words(att, [[0], [1, 2], [3], [4]])
    assert merged.shape == (4, 4)
    np.testing.assert_allclose(merged.sum(axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(merged[1, 0], (att[1, 0] + att[2, 0]) / 2, atol=1e-6)


def test_pca_variance_share():
    rng = np.random.default_rng(0)
    # Points on a line: the first component holds all the variance.
    line = np.outer(rng.normal(size=6), rng.normal(size=5))
    np.testing.assert_allclose(transforms.pca_variance_share(line), [1.0, 0.0], atol=1e-9)
    cloud = rng.normal(size=(20, 8))
    share = transforms.pca_variance_share(cloud)
    assert 0 < share[1] <= share[0] < 1 and share.sum() < 1
    centered = cloud - cloud.mean(axis=0)
    points = transforms.pca_2d(cloud).astype(np.float64)
    np.testing.assert_allclose((points**2).sum(axis=0) / (centered**2).sum(), share, rtol=1e-5)
    np.testing.assert_array_equal(transforms.pca_variance_share(np.ones((3, 4))), [0.0, 0.0])


def test_pca_of_points_on_a_line_has_no_second_axis_of_rounding_noise():
    """Two occurrences of a word (or three where two coincide) span a line: the second component is exactly
    zero, not ~1e-16 noise that a chart's autoscaled axis would spread out like a real second dimension."""
    rng = np.random.default_rng(1)
    two = rng.normal(size=(2, 192)).astype(np.float32)
    for points in (two, two[[0, 1, 0]], np.outer(rng.normal(size=4), rng.normal(size=64))):
        projected = transforms.pca_2d(points)
        assert np.all(projected[:, 1] == 0.0)
        assert np.all(np.abs(projected[:, 0]) > 0.1)
        np.testing.assert_array_equal(transforms.pca_variance_share(points), [1.0, 0.0])


def test_fill_mask_text_joins_a_continuation_piece(tiny_model):
    enc = tiny_model.encode("the [MASK] sat", "on [MASK] here")
    first, second = [i for i, t in enumerate(enc.tokens) if t == "[MASK]"]
    texts = ("the [MASK] sat", "on [MASK] here")
    style = tiny_model.info.piece_style
    assert transforms.fill_mask_text(texts, enc, first, "cat", style) == "the cat sat"
    assert transforms.fill_mask_text(texts, enc, first, "##s", style) == "thes sat"
    assert transforms.fill_mask_text(texts, enc, second, "the", style) == "on the here"
    assert transforms.fill_mask_text(texts, enc, 0, "x", style) == ""  # [CLS] belongs to no sentence
    # a style that marks word starts instead: a piece without the marker continues the word before it
    bpe = PieceStyle(continuation_prefix=None, word_start_marker="Ġ", unk_token="<unk>", name="BPE")
    assert transforms.fill_mask_text(texts, enc, first, "Ġcat", bpe) == "the cat sat"
    assert transforms.fill_mask_text(texts, enc, first, "s", bpe) == "thes sat"
    # byte-level pieces are written into the sentence as the characters they spell, not as 'Ã©'
    byte_level = PieceStyle(
        continuation_prefix=None, word_start_marker="Ġ", unk_token="<unk>", byte_level=True
    )
    assert transforms.fill_mask_text(texts, enc, first, "ĠcafÃ©", byte_level) == "the café sat"


def test_fill_mask_text_of_a_cut_text_ends_where_the_model_stopped_reading(tiny_model):
    """A pasted paragraph's guess ran on for 800 characters, past the cut to a [MASK] the model never sees."""
    text = "the [MASK] sat . " + "the cat sat on the mat . " * 60 + "then the [MASK] ran ."
    enc = tiny_model.encode(text)
    assert enc.truncated
    first = enc.tokens.index("[MASK]")
    style = tiny_model.info.piece_style
    shown = transforms.fill_mask_text((text, None), enc, first, "dog", style)
    assert shown.startswith("the dog sat . the cat") and shown.endswith(" …")
    assert "[MASK]" not in shown and "then" not in shown and len(shown) < 300
    cut = transforms.fill_mask_text(
        (text, None), enc, first, "dog", style, limit=40
    )  # past it: the part around
    assert cut.startswith("the dog sat") and cut.endswith(" …") and len(cut) < len(shown)
    # within the limit and read whole: as typed, but for the guess
    short = "the [MASK] sat ."
    assert (
        transforms.fill_mask_text((short, None), tiny_model.encode(short), 2, "dog", style) == "the dog sat ."
    )


def test_glued_masks_name_the_word_a_mask_was_typed_into():
    assert transforms.glued_masks("That is un[MASK]able. A [MASK] here.", "[MASK]") == ["un[MASK]able."]
    assert transforms.glued_masks("[MASK]s and x[MASK] [MASK]", "[MASK]") == ["[MASK]s", "x[MASK]"]
    assert (
        transforms.glued_masks("a <mask> b", "<mask>") == [] and transforms.glued_masks(None, "[MASK]") == []
    )
    assert transforms.glued_masks("(the [MASK].)", "[MASK]") == []  # punctuation is no word
    # a character the tokenizer reads as a word by itself (BERT's CJK) is no word the mask is typed into
    cjk = "东京[MASK]了 x[MASK]"
    assert transforms.glued_masks(cjk, "[MASK]", lambda c: "\u4e00" <= c <= "\u9fff") == ["x[MASK]"]
    assert transforms.glued_masks(cjk, "[MASK]") == ["东京[MASK]了", "x[MASK]"]


def test_grid_table_names_every_cell_in_order():
    values = np.arange(12, dtype=np.float32).reshape(2, 2, 3)
    table = transforms.grid_table(
        values,
        [[("head", [1, 3])], [("from_index", [0, 2]), ("from", ["the", "cat"])], [("to", ["a", "b", "c"])]],
        "weight",
    )
    assert list(table.columns) == ["head", "from_index", "from", "to", "weight"]
    assert len(table) == 12 and table["weight"].tolist() == list(range(12))
    assert table.iloc[7].tolist() == [3, 0, "the", "b", 7.0]  # head 3, row 0, column 1
    assert table["head"].dtype.kind == "i"
    with pytest.raises(ValueError):
        transforms.grid_table(values, [[("head", [1, 3])]], "weight")


def test_group_label_spells_the_word_in_the_style_of_its_pieces():
    tokens = ["[CLS]", "play", "##ing", "[SEP]"]
    assert transforms.group_label(tokens, [1, 2], WORDPIECE) == "playing"
    assert transforms.group_label(tokens, [0], WORDPIECE) == "[CLS]"
    bpe = PieceStyle(continuation_prefix=None, word_start_marker="Ġ", unk_token="<unk>", name="BPE")
    assert transforms.group_label(["Ġplay", "ing"], [0, 1], bpe) == "playing"
    # a lone space piece (RoBERTa's "Ġ" before a typed <mask>) spells nothing: drawn as it is, not blank
    assert transforms.group_label(["Ġthe", "Ġ", "<mask>"], [1], bpe) == "\u2423"


def test_pair_template_keeps_each_tokenizers_specials(tiny_model, family_dirs):
    import bert_core

    enc = tiny_model.tokenizer.encode("the river bank", "the money")
    assert transforms.pair_template(enc) == "[CLS] A [SEP] B [SEP]"
    assert transforms.pair_template(enc, ("x y", "z")) == "[CLS] x y [SEP] z [SEP]"
    roberta = bert_core.load_pretrained(family_dirs["roberta"]).tokenizer
    assert transforms.pair_template(roberta.encode("the bank", "the river")) == "<s> A </s> </s> B </s>"


def test_pieces_in_span_follows_offsets_not_word_ids(tiny_model):
    text = "the bank of the river"
    enc = tiny_model.tokenizer.encode(text, "the bank")
    start = text.index("bank")
    assert [enc.tokens[i] for i in transforms.pieces_in_span(enc, start, start + 4)] == ["bank"]
    # the same characters of sentence B are B's piece, not A's
    (b_piece,) = transforms.pieces_in_span(enc, 4, 8, sentence=1)
    assert enc.tokens[b_piece] == "bank" and enc.sequence_ids[b_piece] == 1
    assert transforms.pieces_in_span(enc, len(text), len(text) + 3) == []


def test_words_split_off_punctuation_as_bert_does_for_every_tokenizer(tiny_model, family_dirs):
    import bert_core

    text = "we sat by the muddy bank. don't go"
    albert = bert_core.load_pretrained(family_dirs["albert"]).tokenizer
    enc = albert.encode(text)
    # SentencePiece's own word ids keep 'bank.' together; the pages' words do not
    assert len({enc.word_ids[i] for i, t in enumerate(enc.tokens) if t in ("▁bank", ".")}) == 1
    spans = transforms.word_text_spans(enc, 0, text)
    assert [text[s:e] for _, s, e in spans] == [
        "we",
        "sat",
        "by",
        "the",
        "muddy",
        "bank",
        ".",
        "don",
        "'",
        "t",
        "go",
    ]
    (bank,) = transforms.target_occurrences(enc, "bank", albert.normalize, text=text)
    assert [enc.tokens[i] for i in bank] == ["▁bank"]
    # BERT's tokenizer already splits punctuation: the pages' words are its word ids
    bert = tiny_model.analyze(text)
    assert [k and k[1] for k in transforms.word_keys(bert)] == bert.word_ids
    assert transforms.word_groups(bert) == [
        [i for i, w in enumerate(bert.word_ids) if w == word] if word is not None else [i]
        for i, word in enumerate(bert.word_ids)
        if word is None or i == bert.word_ids.index(word)
    ]


def test_a_mark_read_as_several_pieces_of_one_character_is_one_word():
    """The demo model's tokenizer reads "…" as "...": three words to it, all made of one typed character."""
    from bert_core.tokenizer import WordPieceTokenizer

    tok = WordPieceTokenizer.from_vocab(
        ["[UNK]", "[CLS]", "[SEP]", "he", "waited", ".", "then"], ascii_twins=True
    )
    text = "he waited\u2026 then."
    enc = tok.encode(text)
    assert enc.tokens.count(".") == 4
    spans = transforms.word_text_spans(enc, 0, text)
    assert [text[s:e] for _, s, e in spans] == ["he", "waited", "\u2026", "then", "."]
    assert [w for w, _, _ in spans] == [0, 1, 2, 3, 4]  # counted as a reader counts them


def test_excerpt_keeps_the_text_around_each_span():
    text = "a " * 50 + "[MASK]" + " b" * 100 + "[MASK]" + " c" * 10
    cut = transforms.excerpt(text, [(100, 106), (306, 312)], around=5)
    assert cut == "… a a a [MASK] b b b … b b b[MASK] c c c …"
    # a text without spaces is cut where it falls, a few characters past the window
    solid = "x" * 100 + "[MASK]" + "y" * 100
    assert transforms.excerpt(solid, [(100, 106)], around=5) == "… " + "x" * 20 + "[MASK]" + "y" * 20 + " …"
    # windows that meet are one; a window at an end has no "…" there
    assert transforms.excerpt("x [MASK] y [MASK] z", [(2, 8), (11, 17)], around=3) == "x [MASK] y [MASK] z"
    assert transforms.excerpt("aaaaa bbbbb", [(0, 3)], around=2) == "aaaaa …"
    assert transforms.excerpt("abc", []) == "abc"
    # no "…" where only spaces were left out: between two windows, or a paragraph's trailing newline
    assert transforms.excerpt("aaaaa [MASK] bbbbb ccccc [MASK] ddddd", [(6, 12), (25, 31)], around=3) == (
        "aaaaa [MASK] bbbbb ccccc [MASK] ddddd"
    )
    assert transforms.excerpt("x y z [MASK] end\n", [(6, 12)], around=4) == "… y z [MASK] end"
    # widened to whole words, never beginning or ending inside one
    words = "one two three four [MASK] five six seven eight"
    assert transforms.excerpt(words, [(19, 25)], around=6) == "… three four [MASK] five six …"


def test_read_part_cuts_only_a_sentence_that_lost_pieces(tiny_model):
    """Characters the tokenizer drops at a sentence's end (a zero-width space) read as a cut, with "…"."""
    enc = tiny_model.encode("the cat sat\u200b", "the dog")
    assert not enc.truncated and transforms.read_end(enc, 0) is None
    assert transforms.read_part(enc, "the cat sat\u200b", 0) == "the cat sat\u200b"
    long = " ".join(["the cat sat"] * 40)  # past the tiny model's 64 pieces; B stays whole
    enc = tiny_model.encode(long, "the dog")
    end = transforms.read_end(enc, 0)
    assert enc.truncated and end is not None and transforms.read_end(enc, 1) is None
    kept = sum(1 for s in enc.sequence_ids if s == 0)
    assert len(tiny_model.encode(long[:end]).tokens) - 2 == kept  # the text up to the end is what was read
    assert transforms.read_part(enc, long, 0) == long[:end].rstrip() + " …"
    assert transforms.read_part(enc, "the dog", 1) == "the dog"


def test_a_guess_after_a_space_piece_of_its_own_keeps_that_space(family_dirs):
    """A RoBERTa whose <mask> keeps the space before it (lstrip off) reads "the <mask>" as "Ġthe", "Ġ", <mask>:
    a continuation guess was written onto the word before ("theal river"), where the model reads "the al"."""
    import bert_core

    model = bert_core.load_pretrained(family_dirs["roberta"])
    text = "The bank of the <mask> river."
    enc = model.encode(text)
    at = enc.tokens.index("<mask>")
    assert enc.tokens[at - 1] == "Ġ"  # the case itself: the space is a piece
    style = model.info.piece_style
    assert transforms.fill_mask_text((text, None), enc, at, "al", style) == "The bank of the al river."
    # a word-start guess brings its own space besides the lone one: both are read
    assert transforms.fill_mask_text((text, None), enc, at, "Ġcat", style) == "The bank of the  cat river."
    glued = "The bank of the<mask> river."  # no space piece: a continuation still joins the word before
    enc = model.encode(glued)
    assert transforms.fill_mask_text((glued, None), enc, enc.tokens.index("<mask>"), "al", style) == (
        "The bank of theal river."
    )
