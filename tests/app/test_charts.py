"""The pure figure builders (no Streamlit)."""

from __future__ import annotations

import html

import numpy as np
import pytest

from app import charts
from bert_core.pieces import WORDPIECE, PieceStyle
from tests.app.conftest import hover


def test_label_escapes_markup_and_latex():
    assert charts.label("<img src=x onerror=alert(1)>") == "&lt;img src=x onerror=alert(1)&gt;"
    assert charts.label("$x$ & y") == "&#36;x&#36; &amp; y"


def test_heatmap_keeps_repeated_tokens_apart():
    m = np.arange(9, dtype=np.float32).reshape(3, 3)
    fig = charts.heatmap(m, ["the", "the", "<b>"], ["a", "b", "c"])
    assert list(fig.layout.yaxis.ticktext) == ["the", "the", "&lt;b&gt;"]
    np.testing.assert_array_equal(np.asarray(fig.data[0].z), m)


def test_a_heatmaps_one_bound_is_kept_and_the_other_taken_from_the_data():
    """plotly drops a lone zmin (zauto stays on unless both bounds are set): near-uniform attention of 0.089 to
    0.093 was drawn from white to dark, as if it had structure, under a page that asked for white = 0."""
    m = np.array([[0.089, 0.093], [0.091, 0.090]], dtype=np.float32)
    trace = charts.heatmap(m, ["a", "b"], ["a", "b"], zmin=0.0).data[0]
    assert trace.zmin == 0.0 and trace.zmax == pytest.approx(0.093)
    trace = charts.heatmap(-m, ["a", "b"], ["a", "b"], zmax=0.0).data[0]
    assert trace.zmax == 0.0 and trace.zmin == pytest.approx(-0.093)
    # every weight at the bound (a head switched off): still a range, not zmin == zmax
    trace = charts.heatmap(np.zeros((2, 2)), ["a", "b"], ["a", "b"], zmin=0.0).data[0]
    assert (trace.zmin, trace.zmax) == (0.0, 1.0)
    # no bound asked for: plotly's own scale, as before
    trace = charts.heatmap(m, ["a", "b"], ["a", "b"]).data[0]
    assert trace.zmin is None and trace.zmax is None


def test_a_heatmap_sends_no_hover_label_per_cell_and_names_every_cell_in_its_hover():
    """A 512-token map's 262,144 "row → column" labels made one figure 6.8 MB to send and parse (Inside's
    value-weighted view drew three); past 128 × 128 cells they were left out and the hover named row and column
    by their places in the map, from 0. The axes' categories now name every cell, at any size."""
    import json

    import plotly

    names = [f"t{i}" for i in range(512)]
    large = charts.heatmap(np.random.default_rng(0).random((512, 512)), names, names)
    assert large.data[0].text is None
    assert hover(large.data[0], 3, 500) == "3: t3 · 500: t500<br>value %{z:.4f}"
    assert len(json.dumps(large.to_plotly_json(), cls=plotly.utils.PlotlyJSONEncoder)) < 2e6  # z: 1.4e6
    shown = charts.heatmap(np.zeros((300, 2)), names[:300], ["a", "b"], positions=(range(1, 301), [1, 2]))
    assert hover(shown.data[0], 299, 1) == "300: t299 · 2: b<br>value %{z:.4f}"  # the tokens' own numbers
    # A vector's dimensions stay a numeric axis (plotly's even ticks), their number their name in the hover.
    strip = charts.vector_strips(np.zeros((2, 768)), ["the", "bank"])
    assert strip.layout.xaxis.type is None and strip.layout.yaxis.type == "category"
    assert hover(strip.data[0], 1, 700) == "1: bank<br>dimension 700: %{z:.4f}"
    with pytest.raises(ValueError, match="unique"):  # two rows one category: plotly would draw one
        charts.heatmap(np.zeros((2, 1)), ["1. a", "1. a"], ["x"], numbered=True)


def test_tick_labels_stand_on_their_own_category_where_labels_are_numbers():
    """Sentence vector's columns "1".."4" read "1, 3, 4, _": a numeric tick value on a category axis is read as
    the category so named before it is read as a place. And tokens "0 1 2" shown from place 1 ([CLS] hidden)
    made a plain numeric axis whose hover said "0 → 1" for what the CSV calls 1 and 2."""
    listed = charts.heatmap(np.zeros((4, 4)), [f"{i}. s" for i in range(1, 5)], list("1234"), numbered=True)
    assert list(listed.layout.xaxis.tickvals) == list(listed.data[0].x) == list("1234")
    digits = [str(i) for i in range(200)]
    shown = charts.heatmap(np.zeros((200, 200)), digits, digits, positions=(range(1, 201), range(1, 201)))
    assert shown.layout.yaxis.type == "category"
    step = list(shown.data[0].y).index(shown.layout.yaxis.tickvals[1])  # thinned: every step-th row labelled
    assert (
        step > 1 and shown.layout.yaxis.tickvals[1] == f"{step + 1}: {step}" == shown.layout.yaxis.ticktext[1]
    )
    assert hover(shown.data[0], 0, 4).startswith("1: 0 · 5: 4<br>")
    plain = charts.heatmap(np.zeros((2, 3)), ["a", "b"], ["0", "1", "2"])
    assert plain.layout.xaxis.type == "linear" and hover(plain.data[0], 1, 2).startswith("1: b · 2<br>")


def test_head_view_focus_draws_only_that_row():
    w = np.full((3, 3), 1 / 3, dtype=np.float32)
    fig = charts.head_view(["a", "b", "c"], ["a", "b", "c"], w, focus=1)
    ys = [y for t in fig.data if t.type == "scatter" and t.mode == "lines" for y in t.y]
    assert set(ys[0::3]) == {1}


def test_head_view_focus_to_draws_only_that_column():
    w = np.random.default_rng(1).random((3, 4)).astype(np.float32)
    fig = charts.head_view(["a", "b", "c"], ["w", "x", "y", "z"], w, focus_to=2)
    ends = [
        (y0, y1)
        for t in fig.data
        if t.type == "scatter" and t.mode == "lines"
        for y0, y1 in zip(t.y[0::3], t.y[1::3], strict=True)
    ]
    assert sorted(ends) == [(0, 2), (1, 2), (2, 2)]  # every row's line, into column 2 only


