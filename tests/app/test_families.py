"""Every page with every family: RoBERTa, DistilBERT, ALBERT and ELECTRA checkpoints open, each page renders
without an exception, and the pages say what the family changes."""

from __future__ import annotations

import html
import urllib.parse

import numpy as np
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

import bert_core
from app.registry import PAGES
from tests.app.conftest import APP, FAMILIES, TIMEOUT, decode, figure, table_with


def _app(monkeypatch, directory, page: str | None = None, **query) -> AppTest:
    """The app on `page` with `directory` as its default model (None: the app's own default, bert-base-uncased)."""
    if directory is None:
        monkeypatch.delenv("BERTSCOPE_MODEL", raising=False)
    else:
        monkeypatch.setenv("BERTSCOPE_MODEL", str(directory))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    st.cache_resource.clear()
    st.cache_data.clear()
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    query.setdefault("a", "the bank of the river [MASK] .")
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    if page is not None:
        at.switch_page(page).run()
    return at


def _texts(at: AppTest) -> str:
    parts = [e.value for kind in ("caption", "info", "markdown", "warning", "error") for e in at.get(kind)]
    return "\n".join(str(p) for p in parts).replace("\\", "")


@pytest.mark.slow
@pytest.mark.parametrize("arch", list(FAMILIES))
def test_every_page_renders_for_every_family(family_dirs, monkeypatch, arch):
    for page in PAGES:
        at = _app(monkeypatch, family_dirs[arch], page.file, b="the water ran by")
        assert not at.exception, (arch, page.file, [e.value for e in at.exception])
        assert not at.get("error"), (arch, page.file, [e.value for e in at.get("error")])


def test_sidebar_card_names_the_family_and_what_it_lacks(family_dirs, monkeypatch):
    at = _app(monkeypatch, family_dirs["distilbert"])
    card = _texts(at)
    assert "DistilBERT" in card and "no segment embeddings" in card and "no pooler" in card
    # ALBERT's layers run one set of weights, which its name alone did not say; others have their own
    assert "2 layers sharing one set of weights" in _texts(_app(monkeypatch, family_dirs["albert"]))
    assert "sharing" not in card and "2 layers · " in card


def test_compare_cards_name_each_sides_heads(family_dirs, monkeypatch, tiny_checkpoint):
    """An ELECTRA discriminator and its generator read alike on Compare: only the path told them apart."""
    at = _app(monkeypatch, tiny_checkpoint, "views/compare.py", model2=str(family_dirs["electra"]))
    cards = [c.value.replace("\\", "") for c in at.main.caption if " layers" in c.value]
    assert len(cards) == 2
    assert "prediction heads: MLM, NSP — " in cards[0] and "prediction heads: RTD · no pooler" in cards[1]


def test_bpe_pieces_show_a_visible_space_not_the_marker(family_dirs, monkeypatch):
    at = _app(monkeypatch, family_dirs["roberta"], "views/tokens.py", a="the bank of the river")
    chips = figure(at, "tokens_chips")
    labels = [t for trace in chips["data"] for t in trace.get("text", [])]
    assert any(t.startswith("␣") for t in labels) and not any("Ġ" in t for t in labels)
    # the first word has no space marker, yet starts a word
    table = table_with(at, "kind")
    assert not table["piece"][1].startswith("Ġ") and table["kind"][1] == "word"
    assert "RoBERTa never sees words" in _texts(at) and "not WordPiece" in _texts(at)
    # and the caption says so, where it said that every piece without Ġ continues the word before it
    assert "Words with no space before them start without it: the text's first word, punctuation" in _texts(
        at
    )
    # the table numbers <s> position 2: said why, on the page that shows it
    assert table["position"][0] == 2
    assert "RoBERTa numbers positions from 2" in _texts(at) and "<s>, reads position 2" in _texts(at)
    assert "numbers positions from" not in _texts(_app(monkeypatch, family_dirs["albert"], "views/tokens.py"))


def test_byte_level_pieces_show_the_characters_they_spell_not_mojibake(family_dirs, monkeypatch):
    """RoBERTa writes 'é' as the piece 'Ã©'; a Cyrillic word its tiny vocabulary never saw is split into
    pieces of single bytes, each part of a character: shown as its bytes, counted, and no <unk> promised."""
    at = _app(monkeypatch, family_dirs["roberta"], "views/tokens.py", a="Café жук")
    assert not at.exception and not at.get("error")
    table = table_with(at, "shown as")
    shown = list(table["shown as"])
    assert "Café" in shown and not any("Ã" in t or "Ð" in t for t in shown)
    parts = [t for t in shown if t.lstrip("␣").startswith("\\x")]
    assert len(parts) >= 3  # ж, у, к: two bytes each, never merged here
    assert [m.value for m in at.metric if m.label == "Parts of a character"] == [str(len(parts))]
    chips = [t for trace in figure(at, "tokens_chips")["data"] for t in trace.get("text", [])]
    assert not any("Ã" in t for t in chips)
    caption = _texts(at)
    assert "<unk>" not in caption and "any text can be spelt" in caption


