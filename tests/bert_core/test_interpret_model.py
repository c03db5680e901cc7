"""The analyses that need the model, each against transformers' eager BERT on the same saved random weights:
one layer's queries/keys/values, value-weighted attention, head ablation and importance, pseudo-log-likelihood
and the logit lens. transformers 5 has no head_mask, so a head is switched off there by a pre-hook that zeroes
its slice of the context vector before the attention output projection."""

from __future__ import annotations

import contextlib
import dataclasses
import math

import numpy as np
import pytest
import torch
import transformers
from safetensors.numpy import load_file

import bert_core
from bert_core import InputError, MissingHeadError
from tests.conftest import make_checkpoint

TOL = 1e-5
# Larger random weights than transformers' 0.02 default, so that heads matter and predictions are peaked
# enough for ablation and the logit lens to show differences well above the tolerance.
SIZE = dict(num_hidden_layers=3, num_attention_heads=4, hidden_size=32, initializer_range=0.15)


@pytest.fixture(scope="module")
def mlm(tmp_path_factory):
    directory = make_checkpoint(tmp_path_factory.mktemp("interp") / "mlm", "mlm", seed=11, **SIZE)
    hf = transformers.BertForMaskedLM.from_pretrained(directory, attn_implementation="eager").eval()
    return bert_core.load_pretrained(directory), hf, directory


@contextlib.contextmanager
def heads_off(hf_bert, heads):
    """Switch (layer, head) pairs off in a transformers BertModel: zero each head's slice of the context."""
    d = hf_bert.config.hidden_size // hf_bert.config.num_attention_heads
    handles = []
    for layer, head in heads:

        def zero(module, args, head=head):
            context = args[0].clone()
            context[..., head * d : (head + 1) * d] = 0
            return (context, *args[1:])

        dense = hf_bert.encoder.layer[layer].attention.output.dense
        handles.append(dense.register_forward_pre_hook(zero))
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def hf_log_probs(hf, ids, position, heads=()):
    with torch.no_grad(), heads_off(hf.bert, heads):
        logits = hf(input_ids=torch.tensor([ids])).logits[0, position]
    return torch.log_softmax(logits, -1).numpy()


# -- one layer's queries, keys, values and scores -----------------------------------------------------------


@pytest.mark.parametrize("text_pair", [None, "the river was cold"])
def test_attention_details_reproduce_the_layer(tiny_model, tiny_checkpoint, text_pair):
    text = "we deposited cash at the bank"
    r = tiny_model.analyze(text, text_pair)
    hf = transformers.BertModel.from_pretrained(tiny_checkpoint, attn_implementation="eager").eval()
    captured = {}
    hooks = [
        getattr(layer.attention.self, name).register_forward_hook(
            lambda module, args, out, key=(index, name): captured.__setitem__(key, out[0].numpy())
        )
        for index, layer in enumerate(hf.encoder.layer)
        for name in ("query", "key", "value")
    ]
    with torch.no_grad():
        hf(
            input_ids=torch.tensor([r.input_ids.tolist()]),
            token_type_ids=torch.tensor([r.token_type_ids.tolist()]),
        )
    for hook in hooks:
        hook.remove()
    s = len(r.tokens)
    for layer in range(2):
        d = tiny_model.attention_details(text, text_pair, layer=layer)
        assert d.layer == layer and d.tokens == r.tokens
        assert d.queries.shape == d.keys.shape == d.values.shape == (4, s, 8)
        assert d.scores.shape == d.probabilities.shape == (4, s, s)
        mask = np.zeros(s)  # one unpadded text: every key is real
        z = d.scores.astype(np.float64) + mask
        softmax = np.exp(z - z.max(-1, keepdims=True))
        softmax /= softmax.sum(-1, keepdims=True)
        np.testing.assert_allclose(softmax, r.attentions[layer], atol=1e-6)
        np.testing.assert_allclose(d.probabilities, r.attentions[layer], atol=1e-6)
        np.testing.assert_allclose(d.scores, d.queries @ d.keys.transpose(0, 2, 1) / np.sqrt(8), atol=1e-5)
        for name, ours in (("query", d.queries), ("key", d.keys), ("value", d.values)):
            theirs = captured[layer, name].reshape(s, 4, 8).transpose(1, 0, 2)  # (S, H) -> (N, S, D)
            np.testing.assert_allclose(ours, theirs, atol=TOL, err_msg=f"layer {layer} {name}")


