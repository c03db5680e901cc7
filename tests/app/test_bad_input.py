"""Bad input gives an inline message (or a plain result), keeps the typed text, never raises."""

from __future__ import annotations

import pytest

PAGES = [
    "views/tokens.py",
    "views/attention.py",
    "views/embeddings.py",
    "views/masked_words.py",
    "views/word_senses.py",
    "views/sentence_vector.py",
]
TEXTS = {
    "control": "the\x00 cat\x07\x1b sat",
    "only_control": "\x00\x01\x02",
    "emoji": "the cat 🐈‍⬛ sat 👍🏽",
    "cjk": "银行 在 河边 the bank",
    "rtl": "the bank \u05d4\u05d1\u05e0\u05e7 \u0627\u0644\u0628\u0646\u0643 \u202e",
    "html": "<script>alert(1)</script> <img src=x onerror=alert(2)> the bank",
    "markdown": "**bold** [link](javascript:alert(1)) :red[x] $x^2$ the bank",
    "many_masks": " ".join(["[MASK]"] * 40),
    "very_long": "the bank of the river " * 700,
}

ECHOES = ("markdown", "caption", "info", "warning", "error", "success")  # the elements that render markdown


@pytest.mark.parametrize("name", list(TEXTS))
def test_bad_text_on_every_page(make_app, name):
    text = TEXTS[name]
    at = make_app(a=text)
    echoing = 0
    for page in PAGES:
        at.switch_page(page).run()
        if page == "views/word_senses.py":  # its own list of sentences: the bad text is one of them
            at.text_area(key="senses_text").set_value(f"the bank | x\n{text}\nmy bank | y").run()
        assert not at.exception, (page, [e.value for e in at.exception])
        assert at.text_area(key="a").value == text
        assert not any("Something went wrong" in e.value for e in at.error), (
            page,
            [e.value for e in at.error],
        )
        if name == "markdown":  # wherever the page echoes the text, its markup is shown, not applied
            shown = [str(e.value) for kind in ECHOES for e in at.get(kind)]
            echoed = [v for v in shown if "bold" in v]
            echoing += bool(echoed)
            for markup in ("**bold**", "[link](", ":red[x]", "$x^2$"):
                assert not any(markup in v for v in echoed), (page, markup, echoed)
    assert name != "markdown" or echoing  # the check above had text to look at


def test_very_long_text_is_cut_with_a_note(make_app):
    at = make_app(a=TEXTS["very_long"])
    notes = " ".join(w.value for w in at.warning)
    assert "only the first" in notes and "cut off" in notes


def test_only_control_characters_explained(make_app):
    at = make_app(a=TEXTS["only_control"])
    assert any("empty" in e.value for e in at.error)