def test_head_view_tokens_carry_their_side_and_position_for_clicks():
    fig = charts.head_view(["a", "b"], ["x", "y", "z"], np.full((2, 3), 1 / 3, dtype=np.float32))
    sides = {t.name: [list(c) for c in t.customdata] for t in fig.data if t.name in ("from", "to")}
    assert sides == {"from": [["from", 0], ["from", 1]], "to": [["to", 0], ["to", 1], ["to", 2]]}
    with pytest.raises(ValueError):
        charts.head_view(["a"], ["x"], np.ones((1, 1), dtype=np.float32), focus=0, focus_to=0)


def test_model_view_marks_every_head():
    fig = charts.model_view(np.random.default_rng(0).random((3, 2, 4, 5)), selected=(1, 1))
    pick = next(t for t in fig.data if t.name == "pick")
    assert [list(c) for c in pick.customdata] == [[1, 1], [1, 2], [2, 1], [2, 2], [3, 1], [3, 2]]
    assert len(fig.layout.shapes) == 1
    one = fig.layout.shapes[0]
    row = charts.model_view(np.random.default_rng(0).random((3, 2, 4, 5)), selected=(1, None)).layout.shapes[
        0
    ]
    assert (
        (row.y0, row.y1) == (one.y0, one.y1) and row.x0 < one.x0 and row.x1 == one.x1
    )  # the layer's two heads


def test_large_text_sets_every_text_size_explicitly():
    """Streamlit's plotly theme sets its own tick, title and legend sizes; only explicit ones win over it."""
    fig = charts.grouped_bars(
        ["a", "b"], {"x": [1, 2], "y": [3, 4]}, title="Vector length per token", font_size=22
    )
    layout = fig.layout
    assert layout.xaxis.tickfont.size == layout.yaxis.tickfont.size == 22
    assert layout.xaxis.title.font.size == layout.yaxis.title.font.size == 22
    assert layout.legend.font.size == 22 and layout.title.font.size == 25
    # the title sits above the legend, both in the top margin
    assert layout.title.yanchor == "bottom" and layout.title.pad.b >= 44 and layout.margin.t >= 10 + 44 + 35


def test_a_legend_that_wraps_on_a_projector_keeps_clear_of_the_title():
    """Two models' names fit one legend row at 900 px, but not on a 1024 px projector's ~560 px: the legend ran
    into the title there."""
    series = {"BERT (@demo)": [0.1, 0.2], "BERT (@demo-senses)": [0.3, 0.1]}
    normal = charts.lines([0.0, 1.0], series, title="'bank' (river) vs 'bank' (money)")
    large = charts.lines([0.0, 1.0], series, title="'bank' (river) vs 'bank' (money)", font_size=22)
    assert normal.layout.title.pad.b < 2 * 2 * charts.BASE_FONT  # one row
    assert large.layout.title.pad.b >= 2 * 2 * 22  # two rows of legend under the title


def test_a_legend_gets_the_rows_it_wraps_into_on_a_1024_px_screen_in_normal_text_too():
    """Embeddings' six norms fit one row at 900 px but wrapped into two at 1024 px (~560 px of chart), where
    the first entry was drawn over the title."""
    names = ["|word|", "|segment|", "|position|", "|summed|", "|normalized|", "|projected|"]
    fig = charts.grouped_bars(["a", "b"], {n: [1.0, 2.0] for n in names}, title="Vector length per token")
    assert fig.layout.title.pad.b >= 2 * 2 * charts.BASE_FONT  # two rows of legend under the title


def test_grouped_values_drawn_as_lines_still_start_at_zero():
    many = charts.GROUPED_BARS_LIMIT + 1
    fig = charts.grouped_bars(
        [str(i) for i in range(many)], {"|normalized|": [13.6 + i / 1000 for i in range(many)]}
    )
    assert fig.data[0].type == "scatter" and fig.layout.yaxis.rangemode == "tozero"


def test_a_wrapped_legend_gets_a_row_for_each_row_of_its_columns():
    """Once wrapped, plotly sets a legend's entries in columns as wide as its widest: Embeddings' five norms took
    three rows in Large text where their summed widths made two, and the third ran into the title."""
    names = ["|word|", "|segment|", "|position|", "|summed|", "|normalized|"]
    fig = charts.grouped_bars(["a", "b"], {n: [1.0, 2.0] for n in names}, title="Vector length per token",
                              font_size=22)  # fmt: skip
    assert fig.layout.title.pad.b >= 3 * 2 * 22  # three rows of legend under the title


def test_a_long_title_wraps_in_large_text_only():
    long = "Cosine similarity of the target word, layer 4"
    small = charts.heatmap(np.eye(2), ["a", "b"], ["a", "b"], title=long)
    large = charts.heatmap(np.eye(2), ["a", "b"], ["a", "b"], title=long, font_size=22)
    assert "<br>" not in small.layout.title.text
    assert large.layout.title.text == "Cosine similarity of the target word,<br>layer\u00a04"
    # a short last word is not left alone on a line ("…vectors, layer" over "3")
    pca = "PCA of the target word's vectors, layer 3"
    title = charts.heatmap(np.eye(2), ["a", "b"], ["a", "b"], title=pca, font_size=22).layout.title.text
    assert title == "PCA of the target word's vectors,<br>layer\u00a03"
    # wrapped at any space, to what a projector's page holds (a title with no comma ran off its right edge)
    colon = "Cosine similarity of the sentence vectors: pooled [CLS] (pooler output)"
    lines = charts.heatmap(np.eye(2), ["a", "b"], ["a", "b"], title=colon, font_size=22).layout.title.text
    assert lines.count("<br>") >= 1 and all(
        len(x) * 0.55 * 25 <= charts.PROJECTOR_WIDTH for x in lines.split("<br>")
    )


def test_many_categories_become_lines_with_numbered_thinned_labels():
    names = [f"w{i}" for i in range(512)]
    fig = charts.grouped_bars(names, {"x": np.arange(512.0), "y": np.ones(512)})
    assert {t.type for t in fig.data} == {"scatter"}
    step = fig.layout.xaxis.tickvals[1]
    assert len(fig.layout.xaxis.tickvals) <= 64 and fig.layout.xaxis.ticktext[1] == f"w{step}"
    assert list(fig.data[0].customdata[:2]) == ["w0", "w1"]  # hover names every category
    few = charts.grouped_bars(names[:10], {"x": np.arange(10.0)})
    assert {t.type for t in few.data} == {"bar"} and list(few.layout.xaxis.ticktext) == names[:10]
    # 128 tokens in Large text on a projector: no more labels than stand 1.15 text heights apart (they piled up)
    for font, width in ((charts.BASE_FONT, 900), (22, 560)):
        bars = charts.grouped_bars(names[:128], {"x": np.arange(128.0)}, font_size=font, width_px=width)
        assert (
            3 <= len(bars.layout.xaxis.tickvals)
            and len(bars.layout.xaxis.tickvals) * 1.15 * font <= width - 80
        )


