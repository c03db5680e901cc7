"""Embeddings, Masked words, Word senses and Sentence vector pages on the tiny checkpoint."""

from __future__ import annotations

import numpy as np
import pytest

import bert_core
from tests.app.conftest import decode, figure, make_checkpoint_without_mlm, table_with  # noqa: F401


def z(at, key, trace=0) -> np.ndarray:
    return decode(figure(at, key)["data"][trace]["z"]).astype(np.float32)


def test_embeddings_page(make_app, tiny_checkpoint):
    m = bert_core.load_pretrained(tiny_checkpoint)
    r = m.analyze("the bank", "the river")
    at = make_app("views/embeddings.py", a="the bank", b="the river")
    assert not at.error
    np.testing.assert_allclose(z(at, "emb_heatmap"), r.embeddings.word, atol=1e-6)
    at.radio(key="emb_component").set_value("normalized").run()
    np.testing.assert_allclose(z(at, "emb_heatmap"), r.embeddings.normalized, atol=1e-6)
    norms = figure(at, "emb_norms")["data"]
    np.testing.assert_allclose(decode(norms[1]["y"]), np.linalg.norm(r.embeddings.segment, axis=1), rtol=1e-5)
    # LayerNorm's output on a chart of its own: ten times as long, it pressed the parts to a few pixels
    assert [t["name"] for t in norms] == ["|word|", "|segment|", "|position|", "|summed|"]
    after = figure(at, "emb_norms_after")["data"]
    assert [t["name"] for t in after] == ["|normalized|"]
    np.testing.assert_allclose(
        decode(after[0]["y"]), np.linalg.norm(r.embeddings.normalized, axis=1), rtol=1e-5
    )
    table = m.position_embedding_table()[:10]
    at.slider(key="emb_positions").set_value(10).run()
    unit = table / np.linalg.norm(table, axis=1, keepdims=True)
    np.testing.assert_allclose(z(at, "emb_positions_sim"), unit @ unit.T, atol=1e-5)
    assert at.session_state["forward_passes"] == 1


def test_masked_words_page(make_app, tiny_checkpoint):
    m = bert_core.load_pretrained(tiny_checkpoint)
    text = "the [MASK] sat on the [MASK]"
    expected = m.predict_masks(text, top_k=5)
    at = make_app("views/masked_words.py", a=text)
    assert not at.error
    for i, p in enumerate(expected):
        bars = figure(at, f"mask_bars_{i}")["data"][0]
        np.testing.assert_allclose(decode(bars["x"]), p.probabilities, rtol=1e-5)
        assert figure(at, f"mask_bars_{i}")["layout"]["yaxis"]["ticktext"] == [
            t.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") for t in p.tokens
        ]
    passes = at.session_state["forward_passes"]
    at.number_input(key="mask_topk").set_value(3).run()
    assert len(decode(figure(at, "mask_bars_0")["data"][0]["x"])) == 3
    at.number_input(key="mask_topk").set_value(12).run()
    bars = decode(figure(at, "mask_bars_0")["data"][0]["x"])
    np.testing.assert_allclose(bars, m.predict_masks(text, top_k=12)[0].probabilities, rtol=1e-5)
    assert at.session_state["forward_passes"] == passes  # a new k slices the cached prediction


def test_masked_words_counts_the_masks_of_both_sentences(make_app):
    at = make_app("views/masked_words.py", a="the [MASK] sat", b="on the [MASK]")
    caption = " ".join(c.value for c in at.caption).replace("\\", "")
    assert "Sentence A contains 1 [MASK]" in caption and "Sentence B contains 1 [MASK]" in caption
    assert figure(at, "mask_bars_1")  # B's mask is predicted too
    # RoBERTa's <mask>, typed for this BERT, is its [MASK], and the page says how it read it
    again = make_app("views/masked_words.py", a="the <mask> sat", b="on the [MASK]")
    caption = " ".join(c.value for c in again.caption).replace("\\", "")
    assert "Sentence A contains 1 [MASK]" in caption and "<mask> is read as [MASK]" in caption
    # a mask in another case is letters to the tokenizer; the page says so rather than hiding a word silently
    lower = make_app("views/masked_words.py", a="the [mask] sat on the mat")
    caption = " ".join(c.value for c in lower.caption).replace("\\", "")
    assert "[mask] is read as letters, not a mask: type [MASK] exactly" in caption
    assert decode(figure(again, "mask_bars_0")["data"][0]["x"]).tolist() == (
        decode(figure(at, "mask_bars_0")["data"][0]["x"]).tolist()
    )


def test_masked_words_says_which_masks_fell_past_the_limit(make_app):
    # The tiny model reads 64 pieces: the first four masks are inside, the last three beyond.
    text = "the [MASK] sat " + "on the bank " * 10 + "the [MASK] " * 3 + "and " * 40 + "the [MASK] cat " * 3
    at = make_app("views/masked_words.py", a=text)
    assert not at.exception and not at.error
    warning = " ".join(w.value for w in at.warning).replace("\\", "")
    assert "3 of the 7 [MASK] lie in the cut-off end of sentence A and are not predicted" in warning
    assert figure(at, "mask_bars_3")
    assert len(at.dataframe[0].value["mask"].unique()) == 4
    # Every mask past the limit: one warning that says so, not an error that there is no mask at all (the
    # page had just said "Sentence A contains 1 [MASK]").
    at = make_app("views/masked_words.py", a="the cat sat on the bank " * 30 + "the [MASK].")
    assert not at.exception and not at.error
    warning = " ".join(w.value for w in at.warning).replace("\\", "")
    assert "Every [MASK] lies in the cut-off end of sentence A, which the model never reads" in warning
    assert "sentence A was cut off" in warning
    # With a pair the longer sentence is cut first: A's lost mask lies before B's pieces, which are read, so
    # "past the first 64 pieces" was false; the sentence is named instead.
    at = make_app(
        "views/masked_words.py", a="the bank of the river " * 40 + "the [MASK] ran", b="the water ran ."
    )
    warning = " ".join(w.value for w in at.warning).replace("\\", "")
    assert not at.exception and not at.error
    assert (
        "Every [MASK] lies in the cut-off end of sentence A" in warning and "sentence B is whole" in warning
    )