def test_albert_pieces_its_vocabulary_lacks_are_unk_and_a_lone_marker_covers_nothing(
    family_dirs, monkeypatch
):
    """A Unigram tokenizer keeps the typed text as the string of an unknown piece: it was drawn and counted as
    an ordinary piece ("<unk> 0") while the model read <unk>; and a lone "▁" claimed the next word's first
    character."""
    at = _app(monkeypatch, family_dirs["albert"], "views/tokens.py", a="👩‍👩‍👧 bank 👍🏽")
    assert not at.exception
    table = table_with(at, "kind")
    unknown = [i for i, piece in enumerate(table["piece"]) if piece == "<unk>"]
    assert len(unknown) == 2 and all(table["kind"][i] == "unk" for i in unknown)
    assert [table["typed text"][i] for i in unknown] == ["👩‍👩‍👧", "👍🏽"]
    assert [m.value for m in at.metric if m.label.replace("\\", "") == "<unk>"] == ["2"]
    for i, piece in enumerate(table["piece"]):
        if piece == "▁":
            assert table["typed text"][i] == "" and table["start"][i] == table["end"][i]
    assert "▁" in list(table["piece"])
    # SentencePiece makes only what it lacks <unk> (WordPiece the whole word): said so, and counted so
    said = _texts(at)
    assert "characters the vocabulary lacks become <unk>, the rest of their word is kept" in said
    assert "2 stretches of characters could not be spelt" in said and "words or marks" not in said
    assert "except punctuation, which these pages count as words of their own" in said


def test_a_mask_inside_a_word_is_said_to_be_a_piece_of_it_to_roberta(family_dirs, monkeypatch):
    """WordPiece reads "un[MASK]able" as three words; RoBERTa's pieces after the mask carry no Ġ, so it reads
    them as the rest of one word: "splits the word there" was false of it."""
    at = _app(monkeypatch, family_dirs["roberta"], "views/masked_words.py", a="that is un<mask>able .")
    model = bert_core.load_pretrained(family_dirs["roberta"])
    after = model.analyze("that is un<mask>able .").tokens
    assert not after[after.index("<mask>") + 1].startswith(
        "Ġ"
    )  # what the caption says, as the model reads it
    said = _texts(at)
    assert "(un<mask>able) stands for a piece of it: the pieces after the mask carry no Ġ" in said
    assert "splits the word" not in said


def test_the_logit_lens_says_when_a_word_is_followed_as_a_piece_inside_words(family_dirs, monkeypatch):
    """RoBERTa's vocabulary may lack a word's word-start piece ("Ġosited"): the lens then follows the piece it
    uses inside words, which the help ("as the piece it starts a word as") did not cover; said so."""
    at = _app(monkeypatch, family_dirs["roberta"], "views/inside.py", a="the <mask> of the river .")
    at.radio(key="inside_view").set_value("lens").run()
    at.text_input(key="lens_follow").set_value("osited river").run()
    assert not at.exception
    said = _texts(at)
    assert "No piece of this vocabulary starts a word as 'osited'" in said and "'river'" not in said
    names = [t["name"] for t in figure(at, "lens_rank")["data"]]
    assert "rank of osited" in names and "rank of ␣river" in names
    # the answer's line is drawn last, over the others, and listed first in the legend
    assert (
        figure(at, "lens_rank")["data"][-1].get("legendrank") == 1
        and "text" in figure(at, "lens_rank")["data"][-1]
    )


def test_word_senses_says_how_the_sentences_read_the_word(family_dirs, monkeypatch):
    """RoBERTa reads 'bank' alone as several pieces but after a space as one: the caption names the pieces
    the sentences have, not the word's own split."""
    at = _app(monkeypatch, family_dirs["roberta"], "views/word_senses.py")
    at.text_input(key="senses_word").set_value("bank")
    lines = ["the boat drifted toward the bank of the river", "bank of the river, where we sat"]
    at.text_area(key="senses_text").set_value("\n".join(lines)).run()
    assert not at.exception
    model = bert_core.load_pretrained(family_dirs["roberta"])
    style = model.info.piece_style
    assert "Ġbank" in model.encode(lines[0]).tokens  # one piece after a space
    starts = model.encode(lines[1]).tokens
    second = " ".join(style.display(t) for t in starts[1 : starts.index("Ġof")])  # pieces at the start
    first = "␣bank"
    assert second != first  # at the start of a sentence, no space before it: other pieces
    caption = _texts(at)
    assert f"'bank' is read as {first} (sentence 1) and as {second} (sentence 2)" in caption


def test_embeddings_page_says_what_each_family_changes(family_dirs, monkeypatch):
    at = _app(monkeypatch, family_dirs["distilbert"], "views/embeddings.py")
    text = _texts(at)
    assert "no segment embeddings" in text
    assert "segment" not in [r.value for r in at.radio if r.key == "emb_component"][0:1]
    at = _app(monkeypatch, family_dirs["albert"], "views/embeddings.py")
    assert "the tables are E = 16 wide" in _texts(at)
    # RoBERTa's one segment vector is no "(A/B)" embedding: the chart's title says what it is
    at = _app(monkeypatch, family_dirs["roberta"], "views/embeddings.py")
    at.radio(key="emb_component").set_value("segment").run()
    title = figure(at, "emb_heatmap")["layout"]["title"]["text"]
    assert "one vector, the same for every piece" in title and "A/B" not in title
    # its padding row is zeros: the cosine 0 drawn on the diagonal there is said to be no cosine of its own
    assert "Row 1 is all zeros, so its cosines (its own included) are drawn as 0" in _texts(at)
    assert "all zeros" not in _texts(_app(monkeypatch, family_dirs["albert"], "views/embeddings.py"))


