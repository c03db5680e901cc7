"""Word senses: how the target word is found, normalised and reported; sense groups; bad and long lines."""

from __future__ import annotations

import numpy as np
import pytest

import bert_core
from tests.app.conftest import decode, figure, hover
from tests.app.test_other_pages import z

PAGE = "views/word_senses.py"


@pytest.fixture
def senses(make_app):
    """senses(lines, target="bank") -> the Word senses page run on these lines."""

    def run(lines: list[str], target: str = "bank"):
        at = make_app(PAGE)
        at.text_input(key="senses_word").set_value(target)
        at.text_area(key="senses_text").set_value("\n".join(lines)).run()
        assert not at.exception, [e.value for e in at.exception]
        return at

    return run


def text_of(elements) -> str:
    return " ".join(e.value for e in elements).replace("\\", "")


def unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def test_multi_piece_target_is_the_mean_of_its_pieces(senses, tiny_checkpoint):
    m = bert_core.load_pretrained(tiny_checkpoint)
    lines = ["the unwanted dog", "an unwanted cat", "it was unwanted"]
    at = senses(lines, target="unwanted")
    assert "un ##want ##ed" in text_of(at.caption) and "mean of its pieces" in text_of(at.caption)
    at.slider(key="senses_layer").set_value(2).run()
    vecs = []
    for line in lines:
        r = m.analyze(line)
        start = r.tokens.index("un")
        assert r.tokens[start : start + 3] == ["un", "##want", "##ed"]
        vecs.append(r.hidden_states[2, start : start + 3].mean(axis=0))
    u = unit(np.stack(vecs))
    np.testing.assert_allclose(z(at, "senses_matrix"), u @ u.T, atol=1e-5)


def test_whole_words_only_and_repeated_target(senses, tiny_checkpoint):
    m = bert_core.load_pretrained(tiny_checkpoint)
    at = senses(["the banks", "the bank and the bank", "my bank"])
    warned = text_of(at.warning)
    assert (
        "not in these sentences" in warned
        and "sentence 1 (“the banks”)." in warned
        and "'bank' inside a longer word does not count" in warned
    )
    assert "sentence 2 (2×)" in text_of(at.caption) and "first occurrence" in text_of(at.caption)
    at.slider(key="senses_layer").set_value(1).run()
    r2, r3 = m.analyze("the bank and the bank"), m.analyze("my bank")
    first = r2.hidden_states[1, r2.tokens.index("bank")]
    u = unit(np.stack([first, r3.hidden_states[1, r3.tokens.index("bank")]]))
    np.testing.assert_allclose(z(at, "senses_matrix"), u @ u.T, atol=1e-5)


def test_target_with_punctuation_and_spaces_is_cleaned(senses):
    at = senses(["the bank", "my bank"], target="  bank. ")
    assert not at.error
    assert "Looking for 'bank'" in text_of(at.caption)
    assert figure(at, "senses_matrix")
    assert at.text_input(key="senses_word").value == "  bank. "  # what was typed stays
    # hover names each cell by its sentences' own numbers, once ("1. sentence → 2. sentence")
    cell = hover(figure(at, "senses_matrix")["data"][0], 0, 1).split("<br>")[0]
    assert cell.startswith("1. ") and " ↔ 2. " in cell and ": " not in cell


