"""Pre-training: masking proportions, pair objectives, vocabulary, corpus, the loop and its checkpoints.

Everything here is small and seeded; the training runs use a BERT of hidden size 32 for a few dozen steps.
"""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import bert_core
from bert_core.pretraining.corpus import (
    AMBIGUOUS_WORDS,
    PERSON_NAMES,
    TOPICS,
    generate_corpus,
    generate_document,
    read_documents,
    write_corpus,
)
from bert_core.pretraining.masking import (
    IGNORE_INDEX,
    MaskAction,
    MaskingConfig,
    StaticMasker,
    mask_tokens,
    ordinary_token_ids,
)
from bert_core.pretraining.pairs import (
    IN_ORDER,
    IS_NEXT,
    NOT_NEXT,
    SWAPPED,
    nsp_pair,
    pair_from_two,
    pair_starts,
    sop_pair,
    truncate_pair,
)

VOCAB_SIZE = 50
SPECIALS = (0, 1, 2, 3, 4)  # [PAD] [UNK] [CLS] [SEP] [MASK]
MASK_ID = 4


def _sequence(length: int) -> tuple[np.ndarray, np.ndarray]:
    """[CLS] w w ... [SEP] w w [SEP] with ordinary ids, and its special-token mask."""
    ids = 5 + np.arange(length) % (VOCAB_SIZE - 5)
    ids[0], ids[length // 2], ids[-1] = 2, 3, 3
    special = np.isin(ids, SPECIALS)
    return ids, special


# -- masking ----------------------------------------------------------------------------------------------


def test_masking_proportions_hold_over_many_draws_and_specials_are_never_chosen():
    rng = np.random.default_rng(1234)
    random_ids = ordinary_token_ids(VOCAB_SIZE, SPECIALS)
    candidates = chosen = masked = randomised = kept = 0
    per_position = np.zeros(40)
    for draw in range(4000):
        length = 8 + draw % 33  # lengths 8..40 so short sequences count too
        ids, special = _sequence(length)
        m = mask_tokens(ids, special, mask_token_id=MASK_ID, random_token_ids=random_ids, rng=rng)
        pos = m.positions
        assert not special[pos].any(), "a special token was chosen"
        assert (m.input_ids[special] == ids[special]).all(), "a special token was changed"
        # Labels exist exactly at the chosen positions, and hold the original ids.
        assert ((m.labels != IGNORE_INDEX) == (m.actions != MaskAction.NONE)).all()
        assert (m.labels[pos] == ids[pos]).all()
        # Unchosen positions are untouched; each action did what it says.
        assert (m.input_ids[m.actions == MaskAction.NONE] == ids[m.actions == MaskAction.NONE]).all()
        assert (m.input_ids[m.actions == MaskAction.MASK] == MASK_ID).all()
        assert (m.input_ids[m.actions == MaskAction.KEEP] == ids[m.actions == MaskAction.KEEP]).all()
        assert np.isin(m.input_ids[m.actions == MaskAction.RANDOM], random_ids).all()
        candidates += int((~special).sum())
        chosen += len(pos)
        masked += m.count(MaskAction.MASK)
        randomised += m.count(MaskAction.RANDOM)
        kept += m.count(MaskAction.KEEP)
        if length == 40:
            per_position[pos] += 1
    # About 84 000 candidates and 12 600 chosen. The chosen count per sequence is n * p rounded
    # stochastically, so it varies by at most one: the standard error of the chosen fraction is only about
    # 0.0003 (not the binomial 0.0012). The splits are binomial over ~12 600 draws: 0.0036 (80 %) and
    # 0.0027 (10 %). The tolerances below are about four to five standard errors.
    tolerance_chosen, tolerance_split = 0.0015, 0.012
    assert abs(chosen / candidates - 0.15) < tolerance_chosen
    assert abs(masked / chosen - 0.80) < tolerance_split
    assert abs(randomised / chosen - 0.10) < tolerance_split
    assert abs(kept / chosen - 0.10) < tolerance_split
    # Every ordinary position is equally likely to be chosen: each of the 37 ordinary positions of the 121
    # sequences of length 40 is chosen ~Binomial(121, 0.15) times, mean 18.2 and sd 3.9. A bound of five sd
    # on each position catches a position that is never (or always) chosen, or a strong bias to one end.
    ids, special = _sequence(40)
    assert per_position[special].sum() == 0
    expected, sd = 121 * 0.15, np.sqrt(121 * 0.15 * 0.85)
    assert np.abs(per_position[~special] - expected).max() < 5 * sd
    first_half, second_half = np.array_split(per_position[~special], 2)
    assert abs(first_half.mean() - second_half.mean()) < 0.25 * expected


def test_masking_chooses_stochastically_rounded_count():
    random_ids = ordinary_token_ids(VOCAB_SIZE, SPECIALS)
    ids, special = _sequence(12)  # 9 ordinary tokens: 1.35 expected -> 1 or 2 chosen, mean 1.35
    rng = np.random.default_rng(0)
    counts = [
        len(mask_tokens(ids, special, mask_token_id=MASK_ID, random_token_ids=random_ids, rng=rng).positions)
        for _ in range(4000)
    ]
    assert set(counts) == {1, 2}
    assert np.mean(counts) == pytest.approx(1.35, abs=0.03)


def test_masking_is_reproducible_and_leaves_global_random_state_alone():
    random_ids = ordinary_token_ids(VOCAB_SIZE, SPECIALS)
    ids, special = _sequence(30)
    before = np.random.get_state()[1].copy()
    a = mask_tokens(
        ids, special, mask_token_id=MASK_ID, random_token_ids=random_ids, rng=np.random.default_rng(7)
    )
    b = mask_tokens(
        ids, special, mask_token_id=MASK_ID, random_token_ids=random_ids, rng=np.random.default_rng(7)
    )
    assert (a.input_ids == b.input_ids).all() and (a.actions == b.actions).all()
    assert (np.random.get_state()[1] == before).all()


def test_random_replacements_never_use_special_tokens():
    ids = ordinary_token_ids(10, [0, 2, 3])
    assert ids.tolist() == [1, 4, 5, 6, 7, 8, 9]
    with pytest.raises(ValueError, match="no ordinary tokens"):
        ordinary_token_ids(2, [0, 1])


def test_masking_config_is_validated():
    with pytest.raises(ValueError, match="mlm_probability"):
        MaskingConfig(mlm_probability=1.5)
    with pytest.raises(ValueError, match="must not exceed 1"):
        MaskingConfig(mask_fraction=0.8, random_fraction=0.3)
    assert MaskingConfig().keep_fraction == pytest.approx(0.1)


def test_static_masking_repeats_its_copies_and_dynamic_masking_does_not():
    random_ids = ordinary_token_ids(VOCAB_SIZE, SPECIALS)
    ids, special = _sequence(40)
    static = StaticMasker(seed=3, duplicates=4)
    kwargs = dict(mask_token_id=MASK_ID, random_token_ids=random_ids)
    copies = [static(17, visit, ids, special, **kwargs) for visit in range(8)]
    for visit in range(4):
        assert (copies[visit].input_ids == copies[visit + 4].input_ids).all()
    assert len({tuple(c.positions) for c in copies[:4]}) > 1, "the four copies should differ"
    rng = np.random.default_rng(3)
    dynamic = [mask_tokens(ids, special, rng=rng, **kwargs) for _ in range(8)]
    assert len({tuple(d.positions) for d in dynamic}) > 4


def test_masking_and_pairs_need_no_torch():
    """The app draws maskings without the training stack: imported as the app imports them (through the
    package), the masking and pair modules, the interpret functions and the result types bring no torch."""
    code = (
        "import sys\n"
        "import bert_core.pretraining.masking, bert_core.pretraining.pairs, bert_core.interpret, bert_core.results\n"
        "from bert_core import InputError, attention_rollout\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
        "bert_core.load_pretrained\n"  # the model's side brings it, on first use
        "assert 'torch' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# -- sentence pairs ---------------------------------------------------------------------------------------

DOCS = [[f"d{d}s{s}" for s in range(3 + d % 4)] for d in range(30)]


def test_nsp_classes_are_balanced_and_correct():
    rng = np.random.default_rng(5)
    starts = pair_starts(DOCS)
    labels = []
    for _ in range(4000):
        doc, start = starts[rng.integers(len(starts))]
        pair = nsp_pair(DOCS, int(doc), int(start), rng)
        labels.append(pair.label)
        assert pair.a == [DOCS[doc][start]]
        if pair.label == IS_NEXT:
            assert pair.b == [DOCS[doc][start + 1]]
        else:
            assert pair.label == NOT_NEXT
            assert not pair.b[0].startswith(f"d{doc}s"), "a NotNext partner must come from another document"
    # 4000 draws: standard error 0.008; tolerance 0.03.
    assert abs(np.mean(labels) - 0.5) < 0.03


def test_sop_classes_are_balanced_and_swap_the_order():
    rng = np.random.default_rng(6)
    labels = []
    for _ in range(4000):
        pair = sop_pair(DOCS, 3, 1, rng, max_segment=2)
        labels.append(pair.label)
        first, second = (pair.a, pair.b) if pair.label == IN_ORDER else (pair.b, pair.a)
        joined = first + second
        assert joined == DOCS[3][1 : 1 + len(joined)], "SOP segments must be consecutive text of one document"
        assert pair.label in (IN_ORDER, SWAPPED)
    assert abs(np.mean(labels) - 0.5) < 0.03


def test_multi_sentence_segments_stay_within_the_document():
    rng = np.random.default_rng(8)
    for _ in range(500):
        pair = nsp_pair(DOCS, 5, 0, rng, max_segment=3)
        assert 1 <= len(pair.a) <= 3 and 1 <= len(pair.b) <= 3
        if pair.label == IS_NEXT:
            assert pair.a + pair.b == DOCS[5][: len(pair.a) + len(pair.b)]


def test_pair_errors_are_actionable():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="sentence after A"):
        nsp_pair(DOCS, 0, 2, rng)
    with pytest.raises(ValueError, match="two non-empty documents"):
        nsp_pair([["a", "b"]], 0, 0, np.random.default_rng(1), random_next_probability=1.0)
    with pytest.raises(ValueError, match="2\\+ sentences"):
        pair_starts([["only one"]])


def test_pair_from_two_builds_the_apps_examples():
    rng = np.random.default_rng(0)
    seen = {pair_from_two("A", "B", rng).label for _ in range(50)}
    assert seen == {IN_ORDER, SWAPPED}
    swapped = next(p for p in (pair_from_two("A", "B", rng) for _ in range(50)) if p.label == SWAPPED)
    assert (swapped.a, swapped.b) == (["B"], ["A"])
    assert pair_from_two("A", "B", rng, task="nsp").label == IS_NEXT


def test_truncate_pair_trims_the_longer_segment():
    a, b = list(range(10)), list(range(100, 103))
    truncate_pair(a, b, 8, np.random.default_rng(0))
    assert len(a) + len(b) == 8 and len(b) == 3


# -- corpus and vocabulary --------------------------------------------------------------------------------


def test_corpus_generator_is_deterministic_and_uses_both_senses(tmp_path):
    one = [[s.text for s in d] for d in generate_corpus(40, seed=11)]
    two = [[s.text for s in d] for d in generate_corpus(40, seed=11)]
    assert one == two
    assert one != [[s.text for s in d] for d in generate_corpus(40, seed=12)]
    for word in ("bank", "bat", "bark", "match", "spring", "pitch"):
        senses = {t.senses[word] for t in TOPICS if word in t.senses}
        assert len(senses) >= 2, f"{word!r} should appear in two senses"
    assert {"bank", "bat", "bark", "match", "spring", "pitch"} <= set(AMBIGUOUS_WORDS)
    path = tmp_path / "corpus.txt"
    documents, sentences = write_corpus(path, 40, seed=11)
    assert read_documents(path) == one
    assert sentences == sum(len(d) for d in one)


def test_generated_sentences_are_clean():
    rng = np.random.default_rng(0)
    for _ in range(300):
        _, sentences = generate_document(rng)
        for s in sentences:
            assert s.text.lstrip('"')[0].isupper() and s.text.endswith((".", "!", "?")), s.text
            assert not any(c in s.text for c in "{}[]()|"), s.text
            assert " a a" not in s.text.lower() and "  " not in s.text
            assert s.text.count('"') % 2 == 0 and not re.search(r" [.,;:!?]", s.text), s.text


def test_generated_sentences_agree_in_person_and_say_each_word_once():
    """First-person scenes once wrote "I and Kate ate ...", "since we was a child" and, in a line that keeps
    its named protagonist, "Laura ... any note we hears"; some fillers doubled a word ("the the groceries")."""
    rng = np.random.default_rng(0)
    texts = [s.text for _ in range(3000) for s in generate_document(rng)[1]]
    wrong = re.compile(
        r"\b(I|We) and |\b[Ww]e was\b|\b(I|[Ww]e) (has|is|loves|works|hears)\b|\b(\w+) \4\b"
        r'|"I\b[^"]*," we said'  # "I can't wait," we said.
    )
    assert [t for t in texts if wrong.search(t)] == []
    assert any(t.startswith(tuple(f"{n} and I " for n in PERSON_NAMES)) for t in texts)
    assert any(re.search(r"\b[Ww]e were\b", t) for t in texts)


def test_a_pronoun_for_the_protagonist_comes_after_they_are_mentioned():
    """A scene that opened on its topic once went on "'Who's there?' he called." with no "he" before it."""
    rng = np.random.default_rng(3)
    pronouns = re.compile(r"\b([Hh]e|[Ss]he|[Hh]is|[Hh]er|[Hh]im)\b")
    mentioned = re.compile(r"\b(" + "|".join(PERSON_NAMES) + r")\b")
    for _ in range(2000):
        sentences = generate_document(rng)[1]
        heard = False
        for s in sentences:
            protagonist = [v for slot, v in s.slots if slot in ("P", "Name", "s", "he", "his", "him")]
            if not heard and protagonist:
                # the first mention is a name (or I / we), never a bare third-person pronoun
                assert not pronouns.fullmatch(protagonist[0]), [x.text for x in sentences]
                assert mentioned.search(s.text) or re.search(r"\b(I|[Ww]e|[Mm]y|[Oo]ur|me|us)\b", s.text), (
                    s.text
                )
            heard = heard or bool(protagonist)


def test_the_corpus_writes_what_users_type():
    """Questions, exclamations, quotes, contractions, possessives and numbers, each in a good share of the
    scenes, so the demo model learns them in context (it had never seen "?" or a digit)."""
    rng = np.random.default_rng(1)
    texts = [s.text for _ in range(2000) for s in generate_document(rng)[1]]
    for pattern in (r"\?", r"!", r'^"', r"n't\b", r"'s\b", r"\d", r"\d:\d\d", r"o'clock"):
        share = sum(bool(re.search(pattern, t)) for t in texts) / len(texts)
        assert share > 0.002, pattern


def test_read_documents_rejects_empty_files(tmp_path):
    path = tmp_path / "empty.txt"
    path.write_text("\n\n", encoding="utf-8")
    with pytest.raises(ValueError, match="one sentence per line"):
        read_documents(path)


def test_vocabulary_trainer_puts_specials_first_and_covers_the_corpus():
    from bert_core.pretraining.vocab import SPECIAL_TOKENS, train_tokenizer

    sentences = [s.text for d in generate_corpus(200, seed=2) for s in d]
    tokenizer = train_tokenizer(sentences, vocab_size=400)
    vocab = tokenizer.get_vocab()
    assert [vocab[t] for t in SPECIAL_TOKENS] == [0, 1, 2, 3, 4]
    # past the trainer's 400 only by the "##" forms of letters and digits it had not merged
    extra = [piece for piece, i in vocab.items() if i >= 400]
    assert 100 < tokenizer.vocab_size and all(
        p[:2] == "##" and p[2:].isalnum() and len(p) == 3 for p in extra
    )
    enc = tokenizer.encode(sentences[0], sentences[1])
    assert tokenizer.unk_token_id not in enc.input_ids.tolist()
    # every printable ASCII character is a piece, written in the corpus or not
    assert all(c.lower() in vocab for c in map(chr, range(33, 127)))
    typed = "#1 ~ {x} @home | 50% <b> in 1999 abc123 x9"
    assert tokenizer.unk_token_id not in tokenizer.encode(typed).input_ids.tolist()
    # what phones and word processors write reads as the ASCII the corpus has
    pasted = tokenizer.encode("\u201cI can\u2019t\u201d \u2014 9\u20135\u2026")
    assert pasted.tokens == tokenizer.encode('"I can\'t" - 9-5...').tokens
    assert enc.tokens[0] == "[CLS]" and enc.tokens.count("[SEP]") == 2


# -- the training loop ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_corpus() -> list[list[str]]:
    return [[s.text for s in d] for d in generate_corpus(300, seed=4)]


@contextlib.contextmanager
def one_thread():
    """Tiny matrices train faster on one thread, and it is kind to a shared machine; restored after."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def trained(small_corpus, tmp_path_factory):

    from bert_core.pretraining.train import TrainingConfig, train

    with one_thread():
        config = TrainingConfig(
            vocab_size=300,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=64,
            max_position_embeddings=64,
            steps=120,
            batch_size=16,
            learning_rate=3e-3,
            warmup_steps=10,
            checkpoint_every=50,
            eval_sequences=64,
        )
        out = tmp_path_factory.mktemp("pretrain") / "model"
        result = train(small_corpus, config, out_dir=out, info={"note": "test"})
    return result, out


def test_a_vocabulary_larger_than_asked_says_why(caplog):
    """A vocab_size of 10 gave 109 pieces, with no word of why."""
    from bert_core.pretraining.vocab import train_vocabulary

    with caplog.at_level(logging.INFO, logger="bert_core.pretraining.vocab"):
        vocab = train_vocabulary(["the cat sat on the mat", "the dog ran"], vocab_size=10)
    assert len(vocab) > 10
    assert f"vocabulary of {len(vocab)} pieces, more than the 10 asked: every character" in caplog.text


def test_the_same_seed_and_vocabulary_give_the_same_checkpoint_byte_for_byte(trained, small_corpus, tmp_path):
    """What the README promises for a rerun: given the vocabulary (tokenizers' WordPiece trainer is not
    deterministic, huggingface/tokenizers#1794), the same seed trains the same weights."""
    from bert_core.pretraining.train import TrainingConfig, train
    from bert_core.tokenizer import WordPieceTokenizer

    _, first = trained
    vocab = (first / "vocab.txt").read_text(encoding="utf-8").splitlines()
    config = TrainingConfig(
        vocab_size=300, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
        max_position_embeddings=64, steps=12, batch_size=8, warmup_steps=2, checkpoint_every=50, eval_sequences=16,
    )  # fmt: skip
    weights = []
    with one_thread():
        for run in ("a", "b"):
            tokenizer = WordPieceTokenizer.from_vocab(vocab, max_length=64)
            train(small_corpus, config, out_dir=tmp_path / run, tokenizer=tokenizer)
            weights.append((tmp_path / run / "model.safetensors").read_bytes())
    assert weights[0] == weights[1]


def test_short_training_run_lowers_the_mlm_loss(trained):
    result, _ = trained
    # From ln(vocab) ~ 5.7 nats at the start; 120 tiny steps reliably take off more than half a nat.
    assert result.eval_after["mlm_loss"] < result.eval_before["mlm_loss"] - 0.5
    assert len(result.history) == 120
    assert not result.network.training, "the returned model must be in eval mode (dropout off)"
    first = np.mean([s.mlm_loss for s in result.history[:10]])
    last = np.mean([s.mlm_loss for s in result.history[-10:]])
    assert last < first


def test_checkpoint_round_trips_through_load_pretrained(trained):
    import torch

    import bert_core

    result, out = trained
    assert {"config.json", "model.safetensors", "vocab.txt", "pretraining.json"} <= {
        p.name for p in out.iterdir()
    }
    info = json.loads((out / "pretraining.json").read_text())
    assert info["step"] == 120 and info["final"] and info["note"] == "test"
    model = bert_core.load_pretrained(out)
    assert model.has_mlm_head and model.has_nsp_head
    text, pair = "The dog began to bark at the stranger.", "She went to the bank."
    enc = model.tokenizer.encode(text, pair)
    ids = torch.from_numpy(np.array(enc.input_ids))[None]
    types = torch.from_numpy(np.array(enc.token_type_ids))[None]
    # The loaded model runs packed (oneDNN matmuls): so must the one compared with it, for
    # the round trip to be checked to the bit.
    network = copy.deepcopy(result.network)
    network.pack_weights()
    with torch.inference_mode():
        expected = network(ids, types)
        expected_mlm = network.logits("mlm", expected.last_hidden_state)
        expected_nsp = torch.softmax(network.logits("nsp", expected.pooled), -1)[0, 0]
    analysis = model.analyze(text, pair)
    assert np.array_equal(analysis.hidden_states, expected.hidden_states[:, 0].numpy())
    positions = list(range(len(enc.tokens)))
    scores = model.predict_at(enc.input_ids, positions, token_type_ids=enc.token_type_ids, top_k=3)
    assert [p.token_ids for p in scores.predictions] == expected_mlm[0].topk(3).indices.tolist()
    assert model.next_sentence(text, pair) == pytest.approx(float(expected_nsp), abs=1e-6)


def test_float16_checkpoints_load_as_float32(trained, tmp_path):
    import bert_core
    from bert_core.pretraining.train import save_checkpoint

    result, _ = trained
    save_checkpoint(tmp_path, result.network, result.tokenizer, result.bert_config, save_dtype="float16")
    model = bert_core.load_pretrained(tmp_path)
    reference = bert_core.load_pretrained(trained[1])
    a = model.analyze("The bat flew out of the cave.").hidden_states
    b = reference.analyze("The bat flew out of the cave.").hidden_states
    assert a.dtype == np.float32
    assert np.abs(a - b).max() < 0.05


def test_checkpoint_removes_stale_files_of_an_earlier_run(trained, tmp_path):
    """tokenizer.json (preferred by the loader) or a weight index left by an earlier run must not survive."""
    import bert_core
    from bert_core.pretraining.train import save_checkpoint

    result, _ = trained
    stale = [
        "special_tokens_map.json",
        "pytorch_model.bin",
        "model.safetensors.index.json",
        "model-00001-of-00002.safetensors",
        "pretraining.json",
    ]
    (tmp_path / "tokenizer.json").write_text('{"version": "1.0", "model": {"vocab": {"stale-piece": 0}}}')
    for name in stale:
        (tmp_path / name).write_text("{}")
    (tmp_path / "notes.txt").write_text("mine")  # not a checkpoint file: left alone
    save_checkpoint(tmp_path, result.network, result.tokenizer, result.bert_config)
    names = {p.name for p in tmp_path.iterdir()}
    assert not names & set(stale)
    assert "notes.txt" in names
    # written afresh (the trained tokenizer reads typographic marks as ASCII, which only it can say)
    assert "stale-piece" not in json.loads((tmp_path / "tokenizer.json").read_text())["model"]["vocab"]
    # and removed when the tokenizer has no such marks to say, so the loader reads vocab.txt
    from bert_core.tokenizer import WordPieceTokenizer

    plain = WordPieceTokenizer.from_vocab(tmp_path / "vocab.txt")
    assert not plain.ascii_twins
    (tmp_path / "tokenizer.json").write_text('{"version": "1.0", "model": {"vocab": {"stale-piece": 0}}}')
    save_checkpoint(tmp_path, result.network, plain, result.bert_config)
    assert not (tmp_path / "tokenizer.json").exists()
    model = bert_core.load_pretrained(tmp_path)
    assert model.tokenizer.vocab_size == result.tokenizer.vocab_size


def test_training_leaves_the_global_torch_rng_alone_and_typed_specials_are_not_masked(small_corpus):
    import torch

    from bert_core.pretraining.train import PretrainingData, TrainingConfig, train

    with one_thread():
        config = TrainingConfig(
            vocab_size=300, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
            max_position_embeddings=64, steps=2, batch_size=4, warmup_steps=1, eval_sequences=4,
            pair_task="none",
        )  # fmt: skip
        torch.manual_seed(123)
        expected = torch.rand(3)
        torch.manual_seed(123)
        result = train(small_corpus[:30], config)
        assert torch.equal(torch.rand(3), expected)
    # MLM only: no pooler, so no untrained pooler weights are saved; pad id comes from the tokenizer.
    assert not result.network.has_pooler
    assert result.bert_config.pad_token_id == result.tokenizer.pad_token_id
    tok = result.tokenizer
    docs = [["the [MASK] sat on [CLS] a [PAD] mat and [SEP] the dog ran"], ["a second doc"]]
    data = PretrainingData(docs, tok, config)
    ids, _, specials, _ = data.sequence(0, np.random.default_rng(0))
    typed = np.isin(ids, [tok.mask_token_id, tok.cls_token_id, tok.pad_token_id, tok.sep_token_id])
    assert typed.sum() >= 6 and (specials == typed).all()


def test_lines_longer_than_a_training_sequence_are_counted(small_corpus, caplog):
    """A corpus of one paragraph per line trained on each paragraph's start without a word."""
    import logging

    from bert_core.pretraining.train import PretrainingData, TrainingConfig, train

    config = TrainingConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
                            max_position_embeddings=32, steps=1, batch_size=2, warmup_steps=0,
                            eval_sequences=2, pair_task="none")  # fmt: skip
    tok = train(small_corpus[:6], config).tokenizer
    paragraph = " ".join(small_corpus[0])  # one document's sentences on one line: more than 30 pieces
    assert len(tok.backend.encode(paragraph, add_special_tokens=False).ids) > 30
    with caplog.at_level(logging.WARNING, logger="bert_core.pretraining.train"):
        PretrainingData([[paragraph, "the cat sat ."], ["the dog ran ."]], tok, config)
    assert "1 line of the corpus is longer than a whole training sequence (30 pieces" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="bert_core.pretraining.train"):
        PretrainingData([["the cat sat ."], ["the dog ran ."]], tok, config)
    assert "longer than a whole training sequence" not in caplog.text


