"""The fine-tuning lab's own data, drawn from the pre-training corpus generator (pretraining/corpus.py).

    senses  (task classify) one sentence that uses one ambiguous word, labelled "<word>-<sense>":
            bank-river / bank-money, bat-animal / bat-sport, ... (every word corpus.py has in two senses);
            as many sentences of each label as the count allows
    roles   (task tag) a sentence's words, each tagged with the role the grammar filled it in as:
            B-PERSON (a person's name: one word), B-/I- PLACE, TIME, OBJECT (ROLE_SLOTS lists the slots), O otherwise
    qa      (task qa) a who / where / when question about one sentence of a short generated passage, with
            the answer's character offset in the passage; the three kinds in equal numbers

Every label is correct by construction: it comes from what the generator did (the topic's senses, the slots
it filled), never from reading the text back. The same seed gives the same file. Sentences repeat in a small
grammar, so each text (each passage and question for qa) is kept once.

    bertscope finetune make-data --task senses --out senses.jsonl --examples 4000 --seed 1
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ..checks import check_seed
from ..pretraining.corpus import AMBIGUOUS_WORDS, PERSON_NAMES, TOPICS, Sentence, generate_document
from .data import write_examples

log = logging.getLogger(__name__)

KINDS = {"senses": "classify", "roles": "tag", "qa": "qa"}  # make-data --task -> the finetune task it feeds

SENSE_LABELS = tuple(sorted({f"{w}-{s}" for topic in TOPICS for w, s in topic.senses.items()}))
# The grammar's slots (corpus.py's topics and shared slots) whose fillers have a role. P, F and Name are
# the protagonist, a friend and the protagonist again; they are a PERSON only when filled with a name (the
# protagonist is sometimes "he", "she", "I" or "we").
ROLE_SLOTS = {
    "P": "PERSON",
    "F": "PERSON",
    "Name": "PERSON",
    "time": "TIME",
    **dict.fromkeys(("street", "city", "dest", "place", "cave", "room", "shore"), "PLACE"),
    **dict.fromkeys(
        ("gear", "doc", "item", "bags", "load", "tool", "thing", "boat", "instrument", "device", "car"),
        "OBJECT",
    ),
}
ROLES = ("PERSON", "PLACE", "TIME", "OBJECT")
QUESTION_KINDS = ("who", "where", "when")

# The past-tense verbs that follow a name at the start of corpus.py's sentences (or an "and") -> their base form, for
# "Where did Tom go ...?" from "Tom went ...". A verb missing here only means no where/when question.
PAST_TO_BASE = {
    "added": "add", "asked": "ask", "baked": "bake", "borrowed": "borrow", "bought": "buy", "broke": "break",
    "camped": "camp", "carried": "carry", "carved": "carve", "cast": "cast", "caught": "catch",
    "checked": "check", "chopped": "chop", "chose": "choose", "clicked": "click", "climbed": "climb",
    "closed": "close", "cooked": "cook", "counted": "count", "crossed": "cross", "cycled": "cycle",
    "deposited": "deposit", "dozed": "doze", "drank": "drink", "drove": "drive", "fed": "feed", "fixed": "fix",
    "forgot": "forget", "found": "find", "gave": "give", "got": "get", "grew": "grow", "had": "have",
    "heard": "hear", "held": "hold", "helped": "help", "hiked": "hike", "hummed": "hum",
    "inspected": "inspect", "jogged": "jog", "kept": "keep", "kicked": "kick", "knelt": "kneel", "lay": "lie",
    "lit": "light", "looked": "look", "made": "make", "measured": "measure", "met": "meet", "missed": "miss",
    "mixed": "mix", "moved": "move", "opened": "open", "packed": "pack", "paddled": "paddle", "paid": "pay",
    "parked": "park", "picked": "pick", "pitched": "pitch", "planted": "plant", "played": "play",
    "posted": "post", "practised": "practise", "pulled": "pull", "put": "put", "ran": "run", "read": "read",
    "received": "receive", "repaired": "repair", "replaced": "replace", "rested": "rest", "rode": "ride",
    "sang": "sing", "sat": "sit", "saved": "save", "saw": "see", "scored": "score", "scrolled": "scroll",
    "sealed": "seal", "sent": "send", "set": "set", "shone": "shine", "signed": "sign", "slipped": "slip",
    "sowed": "sow", "started": "start", "stretched": "stretch", "strolled": "stroll", "struck": "strike",
    "swung": "swing", "taught": "teach", "threw": "throw", "tied": "tie", "tightened": "tighten",
    "took": "take", "touched": "touch", "transferred": "transfer", "tuned": "tune", "turned": "turn",
    "used": "use", "waited": "wait", "walked": "walk", "wandered": "wander", "washed": "wash",
    "watched": "watch", "watered": "water", "went": "go", "withdrew": "withdraw", "wore": "wear",
    "wrote": "write",
    # after "and" in the same sentences ("... and collected leaves")
    "collected": "collect", "covered": "cover", "filled": "fill", "jumped": "jump", "let": "let",
    "locked": "lock", "matched": "match", "shared": "share", "shut": "shut", "stayed": "stay",
    "told": "tell", "unfolded": "unfold", "waved": "wave",
}  # fmt: skip
PRESENT_VERBS = ("has", "is", "loves", "works")  # the present-tense templates' verbs ("Who works as ...?")
# A place answers "where" when one of these leads into it ("near the lake"); not "of" ("the vault of ...").
_PLACE_LEAD = re.compile(r"\b(in|on|at|to|near|into|from|behind|across|along|by) (the )?$")
_WORD = re.compile(r"\w+|[^\w\s]")  # the roles data's words: runs of letters, and each punctuation mark


def make_data(kind: str, out: str | Path, examples: int, seed: int) -> Path:
    """Write `examples` rows of `kind` ("senses", "roles", "qa") to `out` (.jsonl or .csv)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if examples < 1:
        raise ValueError(f"examples must be at least 1, got {examples}")
    check_seed(seed)
    rows = {"senses": sense_examples, "roles": role_examples, "qa": qa_examples}[kind](examples, seed)
    return write_examples(out, rows, KINDS[kind])


