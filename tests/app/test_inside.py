"""The Inside the model page: every view renders on the tiny model and draws the core's own numbers."""

from __future__ import annotations

import html

import numpy as np
import pytest

import bert_core
from app import cache
from tests.app.conftest import decode, figure

PAGE = "views/inside.py"
TEXT = "we sat on the [MASK] of the river ."


def open_view(make_app, view: str, text: str = TEXT):
    at = make_app(PAGE, a=text)
    at.radio(key="inside_view").set_value(view).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.parametrize("view", ["qk", "value", "rollout", "roles", "ablation", "lens", "hidden", "pll"])
def test_every_view_renders(make_app, view):
    at = open_view(make_app, view, TEXT)
    assert not at.exception, [e.value for e in at.exception]
    assert not at.get("error"), [e.value for e in at.get("error")]


def test_query_key_view_draws_the_layers_own_scores_and_a_head_change_runs_nothing(make_app, tiny_model):
    at = open_view(make_app, "qk", TEXT)
    details = tiny_model.attention_details(TEXT, layer=tiny_model.config.num_hidden_layers - 1)
    scores = decode(figure(at, "qk_scores")["data"][0]["x"])
    if scores.dtype.kind not in "fi":  # horizontal bars: values on y
        scores = decode(figure(at, "qk_scores")["data"][0]["y"])
    np.testing.assert_allclose(np.asarray(scores, dtype=np.float64), details.scores[0, 0], atol=1e-5)
    # Signed values on a diverging scale: white is 0 (none), not the midpoint of whatever range they span.
    assert figure(at, "qk_vectors")["data"][0]["zmid"] == 0
    before = at.session_state[cache.FORWARD_PASSES]
    at.selectbox(key="qk_head").set_value(2).run()
    assert not at.exception and at.session_state[cache.FORWARD_PASSES] == before


def test_pll_and_logit_lens_equal_the_core(make_app, tiny_model):
    at = open_view(make_app, "pll", "the cat sat on the bank .")
    total, pieces = tiny_model.pseudo_log_likelihood("the cat sat on the bank .")
    assert float(at.metric[0].value) == pytest.approx(total, abs=0.01)
    # Pieces are numbered by their position in the token sequence, as every other view numbers them.
    ticks = [html.unescape(t) for t in figure(at, "pll_strip")["layout"]["yaxis"]["ticktext"]]
    assert ticks == [f"{i + 1}: {p}" for i, (p, _) in enumerate(pieces)]
    at = open_view(make_app, "pll", "the cat sat on the [MASK] .")
    ticks = [html.unescape(t) for t in figure(at, "pll_strip")["layout"]["yaxis"]["ticktext"]]
    assert ticks == ["1: the", "2: cat", "3: sat", "4: on", "5: the", "7: ."]  # the typed mask is not scored
    ranked = [t for t in at.dataframe if "PLL (nats)" in t.value.columns][0].value
    assert list(ranked["PLL (nats)"]) == sorted(ranked["PLL (nats)"], reverse=True)
    at = open_view(make_app, "lens", TEXT)
    lens = tiny_model.logit_lens(TEXT, 5)
    table = [t for t in at.dataframe if "top prediction" in t.value.columns][0].value
    assert list(table["top prediction"]) == [t[0] for t in lens.top_tokens]
    rank_axis = figure(at, "lens_rank")["layout"]["yaxis"]
    low, high = rank_axis["range"]
    if rank_axis.get("type") == "log":
        low, high = 10**low, 10**high
    assert 0 < low < 1 and high > max(lens.final_token_rank)  # from rank 1 (no 0) to the largest
    # At a mask, the view shows a hidden word's guess form; at a visible word, that the word is its own guess
    # from layer 0 on, which a learner was left to read as a finding.
    assert not [c for c in at.caption if "often its own top guess" in c.value]
    at = open_view(make_app, "lens", "the cat sat on the bank .")
    assert [c for c in at.caption if "often its own top guess" in c.value]