def test_bert_initialisation_and_learning_rate_schedule():
    import torch

    from bert_core.pretraining.train import TrainingConfig, build_network, optimizer_and_schedule

    config = TrainingConfig(
        hidden_size=64, num_hidden_layers=2, intermediate_size=128, steps=100, warmup_steps=10
    )
    network = build_network(config.bert_config(500), config)
    for name, param in network.named_parameters():
        if "LayerNorm.weight" in name:
            assert torch.all(param == 1), name
        elif name.endswith("bias"):
            assert torch.all(param == 0), name
        else:
            assert abs(float(param.detach().std()) - 0.02) < 0.005, name
    # the rate each step trains with, read off the run's own optimiser and schedule
    optimizer, schedule = optimizer_and_schedule(network, config, warmup_steps=10, total_steps=100)
    factors = []
    for _ in range(100):
        factors.append(optimizer.param_groups[0]["lr"] / config.learning_rate)
        optimizer.step()
        schedule.step()
    assert factors[0] == pytest.approx(0.1) and factors[9] == pytest.approx(1.0)
    assert all(a >= b for a, b in zip(factors[9:], factors[10:], strict=False))
    assert factors[-1] == pytest.approx(1 / 90)
    with pytest.raises(ValueError, match="warm-up"):  # a rate that would never reach its peak nor decay
        TrainingConfig(steps=5, warmup_steps=30)
    # by default a tenth of the run, at most 200: a short run no longer meets a warm-up longer than itself
    assert TrainingConfig(steps=100).warmup_steps == 10 and TrainingConfig(steps=5000).warmup_steps == 200


