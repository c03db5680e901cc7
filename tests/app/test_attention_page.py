"""The Attention page: figure data equals the core's attention; view changes never rerun the model."""

from __future__ import annotations

import numpy as np
import pytest

import bert_core
from tests.app.conftest import decode, figure, hover

PAGE = "views/attention.py"
TEXT = "the bank by the river"


@pytest.fixture
def expected(tiny_checkpoint):
    return bert_core.load_pretrained(tiny_checkpoint).analyze(TEXT)


def heat(at) -> np.ndarray:
    return decode(figure(at, "att_heatmap")["data"][0]["z"]).astype(np.float32)


def test_heatmap_is_the_cores_attention_and_layer_change_runs_nothing(make_app, expected):
    at = make_app(PAGE, a=TEXT)
    assert at.session_state["forward_passes"] == 1
    at.slider(key="layer").set_value(2).run()
    at.selectbox(key="head").set_value(3).run()
    np.testing.assert_allclose(heat(at), expected.attentions[1, 2], atol=1e-6)
    at.slider(key="layer").set_value(1).run()
    np.testing.assert_allclose(heat(at), expected.attentions[0, 2], atol=1e-6)
    at.toggle(key="att_hide_special").set_value(True).run()
    at.radio(key="att_view").set_value("Head view").run()
    at.toggle(key="large").set_value(True).run()
    assert at.session_state["forward_passes"] == 1  # only the first run computed anything
    assert not at.exception and not at.error


def test_mean_of_heads_and_token_labels(make_app, expected):
    at = make_app(PAGE, a=TEXT)
    np.testing.assert_allclose(heat(at), expected.attentions[0].mean(axis=0), atol=1e-6)
    spec = figure(at, "att_heatmap")
    assert spec["layout"]["yaxis"]["ticktext"] == expected.tokens
    # where learners meet attention first, it says a weight is not importance, under every view
    for view in ("Heatmap", "Head view", "Model view"):
        at.radio(key="att_view").set_value(view).run()
        assert any("not how much that token matters" in c.value for c in at.caption), view


def test_a_link_opens_the_same_layer_and_head(make_app, expected):
    at = make_app(PAGE, a=TEXT, layer="2", head="4")
    assert at.slider(key="layer").value == 2
    np.testing.assert_allclose(heat(at), expected.attentions[1, 3], atol=1e-6)


def test_hide_specials_and_merge_words(make_app, tiny_checkpoint):
    text = "the dogs sat"  # "dogs" -> dog ##s in the tiny vocabulary
    r = bert_core.load_pretrained(tiny_checkpoint).analyze(text)
    at = make_app(PAGE, a=text, head="1")
    at.toggle(key="att_hide_special").set_value(True).run()
    keep = [i for i, s in enumerate(r.special_tokens_mask) if not s]
    np.testing.assert_allclose(heat(at), r.attentions[0, 0][np.ix_(keep, keep)], atol=1e-6)
    at.toggle(key="att_hide_special").set_value(False).run()
    at.toggle(key="att_merge").set_value(True).run()
    spec = figure(at, "att_heatmap")
    words = spec["layout"]["yaxis"]["ticktext"]
    assert "dogs" in words and len(words) == len(r.tokens) - (r.tokens.count("##s"))
    np.testing.assert_allclose(heat(at).sum(axis=1), 1.0, atol=1e-5)
    said = " ".join(c.value for c in at.caption).replace("\\", "")
    assert "The numbers count words here, not pieces." in said  # "12: ." unmerged is "10: ." merged


def test_hiding_the_specials_hides_a_typed_sep_too(make_app, tiny_checkpoint):
    """The model reads a typed [SEP] as the one the tokenizer adds, and it draws attention as that one does; it
    stayed on the map with the toggle on, merged into words or not."""
    text = "the cat [SEP] the dog"
    r = bert_core.load_pretrained(tiny_checkpoint).analyze(text)
    assert r.tokens.count("[SEP]") == 2 and r.special_tokens_mask.sum() == 2  # one typed, one added
    at = make_app(PAGE, a=text, head="1")
    at.toggle(key="att_hide_special").set_value(True).run()
    keep = [i for i, t in enumerate(r.tokens) if t not in ("[CLS]", "[SEP]")]
    np.testing.assert_allclose(heat(at), r.attentions[0, 0][np.ix_(keep, keep)], atol=1e-6)
    at.toggle(key="att_merge").set_value(True).run()
    assert not any("[SEP]" in name for name in figure(at, "att_heatmap")["layout"]["yaxis"]["ticktext"])


