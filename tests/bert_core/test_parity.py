"""Faithfulness: bert_core must compute what transformers' BERT computes, on the same saved random weights.

Every comparison is fp32 with an absolute tolerance of 1e-5, through the public `analyze()` path the app uses.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import transformers

import bert_core
from tests.conftest import TINY_VOCAB, make_checkpoint

TOL = 1e-5
SIZES = {
    "tiny": dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37),
    "mid": dict(
        hidden_size=256,
        num_hidden_layers=4,
        num_attention_heads=8,
        intermediate_size=1024,
        max_position_embeddings=128,
    ),
}
HF_CLASSES = {
    "model": transformers.BertModel,
    "mlm": transformers.BertForMaskedLM,
    "pretraining": transformers.BertForPreTraining,
}
TEXTS = [
    ("the cat sat on the bank of the river.", None),
    ("we deposited cash at the bank", "the river was running"),
    ("unwanted dogs, running!", "she is in the water and it was cold"),
]


def _reference(directory, kind):
    return HF_CLASSES[kind].from_pretrained(directory, attn_implementation="eager").eval()


def _hf_outputs(hf, kind, ids, types):
    with torch.no_grad():
        kwargs = dict(
            input_ids=torch.tensor([ids]),
            token_type_ids=torch.tensor([types]),
            output_attentions=True,
            output_hidden_states=True,
        )
        out = hf(**kwargs)
    base = hf if kind == "model" else hf.bert
    with torch.no_grad():
        emb = base.embeddings
        word = emb.word_embeddings(kwargs["input_ids"])
        seg = emb.token_type_embeddings(kwargs["token_type_ids"])
        pos = emb.position_embeddings(torch.arange(len(ids))[None])
    return out, (word, seg, pos)


def _close(ours: np.ndarray, theirs: torch.Tensor, what: str) -> None:
    theirs = theirs.detach().numpy()
    assert ours.shape == theirs.shape, f"{what}: shape {ours.shape} vs {theirs.shape}"
    assert ours.dtype == np.float32, what
    diff = float(np.max(np.abs(ours - theirs))) if ours.size else 0.0
    assert diff <= TOL, f"{what}: max abs difference {diff:.3g} > {TOL}"


@pytest.fixture(
    scope="module", params=[(k, s) for s in SIZES for k in HF_CLASSES], ids=lambda p: f"{p[0]}-{p[1]}"
)
def pair(request, tmp_path_factory):
    kind, size = request.param
    directory = make_checkpoint(tmp_path_factory.mktemp(f"{kind}-{size}"), kind, seed=7, **SIZES[size])
    return kind, bert_core.load_pretrained(directory), _reference(directory, kind)


@pytest.mark.parametrize("text,text_pair", TEXTS)
def test_every_intermediate_matches_transformers(pair, text, text_pair):
    kind, ours, hf = pair
    r = ours.analyze(text, text_pair)
    out, (word, seg, pos) = _hf_outputs(hf, kind, r.input_ids.tolist(), r.token_type_ids.tolist())

    # The inputs are the reference tokenizer's too (tested separately); here they are shared.
    _close(r.embeddings.word, word[0], "word embedding")
    _close(r.embeddings.segment, seg[0], "segment embedding")
    _close(r.embeddings.position, pos[0], "position embedding")
    _close(r.embeddings.normalized, out.hidden_states[0][0], "embedding output")
    assert len(out.attentions) == r.attentions.shape[0] == hf.config.num_hidden_layers
    for layer, att in enumerate(out.attentions):
        _close(r.attentions[layer], att[0], f"attention layer {layer}")
    for layer, hidden in enumerate(out.hidden_states):
        _close(r.hidden_states[layer], hidden[0], f"hidden state {layer}")
    np.testing.assert_allclose(r.attentions.sum(-1), 1.0, atol=1e-5)

    if kind == "model":
        _close(r.pooled, out.pooler_output[0], "pooled")
    elif kind == "mlm":
        assert r.pooled is None  # BertForMaskedLM has no pooler; we must not invent one
    if kind in ("mlm", "pretraining"):
        logits = out.logits if kind == "mlm" else out.prediction_logits
        with torch.inference_mode():
            ours_logits = ours.network.logits("mlm", torch.from_numpy(r.hidden_states[-1])).numpy()
        _close(ours_logits, logits[0], "MLM logits")
    if kind == "pretraining":
        with torch.no_grad():
            _close(r.pooled, hf.bert.pooler(out.hidden_states[-1])[0], "pooled")
        probs = torch.softmax(out.seq_relationship_logits[0], -1)
        if text_pair is not None:
            assert abs(ours.next_sentence(text, text_pair) - float(probs[0])) <= TOL


def test_mask_predictions_match_transformers_probabilities(tmp_path):
    directory = make_checkpoint(tmp_path / "m", "mlm", seed=3)
    ours = bert_core.load_pretrained(directory)
    hf = _reference(directory, "mlm")
    text = "the [MASK] sat on the [MASK] ."
    preds = ours.predict_masks(text, top_k=5)
    enc = ours.tokenizer.encode(text)
    with torch.no_grad():
        logits = hf(input_ids=torch.tensor([enc.input_ids.tolist()])).logits[0]
    probs = torch.softmax(logits, -1)
    assert [p.position for p in preds] == [i for i, t in enumerate(enc.tokens) if t == "[MASK]"]
    for p in preds:
        top = torch.topk(probs[p.position], 5)
        assert p.token_ids == top.indices.tolist()
        np.testing.assert_allclose(p.probabilities, top.values.numpy(), atol=TOL)
        assert p.tokens == [TINY_VOCAB[i] for i in p.token_ids]


@pytest.mark.parametrize(
    "act",
    [
        "gelu_new",
        "relu",
        "silu",
        "gelu_pytorch_tanh",
        "gelu_accurate",
        "gelu_python",
        "quick_gelu",
        "mish",
        "linear",
    ],
)
def test_other_activations_match(tmp_path, act):
    from bert_core.config import SUPPORTED_ACTIVATIONS
    from bert_core.modeling.activations import ACTIVATIONS

    assert set(SUPPORTED_ACTIVATIONS) == set(
        ACTIVATIONS
    )  # what the config accepts is what the model computes
    directory = make_checkpoint(tmp_path / act, "pretraining", hidden_act=act)
    ours = bert_core.load_pretrained(directory)
    hf = _reference(directory, "pretraining")
    r = ours.analyze("the dog ran by the river", "it was wet")
    out, _ = _hf_outputs(hf, "pretraining", r.input_ids.tolist(), r.token_type_ids.tolist())
    _close(r.hidden_states[-1], out.hidden_states[-1][0], f"last hidden state ({act})")


def test_batched_analysis_equals_single(tiny_model):
    texts = [
        "the bank of the river",
        ("cash at my bank", "we sat"),
        "a dog",
        "she was in the water and it ran",
    ]
    batched = tiny_model.analyze_batch(texts)
    for text, b in zip(texts, batched, strict=True):
        single = tiny_model.analyze(*((text, None) if isinstance(text, str) else text))
        assert b.tokens == single.tokens
        np.testing.assert_allclose(b.attentions, single.attentions, atol=1e-6)
        np.testing.assert_allclose(b.hidden_states, single.hidden_states, atol=1e-5)
        np.testing.assert_allclose(b.pooled, single.pooled, atol=1e-5)
