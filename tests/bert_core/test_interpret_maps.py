"""The torch-free analyses on hand-built or random arrays: rollout, flow, head roles, hidden-state geometry and
the value-weighted arithmetic, each against a direct computation or an answer worked out by hand."""

from __future__ import annotations

import ast
import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest

import bert_core
from bert_core import InputError
from bert_core.interpret import (
    BROAD_THRESHOLD,
    ROLE_THRESHOLD,
    is_punctuation,
    max_flow_through_layers,
    residual_attention,
    value_weighted_norms,
)
from bert_core.pieces import PieceStyle


def random_attentions(rng, layers=3, heads=4, s=6, sharpness=3.0) -> np.ndarray:
    """(L, N, S, S) rows that sum to 1, peaked enough that layers do not commute."""
    a = rng.random((layers, heads, s, s)) ** sharpness
    return a / a.sum(-1, keepdims=True)


# -- rollout ----------------------------------------------------------------------------------------------


def test_rollout_equals_the_product_of_residual_aware_maps():
    rng = np.random.default_rng(0)
    att = random_attentions(rng)
    rolled = bert_core.attention_rollout(att)
    assert rolled.shape == (3, 6, 6)
    for layer in range(3):
        expected = np.eye(6)
        for k in range(layer + 1):  # A_layer @ ... @ A_0, applied from the input up
            a = 0.5 * att[k].mean(axis=0) + 0.5 * np.eye(6)
            a = a / a.sum(axis=1, keepdims=True)
            expected = a @ expected
        np.testing.assert_allclose(rolled[layer], expected, atol=1e-12)
    np.testing.assert_allclose(rolled.sum(-1), 1.0, atol=1e-12)
    # the order matters on these maps, so a rollout multiplied the other way round would fail above
    a0, a1 = residual_attention(att)[:2]
    assert np.abs(a1 @ a0 - a0 @ a1).max() > 1e-3


def test_rollout_renormalises_rows_of_switched_off_heads():
    att = np.zeros((1, 2, 3, 3))
    att[0, 0] = np.eye(3)[[1, 2, 0]]  # each token attends to the next one, cyclically
    # head 1 all zeros: its rows sum to 0, so the mixed rows sum to 0.75 before renormalising
    rolled = bert_core.attention_rollout(att)
    expected = (0.25 * np.eye(3)[[1, 2, 0]] + 0.5 * np.eye(3)) / 0.75
    np.testing.assert_allclose(rolled[0], expected, atol=1e-12)


def test_rollout_and_flow_count_a_run_s_switched_off_heads_as_off(tiny_model):
    """An analysis with heads off still returns their probabilities (their output was zeroed): given the run's
    head_mask, rollout and flow leave those heads out; a layer with every head off passes positions on as they
    are."""
    layers, heads = tiny_model.config.num_hidden_layers, tiny_model.config.num_attention_heads
    mask = np.ones((layers, heads), dtype=np.float32)
    mask[0] = 0.0
    mask[1, 0] = 0.0
    run = tiny_model.analyze("the bank of the river", head_mask=mask)
    np.testing.assert_array_equal(run.head_mask, mask)
    rolled = bert_core.attention_rollout(run.attentions, run.head_mask)
    np.testing.assert_allclose(rolled[0], np.eye(len(run.encoding.tokens)), atol=1e-12)
    zeroed = run.attentions * mask[:, :, None, None]
    np.testing.assert_allclose(rolled, bert_core.attention_rollout(zeroed), atol=1e-12)
    assert not np.allclose(rolled, bert_core.attention_rollout(run.attentions), atol=1e-3)
    short = tiny_model.analyze("the bank", head_mask=mask)
    np.testing.assert_allclose(
        bert_core.attention_flow(short.attentions, short.head_mask),
        bert_core.attention_flow(short.attentions * mask[:, :, None, None]),
        atol=1e-12,
    )
    with pytest.raises(InputError, match="head_mask"):
        bert_core.attention_rollout(run.attentions, mask[:, :1])
    # the analysis itself is read with its own mask (its maps alone, without it, counted the heads off)
    np.testing.assert_array_equal(bert_core.attention_rollout(run), rolled)
    np.testing.assert_array_equal(
        bert_core.attention_flow(short), bert_core.attention_flow(short.attentions, mask)
    )
    with pytest.raises(InputError, match="differs from the one the analysis was run with"):
        bert_core.attention_rollout(run, np.ones_like(mask))
    with pytest.raises(InputError, match="differs"):  # a mask for a run that had none
        bert_core.attention_rollout(tiny_model.analyze("the bank"), mask)
    plain = tiny_model.analyze("the bank")  # ... but all ones is what it ran with
    np.testing.assert_array_equal(
        bert_core.attention_rollout(plain, np.ones_like(mask)), bert_core.attention_rollout(plain)
    )
    tenth = np.full_like(mask, 0.1, dtype=np.float64)  # the float64 mask it was run with, held as float32
    bert_core.attention_rollout(tiny_model.analyze("the bank", head_mask=tenth), tenth)
    with pytest.raises(InputError, match="array of numbers"):  # ragged: numpy's own ValueError leaked
        bert_core.attention_rollout(run, [[1, 1], [1]])
    for other in (tiny_model.vectors_batch(["the bank"])[0], tiny_model.value_weighted_attention(plain)):
        with pytest.raises(InputError, match="an Analysis or a"):
            bert_core.attention_rollout(other)