def test_a_choice_keeps_its_label_and_its_value_across_a_switch_of_family(
    family_dirs, tiny_checkpoint, monkeypatch
):
    """Streamlit writes a choice's label into the link: labels naming the model ("sum of the two",
    "<s>, last layer") emptied the radio after a switch and left the link on a choice that no longer existed."""
    from app import inputs, models

    # Listed in the model box (as cached hub models are), so that AppTest can pick them there
    listed = [str(tiny_checkpoint), *map(str, family_dirs.values())]
    monkeypatch.setattr(models, "cached_hub_models", lambda: listed)

    def switch(at, source):
        at.selectbox(key=inputs.KEY_MODEL).set_value(source).run()

    at = _app(monkeypatch, family_dirs["distilbert"], "views/embeddings.py")
    at.radio(key="emb_component").set_value("summed").run()
    switch(at, str(tiny_checkpoint))
    radio = at.radio(key="emb_component")
    assert not at.exception and radio.value == "summed" and "their sum" in radio.options
    assert "sum of the three" in figure(at, "emb_heatmap")["layout"]["title"]["text"]  # the title says which
    switch(at, str(family_dirs["albert"]))
    at.radio(key="emb_component").set_value("projected").run()
    switch(at, str(tiny_checkpoint))  # BERT: no projection
    assert not at.exception and at.radio(key="emb_component").value == "word"

    at = _app(monkeypatch, tiny_checkpoint, "views/sentence_vector.py")
    at.radio(key="sv_kind").set_value("cls").run()
    assert "first token, last layer" in at.radio(key="sv_kind").options
    switch(at, str(family_dirs["roberta"]))  # [CLS] -> <s>
    assert not at.exception and at.radio(key="sv_kind").value == "cls"
    assert "first token, last layer" in at.radio(key="sv_kind").options


def test_sentence_page_shows_sop_for_albert(family_dirs, monkeypatch):
    at = _app(monkeypatch, family_dirs["albert"], "views/sentence_vector.py", b="the water ran by")
    metrics = {m.label: float(m.value) for m in at.metric}
    model = bert_core.load_pretrained(family_dirs["albert"])
    expected = model.sentence_order("the bank of the river [MASK] .", "the water ran by")
    assert abs(metrics["P(in order): A then B"] - expected) < 1e-3
    assert "sentence-order prediction" in _texts(at)


def test_replaced_tokens_view_for_an_electra_discriminator(family_dirs, monkeypatch):
    text = "the bank of the river ."
    at = _app(monkeypatch, family_dirs["electra"], "views/sentence_vector.py", a=text)
    strip = figure(at, "sv_rtd")
    shown = decode(strip["data"][0]["z"]).reshape(-1)
    shown = shown[~np.isnan(shown)].tolist()  # the strip wraps into rows; the last is padded
    model = bert_core.load_pretrained(family_dirs["electra"])
    expected = [p for _, p in model.replaced_tokens(text)]
    assert max(abs(a - b) for a, b in zip(shown, expected, strict=True)) < 1e-5
    # the helper swaps one word and scores the edited sentence beside the original
    at.selectbox(key="sv_rtd_word").set_value("2: bank")
    at.text_input(key="sv_rtd_with").set_value("cash").run()
    assert not at.exception and not at.get("error")
    edited = decode(figure(at, "sv_rtd_edited")["data"][0]["z"]).reshape(-1)
    edited = edited[~np.isnan(edited)]
    after = model.replaced_tokens("the cash of the river .")
    np.testing.assert_allclose(edited, [p for _, p in after], atol=1e-5)
    # what was typed survives a visit to another page
    at.switch_page("views/tokens.py").run()
    at.switch_page("views/sentence_vector.py").run()
    assert (
        at.text_input(key="sv_rtd_with").value == "cash"
        and at.selectbox(key="sv_rtd_word").value == "2: bank"
    )
    # and a link reopens on the same swap: the word was kept for the session only, so a link put "cash" in
    # place of the middle word
    assert at.query_params["sv_rtd_word"] in ("2: bank", ["2: bank"])
    link = _app(monkeypatch, family_dirs["electra"], "views/sentence_vector.py", a=text, sv_rtd_word="2: bank",
                sv_rtd_with="cash")  # fmt: skip
    assert link.selectbox(key="sv_rtd_word").value == "2: bank"
    np.testing.assert_allclose(decode(figure(link, "sv_rtd_edited")["data"][0]["z"]).reshape(-1)[: len(edited)],
                               edited, atol=1e-6)  # fmt: skip
    metrics = {m.label.replace("\\", ""): float(m.value) for m in at.metric}
    # "mean of its pieces" said of the word that has several, whichever side (it was said of the left one)
    assert abs(metrics["P(replaced) of 'bank'"] - expected[2]) < 1e-3
    cash = [p for t, p in after if t in ("c", "##a", "##s", "##h", "cash")]
    mean = f" (mean of its {len(cash)} pieces)" if len(cash) > 1 else ""
    assert abs(metrics[f"P(replaced) of 'cash'{mean}"] - np.mean(cash)) < 1e-3
    at.text_input(key="sv_rtd_with").set_value("zebrawq").run()
    pieces = model.encode("zebrawq").tokens[1:-1]
    assert len(pieces) > 1
    assert f"P(replaced) of 'zebrawq' (mean of its {len(pieces)} pieces)" in [
        m.label.replace("\\", "") for m in at.metric
    ]
    long_text = text + " and the water ran by" * 40  # named above the strips in part, not printed whole
    at.text_area(key="a").set_value(long_text).run()
    shown = [t.value for t in at.text]
    assert shown and all(len(t) < 400 and t.endswith("…") for t in shown), shown