@pytest.mark.parametrize("family", ["bert", "distilbert", "albert"])
def test_weight_decay_spares_every_layer_norm_and_bias_whatever_its_name(family, tmp_path, request):
    """As BERT's optimiser: no decay on biases and LayerNorm gains. By name, DistilBERT's sa_layer_norm and
    ALBERT's full_layer_layer_norm were decayed."""
    from torch import nn

    from bert_core.pretraining.train import TrainingConfig, optimizer_and_schedule
    from tests.variants import make_variant

    directory = (
        request.getfixturevalue("tiny_checkpoint")
        if family == "bert"
        else make_variant(tmp_path, family, "mlm")
    )
    model = bert_core.load_pretrained(directory, pack_weights=False)
    optimizer, _ = optimizer_and_schedule(model.network, TrainingConfig(), warmup_steps=1, total_steps=2)
    decayed, spared = ({id(p) for p in g["params"]} for g in optimizer.param_groups)
    norms = [m for m in model.network.modules() if isinstance(m, nn.LayerNorm)]
    assert norms and all(id(p) in spared for m in norms for p in m.parameters())
    assert all(
        id(p) in decayed for n, p in model.network.named_parameters() if n.endswith("weight") and p.dim() == 2
    )


def test_static_masking_and_sop_train_too(small_corpus, tmp_path):
    """And the model loads as what it learned: an SOP head (its pair head sits where BERT's NSP head goes, so
    it was offered as next-sentence prediction); an MLM-only one is a BertForMaskedLM for transformers."""
    from bert_core.pretraining.train import TrainingConfig, train

    with one_thread():
        config = TrainingConfig(
            vocab_size=300, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
            max_position_embeddings=64, steps=8, batch_size=8, warmup_steps=2, eval_sequences=16,
            masking="static", static_duplicates=2, pair_task="sop", max_segment_sentences=2,
        )  # fmt: skip
        result = train(small_corpus[:50], config, out_dir=tmp_path / "sop")
        mlm_only = TrainingConfig(**{**config.to_dict(), "pair_task": "none", "adam_betas": (0.9, 0.98)})
        train(small_corpus[:50], mlm_only, out_dir=tmp_path / "mlm")
    assert len(result.history) == 8 and result.history[-1].pair_loss is not None
    model = bert_core.load_pretrained(tmp_path / "sop")
    assert model.heads == ("mlm", "sop") and model.info.has_nsp_head is False
    in_order = model.sentence_order("the dog ran.", "it was fast.")
    pooled = model.analyze("the dog ran.", "it was fast.").pooled
    import torch

    with torch.no_grad():
        logits = model.network.head("nsp")(torch.from_numpy(pooled)[None])  # the trained pair head itself
    assert in_order == pytest.approx(float(torch.softmax(logits, -1)[0, 0]), abs=1e-6)
    with pytest.raises(bert_core.MissingHeadError, match="sentence order"):
        model.next_sentence("the dog ran.", "it was fast.")
    saved = json.loads((tmp_path / "mlm" / "config.json").read_text())
    assert saved["architectures"] == ["BertForMaskedLM"]
    assert bert_core.load_pretrained(tmp_path / "mlm").heads == ("mlm",)


