"""One word's vectors across texts (`BertScopeModel.word_vectors`): the pieces it was read as, averaged, at
every layer, and their cosines; the texts without it named; bad input refused."""

from __future__ import annotations

import numpy as np
import pytest

import bert_core
from bert_core import InputError

TEXTS = [
    "we sat by the river bank",
    "we deposited money at the bank",
    "the river ran on",  # no bank
    "the banks of the river",  # 'banks' is not 'bank'
    "Bank on the bank of the river",  # twice, once capitalised (an uncased model reads 'bank')
]


def _by_hand(model, text: str, pieces: list[str]) -> np.ndarray:
    """The mean of the hidden states of the first run of `pieces` in `text`'s tokens, (L + 1, H)."""
    r = model.analyze(text)
    start = next(i for i in range(len(r.tokens)) if r.tokens[i : i + len(pieces)] == pieces)
    return r.hidden_states[:, start : start + len(pieces)].mean(axis=1)


def test_a_words_vectors_are_the_mean_of_its_pieces_at_every_layer(tiny_model):
    w = tiny_model.word_vectors(TEXTS, "bank")
    layers, hidden = tiny_model.config.num_hidden_layers + 1, tiny_model.config.hidden_size
    assert [i for i, _ in w.found] == [0, 1, 4] and w.missing == (2, 3)
    assert w.vectors.shape == (3, layers, hidden) and w.vectors.dtype == np.float32
    for row, (i, pieces) in enumerate(w.found):
        assert [tiny_model.analyze(TEXTS[i]).tokens[p] for p in pieces] == ["bank"]
        np.testing.assert_allclose(w.vectors[row], _by_hand(tiny_model, TEXTS[i], ["bank"]), atol=1e-5)
    # a word read as two pieces is their mean
    split = tiny_model.word_vectors(TEXTS, "deposited")
    assert split.found == ((1, (2, 3)),)
    np.testing.assert_allclose(
        split.vectors[0], _by_hand(tiny_model, TEXTS[1], ["deposit", "##ed"]), atol=1e-5
    )


def test_the_cosines_are_of_the_rows_at_each_layer(tiny_model):
    w = tiny_model.word_vectors(TEXTS, "bank")
    assert w.cosines.shape == (tiny_model.config.num_hidden_layers + 1, 3, 3)
    for layer in range(w.cosines.shape[0]):
        v = w.vectors[:, layer].astype(np.float64)
        unit = v / np.linalg.norm(v, axis=-1, keepdims=True)
        np.testing.assert_allclose(w.cosines[layer], unit @ unit.T, atol=1e-6)
    # at layer 0 the same word in two texts differs only by its position (and segment): close, not equal
    assert 0.5 < w.cosines[0, 0, 1] < 1.0


def test_which_occurrence_of_a_repeated_word(tiny_model):
    text = TEXTS[4]
    tokens = tiny_model.analyze(text).tokens
    both = [i for i, t in enumerate(tokens) if t == "bank"]
    assert len(both) == 2
    assert tiny_model.word_vectors([text], "bank").found == ((0, (both[0],)),)
    assert tiny_model.word_vectors([text], "bank", occurrence="last").found == ((0, (both[1],)),)
    each = tiny_model.word_vectors([text, TEXTS[0]], "bank", occurrence="each")
    assert [i for i, _ in each.found] == [0, 0, 1] and each.vectors.shape[0] == 3
    np.testing.assert_allclose(np.diag(each.cosines[-1]), 1.0, atol=1e-6)


def test_a_word_in_no_text_gives_no_rows(tiny_model):
    w = tiny_model.word_vectors(TEXTS[:3], " money. ")  # nor are spaces and punctuation around it
    assert w.word == "money" and w.missing == (0, 2) and len(w.found) == 1
    none = tiny_model.word_vectors(["the river ran on"], "bank")
    assert none.vectors.shape[0] == 0 and none.cosines.shape[1:] == (0, 0) and none.missing == (0,)


