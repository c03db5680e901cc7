"""Tokenising throughput: WordPieceTokenizer.encode() vs transformers' BertTokenizerLegacy (pure Python) and
BertTokenizer (the Rust `tokenizers` backend), one text per call as the app does, same vocabulary.

(Named tokenizing.py, not tokenize.py, so it does not shadow the standard library's `tokenize` module.)
"""

from __future__ import annotations

import argparse
import random

import _common as c

SENTENCES = [
    "The bank by the river was muddy after the rain, so we walked along the path instead.",
    "She deposited £200 at the bank — and then went fishing!",
    "Unbelievably, the naïve café owner's résumé didn't mention 'latte art'.",
    "In 2024, researchers at 東京大学 trained models on 10,000 GPUs.",
]


def corpus(n: int, words: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    filler = c.filler_words(4000, seed)
    return [
        " ".join(rng.choice(filler) for _ in range(words)) + " " + rng.choice(SENTENCES) for _ in range(n)
    ]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--texts", type=int, default=200)
    p.add_argument("--repeats", type=int, default=10)  # the median of >= 10, as for every timing here
    p.add_argument("--quick", action="store_true")
    args = p.parse_args()
    n, repeats = (50, 3) if args.quick else (args.texts, args.repeats)
    import transformers

    from bert_core import WordPieceTokenizer

    path = c.bert_base_checkpoint()
    ours = WordPieceTokenizer.from_directory(path)
    legacy = transformers.BertTokenizerLegacy.from_pretrained(path)
    fast = transformers.BertTokenizer.from_pretrained(path)
    rows = []
    for words in (10, 100, 500):
        texts = corpus(n, words)
        mismatched = sum(
            ours.encode(t).input_ids.tolist() != fast(t, truncation=True, max_length=512)["input_ids"]
            for t in texts
        )
        t = c.alternate(
            {
                "ours": lambda texts=texts: [ours.encode(x) for x in texts],
                "legacy": lambda texts=texts: [legacy(x, truncation=True, max_length=512) for x in texts],
                "fast": lambda texts=texts: [fast(x, truncation=True, max_length=512) for x in texts],
            },
            repeats,
            warmup=1,
        )
        per = {k: len(texts) / c.median(v) for k, v in t.items()}
        rows.append(
            [
                f"~{words} words",
                per["ours"],
                per["legacy"],
                per["fast"],
                c.paired_ratio(t["ours"], t["legacy"]),
                c.paired_ratio(t["ours"], t["fast"]),
                mismatched,
            ]
        )
    print()
    print(f"texts per second, one encode() per text ({n} texts per round, {repeats} rounds)")
    print(c.machine() + "; " + c.load_average())
    print(
        c.table(
            [
                "texts",
                "ours /s",
                "BertTokenizerLegacy /s",
                "BertTokenizer (Rust) /s",
                "time vs legacy",
                "time vs Rust",
                "id mismatches",
            ],
            rows,
        )
    )
    print(c.reproduce_line())


if __name__ == "__main__":
    main()
