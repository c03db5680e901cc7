"""The fine-tuning lab: data files and their errors, the project's generated data, a few steps of training on
tiny separable tasks, and checkpoints that BERTScope and transformers both load with the same logits."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest
import torch

import bert_core
from bert_core import InputError
from bert_core.finetuning import corpus_tasks, metrics
from bert_core.finetuning.cli import main as finetune_cli
from bert_core.finetuning.data import Example, read_examples, write_examples
from bert_core.finetuning.train import FinetuneConfig, build_model, evaluate, finetune, make_features
from bert_core.pretraining.corpus import PERSON_NAMES, SHARED_SLOTS, TOPICS
from tests.conftest import make_checkpoint
from tests.variants import FAMILY_PREFIX, TASK_CLASSES, make_task_checkpoint, make_variant

transformers = pytest.importorskip("transformers")

RIVER = ["the river water ran by the bank", "we sat on the bank of the river", "the water by the bank"]
MONEY = ["we deposited cash at the bank", "my money was in the bank", "she deposited the cash"]
# A high rate and small batches: a few dozen steps move a tiny random encoder's head far enough to see.
FAST = dict(epochs=6, batch_size=4, learning_rate=5e-3, warmup=0, eval_fraction=0.25, seed=0)


def _classify_examples(n: int = 48) -> list[Example]:
    texts = [(t, "river") for t in RIVER] + [(t, "money") for t in MONEY]
    return [Example(i + 2, *[texts[i % 6][0]], label=texts[i % 6][1]) for i in range(n)]


def _tag_examples(n: int = 48) -> list[Example]:
    kinds = {"river": "B-LOC", "water": "B-LOC", "cash": "B-OBJ", "money": "B-OBJ", "bank": "B-LOC"}
    rows = []
    for i in range(n):
        words = (RIVER + MONEY)[i % 6].split()
        rows.append(
            Example(i + 2, " ".join(words), words=tuple(words), tags=tuple(kinds.get(w, "O") for w in words))
        )
    return rows


def _qa_examples(n: int = 48) -> list[Example]:
    rows = []
    for i in range(n):
        place = ["the bank", "the river", "the water"][i % 3]
        context = f"we sat by {place} and it ran by."
        rows.append(Example(i + 2, "where did we sit?", context, answer_start=10, answer_text=place))
    return rows


def _pair_examples(n: int = 48) -> list[Example]:
    rows = []
    for i in range(n):
        a, b = RIVER[i % 3], (RIVER if i % 2 else MONEY)[(i // 2) % 3]
        rows.append(Example(i + 2, a, b, label="same" if i % 2 else "different"))
    return rows


EXAMPLES = {"classify": _classify_examples, "tag": _tag_examples, "qa": _qa_examples, "pair": _pair_examples}
HEAD = {"classify": "classify", "pair": "classify", "tag": "tag", "qa": "qa"}


# -- training ---------------------------------------------------------------------------------------------


def test_a_warm_up_longer_than_the_run_is_refused(tiny_checkpoint):
    """A rate that never reached its peak nor decayed, said nowhere: 48 examples, 36 to train on (a quarter held
    out), 6 epochs of 9 steps."""
    config = FinetuneConfig(task="classify", **{**FAST, "warmup": 1000})
    with pytest.raises(InputError, match=r"--warmup, 1000 steps\) is longer than the run \(54 steps\)"):
        finetune(_classify_examples(), str(tiny_checkpoint), config)


def test_a_qa_examples_loss_does_not_depend_on_the_padding_its_batch_adds(tiny_checkpoint):
    """Padding is never an answer: it stays out of the start/end softmax, so an example scores the same alone
    and beside a longer one (with padding's logits in, the loss moved with the batch's longest passage)."""
    from bert_core.finetuning.train import _batch, _logits, _loss

    source = bert_core.load_pretrained(tiny_checkpoint)
    config = FinetuneConfig(task="qa", **FAST)
    model, labels, _ = build_model(source, config, ())
    short = _qa_examples(1)[0]
    long = Example(
        3,
        "where did we sit?",
        "we sat by the bank and it ran by " * 6,
        answer_start=10,
        answer_text="the bank",
    )
    features, _ = make_features(model, [short, long], "qa", labels)
    model.network.eval()
    with torch.no_grad():
        alone = _batch(model, features[:1])
        together = _batch(model, features)
        assert together["mask"][0].sum() < together["mask"].shape[1]  # the short one is padded here
        one = _loss(_logits(model, alone, 0.0), alone)
        logits = _logits(model, together, 0.0)
        first = _loss(logits[:1], {k: v[:1] for k, v in together.items()})
    assert float(first) == pytest.approx(float(one), abs=1e-5)


@pytest.mark.parametrize("task", ["classify", "tag", "qa", "pair"])
def test_a_few_steps_lower_the_loss_on_a_separable_task(tiny_checkpoint, task):
    result = finetune(EXAMPLES[task](), tiny_checkpoint, FinetuneConfig(task, **FAST))
    before, after = result.history[0], result.history[-1]
    assert after["loss"] < 0.9 * before["loss"] and after["train_loss"] < result.steps[0].loss
    score = {"classify": "accuracy", "pair": "accuracy", "tag": "entity_f1", "qa": "exact_match"}[task]
    assert after[score] >= 0.9 > before[score]
    assert len(result.history) == 7 and result.eval_examples == 12 and result.train_examples == 36
    assert result.model.task == HEAD[task] and not result.model.network.training


def test_the_trained_classifier_predicts_and_runs_are_reproducible(tiny_checkpoint):
    config = FinetuneConfig("classify", **FAST)
    state = torch.get_rng_state()
    result = finetune(_classify_examples(), tiny_checkpoint, config)
    assert torch.equal(torch.get_rng_state(), state)  # the caller's generator is left alone
    assert result.scores["macro_f1"] == 1.0
    assert result.model.classify("the river water ran by the bank")[0][0] == "river"
    again = finetune(_classify_examples(), tiny_checkpoint, config)
    assert [s.loss for s in again.steps] == pytest.approx([s.loss for s in result.steps], abs=1e-6)


def test_tag_labels_sit_on_each_words_first_piece(tiny_checkpoint):
    source = bert_core.load_pretrained(tiny_checkpoint, pack_weights=False)
    model, labels, new = build_model(source, FinetuneConfig("tag"), ("O", "B-LOC", "I-LOC"))
    words = ("unwanted", "cash", "deposited", "at", "the", "river", "bank")
    tags = ("O", "O", "O", "O", "O", "B-LOC", "I-LOC")
    [feature], _ = make_features(model, [Example(1, " ".join(words), words=words, tags=tags)], "tag", labels)
    tokens, targets = feature.encoding.tokens, feature.target
    assert tokens[:4] == ["[CLS]", "un", "##want", "##ed"]
    labelled = [(t, labels[i]) for t, i in zip(tokens, targets.tolist(), strict=True) if i >= 0]
    assert labelled == [("un", "O"), ("cash", "O"), ("deposit", "O"), ("at", "O"), ("the", "O")] + [
        ("river", "B-LOC"),
        ("bank", "I-LOC"),
    ]
    assert new == ("classifier.bias", "classifier.weight")


def test_a_long_context_is_cut_to_the_window_holding_the_answer(tiny_checkpoint):
    source = bert_core.load_pretrained(tiny_checkpoint, pack_weights=False)
    model, _, _ = build_model(source, FinetuneConfig("qa"), ())
    context = "the river ran by the bank. " * 12 + "we deposited my cash at the bank."
    start = context.index("my cash")
    example = Example(1, "what was deposited?", context, answer_start=start, answer_text="my cash")
    assert len(model.tokenizer.encode("what was deposited?", context, max_length=10**9)) > 64
    [feature], skipped = make_features(model, [example], "qa", ())
    enc, (first, last) = feature.encoding, feature.target
    assert len(enc) <= 64 and skipped == 0
    assert context[enc.offsets[first][0] : enc.offsets[last][1]] == "my cash"


def test_an_answer_that_straddles_every_windows_edge_trains_in_a_window_around_it(tiny_checkpoint):
    """answer()'s windows overlap by half a window, so a longer answer can cross an edge of each: it was
    refused as out of reach ("no window of 18 pieces holds it"), though one window of that size holds it."""
    source = bert_core.load_pretrained(tiny_checkpoint, pack_weights=False)
    model, _, _ = build_model(source, FinetuneConfig("qa"), ())
    model.tokenizer.max_length = 18  # as finetune() sets --max-length
    question, words = (
        "who sat?",
        "the bank by the river and the cat sat on the mat by the bank of the river".split(),
    )
    straddling = []
    for first in range(len(words) - 7):
        for last in range(first + 5, first + 8):
            answer = " ".join(words[first : last + 1])
            start = len(" ".join(words[:first])) + (first > 0)
            windows = model._qa_windows(question, " ".join(words), 9)
            if not any(w.offsets[w.sequence_ids.index(1)][0] <= start and start + len(answer) <= w.offsets[-2][1]
                       for w in windows):  # fmt: skip
                straddling.append(
                    Example(1, question, " ".join(words), answer_start=start, answer_text=answer)
                )
    assert straddling  # the case exists at this size
    features, skipped = make_features(model, straddling, "qa", ())
    assert skipped == 0 and len(features) == len(straddling)
    for example, feature in zip(straddling, features, strict=True):
        enc, (first, last) = feature.encoding, feature.target
        assert len(enc) <= 18
        assert example.text_pair[enc.offsets[first][0] : enc.offsets[last][1]] == example.answer_text


def test_qa_training_windows_and_its_scores_read_a_long_passage_as_answer_does(tmp_path):
    """Training placed its windows, and scored each epoch, with neighbours sharing half a window, where
    answer() (the Task page) shares at most 128 pieces: from ~258 pieces of room the two layouts part, and a
    --max-length 512 run trained and was scored on windows the app never reads."""
    from bert_core.tasks import QA_STRIDE

    source = bert_core.load_pretrained(
        make_checkpoint(tmp_path / "long", "mlm", max_position_embeddings=512), pack_weights=False
    )
    model, _, _ = build_model(source, FinetuneConfig("qa", max_length=400), ())
    model.tokenizer.max_length = 400  # as finetune() sets --max-length
    question = "who sat?"
    words = ("the cat sat on the mat by the bank of the river and " * 60).split()
    start = len(" ".join(words[:500])) + 1  # past the first window, which both layouts share
    example = Example(1, question, " ".join(words), answer_start=start, answer_text=" ".join(words[500:502]))
    [feature], skipped = make_features(model, [example], "qa", ())
    answer_windows = {
        tuple(w.offsets[:, 0]) for w in model._qa_windows(question, example.text_pair, QA_STRIDE)
    }
    assert skipped == 0 and tuple(feature.encoding.offsets[:, 0]) in answer_windows
    strided = []
    model.answer = lambda *args, **kwargs: (strided.append(kwargs.get("stride", QA_STRIDE)), [("", 0.0)])[1]
    evaluate(model, [feature], "qa", ())
    assert strided == [QA_STRIDE]


# -- checkpoints both libraries load ------------------------------------------------------------------------

CHECKPOINTS = [("bert", "classify"), ("bert", "tag"), ("bert", "qa"), ("bert", "pair")]
CHECKPOINTS += [("roberta", "classify"), ("distilbert", "qa"), ("albert", "tag"), ("electra", "pair")]


@pytest.mark.parametrize("arch, task", CHECKPOINTS)
def test_the_saved_checkpoint_loads_in_both_libraries_with_equal_logits(
    tmp_path, tiny_checkpoint, arch, task
):
    source = tiny_checkpoint if arch == "bert" else make_variant(tmp_path / "src", arch, "mlm")
    config = FinetuneConfig(task, **{**FAST, "epochs": 1})
    result = finetune(EXAMPLES[task](16), source, config, out_dir=tmp_path / "out", info={"note": "test"})
    head = HEAD[task]
    ours = bert_core.load_pretrained(tmp_path / "out")
    assert ours.info.task == head and not ours.ignored_weights
    assert ours.info.labels == (result.labels if head != "qa" else ())
    saved = json.loads((tmp_path / "out" / "config.json").read_text())
    assert saved["architectures"] == [FAMILY_PREFIX[arch] + TASK_CLASSES[head]]
    auto = {"classify": "AutoModelForSequenceClassification", "tag": "AutoModelForTokenClassification"}
    hf = getattr(transformers, auto.get(head, "AutoModelForQuestionAnswering")).from_pretrained(
        tmp_path / "out", attn_implementation="eager"
    )
    hf.eval()
    assert type(hf).__name__ == FAMILY_PREFIX[arch] + TASK_CLASSES[head]
    if head != "qa":
        assert [hf.config.id2label[i] for i in range(len(result.labels))] == list(result.labels)
    text, pair = (
        ("where did we sit?", "we sat by the bank.")
        if task in ("qa", "pair")
        else ("we sat by the bank", None)
    )
    enc = ours.encode(text, pair)
    inputs = {"input_ids": torch.from_numpy(np.array(enc.input_ids))[None]}
    if arch != "distilbert":
        inputs["token_type_ids"] = torch.from_numpy(np.array(enc.token_type_ids))[None]
    with torch.inference_mode():
        out = hf(**inputs)
    theirs = torch.stack([out.start_logits, out.end_logits], -1) if head == "qa" else out.logits
    np.testing.assert_allclose(ours._task_logits(head, [enc]).numpy(), theirs.numpy(), atol=1e-5, rtol=0)
    info = json.loads((tmp_path / "out" / "finetuning.json").read_text())
    assert info["final"] and info["task"] == task and info["note"] == "test" and len(info["history"]) == 2


def test_float16_saves_half_the_bytes_and_still_loads(tmp_path, tiny_checkpoint):
    config = FinetuneConfig("classify", **{**FAST, "epochs": 1, "save_dtype": "float16"})
    finetune(_classify_examples(16), tiny_checkpoint, config, out_dir=tmp_path / "half")
    m = bert_core.load_pretrained(tmp_path / "half")
    assert m.info.task == "classify" and m.network.classifier.weight.dtype == torch.float32


# -- bad input ----------------------------------------------------------------------------------------------


def test_labels_the_models_head_does_not_have_are_refused(tmp_path, tiny_checkpoint):
    source = make_task_checkpoint(tmp_path / "sst", "bert", "classify", ["NEG", "POS"])
    data = tmp_path / "data.csv"
    data.write_text("text,label\nthe river,river\nthe cash,money\nthe bank,POS\n", encoding="utf-8")
    examples = read_examples(data, "classify")
    # named by the first line with one, as README says of every fault of the data
    with pytest.raises(
        InputError, match="^line 2: the data has labels the model's classify head does not know: money, river"
    ):
        finetune(examples, source, FinetuneConfig("classify"))
    tagger = make_task_checkpoint(tmp_path / "ner", "bert", "tag", ["O", "B-LOC", "I-LOC"])
    tagged = [Example(4, "the bank", words=("the", "bank"), tags=("O", "B-LOC")),
              Example(5, "the cash", words=("the", "cash"), tags=("O", "B-MONEY"))]  # fmt: skip
    with pytest.raises(InputError, match="^line 5: .* does not know: B-MONEY"):
        finetune(tagged, tagger, FinetuneConfig("tag"))
    result = finetune(examples, source, FinetuneConfig("classify", epochs=1, eval_fraction=0, new_head=True))
    assert result.labels == ("POS", "money", "river") and result.eval_examples == 0
    # labels the head knows keep its order and its weights
    known = [Example(1, "the bank", label="POS"), Example(2, "the river", label="NEG")]
    kept = finetune(known, source, FinetuneConfig("classify", epochs=1, eval_fraction=0))
    assert kept.labels == ("NEG", "POS") and kept.new_weights == ()
    code = finetune_cli(
        ["--task", "classify", "--data", str(data), "--from", str(source), "--out", str(tmp_path / "o")]
    )
    assert code == 2


@pytest.mark.parametrize(
    "task, content, message",
    [
        ("classify", "text\nthe bank\n", r"header row has no 'label' column; classify needs text, label"),
        # a spreadsheet's export in many locales: one column, read with a raw tab in the message
        (
            "classify",
            "text\tlabel\nthe bank\triver\n",
            r"\(found 'text\\tlabel'\): its columns are tab-separated",
        ),
        (
            "classify",
            "text;label\nthe bank;river\n",
            r"its columns are semicolon-separated, and a \.csv here is comma",
        ),
        ("classify", "text,label\nthe bank,river\nthe cash\n", r"line 3: the row has no value for 'label'"),
        ("classify", "text,label\nthe bank,river,extra\n", r"line 2: 3 values for 2 columns"),
        # a quote left open runs the row on to the file's end, where the fault was named
        (
            "classify",
            'text,label\nthe bank,river\n"the cash,money\nthe bank,river\n',
            r"line 3 \(a row running on to line 4: is a quote left open\?\): the row has no value for 'label'",
        ),
        # blank lines, which the reader skips, are no part of the row after them
        (
            "classify",
            "text,label\nthe bank,river\n\n\nthe cash\n",
            r"line 5: the row has no value for 'label'",
        ),
        # a value holding U+2028 (a line break to str.splitlines, not to CSV) is no row cut in two
        (
            "classify",
            "text,label\nthe\u2028bank,river\nthe cash\n",
            r"line 3: the row has no value for 'label'",
        ),
        # a row over several lines is named by its first, whatever its fault
        ("classify", 'text,label\n\n"the bank\nof the river",\n', r"line 3: 'label' is empty"),
        ("classify", "text,label\n  ,river\n", r"line 2: 'text' is empty"),
        ("tag", "tokens,tags\nthe river bank,O B-LOC\n", r"line 2: 3 tokens but 2 tags"),
        ("pair", "text,label\na,b\n", r"no 'text_pair' column"),
        (
            "qa",
            "question,context,answer_start,answer_text\n ,the bank,4,bank\n",
            r"line 2: the question is empty",
        ),
        (
            "qa",
            "question,context,answer_start,answer_text\nwhere?,the bank,0,bank\n",
            "is not at character 0",
        ),
        ("qa", "question,context,answer_start,answer_text\nwhere?,the bank,x,bank\n", "answer_start must be"),
    ],
)
def test_malformed_csv_rows_name_their_line(tmp_path, task, content, message):
    path = tmp_path / "data.csv"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError, match=message):
        read_examples(path, task)


def test_a_classifier_told_of_the_text_pair_column_it_ignores(tmp_path, caplog):
    """--task classify on pair data trained on `text` alone, without a word."""
    path = tmp_path / "data.csv"
    path.write_text("text,text_pair,label\nthe cat,sat down,yes\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="bert_core.finetuning.data"):
        assert [e.text_pair for e in read_examples(path, "classify")] == [None]
    assert "text_pair column, which --task classify ignores" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="bert_core.finetuning.data"):
        read_examples(path, "pair")
    assert "ignores" not in caplog.text


def test_malformed_json_lines_name_their_line(tmp_path):
    path = tmp_path / "data.jsonl"
    path.write_text('{"tokens": ["a", "b"], "tags": ["O", "O"]}\n\n{"tokens": "a b"\n', encoding="utf-8")
    with pytest.raises(InputError, match="line 3: not valid JSON"):
        read_examples(path, "tag")
    path.write_text('{"tokens": ["a", "b"], "tags": ["O"]}\n', encoding="utf-8")
    with pytest.raises(InputError, match="line 1: 2 tokens but 1 tags"):
        read_examples(path, "tag")
    # a file as one JSON array, on one line or many: "got list" did not say what the format is
    for array in ('[{"text": "a", "label": "x"}]\n', '[\n  {"text": "a", "label": "x"}\n]\n'):
        path.write_text(array, encoding="utf-8")
        with pytest.raises(InputError, match=r"line 1: .*JSON Lines: one object per line, not an array"):
            read_examples(path, "classify")
    with pytest.raises(InputError, match=r"\.csv .* or \.jsonl"):
        read_examples(tmp_path / "data.txt", "tag")
    path.write_text("", encoding="utf-8")
    with pytest.raises(InputError, match="holds no examples"):
        read_examples(path, "tag")
    # one item holding two words would be one word in training and two in the app's entities
    path.write_text('{"tokens": ["New York", "is", "big"], "tags": ["B-LOC", "O", "O"]}\n', encoding="utf-8")
    with pytest.raises(InputError, match="line 1: 'tokens' item 'New York' holds a space"):
        read_examples(path, "tag")


def test_an_answer_beyond_the_models_reach_is_an_error_or_skipped(tmp_path, tiny_checkpoint):
    context = "we sat by " + "the river and " * 30 + "the bank."
    answer = context[10:]  # longer than any window the model reads
    examples = [Example(7, "where?", context, answer_start=10, answer_text=answer)] + _qa_examples(8)
    with pytest.raises(InputError, match="line 7: the answer .* lies beyond what the model reads"):
        finetune(examples, tiny_checkpoint, FinetuneConfig("qa", epochs=1))
    result = finetune(examples, tiny_checkpoint, FinetuneConfig("qa", epochs=1, skip_unreachable=True))
    assert result.skipped == 1 and result.train_examples + result.eval_examples == 8
    wordy = Example(9, "where " * 70 + "?", "the bank", answer_start=4, answer_text="bank")
    with pytest.raises(InputError, match="line 9: the question takes .* shorten it"):
        finetune([wordy, *_qa_examples(8)], tiny_checkpoint, FinetuneConfig("qa", epochs=1))
    # a question that leaves no room for the passage is out of reach too: skipped when asked
    result = finetune(
        [wordy, *_qa_examples(8)], tiny_checkpoint, FinetuneConfig("qa", epochs=1, skip_unreachable=True)
    )
    assert result.skipped == 1 and result.train_examples + result.eval_examples == 8
    with pytest.raises(InputError, match="max_length 100 is more than the model's 64 positions"):
        finetune(examples, tiny_checkpoint, FinetuneConfig("qa", max_length=100))


def test_an_epoch_whose_updates_break_the_model_is_not_saved(tmp_path, tiny_checkpoint, capsys):
    """--lr 1e30: epoch 1's held-out loss was NaN, its accuracy an argmax over NaN scores (1.000), and the model
    was written; only epoch 2's first loss stopped the run, and the message left the folder unmentioned."""
    data = tmp_path / "data.csv"
    rows = [f"the river bank {n},river" if n % 2 else f"the money bank {n},money" for n in range(20)]
    data.write_text("text,label\n" + "\n".join(rows) + "\n", encoding="utf-8")
    out = tmp_path / "o"
    args = ["--task", "classify", "--data", str(data), "--from", str(tiny_checkpoint), "--out", str(out)]
    assert finetune_cli([*args, "--lr", "1e30", "--epochs", "2", "--batch-size", "32", "--threads", "1"]) == 1
    err = capsys.readouterr().err
    assert (
        "after epoch 1, the held-out loss is nan: the updates broke the model; epoch 1 was not saved" in err
    ), err
    assert err.rstrip().endswith(f"no epoch finished, so nothing was saved (no {out} was made)")
    assert not (out / "model.safetensors").exists()