@pytest.mark.parametrize("bad", [np.nan, -1.0])
def test_rollout_refuses_maps_that_are_not_probabilities(bad):
    """NaN maps rolled out to NaN, and -1s to rows that looked like distributions ([-0, 1]); flow refused both."""
    with pytest.raises(InputError, match="finite and non-negative"):
        bert_core.attention_rollout(np.full((1, 1, 2, 2), bad))
    with pytest.raises(InputError, match="from 0 to 1"):
        bert_core.attention_rollout(np.full((1, 1, 2, 2), 0.5), np.full((1, 1), 2.0))


@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 4, 5), (1, 1, 0, 0)])
def test_rollout_rejects_bad_shapes(shape):
    with pytest.raises(InputError):
        bert_core.attention_rollout(np.ones(shape))


# -- flow -------------------------------------------------------------------------------------------------


def test_flow_on_a_graph_that_needs_a_path_back_up():
    """Three layers, two positions, by hand. From (3, 0): edges to a = (2, 0) and b = (2, 1) of 1 each;
    a -> c = (1, 0) 1, a -> d = (1, 1) 1, b -> c 1, b -> d 0; c -> (0, 0) 1, d -> (0, 0) 1, nothing to (0, 1).
    The cut {c, d} -> (0, 0) is 2, and reaching it needs s-a-d plus s-b-c: a solver that first sends 1 along
    s-a-c and never undoes it finds only 1."""
    caps = np.zeros((3, 2, 2))
    caps[2] = [[1.0, 1.0], [0.0, 0.0]]  # level 3 -> 2
    caps[1] = [[1.0, 1.0], [1.0, 0.0]]  # level 2 -> 1 (a -> c listed first)
    caps[0] = [[1.0, 0.0], [1.0, 0.0]]  # level 1 -> 0
    flows = max_flow_through_layers(caps)
    assert flows[2, 0, 0] == pytest.approx(2.0, abs=1e-12)
    assert flows[2, 0, 1] == 0.0
    assert flows[2, 1].tolist() == [0.0, 0.0]  # (3, 1) has no edges out
    np.testing.assert_array_equal(flows[0], caps[0])  # one layer: the edge itself
    # two layers: from (2, 0) through c (min(1, 1)) and d (min(1, 1)) to (0, 0)
    assert flows[1, 0, 0] == pytest.approx(2.0)
    assert flows[1, 1, 0] == pytest.approx(1.0)  # b reaches only c


def test_two_layer_flow_is_the_sum_of_path_minima():
    """With two layers every path is (i -> a -> j), disjoint from the others: the flow is a sum of minima."""
    rng = np.random.default_rng(1)
    caps = rng.random((2, 5, 5))
    flows = max_flow_through_layers(caps)
    expected = np.minimum(caps[1][:, :, None], caps[0][None, :, :]).sum(axis=1)  # (i, a, j) summed over a
    np.testing.assert_allclose(flows[1], expected, atol=1e-12)