def test_the_logit_lens_follows_typed_words_beside_its_answer(make_app, tiny_model):
    """A lecturer asks at which layer "river" and "money" rise at the hole: each gets its rank by layer,
    the core's own; a word it cannot follow is said and spoils none of the others."""
    at = open_view(make_app, "lens", TEXT)
    at.text_input(key="lens_follow").set_value("River, money riverbank").run()
    assert not at.exception, [e.value for e in at.exception]
    lens = tiny_model.logit_lens(TEXT, 5, follow=["river", "money"])
    warnings = [w.value for w in at.warning]
    assert len(warnings) == 1 and "riverbank" in warnings[0] and "not one piece" in warnings[0]
    table = [t for t in at.dataframe if "top prediction" in t.value.columns][0].value
    for k, word in enumerate(["river", "money"]):
        if word != lens.final_token:
            assert list(table[f"rank of '{word}'"]) == lens.followed_ranks[k].tolist()
    lines = {t["name"]: t for t in figure(at, "lens_rank")["data"]}
    assert set(lines) == {f"rank of {t}" for t in dict.fromkeys([lens.final_token, "river", "money"])}
    for k, word in enumerate(["river", "money"]):
        assert decode(lines[f"rank of {word}"]["y"]).tolist() == lens.followed_ranks[k].tolist()
    # the answer's line carries its numbers; a followed line none, where they would run over each other
    assert "text" in lines[f"rank of {lens.final_token}"]
    # with a halo, readable where another line runs through a number
    assert lines[f"rank of {lens.final_token}"]["textfont"]["shadow"] == "auto"
    assert all("text" not in t for name, t in lines.items() if name != f"rank of {lens.final_token}")
    rank_axis = figure(at, "lens_rank")["layout"]["yaxis"]
    high = 10 ** rank_axis["range"][1] if rank_axis.get("type") == "log" else rank_axis["range"][1]
    assert high > lens.followed_ranks.max()
    # what was typed stays, and a run with nothing typed follows nothing
    assert at.text_input(key="lens_follow").value == "River, money riverbank"
    at.text_input(key="lens_follow").set_value("").run()
    assert len(figure(at, "lens_rank")["data"]) == 1 and not at.warning
    # the answer itself, followed, is its own line once, and five others beside it: neither the answer, nor a
    # second spelling of a piece, nor a word that can't be followed takes one of their places (each did, and
    # words with room left were said to be left out); words past those five are
    others = [w for w in ["the", "a", "of", "on", "we", "sat", "by"] if w != lens.final_token]
    typed = [lens.final_token, others[0].upper(), others[0], "riverbank", *others[1:]]
    typed += [others[1].upper(), lens.final_token.upper()]  # and after the cap: drawn already, not left out
    at.text_input(key="lens_follow").set_value(" ".join(typed)).run()
    names = [t["name"] for t in figure(at, "lens_rank")["data"]]
    assert names.count(f"rank of {lens.final_token}") == 1 and len(names) == len(set(names))
    assert set(names) == {f"rank of {w}" for w in [lens.final_token, *others[:5]]}
    assert any(f"left out: {', '.join(others[5:])}." in c.value.replace("\\", "") for c in at.caption)


def test_importance_without_a_mask_is_an_inline_message(make_app):
    at = open_view(make_app, "ablation", "the cat sat on the bank .")
    at.toggle(key="ablation_importance").set_value(True).run()
    assert not at.exception
    assert any("MASK" in str(i.value) for i in at.info)


def test_ablation_moves_the_vectors_of_later_layers_only(make_app, tiny_model):
    at = open_view(make_app, "ablation", TEXT)
    assert [i for i in at.info if i.value.startswith("Pick heads above")]  # not an empty view
    at.multiselect(key="ablation_heads").set_value(["2.1"]).run()
    assert not at.exception
    assert not [i for i in at.info if i.value.startswith("Pick heads above")]
    drift = decode(figure(at, "ablation_drift")["data"][0]["z"])
    assert np.allclose(drift[:2], 0.0) and drift[2:].max() > 0  # layers below the ablated one are untouched
    mask = np.ones((2, 4), dtype=np.float32)
    mask[1, 0] = 0
    expected = tiny_model.analyze(TEXT, head_mask=mask).hidden_states - tiny_model.analyze(TEXT).hidden_states
    np.testing.assert_allclose(drift, np.linalg.norm(expected, axis=-1), atol=1e-4)


def test_rollout_and_flow_draw_the_cores_numbers_and_are_solved_once_for_the_server(
    make_app, tiny_model, monkeypatch
):
    # The flow solver is pure Python with the GIL held: a slider move, or a second student on the same
    # sentence, must reuse the first solution rather than stall every other session again.
    solved = []
    core_flow = bert_core.attention_flow
    monkeypatch.setattr(bert_core, "attention_flow", lambda att: solved.append(1) or core_flow(att))
    at = open_view(make_app, "rollout", TEXT)
    expected_rollout = bert_core.attention_rollout(tiny_model.analyze(TEXT).attentions)
    expected_flow = core_flow(tiny_model.analyze(TEXT).attentions)
    last = tiny_model.config.num_hidden_layers - 1
    np.testing.assert_allclose(
        decode(figure(at, "rollout")["data"][0]["z"]), expected_rollout[last], atol=1e-5
    )
    np.testing.assert_allclose(decode(figure(at, "flow")["data"][0]["z"]), expected_flow[last], atol=1e-5)
    passes = at.session_state[cache.FORWARD_PASSES]
    at.slider(key="rollout_layer").set_value(1).run()
    assert not at.exception, [e.value for e in at.exception]
    np.testing.assert_allclose(decode(figure(at, "flow")["data"][0]["z"]), expected_flow[0], atol=1e-5)
    np.testing.assert_allclose(decode(figure(at, "rollout")["data"][0]["z"]), expected_rollout[0], atol=1e-5)
    other = open_view(make_app, "rollout", TEXT)  # another session, same sentence
    assert not other.exception
    assert len(solved) == 1
    assert at.session_state[cache.FORWARD_PASSES] == passes  # solving flow is not a run of the model


