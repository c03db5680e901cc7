"""The Task page for every kind of fine-tuned head shows the core's own answers and saliency, and says what
is missing instead of failing."""

from __future__ import annotations

import json

import numpy as np
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

import bert_core
from app import cache, charts, ui
from tests.app.conftest import APP, TIMEOUT, decode, figure, hover
from tests.variants import make_task_checkpoint

PAGE = "views/task.py"
SENTIMENT = ["NEG", "POS"]
TAGS = ["O", "B-PLACE", "I-PLACE"]


@pytest.fixture(scope="module")
def heads(tmp_path_factory):
    root = tmp_path_factory.mktemp("task-page")
    labels = {"classify": SENTIMENT, "tag": TAGS, "qa": None, "choice": None}
    return {task: make_task_checkpoint(root / task, "bert", task, labels[task]) for task in labels}


def _strip(spec: dict) -> np.ndarray:
    """A saliency strip's values in reading order: its rows joined, the last row's empty cells left out."""
    values = decode(spec["data"][0]["z"]).reshape(-1)
    return values[~np.isnan(values)]


def _app(monkeypatch, directory, page: str = PAGE, **query) -> AppTest:
    monkeypatch.setenv("BERTSCOPE_MODEL", str(directory))
    st.cache_resource.clear()
    st.cache_data.clear()
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_classifier_bars_and_saliency_are_the_cores(heads, monkeypatch):
    text = "we deposited cash at the bank"
    at = _app(monkeypatch, heads["classify"], a=text)
    model = bert_core.load_pretrained(heads["classify"])
    bars = figure(at, "task_classify")["data"][0]
    np.testing.assert_allclose(decode(bars["x"]), [p for _, p in model.classify(text)], atol=1e-6)
    strip = _strip(figure(at, "task_saliency"))
    np.testing.assert_allclose(strip, model.attribute(text).scores, atol=1e-5)
    first = figure(at, "task_cls_attention")  # the first token's attention per layer, heads averaged
    attentions = model.analyze(text).attentions
    np.testing.assert_allclose(decode(first["data"][0]["z"]), attentions[:, :, 0, :].mean(axis=1), atol=1e-6)
    assert "mean of the heads" in first["layout"]["title"]["text"]
    assert hover(first["data"][0], 0, 1).startswith("layer 1 · 1: ")  # no 0-based number before the layer
    assert any("is not why" in c.value for c in at.caption)
    before = at.session_state[cache.FORWARD_PASSES]
    at.radio(key="task_method").set_value("integrated_gradients").run()  # the same choice again: cached
    assert at.session_state[cache.FORWARD_PASSES] == before


def test_tagger_answer_and_choices(heads, monkeypatch):
    at = _app(monkeypatch, heads["tag"], a="we sat by the river bank")
    assert not at.get("error")
    model = bert_core.load_pretrained(heads["tag"])
    table = [t for t in at.dataframe if "label" in t.value.columns][0].value
    tags = model.tag("we sat by the river bank")
    # Every piece but [CLS] and [SEP], by its own position: a [SEP] labelled B-PERSON at 0.99 read as a finding.
    assert list(table["position"]) == list(range(1, len(tags) - 1))
    assert list(table["label"]) == [label for _, label, _ in tags[1:-1]]
    assert list(table["token"]) == [token for token, _, _ in tags[1:-1]]

    question, passage = "where was the cash?", "we deposited the cash at the bank by the river."
    at = _app(monkeypatch, heads["qa"], a=question, b=passage)
    best = bert_core.load_pretrained(heads["qa"]).answer(question, passage)[0]
    assert at.metric[0].value == best[0] and at.metric[0].delta == f"probability {ui.percent(best[4])}"

    at = _app(monkeypatch, heads["choice"], a="we went to the bank")
    probs = decode(figure(at, "task_choose")["data"][0]["x"])
    expected = bert_core.load_pretrained(heads["choice"]).choose(
        "we went to the bank", ["to deposit money", "to fish in the river"]
    )
    np.testing.assert_allclose(probs, [p for _, p in expected], atol=1e-6)