def test_the_progress_line_averages_recent_steps_without_leaning_on_the_first():
    """Started at step 1's loss, the average still weighed it at half after 34 steps: a short run's last line
    read 3.085 where its last epoch averaged 2.849."""
    import io
    from types import SimpleNamespace

    from bert_core.pretraining.cli import ProgressBar

    bar = ProgressBar(stream=io.StringIO(), every=1, detail=lambda s: "")
    losses = [10.0] + [2.0] * 33
    for n, loss in enumerate(losses, 1):
        bar(SimpleNamespace(step=n, total_steps=34, loss=loss, learning_rate=1e-3, elapsed_s=1.0))
    weights = [0.98 ** (34 - n) for n in range(1, 35)]
    assert bar.smoothed == pytest.approx(
        sum(w * x for w, x in zip(weights, losses, strict=True)) / sum(weights)
    )
    assert bar.smoothed < 2.4 and "recent loss" in bar.stream.getvalue()


def test_training_config_errors_name_the_option():
    from bert_core.pretraining.train import TrainingConfig

    with pytest.raises(ValueError, match="pair_task"):
        TrainingConfig(pair_task="nextsent")
    with pytest.raises(ValueError, match="masking"):
        TrainingConfig(masking="sometimes")
    with pytest.raises(ValueError, match="unknown training option"):
        TrainingConfig.from_dict({"hidden": 3})