@pytest.mark.parametrize(
    ("target", "lines", "words"),
    [
        (
            "river bank",
            ["the river bank is wet", "a river bank", "the river, bank", "my river"],
            ["river", "bank"],
        ),
        (
            "银行",
            ["我去银行", "银行关门", "我去银", "行银"],
            ["银", "行"],
        ),  # two words to BERT: a character each
        ("can't", ["I can't go", "you can't stay", "we can go", "can t"], ["can", "'", "t"]),
    ],
)
def test_a_phrase_is_its_words_one_after_another_and_the_mean_of_their_pieces(
    senses, tiny_checkpoint, target, lines, words
):
    """A target of several words (as the tokenizer splits it) was refused: Chinese, whose every character is a
    word to BERT, had no word senses at all. A sentence has the phrase where its words stand in a row."""
    m = bert_core.load_pretrained(tiny_checkpoint)
    at = senses(lines, target=target)
    assert not at.info and not at.error
    said = text_of(at.caption)
    assert (
        f"'{target}' is {len(words)} words to this model's tokenizer" in said and "one after another" in said
    )
    assert ("each Chinese character" in said) == (target == "银行")
    # the last two lines hold the words, but not one after another (or not all of them), as the warning says
    warned = text_of(at.warning)
    assert "sentence 3" in warned and "sentence 4" in warned
    assert "(its words one after another: " + " then ".join(f"'{w}'" for w in words) + ")" in warned
    assert "inside a longer word" not in warned
    # the tiny vocabulary has no Chinese: the charts are of [UNK], and a room must not read them as the word's
    assert ("This model does not know '银行': it reads it as [UNK] [UNK], the piece" in warned) == (
        target == "银行"
    )
    # what the caption above says (its words, the mean of their pieces) is not said again: the pieces only where
    # they are not the words themselves (the tiny vocabulary spells "can" in pieces)
    said = text_of(at.caption)
    assert "mean of its pieces" not in said and ("is read as" not in said or target == "can't")
    at.slider(key="senses_layer").set_value(1).run()
    vectors = []
    for line in lines[:2]:
        r = m.analyze(line)
        start = line.index(target if target != "银行" else "银")
        end = start + len(target)
        pieces = [
            i for i, (s, e) in enumerate(r.offsets.tolist()) if r.sequence_ids[i] == 0 and start <= s < end
        ]
        assert len(pieces) >= len(words)
        vectors.append(r.hidden_states[1, pieces].mean(axis=0))
    u = unit(np.stack(vectors))
    np.testing.assert_allclose(z(at, "senses_matrix"), u @ u.T, atol=1e-5)


def test_a_thai_target_is_told_why_it_is_not_found(senses):
    """A Thai sentence is one word to BERT (no spaces): the target was "not in these sentences" with no reason."""
    thai = "\u0e18\u0e19\u0e32\u0e04\u0e32\u0e23"  # ธนาคาร, "bank"
    at = senses([f"{thai}\u0e23\u0e34\u0e21\u0e19\u0e49\u0e33", "the bank", f"a {thai}"], target=thai)
    warned = text_of(at.warning)
    assert "not in these sentences" in warned and "sentence 1" in warned
    assert "written without spaces between words" in warned
    at = senses(["the river bank", "the bank of the river", "my bank"], target="banks")
    assert "without spaces" not in text_of(at.warning)


def test_sentence_cut_before_the_target_is_reported_as_cut(senses):
    long = "the " * 80 + "bank"  # the tiny model reads 64 pieces
    at = senses([long, "the bank", "my bank"])
    warned = text_of(at.warning)
    assert "cut off before the target word" in warned and "sentence 1" in warned
    assert "not in these sentences" not in warned


def test_a_target_past_the_lines_character_cut_is_said_to_be_past_it(senses):
    """Said to be "not in these sentences (whole words only …)" above the note that the line was cut."""
    from app import inputs

    long = "x" * (inputs.line_chars() + 10) + " bank"
    at = senses([long, "the bank", "my bank", "a river"])
    warned = text_of(at.warning)
    assert (
        f"comes only after the first {inputs.line_chars():,} characters" in warned and "sentence 1" in warned
    )
    assert "not in these sentences" in warned and "sentence 4" in warned  # a line that lacks it still is
    assert "sentence 1 (" not in warned.split("not in these sentences")[1]


def test_points_are_coloured_by_sense(senses):
    at = senses(["the bank | river", "my bank | money", "a bank", "we bank | river"])
    traces = figure(at, "senses_pca")["data"]
    assert [t["name"] for t in traces] == ["river", "money", "(no sense given)"]
    assert traces[0]["hovertext"] == ["1. the bank (river)", "4. we bank (river)"]
    assert len({t["marker"]["color"] for t in traces}) == 3
    assert figure(at, "senses_lines")  # same-sense vs cross-sense uses the same labels
    assert "Colour = the sense written after |" in text_of(at.caption)
    # without a sense on any line, the caption says how to give one rather than what the colours would mean
    plain = senses(["the bank", "my bank", "a bank"])
    assert "Colour = " not in text_of(plain.caption) and "to colour the points by it" in text_of(
        plain.caption
    )


def test_a_bad_line_is_left_out_not_fatal(senses):
    at = senses(["the bank", "\x00\u200b", "my bank"])
    assert not at.error
    assert "sentence 2" in text_of(at.warning) and "empty" in text_of(at.warning)
    assert z(at, "senses_matrix").shape == (2, 2)