def test_flow_equals_networkx_on_random_maps():
    nx = pytest.importorskip("networkx")
    rng = np.random.default_rng(2)
    caps = residual_attention(random_attentions(rng, layers=4, heads=3, s=5))
    flows = max_flow_through_layers(caps)
    for layer in range(4):
        graph = nx.DiGraph()
        for k in range(layer + 1):
            for a in range(5):
                for b in range(5):
                    graph.add_edge((k + 1, a), (k, b), capacity=float(caps[k, a, b]))
        for i in range(5):
            for j in range(5):
                expected = nx.maximum_flow_value(graph, (layer + 1, i), (0, j))
                assert flows[layer, i, j] == pytest.approx(expected, abs=1e-9)


def test_attention_flow_is_normalised_and_limited():
    rng = np.random.default_rng(3)
    att = random_attentions(rng, layers=3, s=5)
    flow = bert_core.attention_flow(att)
    raw = bert_core.attention_flow(att, normalize=False)
    np.testing.assert_allclose(flow.sum(-1), 1.0, atol=1e-12)
    np.testing.assert_allclose(flow, raw / raw.sum(-1, keepdims=True), atol=1e-12)
    assert raw.max() <= 1.0 + 1e-12  # a source's edges carry one row of a distribution
    with pytest.raises(InputError, match="limited to 4 tokens"):
        bert_core.attention_flow(att, max_tokens=4)
    with pytest.raises(InputError):
        max_flow_through_layers(-np.ones((1, 2, 2)))


# -- head roles -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def punctuated(tiny_model):
    r = tiny_model.analyze("the cat , sat .")
    assert r.tokens == ["[CLS]", "the", "cat", ",", "sat", ".", "[SEP]"]
    return r


def hand_heads(s: int) -> np.ndarray:
    """(1, 8, S, S): one head per role, then a head split evenly between three targets (no clear role)."""
    eye = np.eye(s)
    heads = np.zeros((8, s, s))
    heads[0][:, 0] = 1.0  # [CLS]
    heads[1][:, s - 1] = 1.0  # [SEP]
    heads[2][:, [3, 5]] = 0.5  # "," and "."
    heads[3] = eye[np.maximum(np.arange(s) - 1, 0)]  # previous (row 0: itself)
    heads[4] = eye[np.minimum(np.arange(s) + 1, s - 1)]  # next (last row: itself)
    heads[5] = eye  # self
    heads[6] = 1.0 / s  # uniform
    heads[7][:, [0, 1, 2]] = [0.4, 0.3, 0.3]
    return heads[None]


def test_head_roles_on_hand_built_maps(punctuated):
    s = len(punctuated.tokens)
    roles = bert_core.head_roles(dataclasses.replace(punctuated, attentions=hand_heads(s)))
    assert roles.labels == (("cls", "sep", "punctuation", "previous", "next", "self", "broad", None),)
    np.testing.assert_allclose(roles.to_cls[0, :2], [1.0, 0.0])
    np.testing.assert_allclose(roles.to_sep[0, :2], [0.0, 1.0])
    assert roles.to_punctuation[0, 2] == 1.0
    assert roles.to_previous[0, 3] == 1.0 and roles.to_next[0, 4] == 1.0 and roles.to_self[0, 5] == 1.0
    assert roles.to_self[0, 3] == pytest.approx(1 / s)  # only row 0 looks at itself
    assert roles.to_previous[0, 6] == pytest.approx(1 / s)
    assert roles.to_cls[0, 7] == pytest.approx(0.4) and roles.to_cls[0, 7] < ROLE_THRESHOLD
    np.testing.assert_allclose(roles.entropy[0, 6], math.log(s))
    np.testing.assert_allclose(roles.normalized_entropy[0, [0, 6]], [0.0, 1.0], atol=1e-12)
    assert roles.normalized_entropy[0, 7] < BROAD_THRESHOLD
    table = roles.rows()
    assert len(table) == 8 and table[2]["label"] == "punctuation" and table[2]["punctuation"] == 1.0
    assert roles.score("broad") is roles.normalized_entropy
    with pytest.raises(InputError):
        roles.score("syntax")


def test_head_roles_on_a_real_analysis_are_distributions(tiny_model):
    r = tiny_model.analyze("we sat by the river", "it was cold")
    roles = bert_core.head_roles(r)
    total = roles.to_cls + roles.to_sep  # disjoint targets: at most all of a row
    assert roles.to_cls.shape == (2, 4) and np.all(total <= 1 + 1e-6)
    assert np.all(roles.to_punctuation == 0)  # no punctuation in the text
    expected_sep = r.attentions[..., [i for i, t in enumerate(r.tokens) if t == "[SEP]"]].sum(-1).mean(-1)
    np.testing.assert_allclose(roles.to_sep, expected_sep, atol=1e-6)


