"""Fine-tuned heads of every family against transformers (eager) on random weights: logits within 1e-5, the
same labels, the same best answer span; entity merging; attributions that add up."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import bert_core
from bert_core import InputError, MissingHeadError
from bert_core.tasks import _merge_entities, entity_type
from tests.variants import FAMILY_PREFIX, TASK_CLASSES, hf_tokenizer, make_task_checkpoint

transformers = pytest.importorskip("transformers")

TOL = 1e-5
FAMILIES = list(FAMILY_PREFIX)
SENTIMENT = ["NEG", "NEU", "POS"]
TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


@pytest.fixture(scope="module")
def task_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("tasks")
    labels = {"classify": SENTIMENT, "tag": TAGS, "qa": None, "choice": None}
    return {
        (arch, task): make_task_checkpoint(root / f"{arch}-{task}", arch, task, labels[task])
        for arch in FAMILIES
        for task in TASK_CLASSES
    }


def _hf(directory, arch, task):
    cls = getattr(transformers, FAMILY_PREFIX[arch] + TASK_CLASSES[task])
    return cls.from_pretrained(directory, attn_implementation="eager").eval()


def _hf_inputs(tok, arch, *texts, **kwargs):
    enc = tok(*texts, return_tensors="pt", **kwargs)
    if arch == "distilbert":
        enc.pop("token_type_ids", None)
    if arch == "albert" and len(texts) > 1:  # transformers 5 drops ALBERT's segment ids; ALBERT uses them
        enc = tok(*texts, return_tensors="pt", return_token_type_ids=True, **kwargs)
    return enc


@pytest.mark.parametrize("pack", [True, False], ids=["packed", "exact"])
@pytest.mark.parametrize("arch", FAMILIES)
def test_classifier_matches_transformers(task_dirs, arch, pack):
    directory = task_dirs[arch, "classify"]
    m = bert_core.load_pretrained(directory, pack_weights=pack)
    assert m.info.task == "classify" and m.info.labels == tuple(SENTIMENT)
    assert m.info.task_kind == "single_label_classification"
    hf, tok = _hf(directory, arch, "classify"), hf_tokenizer(directory, arch)
    for texts in (("the bank of the river",), ("we sat by the bank", "the water ran")):
        ours = dict(m.classify(*texts))
        with torch.inference_mode():
            probs = torch.softmax(hf(**_hf_inputs(tok, arch, *texts)).logits[0], -1).numpy()
        np.testing.assert_allclose([ours[name] for name in SENTIMENT], probs, atol=TOL, rtol=0)
        assert m.classify(*texts)[0][0] == SENTIMENT[int(probs.argmax())]


@pytest.mark.parametrize("arch", FAMILIES)
def test_tagger_matches_transformers(task_dirs, arch):
    directory = task_dirs[arch, "tag"]
    m = bert_core.load_pretrained(directory)
    hf, tok = _hf(directory, arch, "tag"), hf_tokenizer(directory, arch)
    text = "we deposited cash at the bank by the river"
    tags = m.tag(text)
    assert [t for t, _, _ in tags] == m.analyze(text).tokens
    with torch.inference_mode():
        probs = torch.softmax(hf(**_hf_inputs(tok, arch, text)).logits[0], -1).numpy()  # (S, C)
    assert [label for _, label, _ in tags] == [TAGS[i] for i in probs.argmax(-1)]
    np.testing.assert_allclose([p for _, _, p in tags], probs.max(-1), atol=TOL, rtol=0)
    for entity in m.entities(text):
        assert entity.text == text[entity.start : entity.end] and entity.label in ("PER", "LOC")


@pytest.mark.parametrize("pack", [True, False], ids=["packed", "exact"])
@pytest.mark.parametrize("arch", FAMILIES)
def test_question_answering_finds_the_same_best_span(task_dirs, arch, pack):
    directory = task_dirs[arch, "qa"]
    m = bert_core.load_pretrained(directory, pack_weights=pack)
    hf, tok = _hf(directory, arch, "qa"), hf_tokenizer(directory, arch)
    question, context = "where was the money?", "we deposited the cash at the bank by the river."
    enc = _hf_inputs(tok, arch, question, context, return_offsets_mapping=True)
    offsets = enc.pop("offset_mapping")[0].tolist()
    with torch.inference_mode():
        out = hf(**enc)
    ours_enc = m.encode(question, context)
    context_at = [i for i, s in enumerate(ours_enc.sequence_ids) if s == 1]
    best, pieces = -np.inf, None
    for i in context_at:  # brute force over transformers' logits, the same rules
        for j in context_at:
            if i <= j < i + 30:
                score = float(out.start_logits[0, i] + out.end_logits[0, j])
                if score > best:
                    best, pieces = score, (i, j)
    # widened to whole words by transformers' own reading of its encoding, as its pipeline's align_to_words
    first, last = (enc.word_to_chars(enc.token_to_word(k), sequence_index=1) for k in pieces)
    answers = m.answer(question, context, top_k=3)
    text, start, end, score, probability = answers[0]
    assert (start, end) == (first.start, last.end) and text == context[start:end]
    assert abs(score - best) <= TOL
    # transformers' pipelines' probability, by their own postprocessing (select_starts_ends, which the
    # document-QA pipeline shares: the question and the specials masked, the first token kept in the softmax)
    from transformers.pipelines.document_question_answering import select_starts_ends

    p_mask = np.array([s != 1 for s in ours_enc.sequence_ids], dtype=np.int64)
    p_mask[0] = 0
    found, ends, probabilities, _ = select_starts_ends(
        out.start_logits.numpy(), out.end_logits.numpy(), p_mask[None], np.ones((1, len(p_mask)), dtype=np.int64),
        max_answer_len=30,
    )  # fmt: skip
    assert (int(found[0]), int(ends[0])) == pieces and 0 < probability <= 1
    assert abs(probability - float(probabilities[0])) <= 1e-5
    assert [a[3] for a in answers] == sorted((a[3] for a in answers), reverse=True)
    assert offsets  # transformers' offsets exist for the same pieces


def test_an_answer_is_widened_to_the_whole_words_its_pieces_fall_in(task_dirs, monkeypatch):
    """A best span that starts and ends inside a word ("Th" of "Th|##ame|##sme|##ad") read "Th", where
    transformers' pipeline (align_to_words, its default) answers the whole word at the same score."""
    m = bert_core.load_pretrained(task_dirs["bert", "qa"])
    question, context = "where was it?", "we sat by the unwanted bank ."
    enc = m.encode(question, context)
    inside = [i for i, s in enumerate(enc.sequence_ids) if s == 1]
    split = [i for i in inside if enc.tokens[i].startswith("##")]
    assert split, enc.tokens  # a word of several pieces in the tiny vocabulary
    target = split[0] - 1  # the word's first piece, alone
    real = m._task_logits

    def rigged(kind, windows):
        logits = torch.zeros_like(real(kind, windows))
        logits[0, target, :] = 10.0  # start and end on that one piece
        return logits

    monkeypatch.setattr(m, "_task_logits", rigged)
    text, start, end, score, _ = m.answer(question, context, top_k=3)[0]
    word = enc.word_ids[target]
    whole = [i for i in inside if enc.word_ids[i] == word]
    assert (start, end) == (enc.offsets[whole[0]][0], enc.offsets[whole[-1]][1]) and text == "unwanted"
    assert score == pytest.approx(20.0)
    # every answer begins and ends where words do (piece by piece, those ending at "##want" end inside one)
    starts = {enc.offsets[i][0] for i in inside if enc.word_ids[i] != enc.word_ids[i - 1]}
    ends = {
        enc.offsets[i][1] for i in inside if i + 1 not in inside or enc.word_ids[i] != enc.word_ids[i + 1]
    }
    answers = m.answer(question, context, top_k=5)
    assert len(answers) == 5 and all(a in starts and b in ends for _, a, b, _, _ in answers), answers