@pytest.mark.parametrize("lr", [float("nan"), float("inf"), 0.0])
def test_a_learning_rate_must_be_a_positive_number(lr):
    from bert_core.finetuning.train import FinetuneConfig

    with pytest.raises(ValueError, match="learning_rate must be a positive number"):
        FinetuneConfig("classify", learning_rate=lr)


def test_the_cli_reports_bad_input_with_exit_status_2(tmp_path, tiny_checkpoint, capsys):
    data = tmp_path / "qa.jsonl"
    data.write_text(
        json.dumps({"question": "", "context": "the bank", "answer_start": 4, "answer_text": "bank"})
    )
    args = ["--task", "qa", "--data", str(data), "--from", str(tiny_checkpoint), "--out", str(tmp_path / "o")]
    assert finetune_cli(args) == 2
    assert "qa.jsonl, line 1: the question is empty" in capsys.readouterr().err
    assert finetune_cli([*args[:5], str(tmp_path / "missing"), *args[6:]]) == 2
    # an escaped half of a surrogate pair in a row: a traceback from the tokenizers library, now the row's line
    data.write_text(
        json.dumps(
            {"question": "where?", "context": "the bank \ud800", "answer_start": 4, "answer_text": "bank"}
        )
    )
    capsys.readouterr()
    assert finetune_cli(args) == 2
    said = capsys.readouterr().err
    assert "qa.jsonl, line 1: the context holds half of a UTF-16 surrogate pair" in said, said
    assert finetune_cli([*args, "--skip-unreachable"]) == 2  # not skipped as "out of reach" either
    assert "the context holds half of a UTF-16 surrogate pair" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
    with pytest.raises(SystemExit) as exit_info:
        finetune_cli([*args, "--eval-fraction", "1.5"])
    assert exit_info.value.code == 2