def test_sentence_b_is_named_in_error_messages(make_app):
    at = make_app(a="the cat", b="\x00\u200b")
    errors = " ".join(e.value for e in at.error)
    assert "Sentence B is empty" in errors and "text_pair" not in errors


def test_sentence_vector_list_skips_bad_lines_and_runs_within_the_token_budget(
    make_app, tiny_checkpoint, monkeypatch
):
    from app import cache

    m = bert_core.load_pretrained(tiny_checkpoint)
    budgets = []
    real = bert_core.BertScopeModel.vectors_batch

    def spy(self, texts, **kwargs):
        budgets.append(kwargs.get("max_batch_tokens"))
        return real(self, texts, **kwargs)

    monkeypatch.setattr(bert_core.BertScopeModel, "vectors_batch", spy)
    monkeypatch.setattr(cache, "BATCH_TOKEN_BUDGET", 12)  # padded tokens per pass: the core runs several
    at = make_app("views/sentence_vector.py", a="the cat")
    passes = at.session_state["forward_passes"]
    lines = ["the cat sat on the mat", "\x00", "the dog", "my bank is by the river", "a cat"]
    at.text_area(key="sv_sentences").set_value("\n".join(lines)).run()
    assert not at.exception and not at.error
    assert any("sentence 2" in w.value and "empty" in w.value for w in at.warning)
    assert budgets[-1] == 12 and at.session_state["forward_passes"] - passes == 1
    pooled = np.stack([m.analyze(t).pooled for t in lines if t != "\x00"])
    unit = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
    np.testing.assert_allclose(z(at, "sv_similarity"), unit @ unit.T, atol=1e-5)


def test_masked_words_pick_a_word(make_app, tiny_checkpoint):
    m = bert_core.load_pretrained(tiny_checkpoint)
    at = make_app("views/masked_words.py", a="the cat sat on the bank")
    words = at.multiselect(key="mask_words")
    words.set_value([o for o in words.options if o.endswith("bank")]).run()
    expected = m.predict_masks("the cat sat on the [MASK]", top_k=5)
    np.testing.assert_allclose(
        decode(figure(at, "mask_bars_0")["data"][0]["x"]), expected[0].probabilities, rtol=1e-5
    )


def test_masked_words_shows_a_long_text_around_its_masks(make_app):
    """A pasted paragraph was printed whole on the "Masked:" line, a screen of text above the charts."""
    long = "we sat by the river bank today " + " ".join(["the cat sat on the mat"] * 40)
    at = make_app("views/masked_words.py", a=long)
    words = at.multiselect(key="mask_words")
    words.set_value([o for o in words.options if o.endswith("bank")]).run()
    shown = [
        t.value.replace("\u2068", "").replace("\u2069", "") for t in at.text if t.value.startswith("Masked: ")
    ]
    assert len(shown) == 1 and shown[0].startswith("Masked: we sat by the river [MASK] today the cat")
    assert shown[0].endswith(" …") and len(shown[0]) < 150
    at = make_app("views/masked_words.py", a="the cat sat on the bank")
    words = at.multiselect(key="mask_words")
    words.set_value([o for o in words.options if o.endswith("bank")]).run()
    assert [t.value for t in at.text] == [
        "Masked: \u2068the cat sat on the [MASK]\u2069"
    ]  # its own direction


def test_masked_words_best_guess_of_a_cut_text_stops_where_the_model_stopped_reading(make_app):
    """The "→" line under a chart printed a pasted paragraph whole, ending in a [MASK] the model never read."""
    text = "the [MASK] sat . " + "the cat sat on the mat . " * 60 + "then the [MASK] ran ."
    at = make_app("views/masked_words.py", a=text)
    assert not at.exception
    best = [
        m.value.replace("\\", "").replace("\u2068", "").replace("\u2069", "")
        for m in at.markdown
        if m.value.startswith("→")
    ]
    assert len(best) == 1 and best[0].endswith(" …") and "then the" not in best[0] and len(best[0]) < 300


def test_masked_words_says_how_it_counts_a_cut_inputs_pieces(make_app, tiny_model):
    """Its count (the hidden words one mask each) stood beside the other pages' larger one, unexplained."""
    text = "the " * 70 + "cat sat"
    at = make_app("views/masked_words.py", a=text)
    (warned,) = [w.value.replace("\\", "") for w in at.warning if "reads at most" in w.value]
    assert "(each hidden word counted as one mask)" in warned
    at = make_app("views/masked_words.py", a=text + " [MASK]")  # typed: the text as typed is what is counted
    (warned,) = [w.value.replace("\\", "") for w in at.warning if "reads at most" in w.value]
    assert "counted as one mask" not in warned
    assert f"has {tiny_model.encode(text + ' [MASK]').num_tokens_before_truncation} pieces" in warned