def test_an_answer_of_invisible_characters_is_named_not_left_blank(heads, monkeypatch):
    """ALBERT's best span over " \xa0 x \u200b y " was the zero-width space alone: the metric showed nothing."""
    real = bert_core.BertScopeModel.answer

    def answer(self, question, context, top_k=1, **kwargs):
        found = real(self, question, context, top_k=top_k, **kwargs)
        return [("\u200b", 3, 4, found[0][3], found[0][4]), *found[1:]]

    monkeypatch.setattr(bert_core.BertScopeModel, "answer", answer)
    at = _app(monkeypatch, heads["qa"], a="where?", b="we sat \u200bby the bank")
    assert at.metric[0].value == "(no visible characters: '\\u200b')"


def test_a_typed_sep_is_no_piece_the_tag_table_lists_or_explains(heads, monkeypatch):
    """A typed [SEP] headed the table and was explained by default ("[SEP] → B-TIME"), though no word takes
    its label and the entities left it out."""
    text = "[SEP] we sat by the river"
    at = _app(monkeypatch, heads["tag"], a=text)
    model = bert_core.load_pretrained(heads["tag"])
    assert model.tag(text)[1][0] == "[SEP]"  # the head labels it
    table = [t for t in at.dataframe if "label" in t.value.columns][0].value
    assert "[SEP]" not in list(table["token"]) and list(table["position"]) == list(
        range(2, len(model.tag(text)) - 1)
    )
    box = at.selectbox(key="task_tag_piece")
    assert not any("[SEP]" in option for option in box.options) and box.value.startswith("2: we")


def test_the_piece_explained_first_is_the_one_whose_label_the_first_entity_takes(heads, monkeypatch):
    """The first piece labelled other than O was explained by default: "##want → B-PLACE", though "unwanted"
    takes its first piece's O and is no entity; the first entity here is "bank"."""
    text = "we sat by the unwanted bank"
    real = bert_core.BertScopeModel.tag

    def tag(self, text, text_pair=None):
        tags = real(self, text, text_pair)
        label = {"##want": "B-PLACE", "bank": "B-PLACE"}
        return [(t, label.get(t, "O"), p) for t, _, p in tags]

    monkeypatch.setattr(bert_core.BertScopeModel, "tag", tag)
    at = _app(monkeypatch, heads["tag"], a=text)
    tokens = [t for t, _, _ in bert_core.load_pretrained(heads["tag"]).tag(text)]
    assert "##want" in tokens
    assert at.selectbox(key="task_tag_piece").value == f"{tokens.index('bank')}: bank → B-PLACE"
    # a RoBERTa lone "Ġ" before "(" starts where the entity does, and is not the piece that labels it
    roberta = make_task_checkpoint(heads["tag"].parent / "roberta-tag", "roberta", "tag", TAGS)
    monkeypatch.setattr(
        bert_core.BertScopeModel,
        "tag",
        lambda self, t, p=None: [(x, "B-PLACE" if x == "(" else "O", q) for x, _, q in real(self, t, p)],
    )
    at = _app(monkeypatch, roberta, a="we sat by (the bank) of tom")
    assert at.selectbox(key="task_tag_piece").value.endswith(": ( → B-PLACE")


def test_an_empty_question_is_told_that_sentence_a_is_the_question(heads, monkeypatch):
    """A blank sentence A with a passage got the other pages' "Type a sentence in the sidebar (Sentence A)"."""
    at = _app(monkeypatch, heads["qa"], a="   ", b="we deposited the cash at the bank.")
    (said,) = [i.value for i in at.info]
    assert said.startswith("Type the question as sentence A and the passage as sentence B")
    at = _app(monkeypatch, heads["classify"], a="   ")
    assert [i.value for i in at.info] == ["Type a sentence in the sidebar (Sentence A) to analyse it."]