def test_the_cli_makes_data_and_fine_tunes_on_it(tmp_path, tiny_checkpoint, capsys):
    from app.cli import main as bertscope

    data = tmp_path / "senses.csv"
    assert (
        bertscope(["finetune", "make-data", "--task", "senses", "--out", str(data), "--examples", "52"]) == 0
    )
    out = tmp_path / "model"
    args = ["--task", "classify", "--data", str(data), "--from", str(tiny_checkpoint), "--out", str(out)]
    assert finetune_cli([*args, "--epochs", "1", "--batch-size", "16", "--threads", "1"]) == 0
    captured = capsys.readouterr()
    assert "accuracy" in captured.out and f"model written to {out}" in captured.out
    assert "epoch 1/1: train loss" in captured.err and "step 3/3" in captured.err
    assert len(bert_core.load_pretrained(out).info.labels) == 26
    assert "47 training examples; " in captured.out and "on 5 held-out examples" in captured.out
    # Over its own earlier model: said as what will be, since a bad file or limit still replaces nothing.
    assert finetune_cli([*args, "--max-length", "100000"]) == 2
    err = capsys.readouterr().err
    assert f"the earlier checkpoint in {out} will be replaced once an epoch is written" in err
    assert "replacing" not in err and bert_core.load_pretrained(out).info.labels
    from bert_core.checks import counted

    assert counted(1, "training example") == "1 training example"  # "1 training examples" read as a slip