@pytest.mark.parametrize("layer", [-1, 2, 1.0, "1", True, None])
def test_attention_details_reject_bad_layers(tiny_model, layer):
    with pytest.raises(InputError, match="layer"):
        tiny_model.attention_details("the cat", layer=layer)


# -- value-weighted attention ----------------------------------------------------------------------------


def test_value_weighted_attention_from_the_checkpoint_weights(tiny_model, tiny_checkpoint):
    r = tiny_model.analyze("the cat sat on the bank", "it was wet")
    vw = tiny_model.value_weighted_attention(r)
    weights = load_file(str(tiny_checkpoint / "model.safetensors"))
    s, n, d = len(r.tokens), 4, 8
    for layer in range(2):
        prefix = f"bert.encoder.layer.{layer}.attention."
        x = r.hidden_states[layer].astype(np.float64)  # what the layer reads
        v = (
            x @ weights[prefix + "self.value.weight"].T.astype(np.float64)
            + weights[prefix + "self.value.bias"]
        )
        w_out = weights[prefix + "output.dense.weight"].astype(np.float64)  # (H out, H in)
        f = np.stack(
            [v[:, h * d : (h + 1) * d] @ w_out[:, h * d : (h + 1) * d].T for h in range(n)]
        )  # (N, S, H)
        alpha = r.attentions[layer].astype(np.float64)  # (N, S, S)
        vectors = alpha[..., None] * f[:, None, :, :]  # (N, S, S, H): alpha_ij f_h(x_j)
        np.testing.assert_allclose(vw.value_norms[layer], np.linalg.norm(f, axis=-1), rtol=1e-5)
        np.testing.assert_allclose(vw.per_head[layer], np.linalg.norm(vectors, axis=-1), rtol=1e-5, atol=1e-9)
        np.testing.assert_allclose(
            vw.summed[layer], np.linalg.norm(vectors.sum(0), axis=-1), rtol=1e-5, atol=1e-9
        )
    assert vw.summed.shape == (2, s, s) and vw.tokens == r.tokens
    by_text = tiny_model.value_weighted_attention("the cat sat on the bank", "it was wet")
    np.testing.assert_allclose(by_text.summed, vw.summed, rtol=1e-6)


def test_value_weighted_attention_of_a_switched_off_head_is_zero(tiny_model):
    mask = np.ones((2, 4))
    mask[1, 3] = 0
    vw = tiny_model.value_weighted_attention(tiny_model.analyze("the cat sat", head_mask=mask))
    assert np.all(vw.per_head[1, 3] == 0) and vw.per_head[1, 2].max() > 0
    assert vw.attentions[1, 3].max() > 0  # the raw weights are still there to compare with
    with pytest.raises(InputError):
        tiny_model.value_weighted_attention(tiny_model.analyze("the cat"), "a pair")
    plain = tiny_model.analyze("the cat")
    other = dataclasses.replace(plain, hidden_states=plain.hidden_states[1:])  # one layer fewer
    with pytest.raises(InputError, match="another shape"):
        tiny_model.value_weighted_attention(other)


# -- head ablation and importance -------------------------------------------------------------------------


def test_ablated_outputs_equal_transformers_with_heads_zeroed(mlm):
    ours, hf, _ = mlm
    off = [(0, 1), (1, 0), (1, 3), (2, 2)]
    mask = np.ones((3, 4))
    for layer, head in off:
        mask[layer, head] = 0
    r = ours.analyze("the cat sat on the bank of the river", head_mask=mask)
    with torch.no_grad(), heads_off(hf.bert, off):
        out = hf(input_ids=torch.tensor([r.input_ids.tolist()]), output_hidden_states=True)
    for layer in range(4):
        np.testing.assert_allclose(r.hidden_states[layer], out.hidden_states[layer][0].numpy(), atol=TOL)
    intact = ours.analyze("the cat sat on the bank of the river")
    assert np.abs(intact.hidden_states[-1] - r.hidden_states[-1]).max() > 100 * TOL