@pytest.mark.parametrize("arch", FAMILIES)
def test_an_answers_words_are_those_transformers_reads_from_its_own_encoding(task_dirs, arch, monkeypatch):
    """Every start and end piece of a passage with spaces in a row, tabs and a line break, widened as
    transformers' word_to_chars widens it: a RoBERTa lone "Ġ" (a piece of no characters) was left out of its
    word, so " leading" read " l", and a span within a run of spaces read as nothing."""
    m = bert_core.load_pretrained(task_dirs[arch, "qa"])
    question, context = "where was it?", "  leading  spaces and\ttabs (unwanted)\nnew line  "
    theirs = hf_tokenizer(task_dirs[arch, "qa"], arch)(question, context).encodings[0]
    enc = m.encode(question, context)
    real = m._task_logits
    inside = [i for i, s in enumerate(enc.sequence_ids) if s == 1]
    for i in inside:
        for j in {i, min(i + 2, inside[-1])}:

            def rigged(kind, windows, i=i, j=j):
                logits = torch.zeros_like(real(kind, windows))
                logits[0, i, 0] = logits[0, j, 1] = 10.0
                return logits

            monkeypatch.setattr(m, "_task_logits", rigged)
            _, start, end, _, _ = m.answer(question, context, top_k=1)[0]
            first = theirs.word_to_chars(theirs.token_to_word(i), sequence_index=1)
            last = theirs.word_to_chars(theirs.token_to_word(j), sequence_index=1)
            assert (start, end) == (first[0], last[1]), (arch, enc.tokens[i], enc.tokens[j])