def test_a_question_with_no_room_for_the_passage_is_one_error_not_a_cut(heads, monkeypatch):
    """The page said the question was too long and, beside it, that the end of sentence A was cut off and B
    read whole: nothing had been read."""
    question = " ".join(["where"] * 80)
    at = _app(monkeypatch, heads["qa"], a=question, b="we deposited the cash at the bank.")
    (error,) = [e.value for e in at.error]
    assert "the model reads only 64 at once" in error and "shorten it" in error
    assert not [w.value for w in at.warning if "cut off" in w.value]


def test_choices_cut_to_the_models_length_are_named_and_sentence_b_is_not_read(heads, monkeypatch):
    """Each (prompt, choice) pair is cut on its own: two choices that differ only past the cut scored alike
    with no word, while a warning spoke of sentence B, which the head never reads."""
    long = " ".join(["money"] * 80)
    at = _app(monkeypatch, heads["choice"], a="we went to the bank", b=" ".join(["river"] * 80))
    assert not at.warning  # B's length is nobody's business here
    assert any("Sentence B is not read" in c.value for c in at.caption)
    at.text_area(key="task_choices").set_value(f"to fish\n\n{long} a\n{long} b").run()
    warned = [w.value for w in at.warning]
    assert len(warned) == 1 and warned[0].startswith("The end of the choice on lines 3, 4 went unread"), (
        warned
    )
    assert "reads 64 pieces of the prompt and a choice together" in warned[0] and "score alike" in warned[0]
    # A prompt cut beside every choice is said once, and not as a difference between them
    at.text_area(key="task_choices").set_value("to fish\nto swim\nto deposit money").run()
    at.text_area(key="a").set_value(" ".join(["we walked by the river"] * 20)).run()
    warned = [w.value for w in at.warning]
    assert len(warned) == 1 and warned[0].startswith("Beside every choice, the end of the prompt went unread")
    assert "score alike" not in warned[0]
    assert not at.subheader and "task_method" not in [
        r.key for r in at.radio
    ]  # no "Why", no Method over nothing


def test_any_label_of_a_classifier_can_be_explained(heads, monkeypatch):
    """Only the predicted class could be explained; a multi-label head can give several."""
    text = "we deposited cash at the bank"
    at = _app(monkeypatch, heads["classify"], a=text)
    model = bert_core.load_pretrained(heads["classify"])
    best, other = (label for label, _ in model.classify(text))
    box = at.selectbox(key="task_class")
    assert box.value == best and set(box.options) == set(SENTIMENT)
    box.set_value(other).run()
    assert not at.exception
    strip = figure(at, "task_saliency")
    np.testing.assert_allclose(_strip(strip), model.attribute(text, target=other).scores, atol=1e-5)
    assert other in strip["layout"]["title"]["text"]
    assert at.query_params["task_class"] in (other, [other])  # in the link


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"problem_type": "regression", "num_labels": 1}, "the output value itself"),
        ({"problem_type": "multi_label_classification"}, "a label's logit, before its sigmoid"),
    ],
)
def test_the_why_caption_names_the_score_each_kind_of_classifier_explains(
    tmp_path, monkeypatch, changes, said
):
    """It said "a logit, before the softmax" of a regression head (no logit, no softmax) and of a sigmoid's."""
    labels = None if changes.get("num_labels") == 1 else SENTIMENT
    directory = make_task_checkpoint(tmp_path / "head", "bert", "classify", labels, **changes)
    at = _app(monkeypatch, directory, a="we sat by the bank")
    why = [c.value for c in at.caption if c.value.startswith("Integrated gradients")]
    assert len(why) == 1 and f"({said})" in why[0] and "softmax" not in why[0]