def test_compare_page_shows_two_models_side_by_side_with_both_in_the_url(
    family_dirs, monkeypatch, tiny_checkpoint
):
    at = _app(
        monkeypatch,
        tiny_checkpoint,
        "views/compare.py",
        a="we sat on the [MASK] of the river",
        model2=str(family_dirs["distilbert"]),
    )
    assert not at.exception, [e.value for e in at.exception]
    left, right = figure(at, "cmp_attention_left"), figure(at, "cmp_attention_right")
    model = bert_core.load_pretrained(family_dirs["distilbert"])
    r = model.analyze("we sat on the [MASK] of the river")
    assert decode(right["data"][0]["z"]).shape == r.attentions[-1, 0].shape
    assert left["layout"]["title"]["text"].endswith("mean of heads") and right["layout"]["title"]["text"]
    # each names its model: one above the other (a narrow screen, Large text) they were two alike titles
    assert right["layout"]["title"]["text"].startswith(f"{family_dirs['distilbert'].name[:23]}")
    assert figure(at, "cmp_masks_right")["layout"]["title"]["text"].startswith(
        family_dirs["distilbert"].name[:23]
    )
    # one colour scale for both sides: the same colour is the same weight (each once ran to its own maximum)
    top = max(float(np.nanmax(decode(f["data"][0]["z"]))) for f in (left, right))
    assert left["data"][0]["zmax"] == right["data"][0]["zmax"] == pytest.approx(top, rel=1e-6)
    masks = figure(at, "cmp_masks_right")
    assert len(masks["data"][0]["y"]) == 5 or len(decode(masks["data"][0]["x"])) == 5
    senses = figure(at, "cmp_senses")
    # one curve per model, named by its model, not by a place the page's own CSS may change
    names = [t["name"] for t in senses["data"]]
    assert [n.split(" (")[0] for n in names] == ["BERT", "DistilBERT"] and not any(":" in n for n in names)
    assert at.query_params["model2"] == [str(family_dirs["distilbert"])] or at.query_params["model2"] == str(
        family_dirs["distilbert"]
    )
    # In Large text one above the other: side by side on a 1024 px projector each map had ~90 px; and no more
    # column labels than a projector's page width holds at that size (they were thinned for 900 px)
    at.toggle(key="large").set_value(True).run()
    assert not at.exception and figure(at, "cmp_attention_right")
    at.text_area(key="a").set_value("we sat on the [MASK] of the river " * 3).run()
    ticks = figure(at, "cmp_attention_left")["layout"]["xaxis"]["tickvals"]
    assert len(ticks) * 1.15 * 22 <= 560
    # Stacked, the page says above and below, not left and right; the legend names the models as before
    assert [t["name"] for t in figure(at, "cmp_senses")["data"]] == names
    assert "the sidebar's model above, the one picked here below" in at.caption[0].value
    assert len(at.columns) == 0  # no side by side at all
    # Side by side: the two model cards, the two attention sides, the two masked-word sides.
    beside = _app(monkeypatch, tiny_checkpoint, "views/compare.py", model2=str(family_dirs["distilbert"]))
    assert len(beside.columns) == 6


def test_compare_says_once_escaped_when_a_side_does_not_read_bank_as_one_word(
    family_dirs, monkeypatch, tiny_checkpoint
):
    """The model card was escaped twice there: "demo model \\(a small BERT\\)\\: ..." on the page."""
    import app.transforms

    monkeypatch.setattr(app.transforms, "target_occurrences", lambda *args, **kwargs: [])
    at = _app(monkeypatch, tiny_checkpoint, "views/compare.py", model2=str(family_dirs["distilbert"]))
    said = [i.value for i in at.info if "is not one word" in i.value]
    assert len(said) == 2 and not any("\\\\" in text for text in said), said  # escaped once, not twice
    assert all(text.startswith("BERT") or text.startswith("DistilBERT") for text in said), said


def test_compare_says_once_that_a_mask_is_needed(family_dirs, monkeypatch, tiny_checkpoint):
    second = str(family_dirs["distilbert"])
    at = _app(monkeypatch, tiny_checkpoint, "views/compare.py", a="the bank of the river .", model2=second)
    said = [i.value for i in at.info if "Type [MASK]" in i.value.replace("\\", "")]
    assert len(said) == 1 and not [k for k in ("cmp_masks_left", "cmp_masks_right") if _has_chart(at, k)]
    at = _app(monkeypatch, tiny_checkpoint, "views/compare.py", a="the bank of the [MASK] .", model2=second)
    assert not [i for i in at.info if "Type [MASK]" in i.value.replace("\\", "")]
    assert _has_chart(at, "cmp_masks_left") and _has_chart(at, "cmp_masks_right")
    assert [s for s in at.subheader if s.value == "Two banks, layer by layer"]  # the page goes on after it
    # Two models' cosines sit at levels of their own: each line is a model's same-sense cosine less its
    # cross-sense one (a river bank to another river bank, minus to a money bank), from the core's vectors
    from app.inputs import COMPARE_SENSES as SENSES

    lines = dict(zip(("left", "right"), figure(at, "cmp_senses")["data"], strict=True))
    for side, source in (("left", tiny_checkpoint), ("right", second)):
        w = bert_core.load_pretrained(source).word_vectors(list(SENSES), "bank")
        assert [n for n, _ in w.found] == [0, 1, 2]
        np.testing.assert_allclose(
            decode(lines[side]["y"]), w.cosines[:, 0, 2] - w.cosines[:, 0, 1], atol=1e-5
        )


def _has_chart(at, key: str) -> bool:
    return any(c.proto.id and key in c.proto.id for c in at.get("plotly_chart"))


def test_compares_second_model_is_held_while_the_page_is_open(family_dirs, monkeypatch, tiny_checkpoint):
    """It was held by no one between two runs of the page, so another session's load pushed it out of a full
    store and the page's next run could not load it again ("open pages are using ..."). Now the other load
    waits, as it would for any model an open page uses, until the session leaves Compare."""
    import gc

    from app import models

    monkeypatch.setenv("BERTSCOPE_MAX_MODELS", "2")  # the room's model, and one place besides
    second = str(family_dirs["distilbert"])
    at = _app(monkeypatch, tiny_checkpoint, "views/compare.py", model2=second)
    assert not at.exception and figure(at, "cmp_attention_right")
    store = models.model_store()
    store._is_open = lambda session_id: True  # AppTest's session counts as a closed tab between its runs
    with pytest.raises(models.StoreFull) as full:  # another tab asks for a third model
        store.load(str(family_dirs["albert"]))
    assert second in full.value.in_use
    at.text_area(key="a").set_value("the bank of the river").run()  # the page goes on with its second model
    assert not at.error and figure(at, "cmp_attention_right")
    at.switch_page("views/tokens.py").run()  # left the page: its second model may go
    gc.collect()  # the store collects at most every 5 s, and it just did for the refusal above
    assert store.load(str(family_dirs["albert"])).info.architecture == "albert"