def test_fine_tuning_says_when_examples_run_past_the_positions_the_model_was_pre_trained_on(
    tmp_path, tiny_checkpoint, caplog
):
    """The bundled demo model was pre-trained on 42 positions and reads 128: fine-tuning on longer examples met
    its untrained position rows without a word."""
    import shutil

    from app.cli import main as bertscope

    source = tmp_path / "short"
    shutil.copytree(tiny_checkpoint, source)
    (source / "pretraining.json").write_text(json.dumps({"longest_sequence": 8}))
    data = tmp_path / "senses.csv"
    assert (
        bertscope(["finetune", "make-data", "--task", "senses", "--out", str(data), "--examples", "26"]) == 0
    )
    args = ["--task", "classify", "--data", str(data), "--out", str(tmp_path / "m"), "--epochs", "1"]
    with caplog.at_level(logging.WARNING, logger="bert_core.finetuning.train"):
        assert finetune_cli([*args, "--from", str(source), "--threads", "1"]) == 0
    assert "longer than the 8 positions the model was pre-trained on" in caplog.text
    assert "--max-length 8" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="bert_core.finetuning.train"):
        assert finetune_cli([*args, "--from", str(tiny_checkpoint), "--threads", "1"]) == 0
    assert "pre-trained on" not in caplog.text  # no record: nothing to say


