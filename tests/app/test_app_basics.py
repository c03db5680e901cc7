"""The entry, the sidebar and the Tokens page, on the tiny checkpoint."""

from __future__ import annotations

import subprocess
import sys

import pytest

import bert_core
from tests.app.conftest import decode, figure, table_with


def test_tokens_page_shows_pieces_and_ids(make_app, tiny_checkpoint):
    at = make_app(a="the bank river money")
    assert not at.error
    model = bert_core.load_pretrained(tiny_checkpoint)
    expected = model.analyze("the bank river money")
    spec = figure(at, "tokens_chips")
    shown = [t for trace in spec["data"] for t in trace["text"]]
    order = [int(i) for trace in spec["data"] for i in decode(trace["customdata"])]
    assert [shown[order.index(i)] for i in range(len(order))] == expected.tokens
    table = table_with(at, "piece")
    assert table["piece"].tolist() == expected.tokens
    assert table["id"].tolist() == expected.input_ids.tolist()
    assert table["segment"].tolist() == expected.token_type_ids.tolist()
    assert at.session_state["forward_passes"] == 1


def test_typed_special_tokens_are_said_to_be_read_as_specials(make_app):
    """A typed [SEP] ends a segment in the model's eyes, and a typed [UNK] is no word the vocabulary failed."""
    at = make_app(a="the bank [SEP] river [UNK] money")
    assert not at.exception
    said = [c.value.replace("\\", "") for c in at.caption if c.value.startswith("Typed")]
    assert len(said) == 1 and said[0].startswith(
        "Typed [SEP], [UNK]: the tokenizer reads each as the special"
    )
    assert not [w for w in at.warning if "could not be spelt" in w.value]
    assert [m.value for m in at.metric if m.label.replace("\\", "") == "[UNK]"] == ["1"]
    plain = make_app(a="the bank river money")
    assert not [c for c in plain.caption if c.value.startswith("Typed")]
    unspelt = make_app(a="the bank 😀 river")  # a word the vocabulary cannot spell is no typed [UNK]
    assert not [c for c in unspelt.caption if c.value.startswith("Typed")]
    assert [w for w in unspelt.warning if "could not be spelt" in w.value]


def test_typographic_marks_read_as_ascii_are_said(make_app, monkeypatch):
    """The demo model's tokenizer reads "’" as "'": the chips show "'", so the page says why."""
    from app import models

    typed = "She can\u2019t find the \u201cbank\u201d."
    tiny = make_app(a=typed)  # a vocabulary from elsewhere keeps the marks (here: unspelt)
    assert not [c for c in tiny.caption if "This tokenizer reads" in c.value]
    monkeypatch.setenv("BERTSCOPE_MODEL", str(models.DEMO_MODEL_DIR))
    at = make_app(a=typed)
    said = [c.value.replace("\\", "") for c in at.caption if "This tokenizer reads" in c.value]
    assert said == [
        "This tokenizer reads \u2019 as ', \u201c \u201d as \": its vocabulary was trained on text without "
        "them, and has the plain marks."
    ]
    table = table_with(at, "piece")
    assert "[UNK]" not in table["piece"].tolist()
    apostrophe = table[table["piece"] == "'"]
    assert apostrophe["typed text"].tolist() == ["\u2019"]  # offsets point at what was typed
    assert not [c for c in make_app(a="She can't find it.").caption if "This tokenizer reads" in c.value]


def test_a_word_too_long_for_wordpiece_is_said_to_be_so(make_app, monkeypatch):
    """WordPiece reads a word of more than 100 characters as [UNK] without trying it: not a vocabulary gap.
    And a typed mark the tokenizer reads as several words ("…" as "...") is not offered for splitting."""
    from app import models

    monkeypatch.setenv("BERTSCOPE_MODEL", str(models.DEMO_MODEL_DIR))
    at = make_app(a="the " + "bank" * 26 + " river\u2026 " + "bank" * 25)
    warned = [w.value.replace("\\", "") for w in at.warning if "could not be spelt" in w.value]
    assert len(warned) == 1 and "it is longer than 100 characters" in warned[0]
    words = at.selectbox(key="tokens_word").options
    assert "bank" * 26 in words and "\u2026" not in words and "river" in words
    at.selectbox(key="tokens_word").set_value("bank" * 26).run()
    assert any("more than 100 characters as one [UNK]" in c.value.replace("\\", "") for c in at.caption)
    at.selectbox(key="tokens_word").set_value("bank" * 25).run()  # 100 characters: split as usual
    assert not any("more than 100 characters" in c.value for c in at.caption)
    assert table_with(at, "matched")["matched"].tolist()[0] == "bank"


