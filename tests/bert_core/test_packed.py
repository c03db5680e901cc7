"""Pre-packed (oneDNN) Linear weights: the default CPU inference path must stay within 1e-5 of transformers,
keep the HF-named dense state dict exactly, cost no extra copy, and get out of the way for training."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import transformers
from torch import nn

import bert_core
from bert_core.modeling.packed import PackedLinear, packing_available
from tests.conftest import make_checkpoint

pytestmark = pytest.mark.skipif(not packing_available(), reason="this torch build has no oneDNN")

MID = dict(hidden_size=64, num_hidden_layers=3, num_attention_heads=4, intermediate_size=96)
TEXT = "we deposited cash at the bank by the river"


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return make_checkpoint(tmp_path_factory.mktemp("packed"), "pretraining", seed=5, **MID)


def _linears(network):
    return [m for m in network.modules() if isinstance(m, nn.Linear | PackedLinear)]


def _reference(hf, r):
    """transformers' outputs (every attention and hidden state) for the ids and segments of Analysis `r`."""
    with torch.no_grad():
        return hf(
            input_ids=torch.tensor(r.input_ids[None]),
            token_type_ids=torch.tensor(r.token_type_ids[None]),
            output_attentions=True,
            output_hidden_states=True,
        )


def test_cpu_loading_packs_every_linear_and_opting_out_keeps_plain_ones(checkpoint):
    packed = bert_core.load_pretrained(checkpoint).network
    plain = bert_core.load_pretrained(checkpoint, pack_weights=False).network
    assert packed.is_packed and not plain.is_packed
    assert all(isinstance(m, PackedLinear) for m in _linears(packed))
    assert all(type(m) is nn.Linear for m in _linears(plain))
    # no dense copy survives next to the packed one
    assert not any(
        name.endswith("dense.weight") or "query.weight" in name for name, _ in packed.named_parameters()
    )


def test_state_dict_is_dense_hf_named_and_exact(checkpoint):
    packed = bert_core.load_pretrained(checkpoint).network.state_dict()
    plain = bert_core.load_pretrained(checkpoint, pack_weights=False).network.state_dict()
    assert list(packed) == list(plain)
    for key in plain:
        assert not packed[key].is_mkldnn, key
        torch.testing.assert_close(packed[key], plain[key], rtol=0, atol=0)


def test_packed_results_track_the_exact_path_and_transformers(checkpoint):
    ours = bert_core.load_pretrained(checkpoint)
    exact = bert_core.load_pretrained(checkpoint, pack_weights=False)
    a, b = ours.analyze(TEXT), exact.analyze(TEXT)
    np.testing.assert_allclose(a.hidden_states, b.hidden_states, atol=1e-5, rtol=0)
    np.testing.assert_allclose(a.attentions, b.attentions, atol=1e-5, rtol=0)
    np.testing.assert_allclose(a.pooled, b.pooled, atol=1e-5, rtol=0)
    # the opt-out path is the reference's own arithmetic, to the bit
    hf = transformers.BertModel.from_pretrained(checkpoint, attn_implementation="eager").eval()
    out = _reference(hf, b)
    np.testing.assert_array_equal(b.hidden_states, torch.stack(out.hidden_states)[:, 0].numpy())
    np.testing.assert_array_equal(b.attentions, torch.stack(out.attentions)[:, 0].numpy())


def test_train_unpacks_and_repacking_restores_the_same_numbers(checkpoint):
    model = bert_core.load_pretrained(checkpoint)
    before = model.analyze(TEXT)
    network = model.network
    network.train()
    assert not network.is_packed
    assert all(type(m) is nn.Linear and m.weight.requires_grad for m in _linears(network))
    network.eval()
    assert network.pack_weights() == len(_linears(network))
    after = model.analyze(TEXT)
    np.testing.assert_array_equal(before.hidden_states, after.hidden_states)


def test_loading_a_state_dict_into_a_packed_network_repacks(checkpoint, tmp_path):
    target = bert_core.load_pretrained(checkpoint)
    other_dir = make_checkpoint(tmp_path, "pretraining", seed=99, **MID)
    other = bert_core.load_pretrained(other_dir, pack_weights=False)
    target.network.load_state_dict(other.network.state_dict(), strict=True)
    assert target.network.is_packed
    np.testing.assert_allclose(
        target.analyze(TEXT).hidden_states, other.analyze(TEXT).hidden_states, atol=1e-5, rtol=0
    )
    bad = dict(other.network.state_dict())
    key = "bert.encoder.layer.0.attention.self.query.weight"
    bad[key] = bad[key][:, :-1]
    with pytest.raises(RuntimeError, match="size mismatch"):
        target.network.load_state_dict(bad)


def test_gradients_still_flow_to_the_input_of_a_packed_layer():
    torch.manual_seed(0)
    dense = nn.Linear(24, 40)
    packed = PackedLinear(dense)
    x = torch.randn(5, 24, requires_grad=True)
    packed(x).square().sum().backward()
    expected = torch.autograd.grad(dense(x).square().sum(), x)[0]
    torch.testing.assert_close(x.grad, expected)
    with torch.inference_mode():
        torch.testing.assert_close(packed(x.detach()), dense(x.detach()), atol=1e-5, rtol=0)