def test_too_many_lines_are_capped(senses):
    from app import inputs

    at = senses([f"the bank {i}" for i in range(inputs.MAX_LINES + 3)])
    assert f"only the first {inputs.MAX_LINES}" in text_of(at.warning)
    assert z(at, "senses_matrix").shape == (inputs.MAX_LINES, inputs.MAX_LINES)


@pytest.mark.parametrize("which", ["last", "each"])
def test_repeated_target_last_or_each_occurrence(senses, tiny_checkpoint, which):
    m = bert_core.load_pretrained(tiny_checkpoint)
    at = senses(["the bank and the bank | both", "my bank | money"])
    at.radio(key="senses_occurrence").set_value(which).run()
    assert not at.exception
    at.slider(key="senses_layer").set_value(2).run()
    r1, r2 = m.analyze("the bank and the bank"), m.analyze("my bank")
    banks = [i for i, t in enumerate(r1.tokens) if t == "bank"]
    assert len(banks) == 2
    mine = r2.hidden_states[2, r2.tokens.index("bank")]
    picked = [r1.hidden_states[2, banks[-1]]] if which == "last" else [r1.hidden_states[2, i] for i in banks]
    u = unit(np.stack([*picked, mine]))
    np.testing.assert_allclose(z(at, "senses_matrix"), u @ u.T, atol=1e-5)
    labels = figure(at, "senses_matrix")["layout"]["xaxis"]["ticktext"]
    if which == "each":
        assert labels == ["1. both · bank #1", "1. both · bank #2", "2. money"]
        assert "its own point" in text_of(at.caption)
    else:
        assert labels == ["1. both", "2. money"] and "last occurrence" in text_of(at.caption)


def test_one_sentence_with_two_occurrences_is_enough_with_each(senses):
    at = senses(["the bank and the bank"])
    assert "at least two sentences" in text_of(at.info)
    at.radio(key="senses_occurrence").set_value("each").run()
    assert not at.info and figure(at, "senses_matrix")


def test_occurrences_past_the_models_limit_are_reported_not_silently_dropped(senses, tiny_checkpoint):
    m = bert_core.load_pretrained(tiny_checkpoint)  # 64 positions
    long_line = "the bank " + "the " * 80 + "bank"
    at = senses([long_line, "my bank"])
    at.radio(key="senses_occurrence").set_value("last").run()
    warned = text_of(at.warning)
    assert "occurrences past that are left out: sentence 1 (1 of 2)" in warned
    assert "'last' uses the last one the model read" in warned
    assert "sentence 1 (2×)" in text_of(at.caption)
    at.slider(key="senses_layer").set_value(1).run()
    r1, r2 = m.analyze(long_line), m.analyze("my bank")
    assert r1.truncated and r1.tokens.count("bank") == 1
    u = unit(
        np.stack([r1.hidden_states[1, r1.tokens.index("bank")], r2.hidden_states[1, r2.tokens.index("bank")]])
    )
    np.testing.assert_allclose(z(at, "senses_matrix"), u @ u.T, atol=1e-5)


def test_pairs_from_one_sentence_stay_out_of_the_sense_lines(senses):
    at = senses(["the bank and the bank | river", "my bank | money", "the river bank | river"])
    at.radio(key="senses_occurrence").set_value("each").run()
    sims = z(at, "senses_matrix")  # points: 1#1, 1#2, 2, 3 at the last layer
    lines = figure(at, "senses_lines")["data"]
    same = {t["name"]: t for t in lines}["same sense"]
    last = decode(same["y"])[-1] if isinstance(same["y"], dict) else same["y"][-1]
    # same-sense pairs across sentences only: (1#1, 3) and (1#2, 3); (1#1, 1#2) is left out
    np.testing.assert_allclose(last, (sims[0, 3] + sims[1, 3]) / 2, atol=1e-5)
    assert "pairs from the same sentence are left out" in text_of(at.caption)


def test_colours_can_be_stretched_to_the_cosines_shown(make_app):
    at = make_app("views/word_senses.py")
    spec = figure(at, "senses_matrix")["data"][0]
    assert (spec["zmin"], spec["zmax"]) == (-1.0, 1.0)
    at.toggle(key="senses_stretch").set_value(True).run()
    trace = figure(at, "senses_matrix")["data"][0]
    z = decode(trace["z"]).astype(np.float64)
    off = z[~np.eye(len(z), dtype=bool)]
    assert -1.0 < trace["zmin"] <= off.min() + 1e-6 and trace["zmax"] == 1.0
    assert any("stretched" in c.value for c in at.caption)


