"""What a user set on a page survives a visit to another page (Streamlit drops the state of widgets a run
does not draw unless the app keeps it)."""

from __future__ import annotations

from app.registry import PAGES

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


def test_word_senses_sentences_survive_a_visit_to_another_page(make_app):
    at = make_app("views/word_senses.py", a=TEXT)
    mine = "the bank of the river | river\nthe bank lent money | money\nwe sat by the bank | river"
    at.text_area(key="senses_text").set_value(mine).run()
    at.text_input(key="senses_word").set_value("bank").run()
    at.slider(key="senses_layer").set_value(1).run()
    at.switch_page("views/attention.py").run()
    at.switch_page("views/word_senses.py").run()
    assert not at.exception
    assert at.text_area(key="senses_text").value == mine
    assert at.slider(key="senses_layer").value == 1


def test_other_pages_keep_their_choices(make_app):
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
    assert not at.exception


def test_a_kept_choice_that_no_longer_fits_falls_back(make_app):
    at = make_app("views/tokens.py", a="the unwanted dog")
    word = at.selectbox(key="tokens_word")
    word.set_value("dog").run()
    at.switch_page("views/attention.py").run()
    at.sidebar.text_area[0].set_value("a cat sat").run()  # 'dog' is gone from the text
    at.switch_page("views/tokens.py").run()
    assert not at.exception
    assert at.selectbox(key="tokens_word").value in ("a", "cat", "sat")


def bound_controls(block) -> dict[str, bool]:
    """The widgets under `block` bound to the link: key -> whether this run sent the browser their value."""
    found = {}
    for child in getattr(block, "children", {}).values():
        found.update(bound_controls(child))
    proto = getattr(block, "proto", None)
    if getattr(proto, "query_param_key", ""):
        found[proto.query_param_key] = proto.set_value
    return found


def test_every_page_control_sends_its_kept_value_again(make_app):
    """The browser can lose a page's control values (ui.bound: a page link clicked with Sentence A uncommitted
    redrew the controls at their defaults over a chart drawn with the kept choices). So on every run, a rerun
    that changed nothing included, each page control bound to the link carries its value to the browser; the
    sidebar's do not (they stay mounted, and Sentence A must never be written over while it is typed in)."""
    at = make_app("views/attention.py", a="the bank by the river", b="the money", layer="20")  # 20: rejected
    at.radio(key="att_view").set_value("Head view").run()
    at.toggle(key="att_all_heads").set_value(True).run()
    seen: dict[str, bool] = {}
    for spec in PAGES:
        at.switch_page(spec.file).run()
        at.run()
        seen.update(bound_controls(at.main))
        if spec.file == "views/inside.py":
            for view in ("qk", "value", "rollout", "roles", "ablation", "lens", "hidden", "pll"):
                at.radio(key="inside_view").set_value(view).run()
                at.run()
                seen.update(bound_controls(at.main))
        assert not at.exception, (spec.file, [e.value for e in at.exception])
        sidebar = bound_controls(at.sidebar)
        assert "a" in sidebar and not any(sidebar.values()), (spec.file, sidebar)
    assert len(seen) >= 30, sorted(seen)  # the pages' controls were reached, not just a few
    assert all(seen.values()), sorted(k for k, sent in seen.items() if not sent)
