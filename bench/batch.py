"""Several sentences at once (the word-senses page analyses six): analyze_batch() vs analyze() one by one."""

from __future__ import annotations

import argparse

import _common as c
import numpy as np

SENSES = [
    "she sat on the bank of the river and watched the water",
    "he deposited the cheque at the bank before noon",
    "the bank raised its interest rates again this year",
    "fish gathered near the muddy bank after the rain",
    "we walked along the river bank",
    "the central bank said inflation was falling",
]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--repeats", type=int, default=15)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--quick", action="store_true")
    args = p.parse_args()
    repeats = 5 if args.quick else args.repeats
    c.set_threads(args.threads)
    import bert_core

    m = bert_core.load_pretrained(c.bert_base_checkpoint())
    # the synthetic vocabulary spells most real words letter by letter; add a set of equal-length texts
    sets = {
        "word-senses (6 short)": SENSES,
        "6 x 64 filler tokens": [c.text_of_tokens(64, seed=s) for s in range(6)],
    }
    rows = []
    for name, texts in sets.items():
        batched = m.analyze_batch(texts)
        single = [m.analyze(t) for t in texts]
        diff = max(
            max(
                float(np.abs(b.attentions - s.attentions).max()),
                float(np.abs(b.hidden_states - s.hidden_states).max()),
            )
            for b, s in zip(batched, single, strict=True)
        )
        t = c.alternate(
            {
                "b": lambda texts=texts: m.analyze_batch(texts),
                "s": lambda texts=texts: [m.analyze(x) for x in texts],
            },
            repeats,
        )
        lens = [len(r.tokens) for r in single]
        rows.append(
            [
                name,
                f"{min(lens)}-{max(lens)}",
                c.median(t["b"]) * 1e3,
                c.median(t["s"]) * 1e3,
                c.paired_ratio(t["b"], t["s"]),
                f"{diff:.1e}",
            ]
        )
    print()
    print(f"analyze_batch(6 texts) vs 6 x analyze(), bert-base, {args.threads} threads, {repeats} rounds")
    print(c.machine() + "; " + c.load_average())
    print(c.table(["texts", "tokens", "batched ms", "one by one ms", "ratio", "max |diff|"], rows))
    print(c.reproduce_line())


if __name__ == "__main__":
    main()