def _tiny_cli_run(tmp_path, *flags: str) -> tuple[int, object]:
    """`bertscope pretrain` of a 1-layer, 32-wide model on a small generated corpus: (exit code, --out)."""
    import torch

    from bert_core.pretraining.cli import main

    corpus = tmp_path / "corpus.txt"
    write_corpus(corpus, 60, seed=9)
    out = tmp_path / "model"
    threads = torch.get_num_threads()
    try:
        code = main(
            ["--corpus", str(corpus), "--out", str(out), "--hidden-size", "32", "--layers", "1", "--heads", "2",
             "--vocab-size", "200", "--batch-size", "4", "--max-positions", "64", "--threads", "1", "--quiet",
             *flags]
        )  # fmt: skip
    finally:
        torch.set_num_threads(threads)
    return code, out


def test_cli_writes_a_loadable_model(tmp_path, capsys):
    import bert_core

    code, out = _tiny_cli_run(tmp_path, "--steps", "4", "--warmup", "1")
    assert code == 0
    said = capsys.readouterr().out
    # no held-out text: the before and after are how well it learned its own corpus
    assert "MLM loss" in said and ", on fixed sequences of the training corpus; model written" in said
    model = bert_core.load_pretrained(out)
    assert model.config.hidden_size == 32
    assert json.loads((out / "pretraining.json").read_text())["command"].startswith(
        "bertscope pretrain --corpus"
    )


def test_a_last_update_that_breaks_the_model_is_an_error_not_a_finished_run(tmp_path, capsys):
    """--lr 1e30 on one step: the loss before the update was finite, the update broke the model, and the run
    said "done ... MLM loss 4.661 -> nan (accuracy 54%)" and wrote a model that predicts NaN."""
    code, out = _tiny_cli_run(tmp_path, "--steps", "1", "--warmup", "0", "--lr", "1e30")
    err = capsys.readouterr().err
    assert code == 1 and "after step 1, the evaluation sequences' MLM loss is nan" in err, err
    assert "the updates broke the model; step 1 was not saved; lower --lr" in err
    assert not (out / "model.safetensors").exists()


def test_weights_no_longer_finite_are_named_before_anything_is_saved():
    import torch

    from bert_core.pretraining.train import check_finite

    network = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.LayerNorm(2))
    check_finite(network, {"the loss": 0.5}, "after step 3", "advice")  # all finite: nothing said
    with torch.no_grad():
        network[1].weight[0] = float("inf")
    with pytest.raises(
        FloatingPointError, match=r"^after step 3, the weights \(1\.weight, and maybe others\)"
    ):
        check_finite(network, {"the loss": 0.5}, "after step 3", "advice")


@pytest.mark.parametrize("lr", ["nan", "inf", "0", "-1"])
def test_cli_refuses_a_learning_rate_that_is_not_a_positive_number_before_any_work(tmp_path, capsys, lr):
    """NaN passed the check and was refused by torch's Adam only after a vocabulary had been trained; inf
    trained to a NaN loss."""
    from bert_core.pretraining.cli import main

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat. the dog ran.\n\nthe bank is by the river. we sat there.\n")
    with pytest.raises(SystemExit) as stopped:
        main(["--corpus", str(corpus), "--out", str(tmp_path / "m"), "--lr", lr])
    assert stopped.value.code == 2
    assert "--lr must be a positive number" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize(
    ("given", "said"),
    [
        (["--layers", "0"], "--layers 0 is outside the supported range"),
        (["--steps", "0"], "--steps must be at least 1, got 0"),
        (["--hidden-size", "30", "--heads", "4"], "--hidden-size 30 is not divisible by --heads 4"),
        (["--max-positions", "4"], "--max-positions must be at least 8"),
        (["--vocab-size", "3"], "--vocab-size must be more than 5"),
        (["--warmup", "50", "--steps", "10"], "(--warmup, 50 steps) is longer than the run (10 steps)"),
    ],
)
def test_cli_names_a_bad_setting_by_its_option_before_any_work(tmp_path, capsys, given, said):
    """The messages named the settings' fields ("config key 'num_hidden_layers'", "batch_size"), and a
    vocabulary size below the specials was refused only after the corpus was read."""
    from bert_core.pretraining.cli import main

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat. the dog ran.\n\nthe bank is by the river. we sat there.\n")
    with pytest.raises(SystemExit) as stopped:
        main(["--corpus", str(corpus), "--out", str(tmp_path / "m"), *given])
    assert stopped.value.code == 2 and said in capsys.readouterr().err
    assert not (tmp_path / "m").exists()


def test_sop_trains_on_one_document_where_nsp_needs_two(tmp_path, capsys):
    """SOP swaps two segments of one document; only NSP draws from another. A one-document corpus was refused
    for both."""
    from bert_core.pretraining.cli import main

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat.\nthe dog ran.\nthe bank is by the river.\nwe sat there.\n")
    tiny = [
        "--hidden-size",
        "16",
        "--layers",
        "1",
        "--heads",
        "2",
        "--vocab-size",
        "60",
        "--max-positions",
        "32",
    ]
    run = ["--corpus", str(corpus), *tiny, "--steps", "2", "--batch-size", "2", "--threads", "1"]
    with pytest.raises(SystemExit) as stopped:
        main([*run, "--out", str(tmp_path / "nsp"), "--pair-task", "nsp"])
    assert (
        stopped.value.code == 2 and "--pair-task nsp needs at least two documents" in capsys.readouterr().err
    )
    with one_thread():
        assert main([*run, "--out", str(tmp_path / "sop"), "--pair-task", "sop"]) == 0
    assert bert_core.load_pretrained(tmp_path / "sop").heads == ("mlm", "sop")
    corpus.write_text("the cat sat.\n\nthe dog ran.\n")  # no document with a second sentence to swap
    for task in ("sop", "nsp"):  # NSP too: it trained a vocabulary first, then failed with status 1
        with pytest.raises(SystemExit) as stopped:
            main([*run, "--out", str(tmp_path / "none"), "--pair-task", task])
        assert (
            stopped.value.code == 2
            and f"--pair-task {task} needs a document of two sentences" in capsys.readouterr().err
        )


def test_cli_reports_a_missing_corpus(tmp_path, capsys):
    from bert_core.pretraining.cli import main

    with pytest.raises(SystemExit) as stopped:
        main(["--corpus", str(tmp_path / "nope.txt"), "--out", str(tmp_path / "m")])
    err = capsys.readouterr().err
    # one line: no misuse of the flags, so no 17 lines of usage above what is wrong
    assert stopped.value.code == 2 and "make-corpus" in err and "usage:" not in err and err.count("\n") == 1
    with pytest.raises(SystemExit):  # a folder once got "no such file (make one with ...)" for its name
        main(["--corpus", str(tmp_path), "--out", str(tmp_path / "m")])
    assert f"--corpus {tmp_path} is a directory" in capsys.readouterr().err