@pytest.mark.slow
def test_bert_base_depth_stays_within_tolerance(tmp_path):
    """The packed path's last-bit differences grow with depth: check them on a full bert-base stack
    (12 layers, hidden 768; small vocabulary to keep the checkpoint cheap) at 128 and 512 tokens."""
    directory = make_checkpoint(
        tmp_path,
        "model",
        seed=3,
        hidden_size=768,
        num_hidden_layers=12,
        num_attention_heads=12,
        intermediate_size=3072,
        max_position_embeddings=512,
    )
    ours = bert_core.load_pretrained(directory)
    assert ours.network.is_packed
    hf = transformers.BertModel.from_pretrained(directory, attn_implementation="eager").eval()
    words = "the cat sat on the bank of the river and we want cash".split()
    for n in (128, 512):
        text = " ".join(words[i % len(words)] for i in range(n - 2))
        r = ours.analyze(text)
        assert len(r.tokens) == n
        out = _reference(hf, r)
        hid = torch.stack(out.hidden_states)[:, 0].numpy()
        att = torch.stack(out.attentions)[:, 0].numpy()
        assert float(np.abs(r.hidden_states - hid).max()) <= 1e-5
        assert float(np.abs(r.attentions - att).max()) <= 1e-5
        assert float(np.abs(r.pooled - out.pooler_output[0].numpy()).max()) <= 1e-5


@pytest.mark.parametrize("rows", [1, 7, 128, 300])
def test_fused_gelu_and_residual_add_are_bit_identical_to_separate_ops(rows):
    torch.manual_seed(rows)
    layer = PackedLinear(nn.Linear(96, 160))
    x, residual = torch.randn(rows, 96), torch.randn(rows, 160)
    with torch.inference_mode():
        plain = layer(x)
        assert torch.equal(layer.forward_gelu(x), torch.nn.functional.gelu(plain))
        assert torch.equal(layer.forward_add(x, residual), plain + residual)


@pytest.mark.parametrize("name", ["gelu_new", "gelu_pytorch_tanh", "gelu_fast"])
def test_fused_tanh_gelu_is_the_configs_activation_within_rounding(name, monkeypatch):
    """ALBERT's gelu_new (and its two other spellings) rides in the packed matmul as oneDNN's tanh GELU: the
    same function, rounded its own way."""
    from bert_core.modeling.activations import ACTIVATIONS
    from bert_core.modeling.packed import linear

    torch.manual_seed(0)
    dense = nn.Linear(96, 160)
    packed = PackedLinear(dense)
    x = torch.randn(300, 96) * 3
    calls = []
    real = PackedLinear.forward_gelu
    monkeypatch.setattr(PackedLinear, "forward_gelu", lambda self, *a: calls.append(a) or real(self, *a))
    with torch.inference_mode():
        fused = linear(packed, x, activation=name)
        separate = ACTIVATIONS[name](packed(x))
    assert calls == [(x, "tanh")]  # it did ride in the matmul call
    torch.testing.assert_close(fused, separate, atol=1e-6, rtol=0)


def test_copies_and_pickles_of_a_packed_network_work(checkpoint):
    import copy
    import pickle

    model = bert_core.load_pretrained(checkpoint)
    expected = model.analyze(TEXT).hidden_states
    for clone in (copy.deepcopy(model.network), pickle.loads(pickle.dumps(model.network))):
        assert clone.is_packed
        twin = bert_core.BertScopeModel(clone, model.tokenizer, model.config)
        np.testing.assert_array_equal(twin.analyze(TEXT).hidden_states, expected)


def test_casting_or_moving_unpacks_first(checkpoint):
    network = bert_core.load_pretrained(checkpoint).network
    network.to(torch.float64)
    assert not network.is_packed
    assert network.bert.encoder.layer[0].attention.self.query.weight.dtype == torch.float64
    packed = bert_core.load_pretrained(checkpoint).network
    with pytest.raises(RuntimeError, match="unpack"):
        packed.bert.encoder.to(torch.float64)  # a sub-module cannot unpack its parents' slots
    with pytest.raises(ValueError, match="eval"):
        packed.train().pack_weights()


def test_an_untied_decoder_is_left_dense(tmp_path):
    directory = make_checkpoint(tmp_path, "mlm", seed=2, tie_word_embeddings=False, **MID)
    network = bert_core.load_pretrained(directory).network
    head = network.cls.predictions
    assert network.is_packed and type(head.decoder) is nn.Linear
    assert isinstance(head.transform.dense, PackedLinear)