def test_a_second_model_that_fails_leaves_the_sidebars_model_drawn(monkeypatch, tiny_checkpoint, tmp_path):
    """The page stopped at the error: the working side's maps and the link to the comparison were gone."""
    missing = str(tmp_path / "no-such-model")
    at = _app(
        monkeypatch, tiny_checkpoint, "views/compare.py", a="the [MASK] sat by the bank", model2=missing
    )
    (error,) = [e.value for e in at.error]
    assert error.startswith("The second model can't be loaded") and "the sidebar's model alone" in error
    model = bert_core.load_pretrained(tiny_checkpoint)
    attention = figure(at, "cmp_attention_left")
    assert attention["layout"]["title"]["text"].endswith("mean of heads")
    drawn = decode(attention["data"][0]["z"])
    expected = model.analyze("the [MASK] sat by the bank").attentions[-1].mean(axis=0)
    np.testing.assert_allclose(drawn, expected, atol=1e-6)
    assert figure(at, "cmp_masks_left") and figure(at, "cmp_senses")
    assert not [c for c in at.caption if "Both maps share one colour scale" in c.value]  # one map
    ids = [chart.proto.id for chart in at.get("plotly_chart")]
    assert not [i for i in ids if i.endswith("_right")], ids
    (link,) = at.code
    assert "model2=" in link.value and "no-such-model" in link.value  # the comparison asked for, kept
    assert at.text_area(key="a").value == "the [MASK] sat by the bank"
    # a reason that ends in its own question mark takes no full stop after it ("directory?. Below")
    empty = tmp_path / "empty"
    empty.mkdir()
    at = _app(monkeypatch, tiny_checkpoint, "views/compare.py", model2=str(empty))
    (error,) = [e.value.replace("\\", "") for e in at.error]
    assert "directory? Below, the sidebar's model alone." in error, error
    # a slip of the keys in a model that loads here is offered, as in the sidebar
    at = _app(monkeypatch, tiny_checkpoint, "views/compare.py", model2="@dmeo")
    assert at.error and not [i for i in (c.proto.id for c in at.get("plotly_chart")) if i.endswith("_right")]
    (meant,) = [b for b in at.button if b.key == "use_meant_second"]
    assert meant.label.replace("\\", "") == "Did you mean @demo?"
    meant.click().run()
    assert not at.error and figure(at, "cmp_attention_right")
    assert at.selectbox(key="model2").value == "@demo"


def test_compare_says_when_each_side_cut_a_long_text(family_dirs, monkeypatch, tiny_checkpoint):
    long = " ".join(["the boat drifted toward the bank of the river"] * 40)  # no [MASK]
    second = str(family_dirs["distilbert"])
    at = _app(monkeypatch, tiny_checkpoint, "views/compare.py", a=long, model2=second)
    assert not at.exception
    cut = [w.value.replace("\\", "") for w in at.warning if "the end of sentence A was cut off" in w.value]
    assert len(cut) == 2  # one per side, each naming its model (two alike warnings named neither)
    assert cut[0].startswith(f"{tiny_checkpoint.name[:23]}: the input") and cut[1].startswith(
        f"{family_dirs['distilbert'].name[:23]}: the input"
    )
    said = " ".join(i.value for i in at.info).replace("\\", "")
    assert "Type [MASK]" in said and "fell beyond" not in said  # none was typed: said once, for both sides


def test_compare_reads_a_typed_mask_as_each_models_own(family_dirs, monkeypatch, tiny_checkpoint):
    text = "we sat on the [MASK] of the river"
    second = str(family_dirs["roberta"])
    at = _app(
        monkeypatch, tiny_checkpoint, "views/compare.py", a=text, model=str(tiny_checkpoint), model2=second
    )
    assert not at.exception and not at.get("error")
    for side, directory in (("left", tiny_checkpoint), ("right", family_dirs["roberta"])):
        (expected,) = bert_core.load_pretrained(directory).predict_masks(text)
        bars = figure(at, f"cmp_masks_{side}")["data"][0]
        np.testing.assert_allclose(decode(bars["x"]), expected.probabilities, rtol=1e-5)
    # RoBERTa's attention axes hold its one <mask> piece, not '[', 'MASK', ']'
    right = [html.unescape(t) for t in figure(at, "cmp_attention_right")["layout"]["xaxis"]["ticktext"]]
    assert any(t.endswith(": <mask>") for t in right) and not any("Ġ" in t for t in right)
    # the link names both models, and each side's layer, whatever the address bar leaves out as a default
    # each side's controls named by its model, for a screen reader that heard "Layer, Head, Layer, Head"
    assert at.slider(key="cmp_layer_right").label == f"Layer of {family_dirs['roberta'].name}"
    assert at.selectbox(key="cmp_head_left").label == f"Head of {tiny_checkpoint.name}"
    at.slider(key="cmp_layer_right").set_value(1).run()
    (link,) = [c.value for c in at.code if "model2=" in c.value]
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(link).query)
    assert query["model"] == [str(tiny_checkpoint)] and query["model2"] == [second]
    assert query["a"] == [text] and query["cmp_layer_right"] == ["1"]