def test_masked_words_says_a_mask_typed_inside_a_word_splits_it(make_app):
    """ "That is un[MASK]able." read "→ That is unsable.": the model had read "un" and "able" as words."""
    at = make_app("views/masked_words.py", a="that is un[MASK]able .")
    said = " ".join(c.value for c in at.caption).replace("\\", "")
    assert "typed inside a word (un[MASK]able) splits the word there" in said
    at = make_app("views/masked_words.py", a="that is [MASK] .")
    assert "inside a word" not in " ".join(c.value for c in at.caption)
    # BERT reads each CJK character as a word of its own, so a mask beside one splits nothing; nor does a mask
    # the page put in place of a word it chose ("东" of "东京"): both were said to split a word
    for typed in ("我们在东京[MASK]了。", "东京"):
        at = make_app("views/masked_words.py", a=typed)
        assert not at.exception and "inside a word" not in " ".join(c.value for c in at.caption), typed


def test_masked_words_large_text_table_leaves_the_guess_sentences_to_the_csv(make_app):
    """At 1024 px in Large text the sentence column was squeezed to ~70 px, each guess's sentence cut mid-word
    in rows 200 px tall; WordPiece's "shown as" repeated "token"."""
    normal = make_app("views/masked_words.py", a="the cat sat on the [MASK] .")
    large = make_app("views/masked_words.py", a="the cat sat on the [MASK] .", large="true")
    plain, shown = normal.dataframe[0].value, large.table[0].value
    assert "shown as" not in plain.columns and "sentence with this guess" in plain.columns
    assert [c for c in plain.columns if c not in shown.columns] == ["sentence with this guess"]
    assert any(
        "Each chart's CSV also has the whole sentence with each guess" in c.value for c in large.caption
    )


def test_masked_words_without_mlm_head(make_app, tmp_path):
    ckpt = make_checkpoint_without_mlm(tmp_path / "bare")
    at = make_app("views/masked_words.py", model=str(ckpt))
    assert any("no MLM head" in i.value for i in at.info)
    assert "prediction heads: none · pooler ✓" in " ".join(c.value for c in at.sidebar.caption)


def test_word_senses_page(make_app, tiny_checkpoint):
    m = bert_core.load_pretrained(tiny_checkpoint)
    sentences = [
        "we sat on the bank | river",
        "the river bank | river",
        "my bank cash | money",
        "deposit at the bank | money",
    ]
    at = make_app("views/word_senses.py")
    at.text_area(key="senses_text").set_value("\n".join(sentences)).run()
    assert not at.error
    rs = [m.analyze(s.split("|")[0].strip()) for s in sentences]
    vecs = np.stack([r.hidden_states[1, r.tokens.index("bank")] for r in rs])
    passes = at.session_state["forward_passes"]
    at.slider(key="senses_layer").set_value(1).run()
    unit = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    np.testing.assert_allclose(z(at, "senses_matrix"), unit @ unit.T, atol=1e-5)
    lines = figure(at, "senses_lines")["data"]
    assert [t["name"] for t in lines] == ["same sense", "different sense"]
    pca = figure(at, "senses_pca")["data"]  # one trace per sense, the sentence in the hover
    assert [t["name"] for t in pca] == ["river", "money"]
    assert pca[0]["hovertext"] == ["1. we sat on the bank (river)", "2. the river bank (river)"]
    assert at.session_state["forward_passes"] == passes  # the slider reran nothing


def test_word_senses_absent_target(make_app):
    at = make_app("views/word_senses.py")
    at.text_area(key="senses_text").set_value("the cat sat\nthe dog sat\nthe bank").run()
    assert not at.exception
    assert at.warning and at.info  # two sentences left out, then: needs at least two


def test_sentence_vector_page(make_app, tiny_checkpoint):
    m = bert_core.load_pretrained(tiny_checkpoint)
    at = make_app("views/sentence_vector.py", a="the cat sat", b="on the bank")
    assert not at.error
    r = m.analyze("the cat sat")  # sentence A's vector is A's alone, not the pair's
    np.testing.assert_allclose(z(at, "sv_vector")[0], r.pooled, atol=1e-6)
    assert any("A analysed alone" in c.value for c in at.caption)
    p = m.next_sentence("the cat sat", "on the bank")
    np.testing.assert_allclose(decode(figure(at, "sv_nsp")["data"][0]["x"])[0], p, rtol=1e-5)
    at.text_area(key="sv_sentences").set_value("the cat\nthe dog\nmy bank").run()
    batch = m.analyze_batch(["the cat", "the dog", "my bank"])
    pooled = np.stack([b.pooled for b in batch])
    unit = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
    np.testing.assert_allclose(z(at, "sv_similarity"), unit @ unit.T, atol=1e-5)