@pytest.mark.parametrize("shape", [(0,), (1,), (2,), (7,), (2, 3), ()])
def test_inference_mlm_head_equals_the_plain_projection(checkpoint, shape):
    """The inference path computes the vocabulary projection transposed (faster on CPU); same logits."""
    network = bert_core.load_pretrained(checkpoint).network
    head = network.cls.predictions
    hidden = torch.randn(*shape, MID["hidden_size"], generator=torch.Generator().manual_seed(len(shape)))
    with torch.inference_mode():
        fast = head(hidden)
        plain = torch.nn.functional.linear(head.transform(hidden), head.decoder_weight, head.bias)
    assert fast.shape == plain.shape == (*shape, head.bias.shape[0])
    torch.testing.assert_close(fast, plain, atol=1e-5, rtol=0)
    with torch.enable_grad():  # the autograd path (dense layers, plain projection) agrees too
        torch.testing.assert_close(head(hidden), plain, atol=1e-5, rtol=0)


@pytest.mark.parametrize(
    "sizes",
    [MID, dict(hidden_size=96, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128)],
    ids=["head-size-16", "head-size-48"],
)
def test_exact_mode_is_bit_identical_including_the_mlm_head(tmp_path, sizes):
    """pack_weights=False promises the reference's arithmetic to the bit (the app's exact mode), also for
    head sizes whose 1/sqrt(D) is not a power of two (the demo model has D = 48) and for the MLM head."""
    directory = make_checkpoint(tmp_path, "pretraining", seed=8, **sizes)
    ours = bert_core.load_pretrained(directory, pack_weights=False)
    hf = transformers.BertForPreTraining.from_pretrained(directory, attn_implementation="eager").eval()
    text = "the cat sat on the [MASK] of the river and [MASK] was cold"
    r = ours.analyze(text)
    out = _reference(hf, r)
    np.testing.assert_array_equal(r.attentions, torch.stack(out.attentions)[:, 0].numpy())
    np.testing.assert_array_equal(r.hidden_states, torch.stack(out.hidden_states)[:, 0].numpy())
    # The head runs on the [MASK] rows only (the point of predict_masks): identical to transformers' own head
    # applied to those rows; against its logits for every row (a matmul of another shape) within 1e-5.
    masks = [i for i, t in enumerate(r.tokens) if t == "[MASK]"]
    rows = torch.from_numpy(r.hidden_states[-1, masks])
    with torch.inference_mode():
        logits = ours.network.logits("mlm", rows)
        reference = hf.cls.predictions(rows)
    np.testing.assert_array_equal(logits.numpy(), reference.numpy())
    np.testing.assert_allclose(logits.numpy(), out.prediction_logits[0, masks].numpy(), atol=1e-5, rtol=0)
    for pred, ref_row in zip(ours.predict_masks(text), reference, strict=True):
        top = torch.topk(torch.softmax(ref_row, -1), 5)
        assert list(pred.token_ids) == top.indices.tolist()
        np.testing.assert_array_equal(np.asarray(pred.probabilities, np.float32), top.values.numpy())


@pytest.mark.parametrize("head_size", [16, 48, 64])
def test_exact_mode_is_bit_identical_at_every_length(tmp_path, head_size):
    """MKL may round one product differently for different operand layouts, and only at some sizes (short
    inputs, below ~12 tokens, were where a layout change showed it): so every length from 1 to 40 words."""
    sizes = dict(hidden_size=2 * head_size, num_hidden_layers=2, num_attention_heads=2, intermediate_size=96)
    directory = make_checkpoint(tmp_path, "model", seed=11, **sizes)
    ours = bert_core.load_pretrained(directory, pack_weights=False)
    hf = transformers.BertModel.from_pretrained(directory, attn_implementation="eager").eval()
    words = (TEXT + " and the dog ran to the water").split() * 3
    for n in range(1, 41):
        r = ours.analyze(" ".join(words[:n]))
        out = _reference(hf, r)
        np.testing.assert_array_equal(
            r.attentions, torch.stack(out.attentions)[:, 0].numpy(), err_msg=f"{n} words"
        )
        np.testing.assert_array_equal(
            r.hidden_states, torch.stack(out.hidden_states)[:, 0].numpy(), err_msg=f"{n} words"
        )


def test_results_do_not_depend_on_the_thread_count(tmp_path):
    # Big enough that oneDNN and MKL split the matmuls across threads (a 2-core laptop vs a 1-core container
    # must show the same attention maps): hidden 256, FFN 1024, ~300 tokens.
    path = make_checkpoint(
        tmp_path, "pretraining", seed=9, hidden_size=256, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=1024, max_position_embeddings=320,
    )  # fmt: skip
    text = " ".join([TEXT] * 30)
    before = torch.get_num_threads()
    try:
        for pack in (True, False):
            model = bert_core.load_pretrained(path, pack_weights=pack)
            runs = []
            for threads in (1, 2):
                torch.set_num_threads(threads)
                runs.append(model.analyze(text))
            assert len(runs[0].tokens) > 250
            np.testing.assert_array_equal(runs[0].attentions, runs[1].attentions)
            np.testing.assert_array_equal(runs[0].hidden_states, runs[1].hidden_states)
    finally:
        torch.set_num_threads(before)