def test_a_head_mask_per_row_equals_one_mask_per_call(mlm):
    ours, _, _ = mlm
    enc = ours.encode("the dog was in the water")
    rng = np.random.default_rng(0)
    masks = (rng.random((3, 3, 4)) > 0.3).astype(np.float32)  # (B, L, N)
    batched = ours._run([enc] * 3, torch.from_numpy(masks), keep_attentions=False)
    for row in range(3):
        single = ours.analyze("the dog was in the water", head_mask=masks[row])
        np.testing.assert_allclose(batched.hidden_states[:, row].numpy(), single.hidden_states, atol=1e-6)
        # starting at a later layer from that layer's input gives the same last layer
        with torch.inference_mode():
            hidden = torch.from_numpy(single.hidden_states[2])[None]  # (S, H) -> (1, S, H)
            last = ours.network.bert.run_layers(hidden, 2, head_mask=torch.from_numpy(masks[row]))
        np.testing.assert_allclose(last[0].numpy(), single.hidden_states[-1], atol=1e-6)


def test_head_importance_equals_transformers_with_each_head_zeroed(mlm):
    ours, hf, _ = mlm
    text = "the cat sat on the [MASK] of the river"
    importance = ours.head_importance(text)
    ids = importance.input_ids.tolist()
    position = importance.tokens.index("[MASK]")
    intact = hf_log_probs(hf, ids, position)
    assert importance.position == position
    assert importance.token_id == int(intact.argmax()) and importance.token == ours.tokenizer.id_to_token(
        importance.token_id
    )
    assert importance.log_probability == pytest.approx(float(intact.max()), abs=TOL)
    assert importance.drop.shape == (3, 4)
    for layer in range(3):
        for head in range(4):
            ablated = hf_log_probs(hf, ids, position, [(layer, head)])[importance.token_id]
            assert importance.drop[layer, head] == pytest.approx(intact.max() - ablated, abs=TOL)
    assert np.abs(importance.drop).max() > 100 * TOL


def test_head_importance_options(mlm):
    ours, hf, _ = mlm
    text = "we deposited cash at the bank"
    position = 5  # "the"
    base = np.ones((3, 4))
    base[0, 0] = 0
    chunked = ours.head_importance(
        text, position, "money", head_mask=base, max_batch_tokens=20
    )  # 2 rows a batch
    whole = ours.head_importance(text, position, "money", head_mask=base)
    np.testing.assert_allclose(chunked.drop, whole.drop, atol=1e-6)
    assert whole.token == "money" and whole.position == 5
    assert whole.drop[0, 0] == pytest.approx(0.0, abs=1e-6)  # already off in every run
    ids = whole.input_ids.tolist()
    money = ours.tokenizer.token_to_id("money")
    intact = hf_log_probs(hf, ids, position, [(0, 0)])[money]
    assert whole.log_probability == pytest.approx(intact, abs=TOL)
    ablated = hf_log_probs(hf, ids, position, [(0, 0), (2, 1)])[money]
    assert whole.drop[2, 1] == pytest.approx(intact - ablated, abs=TOL)
    np.testing.assert_array_equal(whole.base_head_mask, base)
    # the piece's id picks the same piece, as attribute()'s (position, token) target takes one
    by_id = ours.head_importance(text, position, money, head_mask=base)
    assert by_id.token == "money" and by_id.drop.tolist() == whole.drop.tolist()
    with pytest.raises(InputError, match="token must be an integer from 0 to"):
        ours.head_importance(text, position, ours.config.vocab_size)