def test_pages_say_what_the_model_reads_as_its_unknown_piece(make_app):
    """Two sentences of different emoji are one input to a vocabulary that has none: a similarity of 1, an NSP
    answer or a prediction then rests on [UNK], which every page that reads the text says."""

    def notes(at):
        return [c.value.replace("\\", "") for c in at.caption if "vocabulary has no piece" in c.value]

    tokens = make_app(
        "views/tokens.py", a="the cat sat ☃ on the mat"
    )  # its own warning, red chips: not twice
    assert not notes(tokens) and any("could not be spelt" in w.value for w in tokens.warning)
    # a screen reader reads a metric's label as written: "Continuations \\(\\#\\#\\)" was what it heard
    assert [m.label for m in tokens.metric][:2] == ["Pieces", "Continuations (##)"]
    for page in ("views/attention.py", "views/masked_words.py", "views/pretraining.py"):
        at = make_app(page, a="the cat sat ☃ on the mat", b="a dog ♞ ran")
        assert not at.exception and notes(at) == [
            "This model's vocabulary has no piece for '☃', '♞': it reads them as [UNK]."
        ], page
        assert not notes(make_app(page, a="the cat sat on the mat")), page
    at = make_app("views/sentence_vector.py", a="the cat sat ☃ on the mat", b="a dog ♞ ran")
    assert notes(at) == [  # sentence A alone in its own section, then B where the pair is read (NSP)
        "This model's vocabulary has no piece for '☃': it reads it as [UNK].",
        "This model's vocabulary has no piece for '♞': it reads it as [UNK].",
    ]
    at = make_app("views/sentence_vector.py", a="the cat sat")
    at.text_area(key="sv_sentences").set_value("the cat ☃\nthe dog\nmy ☃ bank ♞").run()
    assert notes(at) == [
        "This model's vocabulary has no piece for '☃' (sentences 1, 3), '♞' (sentence 3): it reads them as [UNK]."
    ]
    # past eight, the rest are counted: fifteen Chinese characters ran to six lines in Large text
    symbols = [chr(0x2654 + k) for k in range(11)]  # chess pieces, none in the tiny vocabulary
    at.text_area(key="sv_sentences").set_value("\n".join(f"the {c} sat" for c in symbols)).run()
    (note,) = notes(at)
    assert (
        note.endswith(f"'{symbols[7]}' (sentence 8), 3 more: it reads them as [UNK].")
        and symbols[8] not in note
    )


def test_large_text_option_enlarges_figures(make_app):
    at = make_app("views/word_senses.py")
    assert figure(at, "senses_matrix")["layout"]["font"]["size"] == 13
    at.toggle(key="large").set_value(True).run()
    assert figure(at, "senses_matrix")["layout"]["font"]["size"] == 22
    assert figure(at, "senses_pca")["data"][0]["marker"]["size"] == 24


def test_masked_words_survive_a_text_change(make_app):
    at = make_app("views/masked_words.py", a="the cat sat on the bank")
    words = at.multiselect(key="mask_words")
    words.set_value(words.options[:3]).run()
    at.text_area(key="a").set_value("my dog").run()
    assert not at.exception and not at.error
    assert figure(at, "mask_bars_0")


def test_pages_warn_about_positions_the_model_never_trained(make_app, tiny_checkpoint, tmp_path, monkeypatch):
    import shutil

    directory = tmp_path / "short-trained"
    shutil.copytree(tiny_checkpoint, directory)
    (directory / "pretraining.json").write_text('{"longest_sequence": 10}')
    monkeypatch.setenv("BERTSCOPE_MODEL", str(directory))
    short, long = "the cat sat", "the cat sat on the bank of the river and the dog ran"
    for page in ("views/attention.py", "views/tokens.py", "views/pretraining.py", "views/masked_words.py"):
        at = make_app(page, a=short)
        assert not any("never trained" in w.value for w in at.warning), page
        at = make_app(page, a=long)
        assert not at.exception
        notes = [w.value for w in at.warning if "never trained" in w.value]
        assert len(notes) == 1 and "at most 10" in notes[0], (page, notes)


def test_pretraining_page_says_when_the_text_was_cut(make_app, tiny_checkpoint):
    at = make_app("views/pretraining.py", a="the cat sat on the bank " * 20)
    assert any("the end of sentence A was cut off" in w.value for w in at.warning)
    # With a pair the longer sentence loses pieces first: the note names it, and the one kept whole.
    tokenizer = bert_core.load_pretrained(tiny_checkpoint).tokenizer
    long, short = "the cat sat on the bank " * 20, "the dog ran"
    enc = tokenizer.encode(long, short)
    lost = tokenizer.encode(long, max_length=10_000).pieces_before_truncation[0] - enc.sequence_ids.count(0)
    at = make_app("views/pretraining.py", a=long, b=short)
    said = [w.value for w in at.warning if "cut off" in w.value]
    assert said == [
        f"The input has {enc.num_tokens_before_truncation} pieces; the model reads at most {len(enc)}, so the "
        f"end of sentence A was cut off ({lost} pieces); sentence B is whole."
    ]
    at = make_app("views/pretraining.py", a=short, b=long)
    assert any(
        "the end of sentence B was cut off" in w.value and "sentence A is whole" in w.value
        for w in at.warning
    )


