"""Every page with every family: RoBERTa, DistilBERT, ALBERT and ELECTRA checkpoints open, each page renders
without an exception, and the pages say what the family changes."""

from __future__ import annotations

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

import bert_core
from app.registry import PAGES
from tests.app.conftest import APP, TIMEOUT, decode, figure
from tests.variants import make_variant

FAMILIES = {
    "roberta": "mlm",
    "distilbert": "mlm",
    "albert": "pretraining",  # MLM + SOP
    "electra": "pretraining",  # the discriminator (RTD)
}


@pytest.fixture(scope="module")
def family_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("families")
    return {arch: make_variant(root / arch, arch, kind) for arch, kind in FAMILIES.items()}


def _app(monkeypatch, directory, page: str | None = None, **query) -> AppTest:
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


def test_bpe_pieces_show_a_visible_space_not_the_marker(family_dirs, monkeypatch):
    at = _app(monkeypatch, family_dirs["roberta"], "views/tokens.py", a="the bank of the river")
    chips = figure(at, "tokens_chips")
    labels = [t for trace in chips["data"] for t in trace.get("text", [])]
    assert any(t.startswith("␣") for t in labels) and not any("Ġ" in t for t in labels)
    assert "RoBERTa never sees words" in _texts(at) and "not WordPiece" in _texts(at)


def test_embeddings_page_says_what_each_family_changes(family_dirs, monkeypatch):
    at = _app(monkeypatch, family_dirs["distilbert"], "views/embeddings.py")
    text = _texts(at)
    assert "no segment embeddings" in text
    assert "segment" not in [r.value for r in at.radio if r.key == "emb_component"][0:1]
    at = _app(monkeypatch, family_dirs["albert"], "views/embeddings.py")
    assert "Factorised embeddings: the tables are 16 wide" in _texts(at)


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
    shown = decode(strip["data"][0]["z"]).reshape(-1).tolist()
    model = bert_core.load_pretrained(family_dirs["electra"])
    expected = [p for _, p in model.replaced_tokens(text)]
    assert max(abs(a - b) for a, b in zip(shown, expected, strict=True)) < 1e-5
    # the helper swaps one word and scores the edited sentence too
    at.text_input(key="sv_rtd_with").set_value("cash").run()
    assert not at.exception
    edited = figure(at, "sv_rtd_edited")
    assert decode(edited["data"][0]["z"]).size >= len(expected) - 1


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
    assert left["layout"]["title"]["text"] and right["layout"]["title"]["text"]
    masks = figure(at, "cmp_masks_right")
    assert len(masks["data"][0]["y"]) == 5 or len(decode(masks["data"][0]["x"])) == 5
    senses = figure(at, "cmp_senses")
    assert len(senses["data"]) == 2  # one curve per model
    assert at.query_params["model2"] == [str(family_dirs["distilbert"])] or at.query_params["model2"] == str(
        family_dirs["distilbert"]
    )