def test_pair_directions(make_app, tiny_checkpoint):
    r = bert_core.load_pretrained(tiny_checkpoint).analyze("the cat", "the dog")
    at = make_app(PAGE, a="the cat", b="the dog", head="2")
    at.radio(key="att_direction").set_value("A→B").run()
    rows = [i for i, s in enumerate(r.sequence_ids) if s == 0]
    cols = [i for i, s in enumerate(r.sequence_ids) if s == 1]
    np.testing.assert_allclose(heat(at), r.attentions[0, 1][np.ix_(rows, cols)], atol=1e-6)


def test_model_view_has_every_layer_and_head(make_app, expected):
    at = make_app(PAGE, a=TEXT, att_view="Model view")
    spec = figure(at, "att_model_view")
    pick = next(t for t in spec["data"] if t.get("name") == "pick")
    assert len(decode(pick["customdata"]).reshape(-1, 2)) == expected.num_layers * expected.num_heads
    mosaic = decode(spec["data"][0]["z"]).astype(np.float32)
    s = len(expected.tokens)
    first = expected.attentions[0, 0]
    np.testing.assert_allclose(mosaic[:s, :s], first / first.max(), atol=1e-6)
    # the words under the maps are the heads' roles, and the page says what they are
    assert any(r for row in bert_core.head_roles(expected).labels for r in row)
    assert "whatever the options here hide (Inside the model › Head roles" in " ".join(
        c.value for c in at.caption
    )
    # the layer slider and head box still say something here: the chosen map, or layer, is outlined
    (outline,) = spec["layout"]["shapes"]
    at.slider(key="layer").set_value(2).run()
    (layer_2,) = figure(at, "att_model_view")["layout"]["shapes"]
    assert layer_2["y0"] > outline["y0"] and layer_2["x1"] - layer_2["x0"] > s * expected.num_heads
    at.selectbox(key="head").set_value(2).run()
    (head_2,) = figure(at, "att_model_view")["layout"]["shapes"]
    assert head_2["y0"] == layer_2["y0"] and head_2["x1"] - head_2["x0"] == s


def test_head_view_isolates_a_token(make_app, expected):
    at = make_app(PAGE, a=TEXT, att_view="Head view", head="1")
    at.selectbox(key="att_focus").set_value(at.selectbox(key="att_focus").options[2]).run()
    spec = figure(at, "att_head_view")
    line_traces = [t for t in spec["data"] if t.get("mode") == "lines"]
    ys = [y for t in line_traces for y in decode(t["y"]).tolist() if y is not None]
    assert set(ys[0::2]) == {1}  # every line starts at the isolated token (row 1)


def test_head_view_isolates_what_attends_to_a_token(make_app, expected):
    at = make_app(PAGE, a=TEXT, att_view="Head view", head="2")
    box = at.selectbox(key="att_focus")
    target = next(o for o in box.options if o.startswith("… → 3:"))
    box.set_value(target).run()
    spec = figure(at, "att_head_view")
    ys = [
        y for t in spec["data"] if t.get("mode") == "lines" for y in decode(t["y"]).tolist() if y is not None
    ]
    assert set(ys[1::2]) == {3} and sorted(ys[0::2]) == list(range(len(expected.tokens)))
    # the line widths come from that column of head 2's map: the widest line starts at its largest weight
    column = expected.attentions[0, 1][:, 3]
    widest = max((t for t in spec["data"] if t.get("mode") == "lines"), key=lambda t: t["line"]["width"])
    assert int(np.argmax(column)) in decode(widest["y"]).tolist()[0::3]


def test_a_stale_isolated_token_falls_back_to_all(make_app):
    at = make_app(PAGE, a=TEXT, att_view="Head view")
    at.selectbox(key="att_focus").set_value(at.selectbox(key="att_focus").options[-1]).run()
    at.sidebar.text_area[0].set_value("a short one").run()
    assert not at.exception
    assert at.selectbox(key="att_focus").value == "(all tokens)"


def test_hiding_the_specials_keeps_the_isolated_token_and_its_own_number(make_app):
    """The numbers are the tokens' own, as the CSV's and every other page's: hiding [CLS] renumbered them from
    the first shown token, so "the" was 0 here and 1 everywhere else."""
    at = make_app(PAGE, a=TEXT, att_view="Head view")
    box = at.selectbox(key="att_focus")
    box.set_value(next(o for o in box.options if o.startswith("3: "))).run()
    chosen = at.selectbox(key="att_focus").value
    at.toggle(key="att_hide_special").set_value(True).run()  # [CLS] goes: the token keeps its number
    assert not at.exception and at.selectbox(key="att_focus").value == chosen
    assert not any(o.startswith("0: ") for o in at.selectbox(key="att_focus").options)
    at.toggle(key="att_hide_special").set_value(False).run()
    assert at.selectbox(key="att_focus").value == chosen
    at.radio(key="att_view").set_value("Heatmap").run()
    at.toggle(key="att_hide_special").set_value(True).run()
    first = hover(figure(at, "att_heatmap")["data"][0], 0, 0)
    assert first.startswith("1: ") and " → 1: " in first  # the first word is 1, as in the CSV