def test_invisible_characters_the_tokenizer_removes_are_said(make_app):
    at = make_app(a="the bank\u200briver and the\u00adcat")
    said = [c.value.replace("\\", "") for c in at.caption if "invisible" in c.value]
    assert said == [
        "The tokenizer removed 2 invisible characters (U+00AD SOFT HYPHEN, U+200B ZERO WIDTH SPACE) before "
        "splitting words: the text on either side of one is read as if typed together."
    ]
    assert not [c for c in make_app(a="the bank river").caption if "invisible" in c.value]


def test_marks_an_uncased_tokenizer_strips_are_said(make_app, tmp_path, monkeypatch):
    """An uncased model read a Thai sentence as bare consonants, its vowel signs and tone marks gone, and "café"
    as "cafe", with nothing on screen to say so; a cased one keeps them and says nothing."""
    from tests.conftest import make_checkpoint

    thai = "\u0e40\u0e14\u0e47\u0e01"  # เด็ก: a vowel sign above the consonant
    at = make_app(a=f"the cafe\u0301 and the café {thai}")  # an accent typed decomposed, one composed
    said = [c.value.replace("\\", "") for c in at.caption if "sit on a letter" in c.value]
    assert len(said) == 1 and said[0].startswith("The tokenizer removed 3 marks that sit on a letter"), said
    one = [c.value for c in make_app(a="the café").caption if "on a letter" in c.value]
    assert len(one) == 1 and "removed 1 mark that sits on a letter" in one[0]
    # an emoji's presentation selector is a mark to Unicode but sits on no letter: said as the invisible one it is
    heart = make_app(a="I love it \u2764\ufe0f")
    assert not [c for c in heart.caption if "on a letter" in c.value]
    assert any("U+FE0F VARIATION SELECTOR-16" in c.value.replace("\\", "") for c in heart.caption)
    cased = make_checkpoint(tmp_path / "cased", "mlm")
    (cased / "tokenizer_config.json").write_text('{"do_lower_case": false}')
    assert not bert_core.load_pretrained(cased).tokenizer.normalize("café").isascii()
    at = make_app(model=str(cased), a=f"the café {thai}")
    assert not [c for c in at.caption if "sit on a letter" in c.value]


def test_sidebar_shows_model_size_and_heads(make_app):
    at = make_app()
    captions = " ".join(c.value for c in at.sidebar.caption)
    assert "2 layers" in captions and "hidden 32" in captions and "4 heads" in captions
    assert "MLM ✓" in captions and "NSP ✓" in captions and "pooler ✓" in captions


def test_wordpiece_steps_for_a_chosen_word(make_app, tiny_model):
    at = make_app(a="the dogs ran")
    at.selectbox(key="tokens_word").set_value("dogs").run()
    steps = table_with(at, "matched")
    assert steps["matched"].tolist()[-1] == "##s"
    assert steps["candidates tried (longest first)"].tolist()[0].startswith("dogs")
    assert any(c.value.startswith("Normalised (as the model sees it): dogs") for c in at.caption)
    # A typed special token is taken whole before WordPiece runs: it has no split to show, so it is not
    # offered (as the longest word it was the default, its table read as a greedy match of "[MASK]").
    at = make_app(a="the [MASK] ran [SEP] off")
    assert at.selectbox(key="tokens_word").options == ["the", "ran", "off"]
    split = {w: len(tiny_model.tokenizer.wordpiece_steps(w)) > 1 for w in ("the", "ran", "off")}
    assert split == {"the": False, "ran": True, "off": True}  # the tiny vocabulary's facts this relies on
    assert at.selectbox(key="tokens_word").value == "ran"  # the first of the longest words that split