def test_many_windows_run_a_batch_at_a_time_with_the_same_answers(task_dirs, monkeypatch):
    """Every window ran at once: a long question beside a long passage made hundreds, all their hidden states
    held together (about 6 GB for bert-base)."""
    from bert_core import tasks

    m = bert_core.load_pretrained(task_dirs["bert", "qa"])
    question = "where was the cash?"
    context = " ".join(["the river ran by the bank"] * 40) + " and we deposited the cash at the bank."
    assert len(m._qa_windows(question, context, stride=16)) > 3
    whole = m.answer(question, context, top_k=5, stride=16)
    sizes = []
    real = m._run

    def counted(encodings, *args, **kwargs):
        sizes.append(len(encodings))
        return real(encodings, *args, **kwargs)

    monkeypatch.setattr(tasks, "TASK_BATCH", 2)
    monkeypatch.setattr(m, "_run", counted)
    batched = m.answer(question, context, top_k=5, stride=16)
    assert len(sizes) > 1 and max(sizes) == 2
    assert [a[:3] for a in batched] == [a[:3] for a in whole]
    np.testing.assert_allclose([a[3:] for a in batched], [a[3:] for a in whole], atol=TOL, rtol=0)


def test_long_context_is_read_in_overlapping_windows(task_dirs):
    m = bert_core.load_pretrained(task_dirs["bert", "qa"])
    question = "where was the cash?"
    context = " ".join(["the river ran by the bank"] * 30) + " and we deposited the cash at the bank."
    windows = m._qa_windows(question, context, stride=16)
    assert len(windows) > 1 and all(len(w) <= m.tokenizer.max_length for w in windows)
    covered = {int(w.offsets[i][0]) for w in windows for i, s in enumerate(w.sequence_ids) if s == 1}
    full = m.tokenizer.encode(question, context, max_length=10**9)
    assert covered == {int(full.offsets[i][0]) for i, s in enumerate(full.sequence_ids) if s == 1}
    best = m.answer(question, context, top_k=2)
    # the best span over windows is the best within its own window
    assert all(context[a:b] == t for t, a, b, _, _ in best)
    with pytest.raises(InputError, match="question is empty"):
        m.answer("  ", context)
    with pytest.raises(
        InputError, match=r"^the passage \(context\) is empty"
    ):  # not "text_pair", never named
        m.answer("who?", " ")
    # a head the model lacks is named once: "no multiple choice head (multiple choice)" said it twice
    with pytest.raises(bert_core.MissingHeadError, match="no multiple choice head: ") as told:
        m.choose("the bank", ["a", "b"])
    assert "(multiple choice)" not in str(told.value)


