"""The sidebar's ready-made examples."""

from __future__ import annotations

import pytest

from app import inputs


def test_parse_examples_skips_comments_and_incomplete_lines():
    text = "# a comment\n\nRiver | the bank of the river |\nPair | a | b\nno sentence |\n | no label\nBare line\n"
    assert inputs.parse_examples(text) == [
        inputs.Example("River", "the bank of the river", ""),
        inputs.Example("Pair", "a", "b"),
    ]
    assert inputs.parse_examples("QA | q | p | @demo-qa\nOne | a | | @demo") == [
        inputs.Example("QA", "q", "p", "@demo-qa"),
        inputs.Example("One", "a", "", "@demo"),
    ]


def test_the_shipped_examples_parse():
    found = inputs.examples()
    assert len(found) >= 6
    assert any("[MASK]" in e.text_a for e in found) and any(e.text_b for e in found)


def test_choosing_an_example_fills_both_sentences_and_keeps_them(make_app):
    at = make_app("views/attention.py", a="my own sentence")
    pair = next(e for e in inputs.examples() if e.text_b)
    at.selectbox(key="example").set_value(pair.label).run()
    assert not at.exception and not at.error
    assert at.text_area(key="a").value == pair.text_a and at.text_area(key="b").value == pair.text_b
    assert at.query_params["a"] in (pair.text_a, [pair.text_a])  # the link follows
    assert at.selectbox(key="example").value is None  # ready for the next one
    single = next(e for e in inputs.examples() if not e.text_b)
    at.selectbox(key="example").set_value(single.label).run()
    assert at.text_area(key="a").value == single.text_a and at.text_area(key="b").value == ""
    at.switch_page("views/tokens.py").run()
    assert at.text_area(key="a").value == single.text_a


def test_an_example_for_a_model_loads_it(make_app):
    """'Ask a passage a question (Task page, @demo-qa)' filled the sentences and left the demo model, whose
    Task page said it had no task head."""
    from app import models

    at = make_app("views/task.py")
    qa = next(e for e in inputs.examples() if e.model)
    assert qa.model == "@demo-qa" and qa.model in qa.label
    at.selectbox(key="example").set_value(qa.label).run()
    assert not at.exception and at.session_state[models.KEY_HOLD].active.source == "@demo-qa"
    assert "Monday" in " ".join(str(t.value) for t in at.get("metric"))  # the page answers the question


def test_prepare_lines_keeps_the_first_lines_and_cuts_long_ones():
    lines = [f"line {n}" for n in range(inputs.MAX_LINES + 2)]
    lines[1] = "x" * (inputs.MAX_LINE_CHARS + 5)
    used, notes = inputs.prepare_lines(lines)
    assert len(used) == inputs.MAX_LINES and used[0] == "line 0" and len(used[1]) == inputs.MAX_LINE_CHARS
    assert f"only the first {inputs.MAX_LINES}" in notes[0] and "sentence 2 is cut" in notes[1]
    assert inputs.prepare_lines(["a", "b"]) == (["a", "b"], [])


def test_a_long_sentence_is_cut_at_a_words_end_and_the_note_names_the_servers_limit(monkeypatch):
    """A shared server's --max-chars 80 cut "…deposit th", blamed the models' 512 pieces, and a [MASK] past the
    cut went without a word (Compare then said to type one)."""
    monkeypatch.setenv(inputs.ENV_MAX_CHARS, "80")
    typed = (
        "We walked along the river all morning and then went into town to deposit the cheque at the [MASK]."
    )
    assert typed[:80].endswith("the che")
    text, (note,) = inputs.prepare_text(typed, "Sentence A")
    assert text == typed[: typed.rindex(" ", 0, 80)] and text.endswith("deposit the")
    assert f"only the first {len(text)} are analysed (this server's limit of 80 characters)." in note
    assert note.endswith("A mask typed after that point is not read.")
    # A word longer than the last 40 characters is cut where the limit falls; a cut at a space needs no move.
    text, _ = inputs.prepare_text("a " + "x" * 100, "Sentence A")
    assert len(text) == 80
    text, (note,) = inputs.prepare_text("y" * 80 + " tail", "Sentence A")
    assert text == "y" * 80 and "mask" not in note
    monkeypatch.delenv(inputs.ENV_MAX_CHARS)
    text, (note,) = inputs.prepare_text("word " * 1001, "Sentence A")
    assert (
        len(text) == inputs.MAX_CHARS - 1
        and "(the app's limit of 5,000 characters a sentence, about twice what a model reads at once)" in note
    )


def test_a_shared_servers_max_chars_also_cuts_the_lines_of_a_list(monkeypatch):
    # Word senses, Sentence vector and sentence scores run a pass per line (pseudo-likelihood one per piece):
    # a lecturer's --max-chars 100 must hold there too, not only for sentence A.
    monkeypatch.setenv(inputs.ENV_MAX_CHARS, "100")
    used, notes = inputs.prepare_lines(["x" * 5000, "short"])
    assert [len(line) for line in used] == [100, 5] and "first 100 characters" in notes[0]
    monkeypatch.setenv(inputs.ENV_MAX_CHARS, "50000")  # never more than a list's own limit
    assert len(inputs.prepare_lines(["x" * 5000])[0][0]) == inputs.MAX_LINE_CHARS