def test_the_word_to_split_follows_a_new_text_unless_one_was_picked(make_app, tiny_model):
    at = make_app(a="the dogs ran")
    assert at.selectbox(key="tokens_word").value == "dogs"  # the longest
    # a word split into pieces before a longer word that is one piece: its table shows a split
    assert [len(tiny_model.tokenizer.wordpiece_steps(w)) for w in ("river", "dogs")] == [1, 2]
    at = make_app(a="the river dogs")
    assert at.selectbox(key="tokens_word").value == "dogs"
    at = make_app(a="the dogs ran")
    at.text_area(key="a").set_value("the dogs ran to the riverbank").run()
    assert at.selectbox(key="tokens_word").value == "riverbank"  # not left on the old text's longest word
    at.selectbox(key="tokens_word").set_value("ran").run()
    at.text_area(key="a").set_value("the dogs ran to the unbelievable riverbank").run()
    assert at.selectbox(key="tokens_word").value == "ran"  # a word picked is kept
    # ... even once it is the longest word: it was picked, not left at the default
    at = make_app(a="elephant cat mouse")
    at.selectbox(key="tokens_word").set_value("mouse").run()
    at.text_area(key="a").set_value("cat mouse").run()
    at.text_area(key="a").set_value("cat mouse giraffes").run()
    assert at.selectbox(key="tokens_word").value == "mouse"
    # a pick the new text lacks starts over, and the choice follows the default again
    at.text_area(key="a").set_value("the dogs ran").run()
    assert at.selectbox(key="tokens_word").value == "dogs"
    at.text_area(key="a").set_value("the dogs ran to the riverbank").run()
    assert at.selectbox(key="tokens_word").value == "riverbank"


def test_empty_text_gives_inline_message_and_keeps_text(make_app):
    at = make_app()
    at.text_area(key="a").set_value("   \n  ").run()
    assert not at.exception
    assert any("Type a sentence" in i.value for i in at.info)
    assert at.text_area(key="a").value == "   \n  "


def test_broken_model_directory_is_explained_not_raised(make_app, tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{not json")
    at = make_app(model=str(broken))
    assert not at.exception
    assert any("can't be loaded" in e.value for e in at.sidebar.error)
    assert any(b.label.startswith("Use ") for b in at.sidebar.button)  # offers a model that loads
    offered = [b.label.replace("\\", "") for b in at.sidebar.button if b.label.startswith("Use ")]
    assert offered[0] == "Use @demo" and "Use @demo-qa" in offered  # each bundled model (labels are escaped)
    assert any("No model is loaded" in i.value for i in at.info)
    next(b for b in at.sidebar.button if b.label.startswith("Use ")).click().run()
    assert not at.sidebar.error
    assert table_with(at, "piece")["piece"].tolist()[0] == "[CLS]"


def test_missing_directory_is_explained(make_app, tmp_path, tiny_checkpoint, monkeypatch):
    at = make_app(model=str(tmp_path / "nope"))
    assert not at.exception
    assert any("no such directory" in e.value.replace("\\", "") for e in at.sidebar.error)
    offered = [b.label.replace("\\", "") for b in at.sidebar.button if b.label.startswith("Use ")]
    assert f"Use {tiny_checkpoint}" in offered  # the server's own --model
    # ... unless it is the bundled demo model, offered by its name already
    from app import models

    monkeypatch.setenv("BERTSCOPE_MODEL", str(models.DEMO_MODEL_DIR) + "/")
    at = make_app(model=str(tmp_path / "nope"))
    offered = [b.label.replace("\\", "") for b in at.sidebar.button if b.label.startswith("Use ")]
    assert "Use @demo" in offered and not [o for o in offered if "demo-model" in o]


def test_a_link_reproduces_text_and_pair(make_app):
    # Bound widgets write the URL from the browser; here the other direction: the URL seeds the widgets.
    at = make_app(a="the cat sat", b="on the bank")
    assert at.text_area(key="a").value == "the cat sat"
    assert at.text_area(key="b").value == "on the bank"
    table = table_with(at, "piece")
    assert table["segment"].tolist().count(1) == len([t for t in table["sentence"] if t == "B"]) + 1


def test_default_hub_model_falls_back_to_the_demo_model(app_env, monkeypatch, tmp_path):
    from streamlit.testing.v1 import AppTest

    from app import bundled, models
    from tests.app.conftest import APP, TIMEOUT

    monkeypatch.delenv("BERTSCOPE_MODEL")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))  # bert-base-uncased is not cached
    monkeypatch.setattr(models, "DEMO_MODEL_DIR", app_env)  # the tiny checkpoint plays the demo model
    monkeypatch.setattr(bundled, "DEMO_MODEL_DIR", app_env)  # where source_path reads @demo
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT).run()
    assert not at.exception
    assert at.sidebar.selectbox(key="model").value == "bert-base-uncased"
    notice = " ".join(w.value for w in at.sidebar.warning).replace("\\", "")
    assert "bert-base-uncased can't be loaded" in notice and "demo model" in notice
    # its reason folded under it: in full, the note took Sentence A off a 1024 x 768 sidebar
    assert len(notice) < 160 and "hub" not in notice
    why = " ".join(c.value for e in at.sidebar.expander if e.label == "Why" for c in e.caption).replace(
        "\\", ""
    )
    # why it cannot be had: the hub out of reach, or downloads switched off (CI sets HF_HUB_OFFLINE=1)
    assert why.startswith("Cannot load 'bert-base-uncased'") and (
        "the model hub cannot be reached" in why or "downloads are switched off (HF_HUB_OFFLINE)" in why
    )
    assert "bundled demo model" in " ".join(c.value for c in at.sidebar.caption)
    assert table_with(at, "piece")["piece"].tolist()[0] == "[CLS]"