def test_a_stride_as_large_as_the_window_still_advances_by_half_a_window(task_dirs):
    """The default stride (128) against a small model's room for the passage: neighbours share half a window,
    not all of it but one piece (which made a window per piece, 1,282 of them for a 1,400-piece passage)."""
    m = bert_core.load_pretrained(task_dirs["bert", "qa"])
    question = "where was the cash?"
    context = " ".join(["the river ran by the bank"] * 60) + " and we deposited the cash at the bank."
    full = m.tokenizer.encode(question, context, max_length=10**9)
    pieces = sum(1 for s in full.sequence_ids if s == 1)
    room = m.tokenizer.max_length - (len(full) - pieces)
    assert room < 128 < pieces
    windows = m._qa_windows(question, context, stride=128)
    assert len(windows) <= pieces // (room - room // 2) + 1
    starts = [min(int(w.offsets[i][0]) for i, s in enumerate(w.sequence_ids) if s == 1) for w in windows]
    assert starts == sorted(starts) and len(set(starts)) == len(starts)
    covered = {int(w.offsets[i][0]) for w in windows for i, s in enumerate(w.sequence_ids) if s == 1}
    assert covered == {int(full.offsets[i][0]) for i, s in enumerate(full.sequence_ids) if s == 1}


def _assert_choice_matches(directory, arch):
    m = bert_core.load_pretrained(directory)
    hf, tok = _hf(directory, arch, "choice"), hf_tokenizer(directory, arch)
    prompt, choices = "we went to the bank", ["to deposit cash", "to fish in the river", "the cat sat"]
    enc = _hf_inputs(tok, arch, [prompt] * 3, choices, padding=True)
    with torch.inference_mode():
        logits = hf(**{k: v[None] for k, v in enc.items()}).logits[0]
    probs = torch.softmax(logits, -1).numpy()
    ours = dict(m.choose(prompt, choices))
    np.testing.assert_allclose([ours[c] for c in choices], probs, atol=TOL, rtol=0)
    return m


@pytest.mark.parametrize("arch", FAMILIES)
def test_multiple_choice_matches_transformers(task_dirs, arch):
    m = _assert_choice_matches(task_dirs[arch, "choice"], arch)
    with pytest.raises(InputError):
        m.choose("we went to the bank", ["only one"])


@pytest.mark.parametrize("activation", ["tanh", "", "linear", "quick_gelu"])
def test_electra_multiple_choice_reads_its_summary_activation(tmp_path, activation):
    """ElectraSequenceSummary applies config.summary_activation (GELU by default, none when empty)."""
    directory = make_task_checkpoint(tmp_path, "electra", "choice", summary_activation=activation)
    _assert_choice_matches(directory, "electra")


@pytest.mark.parametrize(
    ("key", "value"),
    [("summary_type", "mean"), ("summary_activation", "xielu"), ("summary_use_proj", False)],
)
def test_electra_multiple_choice_refuses_a_summary_it_does_not_compute(tmp_path, key, value):
    directory = make_task_checkpoint(tmp_path, "electra", "choice", **{key: value})
    with pytest.raises(bert_core.ModelLoadError, match=key):
        bert_core.load_pretrained(directory)


def test_regression_and_multi_label_read_problem_type(tmp_path):
    reg = bert_core.load_pretrained(make_task_checkpoint(tmp_path / "r", "bert", "classify", ["score"]))
    assert reg.info.task_kind == "regression"
    [(label, value)] = reg.classify("the bank")
    assert label == "score" and isinstance(value, float)
    explained = reg.attribute("the bank", steps=4)
    assert explained.target == "output score" and explained.score == pytest.approx(value, abs=1e-5)
    multi = bert_core.load_pretrained(
        make_task_checkpoint(
            tmp_path / "m", "bert", "classify", ["a", "b", "c"], problem_type="multi_label_classification"
        )
    )
    probs = [p for _, p in multi.classify("the bank")]
    assert multi.info.task_kind == "multi_label_classification" and abs(sum(probs) - 1) > 1e-3
    assert probs == sorted(probs, reverse=True)