def test_out_of_range_layer_in_the_link_is_harmless(make_app):
    at = make_app(PAGE, a=TEXT, layer="20", head="9")
    assert not at.exception and not at.error
    assert figure(at, "att_heatmap")
    # Back to layer 1, which is also what the link opens on: Streamlit leaves a layer it rejects out of the
    # URL. (Clamped to the last layer, the page once showed layer 2 while its link opened layer 1.)
    assert at.slider(key="layer").value == 1
    assert figure(at, "att_heatmap")["layout"]["title"]["text"].startswith("Layer 1")
    # and says so: a link made on a bigger model looked as if it meant layer 1
    said = " ".join(c.value for c in at.caption)
    assert (
        "The link asks for layer 20, which this model doesn't have (layers 1 to 2): showing layer 1" in said
    )
    assert "The link asks for head 9, which this model doesn't have (heads 1 to 4): showing the mean" in said
    # a view named by hand, in any case, opens that view
    for given, shown in (("head view", "Head view"), ("MODEL", "Model view"), ("heatmap", "Heatmap")):
        assert make_app(PAGE, a=TEXT, att_view=given).radio(key="att_view").value == shown


def test_a_layer_the_new_model_lacks_starts_over_at_layer_1(make_app, tiny_checkpoint):
    at = make_app(PAGE, a=TEXT, model="@demo", layer="4")
    assert at.slider(key="layer").value == 4
    at.sidebar.selectbox(key="model").set_value(str(tiny_checkpoint)).run()  # 2 layers
    assert not at.exception
    assert at.slider(key="layer").value == 1
    assert figure(at, "att_heatmap")["layout"]["title"]["text"].startswith("Layer 1")


def test_merged_word_of_several_pieces_sums_its_columns(make_app, tiny_checkpoint):
    text = "the unwanted dog"  # "unwanted" -> un ##want ##ed in the tiny vocabulary
    r = bert_core.load_pretrained(tiny_checkpoint).analyze(text)
    start = r.tokens.index("un")
    assert r.tokens[start : start + 3] == ["un", "##want", "##ed"]
    at = make_app(PAGE, a=text, head="2", layer="2")
    at.toggle(key="att_merge").set_value(True).run()
    words = figure(at, "att_heatmap")["layout"]["yaxis"]["ticktext"]
    assert words == ["[CLS]", "the", "unwanted", "dog", "[SEP]"]
    att = r.attentions[1, 1]  # (S, S)
    piece = list(range(start, start + 3))
    groups = [[i] for i in range(start)] + [piece] + [[i] for i in range(start + 3, len(r.tokens))]
    expected = np.array([[att[np.ix_(g, h)].sum(axis=1).mean() for h in groups] for g in groups])
    np.testing.assert_allclose(heat(at), expected, atol=1e-6)
    # column 'unwanted' is the sum of its three pieces' columns (row of [CLS] as a spot check)
    assert heat(at)[0, 2] == pytest.approx(att[0, piece].sum(), abs=1e-6)


def test_directions_say_that_special_tokens_are_left_out(make_app):
    at = make_app(PAGE, a="the cat", b="the dog")
    at.radio(key="att_direction").set_value("B→A").run()
    notes = " ".join(c.value for c in at.caption)
    assert "belong to neither sentence" in notes
    at.toggle(key="att_hide_special").set_value(True).run()
    assert "belong to neither sentence" not in " ".join(c.value for c in at.caption)


def test_every_page_works_with_one_layer_and_one_head(make_app, tmp_path):
    from app.registry import PAGES
    from tests.conftest import make_checkpoint

    ckpt = make_checkpoint(
        tmp_path / "one", "pretraining", num_hidden_layers=1, num_attention_heads=1, hidden_size=32
    )
    at = make_app(model=str(ckpt), a="the bank by the river", b="the cat")
    assert "1 layer ·" in " ".join(c.value for c in at.sidebar.caption)  # not "1 layers"
    for spec in PAGES:
        at.switch_page(spec.file).run()
        assert not at.exception, (spec.file, [e.value for e in at.exception])
        assert not at.error, (spec.file, [e.value for e in at.error])
    at.switch_page(PAGE).run()
    assert "single layer" in " ".join(c.value for c in at.caption)
    for view in ("Heatmap", "Head view", "Model view"):
        at.radio(key="att_view").set_value(view).run()
        assert not at.exception and not at.error