# -- senses -----------------------------------------------------------------------------------------------


def sense_examples(count: int, seed: int) -> list[dict[str, Any]]:
    """{"text", "label", "word", "sense"} rows, the labels of SENSE_LABELS in turn as far as `count` allows."""
    rng = np.random.default_rng(seed)

    def candidates() -> Iterator[tuple[str, dict[str, Any]]]:
        for sentence in _sentences(rng):
            words = set(re.findall(r"[a-z]+", sentence.text.lower()))
            present = {w for w in AMBIGUOUS_WORDS if w in words or w + "s" in words}
            # Exactly one ambiguous word, and in the sense its topic gives it: "bark" standing in for "trunk"
            # in a river sentence, or a second ambiguous word, would make the label a guess.
            if len(present) != 1 or present != set(sentence.senses):
                continue
            ((word, sense),) = sentence.senses.items()
            label = f"{word}-{sense}"
            yield label, {"text": sentence.text, "label": label, "word": word, "sense": sense}

    return _balanced(candidates(), SENSE_LABELS, count, key=lambda row: row["text"])


# -- roles ------------------------------------------------------------------------------------------------


def role_spans(sentence: Sentence) -> list[tuple[int, int, str]]:
    """[(start, end, role)] character spans of the sentence's role-slot fillers, in order.

    The generator records each slot's filler before its text is tidied (spaces, "a"/"an", the capital at the
    start), so each filler is found again in the tidy text, left to right; a filler that tidying changed
    is left out (its words stay "O"), as is a P, F or Name slot filled with a pronoun."""
    spans: list[tuple[int, int, str]] = []
    at = 0
    for slot, value in sentence.slots:
        role = ROLE_SLOTS.get(slot)
        value = " ".join(value.split())
        if role is None or not value or (role == "PERSON" and value not in PERSON_NAMES):
            continue
        found = re.compile(rf"\b{re.escape(value)}\b", re.IGNORECASE).search(sentence.text, at)
        if found is None:
            continue
        spans.append((found.start(), found.end(), role))
        at = found.end()
    return spans