def test_heads_are_never_invented(task_dirs, tiny_model):
    with pytest.raises(MissingHeadError, match="sentence classification"):
        tiny_model.classify("the bank")
    with pytest.raises(MissingHeadError, match="question answering"):
        tiny_model.answer("where?", "the bank")
    tagger = bert_core.load_pretrained(task_dirs["bert", "tag"])
    with pytest.raises(MissingHeadError, match="multiple choice"):
        tagger.choose("a", ["b", "c"])


def test_entity_type_of_a_label():

    assert [entity_type(x) for x in ("B-PER", "I-PER", "S-LOC", "PER", "O")] == [
        "PER",
        "PER",
        "LOC",
        "PER",
        None,
    ]


def test_entities_merge_bio_and_bioes_with_spans():
    text = "ann lee went to new york"
    words = [(0, 0, 3, "B-PER", 0.9), (0, 4, 7, "I-PER", 0.7), (0, 8, 12, "O", 1.0), (0, 13, 15, "O", 1.0)]
    words += [(0, 16, 19, "B-LOC", 0.8), (0, 20, 24, "E-LOC", 0.6)]
    ents = _merge_entities(words, (text, None))
    assert [(e.label, e.text, e.start, e.end) for e in ents] == [
        ("PER", "ann lee", 0, 7),
        ("LOC", "new york", 16, 24),
    ]
    assert ents[0].score == pytest.approx(0.8)
    bioes = [
        (0, 0, 3, "S-PER", 0.9),
        (0, 4, 7, "S-PER", 0.9),
        (0, 8, 12, "B-LOC", 0.5),
        (0, 13, 15, "I-PER", 0.5),
    ]
    assert [e.text for e in _merge_entities(bioes, (text, None))] == ["ann", "lee", "went", "to"]


def test_entities_read_bilou_and_plain_types_with_hyphens():
    text = "new york city hall in the museum of modern art"
    spans = [(0, 3), (4, 8), (9, 13), (14, 18), (19, 21), (22, 25), (26, 32), (33, 35), (36, 42), (43, 46)]
    tags = ["B-LOC", "I-LOC", "L-LOC", "U-FAC", "O", "O", "WORK-OF-ART", "WORK-OF-ART", "WORK-OF-ART"]
    tags.append("WORK-OF-ART")
    words = [(0, a, b, tag, 1.0) for (a, b), tag in zip(spans, tags, strict=True)]
    ents = _merge_entities(words, (text, None))
    assert [(e.label, e.text) for e in ents] == [
        ("LOC", "new york city"),
        ("FAC", "hall"),
        ("WORK-OF-ART", "museum of modern art"),
    ]
    assert [entity_type(x) for x in ("B-WORK-OF-ART", "WORK-OF-ART", "U-FAC", "L-LOC", "X-Y")] == [
        "WORK-OF-ART",
        "WORK-OF-ART",
        "FAC",
        "LOC",
        "X-Y",
    ]


@pytest.mark.parametrize("arch", FAMILIES)
def test_a_word_is_what_lies_between_spaces_as_the_fine_tuning_lab_trains_it(task_dirs, arch, monkeypatch):
    """The lab labels the first piece of each space-separated word; the entities shown must group pieces the
    same way, however the tokenizer pre-splits "u.s." or "can't". A piece of punctuation the tagger itself
    labels O does not widen its word ("norway." was a PLACE with its full stop), nor open it ("(tom)" was no
    entity though "tom" was tagged one); inside a word it stays."""
    m = bert_core.load_pretrained(task_dirs[arch, "tag"])
    text = "we met in the u.s. and can't stay (in norway)."

    def tagged(punctuation: str):
        def tag(t, p=None):
            pieces = m.encode(t, p)
            spans = [t[a:b].strip() for a, b in pieces.offsets.tolist()]
            return [
                (tok, punctuation if s and not s.strip(".,()'") else "B-LOC", 0.5)
                for tok, s in zip(pieces.tokens, spans, strict=True)
            ]

        return tag

    monkeypatch.setattr(m, "tag", tagged("B-LOC"))  # punctuation in the entity: the words as they are
    assert [e.text for e in m.entities(text)] == text.split()
    monkeypatch.setattr(m, "tag", tagged("O"))  # the tagger leaves punctuation out
    found = m.entities(text)
    # ... nor opens one: "(in" is the word "in", labelled by its own piece, not by the "(" labelled O
    assert [e.text for e in found] == [
        "we",
        "met",
        "in",
        "the",
        "u.s",
        "and",
        "can't",
        "stay",
        "in",
        "norway",
    ]
    assert all(text[e.start : e.end] == e.text for e in found)