def test_a_mask_in_sentence_b_alone_is_predicted_alone(make_app, tiny_checkpoint):
    m = bert_core.load_pretrained(tiny_checkpoint)
    at = make_app("views/masked_words.py", a="the cat sat", b="on the [MASK]")
    assert not at.exception and not at.error
    assert at.multiselect(key="mask_words").value == []
    expected = m.predict_masks("the cat sat", "on the [MASK]", top_k=5)
    assert len(expected) == 1
    np.testing.assert_allclose(
        decode(figure(at, "mask_bars_0")["data"][0]["x"]), expected[0].probabilities, rtol=1e-5
    )
    assert at.dataframe[0].value["mask"].unique().tolist() == [1]  # B's mask only
    said = [c.value for c in at.caption if "Sentence B contains" in c.value]
    assert len(said) == 1 and said[0].endswith("predicted below.")  # not "too": it is the only one
    # a word of A can still be hidden as well
    words = at.multiselect(key="mask_words")
    words.set_value([o for o in words.options if o.endswith(": cat")]).run()
    assert at.dataframe[0].value["mask"].unique().tolist() == [1, 2]
    assert [c.value for c in at.caption if "Sentence B contains" in c.value][0].endswith("predicted too.")


def test_sentence_vector_page_compares_typed_sentences_without_sentence_a(make_app):
    at = make_app("views/sentence_vector.py", a="")
    at.text_area(key="a").set_value("").run()
    assert not at.exception
    assert any("sentence A" in i.value for i in at.info)
    assert figure(at, "sv_similarity")  # the list section still works


def test_masked_words_reads_each_guess_in_its_sentence(make_app, tiny_checkpoint):
    m = bert_core.load_pretrained(tiny_checkpoint)
    a, b = "the [MASK] sat on the [MASK]", "the dog <b>[MASK]</b>"
    expected = m.predict_masks(a, b, top_k=5)
    at = make_app("views/masked_words.py", a=a, b=b)
    table = at.dataframe[0].value
    first = table[(table["mask"] == 1) & (table["rank"] == 1)]["sentence with this guess"].iloc[0]
    top = expected[0].tokens[0]
    joined = "the" + top[2:] if top.startswith("##") else "the " + top  # a continuation joins "the"
    assert first == joined + " sat on the [MASK]"
    third = table[(table["mask"] == 3) & (table["rank"] == 1)]["sentence with this guess"].iloc[0]
    assert third.startswith("the dog <b>") and third.endswith("</b>")  # B's mask, filled in B, as plain text
    # shown as escaped Markdown: the typed <b> stays literal text
    shown = [
        m.value.replace("\\", "").replace("\u2068", "").replace("\u2069", "")
        for m in at.markdown
        if m.value.startswith("→ ")
    ]
    assert shown[0] == "→ " + first and len(shown) == 3
    assert all("<b>" not in m.value for m in at.markdown)  # never raw markup


def test_masked_words_length_notes_describe_the_masked_text(make_app):
    # Typed masks in a text longer than the tiny model's 64 pieces: the cut is reported even though every
    # mask fits, and only once.
    at = make_app("views/masked_words.py", a="the [MASK] sat " + "on the bank " * 30)
    cut = [w.value for w in at.warning if "cut off" in w.value]
    assert len(cut) == 1 and not at.error


def test_masked_words_returns_to_a_default_word_when_b_loses_its_mask(make_app):
    at = make_app("views/masked_words.py", a="the cat sat", b="on the [MASK]")
    assert at.multiselect(key="mask_words").value == []
    at.text_area(key="b").set_value("on the mat").run()
    assert not at.exception
    assert at.multiselect(key="mask_words").value != []
    assert not any("Pick at least one word" in i.value for i in at.info)


def test_a_mask_at_an_untrained_position_says_so(make_app, tiny_checkpoint, tmp_path, monkeypatch):
    import shutil

    directory = tmp_path / "short-trained"
    shutil.copytree(tiny_checkpoint, directory)
    (directory / "pretraining.json").write_text('{"longest_sequence": 10}')
    monkeypatch.setenv("BERTSCOPE_MODEL", str(directory))
    at = make_app("views/masked_words.py", a="the [MASK] sat on the bank of the river and the [MASK] ran")
    titles = [figure(at, f"mask_bars_{i}")["layout"]["title"]["text"] for i in range(2)]
    assert "untrained" not in titles[0] and "untrained position" in titles[1]


def test_the_default_word_to_hide_is_the_last_of_the_longest(make_app):
    at = make_app("views/masked_words.py", a="the cat sat on the mat")
    assert at.multiselect(key="mask_words").value == ["word 6: mat"]
    # of the words the vocabulary can spell: hiding an [UNK] asks for a guess of the unknown piece
    at = make_app("views/masked_words.py", a="the cat sat on \u05d4\u05e0\u05d4\u05e8")
    assert at.multiselect(key="mask_words").value == ["word 3: sat"]
    at = make_app("views/masked_words.py", a="\u05d4\u05e0\u05d4\u05e8 \u2603")  # none: still the longest
    assert at.multiselect(key="mask_words").value == ["word 1: \u05d4\u05e0\u05d4\u05e8"]
    # nor a special typed as text, which would ask the model to guess [SEP]
    at = make_app("views/masked_words.py", a="the cat [SEP] ran [CLS]")
    assert at.multiselect(key="mask_words").value == ["word 4: ran"]


def test_masked_words_keeps_a_choice_cleared_on_purpose(make_app):
    at = make_app("views/masked_words.py", a="the cat sat on the mat")
    at.multiselect(key="mask_words").set_value([]).run()
    assert at.multiselect(key="mask_words").value == []
    assert any("Pick at least one word" in i.value for i in at.info)


