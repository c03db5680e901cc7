"""Fine-tuning data files: CSV (with a header row) or JSON Lines, one example per row, checked row by row.

Columns (CSV header names, or JSON keys) by task; other columns are ignored:

    classify  text, label
    pair      text, text_pair, label
    tag       tokens, tags      the words, separated by spaces, and one tag per word (B-/I- style, or any
                                names); in JSON Lines either such strings or lists of strings
    qa        question, context, answer_start, answer_text
                                SQuAD-style: answer_text is found at character answer_start of context

The file's suffix decides the format: .csv is CSV, .jsonl / .json / .ndjson JSON Lines. Every problem is a
`bert_core.InputError` naming the file and line, so a user can fix the row.
"""

from __future__ import annotations

import csv
import io
import json
import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..paths import not_utf8, written_whole

log = logging.getLogger(__name__)

TASKS = ("classify", "pair", "tag", "qa")
COLUMNS: dict[str, tuple[str, ...]] = {
    "classify": ("text", "label"),
    "pair": ("text", "text_pair", "label"),
    "tag": ("tokens", "tags"),
    "qa": ("question", "context", "answer_start", "answer_text"),
}
CSV_SUFFIXES = (".csv",)
JSONL_SUFFIXES = (".jsonl", ".json", ".ndjson")


@dataclass(frozen=True)
class Example:
    """One row of a data file. Which fields a task fills is in the comments."""

    line: int  # 1-based line of the file the row begins on, for messages
    text: str  # classify / pair: the (first) text; tag: the words joined by single spaces; qa: the question
    text_pair: str | None = None  # pair: the second text; qa: the context
    label: str | None = None  # classify / pair
    words: tuple[str, ...] = ()  # tag: the words, as given
    tags: tuple[str, ...] = ()  # tag: one per word
    answer_start: int = -1  # qa: character offset of the answer in the context
    answer_text: str = ""  # qa

    @property
    def answer_end(self) -> int:
        return self.answer_start + len(self.answer_text)

    def word_spans(self) -> list[tuple[int, int]]:
        """tag: each word's [start, end) character span in `text`."""
        spans, at = [], 0
        for word in self.words:
            spans.append((at, at + len(word)))
            at += len(word) + 1
        return spans


def read_examples(path: str | Path, task: str) -> list[Example]:
    """Every row of the file at `path` as an Example for `task`; InputError on the first bad row."""
    if task not in TASKS:
        raise InputError(f"task must be one of {', '.join(TASKS)}, got {task!r}")
    path = Path(path)
    suffix = path.suffix.lower()
    if path.is_dir():  # "." has no name to put in the message below ("error: : name the data file ...")
        raise InputError(f"{path} is a directory: name the data file (.csv or .jsonl) in it")
    if suffix not in CSV_SUFFIXES + JSONL_SUFFIXES:
        raise InputError(
            f"{path.name}: name the data file .csv (with a header row) or .jsonl (one JSON object a line)"
        )
    if not path.is_file():
        raise InputError(f"no data file at {path}")
    try:
        text = path.read_text(encoding="utf-8-sig")  # -sig: spreadsheets often start a CSV with a BOM
    except UnicodeDecodeError as exc:
        raise InputError(not_utf8(path, exc)) from exc
    rows = list(_csv_rows(text, task, path.name) if suffix in CSV_SUFFIXES else _jsonl_rows(text, path.name))
    if task == "classify" and any(str(row.get("text_pair") or "").strip() for _, row in rows):
        # ignored, as other columns are, but this one is the pair task's: trained on `text` alone, unsaid
        log.warning(
            "%s has a text_pair column, which --task classify ignores (it reads text alone); --task pair reads "
            "both",
            path.name,
        )
    examples = [_example(row, line, task, f"{path.name}, line {line}") for line, row in rows]
    if not examples:
        raise InputError(
            f"{path.name} holds no examples; {task} needs the columns {', '.join(COLUMNS[task])}"
        )
    return examples