def test_unknown_and_special_pieces_are_marked(make_app):
    at = make_app(a="the € bank", b="the river")
    traces = {t["name"]: t["text"] for t in figure(at, "tokens_chips")["data"]}
    assert traces["[UNK]"] == ["[UNK]"]
    assert traces["special"] == ["[CLS]", "[SEP]", "[SEP]"]
    assert any("[UNK]" in w.value.replace("\\", "") for w in at.warning)  # Markdown-escaped on the page
    table = table_with(at, "piece")
    unk = table[table["piece"] == "[UNK]"].iloc[0]
    assert unk["typed text"] == "€" and (unk["start"], unk["end"]) == (4, 5)


def test_the_sidebar_puts_the_sentences_above_the_model(make_app):
    """Under the model's card, Sentence A sat below a 1024 x 768 projector's sidebar."""

    def walk(node):
        yield node
        for child in getattr(node, "children", {}).values():
            yield from walk(child)

    at = make_app()
    keys = [getattr(node, "key", None) for node in walk(at.sidebar)]
    assert keys.index("a") < keys.index("b") < keys.index("model") < keys.index("large")
    assert "[CLS] A [SEP] B [SEP]" in at.sidebar.text_area(key="b").help.replace(
        "\\", ""
    )  # the model's pairs


def test_the_bundled_demo_model_is_what_the_fallback_loads(app_env, monkeypatch, tmp_path):
    """No substitute this time: the real assets/demo-model, as a machine with no network would see it."""
    from streamlit.testing.v1 import AppTest

    from app import models
    from tests.app.conftest import APP, TIMEOUT

    monkeypatch.delenv("BERTSCOPE_MODEL")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    assert (models.DEMO_MODEL_DIR / "model.safetensors").is_file()
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.query_params["a"] = "we sat on the bank of the river ."
    at.run()
    assert not at.exception
    assert "bundled demo model" in " ".join(c.value for c in at.sidebar.caption)
    sidebar_text = " ".join(str(c.value) for c in at.sidebar.caption) + " ".join(
        str(m.value) for m in at.sidebar.markdown
    )
    assert "4 layers" in sidebar_text and "hidden 192" in sidebar_text
    pieces = table_with(at, "piece")["piece"].tolist()
    assert pieces[:4] == ["[CLS]", "we", "sat", "on"] and "bank" in pieces and "[UNK]" not in pieces