def test_a_choice_the_model_reads_as_empty_is_named_by_its_line(heads, monkeypatch):
    """A line of zero-width characters was blamed on "Sentence B", which nobody had typed."""
    at = _app(monkeypatch, heads["choice"], a="Tom went")
    at.text_area(key="task_choices").set_value("to deposit money\n\n\u200b\u200b").run()
    (error,) = [e.value.replace("\\", "") for e in at.error]
    # named by its line in the box, the blank line counted
    assert error.startswith("The choice on line 3 is empty once the tokenizer has removed"), error
    assert "Sentence B" not in error
    assert at.text_area(key="task_choices").value == "to deposit money\n\n\u200b\u200b"  # kept as typed
    model = bert_core.load_pretrained(heads["choice"])
    with pytest.raises(bert_core.InputError, match=r"^choices\[1\] is empty"):
        model.choose("Tom went", ["to deposit money", "\u200b\u200b"])


def test_typed_choices_survive_a_visit_to_another_page(heads, monkeypatch):
    at = _app(monkeypatch, heads["choice"], a="we went to the bank")
    at.text_area(key="task_choices").set_value("wet\ndry\nmuddy").run()
    assert len(decode(figure(at, "task_choose")["data"][0]["x"])) == 3
    at.switch_page("views/tokens.py").run()
    at.switch_page(PAGE).run()
    assert not at.exception
    assert at.text_area(key="task_choices").value == "wet\ndry\nmuddy"
    assert len(decode(figure(at, "task_choose")["data"][0]["x"])) == 3


def test_qa_without_a_passage_and_a_model_without_a_head_say_so(heads, monkeypatch, tiny_checkpoint):
    at = _app(monkeypatch, heads["qa"], a="where was the cash?")
    assert any("passage" in str(i.value) for i in at.info) and not at.get("error")
    at = _app(monkeypatch, tiny_checkpoint, a="the bank")
    (said,) = [str(i.value) for i in at.info if "no fine-tuned task head" in str(i.value).replace("\\", "")]
    assert "`" not in said  # "`bertscope finetune`" showed its backticks: escaped, they are only text
    # The bundled heads a click away: typed over "@demo" in the picker, "@demo-senses" lost itself at the "-"
    at.button(key="task_use_@demo-roles").click().run()
    assert not at.exception and at.selectbox(key="model").value == "@demo-roles"
    assert not any("no fine-tuned task head" in str(i.value).replace("\\", "") for i in at.info)
    assert any("label" in t.value.columns for t in at.dataframe)  # the tagger's table


def test_masked_words_offers_saliency_for_a_chosen_guess(monkeypatch, tiny_checkpoint):
    at = _app(monkeypatch, tiny_checkpoint, "views/masked_words.py", a="the cat sat on the [MASK] .")
    at.selectbox(key="mask_saliency").select_index(1).run()
    assert not at.exception, [e.value for e in at.exception]
    strip = _strip(figure(at, "mask_saliency_strip"))
    assert strip.shape == (
        len(bert_core.load_pretrained(tiny_checkpoint).encode("the cat sat on the [MASK] .")),
    )
    picked = at.selectbox(key="mask_saliency").value
    at.switch_page("views/tokens.py").run()
    at.switch_page("views/masked_words.py").run()
    assert at.selectbox(key="mask_saliency").value == picked != "—"  # kept across the visit
    assert figure(at, "mask_saliency_strip")
    assert [c for c in at.caption if c.value.startswith("Explained: the guess's logit")]
    # the baseline is said, the mask's part in it too: a typed mask is no added special, so it is padded there
    said = " ".join(c.value for c in at.caption).replace("\\", "")
    assert (
        "from a baseline with every piece, the mask too, replaced by padding ([CLS] and [SEP] kept)" in said
    )
    enc = bert_core.load_pretrained(tiny_checkpoint).encode("the cat sat on the [MASK] .")
    assert not enc.special_tokens_mask[enc.tokens.index("[MASK]")] and enc.special_tokens_mask[0]
    # a new text whose mask sits elsewhere: the kept guess is not among its guesses, so the choice starts over
    at.text_area(key="a").set_value("[MASK] sat on the mat .").run()
    assert not at.exception and picked not in at.selectbox(key="mask_saliency").options
    assert at.selectbox(key="mask_saliency").value == "—"