def test_the_pooler_is_said_to_be_trained_for_the_familys_own_sentence_task(family_dirs, monkeypatch):
    at = _app(monkeypatch, family_dirs["albert"], "views/sentence_vector.py", b="the water ran by")
    assert "trained only for sentence-order prediction" in _texts(at)
    assert "trained only for next-sentence" not in _texts(at)
    # This RoBERTa (an MLM checkpoint) has no pooler at all: nothing is said of how one was trained, where the
    # page first told what trains a pooler and then that there is none
    at = _app(monkeypatch, family_dirs["roberta"], "views/sentence_vector.py", b="the water ran by")
    said = _texts(at)
    assert "has no pooler" in said and "trains it" not in said and "A pooler passes" not in said


def test_a_word_of_zero_width_characters_is_written_out_in_the_word_picker(family_dirs, monkeypatch):
    at = _app(monkeypatch, family_dirs["roberta"], "views/masked_words.py", a="\u200b\u200b\u200b")
    assert not at.exception
    options = at.multiselect(key="mask_words").options
    assert options and all(o.split(": ", 1)[1].strip() for o in options) and "\\u200b" in options[0]


def test_albert_hides_by_default_a_word_it_can_spell(family_dirs, monkeypatch):
    """SentencePiece writes an unknown word as a lone "▁" and <unk>: still a word it cannot spell."""
    at = _app(
        monkeypatch, family_dirs["albert"], "views/masked_words.py", a="the bank \u05d4\u05e0\u05d4\u05e8"
    )
    assert not at.exception
    assert at.multiselect(key="mask_words").value == ["word 2: bank"]


def test_masked_words_table_shows_guesses_as_the_chart_does(family_dirs, monkeypatch):
    at = _app(monkeypatch, family_dirs["roberta"], "views/masked_words.py", a="the bank of the [MASK] .")
    assert not at.exception
    table = table_with(at, "shown as")
    from tokenizers.decoders import ByteLevel  # the library's own reading of byte-level pieces

    for t, shown in zip(table["token"], table["shown as"], strict=True):
        spelt = ByteLevel().decode([t])
        if "\ufffd" in spelt:  # part of a character: its bytes
            assert "\\x" in shown, (t, shown)
        else:
            assert shown == ("␣" + spelt[1:] if t.startswith("Ġ") else spelt), (t, shown)
    assert not any("Ġ" in shown for shown in table["shown as"])


def test_masked_words_reads_a_typed_mask_as_robertas_own(family_dirs, monkeypatch):
    text = "the bank of the river [MASK] ."
    at = _app(monkeypatch, family_dirs["roberta"], "views/masked_words.py", a=text)
    assert not at.exception and not at.get("error")
    model = bert_core.load_pretrained(family_dirs["roberta"])
    (expected,) = model.predict_masks(text)
    bars = figure(at, "mask_bars_0")
    np.testing.assert_allclose(decode(bars["data"][0]["x"]), expected.probabilities, rtol=1e-5)
    shown = [html.unescape(t) for t in bars["layout"]["yaxis"]["ticktext"]]
    assert shown == [model.info.piece_style.display(t) for t in expected.tokens]
    assert not any("Ġ" in t for t in shown)
    assert "<mask> (or [MASK])" in _texts(at) and "[MASK] is read as <mask>" in _texts(at)


def test_pages_without_the_head_say_so_inline(family_dirs, monkeypatch):
    at = _app(monkeypatch, family_dirs["electra"], "views/masked_words.py")
    assert not at.exception and not at.get("error")
    assert "no MLM head" in _texts(at) and "spots replaced tokens" in _texts(at)
    # A discriminator was not trained to guess words, and ELECTRA's own pre-training checkpoint is one.
    assert "pre-trained to guess hidden words" not in _texts(at) and "Load a masked-LM checkpoint" in _texts(
        at
    )
    # Pre-training: the intro's "a generator checkpoint can be asked below" pointed at nothing; now the page
    # the discriminator's own exercise is on is one click away.
    at = _app(monkeypatch, family_dirs["electra"], "views/pretraining.py")
    assert "can be asked below" not in _texts(at) and "load a generator checkpoint" in _texts(at)
    (link,) = at.get("page_link")
    assert link.proto.page == "sentence"  # the Sentence vector & NSP page's address
    at = _app(monkeypatch, family_dirs["roberta"], "views/sentence_vector.py", b="the water ran by")
    assert not at.exception and not at.get("error")
    assert "This RoBERTa model has no NSP head" in _texts(at)
    assert "P(IsNext)" not in [m.label for m in at.metric]
    at = _app(monkeypatch, family_dirs["distilbert"], "views/pretraining.py", b="the water ran by")
    assert not at.exception and not at.get("error")
    assert "neither a next-sentence (NSP) nor a sentence-order (SOP) head" in _texts(at)


@pytest.mark.parametrize(
    "arch, note",
    [
        ("roberta", "RoBERTa dropped the sentence task"),
        ("albert", "ALBERT replaced next sentence prediction with sentence order prediction"),
        # what the draw below leaves out: ALBERT's spans, DistilBERT's third loss
        ("albert", "masks spans of up to three words at a time (n-gram masking)"),
        ("distilbert", "DistilBERT learned by distillation"),
        ("distilbert", "(a cosine loss)"),
        ("electra", "learns to spot which pieces of the text the generator replaced"),
        (
            "electra",
            "the paper puts the mask at every chosen piece, where the draw below follows BERT's 80/10/10",
        ),
    ],
)
def test_pretraining_page_says_how_the_loaded_family_learned(family_dirs, monkeypatch, arch, note):
    """Every family read "BERT learned from raw text with two exercises" and nothing of its own."""
    at = _app(monkeypatch, family_dirs[arch], "views/pretraining.py")
    [intro] = [c.value.replace("\\", "") for c in at.main.caption if "learned from raw text" in c.value]
    assert note in intro
    assert sum(other in intro for other in ("RoBERTa", "ALBERT", "DistilBERT", "ELECTRA")) == 1