def test_large_text_also_enlarges_the_page_text_with_a_fixed_stylesheet(make_app):
    from app import ui

    at = make_app("views/tokens.py", a="the bank")
    assert [h.proto.body for h in at.get("html")] == [ui._STILL_PLACEHOLDERS_CSS]
    at = make_app("views/tokens.py", a="<b>the bank</b>", large="true")
    styles = [h.proto.body for h in at.get("html")]
    # The fixed sheets only: no user text goes into HTML.
    assert styles == [ui._STILL_PLACEHOLDERS_CSS, ui._LARGE_TEXT_CSS]


def test_the_app_never_imports_torch_itself():
    """Pages work on the core's numpy results; torch stays behind bert_core's API."""
    import ast
    from pathlib import Path

    app_dir = Path(__file__).resolve().parents[2] / "app"
    for path in app_dir.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            assert not any(n.split(".")[0] == "torch" for n in names), f"{path.name} imports torch"
    # ...nor through the core: its modules import without torch, which the first model load brings in.
    modules = sorted(
        f"app.{p.stem}" for p in app_dir.glob("*.py") if p.stem not in ("__init__", "streamlit_app")
    )
    code = f"import sys\nfor m in {modules!r}: __import__(m)\nprint('torch' in sys.modules)"
    assert len(modules) > 8
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert shown.strip() == "False", modules


def test_large_text_shows_a_short_table_as_text_a_stylesheet_can_enlarge(make_app):
    """st.dataframe draws its cells on a canvas; in Large text a short table is an st.table, same cells."""
    normal = make_app("views/tokens.py", a="the bank of the river")
    large = make_app("views/tokens.py", a="the bank of the river", large="true")
    assert len(normal.dataframe) == 2 and not normal.table
    assert not large.dataframe and len(large.table) == 2
    shown, plain = large.table[0].value.reset_index(drop=True), normal.dataframe[0].value
    assert len(shown) == len(plain) and shown["id"].tolist() == plain["id"].tolist()
    # what a reader looks for first, first; and without a sentence B, Large text leaves out the two columns
    # that then say nothing (the table ran past a 1024 px page)
    assert list(plain.columns[:4]) == ["index", "piece", "typed text", "kind"]
    assert [c for c in plain.columns if c not in shown.columns] == ["segment", "sentence"]
    pair = make_app("views/tokens.py", a="the bank", b="the river", large="true").table[0].value
    assert {"segment", "sentence"} <= set(pair.columns)
    # st.table renders cells and headers as Markdown: text reaches it escaped, so it shows as written
    marked = make_app("views/tokens.py", a="the **bank** #river", large="true").table[0].value
    typed = marked["typed text"].tolist()
    assert r"\*" in typed and r"\#" in typed and r"\[CLS\]" in marked["piece"].tolist()
    # WordPiece shows its pieces as written: no second column repeating them
    assert "shown as" not in marked.columns and "shown as" not in plain.columns


def test_core_messages_shown_as_sentences_end_with_a_full_stop():
    from app import ui

    def shown(*args, **kwargs) -> str:
        return ui.user_message(*args, **kwargs).replace("\\", "")  # without Markdown's escapes

    assert shown("text_pair is empty") == "Sentence B is empty."
    assert shown("text is empty", text_name="it", sentence=False) == "it is empty"
    assert shown("Done!") == "Done!"
    # not after a path or a quoted name, where a copied dot would become part of it
    assert shown("no such directory /models/x").endswith("/models/x")
    assert shown("unknown model 'x'").endswith("'x'")
    # a sentence of its own starts with a capital ("no [MASK] in the text" read as a fragment); a name does not
    assert shown("no [MASK] in the text").startswith("No [MASK]")
    assert shown("vocab_size must be more than 5") == "vocab_size must be more than 5."
    assert shown("lowercase must be true or false") == "lowercase must be true or false."
    assert shown("models/x is a file").startswith("models/x")
    assert shown("no [MASK] in the text", sentence=False).startswith("no [MASK]")