def tag_words(text: str, spans: list[tuple[int, int, str]]) -> tuple[list[str], list[str]]:
    """The text's words (`_WORD`) and a B-/I-role or O tag for each."""
    words, tags = [], []
    for match in _WORD.finditer(text):
        inside = next((span for span in spans if span[0] <= match.start() < span[1]), None)
        if inside is None:
            tags.append("O")
        else:
            tags.append(("B-" if match.start() == inside[0] else "I-") + inside[2])
        words.append(match.group())
    return words, tags


def front_time(words: list[str], tags: list[str]) -> tuple[list[str], list[str]] | None:
    """The sentence with its first time phrase moved to the front ("At 9:30, Tom went to the bank."), or None
    when it has none or opens with a mark (a quote). The corpus never opens a sentence with a time, so a tagger
    trained on it alone missed "At 9:30" or "On Monday," there."""
    if "B-TIME" not in tags or not words[0][:1].isalnum():
        return None
    start = tags.index("B-TIME")
    end = start + 1
    while end < len(tags) and tags[end] == "I-TIME":
        end += 1
    rest_words, rest_tags = words[:start] + words[end:], tags[:start] + tags[end:]
    if (
        rest_tags[0] == "O" and rest_words[0] != "I"
    ):  # "The wind blew" -> "..., the wind blew"; names keep theirs
        rest_words[0] = rest_words[0].lower()
    phrase = [words[start][:1].upper() + words[start][1:], *words[start + 1 : end]]
    return [*phrase, ",", *rest_words], [*tags[start:end], "O", *rest_tags]


def role_examples(count: int, seed: int) -> list[dict[str, Any]]:
    """{"tokens": [...], "tags": [...]} rows: sentences with at least one role filler; half of those
    with a time phrase has it moved to the front (`front_time`)."""
    rng = np.random.default_rng(seed)
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for sentence in _sentences(rng):
        spans = role_spans(sentence)
        if not spans or sentence.text in seen:
            continue
        seen.add(sentence.text)
        words, tags = tag_words(sentence.text, spans)
        fronted = front_time(words, tags)
        if fronted is not None and rng.random() < 0.5:
            words, tags = fronted
        rows.append({"tokens": words, "tags": tags})
        if len(rows) == count:
            return rows
    raise AssertionError("unreachable: the generator never runs dry")  # pragma: no cover


# -- question answering -----------------------------------------------------------------------------------


def questions(sentence: Sentence) -> list[tuple[str, str, int, int]]:
    """(kind, question, answer start, answer end) about one sentence, offsets into the sentence.

    Only a sentence that opens with a person's name and then a verb is asked about: "Who went to the bank on
    the main street?" (the name), and where its verb has a known base form, "Where did Tom go to the bank?"
    (a place led into by in / on / at / to / near ..., with its "the") and "When did Tom go to the bank on
    the main street?" (the time phrase). The asked phrase is cut out of the question."""
    text = sentence.text
    first = _WORD.match(text)
    name = first.group() if first else ""
    spans = role_spans(sentence)
    if name not in PERSON_NAMES or not spans or spans[0][:2] != (0, len(name)):
        return []
    verb = _WORD.match(text, len(name) + 1)
    if verb is None or verb.group() not in (*PAST_TO_BASE, *PRESENT_VERBS):
        return []
    asked = [("who", "Who" + _as_question(text[len(name) :]), 0, len(name))]
    base = PAST_TO_BASE.get(verb.group())
    if base is None:
        return asked
    opening = f" did {name} {base}"
    for start, end, role in spans[1:]:
        if role == "TIME":
            rest = text[verb.end() : start].rstrip() + text[end:]
            asked.append(("when", "When" + opening + _as_question(rest, base_forms=True), start, end))
        elif role == "PLACE":
            lead = _PLACE_LEAD.search(text, 0, start)
            follows = text[end:].split()
            if lead is None or lead.start() < verb.end() or (follows and follows[0] == "of"):
                continue
            answer_start = start - 4 if lead.group(2) else start  # "the kitchen", not "kitchen"
            rest = text[verb.end() : lead.start()].rstrip() + text[end:]
            asked.append(
                ("where", "Where" + opening + _as_question(rest, base_forms=True), answer_start, end)
            )
    return asked