def test_each_pages_controls_come_from_a_shared_link(make_app):
    """A lecturer's link reproduces the view on every page, not only the sentence (the browser writes the
    values into the address bar; AppTest does not, so the query parameters here stand for what it holds)."""
    # Layer 0 and top-1 are the widgets' minimums: a link holds them only because each widget's own default
    # is the page's start (Streamlit leaves a value equal to the default out of the address).
    at = make_app("views/word_senses.py", senses_layer="0", senses_occurrence="the last", senses_word="bank")
    assert at.slider(key="senses_layer").value == 0
    assert at.radio(key="senses_occurrence").value == "last"
    at = make_app("views/masked_words.py", a="the man went to the bank", mask_topk="1")
    assert at.number_input(key="mask_topk").value == 1
    at = make_app("views/embeddings.py", emb_component="position embedding")
    assert at.radio(key="emb_component").value == "position"
    at = make_app("views/sentence_vector.py", sv_sentences="one line\nanother line")
    assert at.text_area(key="sv_sentences").value == "one line\nanother line"
    # the heads drawn and the toggles that open a computation (their tick was lost on a trip to another page)
    at = make_app(
        "views/attention.py", att_view="Head view", att_all_heads="true", att_heads_shown=["1", "3"]
    )
    assert at.multiselect(key="att_heads_shown").value == [1, 3]
    at = make_app(
        "views/inside.py",
        a="the [MASK] of the river",
        inside_view="Head ablation",
        ablation_importance="true",
    )
    assert at.toggle(key="ablation_importance").value is True and at.get("plotly_chart")
    at.switch_page("views/tokens.py").run()
    at.switch_page("views/inside.py").run()
    assert at.toggle(key="ablation_importance").value is True
    at = make_app("views/inside.py", inside_view="Head roles", roles_stability="true")
    assert at.toggle(key="roles_stability").value is True


UNUSED = "Not used from the link as given (no such choice on this page for this model and text, or out of its range): "


def _captions(at) -> str:
    return " ".join(c.value for c in at.caption).replace("\\", "")


def _notes(at) -> str:
    """The caption above the page: every note on the link, in one place."""
    (notes,) = [c.value for c in at.main.caption if "link" in c.value]
    return notes.replace("\\", "")


def test_a_link_value_no_control_takes_is_said_once_and_a_usable_one_is_not(make_app):
    """Streamlit drops a linked value that is no option, no number or out of range, and cuts a list to the options
    it knows, without a word: each opened the page as if the link had asked for its start."""
    text = "the man went to the [MASK]"
    at = make_app("views/masked_words.py", a=text, mask_topk="500")
    assert at.number_input(key="mask_topk").value == 5
    assert UNUSED + "mask_topk=500 (showing 5)." in _captions(at)
    assert UNUSED not in _captions(at.run())  # said on the run that read the link, not on every run after
    at = make_app("views/inside.py", a=text, inside_view="Head ablation", ablation_heads=["1.1", "9.9"])
    assert at.multiselect(key="ablation_heads").value == ["1.1"]
    assert UNUSED + "ablation_heads=9.9 (showing 1.1)." in _captions(at)
    at = make_app("views/attention.py", a=text, att_hide_special="perhaps", att_heads_shown=["7"])
    assert UNUSED + "att_hide_special=perhaps (showing off)." in _captions(at)
    at = make_app(a=text, large="yes")  # the sidebar's Large text too
    assert UNUSED + "large=yes (showing off)." in _captions(at)
    # a value repeated where one is taken, a head written "02" (no option), a text cut to its box
    at = make_app("views/attention.py", a=text, layer=["2", "3"], head="02")
    assert UNUSED + "layer=2, 3 (showing 1); head=02 (showing mean)." in _captions(at)
    at = make_app("views/inside.py", a=text, inside_view="Logit lens", lens_follow="river " * 60)
    assert UNUSED + "lens_follow=river river river river river… (cut to its first 200 characters)." in _notes(
        at
    )
    # a number the entry takes out of the address before the page can read it ("inf" broke the page)
    at = make_app("views/masked_words.py", a=text, mask_topk="inf")  # (AppTest opens on the first page)
    assert at.number_input(key="mask_topk").value == 5
    assert UNUSED + "mask_topk=inf (showing 5)." in _captions(at)
    # a layer that is no number: the page's own note says it, and the list of the others does not again
    at = make_app("views/attention.py", a=text, layer="abc")
    assert "The link's layer=abc is no layer number: showing layer 1." in _captions(at)
    assert UNUSED not in _captions(at)
    # the page's notes and the list, in one caption above the page (a rerun that reads a view named by hand keeps
    # them: tests/app/test_browser.py, as AppTest stops such a rerun part-way)
    notes = _notes(make_app("views/attention.py", a=text, layer="9", att_merge="perhaps"))
    assert (
        "The link asks for layer 9, which this model doesn't have (layers 1 to 2): showing layer 1" in notes
    )
    assert UNUSED + "att_merge=perhaps (showing off)." in notes
    at = make_app("views/attention.py", a=text, layer="9" * 400)
    assert "The link asks for layer 99999999999999999999999999999…, which" in _captions(at)
    # a choice Streamlit drops is not "cut" though the choice shown begins it ("all" of "all pairs")
    at = make_app("views/attention.py", a=text, b="on the mat", att_direction="all pairs")
    assert UNUSED + "att_direction=all pairs (showing all)." in _captions(at)
    # what a control takes, its own start and a value written another way included, is not named
    for page, query in (
        ("views/masked_words.py", {"mask_topk": "5"}),
        ("views/masked_words.py", {"mask_topk": "1"}),
        ("views/masked_words.py", {"mask_topk": "5.0"}),
        ("views/masked_words.py", {"mask_topk": "07"}),
        (
            "views/attention.py",
            {"att_hide_special": "false", "att_merge": "TRUE", "layer": "2", "head": "mean"},
        ),
        ("views/attention.py", {"layer": "2.0", "att_view": "model"}),
        ("views/inside.py", {"inside_view": "Head ablation", "ablation_heads": ["1.1", "2.2"]}),
        ("views/inside.py", {"inside_view": "Head ablation", "ablation_heads": ["1.2", "1.2"]}),
        (
            "views/word_senses.py",
            {"senses_layer": "0", "senses_occurrence": "the last", "senses_word": "bank"},
        ),
    ):
        at = make_app(page, a=text, **query)
        assert "link" not in _captions(at), (page, query)
    assert make_app("views/attention.py", a=text, layer="2.0").slider(key="layer").value == 2