def test_ablation_changes_the_guesses_and_the_bank_curve_against_the_intact_model(make_app, tiny_model):
    at = open_view(make_app, "ablation", TEXT)
    at.multiselect(key="ablation_heads").set_value(["1.1", "2.3"]).run()
    assert not at.exception, [e.value for e in at.exception]
    mask = np.ones((2, 4), dtype=np.float32)
    mask[0, 0] = mask[1, 2] = 0
    table = [t for t in at.dataframe if "heads off" in t.value.columns][0].value
    expected = tiny_model.predict_masks(TEXT, top_k=5, head_mask=mask)[0]
    assert list(table["heads off"]) == expected.tokens
    assert list(table["intact"]) == tiny_model.predict_masks(TEXT, top_k=5)[0].tokens
    curves = figure(at, "ablation_banks")["data"]
    assert [c["name"] for c in curves] == ["intact", "heads off"]
    # Its two sentences are fixed, not the typed one: said under it.
    said = " ".join(c.value for c in at.caption).replace("\\", "")
    assert "We sat on the bank of the river and watched the water" in said


def test_roles_on_the_model_view_and_their_stability_over_the_presets(make_app, tiny_model):
    at = open_view(make_app, "roles", TEXT)
    # Each role its own flat colour, named on the colour bar and in the hover (a continuous scale marked 0 and 2)
    grid = figure(at, "roles_grid")
    roles = bert_core.head_roles(tiny_model.analyze(TEXT), style=tiny_model.info.piece_style)
    named = grid["data"][0]["colorbar"]["ticktext"]
    found = {r for row in roles.labels for r in row if r}
    unlabelled = any(not r for row in roles.labels for r in row)
    assert named == (["none"] if unlabelled else []) + sorted(found)
    assert grid["data"][0]["customdata"] == [[r or "none" for r in row] for row in roles.labels]  # the hover
    # written in each cell, readably: not told by colour alone. From `text`: plotly's heatmaps write no
    # customdata in a cell (every cell read "-", which only a browser showed)
    short = {"punctuation": "punct", "previous": "prev", None: ""}
    assert grid["data"][0]["text"] == [[short.get(r, r) for r in row] for row in roles.labels]
    written = grid["data"][1]  # over the cells, each in the ink its colour needs (charts.write_cells)
    assert written["mode"] == "text" and written["textfont"]["size"] >= 10
    assert written["text"] == [short[r] if r in short else r for row in roles.labels for r in row if r]
    assert decode(grid["data"][0]["z"]).tolist() == [
        [named.index(r or "none") for r in row] for row in roles.labels
    ]
    at.toggle(key="roles_stability").set_value(True).run()
    assert not at.exception, [e.value for e in at.exception]
    stable = [t for t in at.dataframe if "usual role" in t.value.columns][0].value
    assert len(stable) == 8 and stable["share of sentences"].between(0, 1).all()
    at = make_app("views/attention.py", a=TEXT, att_view="Model view (all heads)")
    assert not at.exception


def test_core_ablated_predictions_are_the_head_on_the_ablated_hidden_state(tiny_model):
    import torch

    mask = np.ones((2, 4), dtype=np.float32)
    mask[1, 1] = 0
    r = tiny_model.analyze(TEXT, head_mask=mask)
    position = r.input_ids.tolist().index(tiny_model.tokenizer.mask_token_id)
    with torch.inference_mode():
        logits = tiny_model.network.logits("mlm", torch.from_numpy(r.hidden_states[-1][position][None]))
    probs = torch.softmax(logits, -1)[0]
    guess = tiny_model.predict_masks(TEXT, top_k=1, head_mask=mask)[0]
    assert guess.token_ids[0] == int(probs.argmax()) and guess.probabilities[0] == pytest.approx(
        float(probs.max()), abs=1e-5
    )