def test_large_text_stacks_the_matrix_and_the_pca_at_full_width(make_app):
    """Side by side on a projector's 1280 px, the matrix shrank to ~200 px and its cell numbers ran together."""
    normal = make_app(PAGE)
    large = make_app(PAGE, large="true")
    assert not large.exception
    for at in (normal, large):
        assert figure(at, "senses_matrix") and figure(at, "senses_pca")
    # and the target box and its choice stand under the sentences: a quarter of the page at 1024 px wrapped the
    # occurrence choice a word a line
    assert len(normal.columns) == 4 and len(large.columns) == 0


@pytest.mark.parametrize("target", ["[MASK]", "[mask]", "[CLS]", "[sep]", "##ing"])
def test_a_special_token_or_a_piece_as_target_is_told_so(senses, target):
    """Stripped of its punctuation it became "MASK" or "ing", and the page said the word was not in sentences
    that visibly held it."""
    at = senses(["we went [MASK] running", "they [MASK] swimming", "[CLS] the bank"], target=target)
    said = text_of(at.info)
    assert "is a special token or a word piece, not a word" in said and target in said
    assert "not in these sentences" not in text_of(at.warning) and not at.get("plotly_chart")


def test_a_line_gives_each_occurrence_its_own_sense(senses):
    """ "I sat on the bank, then walked to the bank for cash. | river, money": the lecture's two senses in one
    sentence. Each point took the line's one label, so both were "river, money"."""
    lines = [
        "we sat on the bank and then went to the bank | river, money",
        "my bank | money",
        "the river bank | river",
    ]
    at = senses(lines)
    at.radio(key="senses_occurrence").set_value("each").run()
    labels = figure(at, "senses_matrix")["layout"]["xaxis"]["ticktext"]
    assert labels == ["1. river · bank #1", "1. money · bank #2", "2. money", "3. river"]
    pca = figure(at, "senses_pca")["data"]
    assert sorted(t["name"] for t in pca) == ["money", "river"]  # two senses, not "river, money"
    sims = z(at, "senses_matrix")
    same = {t["name"]: t for t in figure(at, "senses_lines")["data"]}["same sense"]
    last = decode(same["y"])[-1] if isinstance(same["y"], dict) else same["y"][-1]
    np.testing.assert_allclose(last, (sims[0, 3] + sims[1, 2]) / 2, atol=1e-5)  # river-river, money-money
    at.radio(key="senses_occurrence").set_value("last").run()  # one point: the last occurrence's sense
    assert figure(at, "senses_matrix")["layout"]["xaxis"]["ticktext"][0] == "1. money"
    at.radio(key="senses_occurrence").set_value("each").run()
    at.text_area(key="senses_text").set_value(
        "\n".join([*lines, "the bank by the bank | river, money, river"])
    ).run()
    assert "sentence 4 (3 senses, 2 occurrences)" in text_of(at.warning)
    assert "senses past the occurrences are not used" in text_of(at.warning)
    at.text_area(key="senses_text").set_value("\n".join([*lines[1:], "the bank by the bank | river,"])).run()
    assert "sentence 3 (2 senses, 2 occurrences)" in text_of(at.warning)  # the second was given none
    # a comma in the one sense of a line with the word once is part of that sense
    at.text_area(key="senses_text").set_value("\n".join([*lines[1:], "our bank | money, finance"])).run()
    assert "3. money, finance" in figure(at, "senses_matrix")["layout"]["xaxis"]["ticktext"]
    assert "senses," not in text_of(at.warning)


def test_points_that_are_one_vector_are_said_to_be_one_point(senses):
    """At layer 0 "bank" second in two sentences is one vector: one point hid the other, one colour showing."""
    at = senses(["the bank by the river | river", "the bank holds money | money", "a river bank | river"])
    at.slider(key="senses_layer").set_value(0).run()
    said = text_of(at.caption)
    assert "1, 2 are one point (the same vector)" in said and "At layer 0 a word's vector comes from" in said
    pca = figure(at, "senses_pca")["data"]
    assert decode(pca[0]["x"])[0] == pytest.approx(decode(pca[1]["x"])[0], abs=1e-5)  # 1 under 2, indeed
    at.slider(key="senses_layer").set_value(1).run()  # the sentences differ from layer 1 on
    assert "one point" not in text_of(at.caption)