def test_pretraining_page_judges_pairs_with_albert_sop_head(family_dirs, monkeypatch):
    a, b = "the bank of the river .", "the water ran by"
    at = _app(monkeypatch, family_dirs["albert"], "views/pretraining.py", a=a, b=b)
    assert not at.exception and not at.get("error")
    table = table_with(at, "model's P(in order)")
    model = bert_core.load_pretrained(family_dirs["albert"])
    for _, row in table.iterrows():
        expected = model.sentence_order(row["sentence 1"], row["sentence 2"])
        assert abs(row["model's P(in order)"] - expected) < 1e-5
    masking = table_with(at, "what happened")
    assert not any(str(p).startswith("▁") for p in masking["piece"])


def test_the_sidebar_and_attention_name_the_tokenizers_own_specials(family_dirs, monkeypatch):
    at = _app(monkeypatch, family_dirs["roberta"], "views/attention.py")
    help_b = at.text_area(key="b").help.replace("\\", "")
    assert "<s> A </s> </s> B </s>" in help_b and "one segment id" in help_b
    assert at.toggle(key="att_hide_special").label.replace("\\", "") == "Hide <s>/</s>"
    at = _app(monkeypatch, family_dirs["distilbert"], "views/tokens.py")
    assert "no segment embeddings" in at.text_area(key="b").help.replace("\\", "")
    table = table_with(at, "piece")
    assert "segment" not in table.columns  # the model has no segment table to read them with


def test_factorised_embeddings_show_the_projected_vector(family_dirs, monkeypatch):
    text = "the bank of the river ."
    at = _app(monkeypatch, family_dirs["albert"], "views/embeddings.py", a=text)
    at.radio(key="emb_component").set_value("projected").run()
    assert not at.exception
    model = bert_core.load_pretrained(family_dirs["albert"])
    r = model.analyze(text)
    shown = decode(figure(at, "emb_heatmap")["data"][0]["z"])
    assert shown.shape == r.hidden_states[0].shape == (len(r.tokens), model.info.hidden_size)
    assert abs(shown - r.hidden_states[0]).max() < 1e-5
    assert "hidden_states[0]" in _texts(at) and "E → H" in _texts(at)


def test_compare_with_the_demo_fallback_opens_on_another_model_and_says_so_when_both_are_one(
    empty_hub_cache, monkeypatch
):
    """Offline with the default hub model, the sidebar runs the demo model: the second model must not default
    to that same hub id (it would fall back to the demo model too, and both sides would agree everywhere)."""
    at = _app(monkeypatch, None, "views/compare.py")
    assert not at.exception, [e.value for e in at.exception]
    second = at.selectbox(key="model2").value
    assert second != "bert-base-uncased" and second.startswith("@demo-")
    assert not any("same model" in i.value for i in at.info)
    at.selectbox(key="model2").set_value("bert-base-uncased").run()
    said = _texts(at)
    assert "Showing the bundled demo model instead" in said and "Both sides run the same model" in said
    assert "can't be loaded here. Showing" in said  # the reason folded under it (a bracket once ended ".).")


def test_replaced_tokens_word_starts_over_when_the_new_text_has_another_word_there(family_dirs, monkeypatch):
    at = _app(monkeypatch, family_dirs["electra"], "views/sentence_vector.py", a="the bank of the river .")
    at.selectbox(key="sv_rtd_word").set_value("2: bank").run()
    at.text_area(key="a").set_value("a cat sat on the mat .").run()
    assert not at.exception
    assert at.selectbox(key="sv_rtd_word").value == "4: on"  # the new text's middle word, not "2: cat"


def test_replaced_tokens_names_both_sentences_the_strips_score(family_dirs, monkeypatch):
    at = _app(
        monkeypatch,
        family_dirs["electra"],
        "views/sentence_vector.py",
        a="the bank of the river .",
        b="we sat",
    )
    at.text_input(key="sv_rtd_with").set_value("cash").run()
    assert not at.exception
    texts = [t.value for t in at.text]
    assert any(t.startswith("A: the bank of the river .") and t.endswith("B: we sat") for t in texts)
    assert any(t.startswith("A: ") and "cash" in t and t.endswith("B: we sat") for t in texts)
    strip = figure(at, "sv_rtd")  # the strip scores the pair: B's pieces are in it
    model = bert_core.load_pretrained(family_dirs["electra"])
    assert len(model.replaced_tokens("the bank of the river .", "we sat")) == sum(
        1 for v in decode(strip["data"][0]["z"]).reshape(-1) if not np.isnan(v)
    )


def test_compare_keeps_the_second_model_when_the_sidebar_picks_it_too(
    family_dirs, monkeypatch, tiny_checkpoint
):
    """The second model's list leaves the sidebar's model out; once the sidebar picked the same model, the box's
    value was not among its options, dropped out of the URL, and the link opened another comparison."""
    second = "@demo-senses"
    at = _app(monkeypatch, tiny_checkpoint, "views/compare.py", model2=second)
    at.sidebar.selectbox(key="model").set_value(second).run()
    assert not at.exception
    assert at.selectbox(key="model2").value == second and second in at.selectbox(key="model2").options
    assert "Both sides run the same model" in _texts(at)
    # Picked there, it is not the box's first option either: Streamlit leaves the first (its default) out of
    # the URL, and the address then opened on another second model (the demo model, first of the bundled).
    at = _app(monkeypatch, "@demo", "views/compare.py", model2="@demo")
    assert not at.exception and at.selectbox(key="model2").value == "@demo"
    assert at.selectbox(key="model2").options[0] != "@demo"
    # each side's controls named apart: "Head of @demo" twice told a screen reader nothing
    labels = [box.label.replace("\\", "") for box in at.selectbox if box.key.startswith("cmp_head_")]
    assert labels == ["Head of @demo (sidebar)", "Head of @demo (second)"]