def ordered_labels(labels: Iterable[str], task: str) -> tuple[str, ...]:
    """The distinct labels in the order the head's outputs take: numbers by value, other names sorted; for
    tags "O" first, then by entity type with its B- before its I- (as taggers' id2label usually reads)."""
    distinct = set(labels)
    if task == "tag":
        return tuple(sorted(distinct, key=lambda t: (t != "O", t.partition("-")[2] or t, t)))
    if all(_is_int(label) for label in distinct):
        return tuple(sorted(distinct, key=int))
    return tuple(sorted(distinct))


def example_labels(examples: Sequence[Example], task: str) -> tuple[str, ...]:
    """The labels the examples use, ordered (`ordered_labels`); () for qa."""
    if task == "qa":
        return ()
    used = (t for e in examples for t in e.tags) if task == "tag" else (e.label for e in examples)
    return ordered_labels(used, task)


def write_examples(path: str | Path, rows: Sequence[dict[str, Any]], task: str) -> Path:
    """Write rows (dicts with the task's columns; tag rows with lists) as the suffix says: CSV or JSON Lines,
    in the layout `read_examples` reads back."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in CSV_SUFFIXES + JSONL_SUFFIXES:
        raise InputError(f"{path.name}: name the output .csv or .jsonl")
    with written_whole(path, newline="") as handle:
        if suffix in CSV_SUFFIXES:
            writer = csv.DictWriter(handle, fieldnames=COLUMNS[task], extrasaction="ignore")
            writer.writeheader()
            for row in rows:
                writer.writerow({k: " ".join(v) if isinstance(v, list) else v for k, v in row.items()})
        else:
            for row in rows:
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


# -- reading --------------------------------------------------------------------------------------------


def _csv_rows(text: str, task: str, name: str) -> Iterator[tuple[int, dict[str, Any]]]:
    # Lines as the csv module counts them (newline=""): str.splitlines also breaks at U+2028, form feeds and
    # the like, which a value may hold, and "the bank\u2028river" was refused as a row without its label.
    lines = list(io.StringIO(text, newline=""))
    reader = csv.DictReader(lines)
    header = reader.fieldnames or []
    missing = [c for c in COLUMNS[task] if c not in header]
    if missing:
        # a tab or semicolon between the columns (a spreadsheet's export in many locales) read as one column,
        # shown with a raw tab in it
        seps = {"\t": "tab", ";": "semicolon"}
        sep = next((seps[s] for s in seps if len(header) == 1 and s in header[0]), None)
        hint = (
            f": its columns are {sep}-separated, and a .csv here is comma-separated (save it again with commas, "
            "or as .jsonl)"
            if sep
            else ""
        )
        raise InputError(
            f"{name}: the header row has no {', '.join(repr(c) for c in missing)} column; {task} needs "
            f"{', '.join(COLUMNS[task])} (found {', '.join(repr(h) for h in header) or 'nothing'}){hint}"
        )
    ended = reader.line_num  # the line the last row read ends on: a quoted value may span lines
    try:
        for row in reader:
            # A row is named by the line it begins on, the first after the last row that is not blank (the
            # reader skips blank lines): a quote left open there ran the row on, and its fault was named at the
            # file's last line.
            line, first = reader.line_num, ended + 1
            while first < line and not lines[first - 1].strip("\r\n"):
                first += 1
            ended = line
            where = (
                f"line {line}"
                if first == line
                else f"line {first} (a row running on to line {line}: is a quote left open?)"
            )
            if None in row:  # DictReader files values beyond the header under the key None
                raise InputError(
                    f"{name}, {where}: {len(header) + len(row[None])} values for {len(header)} columns "
                    "(quote a value that contains a comma)"
                )
            absent = [c for c in COLUMNS[task] if row.get(c) is None]
            if absent:
                raise InputError(
                    f"{name}, {where}: the row has no value for {', '.join(repr(c) for c in absent)} "
                    f"({len([v for v in row.values() if v is not None])} values for {len(header)} columns)"
                )
            yield first, row
    except csv.Error as exc:
        raise InputError(f"{name}, line {reader.line_num}: {exc}") from exc


def _jsonl_rows(text: str, name: str) -> Iterator[tuple[int, dict[str, Any]]]:
    # split at line feeds only: a JSON string may hold U+2028 and the like, where str.splitlines breaks
    for line, raw in enumerate(text.split("\n"), 1):
        if not raw.strip():
            continue
        # a whole file as one JSON array is the likeliest slip: say what the format is
        lines = (
            " (JSON Lines: one object per line, not an array of them)" if raw.lstrip().startswith("[") else ""
        )
        try:
            row = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"{name}, line {line}: not valid JSON{lines} ({exc.msg}, column {exc.colno})"
            ) from exc
        if not isinstance(row, dict):
            raise InputError(f"{name}, line {line}: expected a JSON object{lines}, got {type(row).__name__}")
        yield line, row


def _example(row: dict[str, Any], line: int, task: str, where: str) -> Example:
    for column in COLUMNS[task]:
        if column not in row:
            raise InputError(f"{where}: no {column!r}; {task} needs {', '.join(COLUMNS[task])}")
    if task in ("classify", "pair"):
        return Example(
            line,
            _text(row, "text", where),
            _text(row, "text_pair", where) if task == "pair" else None,
            label=_label(row, where),
        )
    if task == "tag":
        words, tags = _items(row, "tokens", where), _items(row, "tags", where)
        if len(words) != len(tags):
            raise InputError(
                f"{where}: {len(words)} tokens but {len(tags)} tags; give exactly one tag per token"
            )
        return Example(line, " ".join(words), words=words, tags=tags)
    question, context = row["question"], _text(row, "context", where)
    if not isinstance(question, str) or not question.strip():
        raise InputError(f"{where}: the question is empty; write the question the answer answers")
    start, answer = row["answer_start"], _text(row, "answer_text", where)
    if isinstance(start, str) and _is_int(start.strip()):
        start = int(start)
    if isinstance(start, bool) or not isinstance(start, int) or not 0 <= start < len(context):
        raise InputError(
            f"{where}: answer_start must be a character offset into the context (0 to {len(context) - 1}), "
            f"got {start!r}"
        )
    found = context[start : start + len(answer)]
    if found != answer:
        raise InputError(
            f"{where}: answer_text {answer!r} is not at character {start} of the context, which has "
            f"{found!r} there; answer_start counts characters from 0"
        )
    return Example(line, question, context, answer_start=start, answer_text=answer)


def _label(row: dict[str, Any], where: str) -> str:
    """A class label as text: a whole number as JSONL exports of datasets write them (0, 1) is its digits,
    ordered by value like the labels of a CSV."""
    value = row["label"]
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return _text(row, "label", where).strip()


def _text(row: dict[str, Any], column: str, where: str) -> str:
    value = row[column]
    if not isinstance(value, str):
        raise InputError(f"{where}: {column!r} must be text, got {type(value).__name__}")
    if not value.strip():
        raise InputError(f"{where}: {column!r} is empty")
    return value


def _items(row: dict[str, Any], column: str, where: str) -> tuple[str, ...]:
    """A space-separated string, or a JSON list of non-empty strings."""
    value = row[column]
    if isinstance(value, str):
        items = value.split()
    elif isinstance(value, list) and all(isinstance(v, str) and v.strip() for v in value):
        items = [v.strip() for v in value]
    else:
        raise InputError(f"{where}: {column!r} must be space-separated text or a list of non-empty strings")
    if not items:
        raise InputError(f"{where}: {column!r} is empty")
    # A word is what lies between spaces, for training and for the entities the app shows (`entities`):
    # "New York" as one list item would be one word here and two there, its tags off by one from then on.
    spaced = next((item for item in items if any(c.isspace() for c in item)), None)
    if spaced is not None:
        raise InputError(
            f"{where}: {column!r} item {spaced!r} holds a space: give each space-separated word its own item "
            "(and its own tag)"
        )
    return tuple(items)


def _is_int(value: str) -> bool:
    try:
        int(value)
    except ValueError:
        return False
    return True