def test_head_importance_errors(mlm, tiny_checkpoint, tmp_path):
    ours, _, _ = mlm
    with pytest.raises(InputError, match=r"no \[MASK\]"):
        ours.head_importance("the cat sat")
    with pytest.raises(InputError, match="position"):
        ours.head_importance("the cat sat", position=5)
    with pytest.raises(InputError, match="vocabulary"):
        ours.head_importance("the [MASK] sat", token="zebra")
    with pytest.raises(InputError, match="head_mask"):
        ours.head_importance("the [MASK] sat", head_mask=np.ones((2, 4)))
    encoder_only = bert_core.load_pretrained(make_checkpoint(tmp_path / "plain", "model"))
    for call in (
        lambda: encoder_only.head_importance("the [MASK] sat"),
        lambda: encoder_only.pseudo_log_likelihood("the cat sat"),
        lambda: encoder_only.logit_lens("the [MASK] sat"),
    ):
        with pytest.raises(MissingHeadError):
            call()


# -- pseudo-log-likelihood --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,text_pair",
    [("the cat sat on the bank.", None), ("unwanted dogs", "she ran"), ("the cat sat on the [MASK] .", None)],
)
def test_pseudo_log_likelihood_equals_masking_by_hand(mlm, text, text_pair):
    """Every piece of the sentence masked in turn; a typed [MASK] is no piece of it: it stays masked, unscored."""
    ours, hf, _ = mlm
    total, pieces = ours.pseudo_log_likelihood(text, text_pair)
    enc = ours.encode(text, text_pair)
    expected = []
    for position, token in enumerate(enc.tokens):
        if enc.special_tokens_mask[position] or enc.input_ids[position] == ours.tokenizer.mask_token_id:
            continue
        ids = enc.input_ids.tolist()
        ids[position] = ours.tokenizer.mask_token_id
        with torch.no_grad():
            logits = hf(
                input_ids=torch.tensor([ids]), token_type_ids=torch.tensor([enc.token_type_ids.tolist()])
            ).logits
        expected.append((token, float(torch.log_softmax(logits[0, position], -1)[enc.input_ids[position]])))
    assert [p for p, _ in pieces] == [p for p, _ in expected]
    np.testing.assert_allclose([lp for _, lp in pieces], [lp for _, lp in expected], atol=TOL)
    assert total == pytest.approx(sum(lp for _, lp in expected), abs=len(pieces) * TOL)
    chunked = ours.pseudo_log_likelihood(text, text_pair, max_batch_tokens=1)  # one row a batch
    np.testing.assert_allclose([lp for _, lp in chunked.pieces], [lp for _, lp in pieces], atol=1e-6)


@pytest.mark.parametrize(
    "text,text_pair", [("unwanted running dogs", "unwanted"), ("the [MASK] unwanted", None)]
)
def test_word_l2r_pseudo_log_likelihood_also_masks_the_rest_of_the_word(mlm, text, text_pair):
    """Kauf & Ivanova (2023): the scored piece and the later pieces of its word are masked, by hand in
    transformers; a word's last piece and one-piece words score as in the per-piece PLL."""
    ours, hf, _ = mlm
    enc = ours.encode(text, text_pair)
    assert any(t.startswith("##") for t in enc.tokens)  # the text must hold a word of several pieces
    mask_id = ours.tokenizer.mask_token_id
    expected = []
    for position, token in enumerate(enc.tokens):
        if enc.special_tokens_mask[position] or enc.input_ids[position] == mask_id:
            continue
        ids = enc.input_ids.tolist()
        ids[position] = mask_id
        later = position + 1
        while later < len(ids) and enc.tokens[later].startswith("##"):
            ids[later] = mask_id
            later += 1
        with torch.no_grad():
            logits = hf(
                input_ids=torch.tensor([ids]), token_type_ids=torch.tensor([enc.token_type_ids.tolist()])
            ).logits
        expected.append((token, float(torch.log_softmax(logits[0, position], -1)[enc.input_ids[position]])))
    scored = ours.pseudo_log_likelihood(text, text_pair, scoring="word_l2r", max_batch_tokens=20)
    assert [p for p, _ in scored.pieces] == [p for p, _ in expected]
    np.testing.assert_allclose([lp for _, lp in scored.pieces], [lp for _, lp in expected], atol=TOL)
    plain = ours.pseudo_log_likelihood(text, text_pair)
    following = [p for p, _ in plain.pieces[1:]] + [""]
    for (piece, a), (_, b), after in zip(plain.pieces, scored.pieces, following, strict=True):
        if not after.startswith("##"):  # nothing of its word after it: the same mask, the same score
            assert a == pytest.approx(b, abs=TOL), piece
    assert plain.total != pytest.approx(scored.total, abs=1e-3)
    ranked = ours.rank_minimal_pairs(["unwanted dogs", "the dogs"], scoring="word_l2r")
    assert (
        dict(ranked)["unwanted dogs"].total
        == ours.pseudo_log_likelihood("unwanted dogs", scoring="word_l2r").total
    )
    with pytest.raises(InputError, match="scoring"):
        ours.pseudo_log_likelihood(text, scoring="word")
    with pytest.raises(InputError, match="scoring"):
        ours.rank_minimal_pairs([text], scoring="")