def test_compare_does_not_open_on_the_sidebars_model_under_another_name(monkeypatch):
    """A server started with --model assets/demo-model opened Compare on @demo: the same model, compared with
    itself. Picked on purpose under either name, it stays, and is not the box's first option."""
    from app import models

    directory = str(models.DEMO_MODEL_DIR)
    at = _app(monkeypatch, directory, "views/compare.py")
    assert not at.exception, [e.value for e in at.exception]
    box = at.selectbox(key="model2")
    assert box.value != "@demo" and "@demo" not in box.options and directory not in box.options
    assert "Both sides run the same model" not in _texts(at)
    at = _app(monkeypatch, directory, "views/compare.py", model2="@demo")
    box = at.selectbox(key="model2")
    assert not at.exception and box.value == "@demo" and box.options[0] != "@demo"
    assert "Both sides run the same model" in _texts(at)


def test_compare_names_the_side_without_an_mlm_head(family_dirs, monkeypatch, tiny_checkpoint):
    """ "BERT: this checkpoint has no MLM head." named neither side where both were BERT."""
    at = _app(monkeypatch, tiny_checkpoint, "views/compare.py", model2=str(family_dirs["electra"]))
    assert not at.exception, [e.value for e in at.exception]
    (said,) = [i.value for i in at.info if "no MLM head" in i.value]
    assert said.startswith("ELECTRA · ") and str(family_dirs["electra"].name) in said.replace("\\", "")


def test_inside_says_layer_0_is_projected_where_the_embeddings_are_narrower(family_dirs, monkeypatch):
    """ALBERT's and ELECTRA's layer 0 is the embeddings projected up to the hidden size, not their output."""
    for arch, projected in (("albert", True), ("roberta", False)):
        at = _app(monkeypatch, family_dirs[arch], "views/inside.py")
        at.radio(key="inside_view").set_value("hidden").run()
        said = _texts(at)
        assert "Layer 0 is the embedding output" in said
        assert ("projected to the hidden size" in said) is projected, arch


def test_the_papers_findings_name_bert_bases_specials_and_this_models_beside_them(family_dirs, monkeypatch):
    """For RoBERTa the value view said bert-base's heads weighted <s>/</s>, tokens bert-base never had."""
    at = _app(monkeypatch, family_dirs["roberta"], "views/inside.py")
    at.radio(key="inside_view").set_value("value").run()
    said = _texts(at)
    assert "weighting [CLS]/[SEP] (this model's <s>/</s>) heavily" in said
    at.radio(key="inside_view").set_value("roles").run()
    assert "in BERT is likely a no-op; this model's separator is </s>" in _texts(at)


@pytest.mark.parametrize("family", ["roberta", "albert"])
def test_the_tokens_table_keeps_its_shown_as_column_whatever_the_text(family_dirs, monkeypatch, family):
    """Left out for WordPiece only, whose pieces read as written: decided by the tokenizer, so a text whose
    pieces happen to read as written ("bank" alone, no space before it) keeps the table's columns."""
    for text in ("bank", "the bank"):
        at = _app(monkeypatch, family_dirs[family], "views/tokens.py", a=text)
        assert "shown as" in table_with(at, "piece").columns, text


def test_sentence_page_says_b_is_unused_where_no_head_reads_a_pair(family_dirs, monkeypatch, tiny_checkpoint):
    """DistilBERT's page said B was "used only by the pair predictions below", over a note that it has none."""
    at = _app(monkeypatch, family_dirs["distilbert"], "views/sentence_vector.py", b="we sat by the water .")
    assert not at.exception, [e.value for e in at.exception]
    said = _texts(at)
    assert "Sentence B is not used on this page" in said and "used only by the pair predictions" not in said
    at = _app(monkeypatch, tiny_checkpoint, "views/sentence_vector.py", b="we sat by the water .")  # NSP
    said = _texts(at)
    assert "used only by the pair predictions" in said and "not used on this page" not in said


@pytest.mark.parametrize("view", ["lens", "pll", "ablation"])
def test_inside_tells_an_electra_discriminator_what_it_does_instead(family_dirs, monkeypatch, view):
    """Masked words and Pre-training said it spots replaced tokens and its generator guesses words; the logit
    lens, head importance and pseudo-likelihood said only "needs an MLM head"."""
    at = _app(monkeypatch, family_dirs["electra"], "views/inside.py")
    at.radio(key="inside_view").set_value(view).run()
    assert not at.exception, [e.value for e in at.exception]
    said = _texts(at)
    assert (
        "It is a discriminator: it spots replaced tokens instead" in said and "generator checkpoint" in said
    )


def test_word_senses_says_a_cased_model_reads_another_case_as_another_word(family_dirs, monkeypatch):
    """RoBERTa's "Bank" is not its "bank": the sentence was left out "whole words only", the wrong reason."""
    lines = "the bank by the river | river\nThe Bank is here | money\nmy bank and cash | money\nBANK"
    at = _app(
        monkeypatch, family_dirs["roberta"], "views/word_senses.py", senses_word="bank", senses_text=lines
    )
    (warned,) = [w.value.replace("\\", "") for w in at.warning if "not in these sentences" in w.value]
    assert "This model tells capitals and accents apart" in warned
    assert "sentences 2, 4 have 'bank' only in other capitals or accents" in warned
    at = _app(monkeypatch, family_dirs["roberta"], "views/word_senses.py", senses_word="bank",
              senses_text="the bank by the river\nmy bank\nthe banks")  # fmt: skip
    assert not any("capitals" in w.value for w in at.warning)