def test_an_interrupted_fine_tune_says_what_it_saved(tmp_path, tiny_checkpoint, capsys, monkeypatch):
    """Stopped in its first epoch it once said "the last finished epoch (if any) is in OUT" of a folder that
    was never made; a model is saved after each epoch."""
    from bert_core.finetuning import train

    data = tmp_path / "senses.csv"
    data.write_text("text,label\nthe bank by the river,river\nthe bank lent money,money\n")
    out = tmp_path / "model"
    args = ["--task", "classify", "--data", str(data), "--from", str(tiny_checkpoint), "--out", str(out)]
    epochs_saved = []

    def stopped(*_args, out_dir, **_kwargs):
        for epoch in epochs_saved:
            out_dir.mkdir(exist_ok=True)
            (out_dir / "finetuning.json").write_text(json.dumps({"epoch": epoch}))
        raise KeyboardInterrupt

    monkeypatch.setattr(train, "finetune", stopped)
    assert finetune_cli(args) == 130
    assert "no epoch finished, so nothing was saved (no " in capsys.readouterr().err and not out.exists()
    epochs_saved.append(1)
    assert finetune_cli([*args, "--epochs", "3"]) == 130
    assert f"epoch 1 of 3, the last finished, is saved in {out}" in capsys.readouterr().err
    epochs_saved.clear()  # a second run over that checkpoint, stopped before its first epoch ended
    assert finetune_cli([*args, "--epochs", "3"]) == 130
    assert f"no epoch finished, so {out} still holds the earlier checkpoint" in capsys.readouterr().err