def test_minimal_pairs_are_ranked_by_pseudo_log_likelihood(mlm):
    ours, _, _ = mlm
    texts = ["the cat sat on the bank", "the cat sat on the river", "the cat sat on the money", "cat the sat"]
    ranked = ours.rank_minimal_pairs(texts)
    assert sorted(t for t, _ in ranked) == sorted(texts)
    totals = [score.total for _, score in ranked]
    assert totals == sorted(totals, reverse=True)
    for text, score in ranked:
        assert score.total == ours.pseudo_log_likelihood(text).total
    # A hole is one negative term fewer: a line with a typed mask would climb the ranking for free.
    with pytest.raises(InputError, match="mask token"):
        ours.rank_minimal_pairs(["the cat sat on the bank", "the cat sat on the [MASK]"])
    # So is a text cut at the model's length: the pieces past the cut would be terms left out of its sum.
    too_long = " ".join(["the cat sat on the bank"] * ours.config.max_position_embeddings)
    with pytest.raises(InputError, match="longer than"):
        ours.rank_minimal_pairs(["the cat sat on the bank", too_long])


# -- logit lens -------------------------------------------------------------------------------------------


def test_logit_lens_ends_in_the_mask_prediction(mlm):
    ours, hf, _ = mlm
    text = "she sat by the [MASK] and it was cold"
    lens = ours.logit_lens(text, top_k=5)
    final = ours.predict_masks(text, top_k=5)[0]
    assert lens.position == final.position
    assert lens.top_token_ids.shape == lens.top_probabilities.shape == (4, 5) and len(lens.top_tokens) == 4
    assert lens.top_tokens[-1] == final.tokens and lens.top_token_ids[-1].tolist() == final.token_ids
    np.testing.assert_allclose(lens.top_probabilities[-1], final.probabilities, atol=1e-6)
    assert lens.final_token == final.tokens[0] and lens.final_token_id == final.token_ids[0]
    # every layer, against transformers' own MLM head on its own hidden states
    with torch.no_grad():
        out = hf(input_ids=torch.tensor([lens.input_ids.tolist()]), output_hidden_states=True)
        for layer, hidden in enumerate(out.hidden_states):
            probs = torch.softmax(hf.cls(hidden[0, lens.position]), -1)
            top = torch.topk(probs, 5)
            assert lens.top_token_ids[layer].tolist() == top.indices.tolist(), f"layer {layer}"
            np.testing.assert_allclose(lens.top_probabilities[layer], top.values.numpy(), atol=TOL)
            assert lens.final_token_probability[layer] == pytest.approx(
                float(probs[lens.final_token_id]), abs=TOL
            )
            assert lens.final_token_rank[layer] == 1 + int((probs > probs[lens.final_token_id]).sum())


def test_logit_lens_ranks_are_consistent(mlm):
    ours, _, _ = mlm
    lens = ours.logit_lens("the cat sat on the bank", 3, 3)
    assert lens.final_token_rank[-1] == 1 and lens.final_token_rank.shape == (4,)
    for layer in range(4):
        ids = lens.top_token_ids[layer].tolist()
        if lens.final_token_id in ids:
            assert lens.final_token_rank[layer] == ids.index(lens.final_token_id) + 1
        else:
            assert lens.final_token_rank[layer] > 3
        assert lens.final_token_probability[layer] <= lens.top_probabilities[layer, 0]
    assert (lens.final_token_rank == 1).tolist() == [
        ids[0] == lens.final_token_id for ids in lens.top_token_ids
    ]
    assert len(set(lens.final_token_rank.tolist())) > 1, (
        "the random model should change its mind across layers"
    )