def _as_question(rest: str, *, base_forms: bool = False) -> str:
    """A sentence's remainder (after its subject) as the end of a question: its full stop becomes "?", and
    with `base_forms` a verb after "and" takes the base form too ("did Tom shine a torch and see ...")."""
    rest = re.sub(r"\s+([,.!?])", r"\1", " ".join(rest.split()))
    if base_forms:
        rest = re.sub(r"\band (\w+)", lambda m: "and " + PAST_TO_BASE.get(m.group(1), m.group(1)), rest)
    rest = rest.rstrip(".!,")
    return (" " + rest if rest and rest[0].isalnum() else rest) + "?"


def qa_examples(count: int, seed: int) -> list[dict[str, Any]]:
    """{"question", "context", "answer_start", "answer_text", "kind"} rows: one question per passage of two to
    four sentences (and a third of the time a line of what people say among them), who / where / when in
    turn as far as `count` allows."""
    rng = np.random.default_rng(seed)

    def candidates() -> Iterator[tuple[str, dict[str, Any]]]:
        while True:
            _, sentences = generate_document(rng, min_sentences=2, max_sentences=4)
            context = " ".join(s.text for s in sentences)
            asked, at = [], 0
            for sentence in sentences:
                for kind, question, start, end in questions(sentence):
                    answer = {"answer_start": at + start, "answer_text": sentence.text[start:end]}
                    asked.append((kind, {"question": question, "context": context, **answer, "kind": kind}))
                at += len(sentence.text) + 1
            # Each kind the passage offers once, in a random order: _balanced takes the first it still needs.
            kinds = sorted({kind for kind, _ in asked})
            for index in rng.permutation(len(kinds)):
                yield next(item for item in asked if item[0] == kinds[index])

    return _balanced(candidates(), QUESTION_KINDS, count, key=lambda row: row["context"])


# -- shared -----------------------------------------------------------------------------------------------


def _sentences(rng: np.random.Generator) -> Iterator[Sentence]:
    while True:
        yield from generate_document(rng)[1]


def _balanced(
    candidates: Iterator[tuple[str, dict[str, Any]]],
    labels: tuple[str, ...],
    count: int,
    key: Callable[[dict[str, Any]], str],
) -> list[dict[str, Any]]:
    """`count` rows, spread evenly over `labels` (the first `count % len(labels)` one more), each `key` once,
    in the order drawn."""
    quota = {label: count // len(labels) + (i < count % len(labels)) for i, label in enumerate(labels)}
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    draws = 0
    limit = 1000 * count + 100_000  # a label the grammar cannot produce fails, rather than loops
    for label, row in candidates:
        draws += 1
        if draws > limit:
            short = {label: n for label, n in quota.items() if n}
            raise ValueError(f"the generator found too few examples of {short} in {limit} draws")
        if quota.get(label, 0) == 0 or key(row) in seen:
            continue
        seen.add(key(row))
        quota[label] -= 1
        rows.append(row)
        if len(rows) == count:
            return rows
    raise AssertionError("unreachable: the generator never runs dry")  # pragma: no cover