def test_a_long_sense_is_cut_on_the_axes(senses):
    """A 90-character sense pressed the matrix into a corner beside its row label, in Large text especially."""
    long = "money and financial institutions where people deposit their monthly salary"
    at = senses([f"the bank was closed | {long}", "we sat on the grassy bank | river"])
    rows = figure(at, "senses_matrix")["data"][0]["y"]
    assert rows[0] == "1. " + long[:39] + "…" and rows[1] == "2. river"
    at.toggle(key="large").set_value(True).run()
    assert figure(at, "senses_matrix")["data"][0]["y"][0] == "1. " + long[:17] + "…"


def test_one_sentence_per_sense_draws_no_empty_same_sense_line(senses):
    at = senses(["the river bank | river", "my bank account | money"])
    names = [t["name"] for t in figure(at, "senses_lines")["data"]]
    assert names == ["different sense"]
    alone = figure(at, "senses_lines")["data"][0]["line"]["color"]
    assert figure(at, "senses_lines")["layout"]["showlegend"] is True  # one line alone names itself too
    assert "no same-sense line" in text_of(at.caption) and "gap between the lines" not in text_of(at.caption)
    at = senses(["the river bank | river", "a grassy bank | river", "my bank account | money"])
    both = {t["name"]: t["line"]["color"] for t in figure(at, "senses_lines")["data"]}
    assert list(both) == ["same sense", "different sense"]
    # alone, it keeps its colour: it was drawn in the blue that means "same sense" beside it
    assert alone == both["different sense"] != both["same sense"]
    assert "no same-sense line" not in text_of(at.caption)


def test_the_points_numbers_are_said_to_count_sentences_not_box_lines(senses):
    """A blank line between the river and money sentences shifted every later number off its line in the box,
    while the caption said "the number is its line"."""
    at = senses(["we sat by the bank | river", "", "the bank lent money | money", "my bank | money"])
    said = text_of(at.caption)
    assert "the number counts the sentences (blank lines are not counted)" in said
    assert "the number is its line" not in said


def test_the_whole_words_example_uses_the_target(senses):
    at = senses(["the river bank", "a riverside walk", "the river ran"], target="river")
    warned = text_of(at.warning)
    assert (
        "(whole words only: 'river' inside a longer word does not count), which are left out: sentence 2"
        in warned
    )
    # a long target is cut in the message, as the sentences are (a 300-character one was quoted whole)
    long = "river" * 60
    warned = text_of(senses(["the river bank", f"the {long}s ran"], target=long).warning)
    assert f"'{long[:59]}…' inside a longer word" in warned and long not in warned


def test_a_line_with_only_a_sense_is_said_to_be_left_out(senses):
    at = senses(["the river bank | river", "| money", "my bank account | money"])
    assert "nothing before its | has no sentence, so it is left out: “| money”." in text_of(at.warning)
    names = figure(at, "senses_matrix")["data"][0]["y"]
    assert names == ["1. river", "2. money"]  # the numbers still count the sentences
    at = senses(["the river bank | river", "my bank account | money"])
    assert "left out" not in text_of(at.warning)


def test_large_text_makes_the_sentence_boxes_taller(make_app, monkeypatch):
    """Sized for normal text, Word senses' box hid its preset's sixth line in Large text (at 1280 px)."""
    import streamlit as st
    from streamlit.delta_generator import DeltaGenerator

    heights: dict[str, list[int]] = {}
    in_column, in_main = DeltaGenerator.text_area, st.text_area

    def note(kwargs):
        heights.setdefault(kwargs.get("key"), []).append(kwargs.get("height"))

    # a box in a column is drawn by the class's method; one in the page by st's own, bound at import
    monkeypatch.setattr(
        DeltaGenerator, "text_area", lambda self, *a, **k: note(k) or in_column(self, *a, **k)
    )
    monkeypatch.setattr(st, "text_area", lambda *a, **k: note(k) or in_main(*a, **k))
    for page in (PAGE, "views/sentence_vector.py"):
        make_app(page)
        make_app(page, large="true")
    for key in ("senses_text", "sv_sentences"):
        normal, large = heights[key]
        assert large >= normal * 1.35, key
    # the sidebar's sentences too, drawn on every page; B's height is the widget's, its label's 30 px included,
    # and Streamlit keeps the box at least 66 px: 68 gave 66 px in both sizes
    for key in ("a", "b"):
        normal, large = heights[key][0], heights[key][-1]
        assert large >= normal * 1.35 and large - 30 > 66 * 1.35, key
    # ... from a link's first run: the boxes were drawn before the Large text toggle had read ?large=true
    heights.clear()
    make_app(None, large="true")
    assert heights["a"] == [heights["a"][-1]] and heights["a"][0] >= 135