def test_a_full_disk_while_the_weights_are_written_is_one_line_not_a_traceback(
    tmp_path, tiny_checkpoint, capsys, monkeypatch
):
    """safetensors reports a full disk as its own SafetensorError (no OSError): both labs ended in a traceback."""
    import safetensors.torch
    from safetensors import SafetensorError

    def full(*_args, **_kwargs):
        raise SafetensorError("Error while serializing: I/O error: No space left on device (os error 28)")

    monkeypatch.setattr(safetensors.torch, "save_file", full)
    data = tmp_path / "senses.csv"
    data.write_text("text,label\nthe bank by the river,river\nthe bank lent money,money\n")
    out = tmp_path / "model"
    args = ["--task", "classify", "--data", str(data), "--from", str(tiny_checkpoint), "--out", str(out)]
    assert finetune_cli([*args, "--epochs", "1", "--threads", "1", "--quiet"]) == 1
    err = capsys.readouterr().err
    assert (
        f"error: cannot write the checkpoint to {out} (a write failed: is the disk full? Error while" in err
    )
    # the epoch did finish: its checkpoint is what could not be written
    assert (
        "disk full? Error while serializing: I/O error: No space left on device (os error 28)); nothing was saved"
        in err
    )
    assert "no epoch finished" not in err and "Traceback" not in err


# -- the project's own data ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kind, suffix", [("senses", ".jsonl"), ("roles", ".csv"), ("qa", ".jsonl")])
def test_make_data_is_deterministic_and_reads_back(tmp_path, kind, suffix):
    a = corpus_tasks.make_data(kind, tmp_path / f"a{suffix}", 60, seed=3)
    b = corpus_tasks.make_data(kind, tmp_path / f"b{suffix}", 60, seed=3)
    c = corpus_tasks.make_data(kind, tmp_path / f"c{suffix}", 60, seed=4)
    assert a.read_bytes() == b.read_bytes() != c.read_bytes()
    assert len(read_examples(a, corpus_tasks.KINDS[kind])) == 60


def test_sense_examples_are_labelled_by_the_sense_their_topic_gives():
    rows = corpus_tasks.sense_examples(260, seed=1)
    assert {r["label"] for r in rows} == set(corpus_tasks.SENSE_LABELS) and len(
        corpus_tasks.SENSE_LABELS
    ) == 26
    assert all(sum(r["label"] == label for r in rows) == 10 for label in corpus_tasks.SENSE_LABELS)
    assert len({r["text"] for r in rows}) == len(rows)
    for r in rows:
        words = set(r["text"].lower().replace(".", " ").replace(",", " ").split())
        assert r["word"] in words or r["word"] + "s" in words
        assert r["label"] == f"{r['word']}-{r['sense']}"
    river = [r["text"] for r in rows if r["label"] == "bank-river"]
    money = [r["text"] for r in rows if r["label"] == "bank-money"]
    assert river and money and not set(river) & set(money)


def test_role_tags_mark_the_slots_the_grammar_filled():
    rows = corpus_tasks.role_examples(200, seed=2)
    found = {role: [] for role in corpus_tasks.ROLES}
    for row in rows:
        text = " ".join(row["tokens"])
        entities = metrics.entity_spans(
            row["tags"], Example(1, text, words=tuple(row["tokens"])).word_spans()
        )
        assert entities and all(t == "O" or t[:2] in ("B-", "I-") for t in row["tags"])
        for kind, start, end in entities:
            found[kind].append(text[start:end])
    fillers = {role: set() for role in corpus_tasks.ROLES}  # every filler of the slots of each role
    for topic in TOPICS:
        for slot, values in {**SHARED_SLOTS, **topic.slots}.items():
            if slot in corpus_tasks.ROLE_SLOTS:
                # as the roles data writes them: words and punctuation apart ("at 7 : 30")
                fillers[corpus_tasks.ROLE_SLOTS[slot]].update(
                    " ".join(corpus_tasks._WORD.findall(v.lower())) for v in values
                )
    assert all(found.values())
    assert set(found["PERSON"]) <= set(PERSON_NAMES)
    # and every name is tagged, the speaker after a quote and a name put where a pronoun would be included
    for row in corpus_tasks.role_examples(1000, seed=2):
        for word, tag in zip(row["tokens"], row["tags"], strict=True):
            assert word not in PERSON_NAMES or tag == "B-PERSON", row
    for role in ("PLACE", "TIME", "OBJECT"):
        assert {text.lower() for text in found[role]} <= fillers[role], role


def test_some_role_examples_open_with_their_time_phrase():
    """The corpus never opens a sentence with a time: without these the tagger missed "At 9:30, Tom ..."."""
    assert corpus_tasks.front_time(
        ["The", "wind", "blew", "at", "dawn", "."], ["O", "O", "O", "B-TIME", "I-TIME", "O"]
    ) == (["At", "dawn", ",", "the", "wind", "blew", "."], ["B-TIME", "I-TIME", "O", "O", "O", "O", "O"])
    assert corpus_tasks.front_time(["Tom", "ran", "."], ["B-PERSON", "O", "O"]) is None
    fronted = corpus_tasks.front_time(
        ["Tom", "ran", "at", "9", "and", "I", "sat", "."],
        ["B-PERSON", "O", "B-TIME", "I-TIME", "O", "O", "O", "O"],
    )
    assert fronted is not None and fronted[0][:4] == ["At", "9", ",", "Tom"]  # a name keeps its capital
    rows = corpus_tasks.role_examples(1000, seed=2)
    opening = [r for r in rows if r["tags"][0] == "B-TIME"]
    closing = [r for r in rows if "B-TIME" in r["tags"] and r["tags"][0] != "B-TIME"]
    assert len(opening) > 20 and len(closing) > 20  # both places, for the tagger to learn either
    for row in opening:
        comma = row["tags"].index("O")
        assert row["tokens"][comma] == "," and row["tokens"][0][0].isupper()


def test_qa_examples_are_right_by_construction():
    rows = corpus_tasks.qa_examples(90, seed=5)
    assert {k: sum(r["kind"] == k for r in rows) for k in ("who", "where", "when")} == dict.fromkeys(
        ("who", "where", "when"), 30
    )
    for r in rows:
        context, start, answer = r["context"], r["answer_start"], r["answer_text"]
        assert context[start : start + len(answer)] == answer and r["question"].endswith("?")
        if r["kind"] == "who":
            assert answer in PERSON_NAMES
            assert context[start:].split(".")[0] + "?" == answer + r["question"][3:]
        elif r["kind"] == "when":
            assert answer in SHARED_SLOTS["time"] and r["question"].startswith("When did ")
            assert answer not in r["question"]
        else:
            assert r["question"].startswith("Where did ") and answer.split()[-1] not in r["question"].split()