def test_logit_lens_follows_the_pieces_asked_for_at_every_layer(mlm):
    ours, hf, _ = mlm
    text = "she sat by the [MASK] and it was cold"
    lens = ours.logit_lens(text, top_k=3, follow=["river", "money", "River", "##ing"])
    # "River" is the uncased model's "river", asked for twice: followed once
    assert lens.followed_tokens == ["river", "money", "##ing"]
    assert lens.followed_token_ids.tolist() == [ours.tokenizer.token_to_id(t) for t in lens.followed_tokens]
    assert lens.followed_ranks.shape == lens.followed_probabilities.shape == (3, 4)
    with torch.no_grad():
        out = hf(input_ids=torch.tensor([lens.input_ids.tolist()]), output_hidden_states=True)
        for layer, hidden in enumerate(out.hidden_states):
            probs = torch.softmax(hf.cls(hidden[0, lens.position]), -1)
            for k, piece in enumerate(lens.followed_token_ids.tolist()):
                assert lens.followed_probabilities[k, layer] == pytest.approx(float(probs[piece]), abs=TOL)
                assert lens.followed_ranks[k, layer] == 1 + int((probs > probs[piece]).sum()), (layer, k)
    # following the last layer's answer gives its own rank line back; a string is one piece
    as_array = ours.logit_lens(text, top_k=3, follow=np.array(["river", "money", "River", "##ing"]))
    assert as_array.followed_tokens == lens.followed_tokens
    again = ours.logit_lens(text, top_k=3, follow=lens.final_token)
    np.testing.assert_array_equal(again.followed_ranks[0], lens.final_token_rank)
    np.testing.assert_allclose(again.followed_probabilities[0], lens.final_token_probability, atol=1e-7)
    nothing = ours.logit_lens(text)
    assert (
        nothing.followed_tokens == []
        and nothing.followed_ranks.shape == nothing.followed_probabilities.shape == (0, 4)
    )


@pytest.mark.parametrize(
    ("follow", "message"),
    [
        ("riverbank", r"'riverbank' is not one piece .* reads it as 'river', '##b', '##a'"),
        (["river", ""], "non-empty string"),
        ([3], "non-empty string"),
        (7, "a piece or a list of pieces"),
        (["\ud800"], "holds half of a UTF-16 surrogate pair"),  # raised UnicodeEncodeError
        (["\u200b"], "is nothing this model reads"),  # said "text is empty", of a text the user never typed
    ],
)
def test_logit_lens_says_which_pieces_it_cannot_follow(mlm, follow, message):
    ours, _, _ = mlm
    with pytest.raises(InputError, match=message):
        ours.logit_lens("she sat by the [MASK]", follow=follow)


@pytest.mark.parametrize("position", [-1, 8, 2.0])
def test_logit_lens_rejects_bad_positions(mlm, position):
    ours, _, _ = mlm
    with pytest.raises(InputError, match="position"):
        ours.logit_lens("the cat sat on the bank", position)


@pytest.mark.parametrize("call", ["logit_lens", "head_importance"])
def test_a_second_sentence_given_as_the_position_points_to_text_pair(mlm, call):
    """These two take the position second, where every other call takes a second sentence."""
    ours, _, _ = mlm
    with pytest.raises(InputError, match="text_pair="):
        getattr(ours, call)("the cat sat on the [MASK]", "the dog ran")


def test_pseudo_likelihood_leaves_typed_special_tokens_out(mlm):
    """A typed [SEP] was scored as a piece: the model's easy guess of a separator lifted the sentence's total."""
    ours, _, _ = mlm
    typed = ours.pseudo_log_likelihood("the cat [SEP] sat on the bank")
    assert [p for p, _ in typed.pieces] == ["the", "cat", "sat", "on", "the", "bank"]
    with pytest.raises(InputError, match=r"special token typed \(\[SEP\]\)"):  # a term fewer: a free pass
        ours.rank_minimal_pairs(["the cat sat on the bank", "the cat [SEP] sat on the bank"])
    with pytest.raises(InputError, match="special token typed"):
        ours.rank_minimal_pairs(["the cat sat on the bank", "[CLS] the cat sat on the bank"])
    # with nothing left to score there is no score: the empty sum's 0.0 read as probability 1
    for text in ("[MASK] [MASK]", "[CLS]", "[SEP] [MASK]"):
        nothing = ours.pseudo_log_likelihood(text)
        assert nothing.pieces == [] and math.isnan(nothing.total), text