@pytest.mark.parametrize("arch", ["bert", "roberta"])
def test_integrated_gradients_add_up(task_dirs, arch):
    m = bert_core.load_pretrained(task_dirs[arch, "classify"])
    r = m.attribute("we deposited cash at the bank", steps=50)
    assert r.tokens == m.analyze("we deposited cash at the bank").tokens and r.scores.shape == (len(r),)
    change = r.score - r.baseline_score
    assert r.completeness_gap < 0.05 * abs(change)  # the bound at 50 steps
    logits = m._task_logits("classify", [r.encoding])[0].tolist()
    assert abs(r.score - logits[SENTIMENT.index(r.target.split()[-1])]) < 1e-4  # the logit explained
    # special tokens are the baseline's too: nothing to attribute to them
    assert np.allclose(r.scores[r.special_tokens_mask], 0.0)
    gxi = m.attribute("we deposited cash at the bank", method="gradient_x_input")
    assert gxi.method == "gradient_x_input" and np.isfinite(gxi.scores).all()
    # no baseline, so no gap to report (one against the pad baseline read as this method's error)
    assert gxi.baseline_score is None and gxi.completeness_gap is None
    with pytest.raises(InputError):
        m.attribute("the bank", method="shap")


def test_attribution_targets_for_tagger_qa_and_mlm(task_dirs, tiny_model):
    tagger = bert_core.load_pretrained(task_dirs["bert", "tag"])
    r = tagger.attribute("we sat by the bank", target=(2, "B-LOC"), steps=20)
    assert (
        "B-LOC at token 2" in r.target and r.completeness_gap < 0.05 * abs(r.score - r.baseline_score) + 1e-4
    )
    qa = bert_core.load_pretrained(task_dirs["bert", "qa"])
    r = qa.attribute("where was the cash?", "we deposited the cash at the bank.", target="end", steps=20)
    assert r.target.startswith("answer end")
    r = tiny_model.attribute("the [MASK] sat on the bank", steps=20)
    assert "at token 2" in r.target and np.isfinite(r.scores).all()
    with pytest.raises(InputError, match="not one of this tagger's labels"):
        tagger.attribute("we sat by the bank", target=(2, "[SEP]"), steps=2)  # a piece, not a label
    # By default the first piece of a word: a typed [SEP] is none, though the tagger labels it.
    r = tagger.attribute("[SEP] we sat", steps=2)
    assert r.encoding.tokens[2] == "we" and "at token 2" in r.target
    with pytest.raises(InputError, match="not a piece"):
        tiny_model.attribute("the [MASK] sat", target=(2, "zzzqqq"), steps=2)


@pytest.mark.parametrize("arch", FAMILIES)
def test_answer_gives_top_k_distinct_spans_and_checks_its_length_limit(task_dirs, arch):
    m = bert_core.load_pretrained(task_dirs[arch, "qa"])
    question, context = "where was the cash?", "we deposited the cash at the bank by the river."
    answers = m.answer(question, context, top_k=8)
    assert len(answers) == 8 and len({(a, b) for _, a, b, _, _ in answers}) == 8
    assert [a[3] for a in answers] == sorted((a[3] for a in answers), reverse=True)  # by score
    assert answers[0] == m.answer(question, context)[0]
    for bad in (0, -3, 1.5, True):
        with pytest.raises(InputError, match="max_answer_tokens"):
            m.answer(question, context, max_answer_tokens=bad)