# -- metrics --------------------------------------------------------------------------------------------------


def test_metrics_match_their_reference_definitions():
    gold, guess = ["a", "a", "b", "c"], ["a", "b", "b", "b"]
    assert metrics.accuracy(gold, guess) == 0.5
    # F1 per label: a 2/3, b 1/2, c 0 -> macro (2/3 + 1/2 + 0) / 3, as scikit-learn's average="macro"
    assert metrics.macro_f1(gold, guess) == pytest.approx((2 / 3 + 1 / 2) / 3)
    spans = [(0, 3), (4, 7), (8, 12), (13, 15)]
    g = metrics.entity_spans(["B-PER", "I-PER", "O", "B-LOC"], spans)
    p = metrics.entity_spans(["B-PER", "O", "O", "B-LOC"], spans)
    assert g == {("PER", 0, 7), ("LOC", 13, 15)} and metrics.entity_f1([g], [p]) == 0.5
    assert metrics.exact_match("The Bank.", "bank") == 1.0
    assert metrics.token_f1("the river bank", "bank of england") == pytest.approx(0.4)


def test_written_rows_read_back_in_either_format(tmp_path):
    rows = [{"tokens": ["the", "bank"], "tags": ["O", "B-LOC"]}]
    for name in ("t.csv", "t.jsonl"):
        [example] = read_examples(write_examples(tmp_path / name, rows, "tag"), "tag")
        assert (
            example.words == ("the", "bank") and example.tags == ("O", "B-LOC") and example.text == "the bank"
        )


def test_whole_number_labels_of_a_json_lines_export_are_read_as_their_digits(tmp_path):
    """Datasets' JSONL exports write class labels as numbers: they were refused ("'label' must be text")."""
    path = tmp_path / "sst.jsonl"
    path.write_text(
        '{"text": "good", "label": 1}\n{"text": "bad", "label": 0}\n{"text": "fine", "label": 10}\n'
    )
    examples = read_examples(path, "classify")
    assert [e.label for e in examples] == ["1", "0", "10"]
    from bert_core.finetuning.data import example_labels

    assert example_labels(examples, "classify") == ("0", "1", "10")  # by value, as a CSV's
    path.write_text('{"text": "good", "label": true}\n')
    with pytest.raises(InputError, match="'label' must be text"):  # a yes/no is not a class number
        read_examples(path, "classify")


def test_cut_examples_and_an_unfinished_base_are_said(tiny_checkpoint, tmp_path, caplog):
    """Both went unsaid: a 5,000-word text trained on its first 64 pieces, and a base stopped mid-run was
    fine-tuned as if finished (its copied pretraining.json says "final": false, and nothing else did)."""
    import json
    import shutil

    base = tmp_path / "base"
    shutil.copytree(tiny_checkpoint, base)
    (base / "pretraining.json").write_text(
        json.dumps({"step": 3, "final": False, "training_config": {"steps": 8}})
    )
    (base / "training_state.pt").write_bytes(b"")
    examples = _classify_examples(8)
    examples[0] = Example(2, "the river bank " * 400, label="river")
    config = FinetuneConfig(task="classify", **{**FAST, "epochs": 1})
    with caplog.at_level("WARNING"):
        finetune(examples, str(base), config, out_dir=tmp_path / "out")
    said = " ".join(r.getMessage() for r in caplog.records)
    assert "is an unfinished pre-training run (step 3 of 8)" in said
    assert "1 of 8 examples are longer than the 64 pieces the model reads" in said
    assert json.loads((tmp_path / "out" / "finetuning.json").read_text())["truncated_examples"] == 1


def test_a_label_only_the_held_out_examples_have_is_said(tiny_checkpoint, tmp_path, caplog):
    """Two examples, one a label: the held-out draw takes one of them, and the head was scored on a label it
    had never been shown, without a word."""
    examples = [Example(1, RIVER[0], label="river"), Example(2, MONEY[0], label="money")]
    config = FinetuneConfig(task="classify", **{**FAST, "epochs": 1, "eval_fraction": 0.5})
    with caplog.at_level("WARNING"):
        result = finetune(examples, str(tiny_checkpoint), config, out_dir=None)
    said = " ".join(r.getMessage() for r in caplog.records)
    assert result.eval_examples == 1 and "no training example has the label " in said
    assert said.split("the label ")[1].split(" (")[0] in ("river", "money")
    caplog.clear()
    quarter = FinetuneConfig(task="classify", **{**FAST, "epochs": 1})  # 2 of 8 held out: both labels train
    with caplog.at_level("WARNING"):
        finetune(examples * 4, str(tiny_checkpoint), quarter, out_dir=None)
    assert "no training example" not in " ".join(r.getMessage() for r in caplog.records)


def test_the_cli_names_its_options_and_a_directory_given_as_data(tmp_path, tiny_checkpoint, capsys):
    data = tmp_path / "c.csv"
    data.write_text("text,label\nthe bank,a\nthe river,b\n")
    args = [
        "--task",
        "classify",
        "--data",
        str(data),
        "--from",
        str(tiny_checkpoint),
        "--out",
        str(tmp_path / "o"),
    ]
    with pytest.raises(SystemExit):
        finetune_cli([*args, "--lr", "0"])
    assert "--lr must be a positive number" in capsys.readouterr().err
    assert finetune_cli([*args, "--max-length", "100000", "--quiet"]) == 2
    assert "--max-length 100000 is more than the model's" in capsys.readouterr().err
    assert finetune_cli([*args[:3], str(tmp_path), *args[4:]]) == 2
    assert f"{tmp_path} is a directory" in capsys.readouterr().err