def test_thinned_heatmap_ticks_carry_their_position():
    names = ["the"] * 200
    fig = charts.heatmap(np.zeros((200, 200)), names, names)
    assert fig.layout.yaxis.ticktext[:2] == ("0: the", "4: the")
    dims = [str(i) for i in range(200)]
    fig = charts.heatmap(np.zeros((2, 200)), ["a", "b"], dims)
    # plain positions are left to plotly, which fits its ticks to the chart's real width (a narrow column too)
    assert fig.layout.xaxis.tickmode is None and fig.layout.xaxis.tickvals is None
    assert fig.layout.yaxis.ticktext == ("a", "b")
    # large text shows fewer labels, so they do not run together
    words = [f"w{i}" for i in range(200)]
    normal = charts.heatmap(np.zeros((2, 200)), ["a", "b"], words)
    large = charts.heatmap(np.zeros((2, 200)), ["a", "b"], words, font_size=22)
    assert len(large.layout.xaxis.tickvals) < len(normal.layout.xaxis.tickvals)
    half = charts.heatmap(np.zeros((2, 200)), ["a", "b"], words, width_px=450)
    assert len(half.layout.xaxis.tickvals) < len(normal.layout.xaxis.tickvals)  # a half-width column
    few = charts.heatmap(np.zeros((48, 48)), words[:48], words[:48])
    assert len(few.layout.yaxis.tickvals) == len(few.layout.xaxis.tickvals) == 48  # all 48 at normal size
    # 64 tilted labels need ~960 px (1.15 text heights each): every other one in a ~820 px chart
    many = charts.heatmap(np.zeros((64, 64)), words[:64], words[:64])
    assert len(many.layout.yaxis.tickvals) == 64 and len(many.layout.xaxis.tickvals) == 32
    # Labels a page already numbered (ui.token_labels) keep their one number, on the axis and in the hover.
    numbered = [f"{i}: the" for i in range(200)]
    fig = charts.heatmap(np.zeros((200, 200)), numbered, numbered)
    assert fig.layout.yaxis.ticktext[:2] == ("0: the", "4: the")
    assert hover(fig.data[0], 3, 5).startswith("3: the · 5: the<br>")
    listed = charts.heatmap(np.zeros((2, 2)), ["1. one", "2. two"], ["1", "2"], numbered=True)
    assert hover(listed.data[0], 0, 1).startswith("1. one · 2<br>")  # a list page's own numbers only
    few = charts.heatmap(np.zeros((3, 3)), ["a", "b", "c"], ["0", "1", "2"])
    assert list(few.layout.xaxis.tickvals) == [0, 1, 2]  # a few plain positions are all written


def test_token_chips_have_no_empty_band_above_them():
    tokens = ["[CLS]"] + ["word"] * 300 + ["[SEP]"]
    fig = charts.token_chips(tokens, ["special"] + ["word"] * 300 + ["special"], None, style=WORDPIECE)
    rows = max(y for t in fig.data for y in t.y)
    assert tuple(fig.layout.yaxis.range) == (rows + 0.5, -0.5)


def test_head_view_overlays_every_head_in_its_own_colour_and_lane():
    w = np.random.default_rng(2).random((3, 4, 4)).astype(np.float32)
    w /= w.sum(-1, keepdims=True)
    fig = charts.head_view(list("abcd"), list("abcd"), w, focus=1)
    legend = [t for t in fig.data if t.showlegend is not False and t.type == "scatter" and t.mode == "lines"]
    assert [t.name for t in legend] == ["head 1", "head 2", "head 3"]  # one entry per head, full colour
    assert [t.line.color for t in legend] == charts.HEAD_COLORS[:3]
    lines = [t for t in fig.data if t.type == "scatter" and t.mode == "lines" and t.showlegend is False]
    assert sorted({t.legendgroup for t in lines}) == ["head 1", "head 2", "head 3"]
    assert fig.layout.legend.itemclick is False  # a key only: heads are chosen on the page, which persists
    some = charts.head_view(list("abcd"), list("abcd"), w[[0, 2]], head_numbers=[1, 3], focus=1)
    kept = [t for t in some.data if t.showlegend is not False and t.type == "scatter" and t.mode == "lines"]
    assert [t.name for t in kept] == ["head 1", "head 3"]
    assert [t.line.color for t in kept] == [charts.HEAD_COLORS[0], charts.HEAD_COLORS[2]]  # colours stay
    for h in range(3):
        starts = {y for t in lines if t.legendgroup == f"head {h + 1}" for y in t.y[0::3]}
        assert starts == {1 + (h - 1) * 0.2}  # row 1, shifted into head h's lane
        colors = {t.line.color.rsplit(",", 1)[0] for t in lines if t.legendgroup == f"head {h + 1}"}
        assert len(colors) == 1
    assert len({t.line.color.rsplit(",", 1)[0] for t in lines}) == 3


def test_a_long_legend_gets_room_for_its_rows():
    w = np.full((12, 3, 3), 1 / 3, dtype=np.float32)
    one_row = charts.head_view(list("abc"), list("abc"), w[:2])
    many = charts.head_view(list("abc"), list("abc"), w, font_size=22)
    assert many.layout.margin.t > one_row.layout.margin.t + 22  # 12 heads at 22 px wrap onto two rows


def test_token_kinds_and_chip_legend_follow_the_piece_style():
    kinds = [
        charts.token_kind(t, s, WORDPIECE)
        for t, s in [("[CLS]", True), ("play", False), ("##ing", False), ("[UNK]", False)]
    ]
    assert kinds == ["special", "word", "continuation", "unk"]
    fig = charts.token_chips(["[CLS]", "play", "##ing", "[UNK]"], kinds, None, style=WORDPIECE)
    assert [t.name for t in fig.data] == ["word / first piece", "## continuation", "special", "[UNK]"]
    bpe = PieceStyle(continuation_prefix=None, word_start_marker="Ġ", unk_token="<unk>", name="BPE")
    kinds = [charts.token_kind(t, False, bpe) for t in ["Ġplay", "ing", "<unk>"]]
    assert kinds == ["word", "continuation", "unk"]
    fig = charts.token_chips(["Ġplay", "ing", "<unk>"], kinds, None, style=bpe)
    assert [t.name for t in fig.data] == ["word / first piece", "continuation", "&lt;unk&gt;"]
    # the words decide where known: a BPE text's first word has no marker, a typed <mask> is special
    first = charts.token_kind("The", False, bpe, continues=False)
    typed_mask = charts.token_kind("<mask>", False, bpe, continues=False, specials={"<mask>"})
    assert (first, typed_mask) == ("word", "special")