def test_a_typed_mask_is_written_as_the_models_own():
    typed = inputs.Inputs("the [MASK] of the river", "a [MASK] b", ("a note",))
    assert inputs.with_mask_token(typed, "[MASK]") is typed
    assert inputs.with_mask_token(typed, None) is typed
    assert inputs.with_mask_token(typed, "<mask>") == inputs.Inputs(
        "the <mask> of the river", "a <mask> b", ("a note",)
    )
    assert inputs.with_mask_token(inputs.Inputs("no mask", None), "<mask>").text_b is None
    # what was cut off B stays counted whatever the mask is rewritten to (the Task page draws it as not read)
    cut = inputs.Inputs("a [MASK]", "b [MASK]", cut_b=7)
    assert inputs.with_mask_token(cut, "[MASK_OF_ANOTHER_LENGTH]").cut_b == 7
    # RoBERTa's spelling, typed for a model of another family, is that model's mask too
    roberta_typed = inputs.Inputs("the <mask> of the river", None)
    assert inputs.with_mask_token(roberta_typed, "[MASK]") == inputs.Inputs("the [MASK] of the river", None)
    assert inputs.with_mask_token(roberta_typed, "<mask>") is roberta_typed
    assert inputs.other_mask_spellings(roberta_typed, "[MASK]") == ["<mask>"]
    assert inputs.other_mask_spellings(typed, "<mask>") == ["[MASK]"]
    assert inputs.other_mask_spellings(typed, "[MASK]") == []


def test_share_link_names_every_given_parameter():
    link = inputs.share_link(
        "http://host:8501/compare?old=1#x", {"model": "@demo", "model2": "a b/c", "b": "", "layer": None}
    )
    assert link == "http://host:8501/compare?model=%40demo&model2=a+b%2Fc"
    assert inputs.share_link(None, {"a": "[MASK] (x)"}) == "?a=%5BMASK%5D+%28x%29"


def test_the_question_preset_is_answered_by_the_bundled_qa_head():
    """The Task page had no question among the examples, and a lecturer's own ("Who did Anna meet at the
    bank?", outside the grammar the demo head was trained on) got "on Monday". The preset's answer is right."""
    import bert_core
    from app import models

    preset = next(e for e in inputs.examples() if "@demo-qa" in e.label)
    answer = bert_core.load_pretrained(models.DEMO_TASKS_DIR / "qa").answer(preset.text_a, preset.text_b)[0]
    assert answer[0].lower() == "on monday" and answer[4] > 0.5


@pytest.mark.parametrize("link", [{}, {"model": "@demo"}])
def test_an_example_for_any_model_after_one_for_its_own_goes_back_to_the_model_before(make_app, link):
    """'Guess a hidden word' after the QA example stayed on @demo-qa, which has no masked-word head."""
    from app import models

    at = make_app("views/masked_words.py", **link)
    before = at.session_state[models.KEY_HOLD].active.source
    qa = next(e for e in inputs.examples() if e.model)
    hidden = next(e for e in inputs.examples() if "[MASK]" in e.text_a and not e.model)
    at.selectbox(key="example").set_value(qa.label).run()
    assert at.session_state[models.KEY_HOLD].active.source == "@demo-qa"
    at.selectbox(key="example").set_value(hidden.label).run()
    assert not at.exception and at.session_state[models.KEY_HOLD].active.source == before
    assert not at.get("error") and not [i for i in at.info if "head" in i.value]
    # a model picked after the example's is the user's: kept
    at.selectbox(key="example").set_value(qa.label).run()
    at.selectbox(key="model").set_value("@demo-senses").run()
    at.selectbox(key="example").set_value(hidden.label).run()
    assert at.session_state[models.KEY_HOLD].active.source == "@demo-senses"


def test_sentence_b_says_it_is_the_passage_for_a_qa_model_and_keeps_what_was_typed(make_app):
    """Sentence B read "(optional)" while the Task page asked for the QA model's passage there."""
    at = make_app("views/task.py", model="@demo", b="We sat by the river on Monday.")
    box = at.sidebar.text_area(key=inputs.KEY_TEXT_B)
    assert box.label == "Sentence B (optional)"
    at.selectbox(key="model").set_value("@demo-qa").run()
    box = at.sidebar.text_area(key=inputs.KEY_TEXT_B)
    assert box.label == "Sentence B: the passage this QA model answers from"
    assert box.value == "We sat by the river on Monday."  # the label changed, the text stayed
    assert not at.exception


def test_every_number_box_bound_to_the_link_is_one_the_entry_checks_for_infinity():
    """A link holding `inf` in a number box's parameter lost the page (Streamlit makes an int of what the address
    held): the entry reopens it without that parameter, for the boxes inputs.NUMBER_KEYS lists by hand."""
    import ast
    from pathlib import Path

    bound = set()
    for path in (Path(inputs.__file__).parent / "views").glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {
            t.id: node.value.value
            for node in tree.body
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
            for t in node.targets
            if isinstance(t, ast.Name)
        }
        for call in ast.walk(tree):
            if not (isinstance(call, ast.Call) and getattr(call.func, "attr", None) == "number_input"):
                continue
            for kw in call.keywords:  # **ui.bound(KEY): the box takes its value from the link
                if (
                    kw.arg is None
                    and isinstance(kw.value, ast.Call)
                    and getattr(kw.value.func, "attr", "") == "bound"
                ):
                    key = kw.value.args[0]
                    bound.add(key.value if isinstance(key, ast.Constant) else names[key.id])
    assert len(bound) >= 2 and bound <= set(inputs.NUMBER_KEYS), bound