@pytest.mark.parametrize("seed", [-1, 2.5, True])
def test_a_seed_is_a_whole_number_of_zero_or_more_everywhere_the_labs_take_one(tmp_path, seed):
    """numpy's generators refuse a negative seed several frames down, in a traceback naming no setting."""
    from bert_core.pretraining.corpus import write_corpus
    from bert_core.pretraining.train import TrainingConfig

    for make in (
        lambda: FinetuneConfig("classify", seed=seed),
        lambda: TrainingConfig(seed=seed),
        lambda: corpus_tasks.make_data("senses", tmp_path / "d.jsonl", 3, seed),
        lambda: write_corpus(tmp_path / "c.txt", 2, seed),
    ):
        with pytest.raises(InputError, match="seed must be a whole number of 0 or more"):
            make()
    assert not list(tmp_path.iterdir())  # refused before anything was written


def test_numpy_numbers_in_a_config_are_written_as_the_checkpoints_json_holds_them():
    """Accepted, an np.int64 seed (or epochs, steps) trained and then failed at the save: 'int64 is not JSON
    serializable'."""
    from bert_core.pretraining.train import TrainingConfig

    for config in (
        FinetuneConfig("classify", seed=np.int64(3), epochs=np.int64(2), learning_rate=np.float32(1e-4)),
        TrainingConfig(seed=np.int64(3), steps=np.int64(20)),
    ):
        written = json.loads(json.dumps(config.to_dict()))
        assert written["seed"] == 3 and type(written["seed"]) is int and written["adam_betas"]


def test_a_json_lines_string_may_hold_a_line_separator(tmp_path):
    """U+2028 is a line break to str.splitlines, not to JSON Lines: a row holding one was cut in two."""
    path = tmp_path / "data.jsonl"
    path.write_text(
        '{"text": "the\u2028bank", "label": "river"}\n{"text": "cash", "label": "money"}\n', "utf-8"
    )
    examples = read_examples(path, "classify")
    assert [(e.line, e.text, e.label) for e in examples] == [
        (1, "the\u2028bank", "river"),
        (2, "cash", "money"),
    ]


@pytest.mark.parametrize("stop", [KeyboardInterrupt, lambda: OSError(28, "No space left on device")])
@pytest.mark.parametrize("command", ["make-corpus", "make-data"])
def test_a_data_file_written_part_way_leaves_the_one_it_replaces_as_it_was(
    tmp_path, capsys, monkeypatch, stop, command
):
    """make-corpus wrote in place: stopped after 7 s it replaced a 1,835-line corpus with part of a new one,
    which `pretrain --corpus` then read without a word, after a traceback; make-data left an empty file."""
    from bert_core.pretraining import corpus
    from bert_core.pretraining.cli import main as pretrain_cli

    out = tmp_path / ("corpus.txt" if command == "make-corpus" else "qa.jsonl")
    out.write_text("my own data\n")
    real = corpus.generate_corpus if command == "make-corpus" else corpus_tasks.qa_examples

    def broken(*args, **kwargs):
        made = real(*args, **kwargs)
        if command == "make-corpus":  # a generator: stopped after a few documents were written
            yield from (doc for doc, _ in zip(made, range(3), strict=False))
            raise stop()
        raise stop()

    if command == "make-corpus":
        monkeypatch.setattr(corpus, "generate_corpus", broken)
        code = pretrain_cli(["make-corpus", "--out", str(out), "--documents", "50"])
    else:
        monkeypatch.setattr(corpus_tasks, "qa_examples", lambda *a: list(broken(*a)))
        code = finetune_cli(["make-data", "--task", "qa", "--out", str(out), "--examples", "5"])
    err = capsys.readouterr().err
    assert code == (130 if stop is KeyboardInterrupt else 1)
    assert out.read_text() == "my own data\n" and [p.name for p in tmp_path.iterdir()] == [out.name]
    assert str(out) in err and "was left as it was" in err and "Traceback" not in err
    if stop is not KeyboardInterrupt:
        assert "(No space left on device)" in err


def test_a_file_that_is_not_utf8_is_told_where_and_how_to_convert_it(tmp_path, capsys):
    """Python's "'utf-8' codec can't decode byte 0xe9 in position 3" named no line and no way out; a spreadsheet's
    CSV is often Windows-1252."""
    from bert_core.pretraining.cli import main as pretrain_cli

    data = tmp_path / "senses.csv"
    data.write_bytes("text,label\nthe bank by the river,river\nthe café lent money,money\n".encode("cp1252"))
    with pytest.raises(
        InputError, match=r"is not UTF-8 text \(byte 0xe9 on line 3\): save it as UTF-8, e\.g\. iconv"
    ):
        read_examples(data, "classify")
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes("the cat sat.\nthe dog ran.\n\nthe café opened.\n".encode("cp1252"))
    with pytest.raises(SystemExit) as stopped:
        pretrain_cli(["--corpus", str(corpus), "--out", str(tmp_path / "m")])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and "(byte 0xe9 on line 4)" in err and "iconv -f windows-1252" in err


def test_a_data_file_written_whole_keeps_its_mode_and_writes_through_a_link(tmp_path):
    """Moved in from a temporary file, the written file was made 0644 (a private corpus world-readable) and a
    symlink named as --out was replaced by a file, its target left as it was; writing in place kept both."""
    import os
    import stat

    from bert_core.pretraining.corpus import write_corpus

    private = tmp_path / "private.txt"
    private.write_text("old")
    private.chmod(0o600)
    write_corpus(private, 2, seed=0)
    assert stat.S_IMODE(private.stat().st_mode) == 0o600 and private.read_text() != "old"
    target = tmp_path / "real.txt"
    target.write_text("old")
    (tmp_path / "link.txt").symlink_to(target)
    write_corpus(tmp_path / "link.txt", 2, seed=0)
    assert (tmp_path / "link.txt").is_symlink() and target.read_text() != "old"
    old = os.umask(0o077)
    try:
        write_corpus(tmp_path / "new.txt", 2, seed=0)
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.txt").stat().st_mode) == 0o600