def test_model_view_writes_each_heads_role_under_its_map():
    import numpy as np

    from app import charts

    thumbs = np.random.default_rng(0).random((2, 3, 4, 4))
    roles = [["previous", None, "cls"], [None, None, "broad"]]
    fig = charts.model_view(thumbs, roles=roles)
    assert sorted(a.text for a in fig.layout.annotations) == ["broad", "cls", "previous"]
    assert not charts.model_view(thumbs).layout.annotations
    # Each label is drawn inside its own map: anchored on the map's bottom edge and growing upwards on screen
    # (the y axis is reversed), so it can never sit on the map of the next layer.
    maps = fig.data[0].z
    rows = [i for i, r in enumerate(maps) if np.isfinite(np.asarray(r, dtype=float)).any()]
    tr = 4
    assert fig.layout.yaxis.autorange == "reversed"
    for a in fig.layout.annotations:
        layer = [r for r, row in enumerate(roles) if a.text in row][0]
        head = roles[layer].index(a.text)
        top, bottom = rows[layer * tr] - 0.5, rows[layer * tr + tr - 1] + 0.5
        assert a.yanchor == "bottom" and a.y == bottom and top < a.y
        assert head * (4 + 1) <= a.x <= head * (4 + 1) + 3


def test_token_strip_wraps_into_rows_with_every_value_once():
    values = np.linspace(0, 1, 11)
    fig = charts.replaced_strip([f"t{i}" for i in range(11)], values, title="x", per_row=4)
    z = np.asarray(fig.data[0].z, dtype=float)
    assert z.shape == (3, 4) and np.isnan(z[2, 3])
    np.testing.assert_allclose(z.reshape(-1)[:11], values, rtol=1e-6)
    assert [t for row in fig.data[0].text for t in row][:11] == [f"t{i}" for i in range(11)]
    one_row = charts.replaced_strip(["a", "b"], [0.1, 0.9], title="x")
    assert np.asarray(one_row.data[0].z).shape == (1, 2)
    # Without a row length: as many as the labels leave room for in the chart's width ("deposit" and "##ed"
    # ran together in a half-width column in Large text)
    words = ["she", "deposit", "##ed", "her", "salary", "at", "the", "bank", "on", "monday", "morning", "."]
    wide = charts.replaced_strip(words, np.linspace(0, 1, 12), title="x", font_size=22, width_px=900)
    narrow = charts.replaced_strip(words, np.linspace(0, 1, 12), title="x", font_size=22, width_px=400)
    assert 3 <= np.asarray(narrow.data[0].z).shape[1] < np.asarray(wide.data[0].z).shape[1]
    assert np.asarray(narrow.data[0].z).shape[1] * charts._text_px(["deposit"], 20) < 400