def test_head_view_can_draw_every_head_at_once(make_app, expected):
    at = make_app(PAGE, a=TEXT, att_view="Head view", layer="2")
    at.toggle(key="att_all_heads").set_value(True).run()
    assert not at.exception
    assert at.selectbox(key="head").disabled  # the single-head choice does nothing here
    spec = figure(at, "att_head_view")
    groups = {t.get("legendgroup") for t in spec["data"] if t.get("mode") == "lines"}
    assert groups == {f"head {h + 1}" for h in range(expected.num_heads)}
    assert spec["layout"]["title"]["text"] == f"Layer 2, all {expected.num_heads} heads"
    # head 3's widest line ends where its map is largest, in head 3's lane
    lines = [t for t in spec["data"] if t.get("legendgroup") == "head 3" and t.get("showlegend") is False]
    widest = max(lines, key=lambda t: t["line"]["width"])
    att = expected.attentions[1, 2]
    i, j = np.unravel_index(np.argmax(att), att.shape)
    ys = decode(widest["y"]).tolist()
    pairs = {(round(a), round(b)) for a, b in zip(ys[0::3], ys[1::3], strict=True)}
    assert (i, j) in pairs


def test_every_head_view_draws_the_heads_chosen(make_app, expected):
    at = make_app(PAGE, a=TEXT, att_view="Head view")
    at.toggle(key="att_all_heads").set_value(True).run()
    at.multiselect(key="att_heads_shown").set_value([2, 4]).run()
    assert not at.exception
    spec = figure(at, "att_head_view")
    legend = [
        t["name"] for t in spec["data"] if t.get("mode") == "lines" and t.get("showlegend") is not False
    ]
    assert legend == ["head 2", "head 4"]
    assert spec["layout"]["title"]["text"] == "Layer 1, heads 2, 4"
    at.switch_page("views/tokens.py").run()
    at.switch_page(PAGE).run()
    assert at.multiselect(key="att_heads_shown").value == [2, 4]  # kept across pages


def test_the_view_options_are_in_the_link(make_app):
    at = make_app(PAGE, a=TEXT, b="the money", att_hide_special="true", att_direction="A→B")
    assert at.toggle(key="att_hide_special").value is True
    assert at.radio(key="att_direction").value == "A→B"
    # (AppTest does not write widget values back to its query parameters: the browser test checks that.)


@pytest.mark.parametrize("view", ["Heatmap", "Head view", "Model view"])
def test_a_session_showing_the_page_does_not_keep_its_analysis_past_the_cache(make_app, view):
    """Streamlit keeps a page's CSV download and chart-click callables for as long as the session shows the
    page. Once the cache drops an analysis, nothing the page left behind may keep it alive: on a shared
    server, every open tab would otherwise hold its own analysis (~170 MB at 512 tokens on bert-base)
    outside the byte budget. (AppTest keeps the chart-click callbacks but not the deferred downloads, which a
    real server keeps too: `show_figure` refuses page-defined callables for those, tested below, and
    bench/sessions.py --client ws shows the server's memory.)"""
    import gc
    import weakref

    from app import server

    text = "the river bank was quiet and the bank of the town was closed"
    at = make_app(PAGE, a=text, att_view=view)
    assert not at.exception and at.get("plotly_chart")
    results = server.results()
    kept = [value for key, (value, _) in list(results._items.items()) if key[0] == "analysis" and text in key]
    assert len(kept) == 1
    analysis = weakref.ref(kept[0])
    del kept
    with results._lock:  # the cache lets it go, as it would to stay within its budget
        results._items.clear()
        results.total = 0
    gc.collect()
    assert analysis() is None
    assert at.session_state["att_view"] == view  # the session is still there, showing the page


def test_show_figure_refuses_a_callable_defined_in_a_page_script():
    import plotly.graph_objects as go

    from app import ui

    def of_a_page():
        return None

    of_a_page.__module__ = "__main__"  # what Streamlit names every page script's module
    with pytest.raises(TypeError, match="page script"):
        ui.show_figure(go.Figure(), key="x", data=of_a_page)
    with pytest.raises(TypeError, match="page script"):
        ui.show_figure(go.Figure(), key="y", on_select=of_a_page)


def test_an_isolated_token_is_in_the_link(make_app):
    at = make_app(PAGE, a=TEXT, att_view="Head view")
    chosen = at.selectbox(key="att_focus").options[2]
    linked = make_app(PAGE, a=TEXT, att_view="Head view", att_focus=chosen)
    assert not linked.exception and linked.selectbox(key="att_focus").value == chosen
    lines = [t for t in figure(linked, "att_head_view")["data"] if t.get("mode") == "lines"]
    ys = [y for t in lines for y in decode(t["y"]).tolist() if y is not None]
    assert set(ys[0::2]) == {1}  # every line starts at the isolated token (row 1)