def test_the_views_controls_survive_a_trip_to_another_page_and_view_and_come_from_the_link(make_app):
    at = open_view(make_app, "qk", TEXT)
    at.slider(key="qk_layer").set_value(1).run()
    at.selectbox(key="qk_head").set_value(2).run()
    at.selectbox(key="qk_token").set_value("3: on").run()
    at.switch_page("views/attention.py").run()
    at.switch_page(PAGE).run()
    at.radio(key="inside_view").set_value("lens").run()
    at.radio(key="inside_view").set_value("qk").run()
    assert not at.exception
    assert (at.slider(key="qk_layer").value, at.selectbox(key="qk_head").value) == (1, 2)
    assert at.selectbox(key="qk_token").value == "3: on"
    # A shared link opens the same view (AppTest does not write widget values back to the URL; the query
    # parameters here are what the browser's address bar would hold).
    # (layer 1 is the slider's minimum: the link holds it because the slider's own default is the start, 2)
    linked = make_app(PAGE, a=TEXT, inside_view="Query & key", qk_layer="1", qk_head="2", qk_token="3: on")
    assert (linked.slider(key="qk_layer").value, linked.selectbox(key="qk_head").value) == (1, 2)
    assert linked.selectbox(key="qk_token").value == "3: on"


@pytest.mark.parametrize(("view", "key"), [("qk", "qk_token"), ("lens", "lens_position")])
def test_a_kept_token_the_new_text_has_elsewhere_starts_over(make_app, tiny_model, view, key):
    """A position the new text still has holds another token: the choice starts over rather than keep the
    position, whose old label the browser went on showing above the new token's numbers."""
    at = open_view(make_app, view, TEXT)
    at.selectbox(key=key).set_value("6: of").run()
    assert at.selectbox(key=key).value == "6: of"
    at.text_area(key="a").set_value("the [MASK] barked at the cat .").run()
    assert not at.exception
    chosen = at.selectbox(key=key).value
    assert chosen != "6: of" and chosen in at.selectbox(key=key).options
    if view == "lens":  # back to the new text's mask, and explained for it
        assert chosen == "2: [MASK]"
        lens = tiny_model.logit_lens("the [MASK] barked at the cat .", 2)
        table = [t for t in at.dataframe if "top prediction" in t.value.columns][0].value
        assert list(table["top prediction"]) == [t[0] for t in lens.top_tokens]


def test_the_logit_lens_follows_a_mask_typed_after_it_opened_unless_a_position_was_picked(make_app):
    """The lens stayed on "1: we", its start for a text without a mask, once a [MASK] was typed (as its caption
    says to), while a fresh link to the same text opened on the mask."""
    at = open_view(make_app, "lens", "we sat on the bank of the river .")
    assert at.selectbox(key="lens_position").value == "1: we"
    at.text_area(key="a").set_value("we sat on the [MASK] of the river .").run()
    assert at.selectbox(key="lens_position").value == "5: [MASK]"
    # a position the user picked is kept while the text still has it
    at.selectbox(key="lens_position").set_value("2: sat").run()
    at.text_area(key="a").set_value("we sat on the [MASK] by the river .").run()
    assert at.selectbox(key="lens_position").value == "2: sat"


def test_pll_can_mask_the_rest_of_each_word(make_app, tiny_model):
    text = "the unwanted cat sat ."
    at = open_view(make_app, "pll", text)
    assert at.radio(key="pll_scoring").value == "piece"
    at.radio(key="pll_scoring").set_value("word_l2r").run()
    assert not at.exception
    scored = tiny_model.pseudo_log_likelihood(text, scoring="word_l2r")
    plain = tiny_model.pseudo_log_likelihood(text)
    assert float(at.metric[0].value) == pytest.approx(scored.total, abs=0.01)
    bars = figure(at, "pll_strip")["data"][0]["x"]
    assert bars == pytest.approx([lp for _, lp in scored.pieces], abs=1e-7)
    # the random tiny model's guesses are nearly flat, so the pieces of "unwanted" move only a little
    assert max(abs(b - lp) for b, (_, lp) in zip(bars, plain.pieces, strict=True)) > 1e-5
    assert "later pieces masked" in figure(at, "pll_strip")["layout"]["title"]["text"]
    ranked = [t for t in at.dataframe if "PLL (nats)" in t.value.columns][0].value
    for line, total in zip(ranked["sentence"], ranked["PLL (nats)"], strict=True):
        assert total == pytest.approx(
            tiny_model.pseudo_log_likelihood(line, scoring="word_l2r").total, abs=1e-6
        )
    # a shared link keeps it (the link holds the options' names, as Streamlit writes them)
    linked = make_app(
        PAGE,
        a=text,
        inside_view="Sentence scores (pseudo-likelihood)",
        pll_scoring="with the later pieces of its word",
    )
    assert linked.radio(key="pll_scoring").value == "word_l2r"
    assert float(linked.metric[0].value) == pytest.approx(scored.total, abs=0.01)