def test_checkpoint_loads_in_transformers_with_the_same_outputs(trained):
    """The written directory is a real Hugging Face checkpoint, not just one our own loader accepts."""
    transformers = pytest.importorskip("transformers")
    import torch

    result, out = trained
    hf = transformers.BertForPreTraining.from_pretrained(out).eval()
    enc = result.tokenizer.encode("The dog\u2019s bark\u2026", "It was late \u2014 \u201cvery\u201d.")
    assert "[UNK]" not in enc.tokens
    # transformers' own tokenizer for the directory reads the same ids, typographic marks included
    theirs = transformers.AutoTokenizer.from_pretrained(out)(
        "The dog\u2019s bark\u2026", "It was late \u2014 \u201cvery\u201d."
    )
    assert theirs["input_ids"] == enc.input_ids.tolist()
    assert theirs["token_type_ids"] == enc.token_type_ids.tolist()
    ids = torch.from_numpy(np.array(enc.input_ids))[None]
    types = torch.from_numpy(np.array(enc.token_type_ids))[None]
    network = result.network
    with torch.inference_mode():
        theirs = hf(input_ids=ids, token_type_ids=types)
        ours = network(ids, types)
        mlm = network.logits("mlm", ours.last_hidden_state)
        nsp = network.logits("nsp", ours.pooled)
    torch.testing.assert_close(theirs.prediction_logits, mlm, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(theirs.seq_relationship_logits, nsp, atol=1e-4, rtol=1e-4)


DEMO_MODEL = Path(__file__).resolve().parents[2] / "assets" / "demo-model"


@pytest.mark.skipif(not (DEMO_MODEL / "config.json").is_file(), reason="the demo model is not bundled")
def test_bundled_demo_model_loads_and_knows_its_corpus():
    import bert_core

    model = bert_core.load_pretrained(DEMO_MODEL)
    assert model.has_mlm_head and model.has_nsp_head
    assert (DEMO_MODEL / "model.safetensors").stat().st_size < 15_000_000
    guesses = [w for w, _ in model.fill_mask("He struck a [MASK] and lit the camp fire.")[0]]
    assert "match" in guesses
    # pasted typographic marks read as the ASCII it was trained on, so they guess the same
    curly = model.fill_mask("\u201cHe couldn\u2019t strike a [MASK] \u2014 it was wet\u2026\u201d")[0]
    assert curly == model.fill_mask('"He couldn\'t strike a [MASK] - it was wet..."')[0]
    marks = "\u2018Hi\u2019 \u201cyes\u201d 9\u20135 \u2212 \u2026"
    assert "[UNK]" not in model.tokenizer.encode(marks).tokens
    info = json.loads((DEMO_MODEL / "pretraining.json").read_text())
    assert info["final"] and info["command"].startswith(
        "bertscope pretrain --corpus assets/corpus/demo_corpus.txt"
    )


def test_saving_an_untied_model_keeps_its_own_decoder(tmp_path):
    """An untied MLM decoder must come back as itself, in BERTScope and in transformers (decoder.bias too)."""
    import torch
    import transformers

    import bert_core
    from bert_core.pretraining.train import save_checkpoint
    from tests.conftest import make_checkpoint

    source = bert_core.load_pretrained(
        make_checkpoint(tmp_path / "src", "mlm", seed=4, tie_word_embeddings=False)
    )
    assert not source.network.cls.predictions.tied
    out = save_checkpoint(tmp_path / "saved", source.network, source.tokenizer, source.config)
    assert json.loads((out / "config.json").read_text())["tie_word_embeddings"] is False
    again = bert_core.load_pretrained(out)
    assert not again.network.cls.predictions.tied
    text = "the cat sat on the [MASK]"
    a, b = source.predict_masks(text, top_k=10)[0], again.predict_masks(text, top_k=10)[0]
    assert a.token_ids == b.token_ids and a.probabilities == b.probabilities

    hf = transformers.BertForMaskedLM.from_pretrained(out, attn_implementation="eager").eval()
    enc = source.encode(text)
    with torch.no_grad():
        logits = hf(input_ids=torch.tensor([enc.input_ids.tolist()])).logits[0, enc.tokens.index("[MASK]")]
    top = torch.topk(torch.softmax(logits, -1), 10)
    assert top.indices.tolist() == a.token_ids
    np.testing.assert_allclose(top.values.numpy(), a.probabilities, atol=1e-6)


def test_the_longest_trained_sequence_is_recorded_and_replayable(trained, small_corpus):
    import bert_core
    from bert_core.pretraining.train import TrainingConfig, replay_longest_sequence

    result, out = trained
    info = json.loads((out / "pretraining.json").read_text())
    config = TrainingConfig(**info["training_config"])
    longest = info["longest_sequence"]
    assert 10 < longest <= config.max_position_embeddings
    assert replay_longest_sequence(small_corpus, result.tokenizer, config) == longest
    # the loader passes it on only when positions were left untrained
    expected = longest if longest < config.max_position_embeddings else None
    assert bert_core.load_pretrained(out).info.trained_length == expected


# -- stopping and resuming --------------------------------------------------------------------------------


def _resumable_config(**changes):
    from bert_core.pretraining.train import TrainingConfig

    # Static masking with duplicates, dropout and float16 files: resuming must restore the masker's visits,
    # the dropout generator and float32 weights the saved model.safetensors no longer holds.
    config = dict(
        vocab_size=300, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
        max_position_embeddings=64, steps=12, batch_size=8, warmup_steps=3, checkpoint_every=4, eval_sequences=16,
        masking="static", static_duplicates=2, save_dtype="float16",
    )  # fmt: skip
    return TrainingConfig(**{**config, **changes})


def test_a_stopped_run_resumed_ends_with_the_weights_of_an_uninterrupted_one(trained, small_corpus, tmp_path):
    import torch

    from bert_core.pretraining.train import TRAINING_STATE_FILE, resume, train
    from bert_core.tokenizer import WordPieceTokenizer

    _, first = trained
    vocab = (first / "vocab.txt").read_text(encoding="utf-8").splitlines()
    config = _resumable_config()
    asked = []
    with one_thread():
        whole = train(
            small_corpus, config, out_dir=tmp_path / "whole", tokenizer=WordPieceTokenizer.from_vocab(vocab)
        )
        # stopped between two checkpoints (4 and 8): the stop writes step 6 itself
        stopped = train(
            small_corpus,
            config,
            out_dir=tmp_path / "stopped",
            tokenizer=WordPieceTokenizer.from_vocab(vocab),
            info={"corpus": "small"},
            stop=lambda: asked.append(1) or len(asked) == 6,
        )
        assert stopped.stopped_at == 6 and len(stopped.history) == 6
        saved = json.loads((tmp_path / "stopped" / "pretraining.json").read_text())
        assert saved["step"] == 6 and saved["final"] is False
        assert (tmp_path / "stopped" / TRAINING_STATE_FILE).is_file()
        import torch

        torch.set_num_threads(2)  # the caller's: resume() trains on the run's own (1), then puts this back
        resumed = resume(small_corpus, tmp_path / "stopped", info={"resumed_with": "test"})
        assert torch.get_num_threads() == 2
    assert [s.step for s in resumed.history] == list(range(7, 13))
    assert [s.loss for s in resumed.history] == [s.loss for s in whole.history[6:]]
    final, expected = resumed.network.state_dict(), whole.network.state_dict()
    assert final.keys() == expected.keys() and all(torch.equal(final[k], expected[k]) for k in final)
    assert (tmp_path / "stopped" / "model.safetensors").read_bytes() == (
        tmp_path / "whole" / "model.safetensors"
    ).read_bytes()
    assert resumed.eval_before == whole.eval_before and resumed.eval_after == whole.eval_after
    # the finished directory is a plain checkpoint again, and remembers both commands' metadata
    assert not (tmp_path / "stopped" / TRAINING_STATE_FILE).exists()
    info = json.loads((tmp_path / "stopped" / "pretraining.json").read_text())
    assert info["final"] is True and info["step"] == 12
    assert info["corpus"] == "small" and info["resumed_with"] == "test"
    assert (
        info["recent_loss"]
        == json.loads((tmp_path / "whole" / "pretraining.json").read_text())["recent_loss"]
    )


def test_resuming_refuses_what_it_cannot_continue_exactly(trained, small_corpus, tmp_path):
    from bert_core.pretraining.train import TRAINING_STATE_FILE, resume, train

    _, finished = trained
    with pytest.raises(ValueError, match="finished"):
        resume(small_corpus, finished)
    with pytest.raises(ValueError, match="no `bertscope pretrain` run"):
        resume(small_corpus, tmp_path)
    with one_thread():
        train(small_corpus[:60], _resumable_config(steps=6), out_dir=tmp_path / "run", stop=lambda: True)
    with pytest.raises(ValueError, match="not the one the run"):
        resume(small_corpus[:59], tmp_path / "run")
    vocab = tmp_path / "run" / "tokenizer.json"  # what the loader reads first
    kept = vocab.read_text(encoding="utf-8")
    edited = json.loads(kept)
    edited["model"]["vocab"]["extra"] = len(edited["model"]["vocab"])  # the embeddings no longer fit
    vocab.write_text(json.dumps(edited), encoding="utf-8")
    with pytest.raises(ValueError, match="do not fit the vocabulary"):
        resume(small_corpus[:60], tmp_path / "run")
    vocab.write_text(kept, encoding="utf-8")
    for garbage in (b"not a torch file", b""):
        (tmp_path / "run" / TRAINING_STATE_FILE).write_bytes(garbage)
        with pytest.raises(ValueError, match="cannot be read") as told:
            resume(small_corpus[:60], tmp_path / "run")
        # torch's own text advises weights_only=False, which would run whatever the file holds
        assert "weights_only" not in str(told.value) and "still loads" in str(told.value)
    (tmp_path / "tuned").mkdir()
    (tmp_path / "tuned" / "finetuning.json").write_text("{}")
    with pytest.raises(ValueError, match="fine-tuned checkpoint"):
        resume(small_corpus, tmp_path / "tuned")


def test_a_checkpoint_stopped_while_its_files_move_in_leaves_the_run_resumable(
    small_corpus, tmp_path, monkeypatch
):
    """The earlier training_state.pt was deleted before the new files moved in: a stop (a second Ctrl-C, a
    crash, a full disk) between two moves of the final save left a run that could neither resume nor say it
    had finished. Now the records move in last and what they replace goes after."""
    from bert_core.pretraining import train as lab
    from bert_core.tokenizer import WordPieceTokenizer

    documents, config = small_corpus[:60], _resumable_config(steps=6)
    with one_thread():
        lab.train(documents, config, out_dir=tmp_path / "run", stop=lambda: True)
        vocab = (tmp_path / "run" / "vocab.txt").read_text(encoding="utf-8").splitlines()
        lab.train(
            documents, config, out_dir=tmp_path / "whole", tokenizer=WordPieceTokenizer.from_vocab(vocab)
        )
    expected = (tmp_path / "whole" / "model.safetensors").read_bytes()
    saved = {p.name: p.read_bytes() for p in (tmp_path / "run").iterdir()}
    real = os.replace
    # A resume from step 1 moves 6 files at its step-4 checkpoint, then 5 for the final save: every one fails
    for fail_at in range(1, 12):
        for name, data in saved.items():  # the stopped run, as it was
            (tmp_path / "run" / name).write_bytes(data)
        moves = []

        def replace(src, dst, fail_at=fail_at, moves=moves):
            moves.append(dst)
            if len(moves) == fail_at:
                raise OSError(28, "No space left on device")
            real(src, dst)

        monkeypatch.setattr(lab.os, "replace", replace)
        with one_thread(), pytest.raises(lab.CheckpointWriteError, match="No space left"):
            lab.resume(small_corpus[:60], tmp_path / "run")  # its final save fails at move `fail_at`
        monkeypatch.setattr(lab.os, "replace", real)
        with one_thread():
            lab.resume(documents, tmp_path / "run")  # from whichever checkpoint the stop left: step 1 or 4
        assert (tmp_path / "run" / "model.safetensors").read_bytes() == expected, fail_at
        assert json.loads((tmp_path / "run" / "pretraining.json").read_text())["final"] is True
    assert len(moves) == 11  # the last round reached its final save's last move


@pytest.fixture
def ctrl_c_stops():
    """SIGINT as a terminal's program has it (Python's KeyboardInterrupt), whatever this test process inherited:
    run in the background of a script (`cmd &`), it starts with SIGINT ignored, which the lab respects."""
    import signal

    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, inherited)


