"""What a user set on a page survives a visit to another page (Streamlit drops the state of widgets a run
does not draw unless the app keeps it)."""

from __future__ import annotations

TEXT = "the bank by the river"


def test_attention_options_survive_a_visit_to_another_page(make_app):
    at = make_app("views/attention.py", a=TEXT, b="the money")
    at.toggle(key="att_hide_special").set_value(True).run()
    at.toggle(key="att_merge").set_value(True).run()
    at.radio(key="att_direction").set_value("A→B").run()
    at.switch_page("views/tokens.py").run()
    at.switch_page("views/attention.py").run()
    assert not at.exception
    assert at.toggle(key="att_hide_special").value is True
    assert at.toggle(key="att_merge").value is True
    assert at.radio(key="att_direction").value == "A→B"


def test_word_senses_sentences_survive_a_visit_to_another_page(make_app, state_api_warnings):
    at = make_app("views/word_senses.py", a=TEXT)
    mine = "the bank of the river | river\nthe bank lent money | money\nwe sat by the bank | river"
    at.text_area(key="senses_text").set_value(mine).run()
    at.text_input(key="senses_word").set_value("bank").run()
    at.slider(key="senses_layer").set_value(1).run()
    at.switch_page("views/attention.py").run()
    at.switch_page("views/word_senses.py").run()
    assert not at.exception and state_api_warnings == []
    assert at.text_area(key="senses_text").value == mine
    assert at.slider(key="senses_layer").value == 1


def test_other_pages_keep_their_choices(make_app, state_api_warnings):
    at = make_app("views/masked_words.py", a="the cat sat on the [MASK]")
    at.number_input(key="mask_topk").set_value(7).run()
    at.switch_page("views/sentence_vector.py").run()
    mine = "a first line\na second line"
    at.text_area(key="sv_sentences").set_value(mine).run()
    at.switch_page("views/embeddings.py").run()
    at.slider(key="emb_positions").set_value(10).run()
    at.switch_page("views/tokens.py").run()
    at.switch_page("views/masked_words.py").run()
    assert at.number_input(key="mask_topk").value == 7
    at.switch_page("views/sentence_vector.py").run()
    assert at.text_area(key="sv_sentences").value == mine
    at.switch_page("views/embeddings.py").run()
    assert at.slider(key="emb_positions").value == 10
    assert not at.exception and state_api_warnings == []


def test_a_kept_choice_that_no_longer_fits_falls_back(make_app):
    at = make_app("views/tokens.py", a="the unwanted dog")
    word = at.selectbox(key="tokens_word")
    word.set_value("dog").run()
    at.switch_page("views/attention.py").run()
    at.sidebar.text_area[0].set_value("a cat sat").run()  # 'dog' is gone from the text
    at.switch_page("views/tokens.py").run()
    assert not at.exception
    assert at.selectbox(key="tokens_word").value in ("a", "cat", "sat")


def test_no_widget_gets_its_value_twice(make_app, state_api_warnings):
    """Seeding a widget through session state and also giving it value= makes Streamlit warn; none may."""
    at = make_app("views/attention.py", a="the bank by the river", layer="20")  # a layer the slider rejects
    at.selectbox(key="example").set_value(at.selectbox(key="example").options[0]).run()
    for page in ("views/tokens.py", "views/masked_words.py", "views/word_senses.py", "views/embeddings.py"):
        at.switch_page(page).run()
        at.switch_page("views/attention.py").run()
    assert not at.exception
    assert state_api_warnings == []
