"""The analysis API: shapes, invariants, bad input, head masks, MLM at chosen positions, thread safety."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch
import transformers

import bert_core
from bert_core import InputError
from tests.conftest import analyze_concurrently, make_checkpoint


def test_analysis_shapes_and_invariants(tiny_model):
    r = tiny_model.analyze("the cat sat on the bank", "the river was cold")
    s = len(r.tokens)
    assert r.tokens[0] == "[CLS]" and r.tokens[-1] == "[SEP]" and r.tokens.count("[SEP]") == 2
    assert r.input_ids.shape == r.token_type_ids.shape == r.position_ids.shape == (s,)
    assert r.position_ids.tolist() == list(range(s))
    first_sep = r.tokens.index("[SEP]")
    assert r.token_type_ids.tolist() == [0] * (first_sep + 1) + [1] * (s - first_sep - 1)
    assert r.attentions.shape == (2, 4, s, s) and r.attentions.dtype == np.float32
    np.testing.assert_allclose(r.attentions.sum(-1), 1.0, atol=1e-6)
    assert r.hidden_states.shape == (3, s, 32)
    np.testing.assert_array_equal(r.hidden_states[0], r.embeddings.normalized)
    e = r.embeddings
    np.testing.assert_allclose(e.summed, e.word + e.segment + e.position, atol=1e-6)
    assert r.pooled.shape == (32,)
    assert not r.truncated and r.num_tokens_before_truncation == s
    assert r.special_tokens_mask.tolist() == [t in ("[CLS]", "[SEP]") for t in r.tokens]


def test_analysis_is_picklable(tiny_model):
    r = tiny_model.analyze("the bank")
    back = pickle.loads(pickle.dumps(r))
    assert back.tokens == r.tokens
    np.testing.assert_array_equal(back.attentions, r.attentions)


def test_offsets_point_into_the_typed_text(tiny_model):
    text, pair = "The  Cat sat", "on the BANK"
    r = tiny_model.analyze(text, pair)
    for token, (start, end), seq in zip(r.tokens, r.offsets.tolist(), r.sequence_ids, strict=True):
        if seq is None:
            continue
        source = text if seq == 0 else pair
        assert source[start:end].lower() == token.removeprefix("##")


@pytest.mark.parametrize("text", ["", "   ", "\n\t  "])
def test_empty_text(tiny_model, text):
    with pytest.raises(InputError, match="empty"):
        tiny_model.analyze(text)


def test_empty_pair(tiny_model):
    with pytest.raises(InputError, match="empty"):
        tiny_model.analyze("the cat", "  ")


def test_non_string_text(tiny_model):
    with pytest.raises(InputError):
        tiny_model.analyze(None)  # type: ignore[arg-type]


def test_every_pass_refuses_a_text_that_is_not_a_string_by_name(tiny_model):
    """The passes that read a typed mask first once failed with AttributeError on a number or a tuple."""
    calls = [tiny_model.fill_mask, tiny_model.pseudo_log_likelihood, tiny_model.logit_lens,
             tiny_model.head_importance, lambda t: tiny_model.rank_minimal_pairs([t, "the cat"])]  # fmt: skip
    for call in calls:
        for wrong in (123, ("the", "cat")):
            with pytest.raises(InputError, match="must be a string"):
                call(wrong)


def test_batch_calls_refuse_one_string_and_items_that_are_not_texts(tiny_model):
    """One string was taken as a list of its characters, each analysed as a text; None failed as a TypeError."""
    for call in (tiny_model.analyze_batch, tiny_model.vectors_batch):
        with pytest.raises(InputError, match="not one string"):
            call("abc")
        with pytest.raises(InputError, match=r"texts\[1\] must be a string or a"):
            call(["the cat", None])
        with pytest.raises(InputError, match=r"texts\[0\] must be a string or a"):
            call([3])
    a, b = tiny_model.analyze_batch([("the cat", "the dog"), "the bank"])
    assert a.text_pair == "the dog" and b.text_pair is None


def test_long_text_is_truncated_and_flagged(tmp_path):
    model = bert_core.load_pretrained(
        make_checkpoint(tmp_path / "long", "pretraining", max_position_embeddings=512)
    )
    r = model.analyze(" ".join(["cat"] * 600))
    assert len(r.tokens) == 512 and r.truncated and r.num_tokens_before_truncation == 602
    assert r.tokens[-1] == "[SEP]"
    assert r.attentions.shape[-1] == 512


def test_fill_mask_without_mask(tiny_model):
    with pytest.raises(InputError, match=r"no \[MASK\] in the text"):
        tiny_model.fill_mask("the cat sat")


def test_fill_mask_shape_and_order(tiny_model):
    out = tiny_model.fill_mask("the [MASK] sat on the [MASK] [MASK]", top_k=3)
    assert len(out) == 3
    for preds in out:
        probs = [p for _, p in preds]
        assert len(preds) == 3 and probs == sorted(probs, reverse=True) and 0 < sum(probs) <= 1 + 1e-6
    with pytest.raises(InputError, match="top_k"):
        tiny_model.fill_mask("the [MASK]", top_k=0)
    # a mask past the model's length: one list fewer would pair the rest with the wrong masks
    long = "the [MASK] sat . " + "the cat sat on the mat . " * 20 + "the [MASK] ran ."
    assert len(tiny_model.predict_masks(long)) == 1
    with pytest.raises(InputError, match=r"^1 of the 2 \[MASK\] lie past the model's 64 pieces"):
        tiny_model.fill_mask(long)


def test_predict_at_matches_predict_masks_and_reports_loss(tiny_model):
    enc = tiny_model.tokenizer.encode("the [MASK] sat")
    position = enc.tokens.index("[MASK]")
    via_masks = tiny_model.predict_masks("the [MASK] sat", top_k=4)[0]
    cat = tiny_model.tokenizer.token_to_id("cat")
    scores = tiny_model.predict_at(enc.input_ids, [position], labels=[cat], top_k=4)
    assert scores.predictions[0].token_ids == via_masks.token_ids
    np.testing.assert_allclose(scores.predictions[0].probabilities, via_masks.probabilities, atol=1e-6)
    assert scores.losses.shape == (1,)
    np.testing.assert_allclose(np.exp(-scores.losses), scores.label_probabilities, rtol=1e-5)
    with pytest.raises(InputError):
        tiny_model.predict_at(enc.input_ids, [len(enc.input_ids)])


def test_head_mask_equals_zeroing_that_heads_values(tiny_checkpoint):
    """Switching a head off must equal a model whose value projection for that head is zero."""
    model = bert_core.load_pretrained(tiny_checkpoint)
    head_mask = np.ones((2, 4), dtype=np.float32)
    head_mask[1, 2] = 0.0
    masked = model.analyze("the cat sat on the bank", head_mask=head_mask)

    hf = transformers.BertForPreTraining.from_pretrained(tiny_checkpoint, attn_implementation="eager").eval()
    value = hf.bert.encoder.layer[1].attention.self.value
    with torch.no_grad():
        value.weight[2 * 8 : 3 * 8] = 0
        value.bias[2 * 8 : 3 * 8] = 0
        out = hf(input_ids=torch.tensor([masked.input_ids.tolist()]), output_hidden_states=True)
    np.testing.assert_allclose(masked.hidden_states[-1], out.hidden_states[-1][0].numpy(), atol=1e-5)
    unmasked = model.analyze("the cat sat on the bank")
    assert np.abs(unmasked.hidden_states[-1] - masked.hidden_states[-1]).max() > 1e-3
    np.testing.assert_array_equal(masked.hidden_states[1], unmasked.hidden_states[1])  # layer 0 untouched
    np.testing.assert_array_equal(masked.head_mask, head_mask)
    with pytest.raises(InputError, match="head_mask"):
        model.analyze("the cat", head_mask=np.ones((3, 4)))


def test_concurrent_calls_equal_serial_calls(tiny_model):
    texts = [
        f"the {w} sat on the bank" for w in ("cat", "dog", "river", "money", "water", "cash", "she", "he")
    ]
    serial = {t: tiny_model.analyze(t) for t in texts}
    results = analyze_concurrently(tiny_model, texts)
    for text in texts:
        np.testing.assert_array_equal(results[text].hidden_states, serial[text].hidden_states)
        np.testing.assert_array_equal(results[text].attentions, serial[text].attentions)


def test_info_counts_parameters(tiny_model):
    info = tiny_model.info
    assert info.num_layers == 2 and info.num_heads == 4 and info.hidden_size == 32
    # Packed layers hide their weights from .parameters(); the count must not change with packing.
    assert tiny_model.network.is_packed
    dense = sum(v.numel() for v in tiny_model.network.state_dict().values())
    assert info.num_parameters == dense == 21230
    assert tiny_model.position_embedding_table().shape == (64, 32)


def test_info_counts_the_parameters_once_per_network(tiny_checkpoint, monkeypatch):
    """Pages read `info` on every run (and once per token in places): the walk over every module that counts
    the parameters runs once for a network, and again only for a different network object."""
    import bert_core

    model = bert_core.load_pretrained(tiny_checkpoint)
    counted = []
    real = type(model.network).num_parameters
    monkeypatch.setattr(type(model.network), "num_parameters", lambda self: counted.append(1) or real(self))
    assert model.info.num_parameters == model.info.num_parameters == 21230 and len(counted) == 1
    model.network = bert_core.load_pretrained(tiny_checkpoint).network
    assert model.info.num_parameters == 21230 and len(counted) == 2


def test_vectors_batch_equals_analyze_in_bounded_chunks(tiny_model, monkeypatch):
    texts = [
        "the bank of the river",
        ("cash at my bank", "we sat"),
        "a dog",
        "she was in the water and it ran",
    ] * 3
    widths = []
    original = tiny_model._run

    def spy(encodings, head_mask, **kwargs):
        widths.append(len(encodings) * max(len(e.tokens) for e in encodings))
        assert kwargs.get("keep_attentions") is False
        out = original(encodings, head_mask, **kwargs)
        assert out.attentions is None
        return out

    monkeypatch.setattr(tiny_model, "_run", spy)
    vectors = tiny_model.vectors_batch(texts, max_batch_tokens=40)
    monkeypatch.undo()
    assert len(widths) > 1 and max(widths) <= 40
    for text, v in zip(texts, vectors, strict=True):
        single = tiny_model.analyze(*((text, None) if isinstance(text, str) else text))
        assert v.tokens == single.tokens and v.word_ids == single.word_ids
        np.testing.assert_allclose(v.hidden_states, single.hidden_states, atol=1e-5)
        np.testing.assert_allclose(v.pooled, single.pooled, atol=1e-5)
    with pytest.raises(InputError, match=r"texts\[1\]: "):
        tiny_model.vectors_batch(["the cat", "\x00"])


def test_predict_at_checks_segment_ids_and_labels(tiny_model):
    enc = tiny_model.tokenizer.encode("the [MASK] sat", "the cat")
    ids, position = enc.input_ids, enc.tokens.index("[MASK]")
    good = tiny_model.predict_at(ids, [position], token_type_ids=enc.token_type_ids)
    assert len(good.predictions) == 1
    fractional = enc.token_type_ids * 0.9  # was read as segment 0 where fractional input ids are refused
    for types in (
        [1],
        enc.token_type_ids[:-1],
        np.full_like(enc.token_type_ids, 2),
        [[0] * len(ids)],
        fractional,
    ):
        with pytest.raises(InputError, match="token_type_ids"):
            tiny_model.predict_at(ids, [position], token_type_ids=types)
    for label in (-100, tiny_model.config.vocab_size, 10**6):
        with pytest.raises(InputError, match="labels"):
            tiny_model.predict_at(ids, [position], labels=[label])


def test_a_single_segment_model_refuses_a_pair_clearly(tmp_path):
    model = bert_core.load_pretrained(make_checkpoint(tmp_path, "pretraining", seed=2, type_vocab_size=1))
    assert model.analyze("the cat").num_layers == 2
    calls = [
        lambda: model.analyze("the cat", "the dog"),
        lambda: model.predict_masks("the [MASK]", "the dog"),
        lambda: model.next_sentence("the cat", "the dog"),
        lambda: model.analyze_batch(["the cat", ("the", "dog")]),
    ]
    for call in calls:
        with pytest.raises(InputError, match="single segment type"):
            call()


def test_predictions_name_embedding_rows_past_the_vocabulary(tmp_path):
    """A table padded past vocab.txt (30528 rows for 30522 pieces is common): those rows are in the softmax
    the model computed, so they are ranked like any other and named by id, never an error."""
    from tests.conftest import TINY_VOCAB

    path = make_checkpoint(tmp_path, "mlm", seed=1, vocab_size=len(TINY_VOCAB) + 8)
    model = bert_core.load_pretrained(path)
    with torch.no_grad():
        model.network.cls.predictions.bias[len(TINY_VOCAB) + 3] = 50.0  # make a padded row win
    p = model.predict_masks("the cat sat on the [MASK]", top_k=model.config.vocab_size)[0]
    assert p.token_ids[0] == len(TINY_VOCAB) + 3
    assert p.tokens[0] == f"[id {len(TINY_VOCAB) + 3}: no vocabulary piece]"
    assert sorted(p.token_ids) == list(range(model.config.vocab_size))
    assert sum(p.probabilities) == pytest.approx(1.0, abs=1e-5)
    named = {i: t for i, t in zip(p.token_ids, p.tokens, strict=True) if i < len(TINY_VOCAB)}
    assert named == {i: TINY_VOCAB[i] for i in named}


def test_predict_at_refuses_ragged_or_non_numeric_lists_clearly(tiny_model):
    enc = tiny_model.tokenizer.encode("the [MASK] sat")
    position = enc.tokens.index("[MASK]")
    with pytest.raises(InputError, match="token_type_ids"):
        tiny_model.predict_at(enc.input_ids, [position], token_type_ids=[[0], [0, 0]])
    with pytest.raises(InputError, match="token_type_ids"):
        tiny_model.predict_at(enc.input_ids, [position], token_type_ids=["a"] * len(enc.input_ids))
    with pytest.raises(InputError, match="labels"):
        tiny_model.predict_at(enc.input_ids, [position], labels=["cat"])
    with pytest.raises(InputError, match="input_ids must be integers"):  # 2.7 was read as id 2
        tiny_model.predict_at([2.7, *enc.input_ids.tolist()[1:]], [position])
    with pytest.raises(InputError, match="input_ids must be a list of integers"):
        tiny_model.predict_at(["a", "b"], [0])


def test_a_head_mask_or_batch_budget_that_makes_no_sense_is_refused(tiny_model):
    """A NaN head mask made every later hidden state NaN, and a batch budget of 0 or less acted as 1."""
    mask = np.ones((2, 4), dtype=np.float32)
    mask[0, 1] = np.nan
    with pytest.raises(InputError, match="head_mask must hold numbers from 0 to 1"):
        tiny_model.analyze("the cat", head_mask=mask)
    # 2 doubled a head's output and -1 flipped it (and rollout weighted them so), without a word; strings and
    # ragged lists leaked numpy's own ValueError
    for bad in (np.full((2, 4), 2.0), np.full((2, 4), -1.0), [["a"] * 4] * 2, [[1, 1, 1, 1], [1]]):
        with pytest.raises(InputError, match="head_mask must"):
            tiny_model.analyze("the cat", head_mask=bad)
    halved = np.full((2, 4), 0.5)  # a fraction scales a head: allowed
    assert tiny_model.analyze("the cat", head_mask=halved).head_mask.tolist() == halved.tolist()
    for budget in (0, -1, 2.5):
        with pytest.raises(InputError, match="max_batch_tokens must be a positive integer"):
            tiny_model.vectors_batch(["the cat", "the dog"], max_batch_tokens=budget)


def test_pair_heads_need_sentence_b(tiny_model):
    """next_sentence(a, None) read A alone and still answered a probability."""
    with pytest.raises(InputError, match="sentence B"):
        tiny_model.next_sentence("I went to the bank.", None)
    with pytest.raises(InputError, match="text_b"):
        tiny_model.next_sentence("I went to the bank.", 3)
    assert 0.0 <= tiny_model.next_sentence("I went to the bank.", "the river was cold") <= 1.0


@pytest.mark.parametrize(
    "positions, labels, said",
    [(2, None, "positions"), (["a"], None, "positions"), ([2.5], None, "positions"), ([2], 66, "labels")],
)
def test_predict_at_names_bad_positions_and_labels(tiny_model, positions, labels, said):
    ids = tiny_model.encode("the cat sat").input_ids
    with pytest.raises(InputError, match=said):
        tiny_model.predict_at(ids, positions, labels=labels)


def test_batch_calls_name_the_text_they_cannot_read(tiny_model):
    with pytest.raises(InputError, match=r"texts\[1\]: text is empty"):
        tiny_model.analyze_batch(["the cat", ""])
    for call in (tiny_model.analyze_batch, tiny_model.vectors_batch):
        with pytest.raises(InputError, match="texts must be a list"):
            call(None)


def test_predict_at_reads_positions_and_labels_of_any_integer_kind(tiny_model):
    ids = tiny_model.encode("the cat sat").input_ids
    plain = tiny_model.predict_at(ids, [2], labels=[int(ids[2])])
    for positions, labels in (((p for p in [2]), np.array([ids[2]])), (np.array([2]), [np.int64(ids[2])])):
        got = tiny_model.predict_at(ids, positions, labels=labels)
        np.testing.assert_array_equal(got.losses, plain.losses)
    for labels in ([2.7], ["5"], [[2]]):  # 2.7 was read as id 2; "5" leaked numpy's ValueError
        with pytest.raises(InputError, match="labels"):
            tiny_model.predict_at(ids, [2], labels=labels)
