"""The app's Pre-training page (app/views/pretraining.py) on the tiny checkpoint."""

from __future__ import annotations

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import bert_core
from bert_core.pretraining.masking import MaskAction, mask_tokens, ordinary_token_ids


@pytest.fixture
def page(make_app):
    def run(**query) -> AppTest:
        return make_app("views/pretraining.py", **query)

    return run


def _table(at: AppTest, column: str):
    for frame in at.dataframe:
        if column in frame.value.columns:
            return frame.value
    raise AssertionError(f"no table with column {column!r}")


def test_page_shows_a_masking_draw_with_predictions_and_pairs(page, tiny_checkpoint):
    text = "the cat sat on the bank of the river and the dog ran to the water"
    at = page(a=text, b="she was by the river")
    assert not at.error
    masking = _table(at, "what happened")
    chosen = masking[masking["chosen"]]
    assert len(chosen) >= 1
    assert not chosen["piece"].isin(["[CLS]", "[SEP]"]).any()

    # The same draw, recomputed with the core: the page's predictions and losses must match it.
    model = bert_core.load_pretrained(tiny_checkpoint)
    tok = model.tokenizer
    enc = tok.encode(text, "she was by the river")
    ids = np.asarray(enc.input_ids)
    specials = [tok.cls_token_id, tok.sep_token_id, tok.pad_token_id, tok.mask_token_id]
    replacements = ordinary_token_ids(tok.vocab_size, [*specials, tok.unk_token_id])  # as in training
    m = mask_tokens(
        ids, np.asarray(enc.special_tokens_mask) | np.isin(ids, specials), mask_token_id=tok.mask_token_id,
        random_token_ids=replacements, rng=np.random.default_rng([0, 20]),
    )  # fmt: skip
    assert chosen["position"].tolist() == m.positions.tolist()
    assert (masking["what happened"] != "").sum() == len(m.positions)
    assert masking["model sees"].tolist() == tok.convert_ids_to_tokens(m.input_ids.tolist())
    expected = model.predict_at(m.input_ids, m.positions, token_type_ids=enc.token_type_ids, labels=m.targets)
    predictions = _table(at, "top 5 guesses")
    np.testing.assert_allclose(predictions["loss"].to_numpy(), expected.losses, rtol=1e-5)
    guesses = predictions["top 5 guesses"].iloc[0].split(" · ")
    assert (
        list(predictions.columns)[-1] == "top 5 guesses"
    )  # the long one last: it hid P(original) at 1024 px
    assert len(guesses) == 5 and all(g.endswith(")") and " (" in g for g in guesses)
    assert int((m.actions == MaskAction.MASK).sum()) == (masking["model sees"] == "[MASK]").sum()

    pairs = _table(at, "model's P(IsNext)")
    assert len(pairs) == 4 and pairs["drawn"].sum() == 2
    # what was drawn and the model's answer before the sentences, which can be long enough to hide them
    assert list(pairs.columns).index("model's P(IsNext)") < list(pairs.columns).index("sentence 1")
    first = pairs.iloc[0]
    assert first["model's P(IsNext)"] == pytest.approx(
        model.next_sentence(text, "she was by the river"), abs=1e-6
    )


def test_redraw_changes_the_masking(page):
    at = page(a="the cat sat on the bank of the river and the dog ran to the water with a stick")
    before = _table(at, "what happened")["chosen"].tolist()
    draws = set()
    for _ in range(4):
        at.button(key="pt_redraw").click().run()
        draws.add(tuple(_table(at, "what happened")["chosen"].tolist()))
    assert draws - {tuple(before)}, "re-drawing never changed which pieces were chosen"
    assert not at.exception


