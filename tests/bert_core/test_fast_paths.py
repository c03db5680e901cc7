"""One forward, with and without autograd: the same results in the same layout.

Without autograd the encoder writes the probabilities straight into the result stack and adds in place; with
autograd it runs the same arithmetic out of place. Both must agree, with and without padding and head masks.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import bert_core
from tests.conftest import make_checkpoint

MID = dict(hidden_size=64, num_hidden_layers=3, num_attention_heads=4, intermediate_size=96)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return bert_core.load_pretrained(
        make_checkpoint(tmp_path_factory.mktemp("fast"), "pretraining", seed=11, **MID)
    )


def _inputs(b: int = 3, s: int = 9, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, 60, (b, s), generator=g)
    types = torch.zeros_like(ids)
    types[:, s // 2 :] = 1
    mask = torch.ones_like(ids)
    mask[1, 6:] = 0
    mask[2, 3:] = 0
    return ids, types, mask


def _both(network, *args, **kwargs):
    with torch.inference_mode():
        fast = network(*args, **kwargs)
    with torch.enable_grad():
        slow = network(*args, **kwargs)
    return fast, slow


@pytest.mark.parametrize("use_head_mask", [False, True])
def test_inference_path_equals_autograd_path(model, use_head_mask):
    ids, types, mask = _inputs()
    head_mask = None
    if use_head_mask:
        head_mask = torch.ones(MID["num_hidden_layers"], MID["num_attention_heads"])
        head_mask[1, 2] = 0.0
    fast, slow = _both(model.network, ids, types, attention_mask=mask, head_mask=head_mask)
    # one layout on both paths: (L, B, N, S, S) and (L + 1, B, S, H)
    assert fast.attentions.shape == slow.attentions.shape == (3, 3, 4, 9, 9)
    assert fast.hidden_states.shape == slow.hidden_states.shape == (4, 3, 9, 64)
    assert slow.hidden_states.requires_grad and not fast.hidden_states.requires_grad
    torch.testing.assert_close(fast.attentions, slow.attentions.detach(), atol=1e-6, rtol=0)
    torch.testing.assert_close(fast.hidden_states, slow.hidden_states.detach(), atol=1e-5, rtol=0)
    torch.testing.assert_close(fast.pooled, slow.pooled.detach(), atol=1e-5, rtol=0)


def test_training_still_takes_the_autograd_path(tmp_path):
    ids, types, mask = _inputs(s=7)
    network = bert_core.load_pretrained(make_checkpoint(tmp_path, "pretraining", seed=11, **MID)).network
    assert network.is_packed
    network.train()  # unpacks: the pre-packed layout has no backward
    assert not network.is_packed
    network.zero_grad()
    out = network(ids, types, attention_mask=mask)
    out.last_hidden_state.sum().backward()
    q = network.bert.encoder.layer[0].attention.self.query.weight
    assert q.grad is not None and float(q.grad.abs().sum()) > 0
    network.zero_grad(set_to_none=True)


def test_single_text_attentions_are_one_contiguous_array(model):
    r = model.analyze("the cat sat on the bank of the river")
    assert r.attentions.flags["C_CONTIGUOUS"] and r.attentions.dtype == np.float32
    np.testing.assert_allclose(r.attentions.sum(-1), 1.0, atol=1e-5)


def test_vectors_without_attentions_equal_the_full_path(model):
    """keep_attentions=False keeps no attention stack; the vectors must not notice, to the bit."""
    ids, types, mask = _inputs()
    head_mask = torch.ones(3, 4)
    head_mask[1, 2] = 0.5
    with torch.inference_mode():
        full = model.network(ids, types, attention_mask=mask, head_mask=head_mask)
        light = model.network(ids, types, attention_mask=mask, head_mask=head_mask, keep_attentions=False)
    assert light.attentions is None
    torch.testing.assert_close(full.hidden_states, light.hidden_states, rtol=0, atol=0)
    torch.testing.assert_close(full.pooled, light.pooled, rtol=0, atol=0)


def test_results_do_not_alias_the_callers_head_mask(model):
    head_mask = np.ones((3, 4), dtype=np.float32)
    head_mask[0, 1] = 0.0
    r = model.analyze("the cat sat", head_mask=head_mask)
    head_mask[:] = 7.0
    assert r.head_mask[0, 1] == 0.0 and r.head_mask.max() == 1.0


@pytest.mark.parametrize("grad", [False, True])
def test_one_layers_details_come_from_the_same_attention(model, grad):
    """details_layer returns that layer's queries, keys, values and raw scores, computed by the same call that
    made its probabilities: softmax(scores + mask) reproduces them, and the scores are q.k / sqrt(D)."""
    ids, types, mask = _inputs()
    with torch.inference_mode(not grad), torch.set_grad_enabled(grad):
        out = model.network(ids, types, attention_mask=mask, details_layer=1)
    d = out.details
    assert d.queries.shape == d.keys.shape == d.values.shape == (3, 4, 9, 16)  # (B, N, S, D)
    assert d.scores.shape == (3, 4, 9, 9)
    additive = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
    torch.testing.assert_close(
        torch.softmax(d.scores + additive, -1).detach(), out.attentions[1].detach(), atol=1e-6, rtol=0
    )
    torch.testing.assert_close(
        d.scores.detach(), (d.queries @ d.keys.transpose(-1, -2)).detach() / 4.0, atol=1e-5, rtol=0
    )
    assert out.details is not None and model.network(ids, types).details is None