def test_the_bundled_demo_heads_are_in_the_picker_and_answer_offline(monkeypatch):
    from app import models

    for name, folder in models.DEMO_TASKS.items():
        assert (models.DEMO_TASKS_DIR / folder / "config.json").is_file(), f"{name} is not bundled"
        assert name in models.model_options()
    at = _app(monkeypatch, models.DEMO_TASKS_DIR / "senses", a="We fished from the muddy bank of the river.")
    bars = figure(at, "task_classify")["data"][0]
    best = bert_core.load_pretrained(models.DEMO_TASKS_DIR / "senses").classify(
        "We fished from the muddy bank of the river."
    )[0]
    assert best[0] == "bank-river" and decode(bars["x"])[0] == pytest.approx(best[1], abs=1e-6)


def test_an_entity_type_has_one_colour_in_sentence_a_and_b(monkeypatch):
    """Colours once followed the types each chart held: PERSON blue in A's chart, orange in B's (blue there
    meaning OBJECT)."""
    from app import models

    roles = models.DEMO_TASKS_DIR / "roles"
    a, b = "Anna met Tom.", "They sat in the garden on Sunday evening."
    model = bert_core.load_pretrained(roles)
    kinds = [{e.label for e in model.entities(a, b) if e.sentence == s} for s in (0, 1)]
    assert kinds[0] & kinds[1] and kinds[0] != kinds[1]  # a type in both charts, beside others in one
    at = _app(monkeypatch, roles, a=a, b=b)
    colours = {}
    for key in ("task_entities_a", "task_entities_b"):
        for trace in figure(at, key)["data"]:
            if trace["name"] != "other text":
                colours.setdefault(trace["name"], set()).add(trace["marker"]["color"])
    assert all(len(c) == 1 for c in colours.values()), colours
    types = model.entity_types()
    assert set(colours) <= set(types) and len({c.pop() for c in colours.values()}) == len(colours)


def test_the_why_panel_explains_any_pieces_label_and_either_end_of_an_answer(heads, monkeypatch):
    """A tagger's saliency once answered for the first piece only, and QA's for the answer's start only."""
    text = "we sat by the river bank"
    at = _app(monkeypatch, heads["tag"], a=text)
    model = bert_core.load_pretrained(heads["tag"])
    box = at.selectbox(key="task_tag_piece")
    tags = model.tag(text)
    assert len(box.options) == len(tags) - 2  # every piece but [CLS] and [SEP]
    last = box.options[-1]
    position, label = int(last.split(":")[0]), last.rsplit("→ ", 1)[1]
    assert (position, label) == (len(tags) - 2, tags[-2][1])
    box.set_value(last).run()
    assert not at.exception
    spec = figure(at, "task_saliency")
    expected = model.attribute(text, target=(position, label))
    np.testing.assert_allclose(_strip(spec), expected.scores, atol=1e-5)
    assert str(position) in spec["layout"]["title"]["text"]
    at.switch_page("views/tokens.py").run()
    at.switch_page("views/task.py").run()
    assert at.selectbox(key="task_tag_piece").value == last  # the piece explained survives a visit elsewhere

    question, passage = "where was the cash?", "we deposited the cash at the bank by the river."
    at = _app(monkeypatch, heads["qa"], a=question, b=passage)
    assert at.radio(key="task_qa_end").options == [
        "the answer's start",
        "the answer's end",
    ]  # and in the link
    at.radio(key="task_qa_end").set_value("end").run()
    assert not at.exception
    expected = bert_core.load_pretrained(heads["qa"]).attribute(question, passage, target="end")
    strip = figure(at, "task_saliency")
    np.testing.assert_allclose(_strip(strip), expected.scores, atol=1e-5)
    assert "end" in strip["layout"]["title"]["text"]
    said = [c.value for c in at.caption if c.value.startswith("Explained:")]
    assert len(said) == 1 and "logit" in said[0] and f"{expected.score:.3f} for the input" in said[0]
    # The one logit explained, told apart from the answer's score (their sum), which the table shows.
    best = bert_core.load_pretrained(heads["qa"]).answer(question, passage)[0]
    assert said[0].startswith(
        f"Explained: the end logit at the answer's last piece (the answer's score, {best[3]:.3f}, is its start "
        "logit plus its end logit)"
    )
    from streamlit.proto.Metric_pb2 import Metric

    assert at.metric[0].proto.direction == Metric.MetricDirection.NONE  # no arrow: the probability is no rise
    at.radio(key="task_method").set_value("gradient_x_input").run()
    said = [c.value for c in at.caption if c.value.startswith("Explained:")]
    assert not at.exception and len(said) == 1 and "baseline" not in said[0]