def test_question_answering_reads_a_typed_mask_as_every_call_does(task_dirs):
    """encode reads a typed [MASK] as RoBERTa's <mask> for every call; answer's windows read it as six pieces."""
    m = bert_core.load_pretrained(task_dirs["roberta", "qa"])
    question, typed = "where was the [MASK]?", "we put the [MASK] in the bank by the river."
    own = typed.replace("[MASK]", "<mask>")
    spans = [a[1:4] for a in m.answer(question, typed, top_k=3)]  # (start, end, score): the text is as typed
    assert spans == [a[1:4] for a in m.answer(question.replace("[MASK]", "<mask>"), own, top_k=3)]
    start = m.attribute(question, typed, target="start", steps=2)
    assert start.encoding.tokens == m.encode(question, typed).tokens  # one token sequence, as analyze's


def test_an_answer_beyond_the_first_window_is_explained_in_the_window_it_scored_in(task_dirs):
    m = bert_core.load_pretrained(task_dirs["bert", "qa"])
    question = "where was the cash?"
    first_window = m._qa_windows(question, "x " * 500, stride=0)[0]
    reach = len(
        " ".join(["the river ran by the bank"] * 10)
    )  # the first window's 62 positions hold ~10 repeats
    assert len(first_window) == m.tokenizer.max_length
    # Random weights put the best span anywhere: among a few passages, one whose best lies past the first window.
    for repeats in range(30, 60, 3):
        context = (
            " ".join(["the river ran by the bank"] * repeats) + " and we deposited the cash at the bank."
        )
        if m.answer(question, context)[0][1] > reach:
            break
    else:
        pytest.fail("no passage put the best answer past the first window")
    text, start_char, end_char, score, _ = m.answer(question, context)[0]
    start = m.attribute(question, context, target="start", steps=2)
    end = m.attribute(question, context, target="end", steps=2)
    assert start.encoding.tokens == end.encoding.tokens != m.encode(question, context).tokens
    assert "window" in start.target and "of the passage" in start.target
    s_pos, e_pos = (int(a.target.split("token ")[1].split(" ")[0]) for a in (start, end))
    assert start.encoding.offsets[s_pos][0] == start_char and end.encoding.offsets[e_pos][1] == end_char
    # the logits explained are the two that made the answer's score, in the window that scored it
    assert start.score + end.score == pytest.approx(score, abs=1e-5)
    logits = m._task_logits("qa", [start.encoding])[0]
    assert float(logits[s_pos, 0]) == pytest.approx(start.score, abs=1e-5)


def test_a_words_opening_bracket_or_quote_does_not_decide_its_entity():
    """A word takes its first piece's label, and "(Tom)"'s first piece is "(", which the tagger labels O:
    the name was lost although "tom" itself was tagged B-PERSON (the bundled @demo-roles head)."""
    from pathlib import Path

    m = bert_core.load_pretrained(Path(__file__).resolve().parents[2] / "assets" / "demo-tasks" / "roles")
    plain = [(e.label, e.text) for e in m.entities("Anna met Tom in the park.")]
    assert ("PERSON", "Tom") in plain
    for text in ("Anna met (Tom) in the park.", "Anna met “Tom” in the park.", 'Anna met "Tom" in the park.'):
        tags = dict((t, label) for t, label, _ in m.tag(text))
        assert tags["tom"] == "B-PERSON"
        found = [(e.label, e.text, text[e.start : e.end]) for e in m.entities(text)]
        assert ("PERSON", "Tom", "Tom") in found, (text, found)


def test_a_typed_separator_is_no_part_of_an_entity():
    """The bundled @demo-roles head tags a typed [SEP] after "at 9:30." I-TIME, which made the TIME entity
    "at 9:30. [SEP]"; tag() still says what the tagger labelled it."""
    from pathlib import Path

    m = bert_core.load_pretrained(Path(__file__).resolve().parents[2] / "assets" / "demo-tasks" / "roles")
    text = "Anna walked to the bank at 9:30. [SEP] Tom sat."
    assert [label for t, label, _ in m.tag(text)][11] == "I-TIME"  # the typed one, not the last [SEP]
    found = [(e.label, e.text) for e in m.entities(text)]
    assert ("TIME", "at 9:30") in found and not [t for _, t in found if "[SEP]" in t]