def _carried_page():
    import streamlit as st

    from app import ui

    ui.forget_link_record()
    ui.place_link_notes(st.empty())
    st.toggle("t", **ui.bound("t"))
    st.toggle("u", **ui.bound("u"))
    if st.session_state.get("first", True):
        st.session_state["first"] = False
        ui.carry_link_record()  # as run_page does when a click stops this run part-way (nothing said)
    else:
        ui.say_link_notes()


def test_a_value_the_link_set_and_the_user_changed_during_the_first_run_is_not_named():
    """A click that stops the link's first run part-way reruns the page, which compared the link's values with
    the controls as the user had just set them: a toggle the link turned on, turned off, was "not used"."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_carried_page, default_timeout=30)
    at.query_params["t"] = "true"
    at.query_params["u"] = "maybe"  # dropped by Streamlit, and named though settled before the rerun
    at.run()
    assert at.toggle(key="t").value is True and not at.caption
    at.toggle(key="t").set_value(False).run()
    (said,) = [c.value.replace("\\", "") for c in at.caption]
    assert said == UNUSED + "u=maybe (showing off)."


def test_a_csv_reads_back_whole_whatever_the_typed_text_holds():
    """A link can carry a carriage return into the text (the box turns one typed into a line feed): the Tokens
    CSV wrote it bare and unquoted, and Python's csv reader stopped there ("new-line character seen in unquoted
    field"), a spreadsheet starting a row."""
    import csv
    import io

    import pandas as pd

    from app import ui

    frame = pd.DataFrame({"piece": ["the", "cat", "sat"], "typed text": ["the\r", 'a "b",\n', "\rsat"]})
    written = ui.csv_text(frame)
    assert written.startswith("\ufeffpiece,")  # the mark Excel needs to read it as UTF-8, not a code page
    rows = list(csv.reader(io.StringIO(written.encode().decode("utf-8-sig"), newline="")))
    assert rows == [["piece", "typed text"], *frame.values.tolist()]


def test_every_csv_download_names_each_column_once(make_app, monkeypatch):
    """The CSVs whose columns are tokens had two columns called "the" for a text with "the" twice (Inside's
    maps, Compare's, the Task page's first-token map), so a spreadsheet could not tell them apart."""
    from app import models, ui
    from app.registry import PAGES

    views = [
        "qk",
        "value",
        "rollout",
        "roles",
        "ablation",
        "lens",
        "hidden",
        "pll",
    ]  # Inside's (a page script)
    frames = []
    real = ui.show_figure

    def recording(fig, *, key, data=None, **kwargs):
        if data is not None:
            frames.append((key, data))
        return real(fig, key=key, data=data, **kwargs)

    monkeypatch.setattr(ui, "show_figure", recording)
    text = "the bank of the river and the bank of the money"
    at = make_app(a=text)
    for page in PAGES:
        at.switch_page(page.file).run()
        if page.file == "views/inside.py":
            assert at.radio(key="inside_view").options == [
                "Query & key", "Value-weighted attention", "Rollout & flow", "Head roles", "Head ablation",
                "Logit lens", "Hidden states by layer", "Sentence scores (pseudo-likelihood)",
            ]  # fmt: skip
            for view in views:
                at.radio(key="inside_view").set_value(view).run()
        assert not at.exception, (page.file, [e.value for e in at.exception])
    task = make_app("views/task.py", a=text, model=str(models.DEMO_TASKS_DIR / "senses"))
    assert not task.exception
    drawn = {key for key, _ in frames}
    assert {
        "task_cls_attention",
        "cmp_attention_left",
        "value_summed",
        "rollout",
        "hidden_trajectory",
    } <= drawn
    for key, data in frames:
        frame = data() if callable(data) else data
        assert frame.columns.is_unique, (key, list(frame.columns))


def test_position_similarity_says_where_a_model_stopped_training_its_positions(make_app):
    """The demo model saw at most 42 pieces: past that its positions keep their random start, and the
    caption promised a band along the diagonal that stops there."""
    at = make_app("views/embeddings.py", a="the bank", model="@demo")
    said = " ".join(c.value for c in at.caption)
    assert "pre-trained on at most 42 pieces" in said
    # Its band fades by ~38: the last positions before 42 came only with the longest inputs.
    assert "stops there at the latest" in said and "may fade earlier" in said
    at.slider(key="emb_positions").set_value(40).run()
    assert "pre-trained on at most" not in " ".join(c.value for c in at.caption)


