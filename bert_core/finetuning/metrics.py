"""The scores the fine-tuning lab reports on its held-out split: plain Python, no torch.

classify / pair: accuracy and macro-F1 (the mean of each label's F1, over the labels in the gold or the
predictions, as scikit-learn's `f1_score(average="macro")`). tag: token accuracy (one label per word of the
data file) and entity F1 (micro, over exact (type, start, end) spans merged from B-/I- tags the way
`BertScopeModel.entities` merges them, seqeval's default scheme). qa: exact match and token F1 after
SQuAD's normalisation (lower case, no punctuation, no articles, single spaces).
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable, Sequence

from ..tasks import _merge_entities


def accuracy(gold: Sequence, predicted: Sequence) -> float:
    return sum(g == p for g, p in zip(gold, predicted, strict=True)) / max(1, len(gold))


def macro_f1(gold: Sequence[str], predicted: Sequence[str]) -> float:
    scores = []
    for label in set(gold) | set(predicted):
        true_pos = sum(g == p == label for g, p in zip(gold, predicted, strict=True))
        scores.append(_f1(true_pos, sum(p == label for p in predicted), sum(g == label for g in gold)))
    return sum(scores) / max(1, len(scores))


def entity_spans(tags: Sequence[str], spans: Sequence[tuple[int, int]]) -> set[tuple[str, int, int]]:
    """{(type, start, end)} of the entities that word tags mark, words at character `spans`."""
    words = [(0, start, end, tag, 1.0) for (start, end), tag in zip(spans, tags, strict=True)]
    return {(e.label, e.start, e.end) for e in _merge_entities(words, ("", None))}


def entity_f1(gold: Iterable[set], predicted: Iterable[set]) -> float:
    """Micro F1 over the entity sets of every sentence (`entity_spans`)."""
    true_pos = n_pred = n_gold = 0
    for g, p in zip(gold, predicted, strict=True):
        true_pos, n_pred, n_gold = true_pos + len(g & p), n_pred + len(p), n_gold + len(g)
    return _f1(true_pos, n_pred, n_gold)


def normalize_answer(text: str) -> str:
    """SQuAD's answer normalisation."""
    text = "".join(c for c in text.lower() if c not in set(string.punctuation))
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", text).split())


def exact_match(gold: str, predicted: str) -> float:
    return float(normalize_answer(gold) == normalize_answer(predicted))


def token_f1(gold: str, predicted: str) -> float:
    gold_tokens, pred_tokens = normalize_answer(gold).split(), normalize_answer(predicted).split()
    if not gold_tokens or not pred_tokens:
        return float(gold_tokens == pred_tokens)
    common = sum((Counter(gold_tokens) & Counter(pred_tokens)).values())
    return _f1(common, len(pred_tokens), len(gold_tokens))


def _f1(true_pos: int, n_pred: int, n_gold: int) -> float:
    if true_pos == 0:
        return 0.0
    precision, recall = true_pos / n_pred, true_pos / n_gold
    return 2 * precision * recall / (precision + recall)