def test_a_long_saliency_strip_wraps_so_its_labels_do_not_pile_up():
    values = np.linspace(-1, 1, 40)
    normal = charts.saliency_strip([f"{i}: t" for i in range(40)], values, title="x")
    z = np.asarray(normal.data[0].z, dtype=float)
    assert z.shape == (40 // charts.STRIP_ROW, charts.STRIP_ROW)  # 40 tokens, in full rows
    np.testing.assert_allclose(z.reshape(-1)[:40], values, rtol=1e-6)
    large = charts.saliency_strip([f"{i}: t" for i in range(40)], values, title="x", font_size=26)
    assert np.asarray(large.data[0].z).shape[1] < charts.STRIP_ROW  # larger text, fewer a row
    assert large.layout.height > normal.layout.height


def test_bar_values_too_small_for_three_decimals_keep_their_size():
    fig = charts.bars(["a", "b", "c", "d"], [-0.00021, 0.0, 0.25, 3e-5], value_name="log-probability")
    assert list(fig.data[0].text) == ["-0.00021", "0.000", "0.250", "0.000030"]
    # in decimals down to a millionth, two digits, a carry included; e-notation below
    fig = charts.bars(["a", "b", "c", "d"], [-0.00046, 0.0000999, 4e-7, -0.000001])
    assert list(fig.data[0].text) == ["-0.00046", "0.00010", "4.0e-07", "-0.0000010"]


def test_a_bars_hover_names_the_bar_escaped():
    """The hover showed the value alone; it names the bar too, escaped as the axis labels are."""
    fig = charts.bars(["<b>x</b>", "$y$"], [0.5, 0.25])
    assert fig.data[0].hovertemplate == "%{customdata}: %{text}<extra></extra>"
    assert (
        list(fig.data[0].customdata)
        == ["&lt;b&gt;x&lt;/b&gt;", "&#36;y&#36;"]
        == list(fig.layout.yaxis.ticktext)
    )


def test_bars_leave_room_for_the_values_past_both_ends():
    """A negative bar's value is written past its end: without room on that side it sat on the labels."""
    fig = charts.bars(["a", "b", "c"], [1.0, -3.0, 2.0])
    low, high = fig.layout.xaxis.range
    assert low < -3.0 and high > 2.0
    assert charts.bars(["a", "b"], [0.2, 0.5]).layout.xaxis.range[0] == 0.0  # all positive: from zero
    assert tuple(charts.bars(["a"], [0.3], range_max=1.0).layout.xaxis.range) == (0, 1.18)
    vertical = charts.bars(["a", "b"], [-1.0, 1.0], horizontal=False)
    assert vertical.layout.yaxis.range[0] < -1.0
    # all negative (log-probabilities): room on the left, and the axis ends at zero, which none passes
    for font in (charts.BASE_FONT, 22):
        low, high = charts.bars(["a", "b"], [-3.0, -0.5], font_size=font).layout.xaxis.range
        assert low < -3.0 and high == 0.0
    # a value of exactly zero is written right of its bar of none: room there
    assert charts.bars(["a", "b"], [-3.0, 0.0]).layout.xaxis.range[1] > 0.0


def test_a_long_passage_wraps_into_rows_of_chips_and_the_answer_keeps_its_colour():
    """A question-answering passage is one fragment before the answer and one after: drawn as single chips they
    made one row as wide as the passage, which shrank every chip to a hairline."""
    before, answer, after = "the river ran by the bank " * 12, "the old mill", " and then we went home" * 9
    fig = charts.span_chips([(before, None), (answer, "answer"), (after, None)], title="t")
    bars = [(b, w) for trace in fig.data for b, w in zip(trace.base, trace.x, strict=True)]
    assert max(w for _, w in bars) <= charts.CHIP_CHARS + 1
    assert max(b + w for b, w in bars) <= 75  # every row within the ~70 characters a row holds
    assert len({y for trace in fig.data for y in trace.y}) >= (len(before) + len(after)) // 70
    for text in (before, after, "x" * 150, "", "short"):
        chunks = charts._chunks(text)
        assert "".join(chunks) == text and all(len(c) <= charts.CHIP_CHARS for c in chunks)
    # Text without spaces is cut between characters as they are drawn: never before a vowel sign or a skin
    # tone, nor after a joiner (a split drew a lone "ा" and a dangling half of a family emoji).
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"
    for text in (
        "a" + "लड़का" * 20,
        "x" * 58 + family + "y" * 10,
        "z" * 59 + "\U0001f44d\U0001f3fd" + "w" * 9,
        "b" * 59 + "\U0001f1fa\U0001f1f8" + "c" * 9,  # a flag: two regional indicators
    ):
        chunks = charts._chunks(text)
        assert "".join(chunks) == text and all(len(c) <= charts.CHIP_CHARS for c in chunks)
        for left, right in zip(chunks, chunks[1:]):  # noqa: B905
            assert not charts._joins_before(right[0]) and not left.endswith("\u200d"), (left[-3:], right[:3])
            assert not (left.endswith("\U0001f1fa") and right.startswith("\U0001f1f8"))  # a flag kept whole
    # Large text: fewer characters a row and a chip, so the words keep their size instead of shrinking to fit
    large = charts.span_chips([(before, None), (answer, "answer"), (after, None)], title="t", font_size=22)
    spans = [(b, w) for trace in large.data for b, w in zip(trace.base, trace.x, strict=True)]
    assert max(b + w for b, w in spans) <= 70 * 13 / 22 + 3
    assert len({y for trace in large.data for y in trace.y}) > len({y for trace in fig.data for y in trace.y})
    assert "other text" in {t.name for t in fig.data}  # a legend entry an audience can read, not "—"
    colour = {t.name: t.marker.color for t in fig.data}["answer"]
    first = charts.span_chips([(answer, "answer"), (after, None)], title="t")
    assert {t.name: t.marker.color for t in first.data}["answer"] == colour  # not by order of appearance


def test_rank_axis_starts_at_rank_one_and_goes_log_for_long_climbs():
    few = charts.rank_axis(charts.lines([0, 1, 2], {"rank": [3, 1, 1]}), 3).layout.yaxis
    assert (
        few.type in (None, "linear")
        and few.tick0 == 1
        and few.dtick == 1
        and few.range[0] == 0.5 < 3.5 < few.range[1]
    )
    many = charts.rank_axis(charts.lines([0, 1, 2], {"rank": [3000, 40, 1]}), 3000).layout.yaxis
    assert many.type == "log" and list(many.ticktext[:5]) == [
        "1",
        "2",
        "5",
        "10",
        "20",
    ]  # a rank of 35: between
    written = charts.rank_axis(charts.lines([0, 1, 2], {"rank": [3000, 40, 1]}), 3000).data[0]
    assert list(written.text) == ["3,000", "40", "1"]  # and each point says its own
    # bert-base's climb from the vocabulary's far end in Large text at a projector's width: 1, 2, 5 in five
    # decades of ~300 px and a "30,522" at every layer ran together; the last layer's is always written
    ranks = [30522, 29000, 25000, 20000, 15000, 9000, 4000, 900, 200, 40, 7, 2, 1]
    large = charts.rank_axis(charts.lines(range(13), {"rank": ranks}, font_size=22), 30522, width_px=560)
    assert list(large.layout.yaxis.ticktext) == ["1", "10", "100", "1,000", "10,000"]
    text = list(large.data[0].text)
    assert (
        text[-1] == "1" and "" in text and all(t in ("", f"{r:,}") for t, r in zip(text, ranks, strict=True))
    )
    assert 10 ** large.layout.yaxis.range[1] > 30522 * 1.5  # room above the highest point for its number
    assert 10 ** many.range[0] < 1 < 3000 < 10 ** many.range[1]


def test_span_chips_legend_keeps_one_order_whatever_the_text_holds_first():
    a = charts.span_chips(
        [("Tom", "PER"), (" went to ", None), ("Oslo", "LOC")], title="A", all_labels=["LOC", "PER"]
    )
    b = charts.span_chips(
        [("Oslo", "LOC"), (" saw ", None), ("Tom", "PER")], title="B", all_labels=["LOC", "PER"]
    )
    assert [t.name for t in a.data] == [t.name for t in b.data] == ["LOC", "PER", "other text"]
    assert [t.marker.color for t in a.data] == [t.marker.color for t in b.data]


def test_span_chips_never_turn_their_text():
    fig = charts.span_chips([("Anna", "answer"), (" fished at the lake.", None)], title="t", font_size=22)
    assert all(trace.textangle == 0 for trace in fig.data)


def test_a_vector_strip_in_part_of_a_page_thins_its_dimension_numbers_in_large_text():
    """32 rotated dimension numbers in three quarters of a page ran together in Large text, and so did a
    160-px strip's five colour-bar values."""
    vec = np.linspace(-2, 2, 32)[None, :]
    normal = charts.vector_strips(vec, ["vector"], height=160, width_px=650)
    assert normal.layout.xaxis.tickmode == "array" and len(normal.layout.xaxis.tickvals) == 32
    large = charts.vector_strips(vec, ["vector"], height=160, width_px=650, font_size=26)
    assert large.layout.xaxis.tickmode != "array"  # plotly picks as many as fit the real width
    assert large.data[0].colorbar.nticks == 3 and large.data[0].colorbar.ticktext == ("-2", "0", "2")
    small = charts.vector_strips(np.array([[-0.031, 0.012, 0.044]]), ["v"], height=160, font_size=22)
    assert small.data[0].colorbar.ticktext == ("-0.031", "0", "0.044")  # not plotly's lone 0
    assert (
        charts.vector_strips(vec, ["vector"], height=600).data[0].colorbar.nticks > 3
    )  # a tall one holds more


def test_half_width_charts_in_large_text_leave_room_for_their_labels_and_values():
    """Row labels ("12: deposited") took half of a half-width chart in Large text, its column labels piled into
    what was left, and a bar's negative value sat on the names (its minus sign hidden)."""
    names = [f"{i}: deposited" for i in range(18)]
    full = charts.heatmap(np.zeros((18, 18)), names, names, font_size=22, width_px=900)
    half = charts.heatmap(np.zeros((18, 18)), names, names, font_size=22, width_px=450)
    assert len(full.layout.xaxis.tickvals) == 18 and len(half.layout.xaxis.tickvals) <= 9
    # Without a width, larger text is taken as a 1024 px projector's page (~560 px): no more than stand apart
    projector = charts.heatmap(np.zeros((18, 18)), names, names, font_size=22)
    assert len(projector.layout.xaxis.tickvals) * 1.15 * 22 <= charts.PROJECTOR_WIDTH - charts._text_px(
        names, 22
    )
    assert len(charts.heatmap(np.zeros((18, 18)), names, names).layout.xaxis.tickvals) == 18  # normal text
    numbers = charts.heatmap(
        np.zeros((4, 4)), ["1. a", "2. b", "3. c", "4. d"], ["1", "2", "3", "4"], numbered=True
    )
    assert numbers.layout.xaxis.tickangle == 0 and full.layout.xaxis.tickangle == -60  # short labels upright
    dims = [f"d{i}" for i in range(48)]  # a head's dimensions: short, but too many to stand side by side
    rows = ["query 3: drifted", *(f"key {i}" for i in range(12))]
    assert charts.heatmap(np.zeros((13, 48)), rows, dims, numbered=True).layout.xaxis.tickangle == -60
    values = [-0.659, 0.2, 4.281]
    wide = charts.bars(names[:3], values, font_size=13)
    narrow = charts.bars(names[:3], values, font_size=22, width_px=450)
    low_w, high_w = wide.layout.xaxis.range
    low_n, high_n = narrow.layout.xaxis.range
    assert low_n < low_w < -0.659 and high_n > high_w > 4.281  # more room where the values take more of it


def test_a_scatters_points_are_labelled_where_a_projector_shows_no_hover():
    points = np.arange(20.0).reshape(10, 2)
    few = charts.scatter_2d(points, [0] * 5 + [1] * 5, ["a", "b"], [f"h{i}" for i in range(10)],
                            texts=[f"t{i}" for i in range(10)])  # fmt: skip
    assert [d.mode for d in few.data] == ["markers+text"] * 2 and list(few.data[1].text) == [
        f"t{i}" for i in range(5, 10)
    ]
    # room beyond the outermost points for half a label each way (the plot's edge cut "bank #1" short)
    assert tuple(few.layout.xaxis.range) == pytest.approx((0 - 18 * 0.12, 18 + 18 * 0.12))
    many = np.zeros((charts.SCATTER_TEXT_LIMIT + 1, 2))
    crowded = charts.scatter_2d(many, [0] * len(many), ["a"], ["h"] * len(many), texts=["t"] * len(many))
    assert crowded.data[0].mode == "markers"  # more would cover each other: hover only


def test_a_heatmaps_hover_says_a_direction_only_where_there_is_one_and_numbers_a_view_by_its_tokens():
    """ "layer 3 → head 2" and "1. river → 2. money" read as something flowing; and a view of some of a text's
    tokens numbered them from 0 in the hover where the CSV and the other pages give their own numbers."""
    grid = charts.heatmap(np.zeros((2, 2)), ["layer 1", "layer 2"], ["head 1", "head 2"], numbered=True)
    assert hover(grid.data[0], 1, 0).startswith("layer 2 · head 1<br>")
    attention = charts.heatmap(
        np.zeros((2, 3)),
        ["the", "bank"],
        ["the", "bank", "."],
        separator=" → ",
        positions=([1, 2], [1, 2, 3]),
    )
    assert hover(attention.data[0], 0, 2).startswith("1: the → 3: .<br>")
    words = [f"w{i}" for i in range(200)]
    thinned = charts.heatmap(np.zeros((2, 200)), ["a", "b"], words, positions=([0, 1], range(5, 205)))
    assert thinned.layout.xaxis.ticktext[0].startswith("5: w0")


def test_long_tilted_column_labels_leave_the_rows_their_room():
    """In Large text Word senses' matrix drew its eight rows in ~125 px: the column labels ("7. money · bank #2",
    tilted by 60°) stand below the plot within the chart's height, which counted rows only."""
    names = [f"{i}. money · bank #2" for i in range(1, 9)]
    font = 22
    fig = charts.heatmap(
        np.zeros((8, 8)), names, names, numbered=True, font_size=font, title="Cosine, layer 2"
    )
    assert fig.layout.xaxis.tickangle == -60
    labels_px = 0.87 * 0.6 * font * len(names[0])  # a tilted label's height below the plot
    rows_px = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b - labels_px
    assert rows_px >= 8 * 1.2 * font  # each row at least a line of text
    longer = [f"{i}. the financial institution by the river · bank #2" for i in range(1, 17)]
    fig = charts.heatmap(np.zeros((16, 16)), longer, longer, numbered=True, font_size=font, width_px=560)
    labels_px = 0.87 * 0.6 * font * len(longer[0])
    rows_px = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b - labels_px
    assert rows_px >= 16 * 1.2 * font
    assert (
        fig.data[0].colorbar.nticks <= rows_px / (2.5 * font) + 1
    )  # the bar is the plot's height, not the chart's
    # labels thinned off the axis take no room: a long word once left eight rows 600 px
    words = ["[CLS]", "the", "supercalifragilisticexpialidocious", "bank", "by", "the", "river", "[SEP]"]
    short = charts.heatmap(np.zeros((8, 8)), words, words, font_size=font, width_px=560)
    assert all("super" not in t for t in short.layout.xaxis.ticktext) and short.layout.height < 450
    plain = charts.heatmap(np.zeros((8, 8)), names[:8], list("12345678"), numbered=True, font_size=font)
    assert plain.layout.height < fig.layout.height  # short labels stand upright and take a line


def test_a_saliency_strip_colours_as_the_other_charts_do_blue_for_red_against():
    """Red was "pushed the answer up" on the saliency strips while blue was "supported the guess" on head
    importance and "alike" on every cosine map: a room reading both charts read one of them backwards."""
    strip = charts.saliency_strip(["for", "against"], [1.0, -1.0], title="x").data[0]
    # the highest value dark blue, the lowest dark red, as "RdBu" (head importance's, the cosines') runs
    assert (strip.colorscale[-1][1], strip.colorscale[0][1]) == ("rgb(5,48,97)", "rgb(103,0,31)")
    assert strip.zmin == -strip.zmax  # centred on zero: white is no effect


def test_scatter_labels_of_points_close_together_go_where_they_cover_no_other():
    """Two banks of one line, a hair apart in the PCA, wrote "7 · bank #1" over "7 · bank #2"."""
    texts = ["7 · bank #1", "7 · bank #2", "1", "2"]
    points = np.array([[0.0, 0.0], [0.02, 0.01], [5.0, 3.0], [-4.0, -2.0]])
    fig = charts.scatter_2d(points, [0, 1, 0, 1], ["river", "money"], texts, texts=texts, width_px=500)
    places = {t: p for trace in fig.data for t, p in zip(trace.text, trace.textposition, strict=True)}
    assert places["1"] == places["2"] == "top center"  # alone: above, as before
    assert places["7 · bank #1"] != places["7 · bank #2"]


def test_points_at_one_place_share_one_label():
    """Five points of one vector (one word at one position, layer 0) had four places around their dot for five
    labels: "1" was written over "5 · bank #1"."""
    texts = ["1", "2", "5 · bank #1", "3"]
    points = np.array([[0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [3.0, 1.0]])
    fig = charts.scatter_2d(points, [0, 1, 0, 1], ["river", "money"], texts, texts=texts, width_px=500)
    written = sorted(t for trace in fig.data for t in trace.text if t)
    assert written == ["1, 2, 5 · bank #1", "3"]


def test_the_head_role_key_names_none_only_where_a_head_has_no_role():
    every = [["previous token", "[CLS]"], ["[CLS]", "broad"]]
    names, bands = charts.role_key(every)
    assert names == ["[CLS]", "broad", "previous token"]  # the key once listed "none" here too
    some = [["previous token", None], ["[CLS]", "broad"]]
    names_some, bands_some = charts.role_key(some)
    assert names_some == ["none", "[CLS]", "broad", "previous token"]
    # one flat band per name, from 0 to 1, and a role keeps its colour with or without "none"
    colours = []
    for key, scale in ((names, bands), (names_some, bands_some)):
        assert len(scale) == 2 * len(key) and scale[0][0] == 0 and scale[-1][0] == 1
        assert [c for _, c in scale[::2]] == [c for _, c in scale[1::2]]
        colours.append(dict(zip(key, [c for _, c in scale[::2]], strict=True)))
    assert all(colours[0][role] == colours[1][role] for role in names)
    assert colours[1]["none"] == charts.NO_ROLE and len(set(colours[0].values())) == 3


# -- colour: contrast and colour blindness ------------------------------------------------------------------


def _contrast(a: str, b: str) -> float:
    la, lb = sorted((charts._luminance(a), charts._luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def test_chip_text_reads_on_its_chip():
    """White on the continuation chips' orange was 2:1, and plotly's own #444 on a blue answer chip 3.3:1:
    WCAG asks 4.5:1 of text."""
    kinds = ["special", "word", "continuation", "unk", "special"]
    fig = charts.token_chips(["[CLS]", "un", "##believ", "[UNK]", "[SEP]"], kinds, style=WORDPIECE)
    bars = [t for t in fig.data if t.type == "bar"]
    assert len(bars) == 4
    for t in bars:
        assert _contrast(t.textfont.color, t.marker.color) >= 4.5, t.name
    spans = charts.span_chips(
        [("Anna", "PER"), (" went to ", None), ("Paris", "LOC"), ("x", "MISC"), ("y", charts.NOT_READ)],
        title="t",
    )
    for t in spans.data:
        assert _contrast(t.textfont.color, t.marker.color) >= 4.5, t.name


@pytest.mark.parametrize("scale", ["Blues", "RdBu", [[0.0, "#009e73"], [0.5, "#e69f00"], [1.0, "#eeeeee"]]])
def test_text_written_in_heatmap_cells_reads_on_every_cell(scale):
    """Plotly's own pick for a heatmap's cell text was #444 on mid blue (3.4:1) and white on the roles' green
    (3.2:1): each cell's text is black or white, whichever its own colour needs (WCAG: 4.5:1)."""
    z = np.linspace(-1, 1, 21, dtype=np.float32).reshape(3, 7)
    z[1, 3] = np.nan  # a gap: nothing written there
    fig = charts.heatmap(z, list("abc"), list("defghij"), zmin=-1.0, zmax=1.0, colorscale=scale)
    charts.write_cells(fig, [[f"{v:.2f}" for v in row] for row in z], 12)
    heat, text = fig.data
    assert text.mode == "text" and text.hoverinfo == "skip" and len(text.text) == 20
    cells = [(i, j) for i in range(3) for j in range(7) if not np.isnan(z[i, j])]
    assert list(text.x) == [heat.x[j] for _, j in cells] and list(text.y) == [heat.y[i] for i, _ in cells]
    for (i, j), colour in zip(cells, text.textfont.color, strict=True):
        cell = charts.scale_colour(heat.colorscale, (z[i, j] + 1) / 2)
        assert _contrast(colour, cell) >= 4.5, (z[i, j], cell, colour)
    # A text trace pads a numeric axis by 5 %: a token strip keeps its own extent (blank bands at its ends)
    strip = charts.saliency_strip(list("abcdefg"), np.linspace(-1, 1, 7), title="t")
    assert list(strip.layout.xaxis.range) == [-0.5, 6.5] and strip.layout.xaxis.autorange is False
    assert list(strip.layout.yaxis.range) == [0.5, -0.5]  # one row, drawn downwards
    assert list(strip.data[1].text) == list("abcdefg") and list(strip.data[1].x) == list(range(7))
    flipped = charts.heatmap(z, list("abc"), list("defghij"), zmin=-1.0, zmax=1.0, colorscale="Blues")
    flipped.update_traces(reversescale=True)
    charts.write_cells(flipped, [["x"] * 7] * 3, 12)
    dark_end = charts.scale_colour(flipped.data[0].colorscale, 1.0)  # drawn at z = -1 once reversed
    assert flipped.data[1].textfont.color[0] == charts.ink(dark_end)
    # the colour at a stop is the stop's own, and halfway between two is their mean
    assert charts.scale_colour([[0, "#000000"], [1, "#ffffff"]], 0.5) == "#808080"
    assert charts.scale_colour([[0, "rgb(0, 0, 0)"], [1, "rgb(255, 255, 255)"]], 1.0) == "#ffffff"


def test_the_head_views_tokens_take_the_themes_text_colour_but_the_isolated_one():
    """A fixed #333 was 1.4:1 on the dark theme's page: the labels are left to the theme."""
    fig = charts.head_view(
        ["a", "b", "c"], ["a", "b", "c"], np.full((3, 3), 1 / 3, dtype=np.float32), focus=1
    )
    texts = {t.name: t for t in fig.data if t.type == "scatter" and t.mode == "text"}
    assert texts["from tokens"].textfont.color is None and texts["to tokens"].textfont.color is None
    assert list(texts["from tokens"].text) == ["a", "", "c"]
    assert list(texts["from token isolated"].text) == ["", "b", ""] and "to token isolated" not in texts
    isolated = texts["from token isolated"].textfont
    assert (
        isolated.weight == "bold"
        and min(_contrast(isolated.color, page) for page in ("#ffffff", "#0e1117")) > 3
    )
    fig = charts.model_view(
        np.random.default_rng(0).random((2, 2, 3, 3)), roles=[["cls", None], [None, "next"]]
    )
    for note in fig.layout.annotations:
        assert _contrast(note.font.color, "#ffffff") >= 4.5  # on its light band


# Machado et al. (2009), severity 1: how a deuteranope and a protanope see linear RGB
CVD = {
    "deuteranopia": np.array([[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.01182, 0.04294, 0.968881]]),
    "protanopia": np.array([[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]]),
}  # fmt: skip


def _lab(rgb_linear: np.ndarray) -> np.ndarray:
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]])
    xyz = xyz @ np.clip(rgb_linear, 0, 1) / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16 / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


@pytest.mark.parametrize("vision", [*CVD, "normal"])
def test_series_colours_stay_apart_for_red_green_colour_blindness(vision):
    """Heads 2 and 3 (red, green) were one colour to a deuteranope (CIE76 difference 0.9), as were the head
    roles 'next' and 'previous' and Embeddings' |position| and |summed|."""

    def seen(colour: str) -> np.ndarray:
        srgb = np.array(charts._hex_rgb(colour)) / 255
        linear = np.where(srgb <= 0.04045, srgb / 12.92, ((srgb + 0.055) / 1.055) ** 2.4)
        return _lab(CVD.get(vision, np.eye(3)) @ linear)

    series = [seen(c) for c in charts.SEQUENCE_COLORS]
    assert min(np.linalg.norm(a - b) for k, a in enumerate(series) for b in series[k + 1 :]) > 15
    heads = [seen(c) for c in charts.HEAD_COLORS]
    assert min(np.linalg.norm(a - b) for a, b in zip(heads, heads[1:], strict=False)) > 20
    assert min(np.linalg.norm(a - b) for k, a in enumerate(heads) for b in heads[k + 1 :]) > 9


def test_series_colours_show_on_both_themes_pages():
    """Okabe and Ito's black, and Tol's #332288 (1.6:1), all but vanished on the dark theme's page."""
    for colour in charts.HEAD_COLORS:
        assert _contrast(colour, "#0e1117") >= 3 and _contrast(colour, "#ffffff") >= 2.2, colour


def test_a_scatters_legend_names_a_long_group_short():
    """ "money and financial institutions" took a Large-text chart's width for its legend (the plot 114 px);
    the hover names each point's group whole."""
    long = "money and financial institutions of the town"
    points = np.array([[0.0, 0.0], [1.0, 1.0]])
    for font, most in ((charts.BASE_FONT, 28), (22, 16)):
        fig = charts.scatter_2d(points, [0, 1], ["river", long], ["a (river)", f"b ({long})"], font_size=font)
        names = [t.name for t in fig.data]
        assert names[0] == "river" and len(names[1]) == most and names[1].endswith("…")
        assert long in fig.data[1].hovertext[0]


def test_a_mark_that_begins_a_piece_is_drawn_on_a_dotted_circle():
    """Thai's "##็" drew "##▯" (the font has no "#" with a vowel sign), "##🏽" a box, and "##" + U+FE0F the
    emoji "#️": a lone mark is set on U+25CC as Unicode's charts show one, a selector written as its code
    point; marks within a word, an emoji's own skin tone and plain text are left as they are."""
    assert charts.label("##\u0e47") == "##\u25cc\u0e47"
    assert charts.label("3: ##\U0001f3fd") == "3: ##\u25cc\U0001f3fd"
    assert charts.label("##\ufe0f") == "##\\ufe0f"
    assert charts.label("\u2581\u0301") == "\u2581\u25cc\u0301"  # SentencePiece's word start, then an accent
    for kept in (
        "cafe\u0301",
        "\U0001f44d\U0001f3fd",
        "\u0e40\u0e14\u0e47\u0e01",
        "\U0001f469\u200d\U0001f467",
        "a<b",
    ):
        assert charts.label(kept) == html.escape(kept, quote=False)
    fig = charts.heatmap(np.eye(2, dtype=np.float32), ["##\u0e47", "x"], ["##\u0e47", "x"])
    assert fig.layout.yaxis.ticktext[0] == "##\u25cc\u0e47"


def test_cell_numbers_are_written_where_the_numbers_present_fit():
    """Sized for "-0.00" whatever the values, four sentences' cosines (all positive) were left to the hover in
    Large text at 1024 px, with room in each cell for "0.79"."""
    labels = [f"{k}. sentence {k} of the lecture" for k in range(1, 5)]
    positive = np.full((4, 4), 0.79)
    negative = positive.copy()
    negative[0, 1] = -0.05

    def narrowest_written(matrix) -> int:
        return next(
            width
            for width in range(100, 2000, 5)
            if charts.heatmap(
                matrix, labels, list("1234"), numbered=True, font_size=22, width_px=width, cell_numbers=22
            ).layout.meta["cells_written"]
        )

    assert narrowest_written(positive) < narrowest_written(negative)
