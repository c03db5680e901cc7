"""The pure figure builders and numeric helpers (no Streamlit)."""

from __future__ import annotations

import numpy as np
import pytest

from app import charts, transforms


def test_label_escapes_markup_and_latex():
    assert charts.label("<img src=x onerror=alert(1)>") == "&lt;img src=x onerror=alert(1)&gt;"
    assert charts.label("$x$ & y") == "&#36;x&#36; &amp; y"


def test_heatmap_keeps_repeated_tokens_apart():
    m = np.arange(9, dtype=np.float32).reshape(3, 3)
    fig = charts.heatmap(m, ["the", "the", "<b>"], ["a", "b", "c"])
    assert list(fig.layout.yaxis.ticktext) == ["the", "the", "&lt;b&gt;"]
    np.testing.assert_array_equal(np.asarray(fig.data[0].z), m)


def test_cosine_pca_and_block_mean():
    v = np.array([[1.0, 0.0], [0.0, 2.0], [0.0, 0.0]])
    np.testing.assert_allclose(charts.cosine_matrix(v), [[1, 0, 0], [0, 1, 0], [0, 0, 0]])
    points = charts.pca_2d(np.random.default_rng(0).normal(size=(5, 8)))
    assert points.shape == (5, 2) and np.allclose(points.mean(axis=0), 0, atol=1e-5)
    a = np.arange(16, dtype=np.float32).reshape(4, 4)
    np.testing.assert_allclose(charts.block_mean(a, 2), [[2.5, 4.5], [10.5, 12.5]])
    assert charts.block_mean(np.ones((2, 3, 10, 7)), 4).shape == (2, 3, 4, 4)


def test_merge_words_keeps_rows_summing_to_one():
    att = np.random.default_rng(0).random((5, 5)).astype(np.float32)
    att /= att.sum(axis=1, keepdims=True)
    merged = transforms.merge_words(att, [[0], [1, 2], [3], [4]])
    assert merged.shape == (4, 4)
    np.testing.assert_allclose(merged.sum(axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(merged[1, 0], (att[1, 0] + att[2, 0]) / 2, atol=1e-6)


def test_head_view_focus_draws_only_that_row():
    w = np.full((3, 3), 1 / 3, dtype=np.float32)
    fig = charts.head_view(["a", "b", "c"], ["a", "b", "c"], w, focus=1)
    ys = [y for t in fig.data if t.mode == "lines" for y in t.y]
    assert set(ys[0::3]) == {1}


def test_head_view_focus_to_draws_only_that_column():
    w = np.random.default_rng(1).random((3, 4)).astype(np.float32)
    fig = charts.head_view(["a", "b", "c"], ["w", "x", "y", "z"], w, focus_to=2)
    ends = [
        (y0, y1) for t in fig.data if t.mode == "lines" for y0, y1 in zip(t.y[0::3], t.y[1::3], strict=True)
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