def test_role_stability_counts_labels_across_inputs(punctuated):
    s = len(punctuated.tokens)
    base = hand_heads(s)
    swapped = base.copy()
    swapped[0, [0, 1]] = base[0, [1, 0]]  # heads 0 and 1 trade roles
    unclear = base.copy()
    unclear[0, 0] = base[0, 7]  # head 0 has no clear role
    analyses = [dataclasses.replace(punctuated, attentions=a) for a in (base, base, swapped, unclear)]
    stability = bert_core.role_stability(analyses)
    assert stability.count == 4
    assert stability.common[0][:3] == ("cls", "sep", "punctuation")
    np.testing.assert_allclose(stability.stability[0, :3], [0.5, 0.75, 1.0])
    assert stability.common[0][7] is None and stability.stability[0, 7] == 0.0
    np.testing.assert_allclose(stability.mean_scores["cls"][0, 0], (1 + 1 + 0 + 0.4) / 4)
    with pytest.raises(InputError):
        bert_core.role_stability([])


def test_punctuation_pieces():
    assert is_punctuation(",") and is_punctuation("##.") and is_punctuation("?!")
    assert not is_punctuation("a") and not is_punctuation("cat") and not is_punctuation("a,")
    bpe = PieceStyle(continuation_prefix=None, word_start_marker="Ġ")
    assert is_punctuation("Ġ,", bpe) and not is_punctuation("Ġ", bpe)


# -- hidden states by layer -------------------------------------------------------------------------------


def test_layer_trajectory_by_hand(punctuated):
    h = np.zeros((3, len(punctuated.tokens), 4))
    h[0, :, 0] = 1.0  # e0
    h[1, :, 0] = 2.0  # 2 e0: same direction, twice as long
    h[2, :, 1] = 3.0  # 3 e1: orthogonal
    h[:, 1] = [[1, 1, 0, 0], [1, 0, 0, 0], [0, 1, 0, 0]]  # token 1 turns 45 degrees each layer
    t = bert_core.layer_trajectory(dataclasses.replace(punctuated, hidden_states=h))
    np.testing.assert_allclose(t.norms[:, 0], [1, 2, 3])
    assert np.isnan(t.cosine_to_previous[0]).all()
    np.testing.assert_allclose(t.cosine_to_previous[1:, 0], [1, 0], atol=1e-12)
    np.testing.assert_allclose(t.cosine_to_last[:, 0], [0, 0, 1], atol=1e-12)
    np.testing.assert_allclose(t.cosine_to_previous[1:, 1], [1 / math.sqrt(2), 0], atol=1e-12)
    np.testing.assert_allclose(t.cosine_to_last[:, 1], [1 / math.sqrt(2), 0, 1], atol=1e-12)


def test_layer_trajectory_on_a_real_analysis(tiny_model):
    r = tiny_model.analyze("the bank by the river")
    t = bert_core.layer_trajectory(r)
    h = r.hidden_states.astype(np.float64)
    assert t.norms.shape == t.cosine_to_last.shape == (3, len(r.tokens))
    np.testing.assert_allclose(t.norms, np.sqrt((h**2).sum(-1)), rtol=1e-12)
    unit = h / np.linalg.norm(h, axis=-1, keepdims=True)
    np.testing.assert_allclose(t.cosine_to_previous[2], (unit[2] * unit[1]).sum(-1), atol=1e-12)
    np.testing.assert_allclose(t.cosine_to_last[-1], 1.0, atol=1e-12)


def test_token_pca_matches_the_covariance_eigenvectors(tiny_model):
    r = tiny_model.analyze("the cat sat on the bank of the river")
    pca = bert_core.token_pca(r, 2)
    x = r.hidden_states[2].astype(np.float64)
    x = x - x.mean(0)
    values, vectors = np.linalg.eigh(x.T @ x)  # ascending
    top = vectors[:, ::-1][:, :2]  # (H, 2)
    np.testing.assert_allclose(np.abs(pca.coordinates), np.abs(x @ top), atol=1e-9)
    np.testing.assert_allclose(np.abs(pca.components), np.abs(top.T), atol=1e-9)
    np.testing.assert_allclose(pca.explained_variance_ratio, values[::-1][:2] / values.sum(), atol=1e-12)
    np.testing.assert_allclose(pca.coordinates, x @ pca.components.T, atol=1e-9)
    # the signs come from the data, not from LAPACK: mirrored vectors give the same picture
    mirrored = bert_core.token_pca(dataclasses.replace(r, hidden_states=-r.hidden_states), 2)
    np.testing.assert_allclose(mirrored.coordinates, pca.coordinates, atol=1e-9)
    for axis in range(2):
        assert pca.coordinates[np.abs(pca.coordinates[:, axis]).argmax(), axis] > 0