def test_the_draw_is_in_the_link(page):
    """A lecturer's "draw 3" once opened as draw 1 for the room: the draw was kept in the session only."""
    text = "the cat sat on the bank of the river and the dog ran to the water with a stick"
    at = page(a=text)
    for _ in range(2):
        at.button(key="pt_redraw").click().run()
    assert at.number_input(key="pt_draw").value == 3
    linked = page(a=text, pt_draw="3")
    assert not linked.exception and linked.number_input(key="pt_draw").value == 3
    chosen = _table(at, "what happened")["chosen"].tolist()
    assert _table(linked, "what happened")["chosen"].tolist() == chosen
    last = page(a=text, pt_draw="1000000")  # the box's maximum: the next draw is 1 again, in the link too
    last.button(key="pt_redraw").click().run()
    assert last.number_input(key="pt_draw").value == 1 and last.query_params.get("pt_draw") in (
        None,
        [],
        "1",
        ["1"],
    )
    assert (
        _table(last, "what happened")["chosen"].tolist()
        == _table(page(a=text), "what happened")["chosen"].tolist()
    )


def test_a_lab_checkpoint_is_drawn_and_introduced_with_its_own_recipe(make_app, tmp_path, tiny_checkpoint):
    """A run at 40 % masking with sentence order was introduced as BERT's 15 % and next sentence prediction,
    and drawn at 15 %."""
    import json
    import shutil

    from app import bundled
    from bert_core.pretraining.masking import MaskingConfig

    lab = tmp_path / "lab"
    shutil.copytree(tiny_checkpoint, lab)
    training = {"mlm_probability": 0.4, "mask_fraction": 0.5, "random_fraction": 0.25, "masking": "static",
                "pair_task": "sop"}  # fmt: skip
    (lab / "pretraining.json").write_text(json.dumps({"training_config": training}))
    model = bert_core.load_pretrained(lab)
    assert model.info.lab_recipe == bert_core.LabRecipe(0.4, 0.5, 0.25, "static", "sop")
    text = "the cat sat on the bank of the river and the dog ran to the water"
    at = make_app("views/pretraining.py", model=str(lab), a=text, b="she was by the river")
    assert not at.exception and not at.error
    said = " ".join(c.value for c in at.main.caption).replace("\\", "")
    assert "pre-trained with bertscope pretrain: 40% of the pieces chosen (of those 50% → [MASK], 25% random, " \
        "25% kept), static masking, sentence order prediction" in said  # fmt: skip
    tok = model.tokenizer
    enc = tok.encode(text, "she was by the river")
    ids = np.asarray(enc.input_ids)
    specials = [tok.cls_token_id, tok.sep_token_id, tok.pad_token_id, tok.mask_token_id]
    m = mask_tokens(
        ids, np.asarray(enc.special_tokens_mask) | np.isin(ids, specials), mask_token_id=tok.mask_token_id,
        random_token_ids=ordinary_token_ids(tok.vocab_size, [*specials, tok.unk_token_id]),
        rng=np.random.default_rng([0, 20]), config=MaskingConfig(0.4, 0.5, 0.25),
    )  # fmt: skip
    masking = _table(at, "what happened")
    assert masking[masking["chosen"]]["position"].tolist() == m.positions.tolist()
    assert any(w.endswith("(50%)") for w in masking["what happened"]), list(masking["what happened"])
    assert "40% on average" in " ".join(md.value for md in at.markdown)
    assert _table(at, "model's P(in order)") is not None  # its pair head judged as the task it learned
    # BERT's own recipe (the demo model's record) is the intro's: not said twice
    demo = make_app("views/pretraining.py", model="@demo", a=text)
    assert bert_core.load_pretrained(bundled.DEMO_MODEL_DIR).info.lab_recipe is not None
    assert not [c for c in demo.main.caption if "pre-trained with bertscope pretrain" in c.value]
    # a record the lab would not write is no recipe (and no load error)
    (lab / "pretraining.json").write_text(json.dumps({"training_config": {"mlm_probability": 2}}))
    assert bert_core.load_pretrained(lab).info.lab_recipe is None