def test_a_vocabulary_much_smaller_than_the_word_table_is_said(make_app, tmp_path, monkeypatch):
    """A vocab.txt of another model loaded without a word, and its guesses came back as "[id N: ...]"."""
    from tests.conftest import TINY_VOCAB, make_checkpoint

    odd = make_checkpoint(tmp_path / "odd", "mlm", vocab_size=len(TINY_VOCAB) + 500)
    at = make_app(model=str(odd))
    said = [w.value for w in at.sidebar.warning if "word table" in w.value]
    assert said == [
        f"This model's word table has {len(TINY_VOCAB) + 500:,} rows but its vocabulary only {len(TINY_VOCAB):,} "
        "pieces: the vocabulary may belong to another model. Guesses of the rows past it are named by their id."
    ]
    padded = make_checkpoint(tmp_path / "padded", "mlm", vocab_size=len(TINY_VOCAB) + 6)  # padded, as 30528
    at = make_app(model=str(padded))
    assert not [w for w in at.sidebar.warning if "word table" in w.value]
    assert not at.exception


def test_a_large_text_table_writes_a_tiny_probability_as_a_number_not_zero():
    """st.table writes four decimals: Pre-training's P(original) of 0.000004 read "0.0000" beside a loss of
    12.3, where st.dataframe (normal text) showed it."""
    from streamlit.testing.v1 import AppTest

    def script():
        import pandas as pd
        import streamlit as st

        from app import ui

        st.session_state[ui.KEY_LARGE] = True
        ui.table(pd.DataFrame({"p": [0.9796, 4.2e-06, 0.0], "loss": [0.02, 12.32, 1.0]}))

    at = AppTest.from_function(script, default_timeout=30).run()
    assert not at.exception, [e.value for e in at.exception]
    shown = at.table[0].value
    assert shown["p"].tolist() == ["0.9796", "0.0000042", "0.0000"]
    assert shown["loss"].tolist() == [0.02, 12.32, 1.0]  # a column with nothing to lose stays numbers


@pytest.mark.parametrize(
    ("page", "key", "name", "label", "query"),
    [
        ("views/word_senses.py", "senses_occurrence", "last", "the last", {}),
        ("views/embeddings.py", "emb_component", "position", "position embedding", {}),
        ("views/sentence_vector.py", "sv_kind", "mean", "mean of the pieces, last layer", {}),
        (
            "views/inside.py",
            "pll_scoring",
            "word_l2r",
            "with the later pieces of its word",
            {"inside_view": "pll"},
        ),
        (
            "views/task.py",
            "task_method",
            "gradient_x_input",
            "gradient × input",
            {"model": "@demo-qa", "a": "Who sat?", "b": "Anna sat by the river."},
        ),
        (
            "views/task.py",
            "task_qa_end",
            "end",
            "the answer's end",
            {"model": "@demo-qa", "a": "Who sat?", "b": "Anna sat by the river."},
        ),
    ],
)
def test_a_link_may_name_a_radios_option_by_its_own_name(make_app, page, key, name, label, query):
    """A link holds the label shown; one naming the option itself ("senses_occurrence=last") opened the
    default without a word, as "inside_view=lens" once did."""
    at = make_app(page, **query, **{key: name})
    assert not at.exception, [e.value for e in at.exception]
    assert at.radio(key=key).value == name
    assert at.query_params[key] in (label, [label])  # written as the page's own links write it


def test_a_label_is_escaped_only_where_markdown_would_read_it():
    """Streamlit gives a screen reader the label as written: "Continuations \\(\\#\\#\\)" was what it said."""
    from app import ui

    assert ui.widget_label("Continuations (##)") == "Continuations (##)"
    assert ui.widget_label("Layer of runs/a-b.c/checkpoint-500") == "Layer of runs/a-b.c/checkpoint-500"
    for marked in (
        "Layer of __init__",
        "Head of *x*",
        "Layer of $HOME$",
        "Head of [a](b)",
        "Layer of :smile:",
    ):
        assert ui.widget_label(marked) == ui.md_escape(marked), marked