def test_cli_ctrl_c_stops_after_the_step_with_a_checkpoint_and_resume_finishes_it(
    tmp_path, capsys, monkeypatch, ctrl_c_stops
):
    import os
    import signal

    import torch

    from bert_core.pretraining import cli

    class CtrlCAtStep3:
        """The progress bar's place in the loop, pressing Ctrl-C (a real SIGINT to this process) at step 3."""

        def __call__(self, stats) -> None:
            if stats.step == 3:
                os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(cli, "ProgressBar", CtrlCAtStep3)
    corpus = tmp_path / "corpus.txt"
    write_corpus(corpus, 60, seed=9)
    out = tmp_path / "model"
    threads = torch.get_num_threads()
    handler = signal.getsignal(signal.SIGINT)
    try:
        code = cli.main(
            ["--corpus", str(corpus), "--out", str(out), "--steps", "8", "--hidden-size", "32", "--layers", "1",
             "--heads", "2", "--vocab-size", "200", "--batch-size", "4", "--warmup", "1", "--max-positions", "64",
             "--threads", "1"]
        )  # fmt: skip
        err = capsys.readouterr().err
        assert code == 130 and "stopped at step 3" in err
        assert f"bertscope pretrain resume --corpus {corpus} --out {out}" in err
        assert json.loads((out / "pretraining.json").read_text())["step"] == 3
        assert signal.getsignal(signal.SIGINT) is handler  # put back
        # Started afresh by mistake (the word `resume` forgotten), it would replace the run at its first
        # checkpoint, or at a Ctrl-C meant to take the command back.
        with pytest.raises(SystemExit):
            cli.main(["--corpus", str(corpus), "--out", str(out), "--steps", "8", "--threads", "1"])
        assert "holds an unfinished run (step 3 of 8)" in capsys.readouterr().err
        code = cli.main(["resume", "--corpus", str(corpus), "--out", str(out), "--quiet", "--threads", "2"])
        said = capsys.readouterr()
        assert "will differ in their last bits" in said.err  # trained on 1 thread
    finally:
        torch.set_num_threads(threads)
    assert code == 0 and "MLM loss" in said.out
    info = json.loads((out / "pretraining.json").read_text())
    assert info["step"] == 8 and info["final"] is True
    assert info["command"].startswith("bertscope pretrain --corpus")
    assert info["resumed_with"].startswith("bertscope pretrain resume --corpus")
    with pytest.raises(SystemExit):
        cli.main(["resume", "--corpus", str(corpus), "--out", str(out)])
    assert "finished (step 8)" in capsys.readouterr().err