def test_a_checkpoint_with_a_pair_head_alone_still_judges_pairs(make_app, tmp_path):
    """A BERT with only its next-sentence head lost the whole page to "it has no MLM head"."""
    from tests.conftest import make_checkpoint

    nsp = make_checkpoint(tmp_path / "nsp", "nsp")
    a, b = "the dog sat by the river", "she was by the water"
    at = make_app("views/pretraining.py", model=str(nsp), a=a, b=b)
    assert not at.exception and not at.error
    assert any("has no MLM head" in i.value for i in at.info)
    pairs = _table(at, "model's P(IsNext)")
    assert pairs.iloc[0]["model's P(IsNext)"] == pytest.approx(
        bert_core.load_pretrained(nsp).next_sentence(a, b), abs=1e-6
    )


def test_a_text_of_special_tokens_alone_is_not_told_to_draw_again(page):
    at = page(a="[MASK] [MASK] [SEP]")
    said = " ".join(i.value for i in at.info).replace("\\", "")
    assert (
        not at.exception and "Every piece of this text is a special token" in said and "Re-draw" not in said
    )
    assert not [md.value for md in at.markdown if "pieces chosen" in md.value]  # no "0 of 0 pieces chosen"


def test_page_without_sentence_b_explains_the_pair_examples(page):
    at = page(a="the dog sat by the river")
    assert any("sentence B" in i.value for i in at.info)


def test_a_core_error_is_told_in_the_sidebars_words(page):
    at = page(a="the dog sat by the river", b="\u200b\u200b")  # a sentence B of zero-width characters only
    errors = " ".join(e.value for e in at.error)
    assert "Sentence B" in errors and "text_pair" not in errors


def test_an_embedding_table_larger_than_the_vocabulary_never_yields_a_token_less_id(
    tmp_path, monkeypatch, make_app
):
    """Random replacements come from ids the vocabulary knows (not the padded table), never [UNK]."""
    from bert_core.pretraining.masking import replacement_token_ids
    from tests.conftest import TINY_VOCAB, make_checkpoint

    directory = make_checkpoint(tmp_path / "padded", vocab_size=len(TINY_VOCAB) + 40)
    model = bert_core.load_pretrained(directory)
    tok = model.tokenizer
    assert model.config.vocab_size > tok.vocab_size
    ids = replacement_token_ids(tok, model.config.vocab_size)
    assert ids.max() < tok.vocab_size
    assert not np.isin(ids, [tok.unk_token_id, tok.cls_token_id, tok.sep_token_id, tok.mask_token_id]).any()
    tok.convert_ids_to_tokens(ids.tolist())  # every id has a piece

    monkeypatch.setenv("BERTSCOPE_MODEL", str(directory))
    at = make_app(
        "views/pretraining.py", a="the cat sat on the bank of the river and the dog ran to the water"
    )
    for _ in range(5):
        at.button(key="pt_redraw").click().run()
        assert not at.exception, [e.value for e in at.exception]


def test_a_pair_longer_than_the_model_is_shown_as_far_as_it_was_read(page, tiny_checkpoint):
    """The examples printed a 300-word A whole, under a note that the model reads 64 pieces, beside the pair
    head's answer on the cut text."""
    a, b = " ".join(["the cat sat on the bank"] * 30), "she was by the river"
    at = page(a=a, b=b)
    assert not at.error
    pairs = _table(at, "model's P(IsNext)")
    enc = bert_core.load_pretrained(tiny_checkpoint).tokenizer.encode(a, b)
    assert enc.truncated
    read_to = max(int(e) for (_, e), s in zip(enc.offsets, enc.sequence_ids, strict=True) if s == 0)
    assert pairs.iloc[0]["sentence 1"] == a[:read_to] + " …" and pairs.iloc[0]["sentence 2"] == b
    assert all(a not in t.value for t in at.text)  # the example boxes too
    assert any("each example is shown as far as it was read" in c.value for c in at.caption)
    # a pair the model reads whole is shown whole, with no such note
    at = page(a="the cat sat", b=b)
    assert _table(at, "model's P(IsNext)").iloc[0]["sentence 1"] == "the cat sat"
    assert not any("as far as it was read" in c.value for c in at.caption)
