"""'bank' separation on twelve hand-written sentences (six river, six money), outside the generator's grammar.

    .venv/bin/python bench/bank_handwritten.py [--model assets/demo-model]

Separation = mean cosine between same-sense top-layer "bank" vectors minus mean cosine across senses.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import bert_core  # noqa: E402

RIVER = [
    "We sat on the bank of the river.",
    "The children fished from the muddy bank.",
    "She walked along the bank of the stream.",
    "The boat drifted toward the far bank.",
    "Reeds grew thick on the bank of the lake.",
    "He climbed the steep bank above the water.",
]
MONEY = [
    "I went to the bank to get some cash.",
    "She deposited the money at the bank.",
    "The bank gave him a loan for a new car.",
    "He opened an account at the bank.",
    "The teller at the bank counted the notes.",
    "The bank was closed for the holiday.",
]


def separation(model: bert_core.BertScopeModel) -> float:
    vectors, senses = [], []
    for sense, sentences in (("river", RIVER), ("money", MONEY)):
        for v in model.vectors_batch(sentences):
            vectors.append(v.hidden_states[-1][v.tokens.index("bank")])
            senses.append(sense)
    unit = np.stack(vectors)
    unit /= np.linalg.norm(unit, axis=1, keepdims=True)
    cos = unit @ unit.T  # (12, 12)
    same = np.equal.outer(senses, senses)
    off_diagonal = ~np.eye(len(senses), dtype=bool)
    return float(cos[same & off_diagonal].mean() - cos[~same].mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(REPO / "assets" / "demo-model"))
    args = parser.parse_args()
    model = bert_core.load_pretrained(args.model)
    print("| model | hand-written bank separation |\n|---|---|")
    print(f"| {args.model} | {separation(model):+.3f} |")
    for text in ("We sat on the [MASK] of the river.", "She deposited the money at the [MASK]."):
        print(text, [(t, round(p, 3)) for t, p in model.fill_mask(text, top_k=4)[0]])
    print(f"reproduce: .venv/bin/python bench/bank_handwritten.py --model {args.model}")


if __name__ == "__main__":
    main()