def test_next_sentence_says_what_of_the_pair_was_cut(make_app):
    """P(IsNext) is for the pair as the model read it; the page's only length note was sentence A's alone."""
    at = make_app("views/sentence_vector.py", a="the cat sat on the bank " * 20, b="the dog ran")
    assert not at.exception
    said = [w.value for w in at.warning if "cut off" in w.value]
    assert len(said) == 2 and "sentence B is whole" in said[1] and "sentence B" not in said[0], said
    assert at.metric[-1].label == "P(IsNext)"


def test_the_sentence_similarity_csv_names_the_sentences_whole(make_app, figure_data):
    """The chart cuts a long sentence to what its axis holds; its CSV once carried the cut names as well."""
    frames = figure_data
    lines = [
        "share prices dropped sharply at the close of trading on the river bank",
        "the cat sat on the mat",
    ]
    at = make_app("views/sentence_vector.py", a="the cat")
    at.text_area(key="sv_sentences").set_value("\n".join(lines)).run()
    assert not at.exception
    table = frames["sv_similarity"]
    assert table["sentence"].tolist() == [f"1. {lines[0]}", f"2. {lines[1]}"]
    assert list(table.columns[:2]) == [f"1. {lines[0]}", f"2. {lines[1]}"]


def test_sentence_vector_says_nothing_of_a_vector_it_does_not_draw(make_app):
    at = make_app("views/sentence_vector.py", a="   ", b="the dog ran")
    assert not at.exception
    assert any("Type a sentence A" in i.value for i in at.info)
    assert not [c for c in at.caption if "analysed alone" in c.value]  # once beside "Type a sentence A"
    at = make_app("views/sentence_vector.py", a="the cat sat", b="the dog ran")
    assert [c for c in at.caption if "analysed alone" in c.value]


def test_masked_words_says_a_word_of_several_pieces_is_hidden_as_one_mask(make_app):
    """One mask is filled with one piece: a learner waiting for the whole word should know it cannot come."""
    at = make_app("views/masked_words.py", a="the riverbank was cold")
    words = at.multiselect(key="mask_words")
    words.set_value([o for o in words.options if o.endswith(": riverbank")]).run()
    said = [c.value.replace("\\", "") for c in at.caption if "pieces \\(" in c.value]
    assert said == [
        "“riverbank” is 5 pieces (river ##b ##a ##n ##k). Each hidden word is one [MASK], and the model puts "
        "one piece in a mask, so it can guess only a piece of such a word, never all of it."
    ]
    words.set_value([o for o in words.options if o.endswith(": the")]).run()
    assert not [c for c in at.caption if "pieces \\(" in c.value]


def test_masked_words_keeps_the_picked_words_in_sentence_order(make_app):
    """The chips stayed in the order picked while the charts numbered the masks in sentence order."""
    at = make_app("views/masked_words.py", a="the cat sat on the warm mat")
    words = at.multiselect(key="mask_words")
    picked = [o for o in words.options if o.endswith((": mat", ": cat"))]
    words.set_value(list(reversed(picked))).run()  # mat first, then cat
    assert not at.exception
    assert at.multiselect(key="mask_words").value == picked  # cat, then mat, as in the sentence


def test_masked_words_default_word_is_one_the_model_was_trained_at(
    make_app, tiny_checkpoint, tmp_path, monkeypatch
):
    """In a long text the default hidden word, the longest, sat at a position the model never trained."""
    import shutil

    directory = tmp_path / "short-trained"
    shutil.copytree(tiny_checkpoint, directory)
    (directory / "pretraining.json").write_text('{"longest_sequence": 10}')
    monkeypatch.setenv("BERTSCOPE_MODEL", str(directory))
    at = make_app("views/masked_words.py", a="the cat sat on the bank of the river and the dog ran quickly")
    assert not at.exception
    assert at.multiselect(key="mask_words").value == ["word 9: river"]  # not "quickly", past piece 10


def test_the_sentence_list_says_which_vectors_are_of_a_cut_sentence(make_app):
    """A line past the model's length got "sentence 3 is cut" at 1,000 characters and nothing about the pieces
    the model then cut, though its vector is of the first 64 alone."""
    long = " ".join(["the cat sat on the bank"] * 30)  # 150 words, well past the tiny model's 64 pieces
    at = make_app("views/sentence_vector.py")
    at.text_area(key="sv_sentences").set_value(f"the cat\nthe dog\n{long}").run()
    said = [w.value for w in at.warning if "start of their sentence only" in w.value]
    assert len(said) == 1 and "sentence 3 (" in said[0] and "sentence 1" not in said[0]
    at.text_area(key="sv_sentences").set_value("the cat\nthe dog").run()
    assert not [w for w in at.warning if "start of their sentence only" in w.value]


@pytest.mark.parametrize("value", ["inf", "-inf", "1e400", "nan"])
@pytest.mark.parametrize(("page", "key", "default"), [("views/masked_words.py", "mask_topk", 5),
                                                      ("views/pretraining.py", "pt_draw", 1)])  # fmt: skip
def test_a_number_box_in_a_link_that_is_no_finite_number_starts_at_its_default(
    make_app, page, key, default, value
):
    """Streamlit read ?mask_topk=inf as infinity and failed to make a whole number of it: the page was lost."""
    at = make_app(page, a="the [MASK] sat", **{key: value})
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.number_input(key=key).value == default
    assert key not in at.query_params and at.query_params["a"] in ("the [MASK] sat", ["the [MASK] sat"])