def test_punctuation_typed_with_the_target_is_said_to_be_left_out(senses):
    """ "Bank!" drew the charts of "bank" without a word of the "!" left behind."""
    lines = ["the river bank | river", "my bank account | money"]
    at = senses(lines, target="Bank!")
    assert "Looking for 'Bank': the punctuation typed around it" in text_of(at.caption)
    assert figure(at, "senses_matrix")
    assert "Looking for" not in text_of(senses(lines, target="bank").caption)


def test_a_target_typed_with_punctuation_is_said_once_what_is_looked_for(senses):
    """ "Bank!" got two captions saying the same; a target with spaces only gets the spaces one."""
    said = [
        c.value
        for c in senses(["the river bank", "my bank"], target="Bank!").caption
        if "Looking for" in c.value
    ]
    assert len(said) == 1 and "punctuation typed around it" in said[0]
    said = [
        c.value
        for c in senses(["the river bank", "my bank"], target=" bank ").caption
        if "Looking for" in c.value
    ]
    assert len(said) == 1 and "spaces around the word are ignored" in said[0]


def test_a_special_typed_in_a_sentence_is_no_occurrence_of_the_word_its_brackets_hold(senses):
    """ "The [MASK] is a mask." counted the mask token as the word "mask": twice in sentence 1, and its vector
    compared as the word's, though the page refuses [MASK] as a target."""
    at = senses(["the [MASK] is a mask", "she wore a mask", "the [MASK] again"], target="mask")
    warned = text_of(at.warning) + text_of(at.info) + " ".join(c.value for c in at.caption)
    assert "more than once" not in warned and "read as [MASK]" not in warned.replace("\\", "")
    z = decode(figure(at, "senses_matrix")["data"][0]["z"])
    assert z.shape == (2, 2), z  # sentences 1 and 2, once each: sentence 3 has no "mask"


def test_cell_numbers_are_written_only_where_a_cell_holds_one(senses, make_app):
    """Twelve sentences' cosines ran into each other at 1280 px ("1.001.000.97"), or shrank to 5 px on
    Sentence vector: past what a cell holds, the values are left to the hover and the CSV, and said so."""
    few = senses(["the river bank | river", "my bank | money", "the bank of the river | river"])
    matrix = figure(few, "senses_matrix")
    z = decode(matrix["data"][0]["z"])
    assert matrix["data"][1]["text"] == [f"{v:.2f}" for v in z.reshape(-1)]  # every cell, in reading order
    many = senses([f"sentence {k} about the bank | {'river' if k % 2 else 'money'}" for k in range(12)])
    assert len(figure(many, "senses_matrix")["data"]) == 1
    assert any("hover a cell, or download the CSV" in c.value for c in many.caption)
    lines = "\n".join(f"the cat sat on mat {k}" for k in range(12))
    vectors = make_app("views/sentence_vector.py", sv_sentences=lines)
    assert len(figure(vectors, "sv_similarity")["data"]) == 1
    two = make_app("views/sentence_vector.py", sv_sentences="the cat sat\nthe dog ran")
    assert figure(two, "sv_similarity")["data"][1]["mode"] == "text"


def test_a_sense_whose_sentences_were_all_left_out_is_named(senses):
    """Two senses labelled, the only "river" line without the word: "Label at least two senses" was said."""
    at = senses(["the banks of the river | river", "the bank lent money | money", "my bank pays | money"])
    said = text_of(at.caption)
    assert "No sentence used here has the sense 'river'" in said and "Label at least two senses" not in said
    # one sense with a comma in it, and a second occurrence 'first' did not pick, are no senses left out
    at = senses(["the bank lent money | money, finance", "my bank pays | money, finance"])
    assert "No sentence used here" not in text_of(at.caption) and "Label at least two senses" in text_of(
        at.caption
    )
    at = senses(["the bank by the bank | river, money", "my bank pays | river"])
    assert "No sentence used here" not in text_of(at.caption)