def test_token_pca_options_and_errors(tiny_model):
    r = tiny_model.analyze("the cat")
    words = bert_core.token_pca(r, 0, include_special=False)
    assert words.positions.tolist() == [1, 2] and words.coordinates.shape == (2, 2)
    # Two points span one line: the second component is exactly zero, not rounding noise a chart would stretch.
    assert words.explained_variance_ratio[1] == 0.0
    assert np.all(words.coordinates[:, 1] == 0.0) and np.all(words.components[1] == 0.0)
    assert np.all(np.abs(words.coordinates[:, 0]) > 0)
    for bad in (-1, 3, 1.0, True):
        with pytest.raises(InputError, match="layer"):
            bert_core.token_pca(r, bad)


# -- value-weighted arithmetic ----------------------------------------------------------------------------


def test_value_weighted_norms_equal_the_explicit_vector_sums():
    rng = np.random.default_rng(4)
    layers, heads, s, h = 2, 3, 5, 7
    alpha = random_attentions(rng, layers, heads, s)
    f = rng.normal(size=(layers, heads, s, h))  # f_h(x_j)
    gram = np.einsum("lnso,lmso->lsnm", f, f)
    per_head, summed, norms = value_weighted_norms(alpha, gram)
    vectors = alpha[..., None] * f[:, :, None, :, :]  # (L, N, S, S, H): alpha_ij f(x_j)
    np.testing.assert_allclose(per_head, np.linalg.norm(vectors, axis=-1), atol=1e-12)
    np.testing.assert_allclose(summed, np.linalg.norm(vectors.sum(axis=1), axis=-1), atol=1e-12)
    np.testing.assert_allclose(norms, np.linalg.norm(f, axis=-1), atol=1e-12)


def test_interpret_modules_do_not_import_torch():
    """The app calls these directly; they must work on numpy results alone."""
    for path in Path(bert_core.interpret.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            assert not any(n.split(".")[0] == "torch" for n in names), f"{path.name} imports torch"


def test_the_maps_say_which_input_they_take(tiny_model):
    """Head roles and trajectories take the Analysis (rollout and flow take it or its maps): handed its arrays,
    each says so."""
    r = tiny_model.analyze("the cat sat on the bank")
    with pytest.raises(InputError, match="takes an Analysis"):
        bert_core.head_roles(r.attentions)
    with pytest.raises(InputError, match="takes an Analysis"):
        bert_core.layer_trajectory(r.hidden_states)
    # and the others, which raised numpy's or Python's own errors (TypeError, AttributeError, ValueError)
    with pytest.raises(InputError, match="token_pca takes an Analysis"):
        bert_core.token_pca(None, 0)
    for wrong in (
        r,
        "x",
        ["x"],
        [r, None],
        [r, ""],
    ):  # one Analysis not in a list, a string, a list of others
        with pytest.raises(InputError, match="role_stability takes a list of Analysis results"):
            bert_core.role_stability(wrong)
    for wrong in ("x", np.ones(3), np.ones((2, 3, 4)), [[1.0, 2.0], [1.0]]):
        with pytest.raises(InputError, match="cosine_matrix takes a"):
            bert_core.cosine_matrix(wrong)
    assert bert_core.role_stability([r]).labels is not None  # as before for the right input


def test_trajectories_take_anything_with_hidden_states(tiny_model):
    """As the module says: an Analysis, Vectors, or another holder of (L + 1, S, H) hidden states."""
    import types

    r = tiny_model.analyze("the cat sat on the bank")
    held = types.SimpleNamespace(hidden_states=r.hidden_states)
    np.testing.assert_array_equal(bert_core.layer_trajectory(held).norms, bert_core.layer_trajectory(r).norms)