def test_minimal_pairs_take_any_iterable_of_sentences_but_not_one_string(mlm):
    ours, _, _ = mlm
    texts = ["the cat sat on the bank", "the cat sat on the river"]
    ranked = ours.rank_minimal_pairs(t for t in texts)  # read twice inside: checked, then scored
    assert sorted(t for t, _ in ranked) == sorted(texts)
    with pytest.raises(InputError, match="not one string"):  # its characters would be the "sentences"
        ours.rank_minimal_pairs("the cat sat")


def test_pseudo_log_likelihood_refuses_a_text_longer_than_the_model_reads(mlm):
    """Its total would be of the first pieces alone, and read as the whole text's."""
    ours, _, _ = mlm
    too_long = " ".join(["the cat sat on the bank"] * ours.config.max_position_embeddings)
    with pytest.raises(InputError, match="longer than"):
        ours.pseudo_log_likelihood(too_long)
    with pytest.raises(InputError, match="longer than"):
        ours.pseudo_log_likelihood("the cat sat", too_long)  # the pair is what is cut


@pytest.mark.parametrize("bad", [0, -5, "a", 100.5, True])
def test_batched_passes_check_their_batch_size(mlm, bad):
    ours, _, _ = mlm
    with pytest.raises(InputError, match="max_batch_tokens"):
        ours.pseudo_log_likelihood("the cat sat", max_batch_tokens=bad)
    with pytest.raises(InputError, match="max_batch_tokens"):
        ours.head_importance("the [MASK] sat", max_batch_tokens=bad)


def test_value_weighted_attention_refuses_another_models_analysis(mlm, tiny_model, tmp_path):
    """Of the same shape, another model's hidden states through these weights gave maps of neither model."""
    ours, _, _ = mlm
    twin = bert_core.load_pretrained(make_checkpoint(tmp_path / "twin", "mlm", seed=12, **SIZE))
    text = "the cat sat on the bank"
    other = twin.analyze(text)
    assert other.hidden_states.shape == ours.analyze(text).hidden_states.shape  # only the weights differ
    with pytest.raises(InputError, match="another model"):
        ours.value_weighted_attention(other)
    with pytest.raises(InputError, match="another"):
        ours.value_weighted_attention(tiny_model.analyze(text))  # and one of another shape
    # Its own analysis, alone or from a padded batch, is taken as before.
    alone = ours.value_weighted_attention(ours.analyze(text))
    batched = ours.value_weighted_attention(ours.analyze_batch([text, text + " of the river today"])[0])
    np.testing.assert_allclose(batched.summed, alone.summed, atol=1e-5)


def test_a_token_not_in_the_vocabulary_names_the_piece_meant(tiny_model):
    with pytest.raises(InputError, match="'The' is not a piece.*the piece 'the' is"):  # an uncased vocabulary
        tiny_model.head_importance("the [MASK] sat", token="The")
    with pytest.raises(InputError, match="not a piece of this model's vocabulary$"):
        tiny_model.head_importance("the [MASK] sat", token="zzqqx")


def test_batched_passes_take_numpy_integers_and_minimal_pairs_name_a_non_list(mlm):
    ours, _, _ = mlm
    assert ours.pseudo_log_likelihood("the cat sat", max_batch_tokens=np.int64(4096)).total == (
        ours.pseudo_log_likelihood("the cat sat").total
    )
    assert ours.head_importance("the [MASK] sat", max_batch_tokens=np.int32(64)).drop.shape == (3, 4)
    for bad in (None, 3):
        with pytest.raises(InputError, match="texts must be a list"):
            ours.rank_minimal_pairs(bad)