def test_characters_the_model_reads_as_unknown_are_named(monkeypatch):
    """Typed characters the demo QA model has no piece for ('☃', '¶') are named; its "?" is a piece."""
    from app import models

    at = _app(
        monkeypatch,
        models.DEMO_TASKS_DIR / "qa",
        a="where did anna leave the ☃ book?",
        b="anna left it ¶ there",
    )
    notes = [c.value.replace("\\", "") for c in at.caption if "vocabulary has no piece" in c.value]
    assert notes == ["This model's vocabulary has no piece for '☃', '¶': it reads them as [UNK]."]
    at = _app(
        monkeypatch, models.DEMO_TASKS_DIR / "qa", a="where did anna leave the book?", b="anna left it there"
    )
    assert not [c for c in at.caption if "vocabulary has no piece" in c.value]


def _note_page():
    from types import SimpleNamespace

    import streamlit as st

    from app import ui

    for method, score, baseline, gap in st.session_state["cases"]:
        ui.attribution_note(
            SimpleNamespace(method=method, score=score, baseline_score=baseline, completeness_gap=gap),
            "the logit",
        )


def test_the_attribution_note_gives_the_numbers_and_warns_when_they_do_not_add_up():
    at = AppTest.from_function(_note_page, default_timeout=TIMEOUT)
    at.session_state["cases"] = [
        ("integrated_gradients", 2.0, 0.5, 0.001),  # adds up: no warning
        ("integrated_gradients", 1.0, 1.0, 0.0),  # no change at all: no share of it, no division
        ("gradient_x_input", 3.0, 0.0, 0.0),  # no baseline to speak of
        ("integrated_gradients", 0.5, 0.50021, 0.0),  # a change too small for three decimals
    ]
    at.run()
    assert not at.exception and not at.warning
    said = [c.value for c in at.caption]
    assert "a change of -0.00021;" in said[3]  # it read "-0.000", beside a share of it
    assert "a change of +1.500" in said[0] and "(under 0.1% of it)" in said[0]
    assert "a change of +0.000" in said[1] and "of it" not in said[1]
    assert (
        said[2] == "Explained: the logit, 3.000 for the input. Blue pushed the explained score up, red down."
    )
    at.session_state["cases"] = [("integrated_gradients", 2.0, 0.0, 0.3)]
    at.run()
    assert len(at.warning) == 1 and "15.0% of it" in at.caption[0].value


def test_an_input_past_the_heads_trained_length_is_said(monkeypatch):
    """The demo heads' encoder saw at most 42 pieces; a longer question and passage got no word of it here,
    while every other page warned."""
    from app import models

    passage = "Tom met Anna by the river at 9:15 and they sat on the bank until 11:45. " * 3
    at = _app(monkeypatch, models.DEMO_TASKS_DIR / "qa", a="When did Tom meet Anna?", b=passage)
    assert not at.exception
    said = " ".join(w.value for w in at.warning)
    assert "pre-trained on inputs of at most 42" in said
    at = _app(
        monkeypatch, models.DEMO_TASKS_DIR / "qa", a="When did Tom meet Anna?", b="Tom met Anna at noon."
    )
    assert "pre-trained on inputs" not in " ".join(w.value for w in at.warning)