def test_typed_minimal_pairs_survive_a_visit_to_another_page(make_app):
    at = open_view(make_app, "pll", TEXT)
    box = [t for t in at.text_area if t.key.startswith("pll_text_")][0]
    box.set_value("the cat sat .\nthe sat cat .").run()
    at.switch_page("views/tokens.py").run()
    at.switch_page(PAGE).run()
    assert not at.exception
    assert at.text_area(key=box.key).value == "the cat sat .\nthe sat cat ."
    ranked = [t for t in at.dataframe if "PLL (nats)" in t.value.columns][0].value
    assert set(ranked["sentence"]) == {"the cat sat .", "the sat cat ."}


def test_ablation_says_why_a_typed_mask_has_no_guesses_instead_of_asking_for_one(make_app, tiny_model):
    limit = tiny_model.tokenizer.max_length
    text = "the cat sat . " * (limit // 3) + "the [MASK] ran ."  # the mask lies past the model's positions
    at = open_view(make_app, "ablation", text)
    at.multiselect(key="ablation_heads").set_value(["1.1"]).run()
    assert not at.exception, [e.value for e in at.exception]
    captions = " ".join(c.value for c in at.caption).replace("\\", "")
    assert "Type a [MASK]" not in captions
    try:
        tiny_model.predict_masks(text, top_k=5)
    except bert_core.BertScopeError as exc:
        from app import ui

        assert ui.user_message(exc).replace("\\", "")[:40] in captions
    else:
        pytest.fail("the core was expected to refuse a mask past the positions")


def test_head_importance_map_is_white_at_no_change(make_app, tiny_model):
    text = "the cat sat on the [MASK] ."
    at = open_view(make_app, "ablation", text)
    at.toggle(key="ablation_importance").set_value(True).run()
    assert not at.exception
    trace = figure(at, "ablation_importance_map")["data"][0]
    assert trace["zmid"] == 0  # a drop of 0 is white; help is blue, harm red
    assert trace["colorbar"]["title"]["text"] == "nats"  # the bar's "0.8" read bare: 0.8 of what?
    np.testing.assert_allclose(decode(trace["z"]), tiny_model.head_importance(text).drop, atol=1e-5)


def test_hidden_states_leave_layer_0s_cosine_to_the_previous_layer_blank(make_app, tiny_model):
    """Layer 0 has no previous layer: its row is undefined (a blank cell), not a cosine of 0."""
    at = open_view(make_app, "hidden", TEXT)
    at.radio(key="hidden_measure").set_value("cosine to previous layer").run()
    assert not at.exception, [e.value for e in at.exception]
    z = np.asarray(decode(figure(at, "hidden_trajectory")["data"][0]["z"]), dtype=np.float64)
    expected = bert_core.layer_trajectory(tiny_model.analyze(TEXT)).cosine_to_previous
    assert np.isnan(z[0]).all() and np.isnan(expected[0]).all()
    np.testing.assert_allclose(z[1:], expected[1:], atol=1e-5)


def test_hidden_states_norm_scale_starts_at_zero(make_app):
    """Stretched to the data's range (13.3 to 14.2), the shortest vector was drawn white: a vector of no length."""
    at = open_view(make_app, "hidden", TEXT)
    trace = figure(at, "hidden_trajectory")["data"][0]
    z = np.asarray(decode(trace["z"]), dtype=np.float64)
    assert z.min() > 0.5 and trace["zmin"] == 0


def test_hidden_states_pca_writes_a_repeated_piece_with_its_position(make_app):
    """Two dots both written "the" did not say which was which."""
    at = open_view(make_app, "hidden", TEXT)
    spec = figure(at, "hidden_pca")
    written = [t for trace in spec["data"] for t in trace.get("text", [])] + [
        a["text"] for a in spec["layout"].get("annotations", [])
    ]
    assert "4: the" in written and "7: the" in written and "the" not in written
    assert "river" in written and "[CLS]" in written  # a piece that occurs once stays short


def test_minimal_pairs_name_the_lines_scored_with_unknown_pieces(make_app):
    at = open_view(make_app, "pll", TEXT)
    box = [t for t in at.text_area if t.key.startswith("pll_text_")][0]
    box.set_value("the cat sat on the bank .\n\u2603 \u2603 .\nthe cat sat on the [UNK] .").run()
    ranked = [t for t in at.dataframe if "PLL (nats)" in t.value.columns][0].value
    assert len(ranked) == 3  # still ranked; the [UNK] typed on purpose is not named below
    said = [c.value.replace("\\", "") for c in at.caption if "Scored with [UNK]" in c.value.replace("\\", "")]
    assert len(said) == 1 and said[0].endswith(": \u2603 \u2603 .")


def test_sentence_a_score_says_what_its_unknown_pieces_add(make_app, tiny_model):
    """The page's note said the snowmen are read as [UNK]; the total counted the model's guesses of [UNK]."""
    text = "the cat sat on the \u2603 \u2603 ."
    at = open_view(make_app, "pll", text)
    _, pieces = tiny_model.pseudo_log_likelihood(text)
    unk = sum(lp for piece, lp in pieces if piece == "[UNK]")
    captions = [c.value.replace("\\", "") for c in at.caption]
    said = [c for c in captions if "unknown piece, not of what" in c]
    assert len(said) == 1 and f"2 [UNK] pieces ({unk:.2f} nats)" in said[0], said
    at = open_view(make_app, "pll", "the cat sat on the [UNK] .")  # typed on purpose: nothing to say
    assert not [c for c in at.caption if "unknown piece, not of what" in c.value.replace("\\", "")]


def test_sentence_scores_leave_typed_special_tokens_out_and_say_so(make_app, tiny_model):
    """A typed [SEP] was scored as a piece, and a minimal-pair line with one climbed the ranking on the term."""
    text = "the cat [SEP] sat on the bank ."
    at = open_view(make_app, "pll", text)
    said = " ".join(str(c.value) for c in at.caption).replace("\\", "")
    assert "Sentence A has a typed [SEP]" in said and "can't be compared" in said
    assert "stays masked" not in said  # no [MASK] was typed
    strip = figure(at, "pll_strip")["data"][0]
    assert len(strip["y"]) == len(tiny_model.pseudo_log_likelihood(text).pieces) == 7  # no [SEP] among them
    preset = at.selectbox(key="pll_preset").value
    at.text_area(key=f"pll_text_{preset.replace(' ', '_')}").set_value(
        "the cat sat on the bank .\nthe cat [SEP] sat on the bank ."
    ).run()
    ranked = [t for t in at.dataframe if "PLL (nats)" in t.value.columns][0].value
    assert list(ranked["sentence"]) == ["the cat sat on the bank ."]
    left_out = [str(i.value).replace("\\", "") for i in at.info if "Left out of the ranking" in str(i.value)]
    assert left_out[0].startswith("Left out of the ranking, as it has [SEP] typed")  # what it has, by name


def test_sentence_scores_say_a_typed_mask_is_left_out_and_rank_only_whole_sentences(make_app):
    at = open_view(make_app, "pll", "the cat sat on the [MASK] .")
    said = " ".join(str(c.value) for c in at.caption).replace("\\", "")
    assert "typed [MASK]" in said and "can't be compared" in said
    preset = at.selectbox(key="pll_preset").value
    at.text_area(key=f"pll_text_{preset.replace(' ', '_')}").set_value(
        "the cat sat on the bank .\nthe cat sat on the [MASK] .\nthe cat sat on the <mask> ."
    ).run()
    assert not at.exception
    ranked = [t for t in at.dataframe if "PLL (nats)" in t.value.columns][0].value
    # a line with a hole climbs nothing, RoBERTa's spelling of it (a hole to the scores too) included
    assert list(ranked["sentence"]) == ["the cat sat on the bank ."]
    assert any("Left out of the ranking" in str(i.value) for i in at.info)
    at.text_area(key=f"pll_text_{preset.replace(' ', '_')}").set_value(
        "the cat sat on the bank .\nthe [MASK] to the cabinet is on the table by the door ."
    ).run()
    left_out = [str(i.value).replace("\\", "") for i in at.info if "Left out of the ranking" in str(i.value)]
    assert left_out[0].endswith(
        ": the [MASK] to the cabinet is on the tab…"
    )  # cut mid-word, it read as a typo
    at = open_view(make_app, "pll", "[MASK]")
    assert any("Nothing in sentence A to score" in str(i.value).replace("\\", "") for i in at.info)
    assert not at.exception
    assert at.metric[0].value == "\u2014"  # no score, not a perfect 0.00


def test_minimal_pairs_leave_out_lines_the_model_cuts(make_app, tiny_model):
    """Two long lines differing only past the model's length once tied on the pieces it read, silently."""
    at = open_view(make_app, "pll", TEXT)
    long = " ".join(["the cat sat on the mat ."] * 60)
    assert tiny_model.encode(long).truncated
    box = [t for t in at.text_area if t.key.startswith("pll_text_")][0]
    box.set_value(f"{long} dog\n{long} cat\nthe cat sat .").run()
    assert not at.exception
    ranked = [t for t in at.dataframe if "PLL (nats)" in t.value.columns][0].value
    assert list(ranked["sentence"]) == ["the cat sat ."]
    left_out = [i.value for i in at.info if "Left out of the ranking" in i.value]
    assert len(left_out) == 1 and f"at most {tiny_model.tokenizer.max_length} pieces" in left_out[0]


def test_the_untrained_positions_note_speaks_of_the_lines_ranked(make_app):
    """The demo model was pre-trained on at most 42 pieces: a line left out for being cut must not make the
    page warn that "the longest sentence" reaches positions it never learned."""
    at = make_app(PAGE, a=TEXT, model="@demo")
    at.radio(key="inside_view").set_value("pll").run()
    box = [t for t in at.text_area if t.key.startswith("pll_text_")][0]
    box.set_value(" ".join(["the cat sat on the mat ."] * 60) + "\nthe cat sat .").run()
    assert not at.exception
    assert [i for i in at.info if "Left out of the ranking" in i.value]
    assert not [w for w in at.warning if "The longest sentence" in w.value]
    box.set_value(" ".join(["the cat sat on the mat ."] * 8) + "\nthe cat sat .").run()  # ~50 pieces, ranked
    assert [w for w in at.warning if "The longest sentence" in w.value]


def test_a_link_reproduces_the_minimal_pairs_and_a_bad_line_is_named_by_its_number(make_app):
    lines = "she ate an egg .\n\u200b\u200b\u200b\nshe ate a egg ."
    at = make_app(
        PAGE,
        a=TEXT,
        inside_view="Sentence scores (pseudo-likelihood)",
        pll_preset="article",
        pll_text_article=lines,
    )
    assert not at.exception and at.selectbox(key="pll_preset").value == "article"
    ranked = [t for t in at.dataframe if "PLL (nats)" in t.value.columns][0].value
    assert sorted(ranked["sentence"]) == ["she ate a egg .", "she ate an egg ."]
    said = [str(i.value) for i in at.info if "empty once" in str(i.value)]
    assert len(said) == 1 and said[0].startswith("Sentence 2 is empty") and "accents" in said[0]


def test_query_key_rows_carry_one_number_each_when_thinned(make_app):
    """Thinned, the rows were labelled with their own index too: "76: q×k 3: drifted"."""
    long = " ".join(["the boat drifted toward the bank of the river ."] * 5)
    at = open_view(make_app, "qk", long)
    rows = figure(at, "qk_vectors")["layout"]["yaxis"]["ticktext"]
    assert len(rows) < 1 + 2 * 52 and all(r.startswith(("query ", "key ", "q×k ")) for r in rows)


def test_a_sentence_too_long_to_score_whole_still_leaves_the_minimal_pairs(make_app):
    """Its score would be of the pieces the model reads only: said, and the ranking below, which does not read
    sentence A, is still there."""
    at = open_view(make_app, "pll", " ".join(["the cat sat on the bank"] * 200))
    said = " ".join(e.value for e in at.error).replace("\\", "")
    assert "longer than" in said and "'the cat sat on the bank the cat sat on the bank the cat sat…'" in said
    assert "Minimal pairs" in [h.value for h in at.subheader]
    assert not [m for m in at.metric if "PLL of sentence A" in m.label]  # no partial total shown as its score
    assert at.table or at.dataframe  # the preset's lines ranked


def test_a_link_may_name_the_view_by_its_short_key(make_app):
    """Links hold the view's label ("Logit lens"); a hand-written "inside_view=lens" opened Query & key."""
    at = make_app(PAGE, a=TEXT, inside_view="lens")
    assert not at.exception and at.radio(key="inside_view").value == "lens"
    # and the address is rewritten as the page's own links write it: a reload or a copied address kept the view
    assert at.query_params["inside_view"] in ("Logit lens", ["Logit lens"])
    at.radio(key="inside_view").set_value("pll").run()  # and the user's choice then wins
    assert at.radio(key="inside_view").value == "pll"
    assert make_app(PAGE, a=TEXT, inside_view="Logit lens").radio(key="inside_view").value == "lens"
    for other_case in ("Logit Lens", "LENS"):  # these too opened Query & key without a word
        assert make_app(PAGE, a=TEXT, inside_view=other_case).radio(key="inside_view").value == "lens"
    # a name that is none of them is said not to be used, where it opened the first view as if linked
    at = make_app(PAGE, a=TEXT, inside_view="lense")
    said = " ".join(c.value for c in at.caption).replace("\\", "")
    assert "The link's inside_view=lense is not one of this page's choices, so it is not used." in said
    assert "is not one of this page's choices" not in " ".join(c.value for c in at.run().caption)


def test_a_link_to_a_layer_or_head_the_model_lacks_says_so(make_app):
    """The view opened on its start without a word: a link made on bert-base looked like it meant layer 1."""
    at = make_app(PAGE, a=TEXT, inside_view="Query & key", qk_layer="10", qk_head="7")
    said = " ".join(c.value for c in at.caption)
    assert (
        "The link asks for layer 10, which this model doesn't have (layers 1 to 2): showing layer 2" in said
    )
    assert "The link asks for head 7, which this model doesn't have (heads 1 to 4)" in said
    at.slider(key="qk_layer").set_value(2).run()  # said once, as the link is read
    assert "The link asks" not in " ".join(c.value for c in at.caption)
    at = make_app(PAGE, a=TEXT, inside_view="Query & key", qk_layer="2")
    assert "The link asks" not in " ".join(c.value for c in at.caption)
    # every slider a link names a layer for: Hidden states, Word senses, Compare (each side)
    for page, query, said in (
        (
            PAGE,
            {"inside_view": "Hidden states by layer", "hidden_layer": "99"},
            "layer 99, which this model doesn't have (layers 0 to 2): showing layer 2",
        ),
        (
            "views/word_senses.py",
            {"senses_layer": "99"},
            "layer 99, which this model doesn't have (layers 0 to 2): showing layer 2",
        ),
        (
            "views/compare.py",
            {"cmp_layer_left": "99", "cmp_head_left": "9"},
            "doesn't have (heads 1 to 4): showing the mean",
        ),
    ):
        at = make_app(page, a=TEXT, **query)
        assert said in " ".join(c.value for c in at.caption), page
    # Compare's notes, above both columns, name the model they mean
    said = " ".join(c.value for c in at.caption).replace("\\", "")
    left = at.slider(key="cmp_layer_left").label.removeprefix("Layer of ")
    assert f"head 9, which {left} doesn't have" in said and f"layer 99, which {left} doesn't have" in said


def test_the_ablation_hint_promises_masked_word_guesses_only_where_there_is_a_head_to_guess(make_app):
    """A QA model's page said the picked heads' effect on the masked-word guesses would be drawn, beside a box
    saying it has no MLM head."""
    hint = [
        i.value
        for i in make_app(PAGE, model="@demo-qa", inside_view="ablation").info
        if "Pick heads" in i.value
    ]
    assert hint and "masked-word" not in hint[0] and "the two 'bank's" in hint[0]
    hint = [
        i.value for i in make_app(PAGE, model="@demo", inside_view="ablation").info if "Pick heads" in i.value
    ]
    assert hint and "masked-word guesses" in hint[0]


def test_in_large_text_the_lens_table_leaves_the_followed_ranks_to_the_chart(
    make_app, tiny_model, figure_data
):
    """Four followed words' columns ran past a 1024 px projector's page in Large text, behind a scroll bar."""
    at = open_view(make_app, "lens", TEXT)
    at.text_input(key="lens_follow").set_value("river money").run()
    at.toggle(key="large").set_value(True).run()
    [shown] = [t for t in at.table if "top prediction" in t.value.columns]
    lens = tiny_model.logit_lens(TEXT, 5, follow=["river", "money"])
    answer = [c for c in shown.value.columns if c.startswith("rank of")]
    assert len(answer) == 1 and lens.final_token in answer[0].replace("\\", "")
    assert any("The followed words' ranks: the chart below" in c.value for c in at.caption)
    csv = figure_data["lens_rank"]  # every rank still in the chart's CSV
    assert {"rank of 'river'", "rank of 'money'"} <= set(csv.columns)
    at.toggle(key="large").set_value(False).run()  # in normal text the table has them all
    assert {"rank of 'river'", "rank of 'money'"} <= set(at.dataframe[0].value.columns)


def test_the_lens_warns_of_as_many_unfollowable_words_as_it_could_draw_then_counts_the_rest(make_app):
    """Every typed word is read as its piece now, so a box of 40 unusable words made 40 warnings."""
    at = open_view(make_app, "lens", TEXT)
    at.text_input(key="lens_follow").set_value(" ".join(f"riverbank{i}" for i in range(9))).run()
    assert not at.exception and len(at.warning) == 5
    assert any("4 more of the words typed can't be followed either." in c.value for c in at.caption)


def test_the_views_say_what_they_compute_where_a_reader_could_take_it_otherwise(make_app):
    """From the faithfulness pass: numbers that matched a reference, captions that left room for another one."""
    at = open_view(make_app, "pll")
    assert "sentence B is not read" not in " ".join(c.value for c in at.caption)
    at.sidebar.text_area(key="b").set_value("They were left there.").run()
    # every other view reads the pair: A's score is A's alone, and said so
    assert "Sentence A is scored on its own: sentence B is not read" in " ".join(c.value for c in at.caption)
    said = " ".join(c.value for c in open_view(make_app, "lens").caption)
    assert "The MLM head, whole (its dense layer, GELU and LayerNorm, then the projection" in said
    # the ablation's drift rows run from layer 0, which that view never named
    assert "Layer 0 is the embedding output" in " ".join(
        c.value for c in open_view(make_app, "ablation").caption
    )