def test_a_resume_on_other_threads_keeps_the_runs_own_and_says_the_weights_are_apart_after(tmp_path, capsys):
    """The state recorded the last part's thread count as the run's: after a resume on 2 of a run started on 1,
    the next resume said "the run trained on 2 thread(s)" and a plain one went on with 2."""
    import torch

    from bert_core.pretraining import cli
    from bert_core.pretraining.corpus import read_documents, write_corpus
    from bert_core.pretraining.train import TrainingConfig, load_training_state, resume, train

    corpus = tmp_path / "corpus.txt"
    write_corpus(corpus, 30, seed=4)
    documents, out = read_documents(corpus), tmp_path / "m"
    config = TrainingConfig(vocab_size=120, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                            intermediate_size=32, max_position_embeddings=32, steps=6, batch_size=2,
                            warmup_steps=1, eval_sequences=4, checkpoint_every=1)  # fmt: skip
    steps = []

    def stop_at(n):
        return lambda: bool(steps) and steps[-1] >= n

    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        train(documents, config, out_dir=out, on_step=lambda s: steps.append(s.step), stop=stop_at(2))
        torch.set_num_threads(3)  # the caller's; resume() trains on 2 as told, then puts this back
        resume(documents, out, threads=2, on_step=lambda s: steps.append(s.step), stop=stop_at(4))
        state = load_training_state(out)
        assert (state["threads"], state["threads_seen"], state["step"]) == (1, [1, 2], 4)
        assert torch.get_num_threads() == 3
        assert cli.main(["resume", "--corpus", str(corpus), "--out", str(out), "--quiet"]) == 0
    finally:
        torch.set_num_threads(threads)
    err = capsys.readouterr().err
    assert "parts of this run trained on 1 and 2 threads" in err and "goes on with 1" in err


def test_cli_ctrl_c_before_training_and_with_sigint_ignored(tmp_path, capsys, monkeypatch, ctrl_c_stops):
    import os
    import signal

    from bert_core.pretraining import cli, corpus

    path = tmp_path / "corpus.txt"
    write_corpus(path, 60, seed=9)
    args = ["--corpus", str(path), "--out", str(tmp_path / "m"), "--steps", "6", "--hidden-size", "32", "--layers",
            "1", "--heads", "2", "--vocab-size", "200", "--batch-size", "4", "--warmup", "1", "--max-positions",
            "64", "--threads", "1"]  # fmt: skip

    def interrupted(_):
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:  # while the corpus is read: a traceback through the imports before
        patch.setattr(corpus, "read_documents", interrupted)
        assert cli.main(args) == 130
    assert "interrupted before training started; nothing was written" in capsys.readouterr().err

    from bert_core.pretraining import train as lab

    real = lab.train_tokenizer

    def ctrl_c_while_the_vocabulary_trains(*a, **kw):
        os.kill(os.getpid(), signal.SIGINT)
        return real(*a, **kw)

    with monkeypatch.context() as patch:  # before step 1: stopped at once, not a step trained and a run left
        patch.setattr(lab, "train_tokenizer", ctrl_c_while_the_vocabulary_trains)
        assert cli.main(args) == 130
    assert "no checkpoint of this run was written" in capsys.readouterr().err
    assert not (tmp_path / "m" / "training_state.pt").exists()

    class CtrlCAtStep3:
        def __call__(self, stats) -> None:
            if stats.step == 3:
                os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(cli, "ProgressBar", CtrlCAtStep3)
    handler = signal.signal(signal.SIGINT, signal.SIG_IGN)  # as `cmd &` in a script starts it
    try:
        assert cli.main(args) == 0  # ignored, as it was before the lab caught Ctrl-C
    finally:
        signal.signal(signal.SIGINT, handler)
    assert "done in" in capsys.readouterr().out


def test_what_a_stopped_run_says_it_left(tmp_path):
    import argparse
    import time

    from bert_core.pretraining.cli import _saved

    out = tmp_path / "m"
    out.mkdir()
    args = argparse.Namespace(out=out, corpus=tmp_path / "c.txt")
    assert _saved(args, time.time()) == f"no checkpoint of this run was written to {out}"
    (out / "pretraining.json").write_text(json.dumps({"step": 40, "training_config": {"steps": 90}}))
    old = time.time() - 600
    os.utime(out / "pretraining.json", (old, old))  # an earlier run's, finished
    assert _saved(args, time.time()).startswith("no checkpoint of this run")
    (out / "pretraining.json").write_text(json.dumps({"step": 40, "training_config": {"steps": 90}}))
    (out / "training_state.pt").write_bytes(b"")
    said = _saved(args, time.time() - 5)
    assert "(step 40 of 90)" in said and "bertscope pretrain resume --corpus" in said
    # a resume stopped before its own first checkpoint: the one it started from is still there
    said = _saved(args, time.time() + 600)
    assert said.startswith("the checkpoint it resumed from (step 40 of 90) is still in") and "resume" in said


def test_cli_refuses_a_batch_that_cannot_fit_in_memory_before_it_is_drawn(tmp_path, capsys, monkeypatch):
    """--batch-size 100000 was killed by the kernel for want of memory (23 GB), with no word."""
    from bert_core.pretraining import train as training
    from bert_core.pretraining.cli import main

    corpus = tmp_path / "corpus.txt"
    write_corpus(corpus, 20, seed=3)
    small = ["--hidden-size", "32", "--layers", "1", "--heads", "2", "--vocab-size", "200", "--max-positions", "64",
             "--threads", "1", "--quiet", "--steps", "2", "--warmup", "0"]  # fmt: skip
    monkeypatch.setattr(training, "available_memory", lambda: 2 * 2**30)  # as on a machine with 2 GB free
    with monkeypatch.context() as first:  # refused before the vocabulary is trained, not after
        first.setattr(training, "train_tokenizer", lambda *a, **k: pytest.fail("the vocabulary was trained"))
        code = main(["--corpus", str(corpus), "--out", str(tmp_path / "m"), *small, "--batch-size", "100000"])
    said = capsys.readouterr().err
    assert code == 1 and "--batch-size 100000 could need about" in said and "2.0 GB free here" in said
    assert not (tmp_path / "m").exists()
    assert main(["--corpus", str(corpus), "--out", str(tmp_path / "m"), *small, "--batch-size", "4"]) == 0


def test_step_memory_grows_with_the_batch_and_the_sequences():
    from bert_core.pretraining.train import TrainingConfig, step_memory

    config = TrainingConfig(batch_size=64)
    bert = config.bert_config(30522, pad_token_id=0)
    one = step_memory(bert, config)
    assert step_memory(bert, TrainingConfig(batch_size=128)) == pytest.approx(2 * one, rel=1e-6)
    # bert-base at 512 positions: the layers' activations alone are tens of GB for 64 sequences
    base = TrainingConfig(batch_size=64, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                          intermediate_size=3072, max_position_embeddings=512)  # fmt: skip
    assert 20 * 2**30 < step_memory(base.bert_config(30522, pad_token_id=0), base) < 200 * 2**30


def test_a_corpus_of_one_document_points_to_the_mlm_alone_before_any_work(tmp_path, capsys, monkeypatch):
    """Said after the vocabulary was trained, with exit status 1; the other input errors are usage errors (2)."""
    from bert_core.pretraining import train as training
    from bert_core.pretraining.cli import main

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat on the mat.\nthe dog ran by the river.\n")
    monkeypatch.setattr(
        training, "train_tokenizer", lambda *a, **k: pytest.fail("the vocabulary was trained")
    )
    with pytest.raises(SystemExit) as stopped:
        main(["--corpus", str(corpus), "--out", str(tmp_path / "m"), "--quiet", "--steps", "1", "--warmup", "0",
              "--vocab-size", "120", "--hidden-size", "32", "--layers", "1", "--heads", "2", "--threads", "1"])  # fmt: skip
    said = capsys.readouterr().err
    assert stopped.value.code == 2 and "holds 1)" in said and "--pair-task none" in said


def test_replacing_an_earlier_checkpoint_is_said_only_once_the_run_is_checked(tmp_path, capsys):
    """ "replacing the earlier checkpoint in o9" came before a refusal of --warmup: nothing was replaced."""
    from bert_core.pretraining.cli import main

    out = tmp_path / "o9"
    out.mkdir()
    (out / "pretraining.json").write_text(json.dumps({"final": True, "step": 5}))
    corpus = tmp_path / "c.txt"
    corpus.write_text("the cat sat.\nthe dog ran.\n\nthe bird sang.\nthe fish swam.\n")
    with pytest.raises(SystemExit) as stopped:
        main(["--corpus", str(corpus), "--out", str(out), "--steps", "5", "--warmup", "100"])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and "--warmup" in err and "replacing" not in err