def test_a_probability_short_of_certain_never_reads_100_percent():
    """The QA answer at 0.9989 was "probability 100%", beside a caption saying the head is often sure of a
    wrong span."""
    assert [ui.percent(p) for p in (0.42, 0.9989, 0.9995, 0.99996, 1.0, 0.004, 0.00001, 0.0)] == [
        "42%",
        "99.9%",
        ">99.9%",  # printed with one decimal it was "100.0%"
        ">99.9%",
        "100%",
        "0.4%",
        "<0.1%",
        "0%",
    ]


def test_task_tables_say_their_units_and_the_classifier_that_it_always_answers(
    heads, monkeypatch, figure_data
):
    """ "start 57" (characters) stood beside "answer start (token 24)"; the saliency CSV listed "the" three times
    with no position; the classifier gave "seal-closure 0.30" for "?!..." with no word that it must."""
    frames = figure_data
    at = _app(monkeypatch, heads["qa"], a="where was the cash?", b="we deposited the cash at the bank.")
    answers = [t for t in at.dataframe if "answer" in t.value.columns][0].value
    assert list(answers.columns)[:3] == ["answer", "start (character)", "end (character)"]
    saliency = frames["task_saliency"]
    assert list(saliency.columns) == ["position", "token", "attribution"]
    assert list(saliency["position"]) == list(range(len(saliency)))
    at = _app(monkeypatch, heads["classify"], a="?!...")
    assert any("It always gives one of its labels" in c.value for c in at.caption)
    # the entity CSV names its sentence as the chart's title does
    at = _app(monkeypatch, heads["tag"], a="we sat by the river bank", b="the water ran")
    for key, name in (("task_entities_a", "A"), ("task_entities_b", "B")):
        frame = frames[key]
        assert not frame.empty and set(frame["sentence"]) == {name}
    # never "within 0.0000 (under 0.1% of it)"
    assert not any("within 0.0000" in c.value for c in at.caption)


def test_a_passage_read_in_windows_is_said_to_be_read_whole(heads, monkeypatch):
    """A long QA passage was "cut off" by the page's warning, though the answer came from that end (window 5 of
    8), and its probabilities (softmaxes within each window) read as ranking the answers the other way round."""
    question = "where was the cash?"
    passage = "we sat by the river and watched the water . " * 12 + "we deposited the cash at the bank ."
    at = _app(monkeypatch, heads["qa"], a=question, b=passage)
    assert not at.exception and not at.get("error")
    assert not [w for w in at.warning if "cut off" in w.value]
    said = " ".join(c.value for c in at.caption).replace("\\", "")
    assert "read in overlapping windows" in said and "all of it is read" in said
    assert "can't be compared by it" in said
    table = [t for t in at.dataframe if "answer" in t.value.columns][0].value
    assert list(table.columns)[-1] == "probability (in its window)"
    # a passage cut before tokenising is not said to be read whole, and its chart ends in what was not read
    monkeypatch.setenv("BERTSCOPE_MAX_CHARS", "400")
    at = _app(monkeypatch, heads["qa"], a=question, b=passage + " the cash was gone ." * 10)
    said = " ".join(c.value for c in at.caption).replace("\\", "")
    assert "read in overlapping windows" in said and "all of it is read" not in said
    assert "all of its first 398 characters are read (the rest was cut off, as said above)" in said
    chips = json.dumps(figure(at, "task_answer"), ensure_ascii=False)
    assert charts.NOT_READ in chips and "… 365 more characters" in chips
    monkeypatch.delenv("BERTSCOPE_MAX_CHARS")
    short = _app(monkeypatch, heads["qa"], a=question, b="we deposited the cash at the bank by the river.")
    assert "overlapping windows" not in " ".join(c.value for c in short.caption)
    # one column name for every passage: a script reading the CSV found another on long ones
    columns = list([t for t in short.dataframe if "answer" in t.value.columns][0].value.columns)
    assert columns[-1] == "probability (in its window)"
    # a question too long for the model is an error, not a passage "read in overlapping windows"
    long_question = " ".join(["where was the cash"] * 40) + " ?"
    at = _app(monkeypatch, heads["qa"], a=long_question, b="we deposited the cash at the bank .")
    assert at.get("error") and "overlapping windows" not in " ".join(c.value for c in at.caption)