def test_a_phrase_is_found_as_its_words_in_a_row(tiny_model):
    """ "river bank" was refused as "2 words"; a phrase is now its words one after another, its vector the mean
    of all their pieces, and the same words apart or in another order are not it."""
    texts = ["the river bank was wet", "a river , bank", "bank river", "by the river bank and the river bank"]
    w = tiny_model.word_vectors(texts, " river bank. ", occurrence="each")
    assert w.word == "river bank" and w.missing == (1, 2)
    assert [i for i, _ in w.found] == [0, 3, 3]
    r = tiny_model.analyze(texts[0])
    pieces = w.found[0][1]
    assert [r.tokens[i] for i in pieces] == tiny_model.tokenizer.encode("river bank").tokens[1:-1]
    np.testing.assert_allclose(w.vectors[0], r.hidden_states[:, list(pieces)].mean(axis=1), atol=1e-6)


@pytest.mark.parametrize(
    "texts, word, kwargs, said",
    [
        ("the river bank", "bank", {}, "not one string"),
        ([("a bank", "b")], "bank", {}, "list of strings"),
        (TEXTS, "   ", {}, "word must be"),
        (TEXTS, None, {}, "word must be"),
        (TEXTS, "bank", {"occurrence": "second"}, "occurrence"),
        (TEXTS, "bank", {"max_batch_tokens": 0}, "max_batch_tokens"),
        (["the bank", ""], "bank", {}, r"texts\[1\]: "),  # indexed as `found` and `missing` are
        # read as "MASK", "CLS" or "ed", they were found as the special token, or nowhere, without a word
        (["the [MASK] sat", "a [MASK] here"], "[MASK]", {}, "special token or a word piece"),
        (["the [MASK] sat", "a [MASK] here"], "<mask>", {}, "special token or a word piece"),
        (TEXTS, " [cls] ", {}, "special token or a word piece"),
        (TEXTS, "##ed", {}, "special token or a word piece"),
        (["the [MASK] sat", "a [MASK] here"], "[MASK].", {}, "special token or a word piece"),  # stripped
        (["the [MASK] sat", "a [MASK] here"], "([MASK])", {}, "special token or a word piece"),
        (TEXTS, "'[CLS]'", {}, "special token or a word piece"),
    ],
)
def test_bad_input_is_named(tiny_model, texts, word, kwargs, said):
    with pytest.raises(InputError, match=said):
        tiny_model.word_vectors(texts, word, **kwargs)


def test_the_app_and_the_core_share_one_word_count():
    """The Word senses page reads its words through the same functions (moved here from app/transforms)."""
    from app import transforms

    assert transforms.target_occurrences is bert_core.words.target_occurrences
    assert transforms.cosine_matrix is bert_core.cosine_matrix


def test_punctuation_a_piece_holds_with_the_word_is_not_the_words():
    """SentencePiece keeps "▁bank." as one piece where its vocabulary has it: the word is still 'bank'."""
    import types

    from bert_core.words import target_occurrences

    text = "to the bank. the banks !"
    read = types.SimpleNamespace(  # "▁to", "▁the", "▁bank.", "▁the", "▁banks", "▁!" between [CLS] and [SEP]
        text=text,
        text_pair=None,
        sequence_ids=[None, 0, 0, 0, 0, 0, 0, None],
        word_ids=[None, 0, 1, 2, 3, 4, 5, None],
        offsets=np.array([(0, 0), (0, 2), (3, 6), (7, 12), (13, 16), (17, 22), (23, 24), (0, 0)]),
    )
    assert target_occurrences(read, "bank", str.lower) == [[3]]
    assert target_occurrences(read, "Bank.", str.lower) == [[3]]
    assert target_occurrences(read, ".", str.lower) == []  # not every word that cleans to nothing


def test_a_word_of_punctuation_alone_is_refused(tiny_model):
    with pytest.raises(InputError, match="not punctuation alone"):
        tiny_model.word_vectors(TEXTS, "...")


def test_a_special_typed_in_the_text_is_no_occurrence_of_a_word(tiny_model):
    """ "[MASK]" without its brackets reads "mask": word_vectors compared the mask token as the word."""
    from bert_core.words import target_occurrences

    enc = tiny_model.encode("the [MASK] is a mask")
    normalize, specials = tiny_model.tokenizer.normalize, tiny_model.tokenizer.special_tokens
    assert "[MASK]" in specials and "[CLS]" in specials
    assert len(target_occurrences(enc, "mask", normalize, text="the [MASK] is a mask")) == 2
    found = target_occurrences(enc, "mask", normalize, text="the [MASK] is a mask", specials=specials)
    assert [[enc.tokens[i] for i in word] for word in found] == [["m", "##a", "##s", "##k"]]