def test_attribution_targets_of_the_wrong_shape_are_named(task_dirs, tiny_model):
    tagger = bert_core.load_pretrained(task_dirs["bert", "tag"])
    classifier = bert_core.load_pretrained(task_dirs["bert", "classify"])
    for model, target in ((tiny_model, 3), (tagger, 3), (tagger, "B-PER"), (tagger, (1, 2, 3))):
        with pytest.raises(InputError, match="pair"):
            model.attribute("the [MASK] sat on the bank", target=target, steps=2)
    with pytest.raises(InputError, match="NEG, NEU, POS"):  # a label it lacks: the ones it has are named
        classifier.attribute("the bank", target="MAYBE", steps=2)
    assert classifier.attribute("the bank", target="POS", steps=2).target.endswith("POS")


@pytest.mark.parametrize("typed", ["[MASK]", "<mask>"])
def test_an_mlm_explanation_reads_either_mask_spelling_in_every_family(tmp_path, typed):
    from tests.variants import make_variant

    roberta = bert_core.load_pretrained(make_variant(tmp_path / "roberta", "roberta", "mlm"))
    r = roberta.attribute(f"the {typed} river", steps=2)
    assert r.text == f"the {typed} river"  # the text as typed
    assert f"at token {r.tokens.index('<mask>')}" in r.target  # its own mask, explained
    # A word typed as the target names the piece meant: RoBERTa's "the" starts a word only as "Ġthe".
    with pytest.raises(InputError, match="the piece 'Ġthe' is"):
        roberta.attribute(f"the {typed} river", target=(2, "the"), steps=2)


def test_choices_may_come_from_a_generator(task_dirs):
    m = bert_core.load_pretrained(task_dirs["bert", "choice"])
    choices = ["to deposit cash", "to fish in the river"]
    assert dict(m.choose("we went to the bank", (c for c in choices))) == dict(
        m.choose("we went to the bank", choices)
    )
    with pytest.raises(InputError, match="choices must be a list"):
        m.choose("we went to the bank", 3)


def test_task_calls_refuse_what_is_no_text_and_take_numpy_whole_numbers(task_dirs, tmp_path):
    """A None passage failed at an empty list's [0] (IndexError); a None choice scored the prompt alone; a
    zero-width passage was "text_pair is empty"; np.int64 limits were refused where ints passed; a model with
    no head to explain raised InputError where every other missing head is a MissingHeadError."""
    qa = bert_core.load_pretrained(task_dirs["bert", "qa"])
    with pytest.raises(InputError, match="^the passage \\(context\\) must be a string, got NoneType"):
        qa.answer("who sat on the bank?", None)
    with pytest.raises(InputError, match="^the question must be a string, got int"):
        qa.answer(5, "tom sat")
    with pytest.raises(InputError, match="^the passage is empty once"):
        qa.answer("who?", "\u200b")
    given = qa.answer(
        "who sat?", "the cat sat on the bank", max_answer_tokens=np.int64(3), stride=np.int64(8)
    )
    assert given == qa.answer("who sat?", "the cat sat on the bank", max_answer_tokens=3, stride=8)
    assert qa.attribute("who sat?", "the cat sat", steps=np.int64(4)).tokens
    choice = bert_core.load_pretrained(task_dirs["bert", "choice"])
    with pytest.raises(InputError, match="^choices\\[0\\] must be a string, got NoneType"):
        choice.choose("the cat sat", [None, "on the bank"])
    from tests.conftest import make_checkpoint

    bare = bert_core.load_pretrained(make_checkpoint(tmp_path / "bare", "model"))
    with pytest.raises(MissingHeadError, match="no head to explain"):
        bare.attribute("the cat")