@pytest.mark.parametrize(("task", "name"), [("classify", "classification"), ("choice", "multiple-choice")])
def test_a_fine_tuned_pooler_is_said_to_be_trained_by_its_task(heads, monkeypatch, task, name):
    """BERT's classifier and multiple-choice heads read the pooled vector, so fine-tuning trains the pooler on:
    "it was trained only for next-sentence prediction" was false of every such checkpoint (@demo-senses)."""
    at = _app(monkeypatch, heads[task], "views/sentence_vector.py", a="we sat by the bank")
    said = " ".join(c.value for c in at.caption).replace("\\", "")
    assert (
        f"pre-trained for next-sentence prediction, it was then fine-tuned with this checkpoint's {name} head"
        in said
    )
    assert "trained only for" not in said and "weak sentence embedding" not in said


def test_a_taggers_entities_draw_the_cut_off_end_of_a_long_text_as_not_read(heads, monkeypatch):
    """Past the model's positions the head reads nothing, but the cut-off end was drawn as "other text", as
    if it had been read and held no entity."""
    from app import charts

    text = " ".join(["we sat by the river bank"] * 30)  # well past the tiny model's 64 pieces
    model = bert_core.load_pretrained(heads["tag"])
    enc = model.encode(text)
    assert enc.truncated
    read_to = max(int(end) for (_, end), s in zip(enc.offsets, enc.sequence_ids, strict=True) if s == 0)
    at = _app(monkeypatch, heads["tag"], a=text)
    traces = {t["name"]: t for t in figure(at, "task_entities_a")["data"]}
    unread = "".join(traces[charts.NOT_READ]["text"]).replace(" ", "")
    assert unread == text[read_to:].replace(" ", "")  # the end, and only the end
    assert traces[charts.NOT_READ]["marker"]["color"] != traces["other text"]["marker"]["color"]
    # a text the model reads whole has nothing not read
    short = _app(monkeypatch, heads["tag"], a="we sat by the river bank")
    assert charts.NOT_READ not in {t["name"] for t in figure(short, "task_entities_a")["data"]}


def test_a_windowed_passages_trained_length_warning_speaks_of_a_window(monkeypatch):
    """ "This input has 128 pieces" sat under "The question and passage are 200 pieces": the 128 is a window."""
    from app import models

    passage = " ".join(["Anna sold fish at the market by the river on Monday."] * 16)
    at = _app(monkeypatch, models.DEMO_TASKS_DIR / "qa", a="Who sold fish?", b=passage)
    warned = [w.value for w in at.warning if "pre-trained on inputs of at most" in w.value]
    assert warned and warned[0].startswith("A full window has 128 pieces"), warned
    assert any("read in overlapping windows" in c.value for c in at.caption)


def test_sentence_vector_names_a_task_models_head_where_it_has_no_pair_head(heads, monkeypatch):
    """A QA model was said to have "no sentence-pair head at all", though its head reads a question and a
    passage (on the Task page)."""
    at = _app(monkeypatch, heads["qa"], page="views/sentence_vector.py", a="who sat?", b="the cat sat.")
    said = " ".join([c.value for c in at.caption] + [i.value for i in at.info]).replace("\\", "")
    assert "fine-tuned question-answering one (on the Task page)" in said
    assert "it has a fine-tuned question-answering head instead (on the Task page)" in said
    assert "no sentence-pair head at all" not in said and "no head that reads a pair" not in said
