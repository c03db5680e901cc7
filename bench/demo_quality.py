"""How good is the bundled demo model? Measured on sentences generated *after* training, never seen in it.

    python bench/demo_quality.py [--model assets/demo-model] [--corpus assets/corpus/demo_corpus.txt]

1. Masked content words: every content word of every held-out sentence is masked on its own (one [MASK]
   per forward pass) and we count how often the original word is among the model's top 5. Function words
   (the, of, she...) are left out because they are easy; person names are reported separately because any
   name fits ("___ went to the bank").
2. Word senses: for each ambiguous word (bank, bat, bark...), its top-layer vectors in held-out sentences
   of either sense; separation = mean cosine between same-sense vectors minus mean cosine across senses.
3. Next sentence prediction accuracy on held-out IsNext / NotNext pairs.

Held-out sentences come from the corpus generator with another seed; any sentence that also occurs in the
training corpus is dropped, so nothing measured here was trained on verbatim.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import bert_core  # noqa: E402
from bert_core.pretraining.corpus import PERSON_NAMES, generate_corpus, read_documents  # noqa: E402
from bert_core.pretraining.pairs import nsp_pair, pair_starts  # noqa: E402

FUNCTION_WORDS = frozenset(
    """a an the and or but so of to in on at by for with from into onto up out over under as than then that
    this these those it its he she his her him they them their we our us you your i me my is was were be been
    are am has had have do did does not no every each all some any there when while after before because
    could would can will until about across along around toward towards behind between through next back
    away off down near also who which what where how too very one more most much many other another such
    own same just only even still again once here if whole""".split()
)
NAMES = frozenset(n.lower() for n in PERSON_NAMES)
TOP_K = 5


def held_out_documents(seed: int, documents: int, training: set[str]) -> list[list]:
    """Fresh documents whose sentences never occur in the training corpus (others are removed)."""
    kept = []
    for doc in generate_corpus(documents, seed):
        fresh = [s for s in doc if s.text not in training]
        if fresh:
            kept.append(fresh)
    return kept


def _forward(model, rows: list[np.ndarray], types: list[np.ndarray] | None = None):
    """Run padded rows through the network; return (last hidden state (B, S, H), pooled (B, H))."""
    longest = max(len(r) for r in rows)
    ids = np.zeros((len(rows), longest), dtype=np.int64)
    tt = np.zeros_like(ids)
    mask = np.zeros_like(ids)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = r
        mask[i, : len(r)] = 1
        if types is not None:
            tt[i, : len(r)] = types[i]
    with torch.inference_mode():
        out = model.network(
            torch.from_numpy(ids), torch.from_numpy(tt), attention_mask=torch.from_numpy(mask)
        )
    return out


def masked_word_accuracy(model, sentences: list[str], batch_size: int = 128) -> dict[str, tuple[int, int]]:
    """{"content": (hits, total), "names": (hits, total)}: top-5 hits when each word is masked alone."""
    tok = model.tokenizer
    items = []  # (ids with one [MASK], position, target id, kind)
    for text in sentences:
        enc = tok.encode(text)
        ids = np.array(enc.input_ids)
        for pos, (piece, word) in enumerate(zip(enc.tokens, enc.word_ids, strict=True)):
            if word is None or not re.fullmatch(r"[a-z]+", piece):
                continue
            # Only words that are a single piece: a masked multi-piece word would give its rest away.
            if enc.word_ids.count(word) != 1:
                continue
            if piece in FUNCTION_WORDS:
                continue
            kind = "names" if piece in NAMES else "content"
            corrupted = ids.copy()
            corrupted[pos] = tok.mask_token_id
            items.append((corrupted, pos, int(ids[pos]), kind))
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for start in range(0, len(items), batch_size):
        chunk = items[start : start + batch_size]
        out = _forward(model, [c[0] for c in chunk])
        rows = torch.arange(len(chunk))
        cols = torch.tensor([c[1] for c in chunk])
        with torch.inference_mode():
            logits = model.network.mlm_logits(out.last_hidden_state[rows, cols])  # (B, V)
            top = logits.topk(TOP_K, dim=-1).indices.numpy()
        for (_, _, target, kind), best in zip(chunk, top, strict=True):
            counts[kind][0] += int(target in best)
            counts[kind][1] += 1
    return {k: (v[0], v[1]) for k, v in counts.items()}


def sense_separation(model, documents: list[list], layer: int = -1) -> dict[str, dict[str, float]]:
    """Per ambiguous word: mean same-sense cosine, mean cross-sense cosine, their difference, counts."""
    tok = model.tokenizer
    examples: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for doc in documents:
        for s in doc:
            for word, sense in s.senses.items():
                examples[word].append((s.text, sense))
    results = {}
    for word, items in sorted(examples.items()):
        vectors, senses = [], []
        encs = [tok.encode(text) for text, _ in items]
        positions = [next((i for i, t in enumerate(e.tokens) if t == word), None) for e in encs]
        keep = [i for i, p in enumerate(positions) if p is not None]
        for start in range(0, len(keep), 128):
            chunk = keep[start : start + 128]
            out = _forward(model, [np.array(encs[i].input_ids) for i in chunk])
            hidden = out.hidden_states[layer]
            for row, i in enumerate(chunk):
                vectors.append(hidden[row, positions[i]].numpy())
                senses.append(items[i][1])
        if len(set(senses)) < 2:
            continue
        v = np.stack(vectors)
        v = v / np.linalg.norm(v, axis=1, keepdims=True)
        cos = v @ v.T
        labels = np.array(senses)
        same = labels[:, None] == labels[None, :]
        off_diagonal = ~np.eye(len(v), dtype=bool)
        within = float(cos[same & off_diagonal].mean())
        across = float(cos[~same].mean())
        counts = {s: int((labels == s).sum()) for s in sorted(set(senses))}
        results[word] = {"within": within, "across": across, "separation": within - across, "counts": counts}
    return results


def nsp_accuracy(model, documents: list[list], pairs: int, seed: int) -> float | None:
    if not model.has_nsp_head:
        return None
    texts = [[s.text for s in d] for d in documents if len(d) >= 2]
    rng = np.random.default_rng(seed)
    starts = pair_starts(texts)
    hits = 0
    encs, labels = [], []
    for _ in range(pairs):
        d, s = starts[rng.integers(len(starts))]
        pair = nsp_pair(texts, int(d), int(s), rng)
        encs.append(model.tokenizer.encode(pair.a[0], pair.b[0]))
        labels.append(pair.label)
    for start in range(0, len(encs), 128):
        chunk = encs[start : start + 128]
        out = _forward(
            model, [np.array(e.input_ids) for e in chunk], [np.array(e.token_type_ids) for e in chunk]
        )
        with torch.inference_mode():
            predicted = model.network.nsp_logits(out.pooled).argmax(-1).numpy()
        hits += int((predicted == np.array(labels[start : start + 128])).sum())
    return hits / len(encs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=str(ROOT / "assets" / "demo-model"))
    parser.add_argument("--corpus", default=str(ROOT / "assets" / "corpus" / "demo_corpus.txt"))
    parser.add_argument("--seed", type=int, default=2024, help="generator seed of the held-out text")
    parser.add_argument("--documents", type=int, default=3000, help="held-out documents to generate")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    started = time.monotonic()

    training = {s for d in read_documents(args.corpus) for s in d}
    documents = held_out_documents(args.seed, args.documents, training)
    sentences = [s.text for d in documents for s in d]
    model = bert_core.load_pretrained(args.model)
    print(f"model: {args.model} ({model.info.num_parameters:,} parameters)")
    print(f"held-out text: seed {args.seed}, {len(sentences)} sentences not in the training corpus")

    acc = masked_word_accuracy(model, sentences)
    for kind in ("content", "names"):
        if kind in acc:
            hits, total = acc[kind]
            print(f"top-{TOP_K} masked {kind} words: {hits / total:.1%} ({hits}/{total})")

    senses = sense_separation(model, documents)
    print("top-layer sense separation (mean cos same sense - mean cos across senses):")
    for word, r in senses.items():
        counts = ", ".join(f"{k} {v}" for k, v in r["counts"].items())
        print(
            f"  {word:8s} {r['separation']:+.3f}  (within {r['within']:.3f}, across {r['across']:.3f}; {counts})"
        )
    mean_sep = float(np.mean([r["separation"] for r in senses.values()]))
    print(f"  mean over {len(senses)} words: {mean_sep:+.3f}")

    nsp = nsp_accuracy(model, documents, 2000, args.seed)
    if nsp is not None:
        print(f"NSP accuracy on 2000 held-out pairs (50% IsNext): {nsp:.1%}")
    print(f"({time.monotonic() - started:.0f} s)")
    bank = senses.get("bank", {}).get("separation", float("nan"))
    content = acc["content"][0] / acc["content"][1]
    ok = content >= 0.60 and bank >= 0.15
    print(f"targets (content top-5 >= 60%, bank separation >= 0.15): {'met' if ok else 'NOT met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
